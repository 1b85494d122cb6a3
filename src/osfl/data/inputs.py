"""Input preparation: how a paper's reference code turns a dataset's images into a model's input.

Two steps, each a named choice of the params' ``inputs`` block (default: neither, pixels in [0, 1] at the dataset's
size, as DENSE's and FedMHO's code feed them):

* ``size``: the images are resized to ``size`` x ``size`` when a stage loads them (bilinear, on the uint8 arrays,
  as torchvision's ``Resize`` on a PIL image does), so the clients, the test set, the generators (which draw at the
  data's shape) and the distilled images all live at that size. Co-Boosting's code resizes MNIST-like images to 32.
* ``mean`` / ``std``: every classifier normalises its input, ``(x - mean) / std`` per channel, as the first step of
  its forward (:func:`osfl.models.normalise.normalise_inputs`). Everything outside the models (data, generators'
  sigmoid images, distilled sets, pools) stays in pixels in [0, 1]: that is how Co-Boosting's code maps its
  generator's output through its ``Normalizer`` before the teachers, and how FedD3 normalises its datasets.

Each key takes one value for every dataset or a mapping ``dataset -> value``; ``mean``/``std`` a number (every
channel) or one number per channel. The preparation is written into every upload's and global model's manifest
(``inputs``), so a server rebuilds the clients as they were trained.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import ConfigError

KEYS = ("size", "mean", "std")


@dataclass(frozen=True)
class InputPrep:
    size: int | None = None  # resize to size x size; None = the dataset's own size
    mean: tuple[float, ...] | None = None  # per channel; None = no normalisation
    std: tuple[float, ...] | None = None

    @property
    def normalises(self) -> bool:
        return self.mean is not None

    @classmethod
    def from_params(cls, value: Any, dataset: str, channels: int, key: str = "inputs") -> "InputPrep":
        if value in (None, {}):
            return cls()
        if not isinstance(value, dict):
            raise ConfigError(key, f"must be a mapping of {', '.join(KEYS)}, got {value!r}")
        for k in value:
            if k not in KEYS:
                raise ConfigError(f"{key}.{k}", f"unknown key; allowed: {', '.join(KEYS)}")

        def pick(k: str):
            v = value.get(k)
            if isinstance(v, dict):
                if dataset not in v:
                    raise ConfigError(f"{key}.{k}", f"has no entry for dataset {dataset!r} (it has {', '.join(v)})")
                v = v[dataset]
            return v

        size = pick("size")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 8):
            raise ConfigError(f"{key}.size", f"must be an image side of at least 8 pixels or null, got {size!r}")

        def channel_values(k: str, positive: bool):
            v = pick(k)
            if v is None:
                return None
            vals = [v] * channels if isinstance(v, (int, float)) and not isinstance(v, bool) else v
            if (not isinstance(vals, list) or len(vals) != channels
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals)):
                raise ConfigError(f"{key}.{k}", f"must be a number or {channels} numbers (one per channel), got {v!r}")
            if positive and min(vals) <= 0:
                raise ConfigError(f"{key}.{k}", f"must be positive, got {v!r}")
            return tuple(float(x) for x in vals)

        mean, std = channel_values("mean", False), channel_values("std", True)
        if (mean is None) != (std is None):
            raise ConfigError(f"{key}.{'std' if std is None else 'mean'}", "mean and std are given together or not at all")
        return cls(size=size, mean=mean, std=std)

    def shape(self, shape: tuple[int, int, int]) -> tuple[int, int, int]:
        """The models' input shape for a dataset of ``shape`` (C, H, W)."""
        return shape if self.size is None else (shape[0], self.size, self.size)

    def spec(self, spec):
        """A dataset spec whose shape is the models' input shape."""
        return spec if self.size is None else replace(spec, shape=self.shape(spec.shape))

    def resize(self, data):
        """``data`` (:class:`osfl.data.ArrayData`) with both splits' images resized to ``size`` (uint8 kept)."""
        if self.size is None or data.shape[1:] == (self.size, self.size):
            return data
        return replace(data, x_train=resize_uint8(data.x_train, self.size), x_test=resize_uint8(data.x_test, self.size))

    def record(self) -> dict:
        """What a run records: the size and the normalisation (None where the step is off)."""
        return {"size": self.size, "mean": None if self.mean is None else list(self.mean),
                "std": None if self.std is None else list(self.std)}

    def entry(self) -> dict:
        """``{"inputs": record}`` for a run's record, ``{}`` when nothing is prepared (pixels as the dataset has them)."""
        return {} if self == InputPrep() else {"inputs": self.record()}

    def norm(self) -> dict | None:
        """``{"mean": [...], "std": [...]}`` for :func:`osfl.models.build_model`, None without normalisation."""
        return None if self.mean is None else {"mean": list(self.mean), "std": list(self.std)}

    def pixel_std(self, channel: int = 0) -> float:
        """One normalised unit in pixels (1 without normalisation): converts a σ stated in normalised units."""
        return 1.0 if self.std is None else self.std[channel]


def resize_uint8(x: np.ndarray, size: int, chunk: int = 10000) -> np.ndarray:
    """(N, C, H, W) uint8 -> (N, C, size, size) uint8: bilinear with antialiasing, rounded (torchvision's resize of a
    uint8 tensor, which follows PIL's)."""
    import torch
    from torchvision.transforms.v2 import functional as TF

    out = np.empty((len(x), x.shape[1], size, size), dtype=np.uint8)
    for i in range(0, len(x), chunk):
        t = torch.from_numpy(np.ascontiguousarray(x[i:i + chunk]))
        out[i:i + chunk] = TF.resize(t, [size, size], interpolation=TF.InterpolationMode.BILINEAR, antialias=True).numpy()
    return out


def describe(value: Any) -> str:
    """One clause for captions: the params' ``inputs`` block as a reader needs it."""
    if not value:
        return "inputs: pixels in [0, 1] at the dataset's size, not normalised"

    def show(v):
        if isinstance(v, dict):
            return ", ".join(f"{k}: {show(x)}" for k, x in v.items())
        return "/".join(f"{x:g}" for x in v) if isinstance(v, list) else f"{v:g}" if isinstance(v, float) else str(v)

    parts = []
    if value.get("size") is not None:
        parts.append(f"resized to {show(value['size'])} pixels a side")
    if value.get("mean") is not None:
        parts.append(f"normalised inside every classifier with mean ({show(value['mean'])}) and std "
                     f"({show(value['std'])}); generated and distilled images stay pixels in [0, 1]")
    return "inputs: " + "; ".join(parts or ["pixels in [0, 1] at the dataset's size, not normalised"])
