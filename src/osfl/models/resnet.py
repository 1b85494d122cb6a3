"""CIFAR-style ResNet-18 (He et al., 2016): 3×3 stem without max-pool, BasicBlocks [2,2,2,2], 64–512 channels.

This is the form used by DENSE (``resnet18``), Co-Boosting and OFedED's Table 2, and FedHydra's heterogeneous
client M2 and server (SPEC §3.4). 11,173,962 parameters for 3×32×32 inputs and 10 classes.
"""
from __future__ import annotations

import torch.nn as nn
import torch.nn.functional as F

from . import MODELS, ModelSpec


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, blocks=(2, 2, 2, 2), in_channels: int = 3, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for i, (n, cout) in enumerate(zip(blocks, (64, 128, 256, 512))):
            stride = 1 if i == 0 else 2
            stage = []
            for j in range(n):
                stage.append(BasicBlock(cin, cout, stride if j == 0 else 1))
                cin = cout
            layers.append(nn.Sequential(*stage))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.pool = nn.AdaptiveAvgPool2d(1)  # a module, so that hooks can read the pooled features (OFedED's v_4)
        self.linear = nn.Linear(512, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer4(self.layer3(self.layer2(self.layer1(out))))
        return self.linear(self.pool(out).flatten(1))


MODELS.register("resnet18", ModelSpec(
    "resnet18", lambda s, k: ResNet((2, 2, 2, 2), s[0], k),
    "CIFAR-style ResNet-18 (DENSE/Co-Boosting/FedHydra server; 11,173,962 params on 3x32x32)"))
