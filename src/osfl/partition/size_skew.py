"""``size_skew``: quantity skew with IID labels, NIID-Bench "iid-diff-quantity".

Li, Diao, Chen, He, "Federated Learning on Non-IID Data Silos: An Experimental Study", ICDE 2022
(NIID-Bench ``utils.py: partition_data``, ``iid-diff-quantity``): client proportions q ~ Dir(alpha * 1_m),
redrawn until every client gets >= ``min_size`` samples; then all indices are shuffled and cut at the
cumulative proportions. NIID-Bench checks ``min(q) * N >= 10`` before rounding; this implementation checks
the actual sizes after the cut (the rounded cut can otherwise leave a client one sample short).
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from . import PARTITIONS, PartitionScheme
from ._common import MAX_TRIES, check_min_size, finish, split_at_proportions


def size_skew_partition(
    labels: np.ndarray,
    num_clients: int,
    *,
    seed: int,
    alpha: float,
    min_size: int = 10,
    num_classes: int | None = None,
    max_tries: int = MAX_TRIES,
) -> list[np.ndarray]:
    """Dirichlet client sizes (q ~ Dir(alpha)), labels IID; redraw q until every client holds >= ``min_size``."""
    n = np.asarray(labels).shape[0]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n).astype(np.int64)
    conc = np.full(num_clients, float(alpha))
    for _ in range(max_tries):
        q = rng.dirichlet(conc)
        total = q.sum()
        if not (np.isfinite(total) and total > 0):
            continue
        pieces = split_at_proportions(perm, q / total)
        if min(p.size for p in pieces) >= min_size:
            return finish(pieces)
    raise ConfigError(
        "alpha",
        f"could not give every one of {num_clients} clients >= {min_size} samples in {max_tries} Dirichlet draws "
        f"with alpha={alpha:g}; allowed: a larger alpha, fewer clients or a smaller min_size",
    )


PARTITIONS.register(
    "size_skew",
    PartitionScheme(
        name="size_skew",
        fn=size_skew_partition,
        params=("alpha", "min_size"),
        defaults={"min_size": 10},
        check=check_min_size,
        citation="Li et al., Federated Learning on Non-IID Data Silos: An Experimental Study, ICDE 2022 "
        "(NIID-Bench iid-diff-quantity)",
    ),
)
