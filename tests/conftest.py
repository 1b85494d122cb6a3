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
"""
import json
import os
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
SUITE_BUDGET_S = 780  # pytest's wall time: CI's 15 minutes less the installation (~65 s) and a margin
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


DURATIONS: dict[str, float] = defaultdict(float)  # nodeid -> set-up + call + tear-down seconds
T0 = time.perf_counter()


def pytest_configure(config):
    if not os.environ.get("OSFL_SUITE_TIMES"):  # the controller (or a plain run); xdist workers inherit it
        fd, path = tempfile.mkstemp(prefix="osfl-suite-times-", suffix=".jsonl")
        os.close(fd)
        os.environ["OSFL_SUITE_TIMES"] = path


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
