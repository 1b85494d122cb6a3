"""Multiply-accumulates (MACs) of one forward pass, counted by torch's ``FlopCounterMode``.

``FlopCounterMode`` counts 2 FLOPs per multiply-accumulate of every matrix product and convolution (bias and
element-wise operations excluded), so MACs = FLOPs / 2. Papers that print "FLOPs" of small models usually print
these MACs as counted by thop; FedMHO's Table II does (SPEC §1.10). thop 0.1 differs in one rule that matters here:
it counts a transposed convolution by its *output* (output elements × input channels × kernel size) rather than
by the multiply-accumulates it performs (input elements × output channels × kernel size), which is 4× more for a
stride-2 layer. ``transposed="output"`` applies thop's rule; ``"true"`` keeps the real count. Element-wise
operations (pooling, upsampling, softmax), which thop counts and ``FlopCounterMode`` does not, are left out: they
are below 1% for every model here and are named in the report where they show.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
from torch.utils.flop_counter import FlopCounterMode

from ..errors import ConfigError

TRANSPOSED = ("true", "output")


def count_macs(model: nn.Module, *inputs: torch.Tensor, transposed: str = "output") -> int:
    """MACs of ``model(*inputs)`` (eval mode, no gradient), for the batch the inputs hold."""
    if transposed not in TRANSPOSED:
        raise ConfigError("transposed", f"{transposed!r} is not one of {', '.join(TRANSPOSED)}")
    extra = [0]

    def thop_rule(mod: nn.ConvTranspose2d, args, out):
        per = math.prod(mod.kernel_size) // mod.groups
        extra[0] += out.numel() * mod.in_channels * per - args[0].numel() * mod.out_channels * per

    hooks = [m.register_forward_hook(thop_rule) for m in model.modules()
             if transposed == "output" and isinstance(m, nn.modules.conv._ConvTransposeNd)]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(*inputs)
    finally:
        for h in hooks:
            h.remove()
        model.train(was_training)
    return counter.get_total_flops() // 2 + extra[0]


def format_count(n: float) -> str:
    """``126465280`` -> ``126.47M``, ``467229`` -> ``467.23K``: the way the papers print counts."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f}{unit}"
    return str(int(n))


def macs_at_batch_one(model: nn.Module, shape, transposed: str = "output") -> int:
    """:func:`count_macs` of one input of ``shape`` (C, H, W), as the papers' FLOPs tables count; a conditional
    VAE (:class:`osfl.models.cvae.CVAE`) also gets its label."""
    from ..models.cvae import CVAE

    x = torch.zeros(1, *shape)
    args = (x, torch.zeros(1, dtype=torch.long)) if isinstance(model, CVAE) else (x,)
    return count_macs(model, *args, transposed=transposed)
