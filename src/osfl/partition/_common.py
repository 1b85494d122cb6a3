"""Helpers shared by several schemes (not a scheme itself: the leading underscore keeps it out of the registry scan)."""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError

MAX_TRIES = 1000  # redraws before a "repeat until every client is big enough" loop gives up


def infer_num_classes(labels: np.ndarray, num_classes: int | None) -> int:
    if num_classes is not None:
        return int(num_classes)
    return int(labels.max()) + 1 if labels.size else 1


def finish(parts) -> list[np.ndarray]:
    """Per-client lists of index pieces -> sorted int64 arrays (sorting makes partition files canonical)."""
    out = []
    for p in parts:
        if isinstance(p, np.ndarray):
            arr = p
        else:
            arr = np.concatenate(p) if len(p) else np.zeros(0, dtype=np.int64)
        out.append(np.sort(arr.astype(np.int64, copy=False)))
    return out


def split_at_proportions(idx: np.ndarray, p: np.ndarray) -> list[np.ndarray]:
    """Split ``idx`` into ``len(p)`` contiguous pieces at the cumulative proportions ``p`` (sum 1).

    Cut points are ``floor(cumsum(p) * n)`` without the last one, as in NIID-Bench, so the last piece takes
    what rounding leaves.
    """
    cuts = (np.cumsum(p) * idx.size).astype(np.int64)[:-1]
    cuts = np.clip(cuts, 0, idx.size)
    return np.split(idx, cuts)


def labeldir_split(
    rng: np.random.Generator,
    idx: np.ndarray,
    y: np.ndarray,
    num_clients: int,
    num_classes: int,
    alpha: float,
    min_required: int,
    cap: float,
    shuffle_each_draw: bool,
    max_tries: int = MAX_TRIES,
    hint: str = "a larger alpha, fewer clients or a smaller min_size",
) -> list[list[np.ndarray]]:
    """The NIID-Bench "noniid-labeldir" loop on the samples ``idx`` (with labels ``y``, aligned).

    For each class k (in order 0..K-1): optionally shuffle its indices, draw p ~ Dir(alpha * 1_m), set
    p_j = 0 for every client that already holds >= ``cap`` samples (the balance mask), renormalise and split
    the class at the cumulative proportions. The whole draw is repeated until every client holds
    >= ``min_required`` samples; after ``max_tries`` draws a :class:`ConfigError` (key ``alpha``) is raised.

    Numerical guard (not in the reference code, which would produce NaN): if the Dirichlet draw puts all
    its mass on masked clients (possible only when tiny alphas underflow to exact zeros), the class is split
    uniformly among the unmasked clients.
    """
    class_idx = [idx[y == k] for k in range(num_classes)]
    conc = np.full(num_clients, float(alpha))
    for _ in range(max_tries):
        sizes = np.zeros(num_clients, dtype=np.int64)
        parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        for k in range(num_classes):
            ik = class_idx[k]
            if ik.size == 0:
                continue
            if shuffle_each_draw:
                ik = rng.permutation(ik)
            p = rng.dirichlet(conc)
            open_ = sizes < cap
            p = np.where(open_, p, 0.0)
            total = p.sum()
            if not (np.isfinite(total) and total > 0):
                p = open_.astype(np.float64)
                total = p.sum()
                if total == 0:  # cannot happen while samples remain (sum of sizes < m * cap); be safe anyway
                    p = np.ones(num_clients)
                    total = float(num_clients)
            pieces = split_at_proportions(ik, p / total)
            for j, piece in enumerate(pieces):
                if piece.size:
                    parts[j].append(piece)
                    sizes[j] += piece.size
        if sizes.min() >= min_required:
            return parts
    raise ConfigError(
        "alpha",
        f"could not give every one of {num_clients} clients >= {min_required} samples in {max_tries} Dirichlet draws "
        f"with alpha={alpha:g}; allowed: {hint}",
    )


def check_min_size(num_clients: int, n_samples: int, num_classes: int, params: dict) -> None:
    """Stop before any work when ``num_clients`` clients cannot each get ``min_size`` samples."""
    if num_clients * params["min_size"] > n_samples:
        raise ConfigError(
            "clients",
            f"{num_clients} clients x min_size {params['min_size']} needs {num_clients * params['min_size']} samples "
            f"but there are only {n_samples}; allowed: at most {n_samples // max(params['min_size'], 1)} clients",
        )
