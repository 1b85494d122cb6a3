"""The small CNNs of DENSE (Zhang et al., NeurIPS 2022) that FedHydra uses as its homogeneous client models.

FedHydra §4.1.3: "a two-layer CNN for MNIST and FashionMNIST, and a three-layer CNN for SVHN and CIFAR-10".
The exact layers follow DENSE's ``models/nets.py`` (ANCHORS.md §1): ``CNNMnist`` (29,034 parameters) and
``CNNCifar`` (319,242 parameters, no BatchNorm). FedHydra's SPEC §3.4 proposes a BatchNorm variant of the
3-layer CNN (AMBIG-14: the λ1 ablation implies BN layers), registered as ``cnn3_bn``.
"""
from __future__ import annotations

import torch.nn as nn

from . import MODELS, ModelSpec


class CNN2(nn.Module):
    """Conv(C,16,5,p2)-BN-ReLU-MaxPool → Conv(16,32,5,p2)-BN-ReLU-MaxPool → Linear(32·(H/4)·(W/4), K)."""

    def __init__(self, in_channels: int = 1, num_classes: int = 10, image_size: int = 28):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 16, 5, padding=2), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 5, padding=2), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(32 * (image_size // 4) ** 2, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class CNN3(nn.Module):
    """3×[Conv(·,width,3)] with ReLU and MaxPool after the first two → Linear(width·4·4, K) for 32×32 input
    (width 128: DENSE's and Co-Boosting's CNNCifar)."""

    def __init__(self, in_channels: int = 3, num_classes: int = 10, image_size: int = 32, batchnorm: bool = False,
                 width: int = 128):
        super().__init__()

        def block(cin, pool):
            layers = [nn.Conv2d(cin, width, 3)]
            if batchnorm:
                layers.append(nn.BatchNorm2d(width))
            layers.append(nn.ReLU())
            if pool:
                layers.append(nn.MaxPool2d(2))
            return layers

        self.features = nn.Sequential(*block(in_channels, True), *block(width, True), *block(width, False))
        side = ((image_size - 2) // 2 - 2) // 2 - 2
        self.classifier = nn.Linear(width * side * side, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


MODELS.register("cnn2", ModelSpec(
    "cnn2", lambda s, k: CNN2(s[0], k, s[1]),
    "FedHydra/DENSE 2-layer CNN (DENSE CNNMnist, 29,034 params on 1x28x28)",
    shapes=((1, 28, 28), (3, 32, 32), (1, 32, 32)), default_for=((1, 28, 28),)))
MODELS.register("cnn3", ModelSpec(
    "cnn3", lambda s, k: CNN3(s[0], k, s[1]),
    "FedHydra/DENSE 3-layer CNN (DENSE CNNCifar, no BN, 319,242 params on 3x32x32; 1x28x28: 128·3·3 features)",
    shapes=((3, 32, 32), (1, 32, 32), (1, 28, 28)), default_for=((3, 32, 32),)))
MODELS.register("cnn3_cpu", ModelSpec(
    "cnn3_cpu", lambda s, k: CNN3(s[0], k, s[1], width=32),
    "the 3-layer CNN at a quarter of the width (32 channels; 23,946 params on 1x32x32): OFedED's cpu-profile reduction",
    shapes=((3, 32, 32), (1, 32, 32), (1, 28, 28))))
MODELS.register("cnn3_bn", ModelSpec(
    "cnn3_bn", lambda s, k: CNN3(s[0], k, s[1], batchnorm=True),
    "3-layer CNN with BatchNorm after each conv (FedHydra SPEC §3.4 proposal, AMBIG-14)",
    shapes=((3, 32, 32), (1, 32, 32))))
