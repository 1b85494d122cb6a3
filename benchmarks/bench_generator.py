"""Generator steps/s of a data-free server: client ensemble evaluated as one batched call vs a Python loop.

One "generator step" is what DENSE and FedHydra do T_G times per epoch: generate a batch, run every client
model on it with the BN-statistics loss, combine the logits, take the CE + BN loss, back-propagate into the
generator and step Adam. Both paths do the same work on the same models in one process:

* looped (reference): each client model is called in turn (``BatchedEnsemble(batched=False)``), with
  BN-statistics hooks on each model, as the reference code does;
* batched (ours): the clients' stacked weights run as one ``torch.func.vmap`` call
  (``BatchedEnsemble(batched=True)``).

Prints steps/s for each and the ratio batched/looped, per device (CPU always, CUDA when present), and checks
that the two paths give the same loss. Not a test: numbers depend on the machine.
Usage: ``python benchmarks/bench_generator.py [--clients 5] [--batch 64] [--ngf 32] [--steps 10]``.
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from osfl.distill import BatchedEnsemble, make_generator
from osfl.models import build_model
from _bench import devices, device_name, sync, write_results  # benchmarks/_bench.py (run as a script: its folder is on sys.path)


def steps_per_s(batched: bool, models, args, device, shape) -> tuple[float, float]:
    torch.manual_seed(0)
    gen = make_generator(shape, args.nz, args.ngf, device, torch.Generator().manual_seed(0))
    opt = torch.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.5, 0.999))
    ens = BatchedEnsemble(models, batched=batched)
    z = torch.randn(args.batch, args.nz, device=device)
    y = torch.randint(0, 10, (args.batch,), device=device)
    first = None

    def step():
        per_client, bn = ens.forward_with_bn(gen(z))
        loss = F.cross_entropy(per_client.mean(0), y) + bn.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss.detach())

    first = step()  # warm-up (allocator, cuDNN autotune); its loss is compared between the paths
    for _ in range(2):
        step()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    sync(device)
    return args.steps / (time.perf_counter() - t0), first


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=5)
    ap.add_argument("--arch", default="cnn2", help="client model (cnn2 for 1x28x28, cnn3/cnn3_bn for 3x32x32)")
    ap.add_argument("--batch", type=int, default=64, help="synthetic batch (paper: 256; quick profile: 64)")
    ap.add_argument("--ngf", type=int, default=32, help="generator width (paper: 64; quick profile: 32)")
    ap.add_argument("--nz", type=int, default=256)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", default="benchmarks/out/generator.json")
    args = ap.parse_args()
    shape = (3, 32, 32) if args.arch.startswith("cnn3") or args.arch == "resnet18" else (1, 28, 28)
    rows = []
    for dev in devices():
        torch.manual_seed(1)
        models = [build_model(args.arch, shape, 10).to(dev).eval() for _ in range(args.clients)]
        ref, loss_ref = steps_per_s(False, models, args, dev, shape)
        fst, loss_fst = steps_per_s(True, models, args, dev, shape)
        name = device_name(dev)
        rows.append({"device": name, "looped_steps_per_s": ref, "batched_steps_per_s": fst, "ratio": fst / ref,
                     "first_loss_looped": loss_ref, "first_loss_batched": loss_fst, **vars(args)})
        print(f"{name}: looped {ref:.2f} steps/s, batched {fst:.2f} steps/s, ratio {fst / ref:.2f}x "
              f"({args.clients} x {args.arch}, batch {args.batch}, ngf {args.ngf}; "
              f"first loss {loss_ref:.6f} vs {loss_fst:.6f})")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
