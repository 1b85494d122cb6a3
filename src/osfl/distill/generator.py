"""DENSE's image generator (ANCHORS.md §1; FedHydra SPEC §1.3, "DENSE generator verbatim" alternative).

``Generator(nz, ngf, img_size, nc)`` maps a latent ``z`` of shape (B, nz) to images (B, nc, img_size, img_size)
in [0, 1]:

    Linear(nz, 2·ngf·(S/4)²) → reshape (2ngf, S/4, S/4) → BN
    → Upsample×2 → Conv3×3(2ngf→2ngf, no bias) → BN → LeakyReLU(0.2)
    → Upsample×2 → Conv3×3(2ngf→ngf, no bias)  → BN → LeakyReLU(0.2)
    → Conv3×3(ngf→nc) → Sigmoid

With nz=256, ngf=64 this has 2,328,899 parameters for 3×32×32 images and 1,834,305 for 1×28×28 images.
``reset_generator`` is DENSE's per-epoch re-initialisation (Conv/Linear weights ~ N(0, 0.02), biases 0, BN weight
~ N(1, 0.02), BN bias 0).
"""
from __future__ import annotations

import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, nz: int = 256, ngf: int = 64, img_size: int = 32, nc: int = 3):
        super().__init__()
        if img_size % 4:
            raise ValueError(f"img_size must be a multiple of 4, got {img_size}")
        self.nz, self.ngf, self.img_size, self.nc = nz, ngf, img_size, nc
        self.init_size = img_size // 4
        self.l1 = nn.Linear(nz, 2 * ngf * self.init_size ** 2)
        self.conv_blocks = nn.Sequential(
            nn.BatchNorm2d(2 * ngf),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(2 * ngf, 2 * ngf, 3, 1, 1, bias=False),
            nn.BatchNorm2d(2 * ngf),
            nn.LeakyReLU(0.2),
            nn.Upsample(scale_factor=2),
            nn.Conv2d(2 * ngf, ngf, 3, 1, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.LeakyReLU(0.2),
            nn.Conv2d(ngf, nc, 3, 1, 1),
            nn.Sigmoid(),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.l1(z).view(z.shape[0], 2 * self.ngf, self.init_size, self.init_size)
        return self.conv_blocks(h)


def _normal_(t: torch.Tensor, mean: float, std: float, gen: torch.Generator) -> None:
    """In-place normal fill that also works when ``gen`` lives on another device than ``t``."""
    if gen.device == t.device:
        t.normal_(mean, std, generator=gen)
    else:
        t.copy_(torch.randn(t.shape, generator=gen, device=gen.device, dtype=t.dtype).mul_(std).add_(mean))


@torch.no_grad()
def reset_generator(g: nn.Module, gen: torch.Generator) -> nn.Module:
    """DENSE's reset: Conv/Linear weight ~ N(0, 0.02), bias 0; BatchNorm weight ~ N(1, 0.02), bias 0.

    Modules are visited in ``g.modules()`` order, so the same ``gen`` state gives the same weights. Returns ``g``.
    BatchNorm running statistics are left as they are (DENSE does not touch them either).
    """
    for m in g.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.ConvTranspose2d, nn.Linear)):
            _normal_(m.weight, 0.0, 0.02, gen)
            if m.bias is not None:
                m.bias.zero_()
        elif isinstance(m, nn.modules.batchnorm._BatchNorm):
            if m.weight is not None:
                _normal_(m.weight, 1.0, 0.02, gen)
            if m.bias is not None:
                m.bias.zero_()
    return g
