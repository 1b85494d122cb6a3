"""Stage `evaluate@<method>`: test accuracy of a method's global model; metrics JSON and the epoch curve."""
from __future__ import annotations

from pathlib import Path

import torch

from ..clients.upload import read_uploads
from ..evaluation import accuracy, ensemble_predictor
from ..models import build_model
from ..runtime import derive_seed, load_state_dict, read_json, write_json, write_text
from .common import load_data, load_config, parser, require_input, run_name, run_stage, test_tensors


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--method", required=True)
    p.add_argument("--tag", default="", help="the server stage's variant tag: reads and writes <method>-<tag>")
    run_stage(_run, p, argv)


def load_predictor(global_dir: Path, device: torch.device):
    """Rebuild what a server stage wrote: a global classifier, or the ensemble of the client uploads."""
    man = read_json(global_dir / "manifest.json")
    if man["kind"] == "classifier":
        model = build_model(man["arch"], tuple(man["input_shape"]), man["num_classes"])
        model.load_state_dict(load_state_dict(global_dir / man["files"]["state_dict"]))
        return man, model.to(device).eval()
    ups = {u.client_id: u for u in read_uploads(man["clients_dir"])}
    return man, ensemble_predictor([ups[c].build_model(device) for c in man["members"]], man["weights"])


def summarise(final: float, curve: list[dict]) -> dict:
    """Final and best-over-epochs accuracy; a method without a curve has best = final."""
    if not curve:
        return {"acc_final": final, "acc_best": final, "best_epoch": 0, "epochs": 0}
    best = max(curve, key=lambda c: c["test_acc"])
    return {"acc_final": final, "acc_best": max(best["test_acc"], final), "best_epoch": best["epoch"],
            "epochs": curve[-1]["epoch"]}


def _run(args) -> None:
    _, cfg, paths = load_config(args)
    device = cfg["device"]
    data = load_data(paths, cfg)
    x_test, y_test = test_tensors(data, cfg["profile"], derive_seed(cfg["seed"], "test-subset"), device)
    name = run_name(args)
    man, predict = load_predictor(require_input(paths.global_model(name), f"server@{name}"), device)
    final = accuracy(predict, x_test, y_test)
    curve = man["curve"]
    if curve and abs(curve[-1]["test_acc"] - final) > 1e-6:
        raise RuntimeError(f"{name}: saved model gives {final:.4f}% but its last epoch recorded "
                           f"{curve[-1]['test_acc']:.4f}%; the checkpoint does not match the curve")
    metrics = {"method": args.method, "tag": args.tag, **summarise(final, curve),
               "test_samples": int(len(y_test)), "stand_in_data": data.stand_in,
               "choices": man["choices"], "server_seconds": round(man["seconds"], 3),
               "runtime": man.get("runtime", {})}  # where the server ran: device, CPU model, threads, torch
    write_json(paths.results / "metrics" / f"{name}.json", metrics)
    # what the method reports besides the model (FedHydra: MS weights, a few synthetic images) for figures
    write_json(paths.results / "extras" / f"{name}.json", {"method": args.method, "tag": args.tag,
                                                           "extras": man.get("extras") or {}})
    rows = ["epoch,test_acc"] + [f"{c['epoch']},{c['test_acc']:.4f}" for c in curve or [{"epoch": 0, "test_acc": final}]]
    write_text(paths.results / "curves" / f"{name}.csv", "\r\n".join(rows) + "\r\n")  # csv.writer's line ends
    print(f"{name}: final {final:.2f}%, best {metrics['acc_best']:.2f}%")


if __name__ == "__main__":
    main()
