"""Partition reports: the bubble plot of FedHydra Fig. 9 and a JSON-friendly summary.

FedHydra (V000 Fig. 9 = V003 Fig. 3) draws the partition as a bubble chart: x = client id, y = class,
bubble area proportional to the number of samples of that class the client holds; empty cells show
nothing. matplotlib is imported lazily (importing the partition package must stay cheap) and only through
the object-oriented ``Figure`` API with the Agg/PDF canvases, so no global backend state is touched.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

MAX_BUBBLE_AREA = 400.0  # points^2 of the largest cell


def plot_partition(class_counts: np.ndarray, out_stem: Path, title: str = "", class_names: Sequence[str] | None = None) -> list[Path]:
    """Write ``<out_stem>.png`` and ``<out_stem>.pdf`` (deterministic: no timestamps); returns both paths."""
    from matplotlib.figure import Figure

    counts = np.asarray(class_counts, dtype=np.int64)
    if counts.ndim != 2:
        raise ValueError(f"class_counts must be num_clients x num_classes, got shape {counts.shape}")
    m, K = counts.shape
    if class_names is not None and len(class_names) != K:
        raise ValueError(f"{len(class_names)} class names for {K} classes")
    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)

    width = min(max(4.0, 0.25 * m + 2.0), 24.0)
    height = min(max(3.0, 0.3 * K + 1.5), 24.0)
    fig = Figure(figsize=(width, height))
    ax = fig.add_subplot(1, 1, 1)
    cl, k = np.nonzero(counts > 0)
    vmax = counts.max() if counts.size else 0
    if cl.size and vmax > 0:
        area = counts[cl, k] / vmax * MAX_BUBBLE_AREA
        ax.scatter(cl, k, s=area, c="tab:red", alpha=0.6, edgecolors="none")
    ax.set_xlim(-0.7, m - 0.3)
    ax.set_ylim(-0.7, K - 0.3)
    xstep = max(1, int(np.ceil(m / 25)))
    ystep = max(1, int(np.ceil(K / 25)))
    ax.set_xticks(np.arange(0, m, xstep))
    ax.set_yticks(np.arange(0, K, ystep))
    if class_names is not None:
        ax.set_yticklabels([str(class_names[i]) for i in range(0, K, ystep)])
    ax.set_xlabel("Client ID")
    ax.set_ylabel("Class")
    ax.grid(True, linewidth=0.3, alpha=0.5)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(title)
    fig.tight_layout()

    png = out_stem.with_name(out_stem.name + ".png")
    pdf = out_stem.with_name(out_stem.name + ".pdf")
    fig.savefig(png, dpi=150, metadata={"Software": None})
    fig.savefig(pdf, metadata={"Creator": None, "Producer": None, "CreationDate": None})
    return [png, pdf]


def partition_summary(p) -> dict:
    """Plain-Python summary of a :class:`~osfl.partition.Partition` for JSON reports."""
    counts = np.asarray(p.class_counts, dtype=np.int64)
    sizes = counts.sum(axis=1)
    ncls = (counts > 0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(sizes[:, None] > 0, counts / np.maximum(sizes[:, None], 1), 0.0)
        ent = -np.where(frac > 0, frac * np.log2(np.where(frac > 0, frac, 1.0)), 0.0).sum(axis=1)
    assigned = int(sizes.sum())

    def stats(a) -> dict:
        a = np.asarray(a, dtype=np.float64)
        return {"min": int(a.min()), "max": int(a.max()), "mean": round(float(a.mean()), 4), "std": round(float(a.std()), 4)}

    return {
        "scheme": p.scheme,
        "params": dict(p.params),
        "seed": int(p.seed),
        "num_clients": int(counts.shape[0]),
        "num_classes": int(counts.shape[1]),
        "num_samples": int(p.num_samples),
        "assigned_samples": assigned,
        "unassigned_samples": int(p.num_samples) - assigned,
        "sizes": sizes.tolist(),
        "size_stats": stats(sizes),
        "classes_per_client": ncls.tolist(),
        "classes_per_client_stats": stats(ncls),
        "clients_per_class": (counts > 0).sum(axis=0).tolist(),
        "mean_label_entropy_bits": round(float(ent.mean()), 4),
        "class_counts": counts.tolist(),
    }
