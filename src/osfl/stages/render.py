"""Stage `render` of a paper pipeline: tables (LaTeX + Markdown beside the published numbers), figures and a
README with claim verdicts under reports/<paper>/, from the paper's runs under results/<paper>/."""
from __future__ import annotations

import argparse
import sys

from ..config import load_params
from ..errors import ConfigError

PAPERS = ("fedhydra",)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--paper", required=True, choices=PAPERS)
    p.add_argument("--params", default=None, help="the paper's params file (default papers/<paper>/params.yaml)")
    args = p.parse_args(argv)
    try:
        params = load_params(args.params or f"papers/{args.paper}/params.yaml")
        from pathlib import Path

        from ..papers import fedhydra

        written = fedhydra.render(params, Path("results/fedhydra"), Path("data/fedhydra/prepared"),
                                  Path("reports/fedhydra"), paper_results_root=Path("results/fedhydra-paper"))
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"render: {len(written)} files in reports/{args.paper}/")


if __name__ == "__main__":
    main()
