"""HFLDD's report: :func:`render` writes every table and figure, README.md, status.json and claims.json."""
from __future__ import annotations

from pathlib import Path


from ... import cpu_profile
from ...reporting.figures import curve_panels
from ...reporting.published import load_artifacts, load_published_table
from ...reporting.runs import cell, gap_metrics, gap_text, write_cells, write_status
from ...reporting.tables import write_table
from ...reporting.topology import topology_panels
from .tables import COMMANDS, COST_TABLE_DATASETS, DATASET_LABELS, SCHEMATICS, cost_table, read_runs, table4
from .figures import clustering_panels, curves_panels, traffic_panels
from .claims import k_robustness, spec_checks

def render(params: dict, results_root: Path, prepared_root: Path, out: Path, published_root: str = "published",
           paper_results_root: Path | None = None, summary: Path | None = None) -> list[Path]:
    """Every built artifact under ``out`` and README.md (state, command, SPEC §7 verdicts); with ``summary``, the
    pipeline's summary metrics there."""
    out.mkdir(parents=True, exist_ok=True)
    arts = load_artifacts(published_root, numbering="roman")
    by_id = {a.id: a for a in arts}
    runs = read_runs(params, Path(results_root))
    written: list[Path] = []
    status: dict[str, str] = {}
    metrics: dict = {}
    cost_same: dict = {}
    cells: list = []
    fig6_numbers: dict = {}
    note = (f"Seeds {params.get('seeds')}; {params.get('clients')} clients, {params.get('model')}; a run's T is "
            f"hybrid.T under the profile. {cpu_profile.describe(params)}")
    for art in arts:
        if art.id in ("table2", "table3"):
            df, numbers, same = cost_table(params, runs, art, by_id["fig5"].meta)
            cost_same[art.id] = same
            written += write_table(df, out / art.id, f"{art.label} (paper) vs ours: {art.caption}",
                                   f"tab:{art.id}-vs-paper", notes=COST_NOTE + note)
            ran = any(r["rounds"] for ds in COST_TABLE_DATASETS[art.id] for r in runs.get((ds, 10)) or [])
            status[art.id] = (f"{len({d for d, _ in numbers})} dataset(s) of ours" if numbers else
                              "the paper's rows and their traffic recomputed by our cost model; " +
                              ("no run of ours reached the target" if ran else "no run of ours yet"))
            metrics[art.id] = {"cells_run": len(numbers), "paper_traffic_reproduced": same}
        elif art.id == "table4":
            df, numbers = table4(params, runs, art)
            written += write_table(df, out / art.id, f"{art.label} (paper) vs ours: {art.caption}",
                                   f"tab:{art.id}-vs-paper", notes=T4_NOTE + note)
            ks = sorted({k for _, _, k in numbers})
            per_ds = {ds: {key: v for key, v in numbers.items() if key[0] == ds} for ds in {d for d, _, _ in numbers}}
            status[art.id] = (f"{len(numbers)} cells run (K = {', '.join(map(str, ks))}); " + "; ".join(
                f"{DATASET_LABELS.get(ds, ds)}: {gap_text(cells)}" for ds, cells in sorted(per_ds.items()))
                if numbers else "no run yet")
            cells += [cell(art.id, ds, f"C = {c}", f"K = {k}", v["values"], v["paper"], params.get("profile", "?"))
                      for (ds, c, k), v in numbers.items()]
            metrics[art.id] = {"cells_run": len(numbers), "mean_gap": gap_metrics(numbers)["mean_gap"],
                               **{ds: gap_metrics(cells) for ds, cells in sorted(per_ds.items())}}
        elif art.id in ("fig3", "fig5", "fig6", "fig7"):
            title = f"{art.label}: "
            if art.id == "fig3":
                panels, what = curves_panels(runs), "panels from runs"
                draw = lambda stem: curve_panels(  # noqa: E731
                    panels, stem, suptitle=title + "global model's test accuracy per round (ours; mean over seeds)",
                    xlabel="Communication round (CL: epoch)", ylabel="Test accuracy (%)")
            elif art.id == "fig6":
                (panels, fig6_numbers), what = traffic_panels(params, runs), "panel(s) from runs"
                draw = lambda stem: curve_panels(  # noqa: E731
                    panels, stem, suptitle=title + "traffic to first reach each target accuracy (ours, C = 2; Eqs. 3, "
                    "6, 7)", xlabel="Target accuracy (%)", ylabel="log10 traffic (MiB)")
            else:
                fig5 = art.id == "fig5"
                panels, what = clustering_panels(runs, None if fig5 else 2), "clustering(s) drawn (networkx)"
                title += ("heterogeneous topology (server, headers, members; colour = homogeneous cluster)" if fig5
                          else "the C = 2 clustering; clusters of one or two clients ringed red")
                draw = lambda stem: topology_panels(  # noqa: E731
                    panels, stem, suptitle=title, seed=int(params.get("seed", 0)), highlight_below=0 if fig5 else 3)
            drawn = sum(v is not None for v in panels.values())
            written += draw(out / art.id) if drawn else []
            status[art.id] = f"{drawn} {what}" if drawn else "no run yet"
        else:
            status[art.id] = SCHEMATICS.get(art.id, "not built")
    verdicts = spec_checks(params, runs, cost_same, fig6_numbers) + k_robustness(
        params, runs, load_published_table(by_id["table4"]))
    status = {k: f"{v} · {COMMANDS[k]}" if k in COMMANDS else v for k, v in status.items()}
    written.append(write_cells(out, cells))
    written.append(write_status(out, "HFLDD", "papers/hfldd", arts, status, "SPEC §7", verdicts, metrics, summary))
    return written


COST_NOTE = ("Rows: the paper's as printed (rounds: the 0-based round of the accuracy record that first reaches the "
             "target / that accuracy); the paper's rounds fed to our cost model (src/osfl/cost/traffic.py) with H "
             "inferred from its traffic; ours: the rounds our curves needed (mean ± std over seeds), the traffic of "
             "Eqs. 3, 6, 7 with our model's parameters, our H, the soft labels and distilled images our runs "
             "uploaded, and the ratio to HFLDD. MB = MiB. ")
T4_NOTE = ("Each cell: ours, HFLDD's test accuracy after the last round / the paper's (our mean − the paper's). Ours "
           "at K = clustering.K is the main run (stage hfldd@); at every other K a point of the sweep (stage ksweep@, "
           "K from ksweep_K in dvc.yaml): the same clients, soft labels, distilled sets, seeds and rounds, clustered "
           "with that K. ")
