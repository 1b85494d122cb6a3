"""A classifier that normalises its own input: ``(x - mean) / std`` per channel, then the architecture's forward.

The params' ``inputs.mean``/``inputs.std`` (:mod:`osfl.data.inputs`) put the reference code's normalisation inside
every classifier, so the data, the generators' images and the distilled sets stay pixels in [0, 1] and reach each
model the way the reference code feeds it. The model keeps its class's layers and parameter names: it becomes an
instance of a subclass whose forward normalises first, and mean/std are non-persistent buffers, so state dicts,
parameter counts, FLOP counts of the layers, deep copies and ``torch.func`` stacking (the batched clients and
ensembles) are those of the plain architecture. Forward hooks are not used (copies for vmapped calls drop them).
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn


class NormalisedInput:
    """Mixin placed before a model's class: its forward normalises, then runs the class's forward."""

    input_mean: torch.Tensor
    input_std: torch.Tensor

    def forward(self, x, *args, **kwargs):
        return super().forward((x - self.input_mean) / self.input_std, *args, **kwargs)


_SUBCLASSES: dict[type, type] = {}


def normalise_inputs(model: nn.Module, mean: Sequence[float], std: Sequence[float]) -> nn.Module:
    """``model`` itself, turned into a model that normalises its input (one value per input channel)."""
    if isinstance(model, NormalisedInput):
        raise ValueError(f"{type(model).__name__} already normalises its input")
    cls = type(model)
    sub = _SUBCLASSES.get(cls)
    if sub is None:
        sub = _SUBCLASSES[cls] = type(cls.__name__, (NormalisedInput, cls), {"__module__": __name__})
    ref = next(iter(model.parameters()), None)
    kw = {} if ref is None else {"device": ref.device}
    model.register_buffer("input_mean", torch.tensor([float(m) for m in mean], **kw).view(1, -1, 1, 1), persistent=False)
    model.register_buffer("input_std", torch.tensor([float(s) for s in std], **kw).view(1, -1, 1, 1), persistent=False)
    model.__class__ = sub
    model.input_norm = {"mean": [float(m) for m in mean], "std": [float(s) for s in std]}  # as configured
    return model


def input_normalisation(model: nn.Module) -> dict | None:
    """``{"mean": [...], "std": [...]}`` of a model that normalises its input, else None (what manifests record)."""
    return dict(model.input_norm) if isinstance(model, NormalisedInput) else None
