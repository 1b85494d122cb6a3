"""FedMHO's small classifiers for the baselines' resource-constrained clients (official ``pcode/models/cnn.py``;
SPEC §1.9, Table I "Small" for FedAvg, FedDF, DENSE and Co-Boosting).

* ``cnn_mnist`` (``CNN_MNIST``, MNIST and Fashion-MNIST): Conv5x5(C→10)-MaxPool-ReLU → Conv5x5(10→20)-MaxPool-ReLU
  → FC(320→K). The official model ends in a Softmax, so it outputs probabilities and its clients' cross-entropy is
  taken on them; ``softmax_output`` keeps that (the default, as the code runs). 467.23K MACs (Table II).
* ``cnn_svhn`` (``CNN_CIFAR``, SVHN): [Conv3x3 p1-ReLU-MaxPool] × 3 (C→16→32→64) → Conv3x3 p1 (64→128)-ReLU →
  FC(2048→K). 4.00M MACs.
* ``cnn_emnist`` (``CNN_EMNIST``, EMNIST): [Conv3x3 p1-ReLU-MaxPool] × 3 (C→16→32→64) → Conv3x3 p1 (64→128)-ReLU →
  Conv3x3 p1 (128→128)-ReLU → FC(1152→K). 3.96M MACs.
"""
from __future__ import annotations

import torch.nn as nn

from . import MODELS, ModelSpec


class CNNMnist(nn.Module):
    def __init__(self, in_channels: int = 1, num_classes: int = 10, softmax_output: bool = True):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 10, 5), nn.MaxPool2d(2), nn.ReLU(),
            nn.Conv2d(10, 20, 5), nn.MaxPool2d(2), nn.ReLU(),
        )
        self.fc = nn.Linear(320, num_classes)
        self.out = nn.Softmax(dim=1) if softmax_output else nn.Identity()

    def forward(self, x):
        return self.out(self.fc(self.features(x).flatten(1)))


class CNNPool3(nn.Module):
    """Three conv-ReLU-pool blocks, then ``extra`` 3×3 conv-ReLU layers at 128 channels, then one FC layer."""

    def __init__(self, in_channels: int, num_classes: int, image_size: int, extra: int):
        super().__init__()
        layers, cin = [], in_channels
        for cout in (16, 32, 64):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
            cin = cout
        for _ in range(extra):
            layers += [nn.Conv2d(cin, 128, 3, padding=1), nn.ReLU()]
            cin = 128
        self.features = nn.Sequential(*layers)
        side = image_size // 8
        self.fc = nn.Linear(128 * side * side, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


MODELS.register("cnn_mnist", ModelSpec(
    "cnn_mnist", lambda s, k: CNNMnist(s[0], k),
    "FedMHO small CNN for MNIST/Fashion (CNN_MNIST; softmax output, as the official code)",
    shapes=((1, 28, 28),)))
MODELS.register("cnn_svhn", ModelSpec(
    "cnn_svhn", lambda s, k: CNNPool3(s[0], k, s[1], extra=1),
    "FedMHO small CNN for SVHN (CNN_CIFAR)", shapes=((3, 32, 32),)))
MODELS.register("cnn_emnist", ModelSpec(
    "cnn_emnist", lambda s, k: CNNPool3(s[0], k, s[1], extra=2),
    "FedMHO small CNN for EMNIST (CNN_EMNIST)", shapes=((1, 28, 28),)))
