"""The CIFAR-10 CNN of FedD3 (Song et al., KDD 2023; ``rruisong/FedD3``), HFLDD's CIFAR-10 model (SPEC §3.4).

Conv(3,32,3,p1)-ReLU → Conv(32,64,3,p1,no bias)-BN-ReLU-MaxPool → Conv(64,128)-BN-ReLU → Conv(128,256)-BN-ReLU-
MaxPool → Conv(256,256)-BN-ReLU-MaxPool → Linear(256·4·4, K, no bias): 1,020,160 parameters on 3×32×32, HFLDD's
printed count exactly. FedD3's source declares one more conv (128→128), but duplicate keys in its ``OrderedDict``
overwrite it, so the network it instantiates is this one (the declared one would have 1,167,872). FedD3 ends with
``log_softmax``; ours returns logits (cross-entropy on logits is the NLL of their log-softmax: the same training).
"""
from __future__ import annotations

import torch.nn as nn

from . import MODELS, ModelSpec


def _conv_bn(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU()]


class FedD3CNN(nn.Module):
    def __init__(self, in_channels: int = 3, num_classes: int = 10, image_size: int = 32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, padding=1), nn.ReLU(),
            *_conv_bn(32, 64), nn.MaxPool2d(2),
            *_conv_bn(64, 128),
            *_conv_bn(128, 256), nn.MaxPool2d(2),
            *_conv_bn(256, 256), nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(256 * (image_size // 8) ** 2, num_classes, bias=False)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


MODELS.register("fedd3_cnn", ModelSpec(
    "fedd3_cnn", lambda s, k: FedD3CNN(s[0], k, s[1]),
    "FedD3's CIFAR-10 CNN, HFLDD's CIFAR-10 model (1,020,160 params on 3x32x32)",
    shapes=((3, 32, 32), (1, 32, 32))))
