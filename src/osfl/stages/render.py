"""Stage `render` of a paper pipeline (run in papers/<paper>/): tables (LaTeX + Markdown beside the published
numbers), figures and a README with claim verdicts under reports/, from the paper's runs under results/; and the
pipeline's summary metrics (summary.json: each table's mean gap to the paper, claim verdict counts)."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..config import load_params
from ..papers import fedhydra
from .common import run_stage

#: paper -> its module under osfl.papers, whose ``render(params, results_root, prepared_root, out, *,
#: paper_results_root, summary)`` writes its reports (a new paper: one module and one entry here; imported
#: statically so that tests/test_dag_deps.py sees what the render stage runs)
PAPERS = {"fedhydra": fedhydra}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="render.py", description=__doc__)
    p.add_argument("--paper", required=True, choices=sorted(PAPERS))
    p.add_argument("--params", default="params.yaml", help="the paper's params file (default: params.yaml)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    params = load_params(args.params)
    written = PAPERS[args.paper].render(params, Path("results"), Path("data/prepared"), Path("reports"),
                                        paper_results_root=Path("results/paper"), summary=Path("summary.json"))
    print(f"render: {len(written)} files in reports/ and summary.json")


if __name__ == "__main__":
    main()
