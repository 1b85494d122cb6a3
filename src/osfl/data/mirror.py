"""Offline resolution of the raw files that torchvision's dataset classes download.

A *mirror* (params key ``data.mirror``) is a folder holding the raw files exactly as torchvision downloads
them, e.g. ``<mirror>/FashionMNIST/raw/train-images-idx3-ubyte.gz``, ``<mirror>/cifar-10-python.tar.gz``
or ``<mirror>/train_32x32.mat``. Each dataset module lists the files it needs as :class:`RawFile` entries
whose MD5 comes from torchvision's own class attributes (``MNIST.resources``, ``CIFAR10.tgz_md5``,
``SVHN.split_list``, ...); every file taken from a mirror is checked against that MD5 before it is used, and
a mismatch stops with a :class:`~osfl.errors.ConfigError` that names the file.

Besides the user's mirror, a dataset module may name *system mirrors*: folders that a distribution package
installs (Debian's ``dataset-fashion-mnist`` puts the four Fashion-MNIST ``.gz`` files flat into
``/usr/share/datasets/fashion-mnist``). They are searched after the user's mirror when they exist.

When no mirror holds the files the dataset modules let torchvision download into ``download_root``
(:func:`torchvision_download`); a failed download becomes a one-line
:class:`~osfl.errors.DataUnavailableError` naming the dataset, the first missing file and how to provide it.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import socket
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Mapping, Sequence, TypeVar

from ..errors import ConfigError, DataUnavailableError

T = TypeVar("T")

#: Seconds a socket may stay silent during a torchvision download before it fails (no timeout by default).
DOWNLOAD_SOCKET_TIMEOUT = 60.0

_CHUNK = 1 << 20


@dataclass(frozen=True)
class RawFile:
    """One file that torchvision downloads for a dataset."""

    name: str  # file name as torchvision stores it, e.g. "train-images-idx3-ubyte.gz"
    md5: str  # torchvision's MD5 of exactly this file
    url: str  # where torchvision downloads it from (used in the error message)
    content_md5: str | None = None  # for a .gz: MD5 of the decompressed payload, accepts re-compressed copies


def md5_of(path: Path) -> str:
    """MD5 hex digest of a file, read in 1 MiB chunks."""
    with open(path, "rb") as f:
        return _md5_of_stream(f)


def _md5_of_stream(f: BinaryIO) -> str:
    h = hashlib.md5(usedforsecurity=False)
    while chunk := f.read(_CHUNK):
        h.update(chunk)
    return h.hexdigest()


def search_dirs(mirror: Path | None, system_dirs: Sequence[Path] = ()) -> list[Path]:
    """The folders to look in, in order: the user's mirror, then the system mirrors that exist.

    A mirror that is set but is not a folder is a configuration error (most likely a typo).
    """
    dirs: list[Path] = []
    if mirror is not None:
        mirror = Path(mirror).expanduser()
        if not mirror.is_dir():
            raise ConfigError("data.mirror", f"{mirror} is not a directory; set it to the folder holding the raw files")
        dirs.append(mirror)
    dirs += [Path(d) for d in system_dirs if Path(d).is_dir() and Path(d) not in dirs]
    return dirs


def locate(raw: RawFile, dirs: Sequence[Path], subdirs: Sequence[str] = ()) -> Path | None:
    """First ``<dir>/<subdir>/<name>`` (each subdir in order, then ``<dir>/<name>``) that is a file, else None."""
    for d in dirs:
        for sub in (*subdirs, ""):
            candidate = d / sub / raw.name if sub else d / raw.name
            if candidate.is_file():
                return candidate
    return None


def verify(path: Path, raw: RawFile) -> None:
    """Check a mirror file against torchvision's MD5; raise ConfigError naming the file on mismatch.

    A ``.gz`` whose own MD5 differs is still accepted when ``raw.content_md5`` is known and its decompressed
    payload matches it: distributions re-compress files (Debian strips the stored file name), which changes
    the container's bytes but not the data.
    """
    actual = md5_of(path)
    if actual == raw.md5:
        return
    if raw.content_md5 is not None and path.name.endswith(".gz"):
        try:
            with gzip.open(path, "rb") as f:
                if _md5_of_stream(f) == raw.content_md5:
                    return
        except (OSError, EOFError, zlib.error):
            pass  # not a valid gzip stream: report the container's MD5 below
    tracked = dvc_file_of(path.parent)
    fix = (f"restore it with `dvc checkout --force {tracked.name}` in {tracked.parent} (or `dvc pull --force`)"
           if tracked is not None else f"replace it with a fresh download of {raw.url}")
    raise ConfigError(
        "data.mirror",
        f"{path} does not match torchvision's checksum for {raw.name} (MD5 {actual}, expected {raw.md5}); "
        f"the file is corrupt, truncated or a different version: {fix}",
    )


def dvc_file_of(folder: Path) -> Path | None:
    """The ``<folder>.dvc`` file that tracks ``folder`` as a DVC output (a shipped copy), or None."""
    candidate = Path(folder).with_name(Path(folder).name + ".dvc")
    return candidate if candidate.is_file() else None


def resolve(raws: Sequence[RawFile], dirs: Sequence[Path], subdirs: Sequence[str] = ()) -> dict[str, Path]:
    """Locate and verify each raw file; returns ``name -> path`` for those found (all of them verified).

    Any file that is found but fails its checksum raises, even when other files are missing.
    """
    found: dict[str, Path] = {}
    for raw in raws:
        path = locate(raw, dirs, subdirs)
        if path is not None:
            verify(path, raw)
            found[raw.name] = path
    return found


def describe_source(paths: Mapping[str, Path] | Sequence[Path]) -> str:
    """``'mirror <dir>[, <dir>...]'`` for the folders the given files were taken from."""
    values = paths.values() if isinstance(paths, Mapping) else paths
    folders = sorted({str(Path(p).parent) for p in values})
    return "mirror " + ", ".join(folders)


def gunzip_to(src: Path, dst: Path) -> Path:
    """Decompress ``src`` (gzip) into ``dst`` atomically (temporary file, then rename)."""
    with gzip.open(src, "rb") as fin:
        return write_atomic(dst, lambda fout: shutil.copyfileobj(fin, fout, _CHUNK))


def write_atomic(dst: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Create ``dst`` through ``write(fileobj)`` on a temporary file in the same folder, then rename it.

    An interrupted or failed write leaves no partial ``dst`` behind.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.part")  # plain open(): usual permissions, unlike mkstemp
    try:
        with open(tmp, "wb") as fout:
            write(fout)
        os.replace(tmp, dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dst


@contextmanager
def _socket_timeout(seconds: float) -> Iterator[None]:
    # urllib (used by torchvision's download) waits forever on a silent connection unless a default is set
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(previous)


def unavailable(
    dataset: str, missing: RawFile, mirror: Path | None, reason: str, shipped: Sequence[Path] = ()
) -> DataUnavailableError:
    """The one-line error for a dataset that can neither be found in a mirror nor downloaded.

    ``shipped``: folders the project ships through DVC (a ``<folder>.dvc`` beside them) that hold no copy yet:
    the message then says how to bring them first.
    """
    where = f"data.mirror={mirror}" if mirror is not None else "data.mirror (not set)"
    target = f"{mirror}/" if mirror is not None else "a folder"
    reason = " ".join(reason.split())  # one line, whatever torchvision's message looked like
    if len(reason) > 200:
        reason = reason[:197] + "..."
    pull = [f"`dvc pull {t.name}` in {t.parent}" for d in shipped if (t := dvc_file_of(d)) is not None]
    advice = (f"the project ships it: run {' and '.join(pull)}, or " if pull else "") + (
        f"download {missing.url} on a machine with internet into {target} and set data.mirror to that folder")
    return DataUnavailableError(
        "dataset",
        f"{dataset!r} needs {missing.name}; the download failed ({reason}) and it was not found in {where}; {advice}",
    )


def torchvision_download(
    dataset: str, build: Callable[[], T], missing: RawFile, mirror: Path | None, shipped: Sequence[Path] = ()
) -> T:
    """Run ``build()`` (a torchvision dataset constructor with ``download=True``), mapping failures.

    torchvision skips the network when ``download_root`` already holds verified files (an earlier download).
    Network errors (``URLError`` is an ``OSError``) and torchvision's own ``RuntimeError`` (failed mirrors,
    checksum of the download) become :class:`DataUnavailableError` about ``missing``; the cause stays chained
    for debugging, the message is one line.
    """
    try:
        with _socket_timeout(DOWNLOAD_SOCKET_TIMEOUT):
            return build()
    except (OSError, RuntimeError) as exc:
        # torchvision's MNIST joins the errors of all its mirrors over several lines; the last is the cause
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        raise unavailable(dataset, missing, mirror, lines[-1] if lines else type(exc).__name__, shipped) from exc
