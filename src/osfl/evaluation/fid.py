"""Fréchet distance between two image sets (FedMHO Table XI), with torchmetrics' FID and an injectable extractor.

* ``inception``: torchmetrics' ``FrechetInceptionDistance(feature=2048)``, Inception-v3 pool3 features, grey
  images repeated to three channels (torchmetrics resizes to 299 × 299): the paper's metric. It needs the
  ``torch-fidelity`` package and downloads the Inception weights on first use, so it cannot run offline.
* ``random_conv``: a stand-in for machines without those weights. Three strided 3×3 convolutions with ReLU
  (C→32→64→128), global average pooling, 128 features; weights drawn once from a fixed seed, never trained. Its
  distances rank sets like a Fréchet distance does, but their scale is not Inception's: a table made with it says
  so in its caption and its numbers are not comparable with the paper's.

Images are float tensors in [0, 1], shape (N, C, H, W).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ..errors import ConfigError

EXTRACTORS = ("inception", "random_conv")
#: caption text per extractor: which features produced a table's FIDs
DESCRIPTIONS = {
    "inception": "Inception-v3 pool3 features (torchmetrics' FrechetInceptionDistance, the paper's metric)",
    "random_conv": "a stand-in extractor (three random, untrained 3×3 convolutions from a fixed seed, 128 "
                   "features; src/osfl/evaluation/fid.py): not comparable with the paper's Inception FIDs",
}


class RandomConvFeatures(nn.Module):
    """The ``random_conv`` stand-in: fixed random convolutions, global average pooling, ``num_features`` = 128."""

    num_features = 128

    def __init__(self, channels: int, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        layers, cin = [], channels
        for cout in (32, 64, self.num_features):
            conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1)
            with torch.no_grad():  # He-style scale, so activations keep their size through the ReLUs
                conv.weight.copy_(torch.randn(conv.weight.shape, generator=gen) * (2.0 / (cin * 9)) ** 0.5)
                conv.bias.zero_()
            layers += [conv, nn.ReLU()]
            cin = cout
        self.net = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.requires_grad_(False)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x.float())


def check_extractor(extractor) -> None:
    """``fid.extractor`` must name one of :data:`EXTRACTORS`."""
    if extractor not in EXTRACTORS:
        raise ConfigError("fid.extractor", f"unknown extractor {extractor!r}; allowed: {', '.join(EXTRACTORS)}")


def fid_metric(extractor: str, channels: int):
    """A torchmetrics ``FrechetInceptionDistance`` that keeps its real features across :meth:`reset` (one real
    set, several generated ones)."""
    from torchmetrics.image.fid import FrechetInceptionDistance

    check_extractor(extractor)
    if extractor == "random_conv":
        return FrechetInceptionDistance(feature=RandomConvFeatures(channels), reset_real_features=False,
                                        normalize=True)
    try:
        return FrechetInceptionDistance(feature=2048, reset_real_features=False, normalize=True)
    except (ModuleNotFoundError, RuntimeError, OSError) as e:
        raise ConfigError("fid.extractor", f"inception needs torch-fidelity and the Inception weights (downloaded "
                                           f"on first use): {e}; offline, use random_conv") from None


def _feed(metric, images: torch.Tensor, *, real: bool, extractor: str, batch_size: int) -> None:
    for i in range(0, len(images), batch_size):
        x = images[i : i + batch_size].float().clamp(0, 1)
        if extractor == "inception" and x.shape[1] == 1:
            x = x.repeat(1, 3, 1, 1)
        metric.update(x, real=real)


def frechet_distances(real: torch.Tensor, generated: dict[str, torch.Tensor], extractor: str, *,
                      batch_size: int = 500) -> dict[str, float]:
    """FID of each generated set against ``real`` (the real features are computed once)."""
    metric = fid_metric(extractor, real.shape[1])
    _feed(metric, real, real=True, extractor=extractor, batch_size=batch_size)
    out = {}
    for name, images in generated.items():
        metric.reset()
        _feed(metric, images, real=False, extractor=extractor, batch_size=batch_size)
        out[name] = float(metric.compute())
    return out
