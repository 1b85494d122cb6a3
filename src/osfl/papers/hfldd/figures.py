"""HFLDD's figures (Figs. 3, 5-7): accuracy and traffic curves, the clusterings."""
from __future__ import annotations

import math

import numpy as np

from ...reporting.spread import mean_std
from .tables import COST_METHODS, COST_METHODS_LABELS, DATASET_LABELS, METHODS, accuracies, model_params, to_target
from ...reporting.grid import Grid

def _mean_curve(records: list[dict]) -> tuple[list[int], list[float]] | None:
    curves = [accuracies(r) for r in records if r]
    if not curves:
        return None
    n = min(len(c) for c in curves)
    return list(range(1, n + 1)), [float(np.mean([c[i] for c in curves])) for i in range(n)]


def curves_panels(runs: dict) -> dict:
    """Fig. 3: per (dataset, C) the mean test-accuracy curve of each method over the seeds."""
    panels = {}
    for (ds, c), recs in runs.items():
        series = {}
        for m, label in METHODS.items():
            curve = _mean_curve([r["rounds"].get(m) for r in recs])
            if curve is not None:
                series[label + (" (per epoch)" if m == "cl" else "")] = curve
        panels[f"{DATASET_LABELS.get(ds, ds)}, C = {c}"] = (series, {}) if series else None
    return panels


def traffic_panels(grid: Grid, runs: dict, classes: int = 2) -> tuple[dict, dict]:
    """Fig. 6: per dataset, log10 MiB to first reach each target at C = ``classes`` (mean over seeds); and the
    numbers, ``{(dataset, method label, target): {seed: MiB}}``."""
    targets = [float(t) for t in grid.block("cost").get("curve_targets") or []]
    panels, numbers = {}, {}
    for ds in grid.datasets:
        recs = runs.get((ds, classes)) or []
        n = model_params((grid.model or "lenet5"), ds) if recs else 0
        series = {}
        for m, label in zip(COST_METHODS, COST_METHODS_LABELS):
            xs, ys = [], []
            for t in targets:
                got = {r["seed"]: to_target(r, m, t, n, (grid.clients or 100)) for r in recs}
                mib = {seed: g["mib"] for seed, g in got.items() if g is not None and g["mib"] is not None}
                if mib and len(mib) == len([g for g in got.values() if g is not None]):
                    xs.append(t)
                    ys.append(math.log10(mean_std(list(mib.values()))[0]))
                    numbers[(ds, label, t)] = mib
            if xs:
                series[label] = (xs, ys)
        panels[f"{DATASET_LABELS.get(ds, ds)}, C = {classes}"] = (series, {}) if series else None
    return panels, numbers


def clustering_panels(runs: dict, only_classes: int | None = None) -> dict:
    """The first seed's clustering per (dataset, C)."""
    out = {}
    for (ds, c), recs in runs.items():
        if only_classes is not None and c != only_classes:
            continue
        first = next((r["clustering"] for r in recs if r["clustering"]), None)
        out[f"{DATASET_LABELS.get(ds, ds)}, C = {c}: H = {first['H'] if first else '?'}"] = first
    return out
