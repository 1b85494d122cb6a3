"""Local training of classifier clients, straight from in-memory uint8 tensors.

Each client's data sits on the device as a uint8 tensor; batches are gathered by index, converted to [0,1]
floats and augmented on the device (:mod:`osfl.augment`). Every client has its own seeded generator
for data order and augmentation, and its model is initialised from a seeded draw, so a run is reproducible
and clients can be trained in any order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

from ..accel import Accel
from ..evaluation import to_float
from ..runtime import derive_seed, seeded_default_generators
from ..augment import augment_batch
from .dp import check_dp_model, dp_sgd_grads


@dataclass
class TrainResult:
    epochs: int
    steps: int
    samples_seen: int
    final_loss: float
    curve: list[dict] = field(default_factory=list)  # [{"epoch": e, "test_acc": a}] when evaluated


def has_dropout(model: torch.nn.Module) -> bool:
    """Whether ``model`` has a dropout layer with p > 0 (its masks come from torch's default generator)."""
    return any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules())


def train_classifier(model: torch.nn.Module, x_u8: torch.Tensor, y: torch.Tensor, **kw) -> TrainResult:
    """:func:`_train_classifier` (its docstring says what it does). A model with dropout draws its masks from
    torch's default generator of its device; here that generator is forked for the training and seeded from the
    client's own ``gen`` (its initial seed, ``derive_seed(seed, "dropout")``; ``gen`` itself is not consumed), so a
    client's masks, like its data order, depend on nothing but its own seed: not on the clients trained before it
    in the same process, nor on which process trains it (clients/parallel.py)."""
    if not has_dropout(model):
        return _train_classifier(model, x_u8, y, **kw)
    with seeded_default_generators(derive_seed(kw["gen"].initial_seed(), "dropout"), x_u8.device):
        return _train_classifier(model, x_u8, y, **kw)


def _train_classifier(
    model: torch.nn.Module,
    x_u8: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    momentum: float,
    weight_decay: float,
    augment: str,
    gen: torch.Generator,
    eval_fn: Callable[[torch.nn.Module], float] | None = None,
    eval_every: int = 0,
    on_epoch: Callable[[int, float], None] | None = None,
    accel: Accel | None = None,
    optimizer: str = "sgd",
    grad_clip: float = 0.0,
    dp_sigma: float = 0.0,
    dp_clip: float = 1.0,
    noise_gen: torch.Generator | None = None,
) -> TrainResult:
    """SGD (``momentum``, ``weight_decay``) or, with ``optimizer="adam"``, Adam (``lr``, ``weight_decay``; torch's
    default betas) + cross-entropy for ``epochs`` passes over (x_u8, y); all tensors on the model's device.

    The order of samples is a fresh permutation per epoch from ``gen`` (a CPU generator); the last batch may be
    smaller (no drop_last, as in DENSE's DataLoader). ``eval_fn(model)`` is called every ``eval_every`` epochs
    and after the last epoch when ``eval_every > 0``. ``accel`` (:class:`osfl.accel.Accel`) switches on bf16
    autocast for the forward pass and loss, and channels-last input batches on CUDA (the caller converts the
    model, see :func:`prepare_model`).

    ``grad_clip`` > 0 clips each step's total gradient norm to it (``torch.nn.utils.clip_grad_norm_``) before
    the optimiser's weight decay and momentum: Co-Boosting's local training, clip 10 (OFedED SPEC §2.1 [CB]).
    ``dp_sigma`` > 0 makes each step DP-SGD (SPEC §2.8 [P]): the gradient is
    :func:`osfl.clients.dp.dp_sgd_grads` (per-sample clipping to ``dp_clip``, Gaussian noise of multiplier
    ``dp_sigma`` drawn from ``noise_gen``, a seeded CPU generator apart from ``gen``), then ``grad_clip`` if set,
    then the optimiser's update. Models with BatchNorm cannot take per-sample gradients (ConfigError).
    """
    accel = accel or Accel()
    dp = dp_sigma > 0
    if dp:
        check_dp_model(model)
        if noise_gen is None:
            raise ValueError("train_classifier: dp_sigma > 0 needs noise_gen, a seeded CPU torch.Generator")
        named = dict(getattr(model, "_orig_mod", model).named_parameters())
    channels_last = accel.channels_last and x_u8.device.type == "cuda"
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    elif optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    else:
        raise ValueError(f"optimizer must be sgd or adam, got {optimizer!r}")
    n = len(y)
    steps, seen, loss_val = 0, 0, float("nan")
    curve: list[dict] = []
    model.train()
    for epoch in range(1, epochs + 1):
        perm = torch.randperm(n, generator=gen).to(x_u8.device)
        total, count = torch.zeros((), device=x_u8.device), 0
        for i in range(0, n, batch_size):
            idx = perm[i : i + batch_size]
            xb = augment_batch(to_float(x_u8[idx]), augment, gen)
            if channels_last:
                xb = xb.contiguous(memory_format=torch.channels_last)
            if dp:
                grads, loss = dp_sgd_grads(model, xb, y[idx], dp_clip, dp_sigma, noise_gen,
                                           autocast=accel.autocast(xb.device), return_loss=True)
                opt.zero_grad(set_to_none=True)
                for name, g in grads.items():
                    named[name].grad = g
            else:
                with accel.autocast(xb.device):
                    loss = F.cross_entropy(model(xb), y[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
            if grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            opt.step()
            total += loss.detach() * len(idx)
            count += len(idx)
            steps += 1
        seen += count
        loss_val = (total / max(1, count)).item()
        if eval_fn is not None and eval_every > 0 and (epoch % eval_every == 0 or epoch == epochs):
            curve.append({"epoch": epoch, "test_acc": eval_fn(model), "train_loss": loss_val})
            model.train()
        if on_epoch is not None:
            on_epoch(epoch, loss_val)
    model.eval()
    return TrainResult(epochs, steps, seen, loss_val, curve)


def prepare_model(model: torch.nn.Module, accel: Accel, device: torch.device) -> torch.nn.Module:
    """The module to train: channels-last on CUDA and/or ``torch.compile`` as ``accel`` asks.

    The returned module shares parameters with ``model``; save ``model.state_dict()`` (a compiled module's keys
    carry a prefix).
    """
    if accel.channels_last and device.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    if accel.compile:
        if torch.are_deterministic_algorithms_enabled():  # inductor's own flag too (runtime.set_deterministic skips it)
            torch.use_deterministic_algorithms(True, warn_only=torch.is_deterministic_algorithms_warn_only_enabled())
        return torch.compile(model)
    return model
