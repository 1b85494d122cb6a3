"""Local training of a conditional VAE client (FedMHO SPEC §1.2; official ``pcode/worker_lmf.py``).

Loss per batch: binary cross-entropy between the decoder's sigmoid output and the input pixels in [0, 1], summed
over pixels, plus β · KL(q(z | x, y) ‖ N(0, I)) = −½ Σ (1 + logvar − μ² − exp(logvar)). The official code divides the
sum by the batch size for MNIST and Fashion-MNIST and keeps the plain sum for SVHN and EMNIST (``reduction``
``"batch_mean"`` or ``"sum"``); with Adam the scale barely matters. Sample order and the reparameterisation noise
come from the caller's seeded generator, so a client's training is reproducible in any order.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F

from ..clients.training import TrainResult
from ..config import CVAE_REDUCTIONS as REDUCTIONS
from ..errors import ConfigError
from ..evaluation import to_float
from ..models.cvae import CVAE


class CVAEDiverged(RuntimeError):
    """A CVAE's training diverged (:func:`train_cvae`); ``epoch`` is the epoch it was found in."""

    def __init__(self, message: str, epoch: int):
        super().__init__(message)
        self.epoch = epoch


def cvae_loss(model: CVAE, x: torch.Tensor, y: torch.Tensor, noise: torch.Tensor, *, beta: float = 1.0,
              reduction: str = "batch_mean") -> torch.Tensor:
    """Reconstruction (BCE, summed over pixels) + β · KL for one batch; ``noise`` is the reparameterisation ε."""
    recon, mu, logvar = model(x, y, noise)
    # checked before BCE: on CUDA a NaN input trips a device-side assert that ends the process (seen on an H100), so
    # train_cvae's retry could never see it; on the CPU BCE raises, as here
    if not bool(torch.isfinite(recon).all()):
        raise RuntimeError("the CVAE's reconstruction is not finite")
    rec = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    total = rec + beta * kld
    return total / len(x) if reduction == "batch_mean" else total


def mean_image_loss(x_u8: torch.Tensor, *, batch_size: int, reduction: str = "batch_mean") -> float:
    """The loss, per batch as :func:`cvae_loss` reports it, of a decoder that ignores z and y and draws the data's
    mean image: the BCE of every image against the pixel-wise mean (clamped into (0, 1)), KL 0. A CVAE, even one
    whose latent collapsed, decodes at least its class means, so its loss lies below this."""
    x = to_float(x_u8).flatten(1)
    mean = x.mean(0, keepdim=True).clamp(1e-6, 1 - 1e-6)
    per = F.binary_cross_entropy(mean.expand_as(x), x, reduction="none").sum(1)
    batches = [per[i : i + batch_size] for i in range(0, len(per), batch_size)]
    vals = [b.mean() if reduction == "batch_mean" else b.sum() for b in batches]
    return float(torch.stack(vals).mean()) if vals else float("nan")


def train_cvae(model: CVAE, x_u8: torch.Tensor, y: torch.Tensor, *, epochs: int, batch_size: int, lr: float,
               gen: torch.Generator, beta: float = 1.0, reduction: str = "batch_mean",
               on_epoch: Callable[[int, float], None] | None = None) -> TrainResult:
    """Adam on :func:`cvae_loss` for ``epochs`` passes over (x_u8, y), tensors on the model's device; a fresh
    permutation per epoch and every ε drawn from ``gen`` (a CPU generator). ``final_loss`` is the last epoch's
    mean loss per batch.

    Raises :class:`CVAEDiverged` when the training diverged: a reconstruction or the last epoch's mean loss turned
    non-finite. A finite loss may still be useless (FedMHO's Adam lr 5e-2 left one client at 5e27): compare it with
    :func:`mean_image_loss`, as ``train_part`` does."""
    if reduction not in REDUCTIONS:
        raise ConfigError("cvae.reduction", f"{reduction!r} is not one of {', '.join(REDUCTIONS)}")
    if not isinstance(model, CVAE):
        raise ConfigError("model", f"train_cvae needs a conditional VAE (cvae_small, cvae_large), not {type(model).__name__}")
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    n, device = len(y), x_u8.device
    steps, seen, loss_val = 0, 0, float("nan")
    model.train()
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(n, generator=gen).to(device)
        total, batches = torch.zeros((), device=device), 0
        for i in range(0, n, batch_size):
            idx = perm[i : i + batch_size]
            noise = torch.randn(len(idx), model.latent_size, generator=gen).to(device)
            try:
                loss = cvae_loss(model, to_float(x_u8[idx]), y[idx], noise, beta=beta, reduction=reduction)
            except RuntimeError as err:  # a NaN reconstruction (cvae_loss): the training diverged
                raise CVAEDiverged(f"CVAE training diverged in epoch {epoch} of {epochs} (Adam lr {lr}; last epoch's "
                                   f"mean loss {loss_val:.2f}): {err}", epoch) from err
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
            batches += 1
            steps += 1
            seen += len(idx)
        loss_val = (total / max(1, batches)).item()
        if on_epoch is not None:
            on_epoch(epoch, loss_val)
    model.eval()
    if epochs and not math.isfinite(loss_val):
        raise CVAEDiverged(f"CVAE training diverged: its last epoch's mean loss is {loss_val} (Adam lr {lr})", epochs)
    return TrainResult(epochs, steps, seen, loss_val)
