"""CIFAR-style GoogLeNet (Szegedy et al., 2015): FedHydra's heterogeneous client M1 (SPEC §3.4, AMBIG-15).

FedHydra App. G only says "GoogleNet" (Inception modules with parallel 1×1, 3×3, 5×5 convolutions and max-pool,
1×1 reductions, auxiliary classifiers). SPEC §3.4 proposes the CIFAR-style variant modelled on the
kuangliu/pytorch-cifar GoogLeNet (cited by name only; this code is written from the description):

* stem: Conv(C→192, 3×3, pad 1)-BN-ReLU at full resolution (no 7×7 stride-2 stem, no early max-pools);
* Inception a3, b3 → MaxPool(3, s2, p1) → a4, b4, c4, d4, e4 → MaxPool(3, s2, p1) → a5, b5;
* global average pooling → Linear(1024→K); no auxiliary heads.

Each Inception module has four branches concatenated on channels: 1×1; 1×1 reduce → 3×3; 1×1 reduce → 3×3 → 3×3
(the 5×5 branch factorised as two 3×3 convs); MaxPool(3, s1, p1) → 1×1. Every conv keeps its bias and is
followed by BatchNorm and ReLU, as in the reference; that gives 6,166,250 parameters for 3×32×32 and 10 classes.
The pooling is adaptive, so any input size from 8×8 up works (e.g. 1×28×28).
"""
from __future__ import annotations

import torch
import torch.nn as nn

from . import MODELS, ModelSpec

# (n1x1, n3x3 reduce, n3x3, n5x5 reduce, n5x5, pool proj) per Inception module (GoogLeNet paper, Table 1)
INCEPTION_CONFIG = {
    "a3": (64, 96, 128, 16, 32, 32),
    "b3": (128, 128, 192, 32, 96, 64),
    "a4": (192, 96, 208, 16, 48, 64),
    "b4": (160, 112, 224, 24, 64, 64),
    "c4": (128, 128, 256, 24, 64, 64),
    "d4": (112, 144, 288, 32, 64, 64),
    "e4": (256, 160, 320, 32, 128, 128),
    "a5": (256, 160, 320, 32, 128, 128),
    "b5": (384, 192, 384, 48, 128, 128),
}


def conv_bn_relu(cin: int, cout: int, k: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, k, padding=k // 2), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]


class Inception(nn.Module):
    def __init__(self, cin: int, n1: int, r3: int, n3: int, r5: int, n5: int, npool: int):
        super().__init__()
        self.branch1 = nn.Sequential(*conv_bn_relu(cin, n1, 1))
        self.branch3 = nn.Sequential(*conv_bn_relu(cin, r3, 1), *conv_bn_relu(r3, n3, 3))
        self.branch5 = nn.Sequential(*conv_bn_relu(cin, r5, 1), *conv_bn_relu(r5, n5, 3), *conv_bn_relu(n5, n5, 3))
        self.branch_pool = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1), *conv_bn_relu(cin, npool, 1))
        self.out_channels = n1 + n3 + n5 + npool

    def forward(self, x):
        return torch.cat([self.branch1(x), self.branch3(x), self.branch5(x), self.branch_pool(x)], dim=1)


class GoogLeNet(nn.Module):
    def __init__(self, in_channels: int = 3, num_classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(*conv_bn_relu(in_channels, 192, 3))
        stages, cin = [], 192
        for names in (("a3", "b3"), ("a4", "b4", "c4", "d4", "e4"), ("a5", "b5")):
            modules = []
            for n in names:
                block = Inception(cin, *INCEPTION_CONFIG[n])
                cin = block.out_channels
                modules.append(block)
            stages.append(nn.Sequential(*modules))
        self.stage3, self.stage4, self.stage5 = stages
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.linear = nn.Linear(cin, num_classes)  # cin == 1024

    def forward(self, x):
        out = self.stage3(self.stem(x))
        out = self.stage4(self.pool(out))
        out = self.stage5(self.pool(out))
        return self.linear(torch.flatten(nn.functional.adaptive_avg_pool2d(out, 1), 1))


MODELS.register("googlenet", ModelSpec(
    "googlenet", lambda s, k: GoogLeNet(s[0], k),
    "CIFAR-style GoogLeNet (FedHydra heterogeneous client M1; 6,166,250 params on 3x32x32)"))
