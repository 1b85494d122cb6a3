"""FedHydra's report: :func:`render` writes every table, figure, runs.md, README.md, status.json and claims.json."""
from __future__ import annotations

import sys
from pathlib import Path

from ...reporting import settings
from ...reporting.comparison import render_comparison
from ...reporting.naming import seed_run
from ...reporting.published import load_artifacts, load_published_table
from ...reporting.runs import drawn, write_cells, write_status
from ...reporting.settings import rows as settings_rows
from ...reporting.skeleton import Built, Context, build_all
from ...reporting.grid import Grid
from .runs import (
    COMMAND, HETERO_TABLES, NEEDS, Run, _reading, expected_paper_runs, expected_results, load_runs, not_current,
)
from .tables import (
    _note, _ot_note, _reading_note, _seeds_text, _variant_rows, _variants_note, _write_runs, paper_profile_table,
    summary_metrics, table_cells, table_gaps,
)
from .figures import (
    _figure_status, figure_2cc, figure_ae_sa, figure_curves, figure_local_curve, figure_ms, figure_partitions,
    figure_synthetic, figure_timing,
)
from .claims import claims, local_curve_claims, paper_profile_claims, row_claims
from .cpu import BENCHMARK, K_STEM, LONG, STEMS as CPU_STEMS, cpu_table, k_table
from .rounds import IN_PLACE_OF, fashion_rounds

def _table(ctx: Context, art) -> Built:
    """A table of the paper with ours beside it (render_comparison); the paper's numbers alone where nothing ran."""
    runs, grid = ctx.shared["runs"], ctx.grid
    lambdas, seeds, base_seed = ctx.shared["lambdas"], ctx.shared["seeds"], ctx.shared["base_seed"]
    ours = table_cells(art, runs, lambdas, seeds, base_seed)
    paper = load_published_table(art)
    ctx.shared["gaps"][art.id] = table_gaps(paper, ours)
    used = [r for r in runs.values() if r.metrics]
    need = NEEDS.get(art.id, "its datasets in `datasets`")
    extra = _variant_rows(art.id, grid, ours)
    note = (_note(used, ctx.shared["described"], _seeds_text(art.id, runs, seeds, base_seed)) if ours
            else f"Not run: needs {need} in papers/fedhydra/params.yaml.")
    if ours and art.id in HETERO_TABLES:
        archs = sorted({", ".join(c["arch"] for c in (r.clients or {}).get("per_client", []))
                        for n, r in runs.items() if n.endswith("-hetero")})
        server = grid.block("hetero").get("server_model", "?")
        note += f" Clients M1..M5 in force: {'; '.join(archs)}; server: {server} (hetero.server_model)."
    for extra_note in (_reading_note(art.id, runs, lambdas, seeds, base_seed), _ot_note(art.id, runs),
                       _variants_note(extra)):
        note += f" {extra_note}" if extra_note else ""
    files = render_comparison(art, ours, ctx.out, note=note, extra_rows=extra)
    n_paper = sum(1 for r, _ in ours if r in paper.index)
    n_variant = len(ours) - n_paper
    return Built(f"{n_paper} of {paper.size} cells run" + (f", {n_variant} variant cell(s)" if n_variant else "")
                 if ours else f"paper only (needs {need})", files)


def _draw(ctx: Context, art) -> list[Path]:
    """The figure's drawing from the runs present (Figs. 3-13); Fig. 5 keeps its MS label and weights in
    ``ctx.shared`` for the claims."""
    runs, out = ctx.shared["runs"], ctx.out / art.id
    curves = {"figure03": ("fmnist", "Fig. 3: FashionMNIST"), "figure04": ("cifar10", "Fig. 4: CIFAR10"),
              "figure10": ("mnist", "Fig. 10: MNIST"), "figure11": ("svhn", "Fig. 11: SVHN")}
    if art.id in curves:
        ds, title = curves[art.id]
        return figure_curves(ds, runs, out, f"{title}, test accuracy vs epoch")
    if art.id == "figure05":
        files, ctx.shared["ms_label"], ctx.shared["U_r"] = figure_ms(runs, out)
        return files
    if art.id == "figure07":
        return figure_ae_sa(runs, ctx.shared["splits"], out)
    if art.id == "figure12":
        return figure_synthetic(runs, ctx.prepared, out)
    return {"figure06": figure_2cc, "figure08": figure_local_curve, "figure09": figure_partitions,
            "figure13": figure_timing}[art.id](runs, out)


def _figure(ctx: Context, art) -> Built:
    files = _draw(ctx, art)
    state = _figure_status(art.id, ctx.shared["runs"])
    if not drawn(ctx.out, art.id) and not state.startswith("not run"):
        state = "not run: no run of its datasets or splits here"
    ms_label = ctx.shared.get("ms_label")
    return Built(state + (f" ({ms_label} 2c/c; the paper shows MNIST)" if art.id == "figure05" and ms_label else ""),
                 files)


#: FedHydra's artifacts (osfl.reporting.skeleton): every table of the paper is a comparison, Figs. 3-13 drawings
BUILDERS = {**{f"table{i:02d}": _table for i in range(1, 19)}, **{f"figure{i:02d}": _figure for i in range(3, 14)}}
FIXED = {"figure01": "a schematic: no data", "figure02": "a schematic: no data"}


def render(grid: Grid, results_root: Path, prepared_root: Path, out: Path,
           published_root: str = "published", paper_results_root: Path | None = None,
           summary: Path | None = None, benchmark_root: Path | None = None) -> list[Path]:
    """Every table, figure, runs.md, README.md and claims.json under ``out``; with ``summary``, the pipeline's
    summary metrics there (:func:`summary_metrics`, the one file `dvc exp show` reads in papers/fedhydra/).
    ``benchmark_root``: the cross-paper benchmark's folder, whose runs give ``table01_cpu`` (default: papers/benchmark
    beside the paper's folder, ``results_root``'s parent)."""
    # only what the current params produce: results left on disk by a larger grid are listed, not rendered
    expected = expected_results(grid)
    paper_expected = expected_paper_runs(grid)

    def keep(run: str, key: str | None) -> bool:
        return run in expected and (key is None or key in expected[run])

    def keep_paper(run: str, key: str | None) -> bool:
        return run in paper_expected

    runs = load_runs(results_root, keep)
    stale = not_current(results_root, keep)
    if paper_results_root:
        stale += not_current(paper_results_root, keep_paper)
    if stale:
        print(f"render: not rendered, {len(stale)} result(s) on disk that the current params do not produce "
              "(see README.md): " + ", ".join(stale), file=sys.stderr)
    lambdas = grid.items("lambdas")
    splits = grid.items("splits")
    profile = grid.value("profile", "?")
    described = settings.pointer(grid)
    seeds, base_seed = list(grid.block("spread").get("seeds") or []), grid.value("seed", 0)
    out.mkdir(parents=True, exist_ok=True)
    arts = load_artifacts(published_root)
    ctx = Context(grid, Path(results_root), Path(prepared_root), out,
                  shared={"runs": runs, "lambdas": lambdas, "splits": splits, "seeds": seeds, "base_seed": base_seed,
                          "described": described, "gaps": {}})
    report = build_all(ctx, arts, BUILDERS, FIXED)
    written, status, gaps = report.files, report.status, ctx.shared["gaps"]
    ms_label, U_r = ctx.shared.get("ms_label", ""), ctx.shared.get("U_r")
    paper_runs = load_runs(paper_results_root, keep_paper) if paper_results_root else {}
    if paper_runs:
        written += paper_profile_table(paper_runs, runs, arts, out / "table01_paper_profile", profile)
        status["table01_paper_profile"] = "paper-profile column(s): " + ", ".join(paper_runs)
    # Tables 1-2's cells at the cpu profile: the cross-paper benchmark's runs of FedHydra's setting, per dataset
    bench = Path(benchmark_root) if benchmark_root else Path(results_root).resolve().parent.parent / "benchmark"
    cpu_claims, cpu_metrics, cpu_cells = [], {}, []
    for dataset, stem in CPU_STEMS.items():
        files, state, verdicts_d, metrics_d, cells_d = cpu_table(bench, arts, out, dataset)
        if files:
            written += files
            status[stem] = state
            cpu_claims += verdicts_d
            cpu_metrics[stem] = metrics_d
            cpu_cells += cells_d
    k_files, k_state, k_verdicts = k_table(bench, out)  # Tables 4 and 7 on Fashion-MNIST, the same benchmark
    if k_files:
        written += k_files
        status[K_STEM] = k_state
    r_files, r_status, r_verdicts = fashion_rounds(runs, out, described, base_seed)  # Tables 5, 8, 11-18 likewise
    written += r_files
    status.update(r_status)
    verdicts = claims(runs, splits, U_r, ms_label, lambdas, seeds, base_seed)
    verdicts += row_claims(arts, runs, lambdas, base_seed) + local_curve_claims(runs, base_seed)
    if paper_runs:
        verdicts += paper_profile_claims(paper_runs, base_seed)
    verdicts += cpu_claims + k_verdicts  # both empty where the benchmark has not run
    verdicts += r_verdicts
    written.append(_write_runs(runs, out / "runs.md", profile))
    written.append(write_cells(out, cpu_cells))
    metrics = summary_metrics(gaps)
    metrics["tables"].update(cpu_metrics)
    written.append(_write_readme(arts, status, verdicts, runs, out, profile, stale, paper_runs, seeds, base_seed,
                                 metrics, summary, settings_rows(grid, results_root)))
    written += [out / "status.json", out / "claims.json", out / "settings.json"] + ([summary] if summary else [])
    return written


def _readings_section(runs: dict[str, Run], paper_runs: dict[str, Run]) -> list[str]:
    """README lines: for every run, its FedHydra results grouped by the reading of Alg. 1 that produced them."""
    rows = []
    for prefix, group in (("", runs), ("paper/", paper_runs or {})):
        for name, run in group.items():
            by: dict[str, list[str]] = {}
            for key, rec in sorted(run.metrics.items(), key=lambda kv: (kv[0] != "fedhydra", kv[0])):
                if key.split("-")[0] == "fedhydra":
                    by.setdefault(_reading(rec), []).append(f"`{key}`")
            rows += [f"| {prefix}{name} | {', '.join(keys)} | {r} |" for r, keys in by.items()]
    if not rows:
        return []
    return ["## Which reading produced each FedHydra number", "",
            "FedHydra's server loop has two readings (`reading`, src/osfl/methods/fedhydra.py `READINGS`): "
            "**authors**, the first author's released loop (the default), and **literal**, Alg. 1 as written (the "
            "`FedHydra (literal Alg. 1)` rows of Tables 1-2, run tag `literal`). Each run records its reading under "
            "`choices.reading`; a run recorded before the readings existed records none and ran the literal reading, "
            "then the only one. The tables' notes say which reading their FedHydra numbers come from.", "",
            "| run | FedHydra results | reading |", "|---|---|---|", *rows, ""]


def _write_readme(arts, status, verdicts, runs, out: Path, profile: str, not_rendered: list[str] = (),
                  paper_runs: dict[str, Run] | None = None, seeds=(), base_seed=0, metrics: dict | None = None,
                  summary: Path | None = None, settings=()) -> Path:
    """README.md (with status.json, claims.json and, with ``summary``, the summary metrics) through the papers' one
    writer (:func:`osfl.reporting.runs.write_status`), with FedHydra's own sections: the results left on disk that
    the params do not produce, and which reading of Alg. 1 produced each FedHydra number."""
    ran = sorted({r.dataset for r in runs.values() if r.metrics})
    extra_seed = {seed_run(b, k, base_seed) for b in runs for k in seeds if k != base_seed}
    spread_runs = sorted(n for n in extra_seed if n in runs and runs[n].metrics)
    intro = [
        f"Profile: **{profile}**; datasets run: {', '.join(ran) or 'none'}. Each table cell reads ours / paper "
        f"(Δ); ours is the final-epoch accuracy of one run (seed {base_seed}; best-epoch numbers in `runs.md`), or "
        "in Tables 1-2, where the run also ran with the seeds of `spread.seeds` (runs "
        "`<dataset>-<split>-s<seed>`), mean ± sample std (ddof = 1) over the seeds with their number n, the Δ from "
        f"the mean (extra-seed runs present: {', '.join(spread_runs) or 'none'}). Curves (test accuracy vs epoch) "
        "start at epoch 0, the server model before training; best accuracy and best epoch are over epochs >= 1. "
        f"Regenerate everything with `{COMMAND}`; add a dataset with "
        "`dvc exp run -S 'datasets=[mnist,fmnist]'` in papers/fedhydra/."]
    sections: list[str] = []
    if not_rendered:
        sections += ["## Not rendered: results on disk that the current params do not produce", "",
                     f"{len(not_rendered)} result(s) under `results/` that no stage of `papers/fedhydra/dvc.yaml` "
                     "produces with the current `papers/fedhydra/params.yaml` (left from a larger grid: `datasets`, "
                     "`splits`, `methods`, `lambdas`, `hetero`, `ksweep`, `multiround`, `localcurve`, `timing` or "
                     "`paper_columns` since shortened). No table, figure, claim or `runs.md` below uses them; delete "
                     "them, or list their runs in the params again to render them. Each is `<results folder>/<run>/"
                     "<result>`, a result being a method (its `runs/<method>.json` record and `live/<method>/` curve), "
                     "`partition`, `clients`, `local_curve`, `timing/<method>-t<r>` or `rounds/<method>`:", ""]
        sections += [f"- `{x}`" for x in not_rendered] + [""]
    sections += _readings_section(runs, paper_runs or {})
    extra_rows = [("table01_paper_profile", "Table 1 at the paper profile (results/paper/)")]
    extra_rows += [(stem, f"Tables 1-2, {LONG[ds]}, at the cpu profile ({BENCHMARK}/results/)")
                   for ds, stem in CPU_STEMS.items()]
    extra_rows += [(K_STEM, f"Tables 4 and 7, Fashion-MNIST in their datasets' place ({BENCHMARK}/results/)")]
    extra_rows += [(k, f"Tables 5, 8, 11-18, {IN_PLACE_OF}") for k in sorted(status) if k.startswith("rounds_")]
    note = ("Numbers that ran with more than one seed are shown as mean ± std (n=k). Here a final accuracy's swing is "
            "taken over the last half of its curve; \"collapses late\" compares the best epoch with the final one; a "
            "claim that FedHydra is best (or OT worst) compares it with every rival and names the comparisons that "
            "decided it.")
    footer = ["SPEC choices in force are recorded per run in `results/<run>/runs/<method>.json` under `choices`; the "
              "ambiguities they resolve are listed in the SPEC (§6)."]
    return write_status(out, "FedHydra", "papers/fedhydra", arts, status, "the paper's text", verdicts,
                        {} if metrics is None else metrics, summary, intro=intro, extra_rows=extra_rows,
                        sections=sections, claims_note=note, footer=footer, settings=settings)
