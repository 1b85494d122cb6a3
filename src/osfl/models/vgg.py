"""FedMHO's "VGG-9" (official code ``pcode/models/vgg.py::VGG9``; SPEC §1.9): the resource-sufficient clients'
classifier and the global model of FedMHO, FedCVAE, DENSE and Co-Boosting in the FedMHO paper.

Conv3x3(C→64)-ReLU-MaxPool → Conv3x3(64→128)-ReLU-MaxPool → Conv3x3(128→256)-ReLU → Conv3x3(256→256)-ReLU-MaxPool
→ AdaptiveAvgPool(7×7) → FC(12544→4096)-ReLU-Dropout(0.5) → FC(4096→4096)-ReLU-Dropout(0.5) → FC(4096→K).
No BatchNorm; 4 conv + 3 FC weight layers (the paper's name counts differently). On 1×28×28 the last pool leaves
3×3, which the adaptive pool spreads to 7×7, as the official code does. 126.47M multiply-accumulates on 1×28×28
(FedMHO Table II).

``vgg9_cpu`` is the same network with the convolutions' widths halved and a 512-wide head (3.7 M parameters instead
of 69 M): the FedMHO ``cpu`` profile's reduction, 6.8 s per 6,000-sample local epoch on one thread of a 2-core
Xeon instead of 50 s.
"""
from __future__ import annotations

import torch.nn as nn

from . import MODELS, ModelSpec


class VGG9(nn.Module):
    def __init__(self, in_channels: int = 1, num_classes: int = 10, widths=(64, 128, 256, 256), head: int = 4096):
        super().__init__()
        conv = lambda cin, cout: [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU()]
        w1, w2, w3, w4 = widths
        self.features = nn.Sequential(
            *conv(in_channels, w1), nn.MaxPool2d(2),
            *conv(w1, w2), nn.MaxPool2d(2),
            *conv(w2, w3), *conv(w3, w4), nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d((7, 7)),
        )
        self.classifier = nn.Sequential(
            nn.Linear(w4 * 7 * 7, head), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(head, head), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(head, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


MODELS.register("vgg9", ModelSpec(
    "vgg9", lambda s, k: VGG9(s[0], k),
    "FedMHO VGG-9 (4 conv + 3 FC, no BN; official pcode/models/vgg.py)",
    shapes=((1, 28, 28), (3, 32, 32), (1, 32, 32))))
MODELS.register("vgg9_cpu", ModelSpec(
    "vgg9_cpu", lambda s, k: VGG9(s[0], k, widths=(32, 64, 128, 128), head=512),
    "VGG-9 at half the convolution widths with a 512-wide head (3.7 M parameters): FedMHO's cpu-profile reduction",
    shapes=((1, 28, 28), (3, 32, 32), (1, 32, 32))))
