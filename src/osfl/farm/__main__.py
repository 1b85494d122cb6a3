"""python -m osfl.farm <dvc.yaml> [stage selectors]: run the stale stages of a pipeline on Ray (osfl.farm)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..errors import ConfigError
from . import make_plan, run_farm


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m osfl.farm", description=__doc__.split(":", 1)[1].strip())
    p.add_argument("pipeline", type=Path, help="the pipeline's dvc.yaml (its folder is the DVC project)")
    p.add_argument("stages", nargs="*", help="stage names or shell patterns ('server@*'); default: every stage")
    p.add_argument("--address", default=None, help="an existing Ray cluster (e.g. ray://head:10001 or auto); "
                                                   "default: a local Ray instance")
    p.add_argument("--cpus", type=int, default=None, help="CPUs of the local Ray instance (default: all)")
    p.add_argument("--git-url", default=None, help="where workers clone the commit (default: this repository)")
    p.add_argument("--remote-url", default=None, help="the DVC remote workers push to and pull from (default: "
                                                      "the project's default remote)")
    p.add_argument("--workdir", type=Path, default=None, help="workers' checkouts (default: <tmp>/osfl-farm)")
    p.add_argument("--max-retries", type=int, default=2, help="retries of a failed stage (default 2)")
    p.add_argument("--dry", action="store_true", help="print the plan as JSON and stop")
    p.add_argument("--record", type=Path, default=None,
                   help="write every task's record (node, attempt, seconds, checkout/repro/push seconds, the stage's "
                        "own seconds) and the total as JSON here (benchmarks/bench_farm.py reads it)")
    args = p.parse_args(argv)
    try:
        if args.dry:
            print(json.dumps(make_plan(args.pipeline, args.stages).as_dict(), indent=1, default=str))
            return 0
        res = run_farm(args.pipeline, args.stages, address=args.address, cpus=args.cpus, git_url=args.git_url,
                       remote_url=args.remote_url, workdir=args.workdir, max_retries=args.max_retries)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.record is not None:
        args.record.write_text(json.dumps({"seconds": round(res.seconds, 3), "tasks": res.done,
                                           "attempts": res.attempts, "failed": res.failed}, indent=1) + "\n")
    return 0 if res.ok else 1


if __name__ == "__main__":
    sys.exit(main())
