"""In-memory pool of synthetic images (DENSE's ImagePool without the PNG files; ANCHORS.md §1, §3).

DENSE writes each epoch's best batch to disk as 8-bit PNGs and re-reads the whole history every KD epoch;
Co-Boosting keeps the history with the conditioning labels. ``SyntheticPool`` keeps the same information in
memory: images quantised to uint8 (x·255 rounded half up, clamped, as an 8-bit PNG would store them) and,
optionally, int64 labels. All history is kept unless ``max_items`` is set, in which case the oldest items are
dropped first. Storage stays on the device of the added tensors unless ``storage_device`` is given.
"""
from __future__ import annotations

from typing import Iterator

import torch


def quantize_u8(x: torch.Tensor) -> torch.Tensor:
    """float images in [0, 1] → uint8 (round half up, clamp), the 8-bit value a saved PNG holds."""
    return x.detach().mul(255.0).add_(0.5).clamp_(0.0, 255.0).to(torch.uint8)


class SyntheticPool:
    def __init__(self, max_items: int | None = None, storage_device: torch.device | str | None = None):
        if max_items is not None and max_items <= 0:
            raise ValueError("max_items must be positive or None")
        self.max_items = max_items
        self.storage_device = None if storage_device is None else torch.device(storage_device)
        self._x: torch.Tensor | None = None  # uint8 (N, C, H, W)
        self._y: torch.Tensor | None = None  # int64 (N,) or None
        self._labeled: bool | None = None

    def __len__(self) -> int:
        return 0 if self._x is None else self._x.shape[0]

    @property
    def labeled(self) -> bool:
        return bool(self._labeled)

    def add(self, x_float01: torch.Tensor, y: torch.Tensor | None = None) -> None:
        """Append a batch of images in [0, 1] (N, C, H, W), with labels (N,) or without."""
        labeled = y is not None
        if self._labeled is not None and labeled != self._labeled:
            raise ValueError("a pool holds either labeled or unlabeled images, not both")
        if labeled and y.shape[0] != x_float01.shape[0]:
            raise ValueError(f"{x_float01.shape[0]} images but {y.shape[0]} labels")
        dev = self.storage_device or x_float01.device
        xq = quantize_u8(x_float01).to(dev)
        yq = y.detach().to(device=dev, dtype=torch.long) if labeled else None
        if self._x is None:
            self._x, self._y, self._labeled = xq, yq, labeled
        else:
            if xq.shape[1:] != self._x.shape[1:]:
                raise ValueError(f"image shape {tuple(xq.shape[1:])} differs from the pool's {tuple(self._x.shape[1:])}")
            self._x = torch.cat([self._x, xq])
            if labeled:
                self._y = torch.cat([self._y, yq])
        if self.max_items is not None and len(self) > self.max_items:
            self._x = self._x[-self.max_items:]
            if labeled:
                self._y = self._y[-self.max_items:]

    def tensors(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The stored (uint8 images, labels or None)."""
        return self._x, self._y

    def batches(self, batch_size: int, gen: torch.Generator | None = None, shuffle: bool = True,
                device: torch.device | str | None = None, drop_last: bool = False
                ) -> Iterator[tuple[torch.Tensor, torch.Tensor | None]]:
        """One pass over the pool: yields (float images in [0, 1] on ``device``, labels or None).

        The order is a permutation drawn from ``gen`` (on ``gen``'s device) when ``shuffle``; ``device`` defaults
        to the storage device.
        """
        n = len(self)
        if n == 0:
            return
        dev = torch.device(device) if device is not None else self._x.device
        if shuffle:
            order = torch.randperm(n, generator=gen, device=gen.device if gen is not None else "cpu")
            order = order.to(self._x.device)
        else:
            order = torch.arange(n, device=self._x.device)
        stop = n - n % batch_size if drop_last else n
        for i in range(0, stop, batch_size):
            idx = order[i:i + batch_size]
            x = self._x[idx].to(dev).float().div_(255.0)
            y = self._y[idx].to(dev) if self._labeled else None
            yield x, y
