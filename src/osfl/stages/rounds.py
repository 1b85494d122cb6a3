"""Stage `rounds@<method>`: the multi-round protocol (T global rounds of E local epochs; FedHydra Tables 5, 8,
11-18). Reads the prepared data and the partition; writes results/<experiment>/rounds/<name>.json and .csv
and the last round's global model to models/<experiment>/rounds/<name>/model.pt (see
:mod:`osfl.protocols.multi_round`)."""
from __future__ import annotations

import csv
from pathlib import Path

from ..protocols.multi_round import read_rounds, run_rounds
from ..runtime import device_info, get_device, read_json, save_state_dict, write_json
from .common import load_config, parser, run_name, run_stage


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--method", required=True, help="server method (registry name)")
    p.add_argument("--tag", default="", help="name a variant (its settings come with --set): written as <method>-<tag>")
    run_stage(_run, p, argv)


def _run(args) -> None:
    params, cfg, paths = load_config(args)
    rounds = read_rounds(params, cfg["profile"])
    device = get_device()
    res = run_rounds(params, cfg, paths, args.method, rounds, device, progress=not args.no_progress)

    name = run_name(args)
    out = paths.results / "rounds"
    final = res.records[-1]["test_acc"]
    write_json(out / f"{name}.json", {
        "method": args.method, "tag": args.tag, "T": rounds.T, "local_epochs": rounds.local_epochs,
        "local_epochs_run": rounds.local_epochs_run, "profile": cfg["profile"].name, "rounds": res.records,
        "acc_final": final, "test_samples": res.test_samples, "choices": res.choices, "protocol": res.protocol,
        "runtime": {**device_info(device), **cfg["runtime"].in_force(device)},
        "stand_in_data": bool(read_json(paths.prepared / "meta.json").get("stand_in", False)),
    })
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
