"""Tests of osfl.data: the digits default, prepared-array round trip, mirrors, checksums, offline errors.

Everything runs offline: ``urllib.request.urlopen`` (which torchvision's download uses) is replaced by a
function that raises ``URLError``, so no test waits on the network. The torchvision loaders are exercised
end to end on tiny synthetic mirror files, with torchvision's MD5 attributes patched to match them.
"""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import pickle
import struct
import tarfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import numpy as np
import pytest

from osfl.data import ARRAY_NAMES, DATASETS, ArrayData, get_spec, load_prepared, prepare_dataset
from osfl.data.mirror import md5_of
from osfl.errors import ConfigError, DataUnavailableError

DEBIAN_FMNIST = Path("/usr/share/datasets/fashion-mnist")
ALL_NAMES = ["cifar10", "cifar100", "digits", "emnist", "fmnist", "mnist", "svhn"]


@pytest.fixture
def offline(monkeypatch):
    """Make every download fail at once, as it does on a machine without network."""

    def refuse(*args, **kwargs):
        raise urllib.error.URLError("network disabled by the test")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)


@pytest.fixture(scope="module")
def digits_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("digits")
    return prepare_dataset("digits", root / "prepared", download_root=root / "raw")


def _md5_bytes(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


# ----------------------------------------------------------------------------------------------- registry


def test_registry_lists_all_datasets_with_consistent_specs():
    assert DATASETS.names() == ALL_NAMES
    for name in ALL_NAMES:
        spec = get_spec(name)
        assert spec.name == name
        assert len(spec.shape) == 3 and spec.num_classes >= 10 and spec.n_train > spec.n_test > 0
        assert "\n" not in spec.description and spec.description


def test_unknown_dataset_lists_allowed_names(tmp_path):
    with pytest.raises(ConfigError) as err:
        prepare_dataset("imagenet", tmp_path / "out", download_root=tmp_path / "raw")
    assert err.value.key == "dataset"
    assert "'imagenet'" in str(err.value)
    for name in ALL_NAMES:
        assert name in str(err.value)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------- digits


def test_digits_arrays_sizes_and_stratified_split(digits_dir):
    spec = get_spec("digits")
    data = load_prepared(digits_dir)
    assert (spec.n_train, spec.n_test) == (1437, 360)
    assert data.x_train.shape == (1437, 1, 28, 28) and data.x_test.shape == (360, 1, 28, 28)
    assert data.x_train.dtype == np.uint8 and data.x_test.dtype == np.uint8
    assert data.y_train.dtype == np.int64 and data.y_test.dtype == np.int64
    assert data.shape == spec.shape == (1, 28, 28)
    assert data.classes == [str(c) for c in range(10)] and data.num_classes == 10
    assert data.x_train.min() == 0 and data.x_train.max() == 255  # 0..16 scaled to the full uint8 range
    train_counts = np.bincount(data.y_train, minlength=10)
    test_counts = np.bincount(data.y_test, minlength=10)
    assert len(train_counts) == 10 and len(test_counts) == 10
    assert (test_counts >= 35).all()  # stratified: every class has its ~20 % share in the test split
    total = train_counts + test_counts
    assert np.abs(test_counts - 0.2 * total).max() <= 1
    assert total.sum() == 1797


def test_digits_images_and_labels_match_the_source(digits_dir):
    import torch
    import torch.nn.functional as F
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_prepared(digits_dir)
    bunch = load_digits()
    train_idx, test_idx = train_test_split(np.arange(1797), test_size=0.2, stratify=bunch.target, random_state=0)
    np.testing.assert_array_equal(data.y_train, bunch.target[train_idx])
    np.testing.assert_array_equal(data.y_test, bunch.target[test_idx])
    # sampling the 28x28 image back at the 8x8 pixel centres approximately recovers its own scaled source
    back = F.interpolate(torch.from_numpy(data.x_test).double(), size=(8, 8), mode="bilinear", align_corners=False)
    back = back[:, 0].numpy()
    source = bunch.images[test_idx] * (255.0 / 16.0)
    own = np.abs(back - source).mean(axis=(1, 2))
    other = np.abs(back - np.roll(source, 1, axis=0)).mean(axis=(1, 2))  # paired with a different image
    assert own.max() < 15.0, own.max()
    assert (own < other).all()


def test_digits_prepare_is_deterministic(digits_dir, tmp_path):
    again = prepare_dataset("digits", tmp_path / "again", download_root=tmp_path / "raw")
    for key in ARRAY_NAMES:
        assert (again / f"{key}.npy").read_bytes() == (digits_dir / f"{key}.npy").read_bytes(), key
    assert (again / "meta.json").read_bytes() == (digits_dir / "meta.json").read_bytes()


# ------------------------------------------------------------------------------------------ prepared files


def test_meta_json_and_sha256_round_trip(digits_dir):
    meta = json.loads((digits_dir / "meta.json").read_text())
    assert meta["name"] == "digits" and meta["shape"] == [1, 28, 28] and meta["num_classes"] == 10
    assert (meta["n_train"], meta["n_test"]) == (1437, 360)
    assert meta["classes"] == [str(c) for c in range(10)] and meta["source"]
    assert set(meta["sha256"]) == {f"{k}.npy" for k in ARRAY_NAMES}
    for file, digest in meta["sha256"].items():
        assert hashlib.sha256((digits_dir / file).read_bytes()).hexdigest() == digest
    data = load_prepared(digits_dir, verify=True)
    for key in ARRAY_NAMES:
        np.testing.assert_array_equal(getattr(data, key), np.load(digits_dir / f"{key}.npy"))
    assert sorted(p.name for p in digits_dir.iterdir()) == sorted([*(f"{k}.npy" for k in ARRAY_NAMES), "meta.json"])


def test_load_prepared_detects_missing_and_changed_files(digits_dir, tmp_path):
    with pytest.raises(ConfigError, match="meta.json missing"):
        load_prepared(tmp_path)
    copy = tmp_path / "copy"
    copy.mkdir()
    for p in digits_dir.iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    y = np.load(copy / "y_test.npy")
    y[0] = (y[0] + 1) % 10
    np.save(copy / "y_test.npy", y)
    load_prepared(copy)  # without verify the change is not looked for
    with pytest.raises(ConfigError, match="y_test.npy"):
        load_prepared(copy, verify=True)
    (copy / "x_train.npy").unlink()
    with pytest.raises(ConfigError, match="x_train.npy missing"):
        load_prepared(copy)


def test_prepare_rejects_arrays_that_do_not_match_the_spec(tmp_path, monkeypatch):
    spec = get_spec("digits")
    bad = ArrayData(
        x_train=np.zeros((10, 1, 28, 28), np.uint8),
        y_train=np.full(10, 12, np.int64),
        x_test=np.zeros((360, 1, 28, 28), np.float32),
        y_test=np.zeros(360, np.int64),
        classes=[str(c) for c in range(10)],
    )
    monkeypatch.setitem(DATASETS._entries, "digits", dataclasses.replace(spec, loader=lambda mirror, root: bad))
    with pytest.raises(ConfigError) as err:
        prepare_dataset("digits", tmp_path / "out", download_root=tmp_path / "raw")
    message = str(err.value)
    assert "10 train images, expected 1437" in message
    assert "labels span 12..12" in message
    assert "x_test dtype float32" in message
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------ Debian Fashion-MNIST


@pytest.mark.skipif(not DEBIAN_FMNIST.is_dir(), reason=f"{DEBIAN_FMNIST} absent (Debian package dataset-fashion-mnist)")
def test_fmnist_from_debian_mirror(tmp_path, offline):
    out = prepare_dataset("fmnist", tmp_path / "fmnist", mirror=None, download_root=tmp_path / "raw")
    data = load_prepared(out, verify=True)
    assert data.x_train.shape == (60000, 1, 28, 28) and data.x_test.shape == (10000, 1, 28, 28)
    assert data.shape == (1, 28, 28) and data.x_train.dtype == np.uint8 and data.y_train.dtype == np.int64
    assert np.bincount(data.y_train).tolist() == [6000] * 10
    assert np.bincount(data.y_test).tolist() == [1000] * 10
    assert data.classes[0] == "T-shirt/top" and data.classes[9] == "Ankle boot"
    assert data.source == "mirror"  # the kind only: no machine path in the DVC output
    # upright orientation: trousers (class 1) are taller than wide, so the ink spreads over more rows
    trousers = data.x_train[data.y_train == 1][:, 0].astype(np.float64).mean(axis=0) > 32
    assert trousers.any(axis=1).sum() > trousers.any(axis=0).sum()


def test_fmnist_corrupt_file_in_explicit_mirror_names_the_file(tmp_path, offline):
    raw = tmp_path / "mirror" / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    (raw / "train-labels-idx1-ubyte.gz").write_bytes(b"not really gzip")
    with pytest.raises(ConfigError) as err:
        prepare_dataset("fmnist", tmp_path / "out", mirror=tmp_path / "mirror", download_root=tmp_path / "raw")
    assert not isinstance(err.value, DataUnavailableError)
    assert "train-labels-idx1-ubyte.gz" in str(err.value) and "MD5" in str(err.value)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------ corrupt and missing files


def test_corrupt_cifar_archive_raises_config_error_naming_it(tmp_path, offline):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "cifar-10-python.tar.gz").write_bytes(b"\x1f\x8b broken")
    with pytest.raises(ConfigError) as err:
        prepare_dataset("cifar10", tmp_path / "out", mirror=mirror, download_root=tmp_path / "raw")
    assert not isinstance(err.value, DataUnavailableError)
    assert err.value.key == "data.mirror"
    assert "cifar-10-python.tar.gz" in str(err.value) and "c58f30108f718f92721af3b95e74349a" in str(err.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "name, first_file",
    [
        ("cifar10", "cifar-10-python.tar.gz"),
        ("cifar100", "cifar-100-python.tar.gz"),
        ("mnist", "train-images-idx3-ubyte.gz"),
        ("emnist", "gzip.zip"),
        ("svhn", "train_32x32.mat"),
    ],
)
def test_unavailable_dataset_fails_with_one_line(tmp_path, monkeypatch, offline, name, first_file):
    mirror = tmp_path / "empty-mirror"
    mirror.mkdir()
    if name == "mnist":  # as on a clone whose shipped copy (data/mnist/) is not pulled and carries no .dvc file
        import osfl.data as data_pkg
        from osfl.data.mnist_family import _idx_loader

        monkeypatch.setitem(data_pkg.DATASETS._entries, "mnist",
                            dataclasses.replace(get_spec("mnist"), loader=_idx_loader("mnist", "MNIST")))
    with pytest.raises(DataUnavailableError) as err:
        prepare_dataset(name, tmp_path / "out", mirror=mirror, download_root=tmp_path / "raw")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"dataset: {name!r} needs {first_file};")
    assert f"data.mirror={mirror}" in message and "network disabled by the test" in message
    assert not (tmp_path / "out").exists()


def test_mirror_that_is_not_a_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="data.mirror: .*not a directory"):
        prepare_dataset("cifar10", tmp_path / "out", mirror=tmp_path / "missing", download_root=tmp_path / "raw")


# ------------------------------------------------- torchvision loaders on tiny synthetic mirror files
# torchvision's MD5 attributes are patched to the synthetic files, so the real code paths run end to end.


def _idx_images(x: np.ndarray) -> bytes:
    return struct.pack(">IIII", 0x0803, *x.shape) + x.astype(np.uint8).tobytes()


def _idx_labels(y: np.ndarray) -> bytes:
    return struct.pack(">II", 0x0801, len(y)) + y.astype(np.uint8).tobytes()


def _gzip(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def _asymmetric_images(n: int, rng: np.random.Generator, size: int = 28) -> np.ndarray:
    return rng.integers(0, 256, size=(n, size, size), dtype=np.uint8)


def test_mnist_loader_reads_flat_gz_mirror(tmp_path, monkeypatch, offline):
    import torchvision.datasets as tvd

    rng = np.random.default_rng(0)
    xs = {"train": _asymmetric_images(12, rng), "t10k": _asymmetric_images(5, rng)}
    ys = {"train": rng.integers(0, 10, 12), "t10k": rng.integers(0, 10, 5)}
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    resources = []
    for part in ("train", "t10k"):
        for file, payload in ((f"{part}-images-idx3-ubyte.gz", _idx_images(xs[part])),
                              (f"{part}-labels-idx1-ubyte.gz", _idx_labels(ys[part]))):
            (mirror / file).write_bytes(_gzip(payload))
            resources.append((file, md5_of(mirror / file)))
    monkeypatch.setattr(tvd.MNIST, "resources", resources)

    data = get_spec("mnist").loader(mirror, tmp_path / "raw")
    np.testing.assert_array_equal(data.x_train[:, 0], xs["train"])  # MNIST keeps its stored orientation
    np.testing.assert_array_equal(data.x_test[:, 0], xs["t10k"])
    np.testing.assert_array_equal(data.y_train, ys["train"])
    assert data.x_train.dtype == np.uint8 and data.y_train.dtype == np.int64
    assert data.classes == [str(c) for c in range(10)] and str(mirror) in data.source
    # prepare_dataset checks the sizes against the spec (60000/10000) before writing anything
    with pytest.raises(ConfigError, match="12 train images, expected 60000"):
        prepare_dataset("mnist", tmp_path / "out", mirror=mirror, download_root=tmp_path / "raw")
    assert not (tmp_path / "out").exists()


def test_emnist_loader_extracts_balanced_members_and_transposes(tmp_path, monkeypatch, offline):
    import torchvision.datasets as tvd

    rng = np.random.default_rng(1)
    stored = {"train": _asymmetric_images(7, rng), "test": _asymmetric_images(3, rng)}
    labels = {"train": rng.integers(0, 47, 7), "test": rng.integers(0, 47, 3)}
    mirror = tmp_path / "mirror" / "EMNIST" / "raw"
    mirror.mkdir(parents=True)
    with zipfile.ZipFile(mirror / "gzip.zip", "w") as zf:
        for part in ("train", "test"):
            zf.writestr(f"gzip/emnist-balanced-{part}-images-idx3-ubyte.gz", _gzip(_idx_images(stored[part])))
            zf.writestr(f"gzip/emnist-balanced-{part}-labels-idx1-ubyte.gz", _gzip(_idx_labels(labels[part])))
            zf.writestr(f"gzip/emnist-letters-{part}-images-idx3-ubyte.gz", b"other split, not extracted")
    monkeypatch.setattr(tvd.EMNIST, "md5", md5_of(mirror / "gzip.zip"))

    data = get_spec("emnist").loader(tmp_path / "mirror", tmp_path / "raw")
    np.testing.assert_array_equal(data.x_train[:, 0], stored["train"].transpose(0, 2, 1))
    np.testing.assert_array_equal(data.x_test[:, 0], stored["test"].transpose(0, 2, 1))
    np.testing.assert_array_equal(data.y_test, labels["test"])
    assert len(data.classes) == 47 and data.classes[:3] == ["0", "1", "2"]
    extracted = sorted(p.name for p in (tmp_path / "raw" / "EMNIST" / "raw").iterdir())
    assert extracted == sorted(f"emnist-balanced-{p}-{k}-ubyte" for p in ("train", "test")
                               for k in ("images-idx3", "labels-idx1"))


def _cifar10_files(rng: np.random.Generator) -> tuple[dict[str, bytes], np.ndarray, np.ndarray]:
    """Pickled batches as in cifar-10-batches-py: rows are 3072 values, channel-major (R plane, G, B)."""
    x = rng.integers(0, 256, size=(12, 3, 32, 32), dtype=np.uint8)
    y = rng.integers(0, 10, 12)
    files = {}
    for i in range(5):
        sl = slice(2 * i, 2 * i + 2)
        files[f"data_batch_{i + 1}"] = pickle.dumps({"data": x[sl].reshape(2, -1), "labels": y[sl].tolist()})
    files["test_batch"] = pickle.dumps({"data": x[10:].reshape(2, -1), "labels": y[10:].tolist()})
    files["batches.meta"] = pickle.dumps({"label_names": [f"class{c}" for c in range(10)]})
    return files, x, y


def _patch_cifar10_md5s(monkeypatch, files: dict[str, bytes]) -> None:
    import torchvision.datasets as tvd

    monkeypatch.setattr(tvd.CIFAR10, "train_list", [[f"data_batch_{i}", _md5_bytes(files[f"data_batch_{i}"])]
                                                    for i in range(1, 6)])
    monkeypatch.setattr(tvd.CIFAR10, "test_list", [["test_batch", _md5_bytes(files["test_batch"])]])
    monkeypatch.setattr(tvd.CIFAR10, "meta", {"filename": "batches.meta", "key": "label_names",
                                              "md5": _md5_bytes(files["batches.meta"])})


def test_cifar10_loader_extracts_archive_from_mirror(tmp_path, monkeypatch, offline):
    import torchvision.datasets as tvd

    files, x, y = _cifar10_files(np.random.default_rng(2))
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    with tarfile.open(mirror / "cifar-10-python.tar.gz", "w:gz") as tar:
        for name, payload in files.items():
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    _patch_cifar10_md5s(monkeypatch, files)
    monkeypatch.setattr(tvd.CIFAR10, "tgz_md5", md5_of(mirror / "cifar-10-python.tar.gz"))

    data = get_spec("cifar10").loader(mirror, tmp_path / "raw")
    np.testing.assert_array_equal(data.x_train, x[:10])  # NCHW, same layout as the pickled rows
    np.testing.assert_array_equal(data.x_test, x[10:])
    np.testing.assert_array_equal(data.y_train, y[:10])
    assert data.x_train.flags.c_contiguous and data.y_train.dtype == np.int64
    assert data.classes == [f"class{c}" for c in range(10)]
    assert (tmp_path / "raw" / "cifar-10-batches-py" / "data_batch_1").is_file()


def test_cifar10_loader_reads_extracted_folder_in_place(tmp_path, monkeypatch, offline):
    files, x, y = _cifar10_files(np.random.default_rng(3))
    folder = tmp_path / "mirror" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for name, payload in files.items():
        (folder / name).write_bytes(payload)
    _patch_cifar10_md5s(monkeypatch, files)

    data = get_spec("cifar10").loader(tmp_path / "mirror", tmp_path / "raw")
    np.testing.assert_array_equal(data.x_test, x[10:])
    np.testing.assert_array_equal(data.y_train, y[:10])
    assert not (tmp_path / "raw").exists()  # nothing copied or extracted

    (folder / "data_batch_3").write_bytes(b"tampered")
    with pytest.raises(ConfigError, match="data_batch_3"):
        get_spec("cifar10").loader(tmp_path / "mirror", tmp_path / "raw")


def test_svhn_loader_reads_mat_files_and_maps_label_10_to_0(tmp_path, monkeypatch, offline):
    import scipy.io
    import torchvision.datasets as tvd

    rng = np.random.default_rng(4)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    expected = {}
    split_list = {}
    for split, n in (("train", 6), ("test", 4)):
        x = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
        digits = np.arange(n) % 10
        stored = np.where(digits == 0, 10, digits).astype(np.uint8)[:, None]  # SVHN stores digit 0 as 10
        path = mirror / f"{split}_32x32.mat"
        scipy.io.savemat(path, {"X": x.transpose(2, 3, 1, 0), "y": stored})  # .mat layout (H, W, C, N)
        expected[split] = (x, digits)
        split_list[split] = [f"http://example.invalid/{path.name}", path.name, md5_of(path)]
    monkeypatch.setattr(tvd.SVHN, "split_list", split_list)

    data = get_spec("svhn").loader(mirror, tmp_path / "raw")
    np.testing.assert_array_equal(data.x_train, expected["train"][0])
    np.testing.assert_array_equal(data.y_train, expected["train"][1])
    np.testing.assert_array_equal(data.x_test, expected["test"][0])
    assert data.y_train.dtype == np.int64 and data.y_train.min() == 0 and data.y_train.max() <= 9
    assert str(mirror) in data.source


def test_stand_in_arrays_never_reach_a_quick_run(tmp_path, offline):
    """Arrays prepared at smoke as stand-ins (the dataset unobtainable) are refused at quick and paper: by the
    loader every stage uses, and for FedDF's auxiliary data (prepared on first use), which is prepared again."""
    from osfl.config import get_profile
    from osfl.data import load_prepared, prepare_dataset
    from osfl.data.inputs import InputPrep
    from types import SimpleNamespace as Cfg  # the RunConfig fields these read

    from osfl.config import ExperimentPaths
    from osfl.stages.common import load_data, stand_in_sizes
    from osfl.stages.server import aux_images

    spec = DATASETS.get("cifar10")
    smoke, quick = get_profile("smoke"), get_profile("quick")
    root = tmp_path / "prepared"
    prepare_dataset("cifar10", root / "cifar10", stand_in=stand_in_sizes(spec, smoke))
    paths = ExperimentPaths("main", "cifar10", str(root))
    assert load_data(paths, Cfg(profile=smoke, inputs=InputPrep())).stand_in
    with pytest.raises(ConfigError, match=r"^profile: .*stand-in arrays .*never used at this profile") as e:
        load_data(paths, Cfg(profile=quick, inputs=InputPrep()))
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="stand-in"):
        load_prepared(root / "cifar10")  # the default refuses them too
    cfg = Cfg(profile=smoke, mirror=None, seed=0, inputs=InputPrep())
    import torch

    assert aux_images("cifar100", paths, cfg, torch.device("cpu")).shape[1:] == (3, 32, 32)  # stand-in at smoke
    with pytest.raises(ConfigError, match=r"^server.feddf.aux_data: cifar100 cannot be loaded"):
        aux_images("cifar100", paths, Cfg(**{**vars(cfg), "profile": quick}), torch.device("cpu"))


# ------------------------------------------------------------------------------- MNIST shipped in dvc-store

REPO = Path(__file__).resolve().parents[1]


def test_shipped_mnist_in_the_store_is_the_published_mnist():
    """The four files data/mnist.dvc names are in dvc-store/ and decompress to MNIST's idx payloads (README md5s)."""
    import dvc.api

    from osfl.data.mnist_family import MNIST_PAYLOAD_MD5, SHIPPED_MNIST

    assert SHIPPED_MNIST == REPO / "data" / "mnist" and (REPO / "data" / "mnist.dvc").is_file()
    for name, payload_md5 in MNIST_PAYLOAD_MD5.items():
        # read from the cache or the shipped remote (dvc-store/), never from a checkout that might be absent
        with dvc.api.open(f"data/mnist/{name}", repo=str(REPO), mode="rb") as packed:
            with gzip.GzipFile(fileobj=packed) as payload:
                assert hashlib.md5(payload.read()).hexdigest() == payload_md5, name


def _mnist_like_folder(folder: Path, rng: np.random.Generator) -> dict[str, str]:
    """Tiny MNIST-style .gz files in ``folder``; returns each file's payload MD5."""
    folder.mkdir(parents=True)
    payload_md5 = {}
    for part, n in (("train", 6), ("t10k", 3)):
        for file, payload in ((f"{part}-images-idx3-ubyte.gz", _idx_images(_asymmetric_images(n, rng))),
                              (f"{part}-labels-idx1-ubyte.gz", _idx_labels(rng.integers(0, 10, n)))):
            (folder / file).write_bytes(gzip.compress(payload, compresslevel=9, mtime=0))
            payload_md5[file] = _md5_bytes(payload)
    return payload_md5


def test_shipped_copy_recompressed_is_accepted_by_payload_md5(tmp_path, offline):
    """A re-compressed copy (container MD5 not torchvision's) passes on its payload MD5, as data/mnist/ does."""
    from osfl.data.mnist_family import _idx_loader

    shipped = tmp_path / "data" / "mnist"
    payload_md5 = _mnist_like_folder(shipped, np.random.default_rng(1))
    data = _idx_loader("mnist", "MNIST", system_dirs=(shipped,), payload_md5=payload_md5)(None, tmp_path / "raw")
    assert len(data.x_train) == 6 and len(data.x_test) == 3 and str(shipped) in data.source


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupted_shipped_mnist_file_is_refused_in_one_line(tmp_path, monkeypatch, offline, damage):
    """A truncated or altered file of the shipped copy stops prepare with one line naming it and the fix; the
    prepared folder already there is left as it was."""
    from osfl.data.mnist_family import _idx_loader

    shipped = tmp_path / "data" / "mnist"
    payload_md5 = _mnist_like_folder(shipped, np.random.default_rng(2))
    (tmp_path / "data" / "mnist.dvc").write_text("outs:\n- path: mnist\n")
    victim = shipped / "train-images-idx3-ubyte.gz"
    raw = victim.read_bytes()
    victim.write_bytes(raw[: len(raw) // 2] if damage == "truncate" else raw[:-9] + bytes([raw[-9] ^ 1]) + raw[-8:])
    loader = _idx_loader("mnist", "MNIST", system_dirs=(shipped,), payload_md5=payload_md5)
    with pytest.raises(ConfigError) as err:
        loader(None, tmp_path / "raw")
    message = str(err.value)
    assert "\n" not in message and str(victim) in message
    assert "dvc checkout --force mnist.dvc" in message

    # through prepare_dataset: a folder prepared before stays byte for byte
    import osfl.data as data_pkg

    monkeypatch.setitem(data_pkg.DATASETS._entries, "mnist", dataclasses.replace(get_spec("mnist"), loader=loader))
    out = tmp_path / "out"
    out.mkdir()
    (out / "meta.json").write_text('{"kept": true}\n')
    with pytest.raises(ConfigError):
        prepare_dataset("mnist", out, download_root=tmp_path / "raw")
    assert sorted(p.name for p in out.iterdir()) == ["meta.json"]
    assert (out / "meta.json").read_text() == '{"kept": true}\n'


def test_shipped_mnist_not_pulled_says_how_to_pull(tmp_path, offline):
    """data/mnist.dvc present but its folder not checked out, offline: the one line names `dvc pull mnist.dvc`."""
    from osfl.data.mnist_family import _idx_loader

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mnist.dvc").write_text("outs:\n- path: mnist\n")
    loader = _idx_loader("mnist", "MNIST", system_dirs=(tmp_path / "data" / "mnist",))
    with pytest.raises(DataUnavailableError) as err:
        loader(None, tmp_path / "raw")
    assert "\n" not in str(err.value) and "`dvc pull mnist.dvc` in " + str(tmp_path / "data") in str(err.value)
