"""OFedED's report: :func:`render` writes every table and figure, runs.md, README.md, status.json and claims.json."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from ... import cpu_profile
from ...reporting.figures import curve_panels, grouped_bar_panels
from ...reporting.published import load_artifacts
from ...reporting.runs import read_runs, write_status
from ...reporting.spread import Verdict
from ...reporting.tables import write_table
from .tables import ACC_CELLS, DATASET_LABELS, _entries, table1, table3, table3_sides
from .claims import ablation_claims, claims, student_claims, teacher_claims
from .figures import (
    CELL_NOTES, DP_NOTE, SCHEMATICS, dp_panels, ipc_panels, student_bars, table2, teacher_curves, teacher_sides,
)
from .costs import COST_NOTE, cost_tables

def render(params: dict, results_root: Path, prepared_root: Path, out: Path, published_root: str = "published",
           paper_results_root: Path | None = None, summary: Path | None = None) -> list[Path]:
    """Every built artifact under ``out`` and README.md with each artifact's state and the claim verdicts; with
    ``summary``, the pipeline's summary metrics there."""
    out.mkdir(parents=True, exist_ok=True)
    arts = load_artifacts(published_root)
    written: list[Path] = []
    status: dict[str, str] = {}
    metrics: dict = {}
    verdicts: list[tuple[str, Verdict]] = []
    seeds_note = (f"Seeds {params.get('seeds')}; {params.get('clients')} clients, {params.get('model')}, partition "
                  f"{params.get('partition')}. {cpu_profile.describe(params)}")
    runs = read_runs(Path(results_root), params, _entries(params))
    cost = None
    for art in arts:
        if art.id == "table1":
            cells, numbers = table1(params, runs, art)
            gaps = [v["mean"] - v["paper"] for v in numbers.values() if not math.isnan(v["paper"])]
            failed = int(cells.attrs.get("failed_guard", 0))
            if numbers or failed:
                written += write_table(cells, out / art.id, f"{art.label} (paper) vs ours: {art.caption}",
                                       f"tab:{art.id}-vs-paper", notes=ACC_CELLS + seeds_note)
                status[art.id] = f"{len(numbers)} cells run" + (f"; {failed} failed their regime guards" if failed else "")
                metrics[art.id] = {"cells_run": len(numbers), "cells_failed_guard": failed,
                                   "mean_gap": round(float(np.mean(gaps)), 4) if gaps else None}
                verdicts += claims(numbers, Path(results_root))
            else:
                status[art.id] = "no run yet"
        elif art.id in ("table2", "table3"):
            cells, done = (table2 if art.id == "table2" else table3)(params, Path(results_root), art)
            if done:
                written += write_table(cells, out / art.id, f"{art.label} (paper) vs ours: {art.caption}",
                                       f"tab:{art.id}-vs-paper", notes=CELL_NOTES[art.id] + seeds_note)
                status[art.id], metrics[art.id] = f"{done} cells run", {"cells_run": done}
                if art.id == "table3":
                    verdicts += ablation_claims(table3_sides(params, Path(results_root)))
            else:
                status[art.id] = "no run yet"
        elif art.id in ("table4", "table5"):
            if cost is None:
                cost = cost_tables(params, Path(results_root), {a.id: a for a in arts})
            df = cost[0] if art.id == "table4" else cost[1]
            if df is not None:
                written += write_table(df, out / art.id, f"{art.label} (paper) vs ours: {art.caption}",
                                       f"tab:{art.id}-vs-paper", notes=COST_NOTE + seeds_note)
                ours = [i for i in df.index if "(ours" in i]
                status[art.id] = f"{len(ours)} rows of ours (counted)"
                metrics[art.id] = {"rows_run": len(ours)}
            else:
                status[art.id] = "no run yet"
        elif art.id == "fig2a":
            panels = teacher_curves(params, Path(results_root))
            if any(v is not None for v in panels.values()):
                written += curve_panels(panels, out / art.id, suptitle=f"{art.label}: the ensemble's test accuracy "
                                        "per server epoch (ours; mean over seeds)", xlabel="Server epoch",
                                        ylabel="Ensemble test accuracy (%)")
                status[art.id] = f"{sum(v is not None for v in panels.values())} panels run"
                verdicts += teacher_claims(teacher_sides(params, Path(results_root)))
            else:
                status[art.id] = "no run yet"
        elif art.id == "fig2c":
            panels, numbers = student_bars(params, Path(results_root))
            if any(panels.values()):
                written += grouped_bar_panels(panels, out / art.id, suptitle=f"{art.label}: student architectures "
                                              "(ours; mean final accuracy over seeds)")
                status[art.id] = f"{sum(bool(v) for v in panels.values())} panels run"
                verdicts += student_claims(numbers)
            else:
                status[art.id] = "no run yet"
        elif art.id in ("fig2b", "fig3"):
            if art.id == "fig2b":
                panels, claims_ = ipc_panels(params, Path(results_root))
                title, xlabel, note = "OFedED's accuracy against images per class", "IPC", None
            else:
                panels, claims_ = dp_panels(params, Path(results_root))
                title, xlabel, note = "OFedED's accuracy with Gaussian noise", "Noise level σ", DP_NOTE
            if any(v is not None for v in panels.values()):
                written += curve_panels(panels, out / art.id, suptitle=f"{art.label}: {title} (ours; mean over "
                                        "seeds)", xlabel=xlabel, ylabel="Top-1 test accuracy (%)")
                status[art.id] = f"{sum(v is not None for v in panels.values())} panels run" + (
                    f". {note}" if note else "")
                verdicts += claims_
            else:
                status[art.id] = "no run yet"
        elif art.id in SCHEMATICS:
            status[art.id] = SCHEMATICS[art.id]
        else:
            status[art.id] = "not built yet (issue 17)"
    runs_df = run_table(params, Path(results_root))
    if runs_df is not None:
        written += write_table(runs_df, out / "runs", "Every server run: final and best test accuracy, OFedED's gate and "
                               "fine-tunes, the regime guards", "tab:ofeded-runs", notes=RUNS_NOTE + seeds_note)
    written.append(write_status(out, "OFedED", "papers/ofeded", arts, status, "Table 1", verdicts, metrics, summary))
    return written


RUNS_NOTE = ("Final = the last server epoch (the tables' number); best = the best epoch (what Co-Boosting's and DENSE's "
             "code report, best_acc1), with its epoch. Gate: candidate ensemble weights OFedED's guide kept of those "
             "proposed (Co-Boosting: every proposal is kept); fine-tunes: how often OFedED fine-tuned the ensemble on "
             "the distilled sets. Guards: a failed one is named (the run feeds no verdict). ")


def _num(v, fmt: str) -> str:
    return "—" if v is None else format(v, fmt)


def run_table(params: dict, results_root: Path) -> pd.DataFrame | None:
    """One row per server run that has a record (Table 1's and Table 3's columns, every dataset, split and seed)."""
    rows = {}
    for (ds, split), by_id in read_runs(results_root, params, _entries(params)).items():
        for e in _entries(params):
            for r in by_id.get(e["id"], []):
                ex = r.get("extras") or {}
                upd = ex.get("weight_updates") or {}
                bad = [k for k, g in (r.get("guards") or {}).items() if not g.get("passed", True)]
                rows[f"{DATASET_LABELS.get(ds, ds)}, {split}, s{r['seed']}: {e['id']}"] = {
                    "final (%)": f"{r['acc_final']:.2f}", "best (%)": _num(r.get("acc_best"), ".2f"),
                    "best epoch": str(r.get("best_epoch", "—")), "epochs": str(r.get("epochs", "—")),
                    "server s": _num(r.get("server_seconds"), ".0f"),
                    "gate kept / proposed": f"{upd['kept']} / {upd['proposed']}" if upd else "—",
                    "fine-tunes": str(ex["finetunes"]) if "finetunes" in ex else "—",
                    "guards": "failed: " + ", ".join(bad) if bad else "passed" if r.get("guards") else "—"}
    if not rows:
        return None
    df = pd.DataFrame.from_dict(rows, orient="index", dtype=object)
    df.index.name = "run: column"
    return df
