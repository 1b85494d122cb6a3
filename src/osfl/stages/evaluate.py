"""Stage `evaluate@<method>`: reload the method's saved model, check it gives the accuracy its server run logged,
and write the run's record (numbers, choices in force, runtime, extras) to results/<exp>/runs/<method>.json."""
from __future__ import annotations

from pathlib import Path

import torch

from ..clients.upload import read_uploads
from ..cpu_profile import server_guard, warn_failed
from ..distill.ensemble import uploads_ensemble, voting_predictor
from ..evaluation import accuracy
from ..live import read_curve, read_summary
from ..models import build_model
from ..runconfig import load_run
from ..runtime import derive_seed, load_state_dict, read_json, write_json
from .common import load_data, parser, require_input, run_name, run_stage, test_tensors
from .records import runtime_record


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--method", required=True)
    p.add_argument("--tag", default="", help="the server stage's variant tag: reads and writes <method>-<tag>")
    run_stage(_run, p, argv)


def load_predictor(global_dir: Path, device: torch.device):
    """Rebuild what a server stage wrote: a global classifier, the prototypes' vote, or the ensemble of the client
    uploads (read from the clients folder, or the parts' folders, the server run recorded)."""
    man = read_json(global_dir / "manifest.json")

    def load(arch: str, file: str) -> torch.nn.Module:
        model = build_model(arch, tuple(man["input_shape"]), man["num_classes"], man.get("inputs"))
        model.load_state_dict(load_state_dict(global_dir / file))
        return model.to(device).eval()

    if man["kind"] == "classifier":
        return man, load(man["arch"], man["files"]["state_dict"])
    if man["kind"] == "voting":
        return man, voting_predictor([load(arch, man["files"][arch]) for arch in man["prototypes"]])
    folders = man["clients_dir"] if isinstance(man["clients_dir"], list) else [man["clients_dir"]]
    return man, uploads_ensemble([u for f in folders for u in read_uploads(f)], man["members"], man["weights"], device)


def cohort_guards(paths, man: dict) -> dict:
    """The regime guards of the parts a server read (``clients:<part>.<guard>``, from results/<run>/clients-<part>.json):
    a server on clients that failed theirs feeds no verdict either."""
    folders = man.get("clients_dir") or []
    out = {}
    for folder in folders if isinstance(folders, list) else [folders]:
        rec = paths.results / f"clients-{Path(folder).name}.json"
        if rec.is_file():
            for name, g in (read_json(rec).get("guards") or {}).items():
                out[f"clients:{Path(folder).name}.{name}"] = g
    return out


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    device = cfg.device
    data = load_data(paths, cfg)
    x_test, y_test = test_tensors(data, cfg.profile, derive_seed(cfg.seed, "test-subset"), device)
    name = run_name(args)
    man, predict = load_predictor(require_input(paths.global_model(name), f"server@{name}"), device)
    final = accuracy(predict, x_test, y_test)
    live_dir = require_input(paths.results / "live" / name, f"server@{name}")
    live = read_summary(live_dir, name)
    if abs(live["final"] - final) > 1e-6:
        raise RuntimeError(f"{name}: saved model gives {final:.4f}% but the server logged {live['final']:.4f}% "
                           f"({live_dir}); the checkpoint does not match the run")
    timing = read_json(require_input(runtime_record(paths, name), f"server@{name}"))
    epochs, accs = read_curve(live_dir)
    trained = [i for i, e in enumerate(epochs) if e > 0] or list(range(len(epochs)))  # epoch 0: before training
    best = max(trained, key=lambda i: accs[i])
    # the run's record: its numbers (as logged live) and what produced them; not a DVC metric (dvc exp show shows
    # the live summary's final/best/epoch per method), read by reports and kept with the results in git
    record = {"method": args.method, "tag": args.tag, "acc_final": final, "acc_best": live["best"],
              "best_epoch": epochs[best], "epochs": man.get("epochs", 0),
              "test_samples": int(len(y_test)), "stand_in_data": data.stand_in,
              "choices": man["choices"], "server_seconds": timing["seconds"],
              "runtime": timing["runtime"],  # where the server ran: device, CPU model, threads, torch, switches
              "extras": man.get("extras") or {}}
    guards = {**cohort_guards(paths, man), **(server_guard(cfg.guard_floors, live["best"], man["num_classes"]) or {})}
    if guards:  # the regime guard: a server whose best accuracy stays near chance feeds no verdict
        record["guards"] = guards
        warn_failed(name, guards)
    if man.get("inputs"):  # the input preparation the run's models used (osfl.data.inputs)
        record["inputs"] = man["inputs"]
    if "flops" in man:  # the server stage's --count-flops
        record["server_flops"] = man["flops"]  # besides the model (FedHydra: MS weights, synthetic images)
    write_json(paths.results / "runs" / f"{name}.json", record)
    print(f"{name}: final {final:.2f}%, best {live['best']:.2f}% (checkpoint verified)")


if __name__ == "__main__":
    main()
