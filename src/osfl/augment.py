"""Batched on-device augmentation of uint8 image batches (no per-sample PIL pipeline).

``crop_flip`` = RandomCrop(size, padding=4) + RandomHorizontalFlip, the CIFAR-10 training transform of DENSE
(ANCHORS.md §1); ``flip`` = horizontal flip only. Randomness comes from the ``torch.Generator`` passed in, so a
client's augmentation stream is seeded and independent of other clients.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

AUGMENTATIONS = ("none", "flip", "crop_flip")


def resolve_augment(name: str, shape: tuple[int, int, int]) -> str:
    """``auto`` = DENSE's choice: crop+flip for 3-channel 32×32 images, nothing for 1-channel digits/clothes."""
    if name == "auto":
        return "crop_flip" if shape[0] == 3 else "none"
    return name


def augment_batch(x: torch.Tensor, mode: str, gen: torch.Generator, padding: int = 4) -> torch.Tensor:
    """Augment a float batch (B, C, H, W); random numbers are drawn on the CPU generator ``gen``."""
    if mode == "none":
        return x
    b, _, h, w = x.shape
    if mode == "crop_flip":
        padded = F.pad(x, (padding,) * 4)
        dy = torch.randint(0, 2 * padding + 1, (b,), generator=gen).to(x.device)
        dx = torch.randint(0, 2 * padding + 1, (b,), generator=gen).to(x.device)
        rows = (dy[:, None] + torch.arange(h, device=x.device)[None, :])[:, None, :, None]
        cols = (dx[:, None] + torch.arange(w, device=x.device)[None, :])[:, None, None, :]
        bidx = torch.arange(b, device=x.device)[:, None, None, None]
        cidx = torch.arange(x.shape[1], device=x.device)[None, :, None, None]
        x = padded[bidx, cidx, rows, cols]
    flip = (torch.rand(b, generator=gen) < 0.5).to(x.device)
    return torch.where(flip[:, None, None, None], x.flip(3), x)
