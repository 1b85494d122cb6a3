"""``inner_dirichlet``: client-major Dirichlet class priors, filled sample by sample (FedDyn / Co-Boosting).

Acar, Zhao, Matas, Mattina, Whatmough, Saligrama, "Federated Learning Based on Dynamic Regularization",
ICLR 2021 (data generation of the FedDyn code), as copied by Co-Boosting (Dai et al., ICLR 2024,
``utils_fl.py: partition_data``, ``--partition dir``), which OFedED follows (SPEC §4, ANCHORS.md §3 and
§9.3); also Flower's ``InnerDirichletPartitioner`` and FedLab's ``client_inner_dirichlet_partition``.

1. Client quotas: n_i ~ LogNormal(log(N/m), sigma), rescaled to sum N and floored. With the default
   sigma = 0 every client gets floor(N/m) (the N mod m leftover samples stay unassigned, as in the
   reference code).
2. Each client draws a class prior p_i ~ Dir(alpha * 1_K).
3. Until all quotas are filled: pick a client uniformly among those with quota left, draw a class from its
   prior, redrawing while that class is exhausted, and give the client one unused sample of that class.

"Redraw while exhausted" is the same as drawing from the prior restricted to the classes that still have
samples, which is what this implementation does (so it needs no rejection loop). If a client's prior has
no mass at all on the remaining classes (exact zeros from tiny alphas; the reference loop would never end),
the class is drawn uniformly among the remaining ones. Samples of a class are handed out in a seeded random
order (the reference takes them from the end of the class's index list).
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ..errors import ConfigError
from . import PARTITIONS, PartitionScheme
from ._common import infer_num_classes


def inner_dirichlet_partition(
    labels: np.ndarray,
    num_clients: int,
    *,
    seed: int,
    alpha: float,
    sigma: float = 0.0,
    num_classes: int | None = None,
) -> list[np.ndarray]:
    """FedDyn/Co-Boosting ``dir`` split: per-client Dir(alpha) class priors, quotas from LogNormal(., sigma)."""
    y = np.asarray(labels, dtype=np.int64)
    num_classes = infer_num_classes(y, num_classes)
    n, m, K = y.size, num_clients, num_classes
    rng = np.random.default_rng(seed)

    if sigma == 0:
        quotas = np.full(m, n // m, dtype=np.int64)
    else:
        raw = rng.lognormal(mean=np.log(n / m), sigma=sigma, size=m)
        quotas = (raw / raw.sum() * n).astype(np.int64)
    if quotas.min() < 1:
        raise ConfigError("sigma", f"sigma={sigma:g} leaves client {int(np.argmin(quotas))} with no samples; allowed: a smaller sigma")
    priors = rng.dirichlet(np.full(K, float(alpha)), size=m)

    class_idx = [rng.permutation(np.flatnonzero(y == k)).astype(np.int64) for k in range(K)]
    ptr = [0] * K
    avail = np.array([ci.size > 0 for ci in class_idx])
    avail_list = [k for k in range(K) if avail[k]]

    def cumulative():
        c = np.cumsum(priors * avail, axis=1)
        return c.tolist(), c[:, -1].tolist()

    cums, totals = cumulative()
    remaining = quotas.tolist()
    active = [i for i in range(m) if remaining[i] > 0]
    steps = int(quotas.sum())
    u = rng.random((steps, 2)).tolist()
    owner = np.full(n, -1, dtype=np.int64)

    for u_client, u_class in u:
        pos = int(u_client * len(active))
        client = active[pos]
        total = totals[client]
        if total > 0:
            k = bisect_right(cums[client], u_class * total)
            if k >= K or not avail[k]:  # only reachable through float rounding at the very top end
                k = max(j for j in avail_list if priors[client, j] > 0)
        else:
            k = avail_list[int(u_class * len(avail_list))]
        owner[class_idx[k][ptr[k]]] = client
        ptr[k] += 1
        if ptr[k] == class_idx[k].size:
            avail[k] = False
            avail_list.remove(k)
            cums, totals = cumulative()
        remaining[client] -= 1
        if remaining[client] == 0:  # swap-remove from the active list
            active[pos] = active[-1]
            active.pop()

    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(m + 1))
    return [np.sort(order[bounds[i]: bounds[i + 1]]).astype(np.int64) for i in range(m)]


PARTITIONS.register(
    "inner_dirichlet",
    PartitionScheme(
        name="inner_dirichlet",
        fn=inner_dirichlet_partition,
        params=("alpha", "sigma"),
        defaults={"sigma": 0.0},
        citation="Acar et al., Federated Learning Based on Dynamic Regularization, ICLR 2021 (FedDyn data split), "
        "as used by Co-Boosting (Dai et al., ICLR 2024) and OFedED",
    ),
)
