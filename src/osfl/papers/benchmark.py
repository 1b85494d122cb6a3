"""The cross-paper benchmark's report (papers/benchmark/): every method of ``columns`` (and ``xcolumns``: the methods
that read a second upload of the same clients, e.g. MA-Echo's projection matrices) on the same partitions.

* ``table``: one row per method, one column per split: our final accuracy, mean ± std (n seeds), and its rank in
  the split (1 = best, ties share the mean rank); the last column is the average rank over the splits. A run that
  failed a regime guard is left out of its cell's numbers, and the cell says so.
* ``figure``: accuracy against the server's seconds (mean over seeds), one panel per split: what each method costs.
* ``nclients``: the same cells on the first split with N clients (the runs ``<run>-n<N>`` of stages nclients_*@; N
  = ``clients`` is the main grid's run): how each method holds up as the data is spread over more clients.
* ``orderings``: the methods' order in each split beside the order the papers print on Fashion-MNIST for the
  methods both have (FedHydra's Tables 1 and 2, FedMHO's Table IV), with Kendall's τ and the pairs in the other
  order. The papers' settings differ from the benchmark's (clients, models, profile): orderings, not numbers, are
  compared.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ..reporting.figures import _style, save_figure
from ..reporting.machines import describe as machines
from ..reporting.published import load_artifacts, load_published_table
from ..reporting.runs import ot_unmoved_note, read_runs, read_sweep, split_by_guards, write_index
from ..reporting.spread import format_spread, mean_std
from ..reporting.tables import write_table
from ..reporting import settings as settings_table
from ..reporting.grid import Grid

SPLIT_LABELS = {"2cc": "2 classes per client"}
# the papers' numbers for the benchmark's splits, per dataset: (paper, table, split -> (axis, label)), the label
# being the table's column (methods in rows) or row (methods in columns)
PAPER_ORDERS = {
    "fmnist": (
        ("FedHydra", "table01", {"dir0.5": ("column", "FashionMNIST alpha=0.5"),
                                 "dir0.3": ("column", "FashionMNIST alpha=0.3"),
                                 "dir0.1": ("column", "FashionMNIST alpha=0.1"),
                                 "dir0.01": ("column", "FashionMNIST alpha=0.01")}),
        ("FedHydra", "table02", {"2cc": ("column", "FashionMNIST")}),
        ("FedMHO", "table04", {"dir0.5": ("row", "Fashion, 1, 0.5"), "dir0.3": ("row", "Fashion, 2, 0.3"),
                               "dir0.1": ("row", "Fashion, 3, 0.1")})),
    "mnist": (
        ("FedHydra", "table01", {"dir0.5": ("column", "MNIST alpha=0.5"), "dir0.3": ("column", "MNIST alpha=0.3"),
                                 "dir0.1": ("column", "MNIST alpha=0.1"),
                                 "dir0.01": ("column", "MNIST alpha=0.01")}),
        ("FedHydra", "table02", {"2cc": ("column", "MNIST")}),
        ("FedMHO", "table04", {"dir0.5": ("row", "MNIST, 1, 0.5"), "dir0.3": ("row", "MNIST, 2, 0.3"),
                               "dir0.1": ("row", "MNIST, 3, 0.1")})),
}
METHOD_OF_LABEL = {"FedAvg": "fedavg", "OT": "ot", "FedDF": "feddf", "DENSE": "dense", "Co-Boosting": "coboost",
                   "FedHydra (ours)": "fedhydra", "FedHydra": "fedhydra", "F-DAFL": "fdafl", "F-ADI": "fadi"}


def split_label(split: str) -> str:
    return SPLIT_LABELS.get(split, split.replace("dir", "Dir(") + ")" if split.startswith("dir") else split)


def cells(runs: dict, columns) -> tuple[pd.DataFrame, dict, int]:
    """(the table of ``columns`` (the grid's entries: ``id``, ``method``, ...), {(split, id): {"mean", "std", "n", "seconds"}} of the runs that passed their guards, the number
    of runs left out for a failed guard)."""
    splits, rows, numbers, failed = [], {}, {}, 0
    for (ds, split), by_id in runs.items():
        col = f"{ds} {split_label(split)}"
        splits.append((col, split))
        for entry in columns:
            recs = by_id.get(entry["id"], [])
            good, note = split_by_guards(recs)
            failed += len(recs) - len(good)
            text = (format_spread([r["acc_final"] for r in good]) if good else "—") + note
            rows.setdefault(entry["id"], {})[col] = text if recs else "—"
            if good:
                mean, std, n = mean_std([r["acc_final"] for r in good])
                numbers[(split, entry["id"])] = {"mean": mean, "std": std, "n": n, "seeds": [r["seed"] for r in good],
                                                 "seconds": float(np.mean([r["server_seconds"] for r in good]))}
    df = pd.DataFrame.from_dict(rows, orient="index", columns=[c for c, _ in splits], dtype=object)
    ranks = {}
    for col, split in splits:
        means = pd.Series({i: numbers[(split, i)]["mean"] for i in df.index if (split, i) in numbers}, dtype=float)
        ranks[col] = means.rank(ascending=False, method="average")
        for i, r in ranks[col].items():
            df.loc[i, col] = f"{df.loc[i, col]} (#{r:g})"
    ranked = pd.DataFrame(ranks).reindex(df.index)
    # over every split or not at all: a mean over the splits a row ran in would set it beside rows ranked everywhere
    ran = ranked.notna().sum(axis=1)
    df["average rank"] = [f"{v:.2f}" if k == len(splits) else f"— ({k} of {len(splits)} splits)"
                          for v, k in zip(ranked.mean(axis=1, skipna=True), ran)]
    df.index.name = "method"
    return df, numbers, failed


def figure(numbers: dict, grid: Grid, out_stem: Path, dataset: str = "") -> list[Path]:
    """Accuracy (mean over seeds) against the server's seconds (log scale), one panel per split that ran."""
    import matplotlib.pyplot as plt

    splits = [s for s in grid.splits if any(k == s for k, _ in numbers)]
    with _style():
        fig, axes = plt.subplots(1, max(1, len(splits)), figsize=(4.2 * max(1, len(splits)), 3.6), squeeze=False)
        for ax, split in zip(axes[0], splits):
            pts = {i: v for (s, i), v in numbers.items() if s == split}
            for i, v in pts.items():
                x = max(v["seconds"], 1e-3)
                ax.errorbar(x, v["mean"], yerr=v["std"] if v["n"] > 1 else None, fmt="o", capsize=2)
                ax.annotate(i, (x, v["mean"]), textcoords="offset points", xytext=(3, 3), fontsize=7)
            ax.set_xscale("log")
            ax.set_title(split_label(split), fontsize=9)
            ax.set_xlabel("server seconds (mean over seeds)")
            ax.set_ylabel("final test accuracy (%)")
            if not pts:
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
        fig.suptitle(f"{dataset + ': ' if dataset else ''}accuracy against the server's cost (one CPU thread)",
                     fontsize=10)
        fig.tight_layout()
        written = save_figure(fig, out_stem)
    plt.close(fig)
    return written


def paper_order(papers_root: Path, paper: str, table: str, axis: str, label: str) -> dict[str, float]:
    """method id -> the paper's number in that column or row of its table (methods of ours only)."""
    art = {a.id: a for a in load_artifacts(papers_root / paper.lower() / "published")}[table]
    df = load_published_table(art)
    series = df[label] if axis == "column" else df.loc[label]
    return {METHOD_OF_LABEL[k]: float(v) for k, v in series.items() if k in METHOD_OF_LABEL and not math.isnan(v)}


def orderings(numbers: dict, grid: Grid, papers_root: Path, dataset: str = "fmnist") -> list[str]:
    """Per split and paper table: both orders over the methods both have, Kendall's τ and the pairs that differ
    (``numbers``: the runs on ``dataset``, whose columns of the papers' tables are compared)."""
    from scipy.stats import kendalltau

    lines = []
    prefix = "" if dataset == "fmnist" else f"{dataset} "
    for split in grid.splits:
        ours = {i: v["mean"] for (s, i), v in numbers.items() if s == split}
        if not ours:
            continue
        lines.append(f"{prefix}{split_label(split)}: ours " + " > ".join(sorted(ours, key=ours.get, reverse=True))
                     + ".")
        for paper, table, where in PAPER_ORDERS.get(dataset, ()):
            if split not in where:
                continue
            theirs = paper_order(papers_root, paper, table, *where[split])
            both = [m for m in theirs if m in ours]
            if len(both) < 3:
                continue
            tau = kendalltau([ours[m] for m in both], [theirs[m] for m in both]).statistic
            flips = [f"{a}/{b}" for k, a in enumerate(both) for b in both[k + 1:]
                     if (ours[a] - ours[b]) * (theirs[a] - theirs[b]) < 0]
            lines.append(f"  {paper} {table} ({where[split][1]}): " + " > ".join(sorted(both, key=theirs.get, reverse=True))
                         + f"; Kendall τ = {tau:.2f} over {len(both)} methods"
                         + (f"; in the other order: {', '.join(flips)}" if flips else "; the same order") + ".")
    return lines


def render(grid: Grid, results_root: Path, prepared_root: Path, out: Path, *, paper_results_root: Path | None = None,
           summary: Path | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    every = list(grid.columns) + grid.items("xcolumns")
    runs = read_runs(Path(results_root), grid, every)
    settings = settings_table.rows(grid, Path(results_root))
    ot_ids = {e["id"] for e in every if e.get("method") == "ot"}
    ot_note = ot_unmoved_note([(r.get("extras") or {}).get("units_moved_share") for by_id in runs.values()
                               for i in ot_ids for r in by_id.get(i, [])])
    written, status, discussion, counts = [], {}, [], {"cells_run": 0, "runs_failed_guard": 0}
    datasets = list(grid.datasets)
    for ds in datasets:  # one table and figure per dataset: "table" / "figure" for the first, "<stem>_<ds>" after
        table, fig = ("table", "figure") if ds == datasets[0] else (f"table_{ds}", f"figure_{ds}")
        df, numbers, failed = cells({k: v for k, v in runs.items() if k[0] == ds}, every)
        counts["cells_run"] += len(numbers)
        counts["runs_failed_guard"] += failed
        ran: dict[str, set] = {}
        for (split, _), v in numbers.items():
            ran.setdefault(split_label(split), set()).update(v["seeds"])
        seeds_ran = "; ".join(f"{k}: {', '.join(map(str, sorted(v)))}" for k, v in ran.items()) or "none"
        setting = (f"{grid.clients} clients of {grid.model} (clients and server), seeds "
                   f"{grid.value('seeds')} (run so far: {seeds_ran}); every method with its own paper's settings. "
                   "Server seconds: one thread of a 2-core CPU. Profile, reductions and guards: the settings "
                   "table." + (f" {ot_note}" if ot_note else ""))
        notes = f"{setting} {machines({k: v for k, v in runs.items() if k[0] == ds})}".strip()
        if ds == datasets[0]:
            head_notes = notes
        if numbers:
            written += write_table(df, out / table, f"Every one-shot method on the same {ds} partitions: final test "
                                   "accuracy (%), mean ± sample std (n seeds), rank in the split (#1 = best), "
                                   "average rank.", f"tab:benchmark-{ds}", notes=notes)
            written += figure(numbers, grid, out / fig, ds)
            status[table] = f"{len(numbers)} cells run" + (f"; {failed} run(s) failed a guard" if failed else "")
            status[fig] = "drawn from the runs"
        else:
            status[table] = status[fig] = "no run yet"
        discussion += orderings(numbers, grid, Path(results_root).resolve().parent.parent, ds)
    if not datasets:
        head_notes = ""
    sweep = {(ds, f"N={n}"): by_id for (ds, n), by_id in
             read_sweep(Path(results_root), grid, base=grid.clients).items()}
    n_df, n_numbers, n_failed = cells(sweep, grid.columns)
    if n_numbers:
        first = split_label((grid.first_split or ""))
        written += write_table(n_df, out / "nclients", f"The client number N on {first}: final test accuracy (%), "
                               "mean ± sample std (n seeds), rank at that N (#1 = best), average rank over N "
                               f"(N = {grid.clients}: the main table's runs).", "tab:benchmark-nclients",
                               notes=machines(sweep))
        status["nclients"] = f"{len(n_numbers)} cells run" + (f"; {n_failed} run(s) failed a guard" if n_failed else "")
    else:
        status["nclients"] = "no run yet"
    lines = ["# The cross-paper benchmark", "", "Generated by the `render` stage (`dvc repro` in papers/benchmark/). "
             + head_notes, "", "| artifact | state |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in status.items()]
    lines += ["", "## Orderings beside the papers'", "",
              "The papers ran other client counts, models and epochs: their orders, not their numbers, are compared."]
    lines += [""] + (discussion or ["No split has run yet."]) + [""]
    lines += [*settings_table.markdown(settings), ""] if settings else []
    (out / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "discussion.txt").write_text("\n".join(discussion) + "\n", encoding="utf-8")
    written += [out / "README.md", out / "discussion.txt", settings_table.write(out, settings)]
    written += write_index(out, status, [])
    if summary is not None:
        Path(summary).write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")
    return written
