"""Stage `local_curve`: test accuracy of every client and of their FedAvg along local training (FedHydra Fig. 8).

The clients of a one-shot run (same partition, initial model and seeds as ``train_clients``) train for
``localcurve.epochs`` local epochs (the paper: 400; scaled by the profile); every ``localcurve.every`` epochs
(the paper's caption: 20, its text: 40, AMBIG-25) each client is tested and a copy of its weights kept, and the
sample-weighted average of the copies taken at the same epoch (FedAvg's own averaging, BN statistics included)
is tested too.
Writes ``results/<experiment>/local_curve.csv`` (epoch, fedavg, client_1..client_m) and ``local_curve.json``
(the settings in force). No uploads: nothing else reads these clients.
"""
from __future__ import annotations

import csv
import time
from typing import Any, Mapping

import torch

from ..augment import resolve_augment
from ..clients.cohort import build_cohort, initial_states, local_hparams, train_cohort
from ..config import scaled_epochs
from ..errors import ConfigError
from ..evaluation import accuracy
from ..methods.base import average_state_dicts
from ..models import build_model
from ..partition import load_partition
from ..runconfig import load_run
from ..runtime import derive_seed, read_json, write_json
from .common import load_data, parser, require_input, run_stage, test_tensors
from .records import runtime_record, write_runtime_record


def main(argv=None) -> None:
    run_stage(_run, parser(__doc__), argv)


def curve_settings(lc: Mapping[str, Any]) -> tuple[int, int]:
    """(epochs, every) of the ``localcurve`` block at the paper's scale, validated."""
    epochs, every = lc.get("epochs", 400), lc.get("every", 20)
    for key, v in (("localcurve.epochs", epochs), ("localcurve.every", every)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(key, f"must be a positive integer, got {v!r}")
    return epochs, every


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec, profile, seed, local = cfg.dataset, cfg.profile, cfg.seed, cfg.local
    archs = cfg.client_models
    if len(set(archs)) > 1:
        raise ConfigError("client_models", "the FedAvg curve needs one architecture for every client")
    paper_epochs, paper_every = curve_settings(cfg.block("localcurve"))
    epochs, every = scaled_epochs(paper_epochs, profile), scaled_epochs(paper_every, profile)
    data = load_data(paths, cfg)
    part = load_partition(require_input(paths.partition / "partition.json", "partition"))
    part.verify(data.y_train)
    device = cfg.device
    x_all = torch.from_numpy(data.x_train).to(device)
    y_all = torch.from_numpy(data.y_train).long().to(device)
    x_test, y_test = test_tensors(data, profile, derive_seed(seed, "test-subset"), device)
    start = initial_states(archs, spec.shape, spec.num_classes, seed, cfg.inputs.norm())
    cohort = build_cohort(archs, part.client_indices, x_all, y_all, spec.shape, spec.num_classes, device,
                          seed=seed, start=start if local.init == "shared" else None,
                          data_seed=lambda k: derive_seed(seed, "client-data", k), inputs=cfg.inputs.norm())
    client_of = {id(m): k for k, m in enumerate(cohort.models)}
    snapshots: list[list[dict]] = [[] for _ in cohort.models]  # per client, in epoch order

    def eval_fn(model):
        snapshots[client_of[id(model)]].append({n: t.detach().to("cpu", copy=True)
                                                for n, t in model.state_dict().items()})
        return accuracy(model, x_test, y_test)

    t0 = time.perf_counter()
    hp = local_hparams(local, epochs, resolve_augment(local.augment, spec.shape), cfg.runtime,
                       eval_fn=eval_fn, eval_every=every)
    results, _, batched = train_cohort(cohort, hp, device, progress=not args.no_progress)
    sizes = [len(y) for _, y in cohort.data]
    probe = build_model(archs[0], spec.shape, spec.num_classes, cfg.inputs.norm()).to(device)
    rows = []
    for i, point in enumerate(results[0].curve):
        probe.load_state_dict(average_state_dicts([snapshots[k][i] for k in range(len(cohort))], sizes))
        row = {"epoch": point["epoch"], "fedavg": accuracy(probe, x_test, y_test)}
        row.update({f"client_{k + 1}": results[k].curve[i]["test_acc"] for k in range(len(cohort))})
        rows.append(row)
    out = paths.results / "local_curve.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    write_json(paths.results / "local_curve.json", {
        "paper_epochs": paper_epochs, "paper_every": paper_every, "epochs_run": epochs, "every_run": every,
        "profile": profile.name, "weighting": "samples", "batched": batched,
        "stand_in_data": bool(read_json(paths.prepared / "meta.json").get("stand_in", False)),
        "runtime": cfg.runtime.in_force(device)})  # seconds and the host: results/<exp>/runtime/local_curve.json
    write_runtime_record(runtime_record(paths, "local_curve"), time.perf_counter() - t0, device, cfg.runtime)
    best = max(rows, key=lambda r: r["fedavg"])
    print(f"local curve: {len(rows)} points to E={epochs}; FedAvg best {best['fedavg']:.2f}% at E={best['epoch']}")


if __name__ == "__main__":
    main()
