"""LeNet-5 (LeCun et al., 1998) in the form used by the papers.

* ``lenet5``: Conv(C,6,5)-ReLU-MaxPool → Conv(6,16,5)-ReLU-MaxPool → FC 120 → 84 → K, no padding. On 1×28×28
  this is HFLDD's MNIST model and NIID-Bench's ``SimpleCNNMNIST`` (44,426 params); on 3×32×32 it is
  NIID-Bench's ``SimpleCNN`` (62,006 params).
* ``lenet5_avg``: the same with average pooling, FedHydra's heterogeneous client M5 (App. G: "two convolutional
  layers paired with average pooling, followed by two fully connected layers"; SPEC §3.4).
"""
from __future__ import annotations

import torch.nn as nn

from . import MODELS, ModelSpec


class LeNet5(nn.Module):
    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 28, pool: str = "max"):
        super().__init__()
        Pool = nn.MaxPool2d if pool == "max" else nn.AvgPool2d
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5), nn.ReLU(), Pool(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), Pool(2),
        )
        side = ((image_size - 4) // 2 - 4) // 2
        self.classifier = nn.Sequential(
            nn.Linear(16 * side * side, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


MODELS.register("lenet5", ModelSpec(
    "lenet5", lambda s, k: LeNet5(s[0], k, s[1], "max"),
    "LeNet-5, max pooling (HFLDD MNIST model / NIID-Bench SimpleCNN*)"))
MODELS.register("lenet5_avg", ModelSpec(
    "lenet5_avg", lambda s, k: LeNet5(s[0], k, s[1], "avg"),
    "LeNet-5, average pooling (FedHydra heterogeneous client M5)"))
