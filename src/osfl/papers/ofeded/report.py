"""OFedED's report: :func:`render` writes every table and figure, runs.md, README.md, status.json and claims.json."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...reporting import settings
from ...reporting.figures import curve_panels, grouped_bar_panels
from ...reporting.published import load_artifacts
from ...reporting.grid import Grid
from ...reporting.runs import cells_of, gap_metrics, gap_text, read_runs
from ...reporting.skeleton import Built, Context, build_all, finish, table_vs_paper
from ...reporting.tables import write_table
from .tables import ACC_CELLS, DATASET_LABELS, _entries, table1, table3, table3_sides
from .claims import ablation_claims, claims, student_claims, teacher_claims
from .figures import (
    CELL_NOTES, DP_NOTE, SCHEMATICS, dp_panels, ipc_panels, student_bars, table2, teacher_curves, teacher_sides,
)
from .costs import COST_NOTE, cost_tables

def _seeds_note(grid: Grid) -> str:
    return (f"Seeds {grid.value('seeds')}; {grid.value('clients')} clients, {grid.value('model')}, partition "
            f"{grid.value('partition')}. {settings.pointer(grid)}")


def _table1(ctx: Context, art) -> Built | None:
    runs = read_runs(ctx.results, ctx.grid, _entries(ctx.grid))
    cells, numbers = table1(ctx.grid, runs, art)
    gaps = gap_metrics(numbers)
    failed = int(cells.attrs.get("failed_guard", 0))
    if not (numbers or failed):
        return None
    return Built(f"{len(numbers)} cells run" + (f"; {failed} failed their regime guards" if failed else "")
                 + (f"; {gap_text(numbers)}" if gaps["beside_paper"] else ""),
                 table_vs_paper(ctx, art, cells, ACC_CELLS + _seeds_note(ctx.grid)),
                 {"cells_run": len(numbers), "cells_failed_guard": failed, "mean_gap": gaps["mean_gap"],
                  "within_3": gaps["within_3"], "within_10": gaps["within_10"], "beside_paper": gaps["beside_paper"]},
                 claims(numbers, ctx.results), cells=cells_of(art.id, numbers, ctx.grid.profile or "?"))


def _table23(ctx: Context, art) -> Built | None:
    cells, done = (table2 if art.id == "table2" else table3)(ctx.grid, ctx.results, art)
    if not done:
        return None
    return Built(f"{done} cells run", table_vs_paper(ctx, art, cells, CELL_NOTES[art.id] + _seeds_note(ctx.grid)),
                 {"cells_run": done},
                 ablation_claims(table3_sides(ctx.grid, ctx.results)) if art.id == "table3" else [])


def _costs(ctx: Context, art) -> Built | None:
    tables = ctx.once("costs", lambda: cost_tables(ctx.grid, ctx.results, ctx.shared["arts"]))
    df = tables[0] if art.id == "table4" else tables[1]
    if df is None:
        return None
    ours = [i for i in df.index if "(ours" in i]
    return Built(f"{len(ours)} rows of ours (counted)",
                 table_vs_paper(ctx, art, df, COST_NOTE + _seeds_note(ctx.grid)), {"rows_run": len(ours)})


def _fig2a(ctx: Context, art) -> Built | None:
    panels = teacher_curves(ctx.grid, ctx.results)
    if all(v is None for v in panels.values()):
        return None
    files = curve_panels(panels, ctx.out / art.id, suptitle=f"{art.label}: the ensemble's test accuracy per server "
                         "epoch (ours; mean over seeds)", xlabel="Server epoch", ylabel="Ensemble test accuracy (%)")
    return Built(f"{sum(v is not None for v in panels.values())} panels run", files,
                 verdicts=teacher_claims(teacher_sides(ctx.grid, ctx.results)))


def _fig2c(ctx: Context, art) -> Built | None:
    panels, numbers = student_bars(ctx.grid, ctx.results)
    if not any(panels.values()):
        return None
    files = grouped_bar_panels(panels, ctx.out / art.id, suptitle=f"{art.label}: student architectures (ours; mean "
                               "final accuracy over seeds)")
    return Built(f"{sum(bool(v) for v in panels.values())} panels run", files, verdicts=student_claims(numbers))


def _sweep(ctx: Context, art) -> Built | None:
    """Fig. 2(b) (images per class) and Fig. 3 (Gaussian noise): OFedED's accuracy along one knob."""
    if art.id == "fig2b":
        panels, claims_ = ipc_panels(ctx.grid, ctx.results)
        title, xlabel, note = "OFedED's accuracy against images per class", "IPC", None
    else:
        panels, claims_ = dp_panels(ctx.grid, ctx.results)
        title, xlabel, note = "OFedED's accuracy with Gaussian noise", "Noise level σ", DP_NOTE
    if all(v is None for v in panels.values()):
        return None
    files = curve_panels(panels, ctx.out / art.id, suptitle=f"{art.label}: {title} (ours; mean over seeds)",
                         xlabel=xlabel, ylabel="Top-1 test accuracy (%)")
    return Built(f"{sum(v is not None for v in panels.values())} panels run" + (f". {note}" if note else ""), files,
                 verdicts=claims_)


#: OFedED's artifacts: id -> builder (osfl.reporting.skeleton)
BUILDERS = {"table1": _table1, "table2": _table23, "table3": _table23, "table4": _costs, "table5": _costs,
            "fig2a": _fig2a, "fig2b": _sweep, "fig2c": _fig2c, "fig3": _sweep}


def render(grid: Grid, results_root: Path, prepared_root: Path, out: Path, published_root: str = "published",
           paper_results_root: Path | None = None, summary: Path | None = None) -> list[Path]:
    """Every built artifact under ``out`` and README.md with each artifact's state and the claim verdicts; with
    ``summary``, the pipeline's summary metrics there."""
    out.mkdir(parents=True, exist_ok=True)
    arts = load_artifacts(published_root)
    ctx = Context(grid, Path(results_root), Path(prepared_root), out, shared={"arts": {a.id: a for a in arts}})
    report = build_all(ctx, arts, BUILDERS, SCHEMATICS, not_built="not built yet (issue 17)")
    runs_df = run_table(grid, Path(results_root))
    if runs_df is not None:
        report.files += write_table(runs_df, out / "runs", "Every server run: final and best test accuracy, OFedED's "
                                    "gate and fine-tunes, the regime guards", "tab:ofeded-runs",
                                    notes=RUNS_NOTE + _seeds_note(grid))
    return finish(ctx, report, arts, "OFedED", "papers/ofeded", "Table 1", summary, cells=True)


RUNS_NOTE = ("Final = the last server epoch (the tables' number); best = the best epoch (what Co-Boosting's and DENSE's "
             "code report, best_acc1), with its epoch. Gate: candidate ensemble weights OFedED's guide kept of those "
             "proposed (Co-Boosting: every proposal is kept); fine-tunes: how often OFedED fine-tuned the ensemble on "
             "the distilled sets. Guards: a failed one is named (the run feeds no verdict). ")


def _num(v, fmt: str) -> str:
    return "—" if v is None else format(v, fmt)


def run_table(grid: Grid, results_root: Path) -> pd.DataFrame | None:
    """One row per server run that has a record (Table 1's and Table 3's columns, every dataset, split and seed)."""
    rows = {}
    for (ds, split), by_id in read_runs(results_root, grid, _entries(grid)).items():
        for e in _entries(grid):
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
