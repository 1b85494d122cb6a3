"""Stage `peers`: reports/peers.md, our methods against their authors' code (issue 38), from the committed records
of benchmarks/peers/records/ and benchmarks/peers/findings.yaml (:mod:`osfl.reporting.peers`). It runs no official
code and measures nothing: the harness in benchmarks/peers/ does, by hand, with the official checkouts."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..reporting.peers import render
from ..runtime import write_text


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m osfl.stages.peers", description=__doc__.split("\n")[0])
    p.add_argument("--records", type=Path, default=Path("benchmarks/peers/records"))
    p.add_argument("--findings", type=Path, default=Path("benchmarks/peers/findings.yaml"))
    p.add_argument("--out", type=Path, default=Path("reports/peers.md"))
    args = p.parse_args(argv)
    text = render(args.records, args.findings)
    write_text(args.out, text)  # atomic: a failed render leaves the committed report whole
    print(f"peers: {args.out} ({text.count(chr(10))} lines)")


if __name__ == "__main__":
    main()
