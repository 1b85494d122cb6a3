"""OFedED's Tables 1 and 3 beside the paper's, and the sides of a comparison (a run's value, swing, guards)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ... import cpu_profile
from ...live import read_curve
from ...reporting.published import load_published_table
from ...reporting.runs import compare_rows, read_runs, run_name, split_by_guards, vs_paper
from ...reporting.spread import Side, clients_at_chance, curve_at_chance, format_spread, late_half, mean_std, swing
from ...reporting.tables import MARKDOWN_NA
from ...reporting.grid import Grid

#: our dataset names -> the paper's row labels (Table 1)
DATASET_LABELS = {"mnist": "MNIST", "cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "svhn": "SVHN",
                  "fmnist": "Fashion-MNIST", "digits": "Digits"}
ACC_CELLS = ("Each cell: ours, the last server epoch's top-1 test accuracy, mean ± sample std (n seeds) / the paper's "
             "mean ± std (our mean − the paper's); — where a side has no number. ")
#: Fig. 2's series (and Table 5's rows): the paper's method name -> the Table 1 run (the ``columns``/``s_columns``
#: id) that is it; a ``student`` column of that series is named <id>-<student tag> (DENSE: Co-Boosting's code's DENSE)
FIG2_RUNS = {"DENSE": "coboost-dense", "Co-Boosting": "coboost", "OFedED": "ofeded"}


def _panel_title(ds: str, split: str) -> str:
    return f"{DATASET_LABELS.get(ds, ds)}, α = {split.removeprefix('dir')}"


def _run_model(grid: Grid) -> str:
    """The clients' architecture as the runs used it (the params under their profile: cpu's replacement)."""
    return cpu_profile.apply(grid.raw())["model"]


def _entries(grid: Grid) -> list[dict]:
    return list(grid.columns) + grid.items("s_columns")


def table1(grid: Grid, runs: dict, art) -> tuple[pd.DataFrame, dict]:
    """Every Table 1 column we ran on every dataset and split, below the paper's rows."""
    paper, paper_std = load_published_table(art), load_published_table(art, "std")
    entries = [e for e in _entries(grid) if e.get("paper")]
    ours, numbers = compare_rows(runs, paper, paper_std, entries, lambda ds, e: DATASET_LABELS.get(ds, ds))
    rest = {label: {c: vs_paper([], paper.loc[label, c], paper_std.loc[label, c]) for c in paper.columns}
            for label in paper.index if label not in ours.index}
    both = pd.concat([pd.DataFrame.from_dict(rest, orient="index", columns=list(paper.columns), dtype=object), ours])
    both = both.loc[[i for i in paper.index if i in both.index] + [i for i in ours.index if i not in paper.index]]
    both.index.name = paper.index.name
    both.attrs = dict(ours.attrs)
    return both, numbers


def ablation_entries(grid: Grid) -> dict[str, dict]:
    """Table 3's row label (the paper's check marks, "Loss, Ens, Others") -> the run that is that row."""
    rows = {", , ": next((e for e in grid.columns if e.get("id") == FIG2_RUNS["Co-Boosting"]), None)}
    for e in grid.items("s_columns"):
        if e.get("parts"):
            rows[", ".join(p.strip() for p in str(e["parts"]).split(","))] = e
    return {k: v for k, v in rows.items() if v is not None}


def row_label(label: str) -> str:
    """The paper's check marks ``"✓, , ✓"`` as a row label ``"✓ · – · ✓"`` (– = the part is off)."""
    return " · ".join(p.strip() or "–" for p in label.split(","))


def table3(grid: Grid, results_root: Path, art) -> tuple[pd.DataFrame, int]:
    """The paper's eight rows: its CIFAR-10 / SVHN cells and ours per dataset and split (mean ± std over seeds)."""
    paper, paper_std = load_published_table(art), load_published_table(art, "std")
    by_row = ablation_entries(grid)
    runs = read_runs(results_root, grid, list(by_row.values()))
    cells, done = {}, 0
    for label in paper.index:
        row = {f"paper: {c}": vs_paper([], paper.loc[label, c], paper_std.loc[label, c]).split(" / ", 1)[1]
               for c in paper.columns}
        entry = by_row.get(label)
        for (ds, split), by_id in runs.items():
            vals = [r["acc_final"] for r in by_id.get(entry["id"], [])] if entry else []
            row[f"ours: {DATASET_LABELS.get(ds, ds)}, α = {split.removeprefix('dir')}"] = (
                format_spread(vals) if vals else MARKDOWN_NA)
            done += bool(vals)
        cells[row_label(label)] = row
    df = pd.DataFrame.from_dict(cells, orient="index", dtype=object)
    df = df[[c for c in df.columns if c.startswith("paper: ") or (df[c] != MARKDOWN_NA).any()]]  # splits that ran
    df.index.name = "Loss · Ens · Others"
    return df, done


def table3_sides(grid: Grid, results_root: Path) -> dict[tuple[str, str], dict[str, Side]]:
    """Table 3's rows as sides of a comparison, per (dataset, split) that ran any: row label (the paper's check
    marks, :func:`row_label`) -> the runs of that row that passed their regime guards, over seeds."""
    by_row = ablation_entries(grid)
    out = {}
    for (ds, split), by_id in read_runs(results_root, grid, list(by_row.values())).items():
        sides = {}
        for label, entry in by_row.items():
            good, _ = split_by_guards(by_id.get(entry["id"], []))
            if good:
                sides[row_label(label)] = run_side(results_root, ds, split, entry["id"], row_label(label), good)
        if sides:
            out[(ds, split)] = sides
    return out


def _classes(dataset: str) -> int:
    from ...data import get_spec

    return get_spec(dataset).num_classes


def _curve(live: Path, metric: str = "test_acc") -> list[float] | None:
    """A logged curve's values (``live``: a run's live folder), None where it was not logged."""
    return read_curve(live, metric)[1] if (live / "plots" / "metrics" / f"{metric}.tsv").is_file() else None


def _degenerate(clients_file: Path, ds: str, accs: list[float] | None) -> str | None:
    """Why a run's result cannot be judged, or None (spread rule 3): its clients at chance or all alike, its curve
    flat at chance."""
    clients = json.loads(clients_file.read_text()) if clients_file.is_file() else None
    reasons = (clients_at_chance(clients, _classes(ds)), curve_at_chance(accs, _classes(ds), epoch0=True))
    return "; ".join(r for r in reasons if r) or None


def run_side(results_root: Path, ds: str, split: str, entry_id: str, name: str, recs: list[dict],
             clients: str = "") -> Side:
    """One result over seeds as a side of a comparison: ``recs`` (:func:`osfl.reporting.runs.read_runs`' records of
    ``entry_id``, each with its ``seed``) -> seed -> final accuracy, each seed's swing (the last half of its logged
    test-accuracy curve) and degenerate reason (its clients: the run's, or ``<run><clients>``'s)."""
    values, swings, bad = {}, {}, {}
    for r in recs:
        seed = r["seed"]
        run_dir = Path(results_root) / run_name(ds, split, seed)
        accs = _curve(run_dir / "live" / entry_id)
        values[seed] = r["acc_final"]
        swings[seed] = swing(late_half(accs)) if accs else None
        bad[seed] = _degenerate(Path(results_root) / f"{run_name(ds, split, seed)}{clients}" / "clients.json", ds,
                                accs)
    return Side(name, values, swings, bad)


def _mean(side: Side) -> float:
    return mean_std(list(side.values.values()))[0]
