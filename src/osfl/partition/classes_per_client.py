"""``classes_per_client``: quantity-based label imbalance, each client holds C classes ("#C=k").

Li et al., "Federated Learning on Non-IID Data Silos: An Experimental Study", ICDE 2022 (NIID-Bench
``noniid-#label<k>``), and the pathological split of McMahan et al. 2017. Three ways to choose the classes
(keyword ``assignment``):

* ``cyclic`` (default) - FedD3 ``divide_data`` (Song et al., KDD 2023), proposed for HFLDD (SPEC §3.3):
  client i gets classes {(i + j) mod K : j = 0..C-1}; each class's shuffled indices are cut into equal
  contiguous shards, one per holder in client order, the last shard taking the remainder.
  With K = 10, m = 100: C = 1 gives 10 clients per class, C = 2 gives 20.
* ``disjoint`` - FedHydra's "2c/c" (SPEC §3.2): client k gets ALL samples of classes kC .. kC+C-1
  (needs m * C <= K; classes beyond m * C are left unassigned).
* ``random`` - NIID-Bench #C=k: client i gets class i mod K plus C-1 distinct classes drawn at random among
  the others; each class is split equally (``np.array_split``) among its holders. Classes nobody drew stay
  unassigned, as in NIID-Bench.

Every client must end up with at least one sample, else :class:`ConfigError` (key ``classes_per_client``).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from . import PARTITIONS, PartitionScheme
from ._common import finish, infer_num_classes


def _class_sets(rng: np.random.Generator, num_clients: int, num_classes: int, c: int, assignment: str) -> list[list[int]]:
    if assignment == "cyclic":
        return [[(i + j) % num_classes for j in range(c)] for i in range(num_clients)]
    if assignment == "disjoint":
        return [[i * c + j for j in range(c)] for i in range(num_clients)]
    if assignment == "random":
        sets = []
        for i in range(num_clients):
            first = i % num_classes
            others = np.array([k for k in range(num_classes) if k != first], dtype=np.int64)
            extra = rng.choice(others, size=c - 1, replace=False).tolist() if c > 1 else []
            sets.append([first] + [int(k) for k in extra])
        return sets
    raise ValueError(f"unknown assignment {assignment!r}")


def classes_per_client_partition(
    labels: np.ndarray,
    num_clients: int,
    *,
    seed: int,
    classes_per_client: int,
    assignment: str = "cyclic",
    num_classes: int | None = None,
) -> list[np.ndarray]:
    """Each client holds ``classes_per_client`` classes, chosen by ``assignment`` (cyclic | disjoint | random)."""
    y = np.asarray(labels, dtype=np.int64)
    num_classes = infer_num_classes(y, num_classes)
    c = int(classes_per_client)
    _check(num_clients, y.size, num_classes, {"classes_per_client": c, "assignment": assignment})
    rng = np.random.default_rng(seed)
    sets = _class_sets(rng, num_clients, num_classes, c, assignment)
    holders: list[list[int]] = [[] for _ in range(num_classes)]
    for i, s in enumerate(sets):
        for k in s:
            holders[k].append(i)
    parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for k in range(num_classes):
        ik = rng.permutation(np.flatnonzero(y == k).astype(np.int64))
        h = holders[k]
        if not h:
            continue
        if assignment == "random":
            shards = np.array_split(ik, len(h))
        else:  # FedD3: equal shards of floor(n_k / h), the last one takes the remainder
            step = ik.size // len(h)
            shards = [ik[r * step: (r + 1) * step] for r in range(len(h) - 1)] + [ik[(len(h) - 1) * step:]]
        for client, shard in zip(h, shards):
            parts[client].append(shard)
    out = finish(parts)
    empty = [i for i, ix in enumerate(out) if ix.size == 0]
    if empty:
        raise ConfigError(
            "classes_per_client",
            f"{len(empty)} of {num_clients} clients get no samples (first: client {empty[0]}) with "
            f"classes_per_client={c}, assignment={assignment}; allowed: fewer clients or more classes per client",
        )
    return out


def _check(num_clients: int, n_samples: int, num_classes: int, params: dict) -> None:
    c = params["classes_per_client"]
    if params["assignment"] == "disjoint" and num_clients * c > num_classes:
        raise ConfigError(
            "classes_per_client",
            f"disjoint assignment of {c} classes to each of {num_clients} clients needs {num_clients * c} classes "
            f"but there are {num_classes}; allowed: clients x classes_per_client <= {num_classes}",
        )


PARTITIONS.register(
    "classes_per_client",
    PartitionScheme(
        name="classes_per_client",
        fn=classes_per_client_partition,
        params=("classes_per_client", "assignment"),
        defaults={"assignment": "cyclic"},
        check=_check,
        citation="Li et al., Federated Learning on Non-IID Data Silos, ICDE 2022 (#C=k); cyclic classes as in "
        "FedD3 (Song et al., KDD 2023); disjoint 2c/c as in FedHydra",
    ),
)
