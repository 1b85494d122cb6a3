"""What the stage scripts share: argument parsing, error handling, data loading. A stage's configuration comes from
:func:`osfl.runconfig.load_run` alone."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from .. import IMPORTED_AT
from ..config import ExperimentPaths, Profile, RunConfig
from ..errors import ConfigError


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--params", default="params.yaml", help="parameters file (default: params.yaml)")
    p.add_argument("--experiment", default="main", help="experiment name: artifacts go under <kind>/<name>/")
    p.add_argument("--data-root", default="data/prepared", help="folder of prepared datasets")
    p.add_argument("--set", dest="overrides", action="extend", nargs="+", default=[], metavar="KEY=VALUE",
                   help="override a (dotted) key of the params file; VALUE is read as YAML (repeatable)")
    p.add_argument("--split", default=None, metavar="NAME",
                   help="partition shorthand: dir<alpha> (Dirichlet), <n>cc (n disjoint classes per client), iid")
    p.add_argument("--partition-of", default=None, metavar="EXPERIMENT",
                   help="read the client partition of another experiment (e.g. heterogeneous clients on the "
                        "homogeneous run's split)")
    p.add_argument("--clients-of", default=None, metavar="EXPERIMENT",
                   help="read the client uploads of another experiment (e.g. OFedED's DP-SGD-trained clients for a "
                        "variant whose results stay with the main run)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p


def run_name(args: argparse.Namespace) -> str:
    """``<method>-<tag>`` (or ``<method>``): the name a variant's model, metrics and curves are written under."""
    return f"{args.method}-{args.tag}" if args.tag else args.method


def record_stage_time(prog: str, argv: list[str], started: float, work_from: float) -> None:
    """Append one JSON line to ``$OSFL_STAGE_TIMES`` (set by the test suite; nothing is written otherwise):
    the stage, its start-up and import seconds and its work seconds.

    Start-up is counted from ``osfl.IMPORTED_AT``, when the process first imported ``osfl`` (the interpreter's
    own start, about 0.05 s, is not counted; the process's creation time would be wrong for the last command of
    a shell's ``a && b``, which the shell execs in its own process)."""
    import json
    import os

    log = os.environ.get("OSFL_STAGE_TIMES")
    if not log:
        return
    end = time.time()
    stage = prog.removesuffix(".py")
    method = argv[argv.index("--method") + 1] if "--method" in argv[:-1] else ""
    rec = {"stage": stage, "method": method, "argv": argv,
           "startup_s": round(work_from - started, 3), "work_s": round(end - work_from, 3)}
    with open(log, "a") as f:
        f.write(json.dumps(rec) + "\n")


def run_stage(fn: Callable[[argparse.Namespace], Any], p: argparse.ArgumentParser, argv=None) -> None:
    """Parse args, run ``fn``; a ConfigError becomes one line on stderr and exit code 2.

    Prints the stage's time; under the test suite (``OSFL_STAGE_TIMES``) also records start-up and work time.
    """
    started, work_from = IMPORTED_AT, time.time()
    args = p.parse_args(argv)
    try:
        t0 = time.perf_counter()
        fn(args)
        print(f"[{p.prog}] done in {time.perf_counter() - t0:.1f} s "
              f"(start-up and imports {work_from - started:.1f} s)", file=sys.stderr)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    finally:
        record_stage_time(p.prog, sys.argv[1:] if argv is None else list(argv), started, work_from)
    if argv is None:
        fast_exit()


def fast_exit() -> None:
    """End a stage process that has finished: flush what it printed and logged, then leave without the
    interpreter's teardown of torch's modules (0.6 s of every stage process on this CPU, measured). Every file
    a stage writes is closed by then (``with`` blocks, ``torch.save``, dvclive's ``end``); only a process that
    ran from the command line gets here, never a stage called in-process by the tests."""
    import logging
    import os

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def load_data(paths: ExperimentPaths, cfg: RunConfig):
    """The experiment's prepared dataset, resized as ``inputs.size`` says; stand-in arrays only under a profile that
    allows them (smoke)."""
    from ..data import load_prepared

    data = load_prepared(require_input(paths.prepared, "prepare"), allow_stand_in=cfg.profile.stand_in_data)
    return cfg.inputs.resize(data)  # inputs.size: the reference code's resizing (osfl.data.inputs)


def check_upload_name(name: str, key: str = "--distilled") -> str:
    """A second upload's folder name: one path component of letters, digits, '-', '_' or '.'."""
    import re

    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name or ""):
        raise ConfigError(key, f"{name!r} is not a folder name (letters, digits, '-', '_', '.'), e.g. distilled-ipc5")
    return name


def require_input(path: Path, stage: str) -> Path:
    if not path.exists():
        raise ConfigError("input", f"{path} is missing; run the '{stage}' stage first (dvc repro)")
    return path


def subset(n: int, cap: int | None, seed: int) -> np.ndarray:
    """A seeded random subset of range(n) of size ``cap`` (sorted), or everything when ``cap`` is None."""
    if cap is None or cap >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=cap, replace=False))


def test_tensors(data, profile: Profile, seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The test split on ``device`` (capped under the smoke profile, the same subset for every stage)."""
    idx = subset(len(data.y_test), profile.max_test, seed)
    x = torch.from_numpy(np.ascontiguousarray(data.x_test[idx])).to(device)
    y = torch.from_numpy(np.ascontiguousarray(data.y_test[idx])).long().to(device)
    return x, y


def stand_in_sizes(spec, profile: Profile) -> tuple[int, int] | None:
    """(n_train, n_test) of stand-in arrays when ``profile`` allows them (smoke), else None (never substitute)."""
    if not profile.stand_in_data:
        return None
    return (min(spec.n_train, profile.max_train or spec.n_train), min(spec.n_test, profile.max_test or spec.n_test))
