"""``cifar10``, ``cifar100``: 32x32 colour images, through torchvision's ``CIFAR10``/``CIFAR100`` classes.

Source: CIFAR-10 and CIFAR-100 (A. Krizhevsky, "Learning Multiple Layers of Features from Tiny Images",
2009; https://www.cs.toronto.edu/~kriz/cifar.html), the "python version" archives that torchvision downloads
(``CIFAR10.url``/``filename``/``tgz_md5``). CIFAR-100 uses the 100 fine labels.

A mirror may hold either

* the extracted folder as torchvision keeps it, ``<mirror>/cifar-10-batches-py/`` (or
  ``cifar-100-python/``): each batch and the meta file is checked against torchvision's ``train_list``,
  ``test_list`` and ``meta`` MD5s and torchvision reads the mirror directly (``download=False``); or
* the archive ``<mirror>/cifar-10-python.tar.gz`` (or ``cifar-100-python.tar.gz``): checked against
  ``tgz_md5`` and extracted into ``download_root``, which torchvision then reads.

Without a mirror torchvision downloads and extracts into ``download_root``. Images come from the dataset's
``.data`` (``N, 32, 32, 3``) and are transposed to ``uint8`` ``(N, 3, 32, 32)``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import DATASETS, ArrayData, DatasetSpec
from .mirror import RawFile, describe_source, resolve, search_dirs, torchvision_download


def _to_arrays(dataset: Any) -> tuple[np.ndarray, np.ndarray]:
    x = np.ascontiguousarray(np.asarray(dataset.data, dtype=np.uint8).transpose(0, 3, 1, 2))
    return x, np.asarray(dataset.targets, dtype=np.int64)


def _extracted_files(cls: Any) -> list[RawFile]:
    """The files of torchvision's extracted folder with their MD5s (batches, then the meta file)."""
    listed = [*cls.train_list, *cls.test_list, (cls.meta["filename"], cls.meta["md5"])]
    return [RawFile(file, md5, url=cls.url) for file, md5 in listed]


def _cifar_loader(name: str, class_name: str) -> Callable[[Path | None, Path], ArrayData]:
    """Loader for torchvision's ``CIFAR10`` or ``CIFAR100`` (see the module docstring for the mirror rules)."""

    def load(mirror: Path | None, download_root: Path) -> ArrayData:
        import torchvision.datasets as tvd
        from torchvision.datasets.utils import extract_archive

        cls = getattr(tvd, class_name)
        archive = RawFile(cls.filename, cls.tgz_md5, url=cls.url)
        extracted = _extracted_files(cls)
        dirs = search_dirs(mirror)
        root: Path | None = None
        for d in dirs:  # an extracted folder is read in place
            found = resolve(extracted, [d / cls.base_folder])
            if len(found) == len(extracted):
                root, source = d, describe_source(found)
                break
        if root is None:
            found = resolve([archive], dirs)
            if found:
                extract_archive(str(found[archive.name]), str(download_root))
                root, source = download_root, describe_source(found)
        if root is None:
            train = torchvision_download(
                name, lambda: cls(str(download_root), train=True, download=True), archive, mirror
            )
            root, source = download_root, f"torchvision {class_name} download into {download_root}"
        else:
            train = cls(str(root), train=True, download=False)
        test = cls(str(root), train=False, download=False)
        x_train, y_train = _to_arrays(train)
        x_test, y_test = _to_arrays(test)
        return ArrayData(x_train, y_train, x_test, y_test, classes=list(train.classes), source=source)

    return load


DATASETS.register(
    "cifar10",
    DatasetSpec(
        name="cifar10",
        shape=(3, 32, 32),
        num_classes=10,
        n_train=50000,
        n_test=10000,
        description="CIFAR-10 (Krizhevsky 2009) via torchvision.datasets.CIFAR10",
        loader=_cifar_loader("cifar10", "CIFAR10"),
    ),
)

DATASETS.register(
    "cifar100",
    DatasetSpec(
        name="cifar100",
        shape=(3, 32, 32),
        num_classes=100,
        n_train=50000,
        n_test=10000,
        description="CIFAR-100 fine labels (Krizhevsky 2009) via torchvision.datasets.CIFAR100",
        loader=_cifar_loader("cifar100", "CIFAR100"),
    ),
)
