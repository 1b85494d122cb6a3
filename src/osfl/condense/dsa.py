"""Differentiable Siamese augmentation (DSA, Zhao & Bilen 2021), as distribution matching uses it.

One call draws ONE of ``ops`` uniformly, then one set of its random parameters from ``gen`` (a CPU generator), and
applies that same transform to every image of each tensor it is given: calling it on a class's real batch and on
its synthetic images with the same draw is the "Siamese" part (DM's code reuses one clock seed for both). Every
transform is differentiable in the images (the synthetic images are what is optimised).

The ops and their ranges are the DC/DSA code's ``ParamDiffAug`` defaults (strategy
``color_crop_cutout_flip_scale_rotate``, single-op mode): scale x, y ∈ [1/1.2, 1.2]; rotation ±15°; horizontal
flip with probability 0.5; colour = brightness (+U(−0.5, 0.5)), then saturation (× U(0, 2) around the channel
mean), then contrast (× U(0.5, 1.5) around the image mean); crop = a translation by a whole number of pixels
drawn uniformly from −s..s, s = round(side/8) (4 on 28 pixels), with zero fill; cutout = a zeroed square of
round(side/2) pixels (14 on 28) whose top-left corner is its centre minus half its side, clipped at the borders.
Scale and rotate resample with ``align_corners=False``, as the DSA code (torch's default) does. DM's README drops
flip for MNIST and SVHN (digits), which ``ops`` allows. The crop range, the cutout size and the resampling grid
were checked against the official code on the same draws (benchmarks/peers/dm.py; reports/peers.md findings F20-F22).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

DSA_OPS = ("color", "crop", "cutout", "flip", "scale", "rotate")
SCALE, ROTATE, CROP, CUTOUT = 1.2, 15.0, 0.125, 0.5
BRIGHTNESS, SATURATION, CONTRAST = 1.0, 2.0, 0.5


def _u(gen: torch.Generator, n: int = 1) -> list[float]:
    return torch.rand(n, generator=gen, dtype=torch.float64).tolist()


def _affine(xs, theta: torch.Tensor):
    out = []
    for x in xs:
        t = theta.to(x.device, x.dtype).expand(len(x), 2, 3)
        grid = F.affine_grid(t, list(x.shape), align_corners=False)
        out.append(F.grid_sample(x, grid, align_corners=False))
    return out


def _shift(u: float, s: int) -> int:
    """A whole number uniform on −s..s from a uniform draw ``u`` in [0, 1)."""
    return min(int(u * (2 * s + 1)), 2 * s) - s


def draw(ops: tuple[str, ...], gen: torch.Generator) -> tuple[str, list[float]]:
    """The op and its uniform draws (a ``dsa`` call's randomness, so the same draw can be applied twice)."""
    op = ops[int(torch.randint(len(ops), (1,), generator=gen))]
    return op, _u(gen, {"color": 3, "crop": 2, "cutout": 2, "flip": 1, "scale": 2, "rotate": 1}[op])


def apply(op: str, u: list[float], *xs: torch.Tensor) -> list[torch.Tensor]:
    """Transform each image batch of ``xs`` (N, C, H, W) by ``op`` with draws ``u`` (from :func:`draw`)."""
    if op == "scale":
        sx, sy = (v * (SCALE - 1.0 / SCALE) + 1.0 / SCALE for v in u)
        return _affine(xs, torch.tensor([[[sx, 0.0, 0.0], [0.0, sy, 0.0]]]))
    if op == "rotate":
        a = (u[0] - 0.5) * 2 * ROTATE / 180 * math.pi
        return _affine(xs, torch.tensor([[[math.cos(a), math.sin(a), 0.0], [-math.sin(a), math.cos(a), 0.0]]]))
    if op == "flip":
        return [x.flip(3) if u[0] < 0.5 else x for x in xs]
    if op == "color":
        out = []
        for x in xs:
            x = x + (u[0] - 0.5) * BRIGHTNESS
            m = x.mean(dim=1, keepdim=True)
            x = (x - m) * (u[1] * SATURATION) + m
            m = x.mean(dim=(1, 2, 3), keepdim=True)
            out.append((x - m) * (u[2] + CONTRAST) + m)
        return out
    if op == "crop":
        out = []
        for x in xs:
            h, w = x.shape[2:]
            dy, dx = (_shift(v, int(CROP * s + 0.5)) for v, s in zip(u, (h, w)))
            p = F.pad(x, (abs(dx), abs(dx), abs(dy), abs(dy)))
            out.append(p[:, :, abs(dy) - dy: abs(dy) - dy + h, abs(dx) - dx: abs(dx) - dx + w])
        return out
    if op == "cutout":
        out = []
        for x in xs:
            h, w = x.shape[2:]
            ch, cw = int(h * CUTOUT + 0.5), int(w * CUTOUT + 0.5)
            cy, cx = int(u[0] * (h + 1 - ch % 2)), int(u[1] * (w + 1 - cw % 2))
            ys = torch.arange(h, device=x.device).view(h, 1)
            xs_ = torch.arange(w, device=x.device).view(1, w)
            y0, x0 = cy - ch // 2, cx - cw // 2  # the square's first row and column (may lie outside)
            keep = ~((ys >= y0) & (ys < y0 + ch) & (xs_ >= x0) & (xs_ < x0 + cw))
            out.append(x * keep.to(x.dtype))
        return out
    raise ValueError(f"unknown DSA op {op!r}; allowed: {', '.join(DSA_OPS)}")


def dsa(ops: tuple[str, ...], gen: torch.Generator, *xs: torch.Tensor) -> list[torch.Tensor]:
    """One random DSA transform drawn from ``gen``, applied alike to every batch in ``xs``."""
    op, u = draw(ops, gen)
    return apply(op, u, *xs)
