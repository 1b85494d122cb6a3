"""``dirichlet_grouped``: FedDF's grouped label-Dirichlet split (used by FedMHO).

Lin, Kong, Stich, Jaggi, "Ensemble Distillation for Robust Model Fusion in Federated Learning", NeurIPS 2020
(epfml ``federated-learning-public-code``, FedDF-code ``pcode/datasets/partition_data.py:
build_non_iid_by_dirichlet``), copied by FedMHO (SPEC §3.2, ANCHORS.md §2 and §9.2).

The (index, label) pairs are shuffled once. The clients are split into ceil(m/10) groups of 10 (the last
group takes the rest) and the shuffled data into as many contiguous chunks: every chunk but the last has
int(10/m * N) samples, the last takes the remainder, so chunk sizes are proportional to group sizes (equal
when m is a multiple of 10). Inside each chunk, the labeldir procedure runs over the group's clients with the
balance mask at chunk_size / n_group and is redrawn until every client of the group holds
>= int(0.5 * chunk_size / n_group) samples. For m <= 10 there is one group holding all the data. Unlike
NIID-Bench, class indices are not reshuffled on each redraw (the data were shuffled once).
"""
from __future__ import annotations

import math

import numpy as np

from . import PARTITIONS, PartitionScheme
from ._common import MAX_TRIES, finish, infer_num_classes, labeldir_split

GROUP = 10  # FedDF's n_auxi_workers


def group_layout(num_clients: int, n_samples: int) -> list[tuple[int, int, int, int]]:
    """``[(first_client, n_clients, chunk_start, chunk_end), ...]`` of the FedDF grouping."""
    n_groups = math.ceil(num_clients / GROUP)
    step = int(GROUP / num_clients * n_samples)
    out = []
    for g in range(n_groups):
        n_g = GROUP if g < n_groups - 1 else num_clients - GROUP * (n_groups - 1)
        start = g * step
        end = n_samples if g == n_groups - 1 else start + step
        out.append((g * GROUP, n_g, start, end))
    return out


def dirichlet_grouped_partition(
    labels: np.ndarray,
    num_clients: int,
    *,
    seed: int,
    alpha: float,
    num_classes: int | None = None,
    max_tries: int = MAX_TRIES,
) -> list[np.ndarray]:
    """FedDF ``build_non_iid_by_dirichlet``: labeldir in groups of 10 clients, min size 0.5 * chunk / n_group."""
    y = np.asarray(labels, dtype=np.int64)
    num_classes = infer_num_classes(y, num_classes)
    rng = np.random.default_rng(seed)
    perm = rng.permutation(y.size).astype(np.int64)
    out: list[np.ndarray] = []
    for _, n_g, start, end in group_layout(num_clients, y.size):
        chunk = perm[start:end]
        size = chunk.size
        parts = labeldir_split(
            rng, chunk, y[chunk], n_g, num_classes, alpha,
            min_required=int(0.5 * size / n_g), cap=size / n_g, shuffle_each_draw=False, max_tries=max_tries,
            hint="a larger alpha",
        )
        out.extend(finish(parts))
    return out


PARTITIONS.register(
    "dirichlet_grouped",
    PartitionScheme(
        name="dirichlet_grouped",
        fn=dirichlet_grouped_partition,
        params=("alpha",),
        citation="Lin et al., Ensemble Distillation for Robust Model Fusion in Federated Learning, NeurIPS 2020 "
        "(FedDF build_non_iid_by_dirichlet, as used by FedMHO)",
    ),
)
