"""DP-SGD for a client's local training and its privacy accounting (OFedED SPEC §2.8 [P], Fig. 3).

The proposal [P]: σ of "noise on model gradients" is the noise multiplier of DP-SGD (Abadi et al. 2016) with
per-sample clipping τ = 1 (``local.dp_sigma``, ``local.dp_clip``). Each step takes the gradient of every sample
of the batch alone (``torch.func``: ``vmap`` over the samples of ``grad`` of ``functional_call``), clips each to
ℓ2 norm τ over all parameters, sums them, adds N(0, (σ·τ)² I) and divides by the batch's size.

The noise comes from an explicitly passed, seeded CPU generator (drawn on the CPU, then moved to the device),
never from the global or a device random stream, so a DP run is reproducible on any device and the data order
and augmentation draws (the client's data generator) are those of the run without DP.

Per-sample gradients need a model whose output for one sample does not depend on the others: BatchNorm in train
mode mixes the batch, so such models are refused (:func:`check_dp_model`).
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad_and_value, vmap

from ..errors import ConfigError

ACCOUNTANT = "opacus RDP"


def has_batchnorm(model: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def check_dp_model(model: nn.Module) -> None:
    """Fail with one line naming ``local.dp_sigma`` when ``model`` has BatchNorm (no per-sample gradients)."""
    if has_batchnorm(getattr(model, "_orig_mod", model)):
        raise ConfigError("local.dp_sigma", f"DP-SGD needs per-sample gradients, which "
                          f"{type(getattr(model, '_orig_mod', model)).__name__} cannot give: it has BatchNorm "
                          "layers (they mix the batch in train mode); use a model without BatchNorm or dp_sigma: 0")


def dp_sgd_grads(model: nn.Module, x: torch.Tensor, y: torch.Tensor, clip: float, sigma: float,
                 noise_gen: torch.Generator, *, autocast=None, return_loss: bool = False):
    """The DP-SGD gradient of ``model`` on the batch (x, y): (Σ_i clip_τ(∇ℓ_i) + N(0, (σ·τ)² I)) / B, with
    clip_τ(g) = g · min(1, τ / (‖g‖ + 1e-6)) over all trainable parameters together (SPEC §2.8 [P]).

    Returns {parameter name: gradient} in ``named_parameters`` order (trainable parameters only), and with
    ``return_loss`` also the batch's mean loss (detached). ``noise_gen`` is a CPU generator: one normal draw per
    parameter tensor, in that order. ``autocast`` is a context manager for the forward pass (e.g. bf16).
    """
    if noise_gen is None or noise_gen.device.type != "cpu":
        raise ValueError("dp_sgd_grads: noise_gen must be a seeded CPU torch.Generator")
    base = getattr(model, "_orig_mod", model)  # a torch.compile'd module's own parameters
    named = dict(base.named_parameters())
    params = {n: p.detach() for n, p in named.items() if p.requires_grad}
    rest = {**{n: p.detach() for n, p in named.items() if not p.requires_grad},
            **{n: b for n, b in base.named_buffers()}}

    def loss_one(p, xi, yi):
        out = functional_call(base, (p, rest), (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    with autocast if autocast is not None else nullcontext():
        # dropout masks (if any) come from the device's stream, different per sample, as in a normal batch
        per_sample = vmap(grad_and_value(loss_one), in_dims=(None, 0, 0), randomness="different")
        grads, losses = per_sample(params, x, y)
    grads = {n: g.float() for n, g in grads.items()}
    norms = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads.values()], dim=1), dim=1)
    coef = (clip / (norms + 1e-6)).clamp(max=1.0)  # (B,)
    out = {}
    for n, g in grads.items():
        total = torch.tensordot(coef, g, dims=1)  # Σ_i coef_i g_i
        noise = torch.randn(total.shape, generator=noise_gen, dtype=torch.float32) * (sigma * clip)
        out[n] = ((total + noise.to(total.device)) / len(y)).to(params[n].dtype)
    if return_loss:
        return out, losses.float().mean().detach()
    return out


def dp_epsilon(steps: int, sample_rate: float, sigma: float, delta: float) -> float:
    """ε of ``steps`` DP-SGD steps at noise multiplier ``sigma`` and sampling rate ``sample_rate`` (B / n_k), for
    ``delta``, from opacus' RDP accountant (the subsampled Gaussian mechanism's Rényi DP, composed, then turned
    into (ε, δ)).

    The accountant assumes Poisson sampling (each sample in a batch independently with probability q); local
    training here takes shuffled fixed-size batches (a fresh permutation per epoch, the last batch smaller).
    The RDP ε under that mismatch is the usual approximation reported for DP-SGD with shuffling, not a proof.
    """
    if steps == 0:
        return 0.0
    from opacus.accountants import RDPAccountant

    acc = RDPAccountant()
    acc.history = [(float(sigma), float(sample_rate), int(steps))]  # (noise multiplier, q, steps): one phase
    return float(acc.get_epsilon(delta=delta))


def dp_record(local, steps: Sequence[int], sizes: Sequence[int]) -> dict:
    """The ``dp`` entry of ``clients.json`` for LocalTraining ``local`` with DP-SGD on: its parameters and each
    client's ε (``steps[k]`` steps on ``sizes[k]`` samples, q = batch_size / n_k)."""
    per_client = []
    for k, (s, n) in enumerate(zip(steps, sizes)):
        q = min(1.0, local.batch_size / max(1, n))
        per_client.append({"client": k, "steps": int(s), "sample_rate": q,
                           "epsilon": dp_epsilon(s, q, local.dp_sigma, local.dp_delta)})
    return {"sigma": local.dp_sigma, "clip": local.dp_clip, "delta": local.dp_delta, "accountant": ACCOUNTANT,
            "sampling": "shuffled fixed-size batches (the accountant assumes Poisson sampling: approximate)",
            "epsilon_max": max((c["epsilon"] for c in per_client), default=0.0), "per_client": per_client}
