"""Local-training throughput of the MNIST CNN (cnn2): our in-memory path vs the reference PIL pipeline.

Both paths train the same model with the same optimiser on the same 1x28x28 data, in one process:
* reference: what the reference implementations do (DENSE, FedDF): a Dataset of PIL images, per-sample
  ``transforms.ToTensor()``, ``DataLoader(shuffle=True, num_workers=0)``;
* fast: the project's path (``osfl.clients.training.train_classifier``): uint8 tensors on the device, batches
  gathered by index and converted on the device.

Prints samples/s for each and the ratio fast/reference, per device (CPU always, CUDA when present). Not a test:
numbers depend on the machine. Usage: ``python benchmarks/bench_local_training.py [--samples 6000] [--epochs 2]``.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

from osfl.clients.training import train_classifier
from osfl.models import build_model


class PILDataset(Dataset):
    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.images = [Image.fromarray(img[0], mode="L") for img in x]
        self.y = y
        self.tf = transforms.ToTensor()

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.tf(self.images[i]), int(self.y[i])


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reference(x, y, device, epochs, batch):
    torch.manual_seed(0)
    model = build_model("cnn2", (1, 28, 28), 10).to(device).train()
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


def fast(x, y, device, epochs, batch):
    torch.manual_seed(0)
    model = build_model("cnn2", (1, 28, 28), 10).to(device)
    xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y).long().to(device)
    sync(device)
    t0 = time.perf_counter()
    train_classifier(model, xt, yt, epochs=epochs, batch_size=batch, lr=0.01, momentum=0.9, weight_decay=0.0,
                     augment="none", gen=torch.Generator().manual_seed(0))
    sync(device)
    return epochs * len(y) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=6000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--out", default="benchmarks/out/local_training.json")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (args.samples, 1, 28, 28), dtype=np.uint8)
    y = rng.integers(0, 10, args.samples).astype(np.int64)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    rows = []
    for dev in devices:
        fast(x[:512], y[:512], dev, 1, args.batch)  # warm-up (allocator, cuDNN autotune)
        ref = reference(x, y, dev, args.epochs, args.batch)
        fst = fast(x, y, dev, args.epochs, args.batch)
        name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
        rows.append({"device": name, "reference_samples_per_s": ref, "fast_samples_per_s": fst, "ratio": fst / ref})
        print(f"{name}: reference {ref:,.0f} samples/s, fast {fst:,.0f} samples/s, ratio {fst / ref:.2f}x "
              f"(cnn2, batch {args.batch}, {args.samples} samples x {args.epochs} epochs)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"torch": torch.__version__, "results": rows}, indent=2))


if __name__ == "__main__":
    main()
