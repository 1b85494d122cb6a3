"""torchvision classifiers adapted to small inputs, for FedMHO's Table X (diverse classifier prototypes on
EMNIST; official ``DENSE-code/models``, SPEC §1.9/§3.3). torchvision builds the networks (random initialisation);
only the input stem and the head change:

* ``resnet50``: torchvision ResNet-50 with a C-channel 7×7 stem and FC(2048→K), as the official code.
* ``efficientnet_v2_s``: torchvision EfficientNet-V2-S with a C-channel first convolution and a K-class head
  (the official code uses another implementation of the same network, ``effnetv2_s``).
* ``mobilenet_v2``: torchvision MobileNet-V2 with a CIFAR-style stride-1 C-channel stem and a K-class head.
"""
from __future__ import annotations

import torch.nn as nn

from . import MODELS, ModelSpec


def _tvm():
    """torchvision's model zoo, imported when a network is built (at module level every stage would pay ~1 s)."""
    from torchvision import models

    return models


def _stem(conv: nn.Conv2d, in_channels: int, stride: int | None = None) -> nn.Conv2d:
    return nn.Conv2d(in_channels, conv.out_channels, conv.kernel_size, stride or conv.stride, conv.padding,
                     bias=conv.bias is not None)


def resnet50(shape, k):
    m = _tvm().resnet50(weights=None, num_classes=k)
    m.conv1 = _stem(m.conv1, shape[0])
    return m


def efficientnet_v2_s(shape, k):
    m = _tvm().efficientnet_v2_s(weights=None, num_classes=k)
    m.features[0][0] = _stem(m.features[0][0], shape[0])
    return m


def mobilenet_v2(shape, k):
    m = _tvm().mobilenet_v2(weights=None, num_classes=k)
    m.features[0][0] = _stem(m.features[0][0], shape[0], stride=1)
    return m


MODELS.register("resnet50", ModelSpec(
    "resnet50", resnet50, "torchvision ResNet-50 with a C-channel stem (FedMHO Table X)"))
MODELS.register("efficientnet_v2_s", ModelSpec(
    "efficientnet_v2_s", efficientnet_v2_s, "torchvision EfficientNet-V2-S with a C-channel stem (FedMHO Table X)"))
MODELS.register("mobilenet_v2", ModelSpec(
    "mobilenet_v2", mobilenet_v2, "torchvision MobileNet-V2 with a stride-1 C-channel stem (FedMHO Table X)"))
