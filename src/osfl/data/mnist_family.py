"""``mnist``, ``fmnist``, ``emnist``: 28x28 grey idx-format datasets, through torchvision's classes.

Sources (downloaded by torchvision, or taken from a mirror and checked against torchvision's MD5s):

* ``mnist``: MNIST (LeCun, Bottou, Bengio, Haffner 1998), ``torchvision.datasets.MNIST``; the four
  ``*-idx?-ubyte.gz`` files of ``MNIST.resources``; mirror layout ``<mirror>/MNIST/raw/<file>.gz``. The project
  ships its own copy (:data:`SHIPPED_MNIST`, ``data/mnist/`` at the repository root, a DVC output of the root
  project kept in ``dvc-store/``: ``dvc pull data/mnist.dvc`` brings it), searched after the user's mirror. Its
  ``.gz`` files were re-compressed (``gzip -n -9``), so they are accepted by the MD5s of their decompressed payloads
  (:data:`MNIST_PAYLOAD_MD5`), as Debian's Fashion-MNIST is.
* ``fmnist``: Fashion-MNIST (Xiao, Rasul, Vollgraf 2017, arXiv:1708.07747),
  ``torchvision.datasets.FashionMNIST``; mirror layout ``<mirror>/FashionMNIST/raw/<file>.gz``. The Debian
  package ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist``, files flat in the folder) is
  used automatically when present. Debian re-compressed those ``.gz`` files (no stored file name, new time
  stamp), so their MD5s differ from torchvision's; they are accepted because their decompressed payloads
  match the MD5s of the original uncompressed idx files (:data:`FMNIST_PAYLOAD_MD5`).
* ``emnist``: EMNIST "balanced" split (Cohen, Afshar, Tapson, van Schaik 2017, arXiv:1702.05373),
  ``torchvision.datasets.EMNIST(split="balanced")``, 47 classes; the one archive ``gzip.zip`` (``EMNIST.url``,
  ``EMNIST.md5``); mirror layout ``<mirror>/EMNIST/raw/gzip.zip``. From a mirror only the four balanced
  members are extracted. The NIST idx files store each image transposed (column-major) relative to MNIST,
  and torchvision keeps that; the arrays here are transposed back (H <-> W) so characters stand upright in
  the same orientation as MNIST.

Every file may also sit directly in the mirror folder (flat). From a mirror the ``.gz`` payloads are
decompressed into ``<download_root>/<ClassName>/raw/`` (the folder torchvision reads) and torchvision is
then opened with ``download=False``. Without a mirror torchvision downloads into ``download_root``.
Images are read from the dataset's ``.data``/``.targets`` tensors (no per-sample PIL conversion).
"""
from __future__ import annotations

import gzip
import shutil
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import DATASETS, ArrayData, DatasetSpec
from .mirror import RawFile, describe_source, gunzip_to, resolve, search_dirs, torchvision_download, write_atomic

#: The Debian package ``dataset-fashion-mnist`` installs the four ``.gz`` files here (flat).
DEBIAN_FMNIST = Path("/usr/share/datasets/fashion-mnist")

#: MD5 of the decompressed idx files of the original Fashion-MNIST release (the payloads of torchvision's
#: ``FashionMNIST.resources``); lets re-compressed copies such as Debian's pass the checksum test.
FMNIST_PAYLOAD_MD5 = {
    "train-images-idx3-ubyte.gz": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
    "train-labels-idx1-ubyte.gz": "9018921c3c673c538a1fc5bad174d6f9",
    "t10k-images-idx3-ubyte.gz": "8181f5470baa50b63fa0f6fddb340f0a",
    "t10k-labels-idx1-ubyte.gz": "15d484375f8d13e6eb1aabb0c3f46965",
}

#: The project's own copy of MNIST's four ``.gz`` files: ``data/mnist/`` at the repository root (``data/mnist.dvc``).
SHIPPED_MNIST = Path(__file__).resolve().parents[3] / "data" / "mnist"

#: MD5 of the decompressed idx files of the original MNIST release (the payloads of torchvision's
#: ``MNIST.resources``; the same MD5s as in the README of the copy the project ships).
MNIST_PAYLOAD_MD5 = {
    "train-images-idx3-ubyte.gz": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte.gz": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte.gz": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte.gz": "27ae3e4e09519cfbb04c329615203637",
}

EMNIST_SPLIT = "balanced"


def _to_arrays(dataset: Any, transpose: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A torchvision MNIST-like dataset -> (uint8 ``(N, 1, 28, 28)``, int64 ``(N,)``)."""
    x = dataset.data.numpy()
    if transpose:
        x = x.transpose(0, 2, 1)
    return np.ascontiguousarray(x[:, None], dtype=np.uint8), dataset.targets.numpy().astype(np.int64)


def _idx_loader(
    name: str,
    class_name: str,
    classes: list[str] | None = None,
    system_dirs: tuple[Path, ...] = (),
    payload_md5: dict[str, str] | None = None,
) -> Callable[[Path | None, Path], ArrayData]:
    """Loader for a dataset whose torchvision class downloads the four MNIST-style ``.gz`` files.

    ``classes`` replaces torchvision's class names when given; ``system_dirs`` are searched after the user's
    mirror; ``payload_md5`` maps a ``.gz`` name to the MD5 of its decompressed payload (see :func:`.mirror.verify`).
    """

    def load(mirror: Path | None, download_root: Path) -> ArrayData:
        import torchvision.datasets as tvd

        cls = getattr(tvd, class_name)
        raws = [
            RawFile(file, md5, url=f"{cls.mirrors[0]}{file}", content_md5=(payload_md5 or {}).get(file))
            for file, md5 in cls.resources
        ]
        found = resolve(raws, search_dirs(mirror, system_dirs), subdirs=(f"{class_name}/raw", class_name))
        if len(found) == len(raws):
            raw_folder = download_root / class_name / "raw"
            for raw in raws:  # torchvision reads the decompressed files next to where it keeps the .gz
                gunzip_to(found[raw.name], raw_folder / raw.name[: -len(".gz")])
            train = cls(str(download_root), train=True, download=False)
            source = describe_source(found)
        else:
            missing = next(r for r in raws if r.name not in found)
            train = torchvision_download(
                name, lambda: cls(str(download_root), train=True, download=True), missing, mirror, system_dirs
            )
            source = f"torchvision {class_name} download into {download_root}"
        test = cls(str(download_root), train=False, download=False)
        x_train, y_train = _to_arrays(train)
        x_test, y_test = _to_arrays(test)
        return ArrayData(x_train, y_train, x_test, y_test, classes=classes or list(cls.classes), source=source)

    return load


def _emnist_members(split: str) -> list[str]:
    """Decompressed idx file names of one EMNIST split, as torchvision reads them from ``EMNIST/raw``."""
    return [
        f"emnist-{split}-{part}-{kind}-ubyte" for part in ("train", "test") for kind in ("images-idx3", "labels-idx1")
    ]


def load_emnist(mirror: Path | None, download_root: Path) -> ArrayData:
    """The ``emnist`` (balanced) loader; see the module docstring for sources and orientation."""
    import torchvision.datasets as tvd

    cls = tvd.EMNIST
    archive = RawFile("gzip.zip", cls.md5, url=cls.url)
    found = resolve([archive], search_dirs(mirror), subdirs=("EMNIST/raw", "EMNIST"))
    raw_folder = download_root / "EMNIST" / "raw"
    if found:
        with zipfile.ZipFile(found[archive.name]) as zf:
            for member in _emnist_members(EMNIST_SPLIT):
                with zf.open(f"gzip/{member}.gz") as packed, gzip.GzipFile(fileobj=packed) as payload:
                    write_atomic(raw_folder / member, lambda out: shutil.copyfileobj(payload, out, 1 << 20))
        train = cls(str(download_root), split=EMNIST_SPLIT, train=True, download=False)
        source = describe_source(found)
    else:
        train = torchvision_download(
            "emnist",
            lambda: cls(str(download_root), split=EMNIST_SPLIT, train=True, download=True),
            archive,
            mirror,
        )
        source = f"torchvision EMNIST download into {download_root}"
    test = cls(str(download_root), split=EMNIST_SPLIT, train=False, download=False)
    x_train, y_train = _to_arrays(train, transpose=True)
    x_test, y_test = _to_arrays(test, transpose=True)
    return ArrayData(x_train, y_train, x_test, y_test, classes=list(train.classes), source=source)


_DIGIT_NAMES = [str(c) for c in range(10)]

DATASETS.register(
    "mnist",
    DatasetSpec(
        name="mnist",
        shape=(1, 28, 28),
        num_classes=10,
        n_train=60000,
        n_test=10000,
        description="MNIST handwritten digits (LeCun et al. 1998) via torchvision.datasets.MNIST",
        loader=_idx_loader("mnist", "MNIST", _DIGIT_NAMES, system_dirs=(SHIPPED_MNIST,), payload_md5=MNIST_PAYLOAD_MD5),
    ),
)

DATASETS.register(
    "fmnist",
    DatasetSpec(
        name="fmnist",
        shape=(1, 28, 28),
        num_classes=10,
        n_train=60000,
        n_test=10000,
        description="Fashion-MNIST (Xiao et al. 2017, arXiv:1708.07747) via torchvision.datasets.FashionMNIST",
        loader=_idx_loader("fmnist", "FashionMNIST", system_dirs=(DEBIAN_FMNIST,), payload_md5=FMNIST_PAYLOAD_MD5),
    ),
)

DATASETS.register(
    "emnist",
    DatasetSpec(
        name="emnist",
        shape=(1, 28, 28),
        num_classes=47,
        n_train=112800,
        n_test=18800,
        description="EMNIST balanced (Cohen et al. 2017, arXiv:1702.05373) via torchvision.datasets.EMNIST, "
        "transposed upright",
        loader=load_emnist,
    ),
)
