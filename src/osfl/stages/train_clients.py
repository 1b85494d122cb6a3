"""Stage `train_clients`: train every client of one federated setting and write each client's upload."""
from __future__ import annotations

import shutil
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from ..clients.augment import resolve_augment
from ..clients.batched import train_clients
from ..clients.upload import write_upload
from ..config import scaled_epochs
from ..data import load_prepared
from ..evaluation import accuracy
from ..models import build_model
from ..partition import load_partition
from ..runtime import derive_seed, device_info, get_device, write_json
from .common import load_config, parser, require_input, run_stage, test_tensors


def main(argv=None) -> None:
    run_stage(_run, parser(__doc__), argv)


def _run(args) -> None:
    _, cfg, paths = load_config(args)
    spec, profile, seed, local = cfg["dataset"], cfg["profile"], cfg["seed"], cfg["local"]
    data = load_prepared(require_input(paths.prepared, "prepare"))
    part = load_partition(require_input(paths.partition / "partition.json", "partition"))
    part.verify(data.y_train)
    device = get_device()
    epochs = scaled_epochs(local.epochs, profile)
    augment = resolve_augment(local.augment, spec.shape)
    x_all = torch.from_numpy(data.x_train).to(device)
    y_all = torch.from_numpy(data.y_train).long().to(device)
    x_test, y_test = test_tensors(data, profile, derive_seed(seed, "test-subset"), device)

    out = paths.clients
    if out.exists():
        shutil.rmtree(out)
    torch.manual_seed(derive_seed(seed, "init"))
    shared_init = build_model(cfg["model"], spec.shape, spec.num_classes).state_dict()

    accel = cfg["runtime"]
    n_clients = len(part.client_indices)
    models, client_data, gens = [], [], []
    for k, idx in enumerate(part.client_indices):
        torch.manual_seed(derive_seed(seed, "client-init", k))
        model = build_model(cfg["model"], spec.shape, spec.num_classes)
        if local.init == "shared":
            model.load_state_dict(shared_init)
        models.append(model.to(device))
        idx_t = torch.from_numpy(np.asarray(idx)).to(device)
        client_data.append((x_all[idx_t], y_all[idx_t]))
        gens.append(torch.Generator().manual_seed(derive_seed(seed, "client-data", k)))

    bar = tqdm(total=epochs * n_clients, desc="local training", disable=args.no_progress, mininterval=1.0,
               unit="epoch")
    hp = dict(epochs=epochs, batch_size=local.batch_size, lr=local.lr, momentum=local.momentum,
              weight_decay=local.weight_decay, augment=augment, eval_fn=lambda m: accuracy(m, x_test, y_test),
              eval_every=local.eval_every, accel=accel)
    t0 = time.perf_counter()
    batched = accel.batched(device) and n_clients > 1
    bar.set_description(f"{n_clients} clients " + ("batched" if batched else "one by one"))
    results, per_client_seconds = train_clients(
        models, client_data, gens, batched=batched, **hp,
        on_epoch=lambda k, e, loss: (bar.set_postfix(client=k, loss=f"{loss:.3f}", refresh=False), bar.update(1)))
    summary = []
    for k, (model, res) in enumerate(zip(models, results)):
        idx = part.client_indices[k]
        acc = accuracy(model, x_test, y_test)
        manifest = {
            "arch": cfg["model"], "input_shape": list(spec.shape), "num_classes": spec.num_classes,
            "dataset": spec.name, "n_samples": int(len(idx)),
            "label_histogram": part.class_counts[k].tolist(), "local_test_acc": acc,
            "train": {**local.as_dict(), "epochs_run": epochs, "augment_in_force": augment,
                      "profile": profile.name, "final_loss": res.final_loss, "steps": res.steps,
                      "runtime": accel.in_force(device)},
            "curve": res.curve,
        }
        write_upload(out, k, "classifier", manifest, tensors={"state_dict": model.state_dict()})
        summary.append({"client": k, "n_samples": int(len(idx)), "local_test_acc": acc,
                        "seconds": per_client_seconds[k], "samples_seen": res.samples_seen})
    bar.close()
    seconds = time.perf_counter() - t0
    seen = sum(s["samples_seen"] for s in summary)
    write_json(out / "index.json", {"clients": summary, "epochs_run": epochs, "profile": profile.name,
                                   "runtime": {**device_info(device), **accel.in_force(device)},
                                   "seconds": seconds})
    write_json(paths.results / "clients.json", {
        "local_acc_mean": float(np.mean([s["local_test_acc"] for s in summary])),
        "local_acc_min": float(np.min([s["local_test_acc"] for s in summary])),
        "local_acc_max": float(np.max([s["local_test_acc"] for s in summary])),
    })
    print(f"trained {len(summary)} clients x {epochs} epochs on {device} "
          f"({'batched' if batched else 'one by one'}) in {seconds:.1f} s "
          f"({seen / max(seconds, 1e-9):.0f} samples/s)")


if __name__ == "__main__":
    main()
