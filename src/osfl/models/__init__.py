"""Model registry.

Each architecture lives in its own module and registers a :class:`ModelSpec`. ``build_model(name, shape,
num_classes)`` is the one way the rest of the code makes a network, so an upload's manifest (architecture name,
input shape, class count) is enough to rebuild it. ``tests/test_models.py`` checks every parameter count that a
paper or reference code states.
"""
from __future__ import annotations

import copy

from dataclasses import dataclass, field
from typing import Callable

import torch.nn as nn

from ..errors import ConfigError
from ..registry import Registry, import_submodules

Shape = tuple[int, int, int]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    builder: Callable[[Shape, int], nn.Module]  # (input shape (C,H,W), num_classes) -> module
    description: str
    shapes: tuple[Shape, ...] = field(default=())  # input shapes it accepts; empty = any
    default_for: tuple[Shape, ...] = field(default=())  # shapes for which `model: auto` picks it


MODELS: Registry[ModelSpec] = Registry("model", key="model")


def build_model(name: str, shape: Shape, num_classes: int, inputs: dict | None = None) -> nn.Module:
    """A fresh ``name`` for inputs of ``shape`` (C, H, W); ``inputs`` = ``{"mean": [...], "std": [...]}`` (the
    params' ``inputs`` normalisation, or a manifest's ``inputs`` entry) makes it normalise its input first
    (:mod:`osfl.models.normalise`); None or no mean: pixels as given."""
    spec = MODELS.get(name)
    shape = tuple(int(s) for s in shape)
    if spec.shapes and shape not in spec.shapes:
        allowed = ", ".join("x".join(map(str, s)) for s in spec.shapes)
        raise ConfigError("model", f"{name!r} takes inputs {allowed}, not {'x'.join(map(str, shape))}")
    model = spec.builder(shape, num_classes)
    if inputs and inputs.get("mean") is not None:
        from .cvae import CVAE
        from .normalise import normalise_inputs

        if isinstance(model, CVAE):
            raise ConfigError("inputs.mean", f"{name!r} is a CVAE: it models pixels in [0, 1] (sigmoid, BCE); "
                                             "leave the normalisation out for it")
        normalise_inputs(model, inputs["mean"], inputs["std"])
    return model


def resolve_model_name(name: str, shape: Shape, key: str = "model") -> str:
    """``auto`` picks the paper's default for the input shape; other names are checked against the registry."""
    shape = tuple(int(s) for s in shape)
    if name == "auto":
        for n in MODELS.names():
            if shape in MODELS.get(n).default_for:
                return n
        raise ConfigError(key, f"no default model for inputs {shape}; allowed: {', '.join(MODELS.names())}")
    spec = MODELS.get(name, key=key)
    if spec.shapes and shape not in spec.shapes:
        allowed = ", ".join("x".join(map(str, s)) for s in spec.shapes)
        raise ConfigError(key, f"{name!r} takes inputs {allowed}, not {'x'.join(map(str, shape))}")
    return name


def hookless_copy(model: nn.Module) -> nn.Module:
    """A deep copy of ``model`` without the forward (pre-)hooks a caller may have put on it: the base module of a
    vmapped functional call over stacked weights, where such hooks must not fire."""
    base = copy.deepcopy(model)
    for mod in base.modules():
        mod._forward_hooks.clear()
        mod._forward_pre_hooks.clear()
    return base


def architecture_key(model: nn.Module) -> tuple:
    """Models with equal keys can share one ``torch.func`` stacked state (same class, layers, shapes, device)."""
    tensors = list(model.named_parameters()) + list(model.named_buffers())
    return (type(model), repr(model),
            tuple((n, tuple(t.shape), t.dtype, str(t.device)) for n, t in tensors))


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters (BatchNorm running statistics are buffers and not counted)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


import_submodules(__name__, __path__)
