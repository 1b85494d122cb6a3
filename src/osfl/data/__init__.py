"""Datasets: a registry of specs, a prepare step that writes plain ``.npy`` arrays, and a fast loader.

Each module in this folder registers the :class:`DatasetSpec` of one dataset family in :data:`DATASETS`
(``digits`` embedded via scikit-learn; ``mnist``/``fmnist``/``emnist``, ``svhn``, ``cifar10``/``cifar100``
through torchvision). Adding a dataset is one new file; this ``__init__`` imports them all at the end.

:func:`prepare_dataset` loads a dataset through its spec's loader, checks the arrays against the spec and
writes ``x_train.npy``, ``y_train.npy``, ``x_test.npy``, ``y_test.npy`` (images ``uint8`` ``(N, C, H, W)``,
labels ``int64`` ``(N,)``) and ``meta.json`` (sizes, classes, source, SHA-256 of each array file). The files
are deterministic: preparing the same dataset twice gives byte-identical ``.npy`` files.
:func:`load_prepared` reads them back with ``np.load`` (tens of milliseconds for 60k MNIST images).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ConfigError
from ..registry import Registry, import_submodules

__all__ = [
    "ARRAY_NAMES",
    "ArrayData",
    "DATASETS",
    "DatasetSpec",
    "get_spec",
    "is_stand_in",
    "load_prepared",
    "prepare_dataset",
]

#: The four arrays of a prepared dataset, stored as ``<name>.npy``.
ARRAY_NAMES = ("x_train", "y_train", "x_test", "y_test")
META_FILE = "meta.json"


@dataclass
class ArrayData:
    """A dataset held in memory: uint8 images ``(N, C, H, W)`` and int64 labels ``(N,)`` per split."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: list[str]
    source: str = ""  # where the arrays came from, e.g. "mirror /usr/share/datasets/fashion-mnist"
    stand_in: bool = False  # generated stand-in arrays (smoke profile only), not the dataset

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(C, H, W)`` of one image."""
        c, h, w = self.x_train.shape[1:]
        return int(c), int(h), int(w)


@dataclass(frozen=True)
class DatasetSpec:
    """Static facts about a dataset, known before any file is read (used to validate params early)."""

    name: str
    shape: tuple[int, int, int]  # (C, H, W) of the prepared arrays
    num_classes: int
    n_train: int  # exact sizes of the prepared splits
    n_test: int
    description: str  # one line, including the source / citation
    loader: Callable[[Path | None, Path], ArrayData]  # (mirror or None, download_root) -> arrays


DATASETS: Registry[DatasetSpec] = Registry("dataset", key="dataset")


def get_spec(name: str) -> DatasetSpec:
    """The spec registered under ``name``; unknown names raise ``ConfigError('dataset', ...)`` listing all."""
    return DATASETS.get(name)


def _check_arrays(spec: DatasetSpec, data: ArrayData, sizes: tuple[int, int] | None = None) -> None:
    """Raise ConfigError unless ``data`` has exactly the dtypes, shapes, sizes and label range of ``spec``.

    ``sizes`` replaces the spec's (n_train, n_test) for stand-in arrays.
    """
    problems: list[str] = []
    n_train, n_test = sizes or (spec.n_train, spec.n_test)
    for split, expected_n in (("train", n_train), ("test", n_test)):
        x: np.ndarray = getattr(data, f"x_{split}")
        y: np.ndarray = getattr(data, f"y_{split}")
        if x.dtype != np.uint8:
            problems.append(f"x_{split} dtype {x.dtype}, expected uint8")
        if x.ndim != 4 or tuple(x.shape[1:]) != tuple(spec.shape):
            problems.append(f"x_{split} shape {tuple(x.shape)}, expected (N, {', '.join(map(str, spec.shape))})")
        if y.dtype != np.int64:
            problems.append(f"y_{split} dtype {y.dtype}, expected int64")
        if y.ndim != 1 or len(y) != len(x):
            problems.append(f"y_{split} shape {tuple(y.shape)}, expected ({len(x)},)")
        if len(x) != expected_n:
            problems.append(f"{len(x)} {split} images, expected {expected_n}")
        if y.size and (int(y.min()) < 0 or int(y.max()) >= spec.num_classes):
            problems.append(f"y_{split} labels span {int(y.min())}..{int(y.max())}, expected 0..{spec.num_classes - 1}")
    if len(data.classes) != spec.num_classes:
        problems.append(f"{len(data.classes)} class names, expected {spec.num_classes}")
    if problems:
        origin = data.source or "its loader"
        raise ConfigError("dataset", f"{spec.name!r} from {origin} does not match its spec: {'; '.join(problems)}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def prepare_dataset(
    name: str,
    out_dir: Path,
    mirror: Path | None = None,
    download_root: Path = Path("data/raw"),
    stand_in: tuple[int, int] | None = None,
) -> Path:
    """Load dataset ``name`` (from ``mirror``, a system mirror or a download) and write it to ``out_dir``.

    Writes the four ``.npy`` arrays and ``meta.json``; returns ``out_dir``. The arrays are loaded and checked
    before anything is written, and the files are first written into a temporary folder next to
    ``out_dir``, so a failure leaves no partial files in ``out_dir``.

    ``stand_in=(n_train, n_test)`` (smoke profile only): when the dataset cannot be obtained, generated
    stand-in arrays of that size are written instead (:mod:`osfl.data.stand_in`), and meta.json says so.
    """
    from ..errors import DataUnavailableError

    spec = get_spec(name)
    is_stand_in = False
    try:
        data = spec.loader(Path(mirror) if mirror is not None else None, Path(download_root))
    except DataUnavailableError as e:
        if stand_in is None:
            raise
        from .stand_in import stand_in_arrays

        print(f"{spec.name}: not available ({e}); writing generated stand-in arrays", file=sys.stderr)
        data = stand_in_arrays(spec, *stand_in)
        is_stand_in = True
    _check_arrays(spec, data, stand_in if is_stand_in else None)

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".part", dir=out_dir.parent))
    try:
        digests: dict[str, str] = {}
        for key in ARRAY_NAMES:
            path = staging / f"{key}.npy"
            # C order makes the bytes independent of how the loader laid out memory
            np.save(path, np.ascontiguousarray(getattr(data, key)), allow_pickle=False)
            digests[path.name] = _sha256(path)
        meta = {
            "name": spec.name,
            "description": spec.description,
            "shape": list(spec.shape),
            "num_classes": spec.num_classes,
            "classes": list(data.classes),
            "n_train": int(len(data.x_train)),
            "n_test": int(len(data.x_test)),
            # only the kind of source (its full text is printed below), never a machine path, never a machine path: the same dataset read from another
            # mirror folder must give a byte-identical output, or DVC would retrain everything downstream
            "source": data.source.split(" ")[0] if data.source else "",
            "sha256": digests,
            "stand_in": is_stand_in,
        }
        (staging / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        print(f"{spec.name}: read from {data.source or 'its loader'}", file=sys.stderr)
        out_dir.mkdir(parents=True, exist_ok=True)
        for key in ARRAY_NAMES:
            os.replace(staging / f"{key}.npy", out_dir / f"{key}.npy")
        os.replace(staging / META_FILE, out_dir / META_FILE)  # last: its presence marks a complete folder
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def is_stand_in(path: Path) -> bool:
    """Whether the prepared folder ``path`` holds generated stand-in arrays (False when it holds none)."""
    meta_path = Path(path) / META_FILE
    return meta_path.is_file() and bool(json.loads(meta_path.read_text(encoding="utf-8")).get("stand_in"))


def load_prepared(path: Path, verify: bool = False, allow_stand_in: bool = False) -> ArrayData:
    """Read a folder written by :func:`prepare_dataset` (plain ``np.load``; no pickles).

    With ``verify=True`` the SHA-256 of each array file is checked against ``meta.json`` first. Stand-in arrays
    are refused unless ``allow_stand_in`` (the profile allows them: smoke), so that data prepared at smoke can
    never reach a quick or paper run.
    """
    path = Path(path)
    meta_path = path / META_FILE
    if not meta_path.is_file():
        raise ConfigError("dataset", f"{path} holds no prepared dataset ({META_FILE} missing); run the prepare stage")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("stand_in") and not allow_stand_in:
        raise ConfigError("profile", f"{path} holds generated stand-in arrays (prepared at the smoke profile), "
                                     f"never used at this profile; prepare the real {meta.get('name')} again "
                                     f"(dvc repro re-runs prepare) or run at profile smoke")
    arrays: dict[str, np.ndarray] = {}
    for key in ARRAY_NAMES:
        file = path / f"{key}.npy"
        if not file.is_file():
            raise ConfigError("dataset", f"{path} is incomplete ({file.name} missing); run the prepare stage again")
        if verify and _sha256(file) != meta["sha256"][file.name]:
            raise ConfigError(
                "dataset", f"{file} does not match the SHA-256 in {META_FILE}; run the prepare stage again"
            )
        arrays[key] = np.load(file, allow_pickle=False)
    return ArrayData(**arrays, classes=list(meta["classes"]), source=str(meta.get("source", "")),
                     stand_in=bool(meta.get("stand_in")))


# last: the dataset modules import DATASETS / DatasetSpec / ArrayData from this package
import_submodules(__name__, __path__)
