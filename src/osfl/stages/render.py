"""Stage `render` of a paper pipeline (run in papers/<paper>/): tables (LaTeX + Markdown beside the published
numbers), figures and a README with claim verdicts under reports/, from the paper's runs under results/; and the
pipeline's summary metrics (summary.json: each table's mean gap to the paper, claim verdict counts)."""
from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from ..config import load_params
from ..discover import pipelines
from .common import run_stage

#: the pipelines (folders papers/<name>/ with a dvc.yaml, :func:`osfl.discover.pipelines`), each with a module
#: ``osfl.papers.<name>`` whose ``render(params, results_root, prepared_root, out, *, paper_results_root, summary)``
#: writes its reports (a new paper: its folder and its module, no list to edit). Only the named paper's module is
#: imported, so a paper's render stage depends on its own module (tests/test_dag_deps.py reads ``--paper`` from the
#: command) and editing another paper's module re-runs nothing.
PAPERS = tuple(pipelines())


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="render.py", description=__doc__)
    p.add_argument("--paper", required=True, choices=sorted(PAPERS))
    p.add_argument("--params", default="params.yaml", help="the paper's params file (default: params.yaml)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    params = load_params(args.params)
    paper = importlib.import_module(f"osfl.papers.{args.paper}")
    written = paper.render(params, Path("results"), Path("data/prepared"), Path("reports"),
                           paper_results_root=Path("results/paper"), summary=Path("summary.json"))
    print(f"render: {len(written)} files in reports/ and summary.json")


if __name__ == "__main__":
    main()
