"""OFedED's Table 2 and figures (Figs. 2(a)-(c), 3): curves, bars and panels from the runs."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from ...live import read_curve
from ...reporting.published import load_published_table
from ...reporting.runs import mean_side, read_runs, run_name, vs_paper
from ...reporting.spread import Side, Verdict, above_all, compare, format_spread, late_half, swing
from ...reporting.tables import MARKDOWN_NA
from .tables import ACC_CELLS, FIG2_RUNS, _curve, _degenerate, _entries, _mean, _panel_title, _run_model, run_side
from ...reporting.grid import Grid

def table2(grid: Grid, results_root: Path, art) -> tuple[pd.DataFrame, int]:
    """Table 2: the paper's rows (CIFAR-10, by α), then ours per dataset and split with ResNet-18 clients."""
    paper, paper_std = load_published_table(art), load_published_table(art, "std")
    resnet = grid.block("resnet")
    entries = [{"id": e["method"], "paper": e["paper"]}
               for e in list(resnet.get("columns") or []) + list(resnet.get("s_columns") or [])]
    runs = read_runs(Path(results_root), grid, entries, suffix=f"-{resnet.get('model', 'resnet18')}")
    rows = {f"paper: CIFAR-10, α = {a}": {c: vs_paper([], paper.loc[a, c], paper_std.loc[a, c]).split(" / ", 1)[1]
                                           for c in paper.columns} for a in paper.index}
    done = 0
    for (ds, split), by_id in runs.items():
        alpha = split.removeprefix("dir")
        same = ds == "cifar10" and alpha in paper.index
        row = {}
        for e in entries:
            vals = [r["acc_final"] for r in by_id.get(e["id"], [])]
            done += bool(vals)
            if same:
                row[e["paper"]] = vs_paper(vals, paper.loc[alpha, e["paper"]], paper_std.loc[alpha, e["paper"]])
            else:
                row[e["paper"]] = format_spread(vals) if vals else MARKDOWN_NA
        rows[f"ours: {_panel_title(ds, split)}"] = row
    df = pd.DataFrame.from_dict(rows, orient="index", columns=list(paper.columns), dtype=object).fillna(MARKDOWN_NA)
    df.index.name = "Run"
    return df, done


def variant_points(grid: Grid, results_root: Path, figure: str) -> dict:
    """Per dataset at ``figure_split`` where a variant ran: {"series": {series: {x: Side}}} of the ``variants`` drawn
    in ``figure`` ("2b" or "3"), each a side over the seeds that ran (:func:`run_side`), and "reference": the main
    OFedED run's side (None where it did not run), and "ipc": the main runs' IPC."""
    split = grid.value("figure_split")
    chosen = [v for v in grid.items("variants") if str(v.get("figure")) == figure]
    main = next((e for e in grid.items("s_columns") if e.get("method") == "ofeded" and not e.get("tag")), None)
    entries = [{"id": f"ofeded-{v['id']}"} for v in chosen] + ([{"id": main["id"]}] if main else [])
    runs = read_runs(Path(results_root), grid.narrowed([split]), entries)
    out = {}
    for (ds, _), by_id in runs.items():
        series: dict[str, dict[float, Side]] = {}
        for v in chosen:
            recs = by_id.get(f"ofeded-{v['id']}", [])
            if recs:
                series.setdefault(str(v["series"]), {})[float(v["x"])] = run_side(
                    results_root, ds, split, f"ofeded-{v['id']}", f"{v['series']} {v['x']}", recs,
                    str(v.get("clients") or ""))
        if not series:  # no variant of this dataset ran (MNIST's do not run: dvc.yaml's train_dp note)
            continue
        recs = by_id.get(main["id"], []) if main else []
        ipcs = {json.loads(f.read_text())["settings"]["ipc"] for seed in grid.seeds
                if (f := Path(results_root) / run_name(ds, split, seed) / "distilled.json").is_file()}
        out[ds] = {"series": series,
                   "reference": run_side(results_root, ds, split, main["id"], "no noise", recs) if recs else None,
                   "ipc": float(ipcs.pop()) if len(ipcs) == 1 else None}  # the main runs' IPC (as they ran)
    return out


def ipc_panels(grid: Grid, results_root: Path) -> tuple[dict, list[tuple[str, Verdict]]]:
    """Fig. 2(b): OFedED's accuracy against IPC (the variants, and the main run at the IPC its distilled.json
    records); the claim that IPC = 2 is best (above every other IPC, by the spread rule)."""
    panels, verdicts = {}, []
    for ds, pts in variant_points(grid, results_root, "2b").items():
        curve = dict(pts["series"].get("OFedED", {}))
        if pts["reference"] is not None and pts["ipc"] is not None:
            curve[pts["ipc"]] = pts["reference"]
        curve = {x: replace(sd, name=f"IPC {x:g}") for x, sd in curve.items()}
        title = _panel_title(ds, grid.value("figure_split"))
        if len(curve) < 2:
            panels[title] = None
            continue
        xs = sorted(curve)
        panels[title] = ({"OFedED": (xs, [_mean(curve[x]) for x in xs])}, {})
        if 2.0 in curve:
            v = above_all(curve[2.0], [curve[x] for x in xs if x != 2.0])
            verdicts.append((f"{title}: IPC = 2 gives OFedED's best accuracy (Fig. 2(b))",
                             replace(v, evidence=f"{len(xs)} IPC values; {v.evidence}")))
    return panels, verdicts


def dp_panels(grid: Grid, results_root: Path) -> tuple[dict, list[tuple[str, Verdict]]]:
    """Fig. 3: OFedED's accuracy against σ per noise series, the no-noise run as a reference line; the claims that
    every setting degrades and gradient noise (and both together) cost more than image noise, by the spread rule
    (a series over σ: per seed, its mean over the σ values that seed ran at all of)."""
    panels, verdicts = {}, []
    for ds, pts in variant_points(grid, results_root, "3").items():
        title = _panel_title(ds, grid.value("figure_split"))
        sides = {name: {x: replace(sd, name=f"{name} σ={x:g}") for x, sd in c.items()}
                 for name, c in pts["series"].items()}
        if not sides:
            panels[title] = None
            continue
        series = {name: (sorted(c), [_mean(c[x]) for x in sorted(c)]) for name, c in sides.items()}
        ref = pts["reference"]
        panels[title] = (series, {} if ref is None else {"no noise": _mean(ref)})
        if ref is not None:
            verdicts.append((f"{title}: every noise setting lowers accuracy (Fig. 3)",
                             above_all(ref, [sd for c in sides.values() for sd in c.values()])))
        over = {name: mean_side(list(c.values()), f"{name} (mean over σ)") for name, c in sides.items()}
        if "images" in over and "gradients" in over:
            verdicts.append((f"{title}: noise on the gradients costs more than noise on the images (Fig. 3)",
                             compare(over["images"], over["gradients"])))
        if "both" in over and len(over) > 1:
            verdicts.append((f"{title}: noise on both gives the largest drop (Fig. 3)",
                             above_all(over["both"], [sd for n, sd in over.items() if n != "both"], below=True)))
    return panels, verdicts


CELL_NOTES = {
    "table2": ACC_CELLS + "Ours: ResNet-18 clients and server on the run's partition; Local = the clients' "
              "uniform ensemble, evaluated directly. The paper's rows are CIFAR-10; Δ only where we ran the same "
              "dataset. ",
    "table3": "Rows: the parts on (✓) as the paper's check marks (rows 2–7's positions reconstructed, SPEC §5); "
              "row 1 is our Co-Boosting run, row 8 our OFedED run. The paper: CIFAR-10 and SVHN at α = 0.3, mean ± "
              "std; ours: mean ± sample std (n seeds) of the last epoch's accuracy. ",
}

DP_NOTE = ("Noise on the images: each client adds N(0, σ²) to its distilled images once before the upload, σ in the "
           "mean = std = 0.5 normalised pixel space (σ/2 in [0, 1] pixels). Noise on the gradients: the clients train "
           "with DP-SGD (per-sample gradients clipped to τ = 1, Gaussian noise with noise multiplier σ, i.e. standard "
           "deviation στ on the summed clipped gradients; SPEC §2.8 [P]); each client's ε at δ = 1e-5 is in "
           "results/<run>-dpg<σ>/clients.json. Both: the DP-SGD clients and the noisy images. ")

SCHEMATICS = {"fig1": "a schematic (the framework): no data"}


def _series_of(run_id: str) -> str | None:
    """The Fig. 2 series a run belongs to: its own id, or the longest series id it extends (``<id>-<tag>``)."""
    hits = [(len(i), lbl) for lbl, i in FIG2_RUNS.items() if run_id == i or run_id.startswith(i + "-")]
    return max(hits)[1] if hits else None




def _teacher_runs(grid: Grid, results_root: Path) -> dict:
    """Per dataset at ``figure_split``: {method label: {seed: ensemble test accuracies per server epoch}} of the
    ``--track-teacher`` runs (Fig. 2(a))."""
    split, out = grid.value("figure_split"), {}
    for ds in grid.datasets:
        by: dict[str, dict] = {}
        for label, run_id in FIG2_RUNS.items():
            entry = next((e for e in _entries(grid) if e.get("id") == run_id), None)
            for seed in grid.seeds:
                live = Path(results_root) / run_name(ds, split, seed) / "live" / (entry or {}).get("id", "?")
                curve = _curve(live, "train/teacher_acc")
                if curve:
                    by.setdefault(label, {})[seed] = (read_curve(live, "train/teacher_acc")[0], curve)
        out[ds] = by
    return out


def teacher_curves(grid: Grid, results_root: Path) -> dict:
    """Fig. 2(a): per dataset at ``figure_split``, each method's ensemble (teacher) test accuracy per server epoch,
    the mean over the seeds that logged it (``--track-teacher``); None for a dataset with none."""
    split, panels = grid.value("figure_split"), {}
    for ds, by in _teacher_runs(grid, results_root).items():
        series = {}
        for label, curves in by.items():
            n = min(len(c[0]) for c in curves.values())
            first = next(iter(curves.values()))
            series[label] = (first[0][:n], [float(np.mean([c[1][i] for c in curves.values()])) for i in range(n)])
        panels[_panel_title(ds, split)] = (series, {}) if series else None
    return panels


def teacher_sides(grid: Grid, results_root: Path) -> dict:
    """Fig. 2(a)'s claims' inputs: per panel title, {method label: (its last epoch's side with the swing of each
    seed's last half, the same with the swing of the whole curve, its first epoch's side with the whole curve's
    swing)} over the seeds that logged the ensemble (the last epoch is what "ends above" is about, the whole curve
    what "rises" is), degenerate where the run's clients are."""
    split, out = grid.value("figure_split"), {}
    for ds, by in _teacher_runs(grid, results_root).items():
        sides = {}
        for label, curves in by.items():
            bad = {seed: _degenerate(Path(results_root) / run_name(ds, split, seed) / "clients.json", ds, None)
                   for seed in curves}
            whole = {k: swing(c[1]) for k, c in curves.items()}
            last = Side(f"{label} last epoch", {k: c[1][-1] for k, c in curves.items()},
                        {k: swing(late_half(c[1])) for k, c in curves.items()}, bad)
            first = Side(f"{label} epoch {next(iter(curves.values()))[0][0]}", {k: c[1][0] for k, c in curves.items()},
                         whole, bad)
            sides[label] = (last, replace(last, swings=whole), first)
        out[_panel_title(ds, split)] = sides or None
    return out


def student_bars(grid: Grid, results_root: Path) -> tuple[dict, dict]:
    """Fig. 2(c): per dataset at ``figure_split``, student architecture -> {method -> mean final accuracy}: the
    clients' own architecture (the Table 1 runs) and each ``student`` of the columns; and the numbers behind it,
    each a side over the seeds that ran (:func:`run_side`)."""
    split = grid.value("figure_split")
    entries = [e for e in _entries(grid) if e.get("id") in FIG2_RUNS.values()
               or (e.get("student") and _series_of(e.get("id", "")))]
    runs = read_runs(Path(results_root), grid.narrowed([split]), entries)
    panels, numbers = {}, {}
    for (ds, _), by_id in runs.items():
        groups: dict[str, dict[str, float]] = {}
        sides: dict[str, dict[str, Side]] = {}
        for e in entries:
            recs = by_id.get(e["id"], [])
            if recs:
                group = e.get("student") or f"{_run_model(grid)} (the clients')"
                side = run_side(results_root, ds, split, e["id"], _series_of(e["id"]), recs)
                groups.setdefault(group, {})[side.name] = _mean(side)
                sides.setdefault(group, {})[side.name] = side
        panels[_panel_title(ds, split)] = groups or None
        numbers[(ds, split)] = sides
    return panels, numbers
