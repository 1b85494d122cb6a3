"""``iid``: uniform random split into near-equal parts.

McMahan, Moore, Ramage, Hampson, Agüera y Arcas, "Communication-Efficient Learning of Deep Networks from
Decentralized Data", AISTATS 2017 (the IID setting: data shuffled, then partitioned among the clients).
The same as NIID-Bench's ``homo`` and FedLab's ``balance_split`` + random indices.
"""
from __future__ import annotations

import numpy as np

from . import PARTITIONS, PartitionScheme
from ._common import finish


def iid_partition(labels: np.ndarray, num_clients: int, *, seed: int, num_classes: int | None = None) -> list[np.ndarray]:
    """Shuffle all indices and split them into ``num_clients`` parts whose sizes differ by at most one."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(np.asarray(labels).shape[0])
    return finish(np.array_split(perm, num_clients))


PARTITIONS.register(
    "iid",
    PartitionScheme(
        name="iid",
        fn=iid_partition,
        params=(),
        citation="McMahan et al., Communication-Efficient Learning of Deep Networks from Decentralized Data, AISTATS 2017",
    ),
)
