"""Generated stand-in arrays for a dataset that cannot be obtained (smoke profile only).

Used only when the ``profile`` allows it (``smoke``), so that CI can run a paper's whole DAG offline. The arrays
have the dataset's image shape and class count but are NOT the dataset: each class is a fixed random prototype
image plus per-sample noise (learnable, so every stage has something to fit). The prepared folder's meta.json
says ``"stand_in": true`` and every report rendered from such data says so in its caption.
"""
from __future__ import annotations

import numpy as np

from . import ArrayData, DatasetSpec


def stand_in_arrays(spec: DatasetSpec, n_train: int, n_test: int, seed: int = 0) -> ArrayData:
    rng = np.random.default_rng(seed)
    protos = rng.uniform(40, 215, (spec.num_classes, *spec.shape))

    def split(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.arange(n, dtype=np.int64) % spec.num_classes
        rng.shuffle(y)
        x = protos[y] + rng.normal(0, 40, (n, *spec.shape))
        return np.clip(x, 0, 255).astype(np.uint8), y

    x_train, y_train = split(n_train)
    x_test, y_test = split(n_test)
    return ArrayData(x_train, y_train, x_test, y_test, [str(c) for c in range(spec.num_classes)],
                     source=f"stand-in (generated: {spec.name} shape, class prototypes + noise)")
