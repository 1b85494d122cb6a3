"""One of our stage modules run with its server's test-set evaluations timed, for peer rows whose official loop
evaluates less often than ours (findings.yaml F13: FedMHO's official server tests once, ours after every epoch)::

    python benchmarks/peers/eval_timer.py OUT.json osfl.stages.server --experiment ... [the stage's arguments]

runs the stage as ``python -m osfl.stages.server ...`` would, and writes to OUT.json the number of
``ServerContext.evaluate`` calls made inside ``run_method`` (the part of the stage whose seconds its run record
calls ``server_seconds``), the seconds they took, and each call's seconds in order (``calls``). Nothing computed
changes: the wrapper reads the clock around the call and passes its result through. A harness takes ``(evaluations -
1)`` of them out of ours to compare the same work as an official loop that tests once (FedMHO), or the calls before
the last ``epochs`` (the student's test before training) to compare with an official loop that
tests after every epoch (DENSE, F35).
"""
from __future__ import annotations

import json
import runpy
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit("usage: eval_timer.py OUT.json MODULE [ARG ...]")
    out, module, args = Path(argv[0]), argv[1], argv[2:]
    from osfl.methods.base import ServerContext
    from osfl.protocols import one_shot

    spent = {"evaluations": 0, "eval_seconds": 0.0, "calls": []}
    inside = [False]
    evaluate, run_method = ServerContext.evaluate, one_shot.run_method

    def timed_evaluate(self, predict):
        t = time.perf_counter()
        try:
            return evaluate(self, predict)
        finally:
            if inside[0]:
                seconds = time.perf_counter() - t
                spent["evaluations"] += 1
                spent["eval_seconds"] += seconds
                spent["calls"].append(round(seconds, 4))

    def timed_run_method(*a, **k):
        inside[0] = True
        try:
            return run_method(*a, **k)
        finally:
            inside[0] = False
            out.write_text(json.dumps(spent))  # now: a stage ends with os._exit (stages.common.fast_exit)

    ServerContext.evaluate, one_shot.run_method = timed_evaluate, timed_run_method
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
