"""Stage `rounds@<method>`: the multi-round protocol (T global rounds of E local epochs; FedHydra Tables 5, 8,
11-18). Reads the prepared data and the partition; writes results/<experiment>/rounds/<name>.json and .csv,
each round's local and server seconds and the host to results/<experiment>/runtime/rounds-<name>.json, and the last
round's global model to models/<experiment>/rounds/<name>/model.pt (see
:mod:`osfl.protocols.multi_round`)."""
from __future__ import annotations

import csv
from pathlib import Path

import torch

from ..config import RunConfig

from ..data import ArrayData
from ..partition import Partition, load_partition
from ..protocols.multi_round import RoundsConfig, RoundsResult, check_run, read_rounds, run_rounds
from ..runconfig import load_run
from ..runtime import derive_seed, read_json, save_state_dict, write_json
from .common import load_data, parser, require_input, run_name, run_stage, test_tensors
from .records import runtime_record, write_runtime_record
from .server import aux_loader


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--method", required=True, help="server method (registry name)")
    p.add_argument("--tag", default="", help="name a variant (its settings come with --set): written as <method>-<tag>")
    run_stage(_run, p, argv)


def load_inputs(cfg: RunConfig, paths, device: torch.device) -> tuple[ArrayData, Partition, tuple[torch.Tensor, torch.Tensor]]:
    """The prepared data, the partition and the test set on ``device`` (the subset every stage tests on)."""
    data = load_data(paths, cfg)
    part = load_partition(require_input(paths.partition / "partition.json", "partition"))
    test = test_tensors(data, cfg.profile, derive_seed(cfg.seed, "test-subset"), device)
    return data, part, test


def run(cfg: RunConfig, paths, method: str, rounds: RoundsConfig, device: torch.device, *,
        progress: bool = True, **hooks) -> RoundsResult:
    """The protocol on the experiment ``paths``: its limits checked before the inputs are read, then the rounds
    (``hooks``: see :func:`osfl.protocols.multi_round.run_rounds`)."""
    check_run(cfg, method)
    data, part, test = load_inputs(cfg, paths, device)
    return run_rounds(cfg, data, part, test, method, rounds, device, progress=progress,
                      aux_loader=aux_loader(paths, cfg, device), **hooks)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    rounds = read_rounds(cfg.block("rounds"), cfg.profile)
    device = cfg.device
    res = run(cfg, paths, args.method, rounds, device, progress=not args.no_progress)

    name = run_name(args)
    out = paths.results / "rounds"
    final = res.records[-1]["test_acc"]
    write_json(out / f"{name}.json", {
        **cfg.inputs.entry(), "method": args.method, "tag": args.tag, "T": rounds.T, "local_epochs": rounds.local_epochs,
        "local_epochs_run": rounds.local_epochs_run, "profile": cfg.profile.name, "rounds": res.records,
        "acc_final": final, "test_samples": res.test_samples, "choices": res.choices, "protocol": res.protocol,
        "runtime": cfg.runtime.in_force(device),  # seconds and the host: results/<exp>/runtime/rounds-<name>.json
        "stand_in_data": bool(read_json(paths.prepared / "meta.json").get("stand_in", False)),
    })
    write_runtime_record(runtime_record(paths, f"rounds-{name}"), sum(r["local"] + r["server"] for r in res.seconds),
                         device, cfg.runtime, per_round=res.seconds)
    with open(out / f"{name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "test_acc"])
        for r in res.records:
            w.writerow([r["round"], f"{r['test_acc']:.4f}"])
    model_dir = Path("models") / paths.name / "rounds" / name
    model_dir.mkdir(parents=True, exist_ok=True)
    save_state_dict(res.model.state_dict(), model_dir / "model.pt")
    accs = ", ".join(f"{r['test_acc']:.2f}" for r in res.records)
    print(f"{name}: {rounds.T} rounds x {rounds.local_epochs_run} local epochs; global acc per round: {accs}")


if __name__ == "__main__":
    main()
