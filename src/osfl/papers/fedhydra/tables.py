"""FedHydra's tables: each cell of ours beside the paper's, the captions' notes (seeds, readings, variants, OT),
the paper-profile column, the gaps to the paper and runs.md."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...reporting.published import Artifact, load_published_table
from ...reporting.runs import ot_unmoved_note
from ...reporting.spread import mean_std, seed_runs
from ...reporting.grid import Grid
from .runs import (
    DATASETS, HETERO_METHODS, HETERO_TABLES, METHODS, ROUND_TABLES, Run, SHORT, VARIANTS, _config, _device_name,
    _interp, _items, _lam_label, _reading_short, _readings_text, _seed_cell, over_seeds, table_columns,
)

def table_cells(art: Artifact, runs: dict[str, Run], lambdas: list[dict], seeds=(),
                base_seed=0) -> dict[tuple[str, str], float | list[float]]:
    """Our final accuracies keyed by (row, column) of the published table ``art`` (empty: nothing run). In Tables 1
    and 2 a cell whose run also ran with other seeds (``<run>-s<seed>`` for ``seeds``; the run itself is seed
    ``base_seed``) holds the list of the values over seeds, and the variants (:data:`VARIANTS`) have rows of their
    own."""
    ours: dict[tuple[str, str], float | list[float]] = {}
    if art.id in ("table01", "table02"):
        rows = {**METHODS, **{key: row for key, (_, row, _) in VARIANTS.items()}}
        for col, name in table_columns(art.id):
            for m, row in rows.items():
                v = _seed_cell(runs, name, m, seeds, base_seed)
                if v is not None:
                    ours[(row, col)] = v
    elif art.id in HETERO_TABLES:
        datasets, alphas = HETERO_TABLES[art.id]
        for ds in datasets:
            for a in alphas or (None,):
                run = runs.get(f"{ds}-dir{a}-hetero" if a else f"{ds}-2cc-hetero")
                if run is None:
                    continue
                row = f"alpha={a}" if a else DATASETS[ds]
                for c in (run.clients or {}).get("per_client", [])[:5]:
                    ours[(row, f"Client M{c['client'] + 1}")] = c["local_test_acc"]
                for m, label in HETERO_METHODS.items():
                    v = run.acc(m)
                    if v is not None:
                        ours[(row, f"Server(ResNet18) {label}")] = v
    elif art.id in ("table04", "table07"):
        ds = "svhn" if art.id == "table04" else "cifar10"
        for name, run in runs.items():
            if name == f"{ds}-dir0.5":
                k = 5
            elif name.startswith(f"{ds}-dir0.5-k"):
                k = int(name.rsplit("-k", 1)[1])
            else:
                continue
            for m, label in SHORT.items():
                v = run.acc(m)
                if v is not None:
                    ours[(str(k), label)] = v
    elif art.id in ROUND_TABLES:
        ds, split = ROUND_TABLES[art.id]
        run = runs.get(f"{ds}-{split}")
        ours.update(run.round_cells() if run else {})
    elif art.id == "table06":
        for ds, label in DATASETS.items():
            run = runs.get(f"{ds}-dir0.5")
            if run is None:
                continue
            variants = [(1.0, 1.0, "fedhydra")] + [(lam["l1"], lam["l2"], f"fedhydra-{lam['tag']}") for lam in lambdas]
            for l1, l2, key in variants:
                v = run.acc(key)
                if v is not None:
                    ours[(_lam_label(l1, l2), label)] = v
    return ours


def _note(runs_used: list[Run], described: str, seeds_text: str = "") -> str:
    """A Table 1/2-style caption: what our numbers are, then ``described`` (the profile, its reductions and guards,
    the inputs and the precision: :func:`osfl.cpu_profile.describe`)."""
    parts = ["Ours: final-epoch accuracy of one run." if not seeds_text else
             f"Ours: final-epoch accuracy, {seeds_text}.", described]
    stand_in = sorted({r.dataset for r in runs_used if r.stand_in})
    if stand_in:
        parts.append("STAND-IN DATA (generated arrays, not the dataset) for: " + ", ".join(stand_in) + ".")
    return " ".join(parts)


def _seeds_text(art_id: str, runs: dict[str, Run], seeds=(), base_seed=0) -> str:
    """Which columns of Table 1/2 are means over seeds, and over which (empty: one run in every column)."""
    groups: dict[tuple, list[str]] = {}
    left_out: list[str] = []
    for col, name in table_columns(art_id):
        found = tuple(seed_runs(runs, name, seeds, base_seed))
        if len(found) > 1:
            groups.setdefault(found, []).append(col)
            for key in (*METHODS, *VARIANTS):
                over_seeds(runs, name, key, seeds, base_seed, left_out=left_out)
    if not groups:
        return ""
    over = "; ".join(f"{len(found)} seeds ({', '.join(map(str, found))}) in {', '.join(cols)}"
                     for found, cols in groups.items())
    text = (f"mean ± sample std (ddof = 1) over {over} (seed {base_seed} is the column's run, seed k its run with "
            f"the suffix -sk; Δ from the mean); one run (seed {base_seed}) in the other columns")
    if left_out:
        text += ("; left out of the means, for another FedHydra reading or DENSE bn than the cell's first seed: "
                 + ", ".join(left_out))
    return text


def _reading_note(art_id: str, runs: dict[str, Run], lambdas: list[dict], seeds=(), base_seed=0) -> str:
    """Which reading produced the FedHydra numbers of Table 1, 2 (the main row) or 6 (every row)."""
    found: list[tuple[str, dict]] = []
    if art_id in ("table01", "table02"):
        for col, name in table_columns(art_id):  # a cell's seeds share its first seed's reading (over_seeds)
            recs = [r.metrics["fedhydra"] for r in seed_runs(runs, name, seeds, base_seed).values()
                    if "fedhydra" in r.metrics]
            found += [(col, recs[0])] if recs else []
        who = f"{METHODS['fedhydra']} row"
    elif art_id == "table06":
        for ds, label in DATASETS.items():
            run = runs.get(f"{ds}-dir0.5")
            keys = ["fedhydra"] + [f"fedhydra-{lam['tag']}" for lam in lambdas]
            found += [(label, run.metrics[k]) for k in keys if run and k in run.metrics]
        who = "FedHydra rows"
    return f"{who}: reading = {_readings_text(found)}." if found else ""


def _ot_note(art_id: str, runs: dict[str, Run]) -> str:
    """Table 1/2: in how many OT runs the alignment moved no hidden unit (:func:`.reporting.runs.ot_unmoved_note`)."""
    if art_id not in ("table01", "table02"):
        return ""
    return ot_unmoved_note([(r.extras.get("ot") or {}).get("units_moved_share") for r in runs.values()
                            if "ot" in r.metrics])


def _variants_note(rows: list[str]) -> str:
    what = [f"{row} = {desc}" for _, row, desc in VARIANTS.values() if row in rows]
    return ("Rows below the paper's are variants of ours (no paper number): " + "; ".join(what) + ".") if what else ""


def _variant_rows(art_id: str, grid: Grid, ours: dict) -> list[str]:
    """Table 1/2 rows of the variants that the params run on one of the table's splits, or that have a number."""
    splits = {name.split("-", 1)[1] for _, name in table_columns(art_id)}
    variants = grid.block("variants")
    return [row for _, (param, row, _) in VARIANTS.items()
            if splits & {_interp(s) for s in _items(variants.get(param))} or any(r == row for r, _ in ours)]


# ---------------------------------------------------------------------------------------------------------


def _same_reading(quick: Run | None, key: str, rec: dict) -> float:
    """The quick-profile final accuracy of result ``key`` run with the same configuration as ``rec`` (FedHydra: its
    reading, where plain FedHydra's literal reading is the quick run's ``fedhydra-literal``; DENSE: its bn); NaN
    where the quick runs have none."""
    if quick is None:
        return float("nan")
    for q in [key] + (["fedhydra-literal"] if key == "fedhydra" else []):
        if q in quick.metrics and _config(q, quick.metrics[q]) == _config(key, rec):
            return quick.acc(q)
    return float("nan")


def _paper_devices(root: Path) -> dict:
    """``{"train": {seconds, runtime}, "servers": {key: {seconds, runtime}}}`` of a paper-profile run, from the
    git-tracked run records (``runs/<key>.json``: evaluate copies the server's seconds and runtime into them; the
    runtime records themselves are cached outputs a fresh clone may lack), or the summary ``device.json`` older
    columns wrote."""
    if (root / "device.json").exists():
        return json.loads((root / "device.json").read_text())
    runs = {p.stem: json.loads(p.read_text()) for p in sorted((root / "runs").glob("*.json"))}
    return {"train": {}, "servers": {k: {"seconds": r.get("server_seconds"), "runtime": r.get("runtime")}
                                     for k, r in runs.items()}}


def paper_profile_table(paper_runs: dict[str, Run], quick_runs: dict[str, Run], arts, out_stem: Path,
                        quick_profile: str = "quick") -> list[Path]:
    """Table 1 column(s) run at the PAPER profile beside the quick-profile run of the same configuration and the
    paper's number, plus the FedHydra variants run there (one SPEC choice changed each), with the device and seconds
    of each server. Every row label names its profile and, for FedHydra, the reading of Alg. 1 that produced it."""
    import pandas as pd

    from ...reporting.tables import write_table

    table1 = load_published_table(next(a for a in arts if a.id == "table01"))
    quick_col = f"{quick_profile} profile final (same reading)"
    rows, devices = [], set()
    for name, run in paper_runs.items():
        col = f"{DATASETS.get(run.dataset, run.dataset)} alpha={run.split[3:]}"
        dev = _paper_devices(Path(run.root))
        devices |= {_device_name(v) for v in [dev.get("train", {})] + list(dev.get("servers", {}).values()) if v}
        quick = quick_runs.get(name)
        for key in sorted(run.metrics, key=lambda k: (list(METHODS).index(k.split("-")[0]), k)):
            m = run.metrics[key]
            base = key.split("-")[0]
            label = SHORT[base] + (f" [{key.split('-', 1)[1]}]" if "-" in key else "")
            label += f" ({_reading_short(m)}; paper profile)" if base == "fedhydra" else " (paper profile)"
            paper = table1.at[METHODS[base], col] if key == base and col in table1.columns else float("nan")
            rows.append({"run": name, "method": label, "paper profile final": m["acc_final"],
                         "paper profile best": m["acc_best"], quick_col: _same_reading(quick, key, m),
                         "paper (Table 1)": paper,
                         "server s": dev.get("servers", {}).get(key, {}).get("seconds", float("nan"))})
    df = pd.DataFrame(rows).set_index(["run", "method"])
    caption = ("Table 1 column(s) at the paper profile (the paper's hyper-parameters unchanged), beside the "
               f"{quick_profile} profile and the paper. Each row label names the profile of its paper-profile numbers "
               "and, for FedHydra, the reading of Alg. 1 that produced them (`choices.reading` of the run record; "
               "unrecorded = made before the readings existed, when literal was the only one); its "
               f"{quick_profile}-profile number is the {quick_profile} run of the same method, variant and reading "
               "(plain FedHydra on the literal reading: the run tagged literal), — where none ran. Rows in brackets "
               "are variants with one choice changed: literal = FedHydra's "
               "literal reading (Alg. 1 as written), bn0 = DENSE as its official code runs, ae = averaging "
               "teacher (Fig. 7), saxc = SA logits x c (AMBIG-6), reset-epoch = generator re-initialised every "
               "epoch (AMBIG-5), pool = DENSE-style pool distillation (AMBIG-4), admask = disagreement mask "
               "(AMBIG-9), l1-0 = lambda2 = 0. Device: " + ", ".join(sorted(devices)) + "; server seconds were "
               "measured with up to four stages sharing the GPU (python -m osfl.campaign --pack 4), so they are "
               "not a timing comparison. Methods not listed did not fit in a GPU slot yet (campaign.yaml).")
    return write_table(df, out_stem, caption, "tab:fedhydra-paper-profile", precision=2)


def table_gaps(paper, ours: dict) -> list[float]:
    """ours − paper (percentage points) for every cell of the published table ``paper`` (its
    :func:`load_published_table` frame) that we ran and the paper printed a number for; a cell over several seeds
    counts with its mean. Rows the paper does not have (our variants) have no gap."""
    out = []
    for (row, col), value in ours.items():
        if row not in paper.index:
            continue
        p, v = paper.at[row, col], mean_std(value)[0]
        if not np.isnan(v) and not np.isnan(p):
            out.append(float(v) - float(p))
    return out


def summary_metrics(gaps: dict[str, list[float]]) -> dict:
    """The handful of numbers to compare across experiments of this pipeline: for each table with cells run, their
    count and mean gap to the paper (ours − paper, points); the README writer adds how many claims of the text fall
    in each verdict category (:func:`osfl.reporting.runs.write_status`)."""
    return {"tables": {t: {"cells": len(g), "mean_gap": round(float(np.mean(g)), 4)} for t, g in gaps.items() if g}}


def _write_runs(runs: dict[str, Run], path: Path, profile: str) -> Path:
    lines = [f"# FedHydra runs (profile {profile})", "",
             "| run | method | final acc. (%) | best acc. (%) | best epoch | server s | data |",
             "|---|---|---|---|---|---|---|"]
    for name, run in runs.items():
        for key, m in run.metrics.items():
            lines.append(f"| {name} | {key} | {m['acc_final']:.2f} | {m['acc_best']:.2f} | {m['best_epoch']} | "
                         f"{m.get('server_seconds', 0):.1f} | {'stand-in' if m.get('stand_in_data') else 'real'} |")
        if run.clients:
            lines.append(f"| {name} | clients (mean local acc.) | {run.clients['local_acc_mean']:.2f} | | | | |")
    path.write_text("\n".join(lines) + "\n")
    return path
