"""``digits``: the embedded default dataset; needs no network and no mirror.

Source: scikit-learn's bundled ``sklearn.datasets.load_digits()``, a copy of the test set of the UCI
"Optical Recognition of Handwritten Digits" data (E. Alpaydin, C. Kaynak, 1998;
https://archive.ics.uci.edu/dataset/80): 1,797 grey 8x8 images with values 0..16, classes 0..9.

Conversion, fixed so the prepared bytes never change:

* values are scaled to 0..255 (``v * 255 / 16``) in float64;
* each image is upsampled to 28x28 with ``torch.nn.functional.interpolate(mode="bilinear",
  align_corners=False)`` in float64 (so the 28x28 models of MNIST apply unchanged);
* the result is rounded to the nearest integer, clipped to 0..255 and stored as ``uint8`` ``(N, 1, 28, 28)``;
* split: ``sklearn.model_selection.train_test_split(test_size=0.2, stratify=y, random_state=0)`` on the
  sample indices, giving 1,437 train / 360 test images (every class present in both).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import DATASETS, ArrayData, DatasetSpec

SIZE = 28


def upsample(images: np.ndarray, size: int = SIZE) -> np.ndarray:
    """``(N, h, w)`` values in 0..16 -> ``uint8`` ``(N, 1, size, size)`` in 0..255 (bilinear, see module doc)."""
    import torch
    import torch.nn.functional as F

    x = torch.from_numpy(np.asarray(images, dtype=np.float64) * (255.0 / 16.0)).unsqueeze(1)
    y = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    return np.clip(np.rint(y.numpy()), 0, 255).astype(np.uint8)


def load_digits_arrays(mirror: Path | None, download_root: Path) -> ArrayData:
    """The ``digits`` loader; ``mirror`` and ``download_root`` are unused (the data ships with scikit-learn)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    bunch = load_digits()
    x = upsample(bunch.images)
    y = np.asarray(bunch.target, dtype=np.int64)
    train_idx, test_idx = train_test_split(np.arange(len(y)), test_size=0.2, stratify=y, random_state=0)
    return ArrayData(
        x_train=x[train_idx],
        y_train=y[train_idx],
        x_test=x[test_idx],
        y_test=y[test_idx],
        classes=[str(c) for c in range(10)],
        source="sklearn.datasets.load_digits (bundled with scikit-learn)",
    )


DATASETS.register(
    "digits",
    DatasetSpec(
        name="digits",
        shape=(1, SIZE, SIZE),
        num_classes=10,
        n_train=1437,
        n_test=360,
        description="UCI optical handwritten digits (Alpaydin & Kaynak 1998) via sklearn load_digits, "
        "8x8 upsampled bilinearly to 1x28x28, stratified 80/20 split (random_state=0)",
        loader=load_digits_arrays,
    ),
)
