"""python -m osfl.campaign plan|run|land: a prioritised queue of DVC stages for a short GPU slot (osfl.campaign)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ConfigError
from . import ARCHIVE, land, load_queue, plan, run, stale_queue, write_queue


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m osfl.campaign", description=__doc__.split(":", 1)[1].strip(),
                                epilog="plan QUEUE --minutes M [--pack N] [--root R]; run QUEUE --minutes M --out DIR [--pack N] "
                                       "[--max-mib X] [--root R]; land ARCHIVE [--root R]; queue PROJECT -o FILE [--stage GLOB ...] "
                                       "[--scale F] [--default-minutes M] [--frozen] [--with-inputs] [--root R]")
    sub = p.add_subparsers(dest="verb", required=True)
    for verb, what in (("plan", "which steps are done, which fit in the minutes and which do not"),
                       ("run", "run the queue to a deadline and pack what finished into OUT/" + ARCHIVE)):
        s = sub.add_parser(verb, help=what)
        s.add_argument("queue", type=Path, help="the queue file (steps: [{project, stage, minutes}])")
        s.add_argument("--minutes", type=float, required=True, help="minutes the campaign may take")
        s.add_argument("--root", type=Path, default=Path("."), help="the repository root (default: here)")
        s.add_argument("--pack", type=int, default=1, help="steps run at a time (default 1)")
        if verb == "run":
            s.add_argument("--out", type=Path, required=True, help="where the archive and logs go")
            s.add_argument("--max-mib", type=float, default=12.0,
                           help="cached outputs travel while the archive stays under this (default 12 MiB)")
    s = sub.add_parser("land", help="record the finished stages of an archive in this checkout")
    s.add_argument("archive", type=Path)
    s.add_argument("--root", type=Path, default=Path("."), help="the repository root (default: here)")
    s = sub.add_parser("queue", help="write a queue of a project's stages that are not current (a re-record)")
    s.add_argument("project", help="the DVC project, relative to the root (e.g. papers/ofeded)")
    s.add_argument("-o", "--output", type=Path, required=True, help="the queue file to write")
    s.add_argument("--stage", action="append", default=None, metavar="GLOB",
                   help="only stages matching this name pattern (repeatable; e.g. 'server@*')")
    s.add_argument("--scale", type=float, default=1.0,
                   help="minutes = scale x the seconds of a stage's committed runtime record (default 1; 1.65 from "
                        "records made with AVX512 kernels to a run with AVX2 ones); records made with --kernels "
                        "are taken as they are")
    s.add_argument("--kernels", default=None,
                   help="the CPU kernels of the machine the queue is for (default: this machine's, e.g. AVX2; "
                        "'none' scales every record, for a queue that runs elsewhere, e.g. on a lent GPU)")
    s.add_argument("--default-minutes", type=float, default=2.0, help="estimate of a stage without a record")
    s.add_argument("--frozen", action="store_true", help="include frozen (paper-profile) stages")
    s.add_argument("--with-inputs", action="store_true",
                   help="also queue, as rerun steps, the stages that write a missing input of a queued stage (a "
                        "fresh clone's client models, which do not ship)")
    s.add_argument("--root", type=Path, default=Path("."), help="the repository root (default: here)")
    args = p.parse_args(argv)
    try:
        if args.verb == "queue":
            if args.scale <= 0 or args.default_minutes <= 0:
                raise ConfigError("--scale" if args.scale <= 0 else "--default-minutes", "must be positive")
            if args.kernels is None:
                from ..provenance.machine import this_machine

                args.kernels = this_machine()["cpu_capability"]
            queue = stale_queue(args.root, args.project, patterns=args.stage, scale=args.scale,
                                default_minutes=args.default_minutes, frozen=args.frozen,
                                with_inputs=args.with_inputs,
                                kernels=None if args.kernels.lower() == "none" else args.kernels)
            total = sum(step.minutes for step, _ in queue)
            write_queue(args.output, queue, f"{len(queue)} stages of {args.project} whose lock entries are not "
                                            f"current; {total:.0f} min one at a time (scale {args.scale:g}, "
                                            f"records made with {args.kernels} kernels not scaled)\n"
                                            f"python -m osfl.campaign {' '.join(sys.argv[1:]) if argv is None else ' '.join(argv)}")
            print(f"{args.output}: {len(queue)} stages, {total:.0f} min one at a time; "
                  f"`python -m osfl.campaign plan {args.output} --minutes M --pack N` schedules them")
            return 0
        if args.verb == "land":
            report = land(args.root, args.archive)
            return 0 if all(r == "landed" for _, r in report) else 1
        if args.minutes <= 0:
            raise ConfigError("--minutes", f"{args.minutes:g} is not a positive number of minutes")
        queue = load_queue(args.queue)
        if args.verb == "plan":
            for step, what in plan(args.root, queue, args.minutes, pack=args.pack):
                print(f"{step.key}: {what}")
            return 0
        outcomes = run(args.root, queue, args.minutes, args.out, pack=args.pack, max_mib=args.max_mib)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0 if all(o.state in ("done", "finished") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
