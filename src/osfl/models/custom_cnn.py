"""FedHydra's two "customized CNN models", heterogeneous clients M3 and M4 (SPEC §3.4, AMBIG-15).

App. G describes them only generically ("two to three convolutional layers with ReLU activation, followed by max
pooling layers and fully connected layers… often starting with 32 filters… A slightly deeper variant might
incorporate more layers, batch normalization, or larger filter counts"). SPEC §3.4 proposes (all convs 3×3, pad 1):

* ``cnn_m3``: Conv(C→32)-ReLU-MaxPool2 → Conv(32→64)-ReLU-MaxPool2 → FC(64·H/4·W/4→128)-ReLU → FC(128→K).
  545,098 parameters on 3×32×32, 10 classes.
* ``cnn_m4``: Conv(C→32)-BN-ReLU → Conv(32→64)-BN-ReLU-MaxPool2 → Conv(64→128)-BN-ReLU-MaxPool2
  → FC(128·H/4·W/4→256)-ReLU → FC(256→K). 2,193,674 parameters on 3×32×32, 10 classes.

The FC input size follows the input size (two 2×2 max-pools), so 1×28×28 works as well.
"""
from __future__ import annotations

import torch.nn as nn

from . import MODELS, ModelSpec


class CNNM3(nn.Module):
    def __init__(self, in_channels: int = 3, num_classes: int = 10, height: int = 32, width: int = 32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(64 * (height // 4) * (width // 4), 128), nn.ReLU(),
            nn.Linear(128, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class CNNM4(nn.Module):
    def __init__(self, in_channels: int = 3, num_classes: int = 10, height: int = 32, width: int = 32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(128 * (height // 4) * (width // 4), 256), nn.ReLU(),
            nn.Linear(256, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


MODELS.register("cnn_m3", ModelSpec(
    "cnn_m3", lambda s, k: CNNM3(s[0], k, s[1], s[2]),
    "FedHydra heterogeneous client M3: 2-conv basic CNN (SPEC §3.4 proposal; 545,098 params on 3x32x32)"))
MODELS.register("cnn_m4", ModelSpec(
    "cnn_m4", lambda s, k: CNNM4(s[0], k, s[1], s[2]),
    "FedHydra heterogeneous client M4: 3-conv BN CNN (SPEC §3.4 proposal; 2,193,674 params on 3x32x32)"))
