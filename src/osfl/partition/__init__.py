"""Client data partitions: which training samples each client holds.

Every scheme is a pure, seeded function ``fn(labels, num_clients, *, seed, **params) -> list[np.ndarray]``
that returns one sorted ``int64`` index array per client (indices into ``labels``). Each lives in its own
module, registers a :class:`PartitionScheme` in :data:`PARTITIONS` and cites the paper / code it follows
in its docstring (the layout imitates FedLab's ``fedlab/utils/dataset/functional.py``). Randomness comes
only from ``np.random.default_rng(seed)``; no global RNG state is read or changed.

:func:`make_partition` is the one entry point the stages use: it checks the parameters
(:func:`validate_params`, also callable on its own before any work is done), runs the scheme and wraps the
result in a :class:`Partition` that carries the per-client class histogram. :func:`save_partition` writes a
canonical JSON file (same input -> byte-identical file), :func:`load_partition` reads it back.

Schemes (see ANCHORS.md §9 for why the Dirichlet variants are kept apart):

* ``iid`` - uniform split (McMahan et al. 2017).
* ``dirichlet`` - NIID-Bench "noniid-labeldir" with the balance mask (DENSE, FedHydra).
* ``dirichlet_grouped`` - FedDF's grouped variant (FedMHO).
* ``classes_per_client`` - C classes per client: cyclic (FedD3/HFLDD), disjoint (FedHydra 2c/c), random (NIID-Bench #C=k).
* ``size_skew`` - NIID-Bench "iid-diff-quantity" (Dirichlet sizes, IID labels).
* ``inner_dirichlet`` - FedDyn / Co-Boosting client-major Dirichlet priors (OFedED).
"""
from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ConfigError
from ..registry import Registry, import_submodules

FORMAT = "osfl-partition/1"


@dataclass(frozen=True)
class PartitionScheme:
    """A registered partition algorithm.

    ``params`` names every extra keyword ``fn`` takes (required and optional); ``defaults`` gives the values
    of the optional ones. ``check(num_clients, n_samples, num_classes, params)`` is an optional extra
    validation that can run before any data is loaded (raises :class:`ConfigError`).
    """

    name: str
    fn: Callable[..., list[np.ndarray]]
    params: tuple[str, ...]
    citation: str
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    check: Callable[[int, int, int, dict], None] | None = None

    def __post_init__(self):
        unknown = set(self.defaults) - set(self.params)
        if unknown:
            raise ValueError(f"partition scheme {self.name!r}: defaults for undeclared params {sorted(unknown)}")
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(p for p in self.params if p not in self.defaults)


PARTITIONS: Registry[PartitionScheme] = Registry("partition scheme", key="partition")


# --------------------------------------------------------------------------------------------- parameters

ASSIGNMENTS = ("cyclic", "disjoint", "random")


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _check_param(name: str, value, num_classes: int):
    """Type/range check of one known parameter; returns it as a plain Python value (JSON-friendly)."""
    if name == "alpha":
        if not _is_real(value) or not math.isfinite(float(value)) or float(value) <= 0:
            raise ConfigError("alpha", f"{value!r} is not a valid Dirichlet concentration; allowed: a finite number > 0")
        return float(value)
    if name == "classes_per_client":
        if not _is_int(value) or not 1 <= int(value) <= num_classes:
            raise ConfigError(
                "classes_per_client", f"{value!r} is out of range for {num_classes} classes; allowed: an integer in 1..{num_classes}"
            )
        return int(value)
    if name == "min_size":
        if not _is_int(value) or int(value) < 0:
            raise ConfigError("min_size", f"{value!r} is not a valid minimum client size; allowed: an integer >= 0")
        return int(value)
    if name == "assignment":
        if value not in ASSIGNMENTS:
            raise ConfigError("assignment", f"unknown class assignment {value!r}; allowed: {', '.join(ASSIGNMENTS)}")
        return str(value)
    if name == "sigma":
        if not _is_real(value) or not math.isfinite(float(value)) or float(value) < 0:
            raise ConfigError("sigma", f"{value!r} is not a valid lognormal sigma; allowed: a finite number >= 0")
        return float(value)
    # a parameter only one scheme knows: accept JSON scalars as they are
    if value is not None and not isinstance(value, (str, bool, int, float)):
        raise ConfigError(name, f"{value!r} is not a plain value; allowed: a number or a string")
    return value


def _resolve_params(scheme: str, num_clients, n_samples: int, num_classes: int, params: Mapping[str, Any]) -> tuple[PartitionScheme, dict]:
    """All checks of :func:`validate_params`; returns the scheme and the params it uses (defaults filled in)."""
    spec = PARTITIONS.get(scheme)
    if not _is_int(num_clients) or int(num_clients) < 1:
        raise ConfigError("clients", f"{num_clients!r} is not a valid number of clients; allowed: an integer >= 1")
    num_clients = int(num_clients)
    if num_clients > n_samples:
        raise ConfigError("clients", f"{num_clients} clients but only {n_samples} training samples; allowed: at most {n_samples}")
    if num_classes < 1:
        raise ConfigError("num_classes", f"{num_classes!r} classes; allowed: an integer >= 1")
    used: dict[str, Any] = {}
    for name in spec.params:
        value = params.get(name)
        if value is None:  # not given (or null in a params file): the scheme's default
            if name not in spec.defaults:
                raise ConfigError(name, f"missing; partition {scheme!r} requires {', '.join(spec.required)}")
            value = spec.defaults[name]
        used[name] = _check_param(name, value, num_classes)
    if spec.check is not None:
        spec.check(num_clients, n_samples, num_classes, used)
    return spec, used


def validate_params(scheme: str, num_clients: int, n_samples: int, num_classes: int, **params) -> None:
    """Check a partition configuration without doing the work; raises :class:`ConfigError` (one line).

    Params the scheme does not take are ignored, so callers may pass e.g. ``alpha`` for every scheme.
    """
    _resolve_params(scheme, num_clients, int(n_samples), int(num_classes), params)


# ---------------------------------------------------------------------------------------------- partition


def _as_labels(labels) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim != 1:
        raise ValueError(f"labels must be a 1-D array, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if y.size and not (np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y))):
            raise ValueError(f"labels must be integers, got dtype {y.dtype}")
        y = y.astype(np.int64)
    y = y.astype(np.int64, copy=False)
    if y.size and y.min() < 0:
        raise ValueError("labels must be >= 0")
    return y


def _class_counts(labels: np.ndarray, client_indices: list[np.ndarray], num_classes: int) -> np.ndarray:
    out = np.zeros((len(client_indices), num_classes), dtype=np.int64)
    for i, idx in enumerate(client_indices):
        out[i] = np.bincount(labels[idx], minlength=num_classes)
    return out


@dataclass
class Partition:
    """The result of a partition: per-client sorted indices into the label array it was made from.

    ``class_counts`` (num_clients x num_classes, int64) is the per-client class histogram, fixed when the
    partition is made (or loaded); ``num_samples`` is the length of the label array.
    """

    scheme: str
    params: dict
    seed: int
    num_classes: int
    client_indices: list[np.ndarray]
    class_counts: np.ndarray
    num_samples: int

    def __post_init__(self):
        self.client_indices = [np.asarray(ix, dtype=np.int64) for ix in self.client_indices]
        self.class_counts = np.asarray(self.class_counts, dtype=np.int64)
        if self.class_counts.shape != (len(self.client_indices), self.num_classes):
            raise ValueError(
                f"class_counts has shape {self.class_counts.shape}, expected {(len(self.client_indices), self.num_classes)}"
            )
        if not np.array_equal(self.class_counts.sum(axis=1), self.sizes):
            raise ValueError("class_counts rows do not add up to the client sizes")

    @property
    def num_clients(self) -> int:
        return len(self.client_indices)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([ix.size for ix in self.client_indices], dtype=np.int64)

    def verify(self, labels) -> None:
        """Check that this partition fits ``labels`` (e.g. a loaded file against the dataset it is used with)."""
        y = _as_labels(labels)
        if y.size != self.num_samples:
            raise ConfigError("partition", f"made for {self.num_samples} samples, the dataset has {y.size}")
        if y.size and y.max() >= self.num_classes:
            raise ConfigError("partition", f"made for {self.num_classes} classes, the labels go up to {int(y.max())}")
        if not np.array_equal(_class_counts(y, self.client_indices, self.num_classes), self.class_counts):
            raise ConfigError("partition", "class counts do not match the labels; the file belongs to another dataset")


def make_partition(labels, scheme: str, num_clients: int, seed: int, num_classes: int | None = None, **params) -> Partition:
    """Partition ``labels`` among ``num_clients`` clients with a registered scheme.

    ``num_classes`` defaults to ``max(labels) + 1``. Params the scheme does not take are ignored; the ones it
    uses (defaults included) are recorded in ``Partition.params``.
    """
    y = _as_labels(labels)
    if num_classes is None:
        num_classes = int(y.max()) + 1 if y.size else 1
    num_classes = int(num_classes)
    if y.size and y.max() >= num_classes:
        raise ConfigError("num_classes", f"labels go up to {int(y.max())} but num_classes is {num_classes}")
    if not _is_int(seed) or int(seed) < 0:
        raise ConfigError("seed", f"{seed!r} is not a valid seed; allowed: an integer >= 0")
    spec, used = _resolve_params(scheme, num_clients, int(y.size), num_classes, params)
    parts = spec.fn(y, int(num_clients), seed=int(seed), num_classes=num_classes, **used)
    parts = [np.sort(np.asarray(ix, dtype=np.int64)) for ix in parts]
    if len(parts) != num_clients:
        raise AssertionError(f"partition {scheme!r} returned {len(parts)} clients, expected {num_clients}")
    return Partition(
        scheme=scheme,
        params=used,
        seed=int(seed),
        num_classes=num_classes,
        client_indices=parts,
        class_counts=_class_counts(y, parts, num_classes),
        num_samples=int(y.size),
    )


# ------------------------------------------------------------------------------------------------ files


def _dump_rows(rows) -> str:
    if not rows:
        return "[]"
    inner = ",\n".join("    " + json.dumps([int(v) for v in row], separators=(",", ":")) for row in rows)
    return "[\n" + inner + "\n  ]"


def save_partition(p: Partition, path) -> None:
    """Write ``p`` as canonical JSON: sorted keys, one line per client, no timestamps (same input -> same bytes)."""
    doc = {
        "format": json.dumps(FORMAT),
        "scheme": json.dumps(p.scheme),
        "params": json.dumps(p.params, sort_keys=True),
        "seed": json.dumps(int(p.seed)),
        "num_classes": json.dumps(int(p.num_classes)),
        "num_samples": json.dumps(int(p.num_samples)),
        "num_clients": json.dumps(p.num_clients),
        "sizes": json.dumps([int(s) for s in p.sizes], separators=(",", ":")),
        "class_counts": _dump_rows(p.class_counts.tolist()),
        "client_indices": _dump_rows([ix.tolist() for ix in p.client_indices]),
    }
    text = "{\n" + ",\n".join(f"  {json.dumps(k)}: {doc[k]}" for k in sorted(doc)) + "\n}\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def load_partition(path) -> Partition:
    """Read a file written by :func:`save_partition` (checks that it is consistent)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("partition", f"{path} does not exist; run the partition stage first") from None
    except json.JSONDecodeError as e:
        raise ConfigError("partition", f"{path} is not valid JSON ({e.msg} at line {e.lineno})") from None
    if doc.get("format") != FORMAT:
        raise ConfigError("partition", f"{path} is not a partition file (format {doc.get('format')!r}, expected {FORMAT!r})")
    try:
        p = Partition(
            scheme=doc["scheme"],
            params=dict(doc["params"]),
            seed=int(doc["seed"]),
            num_classes=int(doc["num_classes"]),
            client_indices=[np.asarray(ix, dtype=np.int64) for ix in doc["client_indices"]],
            class_counts=np.asarray(doc["class_counts"], dtype=np.int64).reshape(len(doc["client_indices"]), int(doc["num_classes"])),
            num_samples=int(doc["num_samples"]),
        )
    except (KeyError, ValueError, TypeError) as e:
        raise ConfigError("partition", f"{path} is damaged ({type(e).__name__}: {e})") from None
    allidx = np.concatenate(p.client_indices) if p.client_indices else np.zeros(0, np.int64)
    if allidx.size and (allidx.min() < 0 or allidx.max() >= p.num_samples or np.unique(allidx).size != allidx.size):
        raise ConfigError("partition", f"{path} is damaged (indices out of range or shared between clients)")
    return p


import_submodules(__name__, __path__)

__all__ = [
    "PARTITIONS",
    "PartitionScheme",
    "Partition",
    "make_partition",
    "save_partition",
    "load_partition",
    "validate_params",
]
