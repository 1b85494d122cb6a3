"""FedMHO's "VGG-9" (official code ``pcode/models/vgg.py::VGG9``; SPEC §1.9): the resource-sufficient clients'
classifier and the global model of FedMHO, FedCVAE, DENSE and Co-Boosting in the FedMHO paper.

Conv3x3(C→64)-ReLU-MaxPool → Conv3x3(64→128)-ReLU-MaxPool → Conv3x3(128→256)-ReLU → Conv3x3(256→256)-ReLU-MaxPool
→ AdaptiveAvgPool(7×7) → FC(12544→4096)-ReLU-Dropout(0.5) → FC(4096→4096)-ReLU-Dropout(0.5) → FC(4096→K).
No BatchNorm; 4 conv + 3 FC weight layers (the paper's name counts differently). On 1×28×28 the last pool leaves
3×3, which the adaptive pool spreads to 7×7, as the official code does. 126.47M multiply-accumulates on 1×28×28
(FedMHO Table II).
"""
from __future__ import annotations

import torch.nn as nn

from . import MODELS, ModelSpec


class VGG9(nn.Module):
    def __init__(self, in_channels: int = 1, num_classes: int = 10):
        super().__init__()
        conv = lambda cin, cout: [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU()]
        self.features = nn.Sequential(
            *conv(in_channels, 64), nn.MaxPool2d(2),
            *conv(64, 128), nn.MaxPool2d(2),
            *conv(128, 256), *conv(256, 256), nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d((7, 7)),
        )
        self.classifier = nn.Sequential(
            nn.Linear(256 * 7 * 7, 4096), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


MODELS.register("vgg9", ModelSpec(
    "vgg9", lambda s, k: VGG9(s[0], k),
    "FedMHO VGG-9 (4 conv + 3 FC, no BN; official pcode/models/vgg.py)",
    shapes=((1, 28, 28), (3, 32, 32), (1, 32, 32))))
