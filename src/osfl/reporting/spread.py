"""Seeds and spread: one number over the runs of several seeds, as ``mean ± std (n=k)``.

A pipeline that repeats a run with other seeds names each repeat ``<run>-s<seed>`` beside the base run ``<run>``
(whose seed is the params' ``seed``). :func:`seed_runs` finds the runs of one name that exist, :func:`seed_values`
reads one value from each; a report then shows the mean, the SAMPLE standard deviation (ddof = 1) and n
(:func:`mean_std`, :func:`format_spread`) and compares means.

The rule for "within the spread" (:func:`within_spread`): two numbers, at least one of them a mean over more than one
seed, differ within the spread when the absolute difference of their means is at most the LARGER of their two sample
standard deviations (a single run counts as std 0). It is a description of seed noise, not a significance test.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["format_spread", "mean_std", "seed_runs", "seed_values", "spread_note", "values_of", "within_spread"]


def seed_runs(runs: Mapping[str, Any], name: str, seeds: Iterable = (), base_seed: Any = 0) -> dict[Any, Any]:
    """``{seed: run}`` of the runs of ``name`` that exist in ``runs``: the base run ``name`` (seed ``base_seed``)
    and ``<name>-s<seed>`` for each of ``seeds``, in that order."""
    out: dict[Any, Any] = {}
    if name in runs:
        out[base_seed] = runs[name]
    for s in seeds:
        if s != base_seed and f"{name}-s{s}" in runs:
            out[s] = runs[f"{name}-s{s}"]
    return out


def seed_values(runs: Mapping[str, Any], name: str, get: Callable[[Any], float | None], seeds: Iterable = (),
                base_seed: Any = 0, same: Callable[[Any], Any] | None = None,
                left_out: list | None = None) -> list[float]:
    """``get(run)`` over the seed runs of ``name`` (:func:`seed_runs`), leaving out the runs where it is None.

    With ``same``, only the runs for which ``same(run)`` equals that of the first run with a value count (seeds of
    one configuration; e.g. the reading a run recorded); the seeds of the others are appended to ``left_out``."""
    out: list[float] = []
    ref = None
    for seed, run in seed_runs(runs, name, seeds, base_seed).items():
        v = get(run)
        if v is None:
            continue
        if same is not None:
            if not out:
                ref = same(run)
            elif same(run) != ref:
                if left_out is not None:
                    left_out.append(seed)
                continue
        out.append(float(v))
    return out


def values_of(value) -> list[float]:
    """A number, or a sequence of numbers (one per seed), as a list; None and NaN are left out."""
    if value is None:
        return []
    seq = list(value) if isinstance(value, (list, tuple)) else [value]
    return [float(v) for v in seq if v is not None and not math.isnan(float(v))]


def mean_std(values) -> tuple[float, float, int]:
    """(mean, sample std with ddof = 1, n) of ``values`` (:func:`values_of`); std NaN for n < 2, mean NaN for n = 0."""
    v = values_of(values)
    if not v:
        return math.nan, math.nan, 0
    return statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else math.nan, len(v)


def format_spread(values, precision: int = 2) -> str:
    """``"58.65 ± 1.20 (n=3)"`` for more than one value, the plain number for one, ``"—"`` for none."""
    mean, std, n = mean_std(values)
    if n == 0:
        return "\u2014"
    if n == 1:
        return f"{mean:.{precision}f}"
    return f"{mean:.{precision}f} \u00b1 {std:.{precision}f} (n={n})"


def within_spread(a, b) -> tuple[float, float] | None:
    """(|mean a − mean b|, the larger sample std) when at least one of ``a``, ``b`` (numbers or per-seed lists) has
    more than one value and the difference is within the spread (module docstring); None otherwise."""
    ma, sa, na = mean_std(a)
    mb, sb, nb = mean_std(b)
    if max(na, nb) < 2 or min(na, nb) == 0:
        return None
    diff, std = abs(ma - mb), max(0.0 if math.isnan(sa) else sa, 0.0 if math.isnan(sb) else sb)
    return (diff, std) if diff <= std else None


def spread_note(a, b, label: str = "", precision: int = 2) -> str | None:
    """``"within the spread: 1.10 points, std 1.40, n = 3"`` (``"within the spread in <label>: ..."`` with a label)
    when :func:`within_spread` says so, else None; ``n = 3 and 1`` when the two numbers have different counts."""
    w = within_spread(a, b)
    if w is None:
        return None
    na, nb = mean_std(a)[2], mean_std(b)[2]
    n = f"{na}" if na == nb else f"{na} and {nb}"
    text = f"{w[0]:.{precision}f} points, std {w[1]:.{precision}f}, n = {n}"
    return f"within the spread{' in ' + label if label else ''}: {text}"
