"""Stage `render` of a paper pipeline (run in papers/<paper>/): tables (LaTeX + Markdown beside the published
numbers), figures and a README with claim verdicts under reports/, from the paper's runs under results/; and the
pipeline's summary metrics (summary.json: each table's mean gap to the paper, claim verdict counts)."""
from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from ..config import check_keys, load_params
from ..discover import pipelines
from ..reporting.grid import Grid
from .common import run_stage

#: the pipelines (folders papers/<name>/ with a dvc.yaml, :func:`osfl.discover.pipelines`), each with a module
#: ``osfl.papers.<name>`` whose ``render(grid, results_root, prepared_root, out, *, paper_results_root, summary)``
#: writes its reports (a new paper: its folder and its module, no list to edit). Only the named paper's module is
#: imported, so a paper's render stage depends on its own module (tests/test_dag_deps.py reads ``--paper`` from the
#: command) and editing another paper's module re-runs nothing.
PAPERS = tuple(pipelines())


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="render.py", description=__doc__)
    p.add_argument("--paper", required=True, choices=sorted(PAPERS))
    p.add_argument("--params", default="params.yaml", help="the paper's params file (default: params.yaml)")
    run_stage(_run, p, argv)


def load_grid(path: str | Path = "params.yaml") -> Grid:
    """The pipeline's params file, its keys checked as a stage's are (:func:`osfl.config.check_keys`, the pipeline's
    ``keys.yaml`` admitted: an unknown key fails here with one line, before any report is written), typed for the
    reports (:class:`osfl.reporting.grid.Grid`)."""
    params = load_params(path)
    check_keys(params, path)
    return Grid.of(params)


def _run(args) -> None:
    grid = load_grid(args.params)
    paper = importlib.import_module(f"osfl.papers.{args.paper}")
    written = paper.render(grid, Path("results"), Path("data/prepared"), Path("reports"),
                           paper_results_root=Path("results/paper"), summary=Path("summary.json"))
    print(f"render: {len(written)} files in reports/ and summary.json")


if __name__ == "__main__":
    main()
