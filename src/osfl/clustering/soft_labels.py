"""HFLDD's heterogeneous client clustering (SPEC §1.3-§1.4, Algorithm 1, Eq. 4).

1. Each client's label knowledge: S_i ∈ R^{|D_g|×N_c}, its model's softmax on the public set D_g (the labels of D_g
   are never used) — :func:`predict_soft_labels`.
2. The similarity matrix (Eq. 4): M_ij = KL(S_i ‖ S_j) = (1/|D_g|) Σ_k Σ_c S_i^{kc} log(S_i^{kc} / S_j^{kc}),
   asymmetric, M_ii = 0; probabilities clamped at ``eps`` (1e-10) before the log [P: one-class clients give
   near-one-hot outputs] — :func:`kl_matrix`.
3. Homogeneous clusters H_o: K-Means on the rows M_i· (raw, not standardised; scikit-learn, k-means++, n_init 10,
   ``random_state`` = the seed [P]).
4. Heterogeneous clusters H_e (Algorithm 1, ClusterSampling): while any homogeneous cluster is non-empty, a new
   cluster takes one uniformly random client from every non-empty homogeneous cluster (the printed "∀k" loop
   condition read as "until all are empty", SPEC §6.9), so H = max_k |H_o,k| and sizes are non-increasing —
   :func:`cluster_sampling`.
5. A header per heterogeneous cluster, uniform among its members (Alg. 2 line 19's H_o,h read as H_e,h).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping

import numpy as np
import torch
import torch.nn as nn

from ..config import check_float, check_int
from ..sections import section_reader


@dataclass(frozen=True)
class ClusteringSettings:
    """The ``clustering`` section of HFLDD's params: K = 10 K-Means clusters [S], |D_g| = 1000 public samples [S]
    (uniform from the public set's training split, one seed [P]), the log's clamp 1e-10 [P]."""

    K: int = 10
    public_size: int = 1000
    eps: float = 1e-10

    KEYS = ("K", "public_size", "eps")

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None, key: str = "clustering") -> "ClusteringSettings":
        get = section_reader(cls, section, key)
        return cls(K=check_int(f"{key}.K", get("K"), minimum=1),
                   public_size=check_int(f"{key}.public_size", get("public_size"), minimum=1),
                   eps=check_float(f"{key}.eps", get("eps"), positive=True))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@torch.no_grad()
def predict_soft_labels(model: nn.Module, x: torch.Tensor, batch_size: int = 500) -> torch.Tensor:
    """(len(x), classes) softmax probabilities of ``model`` (eval mode, restored after) on float inputs ``x``."""
    was = model.training
    model.eval()
    try:
        return torch.cat([torch.softmax(model(x[i:i + batch_size]).float(), dim=1)
                          for i in range(0, len(x), batch_size)])
    finally:
        model.train(was)


def kl_matrix(soft: np.ndarray, eps: float = 1e-10) -> np.ndarray:
    """Eq. 4 for every pair: ``soft`` is (N, |D_g|, N_c) (client, public sample, class); returns (N, N) with
    M[i, j] = KL(S_i ‖ S_j) averaged over the public samples."""
    s = np.clip(np.asarray(soft, dtype=np.float64), eps, None)
    if s.ndim != 3:
        raise ValueError(f"soft labels must be (clients, samples, classes), got shape {s.shape}")
    log = np.log(s)
    n = s.shape[1]
    # Σ_kc S_i log S_i − Σ_kc S_i log S_j, over all pairs at once
    self_term = np.einsum("ikc,ikc->i", s, log)
    cross = np.einsum("ikc,jkc->ij", s, log)
    m = (self_term[:, None] - cross) / n
    np.fill_diagonal(m, 0.0)
    return m


def homogeneous_clusters(m: np.ndarray, k: int, seed: int) -> np.ndarray:
    """K-Means labels (one per client) of the rows of ``m``; K is capped at the number of clients."""
    from sklearn.cluster import KMeans

    k = min(int(k), len(m))
    return KMeans(n_clusters=k, init="k-means++", n_init=10, random_state=seed).fit_predict(m).astype(int)


def cluster_sampling(groups: list[list[int]], rng: np.random.Generator) -> list[list[int]]:
    """Algorithm 1: heterogeneous clusters from homogeneous ``groups`` (lists of client ids; not modified)."""
    pools = [list(g) for g in groups]
    clusters = []
    while any(pools):
        cluster = []
        for pool in pools:
            if pool:
                cluster.append(pool.pop(int(rng.integers(len(pool)))))
        clusters.append(cluster)
    return clusters


@dataclass(frozen=True)
class Clustering:
    """The outcome of HFLDD's clustering: homogeneous groups, heterogeneous clusters, one header each."""

    homogeneous: list[list[int]]  # H_o: client ids per K-Means cluster (ascending)
    heterogeneous: list[list[int]]  # H_e: client ids per cluster, in sampling order
    headers: list[int]  # a_h, one per heterogeneous cluster

    @property
    def members(self) -> dict[int, int]:
        """Every non-header client → its header (who receives its distilled data)."""
        return {c: a for cluster, a in zip(self.heterogeneous, self.headers) for c in cluster if c != a}

    def as_dict(self) -> dict:
        return {"homogeneous": self.homogeneous, "heterogeneous": self.heterogeneous, "headers": self.headers,
                "H": len(self.heterogeneous), "K": len(self.homogeneous)}

    @classmethod
    def from_dict(cls, d: dict) -> "Clustering":
        """The clustering :meth:`as_dict` wrote (extra keys, such as the derived H and K, are ignored)."""
        return cls(d["homogeneous"], d["heterogeneous"], d["headers"])


def cluster_clients(soft: np.ndarray, k: int, seed: int, rng: np.random.Generator,
                    eps: float = 1e-10) -> tuple[Clustering, np.ndarray]:
    """Steps 2-5 from the clients' soft labels (N, |D_g|, N_c): the clustering and the KL matrix M."""
    m = kl_matrix(soft, eps)
    labels = homogeneous_clusters(m, k, seed)
    groups = [sorted(int(i) for i in np.flatnonzero(labels == g)) for g in range(labels.max() + 1)]
    groups = [g for g in groups if g]
    clusters = cluster_sampling(groups, rng)
    headers = [int(c[int(rng.integers(len(c)))]) for c in clusters]
    return Clustering(groups, [[int(c) for c in cl] for cl in clusters], headers), m
