"""HFLDD's report: :func:`render` writes every table and figure, README.md, status.json and claims.json."""
from __future__ import annotations

from pathlib import Path

from ...reporting import settings
from ...reporting.figures import curve_panels
from ...reporting.published import load_artifacts, load_published_table
from ...reporting.runs import cell, gap_metrics, gap_text
from ...reporting.skeleton import NO_RUN, Built, Context, build_all, finish, table_vs_paper
from ...reporting.topology import topology_panels
from .tables import COMMANDS, COST_TABLE_DATASETS, DATASET_LABELS, SCHEMATICS, cost_table, runs_by_c, table4
from .figures import clustering_panels, curves_panels, traffic_panels
from .claims import k_robustness, spec_checks
from ...reporting.grid import Grid

def _runs(ctx: Context) -> dict:
    return ctx.once("runs", lambda: runs_by_c(ctx.grid, ctx.results))


def _note(grid: Grid) -> str:
    return (f"Seeds {grid.value('seeds')}; {grid.value('clients')} clients, {grid.value('model')}; a run's T is "
            f"hybrid.T under the profile. {settings.pointer(grid)}")


def _cost(ctx: Context, art) -> Built:
    """Tables II and III: rounds and traffic to a target accuracy, the paper's rows beside ours."""
    runs = _runs(ctx)
    df, numbers, same = cost_table(ctx.grid, runs, art, ctx.shared["arts"]["fig5"].meta)
    ctx.shared.setdefault("cost_same", {})[art.id] = same
    ran = any(r["rounds"] for ds in COST_TABLE_DATASETS[art.id] for r in runs.get((ds, 10)) or [])
    state = (f"{len({d for d, _ in numbers})} dataset(s) of ours" if numbers else
             "the paper's rows and their traffic recomputed by our cost model; " +
             ("no run of ours reached the target" if ran else "no run of ours yet"))
    return Built(state, table_vs_paper(ctx, art, df, COST_NOTE + _note(ctx.grid)),
                 {"cells_run": len(numbers), "paper_traffic_reproduced": same})


def _table4(ctx: Context, art) -> Built:
    """Table IV: the K sweep, ours beside the paper's."""
    df, numbers = table4(ctx.grid, _runs(ctx), art)
    ks = sorted({k for _, _, k in numbers})
    per_ds = {ds: {key: v for key, v in numbers.items() if key[0] == ds} for ds in {d for d, _, _ in numbers}}
    state = (f"{len(numbers)} cells run (K = {', '.join(map(str, ks))}); " + "; ".join(
        f"{DATASET_LABELS.get(ds, ds)}: {gap_text(cells)}" for ds, cells in sorted(per_ds.items()))
        if numbers else NO_RUN)
    beside = [cell(art.id, ds, f"C = {c}", f"K = {k}", v["values"], v["paper"], (ctx.grid.profile or "?"))
              for (ds, c, k), v in numbers.items()]
    return Built(state, table_vs_paper(ctx, art, df, T4_NOTE + _note(ctx.grid)),
                 {"cells_run": len(numbers), "mean_gap": gap_metrics(numbers)["mean_gap"],
                  **{ds: gap_metrics(cells) for ds, cells in sorted(per_ds.items())}}, cells=beside)


def _figure(ctx: Context, art) -> Built | None:
    """Figs. 3, 5, 6, 7: accuracy curves, the clusterings drawn, the traffic to each target."""
    runs, title = _runs(ctx), f"{art.label}: "
    if art.id == "fig3":
        panels, what = curves_panels(runs), "panels from runs"
        draw = lambda stem: curve_panels(  # noqa: E731
            panels, stem, suptitle=title + "global model's test accuracy per round (ours; mean over seeds)",
            xlabel="Communication round (CL: epoch)", ylabel="Test accuracy (%)")
    elif art.id == "fig6":
        panels, ctx.shared["fig6_numbers"] = traffic_panels(ctx.grid, runs)
        what = "panel(s) from runs"
        draw = lambda stem: curve_panels(  # noqa: E731
            panels, stem, suptitle=title + "traffic to first reach each target accuracy (ours, C = 2; Eqs. 3, 6, 7)",
            xlabel="Target accuracy (%)", ylabel="log10 traffic (MiB)")
    else:
        fig5 = art.id == "fig5"
        panels, what = clustering_panels(runs, None if fig5 else 2), "clustering(s) drawn (networkx)"
        title += ("heterogeneous topology (server, headers, members; colour = homogeneous cluster)" if fig5
                  else "the C = 2 clustering; clusters of one or two clients ringed red")
        draw = lambda stem: topology_panels(  # noqa: E731
            panels, stem, suptitle=title, seed=int(ctx.grid.seed), highlight_below=0 if fig5 else 3)
    drawn = sum(v is not None for v in panels.values())
    return Built(f"{drawn} {what}", draw(ctx.out / art.id)) if drawn else None


#: HFLDD's artifacts: id -> builder (osfl.reporting.skeleton)
BUILDERS = {"table2": _cost, "table3": _cost, "table4": _table4, "fig3": _figure, "fig5": _figure, "fig6": _figure,
            "fig7": _figure}


def render(grid: Grid, results_root: Path, prepared_root: Path, out: Path, published_root: str = "published",
           paper_results_root: Path | None = None, summary: Path | None = None) -> list[Path]:
    """Every built artifact under ``out`` and README.md (state, command, SPEC §7 verdicts); with ``summary``, the
    pipeline's summary metrics there."""
    out.mkdir(parents=True, exist_ok=True)
    arts = load_artifacts(published_root, numbering="roman")
    by_id = {a.id: a for a in arts}
    ctx = Context(grid, Path(results_root), Path(prepared_root), out, shared={"arts": by_id})
    report = build_all(ctx, arts, BUILDERS, SCHEMATICS, not_built="not built")
    report.verdicts += spec_checks(grid, _runs(ctx), ctx.shared.get("cost_same", {}),
                                   ctx.shared.get("fig6_numbers", {}))
    report.verdicts += k_robustness(grid, _runs(ctx), load_published_table(by_id["table4"]))
    report.status = {k: f"{v} · {COMMANDS[k]}" if k in COMMANDS else v for k, v in report.status.items()}
    return finish(ctx, report, arts, "HFLDD", "papers/hfldd", "SPEC §7", summary, cells=True)


COST_NOTE = ("Rows: the paper's as printed (rounds: the 0-based round of the accuracy record that first reaches the "
             "target / that accuracy); the paper's rounds fed to our cost model (src/osfl/cost/traffic.py) with H "
             "inferred from its traffic; ours: the rounds our curves needed (mean ± std over seeds), the traffic of "
             "Eqs. 3, 6, 7 with our model's parameters, our H, the soft labels and distilled images our runs "
             "uploaded, and the ratio to HFLDD. MB = MiB. ")
T4_NOTE = ("Each cell: ours, HFLDD's test accuracy after the last round / the paper's (our mean − the paper's). Ours "
           "at K = clustering.K is the main run (stage hfldd@); at every other K a point of the sweep (stage ksweep@, "
           "K from ksweep_K in dvc.yaml): the same clients, soft labels, distilled sets, seeds and rounds, clustered "
           "with that K. ")
