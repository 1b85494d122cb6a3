"""OFedED's client-side distribution matching, reference vs fast path (``osfl.condense.distribution_matching``).

The same condensation, in one process: one client's real images of ``--classes`` classes (``--per-class`` each,
uniform noise: the cost does not depend on the pixels) matched against ``--members`` randomly initialised networks
at the architecture's default layers, ``--steps`` steps of the last stage (IPC 2, DSA on):

* reference: one forward per (class, network), the structure of the DM/DC reference code
  (``batch_classes=False``);
* fast: every class's augmented batch through a network in one forward, the per-class means by segment.

Both start from the same seed and draw the same real batches and DSA transforms; the first step's losses agree up
to float rounding (printed). Prints the seconds per step of each path and the ratio, per device (CPU always, CUDA
when present); writes JSON. Not a test: numbers depend on the machine. Usage:
``python benchmarks/bench_matching.py [--arch cnn3] [--classes 3] [--per-class 256] [--members 10] [--steps 2]``.
"""
from __future__ import annotations

import argparse
import time

import torch

from osfl.condense import distribution_matching
from osfl.condense.settings import DEFAULT_LAYERS
from osfl.models import build_model
from _bench import devices, device_name, sync, write_results  # benchmarks/_bench.py (run as a script: its folder is on sys.path)

SHAPES = {"cnn3": (1, 28, 28), "cnn2": (1, 28, 28), "lenet5": (1, 28, 28), "resnet18": (3, 32, 32)}


def run(batched: bool, models, x, y, args, layers):
    """Seconds per step (after one warm-up run of one step) and the first step's loss."""
    stages = [0] * (len(layers) - 1)
    kw = dict(ipc=2, layers=layers, lr=1e-3, real_batch=args.per_class, batch_classes=batched)
    first = distribution_matching(models, x, y, iterations=stages + [1], gen=torch.Generator().manual_seed(0),
                                  **kw).losses[0]
    sync(x.device)
    t0 = time.perf_counter()
    distribution_matching(models, x, y, iterations=stages + [args.steps], gen=torch.Generator().manual_seed(1), **kw)
    sync(x.device)
    return (time.perf_counter() - t0) / args.steps, first


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="cnn3", choices=sorted(SHAPES))
    ap.add_argument("--classes", type=int, default=3, help="classes the client holds (Dir(0.1) clients: 2-4)")
    ap.add_argument("--per-class", type=int, default=256, help="real images per class and step (SPEC: 256)")
    ap.add_argument("--members", type=int, default=10, help="ensemble members (K = 10)")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/out/matching.json")
    args = ap.parse_args()
    shape = SHAPES[args.arch]
    layers = DEFAULT_LAYERS.get(args.arch) or {"lenet5": ["features.2", "features.5"]}[args.arch]
    rows = []
    for dev in devices():
        torch.manual_seed(1)
        models = [build_model(args.arch, shape, 10).to(dev) for _ in range(args.members)]
        g = torch.Generator().manual_seed(2)
        x = torch.rand((args.classes * args.per_class, *shape), generator=g).to(dev)
        y = torch.arange(args.classes).repeat_interleave(args.per_class).to(dev)
        ref, loss_ref = run(False, models, x, y, args, layers)
        fst, loss_fst = run(True, models, x, y, args, layers)
        name = device_name(dev)
        rows.append({"device": name, "reference_s_per_step": ref, "fast_s_per_step": fst, "ratio": ref / fst,
                     "first_loss_reference": loss_ref, "first_loss_fast": loss_fst, **vars(args)})
        print(f"{name}: reference {ref:.3f} s/step, fast {fst:.3f} s/step, speed-up {ref / fst:.2f}x "
              f"({args.members} x {args.arch}, {args.classes} classes x {args.per_class} real images; "
              f"first loss {loss_ref:.6g} vs {loss_fst:.6g})")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
