"""Does our CVAE-small diverge more often than FedMHO's official one at the paper's Adam lr 5e-2?

The FedMHO cpu grid (papers/fedmho) lost its CVAE-small part in two of two splits (one client's loss exploded to a
NaN reconstruction in epoch 4-6 of 40). This trains our ``cvae_small`` and the official ``CVAE_MNIST``
($OSFL_PEERS/FedMHO/pcode/models/cvae.py) side by side on the same client data, seeds, batches and loss
(BCE summed over pixels + KL, per batch; Adam lr 5e-2, batch 64, 40 epochs) and counts the runs whose reconstruction
turns non-finite. Needs papers/fedmho's prepared Fashion-MNIST and the Dir(0.3) seed-0 partition.
    python -m benchmarks.peers.cvae_divergence --clients 5 6 7 8 9 --seeds 0 1
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from osfl.models import build_model

PROJECT = Path(__file__).resolve().parents[2] / "papers" / "fedmho"


def run(kind: str, x, y, seed: int, epochs: int, lr: float) -> int | None:
    """The epoch in which the reconstruction first turned non-finite, or None."""
    from pcode.models.cvae import CVAE_MNIST  # the official model (imported from $OSFL_PEERS/FedMHO)

    torch.manual_seed(seed)
    m = CVAE_MNIST("fashionmnist") if kind == "official" else build_model("cvae_small", (1, 28, 28), 10)
    opt, g = torch.optim.Adam(m.parameters(), lr=lr), torch.Generator().manual_seed(seed)
    for ep in range(epochs):
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y), 64):
            b = perm[i:i + 64]
            out = m(x[b], y[b])
            r, mu, lv = out[0].reshape(len(b), -1), out[1], out[2]
            if not torch.isfinite(r).all():
                return ep + 1
            kl = -0.5 * torch.sum(1 + lv - mu.pow(2) - lv.exp())
            loss = (F.binary_cross_entropy(r, x[b].reshape(len(b), -1), reduction="sum") + kl) / len(b)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return None


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, nargs="+", default=[5, 6, 7, 8, 9])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--split", default="dir0.3")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--lr", type=float, default=5e-2)
    a = p.parse_args(argv)
    sys.path.insert(0, str(Path(os.environ.get("OSFL_PEERS", "/tmp/peers")) / "FedMHO"))
    torch.set_num_threads(1)
    pt = json.loads((PROJECT / "data" / "partitions" / f"fmnist-{a.split}-s0" / "partition.json").read_text())
    data = PROJECT / "data" / "prepared" / "fmnist"
    X = torch.from_numpy(np.load(data / "x_train.npy")).float() / 255
    Y = torch.from_numpy(np.load(data / "y_train.npy")).long()
    res: dict[str, list] = {"ours": [], "official": []}
    for client in a.clients:
        idx = torch.tensor(pt["client_indices"][client])
        for seed in a.seeds:
            for kind in res:
                res[kind].append(run(kind, X[idx], Y[idx], seed, a.epochs, a.lr))
            print(f"client {client} seed {seed}: diverged in epoch ours {res['ours'][-1]}, "
                  f"official {res['official'][-1]}", flush=True)
    print({k: f"{sum(v is not None for v in vs)}/{len(vs)} diverged" for k, vs in res.items()})


if __name__ == "__main__":
    main()
