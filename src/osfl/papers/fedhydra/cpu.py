"""FedHydra's Fashion-MNIST cells of Tables 1 and 2 at the cpu profile, from the cross-paper benchmark's runs.

The benchmark (papers/benchmark/) runs FedHydra's own setting: its five clients of the 2-layer CNN with its local
training, NIID-Bench's Dirichlet split and its 2 classes per client, FedDF on the digits, and FedHydra's reductions
for every data-free method (its ``cpu`` block), at 3 seeds. FedHydra's six methods there are therefore FedHydra's
Table 1 and Table 2 cells at that profile: they are read from there (the shared loader,
:func:`osfl.reporting.runs.read_runs`) instead of being trained a second time. ``table01_cpu`` sets them beside the
paper's numbers, counts the cells within 3 and 10 points of it and judges the paper's headline claim (FedHydra best
in every column) by the spread rule over the seeds. A split the benchmark's params do not list is "not run".
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ... import cpu_profile
from ...config import load_params
from ...reporting.published import Artifact, load_published_table
from ...reporting.runs import read_runs, split_by_guards, vs_paper
from ...reporting.spread import NOT_RUN, Side, Verdict, above_all, every, mean_std
from ...reporting.tables import write_table
from .runs import METHODS

#: our split -> (the published table, its Fashion-MNIST column)
COLUMNS = {"dir0.5": ("table01", "FashionMNIST alpha=0.5"), "dir0.3": ("table01", "FashionMNIST alpha=0.3"),
           "dir0.1": ("table01", "FashionMNIST alpha=0.1"), "dir0.01": ("table01", "FashionMNIST alpha=0.01"),
           "2cc": ("table02", "FashionMNIST")}
HEADERS = {"dir0.5": "T1 α=0.5", "dir0.3": "T1 α=0.3", "dir0.1": "T1 α=0.1", "dir0.01": "T1 α=0.01",
           "2cc": "T2 2c/c"}
STEM = "table01_cpu"
BENCHMARK = "papers/benchmark"


def benchmark_runs(bench: Path) -> tuple[dict, dict]:
    """(the benchmark's params, ``{split: {method: [run record per seed]}}``) for FedHydra's methods on
    Fashion-MNIST (the benchmark's columns whose id is the bare method)."""
    params = load_params(bench / "params.yaml")
    entries = [c for c in params.get("columns") or [] if c["id"] in METHODS and c["id"] == c["method"]]
    runs = read_runs(bench / "results", params, entries, ["fmnist"])
    return params, {split: by_id for (_, split), by_id in runs.items()}


def cells(runs: dict, arts: list[Artifact]) -> tuple[pd.DataFrame, dict]:
    """The table (a row per method, a column per Fashion-MNIST split of Tables 1-2: ours mean ± std (n) / the
    paper's (our mean − the paper's); runs that failed a regime guard are left out and named) and
    ``{(split, method): {"values": {seed: final accuracy}, "paper", "mean"}}`` of the runs kept."""
    paper = {a.id: load_published_table(a) for a in arts if a.id in ("table01", "table02")}
    rows, numbers = {}, {}
    for split, (table, col) in COLUMNS.items():
        for m, label in METHODS.items():
            p = float(paper[table].loc[label, col]) if table in paper else float("nan")
            good, note = split_by_guards(runs.get(split, {}).get(m, []))
            vals = [r["acc_final"] for r in good]
            rows.setdefault(label, {})[HEADERS[split]] = vs_paper(vals, p) + note
            if vals:
                numbers[(split, m)] = {"values": {r["seed"]: r["acc_final"] for r in good}, "paper": p,
                                       "mean": mean_std(vals)[0]}
    df = pd.DataFrame.from_dict(rows, orient="index", columns=list(HEADERS.values()), dtype=object)
    df.index.name = "method"
    return df, numbers


def gap_metrics(numbers: dict) -> dict:
    """The cells run, their mean gap to the paper (our mean − the paper's, over the cells the paper printed) and how
    many lie within 3 and within 10 points of it."""
    gaps = [v["mean"] - v["paper"] for v in numbers.values() if v["paper"] == v["paper"]]
    return {"cells": len(numbers), "mean_gap": round(sum(gaps) / len(gaps), 4) if gaps else None,
            "within_3": sum(abs(g) <= 3 for g in gaps), "within_10": sum(abs(g) <= 10 for g in gaps)}


def best_claim(numbers: dict) -> tuple[str, Verdict]:
    """"FedHydra is the best method in every Fashion-MNIST column" (§4.2), per column by the spread rule over the
    common seeds against each rival that ran there."""
    claim = "FedHydra beats every baseline in each Fashion-MNIST column of Tables 1-2 (cpu profile, benchmark runs)"
    parts = []
    for split in COLUMNS:
        if (split, "fedhydra") not in numbers:
            continue
        side = {m: Side(METHODS[m], numbers[(split, m)]["values"]) for m in METHODS if (split, m) in numbers}
        rivals = [s for m, s in side.items() if m != "fedhydra"]
        parts.append((HEADERS[split], above_all(side["fedhydra"], rivals)))
    return claim, every(parts) if parts else Verdict(NOT_RUN, "no Fashion-MNIST column of the benchmark has run")


def cpu_table(bench: Path, arts: list[Artifact], out: Path) -> tuple[list[Path], str, list[dict], dict]:
    """Write ``table01_cpu`` (.tex, .md) from the benchmark's runs under ``bench``; returns (files, the README's
    state of it, the claim records, its summary metrics: cells, mean gap to the paper, cells within 3 and 10
    points). Nothing is written where the benchmark has not run."""
    if not (bench / "params.yaml").is_file():
        return [], "", [], {}
    params, runs = benchmark_runs(bench)
    df, numbers = cells(runs, arts)
    if not numbers:
        return [], "", [], {}
    seeds = sorted({s for v in numbers.values() for s in v["values"]})
    metrics = gap_metrics(numbers)
    state = (f"{len(numbers)} of {len(METHODS) * len(COLUMNS)} Fashion-MNIST cells from {BENCHMARK}'s runs (seeds "
             f"{', '.join(map(str, seeds))}): {metrics['within_3']} within 3 points of the paper, "
             f"{metrics['within_10']} within 10")
    caption = ("Tables 1 and 2, Fashion-MNIST columns, at the cpu profile: ours (final accuracy, mean ± sample std "
               "over n seeds) / the paper's (our mean − the paper's). The runs are the cross-paper benchmark's "
               f"({BENCHMARK}/, FedHydra's setting: 5 clients of its 2-layer CNN, FedDF on the digits), not trained "
               "again here.")
    notes = f"{state}. {cpu_profile.describe(params)}"
    files = write_table(df, out / STEM, caption, f"tab:{STEM}", notes=notes)
    claim, verdict = best_claim(numbers)
    return files, state, [verdict.record(artifact=STEM, claim=claim)], metrics
