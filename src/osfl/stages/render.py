"""Stage `render` of a paper pipeline: tables (LaTeX + Markdown beside the published numbers), figures and a
README with claim verdicts under reports/<paper>/, from the paper's runs under results/<paper>/."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..config import load_params
from .common import run_stage

PAPERS = ("fedhydra",)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="render.py", description=__doc__)
    p.add_argument("--paper", required=True, choices=PAPERS)
    p.add_argument("--params", default=None, help="the paper's params file (default papers/<paper>/params.yaml)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    params = load_params(args.params or f"papers/{args.paper}/params.yaml")
    from ..papers import fedhydra

    written = fedhydra.render(params, Path("results/fedhydra"), Path("data/fedhydra/prepared"),
                              Path("reports/fedhydra"), paper_results_root=Path("results/fedhydra-paper"))
    print(f"render: {len(written)} files in reports/{args.paper}/")


if __name__ == "__main__":
    main()
