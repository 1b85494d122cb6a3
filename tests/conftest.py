"""Suite set-up and the suite's own time breakdown.

At the end of every run (CI included) the terminal summary prints:

* seconds per test file and per paper (set-up, call and tear-down of its tests, fixtures included), against the
  per-paper budget of README "Tests and benchmarks" (``BUDGET_S``): a paper over its budget, or the whole suite
  over ``SUITE_BUDGET_S``, prints a WARNING line (not a failure);
* per DVC command the tests ran: wall time, the number of stages, their start-up and import seconds, their work
  seconds and what is left, DVC's own overhead (hashing, locks, lock file);
* per stage script (and server method): how many ran, start-up and imports, work.

Stage processes record themselves through ``OSFL_STAGE_TIMES`` (``osfl.stages.common.run_stage``); the commands
through ``sh`` of ``tests/helpers.py``, which sends ``python -m osfl...`` to a warm interpreter per worker
(``tests/zygote.py``): a stage's start-up is then its fork and its own imports, not torch's. With pytest-xdist the
workers append to one file named by ``OSFL_SUITE_TIMES``.

Temporary folders: a run without ``--basetemp`` puts its ``tmp_path`` folders under a fresh
``$TMPDIR/osfl-pytest-*`` instead of pytest's numbered ``pytest-of-<user>/pytest-N``. pytest deletes the oldest of
those at the end of every run, in the run's own time: a paper pipeline's copy holds hundreds of MB (HFLDD's smoke
copy: 394 MB in 2,027 files, 7.4 s to delete on this ext4 disk mounted with ``discard``), and deleting an earlier
full run's folder took 87 s at the end of a run. Here a passing run's folder is deleted by a detached ``rm -rf``
after the run; a failing run's is kept and its path printed; folders of runs older than a day that were not deleted
(a killed run) go the same way. ``OSFL_KEEP_TMP=1`` restores pytest's own numbered folders.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.chdir(ROOT)  # tests read params.yaml and dvc.yaml from the repository root
sys.path.insert(0, str(ROOT / "src"))
if os.environ.get("PYTEST_XDIST_WORKER"):  # workers share the cores: one thread each (before torch is imported)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"

# Seconds of test time per paper (summed over the three xdist workers, which share the 2-core CI machine, so a file
# running beside two others counts about 1.5x its time alone; README "Tests and benchmarks"): what a full CI run
# measured on 2026-11-28 on a 2-core AMD EPYC with AVX2 kernels, stage processes forked from the warm interpreter
# (tests/zygote.py; pytest wall 766 s, 1,158 s before it), rounded up by ~5 %, so that growth prints a warning. Runs
# on the same machine differ by up to ~10 %.
# "core" is everything that is not one paper's pipeline (library unit tests, the main pipeline, benchmarks).
BUDGET_S = {"core": 1190, "fedhydra": 355, "fedmho": 285, "ofeded": 405, "hfldd": 90}
SUITE_BUDGET_S = 640  # pytest's wall time: CI's 12 minutes less the installation (~45 s) and a margin
# The kernels the budgets were measured with; the breakdown names this CPU's when they differ, to read a warning by
# (before the warm interpreter, the suite ran 1.55-1.65x faster with AVX512 kernels than with AVX2 ones).
BUDGET_KERNELS = "AVX2"


def cpu_kernels() -> str:
    """The instruction set torch's CPU kernels use here (torch is imported by then in every run of the suite)."""
    import torch

    return torch.backends.cpu.get_cpu_capability()


def paper_of(nodeid: str) -> str:
    """The paper a test file belongs to, from its name (``test_<paper>_*.py``), else "core"."""
    from osfl.discover import pipelines  # at the summary, not at collection

    name = Path(nodeid.split("::")[0]).name
    for paper in pipelines():  # a paper without a budget here is reported without one
        if paper in name:
            return paper
    return "core"


@pytest.fixture(autouse=True)
def _one_thread_after_each_test():
    """Under xdist, put torch back on one intra-op thread after a test that called a stage in-process: the stage's
    ``apply_execution`` sets the configured thread count (2) for the rest of the worker, and two OpenMP threads
    spinning beside the other worker's busy core made a later 5 s test take 106 s in CI."""
    yield
    torch = sys.modules.get("torch")
    if os.environ.get("PYTEST_XDIST_WORKER") and torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def smoke_built(fixturenames) -> bool:
    """Whether a test needs a smoke pipeline built and run (minutes): one of its fixtures, its own or one they use, is
    a ``*_repo`` fixture of a pipeline test file (``smoke_repo``, ``fedmho_repo``, ...)."""
    return any(name.endswith("_repo") for name in fixturenames)


def pytest_collection_modifyitems(config, items):
    """Every test that needs a smoke pipeline is ``slow``, marked or not, so ``make test-fast`` (``-m "not slow"``)
    never builds one."""
    for item in items:
        if smoke_built(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


DURATIONS: dict[str, float] = defaultdict(float)  # nodeid -> set-up + call + tear-down seconds
T0 = time.perf_counter()


TMP_PREFIX = "osfl-pytest-"  # this suite's base temporary folders (module docstring)
STALE_TMP_S = 24 * 3600  # a folder of ours this old belongs to no running session
OWN_BASETEMP = pytest.StashKey[Path]()  # the base folder this run made (not one given by --basetemp)
EXIT_STATUS = pytest.StashKey[int]()


def remove_in_background(paths: list[Path]) -> None:
    """Delete ``paths`` in a detached ``rm -rf`` that outlives this process (its time is not the run's)."""
    if paths:
        subprocess.Popen(["rm", "-rf", "--", *map(str, paths)], start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stale_tmp_folders(root: Path, now: float) -> list[Path]:
    """Our base temporary folders under ``root`` left by runs that ended more than ``STALE_TMP_S`` ago."""
    return [p for p in root.glob(f"{TMP_PREFIX}*") if p.is_dir() and now - p.stat().st_mtime > STALE_TMP_S]


@pytest.hookimpl(tryfirst=True)  # before pytest's tmpdir plugin reads --basetemp
def pytest_configure(config):
    if not os.environ.get("OSFL_SUITE_TIMES"):  # the controller (or a plain run); xdist workers inherit it
        fd, path = tempfile.mkstemp(prefix="osfl-suite-times-", suffix=".jsonl")
        os.close(fd)
        os.environ["OSFL_SUITE_TIMES"] = path
    # the controller (or a plain run) picks the base folder; xdist gives each worker a folder inside it
    if not hasattr(config, "workerinput") and config.option.basetemp is None and not os.environ.get("OSFL_KEEP_TMP"):
        root = Path(tempfile.gettempdir())
        remove_in_background(stale_tmp_folders(root, time.time()))
        config.option.basetemp = tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root)
        config.stash[OWN_BASETEMP] = Path(config.option.basetemp)


def pytest_sessionfinish(session, exitstatus):
    session.config.stash[EXIT_STATUS] = int(exitstatus)


def pytest_unconfigure(config):
    own = config.stash.get(OWN_BASETEMP, None)
    if own is None:
        return
    if config.stash.get(EXIT_STATUS, 1) == 0:
        remove_in_background([own])
    elif own.exists():
        print(f"temporary folders of this run kept for inspection: {own}", file=sys.stderr)


def pytest_runtest_logreport(report):
    DURATIONS[report.nodeid] += report.duration


def _stage_key(rec: dict) -> str:
    return f"{rec['stage']}@{rec['method']}" if rec.get("method") else rec["stage"]


def time_breakdown(durations: dict[str, float], commands: list[dict], wall: float,
                   kernels: str = BUDGET_KERNELS) -> tuple[list[str], list[str]]:
    """(lines of the breakdown, WARNING lines) from per-test seconds and the command records; ``kernels``: this
    CPU's (a WARNING line says so when they are not the budgets')."""
    lines, warnings = [], []
    per_file, per_paper = defaultdict(float), defaultdict(float)
    for nodeid, s in durations.items():
        per_file[nodeid.split("::")[0]] += s
        per_paper[paper_of(nodeid)] += s
    total = sum(durations.values())
    lines.append(f"pytest wall {wall:.0f} s; test time summed over workers {total:.0f} s")
    lines.append("per paper (s, budget):")
    for paper, s in sorted(per_paper.items(), key=lambda kv: -kv[1]):
        budget = BUDGET_S.get(paper)
        lines.append(f"  {paper:<10} {s:7.1f}  / {budget}")
        if budget is not None and s > budget:
            warnings.append(f"WARNING: {paper} tests took {s:.0f} s, over their budget of {budget} s "
                            "(README 'Tests and benchmarks')")
    if wall > SUITE_BUDGET_S:
        warnings.append(f"WARNING: the suite took {wall:.0f} s, over its budget of {SUITE_BUDGET_S} s")
    if warnings and kernels != BUDGET_KERNELS:
        warnings.append(f"WARNING: this CPU's torch kernels are {kernels}; the budgets were measured with "
                        f"{BUDGET_KERNELS} ones")
    lines.append("per test file (s):")
    for f, s in sorted(per_file.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {s:7.1f}  {f}")
    if commands:
        # (command, its stages' start-up seconds, their work seconds)
        split = [(c, sum(r["startup_s"] for r in c["stages"]), sum(r["work_s"] for r in c["stages"]))
                 for c in commands]
        lines.append("per DVC/stage command (s): wall = stages' start-up+imports + stages' work + DVC's own overhead")
        for c, start, work in sorted(split, key=lambda t: -t[0]["wall"])[:15]:
            lines.append(f"  {c['wall']:7.1f}  {c['cmd']:<28} stages {len(c['stages']):3d}  start-up {start:6.1f}  "
                         f"work {work:6.1f}  dvc {c['wall'] - start - work:6.1f}  [{c['test']}]")
        per_stage = defaultdict(lambda: [0, 0.0, 0.0])
        for c in commands:
            for r in c["stages"]:
                agg = per_stage[_stage_key(r)]
                agg[0] += 1
                agg[1] += r["startup_s"]
                agg[2] += r["work_s"]
        lines.append("per stage script (count, start-up+imports s, work s):")
        for k, (n, start, work) in sorted(per_stage.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
            lines.append(f"  {k:<28} {n:4d}  {start:7.1f}  {work:7.1f}")
        all_wall = sum(c["wall"] for c, _, _ in split)
        all_start = sum(start for _, start, _ in split)
        all_work = sum(work for _, _, work in split)
        lines.append(f"all {len(commands)} commands: wall {all_wall:.0f} s = start-up+imports {all_start:.0f} s + work "
                     f"{all_work:.0f} s + DVC overhead {all_wall - all_start - all_work:.0f} s")
    return lines, warnings


def read_commands(path: str | None) -> list[dict]:
    if not path or not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput"):  # an xdist worker: the controller prints
        return
    wall = time.perf_counter() - T0
    lines, warnings = time_breakdown(DURATIONS, read_commands(os.environ.get("OSFL_SUITE_TIMES")), wall,
                                     kernels=cpu_kernels())
    terminalreporter.section("time breakdown")
    for line in lines:
        terminalreporter.write_line(line)
    for line in warnings:
        terminalreporter.write_line(line, yellow=True, bold=True)
