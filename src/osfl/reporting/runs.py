"""The runs of a paper pipeline and their cells beside the paper's (shared by the paper modules).

* ``run_name``: a run's folder name, ``<dataset>-<split>-s<seed>`` (:mod:`.naming`, the one scheme).
* ``read_grid``: the one run loader: a record per run of the grid, read by a paper's own reader; ``read_found``
  the same over the run folders found on disk.
* ``read_runs``: the run records ``results/<run>/runs/<id>.json`` of a list of entries (columns, variants) over the
  params file's datasets, splits and seeds.
* ``read_sweep``: the same for the runs ``<run>-n<N>`` of a client-number sweep found on disk, by N.
* ``vs_paper`` (from :mod:`.tables`): one cell, ``ours mean ± std (n) / paper ± std (our mean − the paper's)``.
* ``compare_rows``: rows of the runs' datasets and splits, each entry in the paper's column it names.
* ``write_status``: a paper's README.md, each artifact's state and the claim verdicts (:class:`.spread.Verdict`).
* ``write_index``: the same as data, for the compiled report (osfl.reporting.book): ``status.json`` (artifact id ->
  its state) and ``claims.json`` (one entry per claim: artifact where known, claim, verdict, evidence, reason).
* ``ot_unmoved_note``: how many OT fusion runs moved no hidden unit (their model is FedAvg's average).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .grid import Grid
from .naming import run_name
from .spread import HOLDS, VERDICT_RULE, Side, count_verdicts, mean_std, regime_failure, verdict_label
from .settings import markdown as settings_markdown, write as write_settings
from .tables import vs_paper


def read_grid(results_root: Path, grid: Grid, read: Callable[[Path], dict | None], *,
              datasets: list[str] | None = None, splits: list[str] | None = None,
              suffix: str = "") -> dict[tuple[str, str], list[dict]]:
    """The one run loader of the reports: ``{(dataset, split): [record per seed]}`` over the grid's runs
    (:meth:`.grid.Grid.runs`; ``datasets``/``splits`` narrow or replace the params' own), where the record is
    ``read(results_root / "<run><suffix>")`` with its ``seed`` added; a run ``read`` gives None for is left out."""
    out: dict = {}
    for ds, split, seed in grid.runs(datasets, splits):
        recs = out.setdefault((ds, split), [])
        if (rec := read(Path(results_root) / f"{run_name(ds, split, seed)}{suffix}")) is not None:
            recs.append({**rec, "seed": seed})
    return out


def run_folders(results_root: Path) -> list[Path]:
    """The run folders ``<dataset>-...`` under ``results_root``, in name order."""
    return sorted(p for p in Path(results_root).glob("*-*") if p.is_dir())


def read_found(results_root: Path, read: Callable[[Path], object | None]) -> dict[str, object]:
    """The same loader for a pipeline whose runs are found on disk rather than listed in a grid (FedHydra's
    ``<dataset>-<split>[-s<seed>]`` folders): ``{run folder name: read(folder)}`` for every folder
    ``<dataset>-...`` under ``results_root``, in name order; a folder ``read`` gives None for is left out."""
    out: dict[str, object] = {}
    for d in run_folders(results_root):
        if (rec := read(d)) is not None:
            out[d.name] = rec
    return out


def read_runs(results_root: Path, grid: Grid, entries: list[dict] | None = None,
              datasets: list[str] | None = None, *, suffix: str = "",
              folder: str = "runs") -> dict[tuple[str, str], dict[str, list[dict]]]:
    """``{(dataset, split): {entry id: [run record per seed that ran]}}`` for ``entries`` (default: the grid's
    ``columns``) on ``datasets`` (default: ``datasets``), every listed split and seed: the records
    ``results/<run><suffix>/<folder>/<id>.json`` (``suffix`` ``-n<N>``: Table VII's runs; ``folder`` ``fid``: the
    FID records, one per part), read by :func:`read_grid`."""
    ids = [col["id"] for col in (grid.columns if entries is None else entries)]

    def read(run: Path) -> dict:
        return {i: json.loads(f.read_text()) for i in ids if (f := run / folder / f"{i}.json").is_file()}

    out: dict = {}
    for key, recs in read_grid(results_root, grid, read, datasets=datasets, suffix=suffix).items():
        cols = out.setdefault(key, {})
        for rec in recs:
            seed = rec.pop("seed")
            for i, r in rec.items():
                cols.setdefault(i, []).append({**r, "seed": seed})
    return out


def read_sweep(results_root: Path, grid: Grid, entries: list[dict] | None = None,
               datasets: list[str] | None = None, *, base: int | None = None,
               key: str = "n") -> dict[tuple[str, int], dict[str, list[dict]]]:
    """``{(dataset, N): {entry id: [run record per seed that ran]}}`` on the first split of ``splits``: the runs
    ``<run>-<key><N>`` found under ``results_root`` (their N are in the stage matrix, not in the params file), N
    ascending, and the main grid's runs as N = ``base`` (its ``clients``) when given; a dataset without a sweep run
    is left out."""
    splits = list(grid.splits)
    if not splits:
        return {}
    one = grid.narrowed(splits[:1])
    out: dict = {}
    for ds in grid.datasets if datasets is None else datasets:
        pat = re.compile(rf"{re.escape(ds)}-{re.escape(str(splits[0]))}-s[^/]+-{re.escape(key)}(\d+)")
        found = {int(m.group(1)) for p in Path(results_root).glob(f"{ds}-*") if (m := pat.fullmatch(p.name))}
        if not found:
            continue
        ns = sorted(found | ({int(base)} if base is not None else set()))
        for n in ns:
            suffix = "" if base is not None and n == int(base) else f"-{key}{n}"
            out[(ds, n)] = read_runs(results_root, one, entries, [ds], suffix=suffix)[(ds, splits[0])]
    return out


def split_by_guards(recs: list[dict], num_classes: int = 10) -> tuple[list[dict], str]:
    """(the run records that may feed a verdict, a cell's note naming the others as
    `` [failed its regime guard: s<seed> <final accuracy>, ...]``, or "" when none failed): a record fails when a
    recorded guard failed or its final accuracy is below the guard's floor (:func:`.spread.regime_failure`); a run
    at chance where no floor is recorded keeps its cell, and the verdicts' own check keeps it out of them."""
    good = [r for r in recs if regime_failure(r, num_classes, chance=False) is None]
    bad = [r for r in recs if regime_failure(r, num_classes, chance=False) is not None]
    note = " [failed its regime guard: " + ", ".join(f"s{r['seed']} {r['acc_final']:.2f}" for r in bad) + "]"
    return good, note if bad else ""


def gap_metrics(numbers: dict) -> dict:
    """The cells run (``numbers``: cell -> ``{"mean", "paper", ...}``), their mean gap to the paper (our mean − the
    paper's, over the cells the paper printed) and how many lie within 3 and within 10 points of it: every paper's
    summary counts them so."""
    gaps = [float(v["mean"]) - float(v["paper"]) for v in numbers.values() if not math.isnan(float(v["paper"]))]
    return {"cells": len(numbers), "mean_gap": round(sum(gaps) / len(gaps), 4) if gaps else None,
            "within_3": sum(abs(g) <= 3 for g in gaps), "within_10": sum(abs(g) <= 10 for g in gaps),
            "beside_paper": len(gaps)}


def gap_text(numbers: dict) -> str:
    """``"12 of 21 cells beside the paper: 3 within 3 points, 9 within 10, 9 worse"`` (:func:`gap_metrics`)."""
    m = gap_metrics(numbers)
    if not m["beside_paper"]:
        return f"{m['cells']} cells, none beside a paper number"
    return (f"{m['beside_paper']} of {m['cells']} cells beside the paper: {m['within_3']} within 3 points, "
            f"{m['within_10']} within 10, {m['beside_paper'] - m['within_10']} worse (mean gap {m['mean_gap']:+.2f})")


def cell(artifact: str, dataset: str, row: str, column: str, values, paper: float, profile: str) -> dict | None:
    """One cell of ours beside a paper number, as ``cells.json`` holds it for the report's ours-against-the-paper
    figure (osfl.reporting.book): our mean, sample std and n over the seeds that passed their guards, and the
    paper's number; None where either side has no number."""
    p = float(paper)
    mean, std, n = mean_std(values)
    if n == 0 or math.isnan(p):
        return None
    return {"artifact": artifact, "dataset": dataset, "row": row, "column": column, "profile": profile,
            "ours": round(mean, 4), "std": None if math.isnan(std) else round(std, 4), "n": n, "paper": p}


def cells_of(artifact: str, numbers: dict, profile: str) -> list[dict | None]:
    """The cells of a :func:`compare_rows` table (its ``numbers``: (row, paper's column) -> values, paper, run)."""
    return [cell(artifact, v["run"][0], str(row), str(col), list(v["values"].values()), v["paper"], profile)
            for (row, col), v in numbers.items()]


def write_cells(out: Path, cells: list[dict | None]) -> Path:
    """``out``/cells.json: every cell of ours beside a paper number (:func:`cell`; Nones left out), in a stable
    order."""
    kept = sorted((c for c in cells if c), key=lambda c: (c["artifact"], c["dataset"], c["row"], c["column"]))
    path = Path(out) / "cells.json"
    path.write_text(json.dumps(kept, indent=1) + "\n", encoding="utf-8")
    return path


def compare_rows(runs: dict, paper: pd.DataFrame, paper_std: pd.DataFrame, entries: list[dict],
                 prefix: Callable[[str, dict], str]) -> tuple[pd.DataFrame, dict]:
    """Rows of the runs' datasets and splits: ``ours mean ± std (n) / paper ± std (Δ mean)``, and the cells' numbers.

    An entry (a column or variant: ``id``, ``paper`` = the paper's column) lands in the paper's row whose leading
    fields are ``prefix(dataset, entry)`` (the dataset, λ₁/λ₂ or ρ) and whose last field is the split's α. A run
    whose regime guards failed, or whose final accuracy fell back to chance (:func:`split_by_guards`), is left out of the cell's numbers, and the cell says
    so: it feeds no verdict (the table's ``attrs["failed_guard"]`` counts those cells)."""
    rows, numbers, failed = {}, {}, {}
    for (ds, split), by_id in runs.items():
        alpha = split.removeprefix("dir")
        for entry in entries:
            recs = by_id.get(entry["id"], [])
            lead = str(prefix(ds, entry))
            label = next((i for i in paper.index if i.startswith(lead + ", ") and i.split(", ")[-1] == alpha), None)
            key = label or f"{lead}, {split}"
            row = rows.setdefault(key, {c: None for c in paper.columns})
            pcol = entry.get("paper")
            if pcol not in paper.columns or not recs:
                continue
            recs, note = split_by_guards(recs)
            if note:
                failed[(key, pcol)] = note
            if not recs:
                continue
            vals = [r["acc_final"] for r in recs]
            p = paper.loc[label, pcol] if label is not None else float("nan")
            mean, std, n = mean_std(vals)
            row[pcol] = vals
            numbers[(key, pcol)] = {"mean": mean, "std": std, "n": n, "paper": p, "seeds": [r["seed"] for r in recs],
                                    "values": {r["seed"]: r["acc_final"] for r in recs}, "run": (ds, split),
                                    "id": entry["id"]}
    cells = {}
    for key, row in rows.items():
        cells[key] = {}
        for pcol, vals in row.items():
            known = key in paper.index
            cells[key][pcol] = vs_paper(vals or [], paper.loc[key, pcol] if known else float("nan"),
                                        paper_std.loc[key, pcol] if known else float("nan")) + failed.get((key, pcol), "")
    df = pd.DataFrame.from_dict(cells, orient="index", columns=list(paper.columns), dtype=object)
    df.index.name = paper.index.name
    df.attrs["failed_guard"] = len(failed)  # cells with a run left out for a failed guard
    return df, numbers


def ot_unmoved_note(shares) -> str:
    """A caption's note on OT fusion from its runs' ``extras.units_moved_share`` (client index -> the share of hidden
    units its alignment moved; None where a run does not record it): in how many runs no unit moved, i.e. every
    client kept the shared initial model's neuron order and OT's model is FedAvg's average. "" when none records it."""
    recorded = [s for s in shares if s is not None]
    if not recorded:
        return ""
    still = sum(1 for s in recorded if not any(s.values()))
    return (f"OT: in {still} of {len(recorded)} runs that record it the alignment moved no hidden unit (every client "
            "kept the shared initial model's neuron order), so OT's model there is FedAvg's average.")


def claim_record(item) -> dict:
    """A claim as claims.json holds it: a record as is, a ``(claim, Verdict)`` pair as its record."""
    if isinstance(item, dict):
        return item
    claim, v = item
    return v.record(artifact="", claim=claim)


def claim_line(item) -> str:
    """A claim's line in a README: ``- [artifact] claim: verdict (evidence)``."""
    if not isinstance(item, dict):
        claim, v = item
        return f"- {claim}: {v.text()}"
    where = f"{item['artifact']}: " if item.get("artifact") else ""
    evidence = item.get("evidence")
    return (f"- {where}{item['claim']}: **{verdict_label(item['verdict'], item.get('reason'))}**"
            + (f" ({evidence})" if evidence and evidence != "-" else ""))


def write_status(out: Path, title: str, paper_dir: str, arts, status: dict[str, str], claims_of: str,
                 verdicts: list, metrics: dict, summary: Path | None, *, intro: Sequence[str] = (),
                 extra_rows: Sequence[tuple[str, str]] = (), sections: Sequence[str] = (),
                 claims_note: str = "", footer: Sequence[str] = (),
                 settings: Sequence[tuple[str, str]] = ()) -> Path:
    """A paper's reports/README.md, the one README writer of the papers: each artifact's state (``extra_rows``:
    ``(id, label)`` of results of ours that no paper artifact names, their state in ``status``), the paper's own
    ``sections``, then the claim verdicts on ``claims_of`` (e.g. "Table 1"): ``(claim, Verdict)`` pairs or claims.json
    records (:func:`claim_record`), after ``claims_note`` and the rule they follow; writes status.json and
    claims.json (:func:`write_index`), with ``settings`` (:func:`.settings.rows`) a "Settings" section and
    settings.json, adds the verdict counts to ``metrics`` (``checked``, ``holding`` and one count
    per category, :func:`.spread.count_verdicts`) and, with ``summary``, writes them there. Returns the README's
    path."""
    lines = [f"# {title}: our numbers beside the paper's", "",
             f"Generated by the `render` stage (`dvc repro` in {paper_dir}/); the paper's numbers are in "
             "`published/`, transcribed as printed.", ""]
    lines += [*intro, ""] if intro else []
    lines += ["| artifact | paper's label | state |", "|---|---|---|"]
    status = reconciled(out, status)
    lines += [f"| `{a.id}` | {a.label} | {status[a.id]} |" for a in arts]
    lines += [f"| `{key}` | {label} | {status[key]} |" for key, label in extra_rows if key in status]
    lines += ["", *sections] if sections else []
    if settings:
        lines += ["", *settings_markdown(list(settings))]
        write_settings(out, list(settings))
    lines += ["", f"## Claims ({claims_of} rows we ran)", "", (claims_note + " " if claims_note else "") + VERDICT_RULE,
              ""]
    lines += [claim_line(v) for v in verdicts] or [f"- no {claims_of} row has run yet"]
    lines += ["", *footer] if footer else []
    records = [claim_record(v) for v in verdicts]
    write_index(out, status, records)
    metrics["claims"] = {"checked": len(records), "holding": sum(r["verdict"] == HOLDS for r in records),
                         **count_verdicts(r["verdict"] for r in records)}
    readme = out / "README.md"
    readme.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    if summary is not None:
        Path(summary).write_text(json.dumps(metrics, indent=1, sort_keys=True) + "\n")
    return readme


#: A state that starts so has no drawing or table of ours (its file, if any, is a placeholder): the report shows the
#: state only.
NOT_DRAWN = ("not run", "no run", "not drawn", "schematic", "a schematic", "a conceptual", "paper only")


def drawn(out: Path, key: str) -> bool:
    """Whether the render wrote a figure or table ``key`` under ``out`` (``<key>.png``/``.pdf``/``.tex``/``.md``)."""
    return any((Path(out) / f"{key}{ext}").is_file() for ext in (".png", ".pdf", ".tex", ".md"))


def reconciled(out: Path, status: dict[str, str]) -> dict[str, str]:
    """``status`` with "not drawn: " before each state that claims a drawing (not :data:`NOT_DRAWN`) whose file the
    render did not write under ``out`` (every panel's runs missing)."""
    return {k: v if drawn(out, k) or str(v).startswith(NOT_DRAWN) else f"not drawn: {v}" for k, v in status.items()}


def write_index(out: Path, status: dict[str, str], claims: list[dict]) -> list[Path]:
    """``out``/status.json (artifact id -> its state, as the README's table says it) and ``out``/claims.json (the
    claims' records, :meth:`.spread.Verdict.record`): what the compiled report reads of a paper. A state that claims
    a drawing (not :data:`NOT_DRAWN`) whose file the render did not write (every panel's runs missing) reads
    "not drawn: <state>"."""
    status = reconciled(out, status)
    paths = [Path(out) / "status.json", Path(out) / "claims.json"]
    paths[0].write_text(json.dumps(status, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    paths[1].write_text(json.dumps(claims, indent=2) + "\n", encoding="utf-8")
    return paths


def mean_side(sides: list[Side], name: str) -> Side:
    """The mean of several sides (rows of one column, the settings of one series) as one :class:`.spread.Side`:
    per seed that every side ran, the mean value; its swing the sides' mean swing at that seed (where every side
    has one); degenerate where any side is, with their reasons."""
    seeds = [s for s in sides[0].values if all(s in sd.values for sd in sides)]
    values = {s: float(np.mean([sd.values[s] for sd in sides])) for s in seeds}
    swings = {s: float(np.mean([sd.swings[s] for sd in sides])) if all(sd.swings.get(s) is not None for sd in sides)
              else None for s in seeds}
    bad = {s: "; ".join(dict.fromkeys(r for sd in sides if (r := sd.degenerate.get(s)))) or None for s in seeds}
    return Side(name, values, swings, bad)
