"""``svhn``: Street View House Numbers, cropped 32x32 digits, through ``torchvision.datasets.SVHN``.

Source: SVHN format 2 (Netzer, Wang, Coates, Bissacco, Wu, Ng, "Reading Digits in Natural Images with
Unsupervised Feature Learning", NIPS workshop 2011; http://ufldl.stanford.edu/housenumbers/), the files
``train_32x32.mat`` (73,257 images) and ``test_32x32.mat`` (26,032) of ``SVHN.split_list``; the ``extra``
split is not used. torchvision already maps the label 10 of digit 0 to 0 and lays ``.data`` out as
``(N, 3, 32, 32)``; reading the ``.mat`` files needs scipy.

A mirror holds the files as torchvision keeps them, ``<mirror>/train_32x32.mat`` and
``<mirror>/test_32x32.mat`` (``<mirror>/svhn/`` is searched too); each is checked against torchvision's MD5
and read in place (``download=False``). Without a mirror torchvision downloads into ``download_root``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from . import DATASETS, ArrayData, DatasetSpec
from .mirror import RawFile, describe_source, resolve, search_dirs, torchvision_download

SPLITS = ("train", "test")


def _to_arrays(dataset: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.ascontiguousarray(dataset.data, dtype=np.uint8), np.asarray(dataset.labels, dtype=np.int64)


def load_svhn(mirror: Path | None, download_root: Path) -> ArrayData:
    """The ``svhn`` loader; each split comes from the mirror when its file is there, else from a download."""
    import torchvision.datasets as tvd

    cls = tvd.SVHN
    raws = {split: RawFile(cls.split_list[split][1], cls.split_list[split][2], url=cls.split_list[split][0])
            for split in SPLITS}
    found = resolve(list(raws.values()), search_dirs(mirror), subdirs=("svhn",))
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    sources: list[str] = []
    for split, raw in raws.items():
        if raw.name in found:
            dataset = cls(str(found[raw.name].parent), split=split, download=False)
            sources.append(describe_source([found[raw.name]]))
        else:
            dataset = torchvision_download(
                "svhn", lambda: cls(str(download_root), split=split, download=True), raw, mirror
            )
            sources.append(f"torchvision SVHN download into {download_root}")
        arrays[split] = _to_arrays(dataset)
    (x_train, y_train), (x_test, y_test) = arrays["train"], arrays["test"]
    source = sources[0] if sources[0] == sources[1] else "; ".join(f"{s}: {src}" for s, src in zip(SPLITS, sources))
    return ArrayData(x_train, y_train, x_test, y_test, classes=[str(c) for c in range(10)], source=source)


DATASETS.register(
    "svhn",
    DatasetSpec(
        name="svhn",
        shape=(3, 32, 32),
        num_classes=10,
        n_train=73257,
        n_test=26032,
        description="SVHN cropped digits (Netzer et al. 2011) via torchvision.datasets.SVHN train/test, 0 labelled 0",
        loader=load_svhn,
    ),
)
