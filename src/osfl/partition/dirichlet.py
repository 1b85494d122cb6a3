"""``dirichlet``: label-distribution skew, NIID-Bench "noniid-labeldir".

Li, Diao, Chen, He, "Federated Learning on Non-IID Data Silos: An Experimental Study", ICDE 2022
(NIID-Bench ``utils.py: partition_data``), following Yurochkin et al. 2019 / Hsu et al. 2019. This is the
split DENSE (Zhang et al., NeurIPS 2022, ``helpers/datasets.py``) and FedLPA use, and the one proposed for
FedHydra (SPEC §3.2): for each class draw p ~ Dir(alpha * 1_m), give p_j = 0 to clients that already hold
>= N/m samples (the balance mask), renormalise, split the shuffled class at the cumulative proportions;
repeat the whole draw until every client holds >= ``min_size`` (10) samples. See ANCHORS.md §1 and §9.1.

Property that follows from the mask: a client only receives samples of a class while it holds < N/m, so
every client ends with fewer than N/m + (largest class size) samples.
"""
from __future__ import annotations

import numpy as np

from . import PARTITIONS, PartitionScheme
from ._common import MAX_TRIES, check_min_size, finish, infer_num_classes, labeldir_split


def dirichlet_partition(
    labels: np.ndarray,
    num_clients: int,
    *,
    seed: int,
    alpha: float,
    min_size: int = 10,
    num_classes: int | None = None,
    max_tries: int = MAX_TRIES,
) -> list[np.ndarray]:
    """NIID-Bench labeldir partition (balance mask at N/m, redraw until all clients hold >= ``min_size``)."""
    y = np.asarray(labels, dtype=np.int64)
    num_classes = infer_num_classes(y, num_classes)
    rng = np.random.default_rng(seed)
    idx = np.arange(y.size, dtype=np.int64)
    parts = labeldir_split(
        rng, idx, y, num_clients, num_classes, alpha,
        min_required=min_size, cap=y.size / num_clients, shuffle_each_draw=True, max_tries=max_tries,
    )
    return finish(parts)



PARTITIONS.register(
    "dirichlet",
    PartitionScheme(
        name="dirichlet",
        fn=dirichlet_partition,
        params=("alpha", "min_size"),
        defaults={"min_size": 10},
        check=check_min_size,
        citation="Li et al., Federated Learning on Non-IID Data Silos: An Experimental Study, ICDE 2022 "
        "(NIID-Bench noniid-labeldir, as used by DENSE, NeurIPS 2022)",
    ),
)
