"""Local-training throughput: the reference PIL pipeline, our in-memory path, and batched clients.

Two comparisons, each run on the same data in one process, per device (CPU always, CUDA when present):

1. One client (``--arch``, default the MNIST CNN cnn2):
   * reference: what the reference implementations do (DENSE, FedDF): a Dataset of PIL images, per-sample
     ``transforms.ToTensor()``, ``DataLoader(shuffle=True, num_workers=0)``;
   * in-memory: ``osfl.clients.training.train_classifier``: uint8 tensors on the device, batches gathered by
     index and converted on the device.
2. ``--clients`` clients (default 5) of unequal sizes (a Dirichlet-like split of ``--samples``):
   * one by one: ``train_classifier`` for each client in turn (the CPU default);
   * batched: ``osfl.clients.batched.train_classifiers_batched``, all clients as one vmapped model (the CUDA
     default); the benchmark also reports the largest parameter difference between the two paths.

Prints samples/s and the ratios in-memory/reference and batched/one-by-one, and writes them as JSON. Not a test:
numbers depend on the machine. Data: the embedded digits for 1x28x28 models, random images otherwise. Usage:
``python benchmarks/bench_local_training.py [--samples 6000] [--epochs 2] [--clients 5] [--arch cnn2]``.
"""
from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from osfl.clients.batched import train_classifiers_batched
from osfl.clients.training import train_classifier
from osfl.data.digits import load_digits_arrays
from osfl.models import build_model
from _bench import devices, device_name, sync, write_results  # benchmarks/_bench.py (run as a script: its folder is on sys.path)

HP = dict(lr=0.01, momentum=0.9, weight_decay=0.0)


class PILDataset(Dataset):
    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.images = [Image.fromarray(img[0]) if img.shape[0] == 1 else Image.fromarray(img.transpose(1, 2, 0))
                       for img in x]
        self.y = y
        self.tf = transforms.ToTensor()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.tf(self.images[i]), int(self.y[i])


def reference(x, y, device, epochs, batch, arch):
    torch.manual_seed(0)
    model = build_model(arch, x.shape[1:], 10).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = DataLoader(PILDataset(x, y), batch_size=batch, shuffle=True, num_workers=0,
                        generator=torch.Generator().manual_seed(0))
    sync(device)
    t0 = time.perf_counter()
    for _ in range(epochs):
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    sync(device)
    return epochs * len(y) / (time.perf_counter() - t0)


def fast(x, y, device, epochs, batch, arch):
    torch.manual_seed(0)
    model = build_model(arch, x.shape[1:], 10).to(device)
    xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y).long().to(device)
    sync(device)
    t0 = time.perf_counter()
    train_classifier(model, xt, yt, epochs=epochs, batch_size=batch, lr=0.01, momentum=0.9, weight_decay=0.0,
                     augment="none", gen=torch.Generator().manual_seed(0))
    sync(device)
    return epochs * len(y) / (time.perf_counter() - t0)


def bench_data(shape, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Learnable data: the embedded digits (1x28x28), repeated up to n; random images for other shapes."""
    rng = np.random.default_rng(0)
    if tuple(shape) == (1, 28, 28):
        with tempfile.TemporaryDirectory() as tmp:
            d = load_digits_arrays(None, Path(tmp))
        reps = rng.permutation(np.resize(np.arange(len(d.y_train)), n))
        return np.ascontiguousarray(d.x_train[reps]), d.y_train[reps].astype(np.int64)
    return (rng.integers(0, 256, (n, *shape), dtype=np.uint8), rng.integers(0, 10, n).astype(np.int64))


def client_split(n: int, clients: int, seed: int = 0) -> list[np.ndarray]:
    """Unequal client sizes: Dirichlet(2) proportions of n (at least 10 samples each), a seeded split."""
    rng = np.random.default_rng(seed)
    props = rng.dirichlet([2.0] * clients)
    sizes = np.maximum(10, (props * n).astype(int))
    cuts = np.cumsum(sizes)[:-1]
    return np.split(rng.permutation(n)[: sizes.sum()], np.minimum(cuts, n))


def clients_run(x, y, parts, device, epochs, batch, arch, batched: bool):
    """Train one model per part; returns (samples/s, models)."""
    torch.manual_seed(0)
    init = build_model(arch, x.shape[1:], 10).state_dict()
    models, data = [], []
    for idx in parts:
        m = build_model(arch, x.shape[1:], 10)
        m.load_state_dict(init)
        models.append(m.to(device))
        data.append((torch.from_numpy(x[idx]).to(device), torch.from_numpy(y[idx]).long().to(device)))
    gens = [torch.Generator().manual_seed(k) for k in range(len(parts))]
    sync(device)
    t0 = time.perf_counter()
    if batched:
        train_classifiers_batched(models, data, gens, epochs=epochs, batch_size=batch, augment="none", **HP)
    else:
        for m, (xk, yk), g in zip(models, data, gens):
            train_classifier(m, xk, yk, epochs=epochs, batch_size=batch, augment="none", gen=g, **HP)
    sync(device)
    return epochs * sum(len(p) for p in parts) / (time.perf_counter() - t0), models


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=6000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--clients", type=int, default=5)
    ap.add_argument("--arch", default="cnn2", help="cnn2 (1x28x28) or cnn3/cnn3_bn/resnet18 (3x32x32)")
    ap.add_argument("--skip-reference", action="store_true", help="skip the PIL reference (1st comparison)")
    ap.add_argument("--out", default="benchmarks/out/local_training.json")
    args = ap.parse_args()
    shape = (1, 28, 28) if args.arch in ("cnn2", "lenet5", "lenet5_avg") else (3, 32, 32)
    x, y = bench_data(shape, args.samples)
    parts = client_split(args.samples, args.clients)
    rows = []
    for dev in devices():
        name = device_name(dev)
        row = {"device": name, "arch": args.arch, "batch": args.batch, "samples": args.samples,
               "epochs": args.epochs, "clients": args.clients, "client_sizes": [len(p) for p in parts]}
        fast(x[:512], y[:512], dev, 1, args.batch, args.arch)  # warm-up (allocator, cuDNN autotune)
        if not args.skip_reference:
            ref = reference(x, y, dev, args.epochs, args.batch, args.arch)
            fst = fast(x, y, dev, args.epochs, args.batch, args.arch)
            row.update(reference_samples_per_s=ref, fast_samples_per_s=fst, ratio=fst / ref)
            print(f"{name}: 1 client: reference {ref:,.0f} samples/s, in-memory {fst:,.0f} samples/s, "
                  f"ratio {fst / ref:.2f}x ({args.arch}, batch {args.batch}, {args.samples} samples x "
                  f"{args.epochs} epochs)")
        clients_run(x, y, [p[:64] for p in parts], dev, 1, args.batch, args.arch, True)  # warm-up
        seq, seq_models = clients_run(x, y, parts, dev, args.epochs, args.batch, args.arch, False)
        bat, bat_models = clients_run(x, y, parts, dev, args.epochs, args.batch, args.arch, True)
        diff = max((a - b).abs().max().item() for ma, mb in zip(seq_models, bat_models)
                   for a, b in zip(ma.state_dict().values(), mb.state_dict().values()))
        row.update(one_by_one_samples_per_s=seq, batched_samples_per_s=bat, batched_ratio=bat / seq,
                   max_param_diff=diff)
        floor = ""
        if dev.type == "cpu":  # the same one-by-one run with oneDNN off: rounding alone, amplified by training
            with torch.backends.mkldnn.flags(enabled=False), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, alt_models = clients_run(x, y, parts, dev, args.epochs, args.batch, args.arch, False)
            noise = max((a - b).abs().max().item() for ma, mb in zip(seq_models, alt_models)
                        for a, b in zip(ma.state_dict().values(), mb.state_dict().values()))
            row["noise_floor_param_diff"] = noise
            floor = f" (one by one with oneDNN off differs by {noise:.1e}: float rounding amplified by training)"
        print(f"{name}: {args.clients} clients (sizes {row['client_sizes']}): one by one {seq:,.0f} samples/s, "
              f"batched {bat:,.0f} samples/s, ratio {bat / seq:.2f}x; largest weight difference {diff:.1e}{floor}")
        rows.append(row)
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
