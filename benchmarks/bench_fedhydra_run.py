"""A whole FedHydra run (local training + model stratification + HASA distillation), reference vs fast path.

The same run, in one process, on the embedded digits (Dirichlet α = 0.5, 5 clients, cnn2) at a fixed small
scale (``--profile``, default ``smoke``: 2 local epochs, 2 server epochs of 30 generator steps, synthetic batch
32, generator width 16):

* reference: clients trained one by one, every teacher ensemble a Python loop over the clients
  (``ServerContext(batched_ensemble=False)``), the c model-stratification generators of a client one by one
  (``ms_batched=False``) — the structure of the reference code;
* fast: the clients as one vmapped model (``osfl.clients.batched``), the ensemble as one vmapped call, the MS
  generators of a client as one vmapped generator.

Prints the seconds of each phase for both paths, the ratios reference/fast, and both final accuracies (they
agree up to float noise amplified by training; the equality of the pieces is tested in the test suite). Not a
test: numbers depend on the machine. Usage:
``python benchmarks/bench_fedhydra_run.py [--profile smoke] [--g-steps N] [--ms-steps N]``.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from osfl.clients.batched import train_clients
from osfl.clients.upload import read_uploads, write_upload
from osfl.config import get_profile, scaled_epochs
from osfl.data.digits import load_digits_arrays
from osfl.methods import METHODS
from osfl.methods.base import ServerContext
from osfl.models import build_model
from osfl.partition import make_partition
from _bench import devices, device_name, sync, write_results  # benchmarks/_bench.py (run as a script: its folder is on sys.path)


def run(device, profile, fast: bool, data, part, args) -> dict:
    torch.manual_seed(0)
    shape = (1, 28, 28)
    init = build_model("cnn2", shape, 10).state_dict()
    x_all = torch.from_numpy(data.x_train).to(device)
    y_all = torch.from_numpy(data.y_train).long().to(device)
    models, client_data = [], []
    for idx in part.client_indices:
        m = build_model("cnn2", shape, 10)
        m.load_state_dict(init)
        models.append(m.to(device))
        idx_t = torch.from_numpy(np.asarray(idx)).to(device)
        client_data.append((x_all[idx_t], y_all[idx_t]))
    gens = [torch.Generator().manual_seed(k) for k in range(len(models))]
    sync(device)
    t0 = time.perf_counter()
    train_clients(models, client_data, gens, batched=fast, epochs=scaled_epochs(200, profile), batch_size=128,
                  lr=0.01, momentum=0.9, weight_decay=0.0, augment="none")
    sync(device)
    t_local = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        for k, (m, idx) in enumerate(zip(models, part.client_indices)):
            write_upload(tmp, k, "classifier", {"arch": "cnn2", "input_shape": list(shape), "num_classes": 10,
                                                "n_samples": len(idx), "label_histogram": part.class_counts[k]
                                                .tolist()}, tensors={"state_dict": m.state_dict()})
        ctx = ServerContext(uploads=read_uploads(tmp), model_name="cnn2", input_shape=shape, num_classes=10,
                            x_test=torch.from_numpy(data.x_test).to(device),
                            y_test=torch.from_numpy(data.y_test).long().to(device), device=device, seed=0,
                            profile=profile, progress=False, dataset="digits", batched_ensemble=fast)
        overrides = {k: v for k, v in (("g_steps", args.g_steps), ("ms_steps", args.ms_steps)) if v is not None}
        method = METHODS.get("fedhydra")(ms_batched=fast, **overrides)
        torch.manual_seed(1)
        sync(device)
        t0 = time.perf_counter()
        result = method.run(ctx)
        sync(device)
        t_server = time.perf_counter() - t0
    acc = result.curve[-1]["test_acc"] if result.curve else float("nan")
    return {"local_s": t_local, "server_s": t_server, "total_s": t_local + t_server, "final_acc": acc}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="smoke", help="scale of the run (smoke, quick, paper)")
    ap.add_argument("--clients", type=int, default=5)
    ap.add_argument("--g-steps", type=int, default=None, help="generator steps per epoch (default: paper's 30)")
    ap.add_argument("--ms-steps", type=int, default=None, help="MS steps per generator (default: FedHydra's)")
    ap.add_argument("--out", default="benchmarks/out/fedhydra_run.json")
    args = ap.parse_args()
    profile = get_profile(args.profile)
    with tempfile.TemporaryDirectory() as tmp:
        data = load_digits_arrays(None, Path(tmp))
    part = make_partition(data.y_train, "dirichlet", args.clients, seed=0, num_classes=10, alpha=0.5)
    rows = []
    for dev in devices():
        name = device_name(dev)
        for fast in (False, True):  # warm-up: allocator, vmap tracing, cuDNN autotune (a tiny local run)
            train_clients([build_model("cnn2", (1, 28, 28), 10).to(dev) for _ in range(2)],
                          [(torch.zeros(8, 1, 28, 28, dtype=torch.uint8, device=dev),
                            torch.zeros(8, dtype=torch.long, device=dev))] * 2,
                          [torch.Generator().manual_seed(0)] * 2, batched=fast, epochs=1, batch_size=4, lr=0.01,
                          momentum=0.9, weight_decay=0.0, augment="none")
        ref = run(dev, profile, False, data, part, args)
        fst = run(dev, profile, True, data, part, args)
        ratios = {k: ref[k] / fst[k] for k in ("local_s", "server_s", "total_s")}
        rows.append({"device": name, "profile": profile.name, "clients": args.clients, "reference": ref,
                     "fast": fst, "speedup": ratios})
        print(f"{name}, FedHydra digits {args.clients} clients, profile {profile.name}:")
        for k, label in (("local_s", "local training"), ("server_s", "server (MS + HASA)"), ("total_s", "whole run")):
            print(f"  {label:20s} reference {ref[k]:8.1f} s   fast {fst[k]:8.1f} s   speed-up {ratios[k]:.2f}x")
        print(f"  final accuracy: reference {ref['final_acc']:.2f}%, fast {fst['final_acc']:.2f}%")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
