"""The farm's launcher: a plan's worker stages as Ray tasks in dependency order, live progress, bounded retries,
then the results restored in the user's checkout by DVC itself (``dvc repro --pull``: finished stages come from the
run-cache, local stages run here), so dvc.lock is written by DVC, never by this code.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ConfigError
from .plan import Plan, make_plan
from .worker import dvc_env, land_carried, run_stage


@dataclass
class FarmResult:
    plan: Plan
    done: dict[str, dict] = field(default_factory=dict)  # stage -> the worker's record (node, attempt, computed, s)
    failed: dict[str, str] = field(default_factory=dict)  # stage -> the last attempt's error with its log's tail
    skipped: list[str] = field(default_factory=list)  # stages not run because an upstream stage failed
    attempts: dict[str, int] = field(default_factory=dict)
    restore_ran: list[str] = field(default_factory=list)  # stages the final `dvc repro --pull` ran in the checkout
    landed: list[str] = field(default_factory=list)  # carried stages landed in the checkout (osfl.farm.carry)
    restored: list[str] = field(default_factory=list)  # stages it took from the run-cache
    unchanged: list[str] = field(default_factory=list)  # stages it found up to date (their inputs came out the same)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed and not self.skipped


class _Board:
    """A Ray actor: the tasks report here when an attempt starts or fails; the launcher reads the events."""

    def __init__(self):
        self.events: list[tuple[str, str, str]] = []
        self.attempts: dict[str, int] = {}

    def start(self, stage: str, node: str, pid: int) -> int:
        n = self.attempts.get(stage, 0) + 1
        self.attempts[stage] = n
        self.events.append((stage, "running", f"on {node} (worker pid {pid}, attempt {n})"))
        return n

    def note(self, stage: str, state: str, detail: str) -> None:
        self.events.append((stage, state, detail))

    def since(self, i: int) -> tuple[list[tuple[str, str, str]], dict[str, int]]:
        return self.events[i:], dict(self.attempts)


def _task(job: dict, stage: str, board, kill_once: str | None, *after: dict) -> dict:
    import ray

    attempt = ray.get(board.start.remote(stage, socket.gethostname(), os.getpid()))
    carried = {k: v for rec in after for k, v in rec.get("carried", {}).items()}  # the upstream tasks' results
    try:
        return run_stage(job, stage, attempt, carried=carried, kill_once=kill_once)
    except Exception as exc:
        board.note.remote(stage, "attempt failed", str(exc).splitlines()[0])
        raise


def _git(args: Sequence[str], cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def job_for(plan: Plan, git_url: str | None, remote_url: str | None, workdir: Path | None) -> dict[str, Any]:
    """What every task needs: the commit (HEAD, which the tracked files must equal, but for dvc.lock files and the
    outputs git tracks), the git URL workers clone, the DVC remote's URL, the folder for workers' checkouts, and
    the plan's order, upstream stages and ways back (to land carried stages)."""
    from dvc.repo import Repo

    top = Path(_git(["rev-parse", "--show-toplevel"], plan.project))
    commit = _git(["rev-parse", "HEAD"], top)
    with Repo(str(plan.project)) as repo:
        outs = {str(Path(o.fs_path).resolve().relative_to(top)) for s in repo.index.stages for o in s.outs}
        if remote_url is None:
            name = repo.config["core"].get("remote")
            if not name:
                raise ConfigError("remote", f"{plan.project} has no default DVC remote; add one (dvc remote add -d) "
                                            "that every worker can reach, or pass --remote-url")
            remote_url = str(repo.config["remote"][name]["url"])
    dirty = [line[3:] for line in _git(["status", "--porcelain", "--untracked-files=no"], top).splitlines()]
    dirty = [p for p in dirty if Path(p).name != "dvc.lock" and p not in outs]
    if dirty:
        more = " ..." if len(dirty) > 5 else ""
        raise ConfigError("git", f"tracked files differ from HEAD ({', '.join(dirty[:5])}{more}): commit them first; "
                                 "the workers check out HEAD")
    return {"git_url": git_url or str(top), "commit": commit, "project": str(plan.project.relative_to(top)),
            "remote_url": remote_url, "workdir": str(workdir or Path(tempfile.gettempdir()) / "osfl-farm"),
            "order": [s.name for s in plan.stale], "upstream": {s.name: s.upstream for s in plan.stale},
            "via": {s.name: s.via for s in plan.workers}}


def _restore(plan: Plan, stages: list[str], job: dict[str, Any], carried: dict[str, dict]
             ) -> tuple[list[str], list[str], list[str], list[str]]:
    """The carried stages landed in the user's checkout (:func:`osfl.farm.worker.land_carried`), then `dvc repro
    --pull <stages>`, from the remote the workers pushed to (``--remote-url``: the checkout's default remote for
    that command only); the stages it ran, took from the run-cache, found unchanged, and landed."""
    if not stages:
        return [], [], [], []
    local = plan.project / ".dvc" / "config.local"
    before = local.read_bytes() if local.is_file() else None
    subprocess.run([sys.executable, "-m", "dvc", "remote", "add", "--force", "--default", "--local", "farm",
                    job["remote_url"]],
                   cwd=plan.project, check=True, capture_output=True, text=True)
    landed: list[str] = []
    try:
        if carried:
            log = plan.project / ".farm-logs" / "land.log"
            log.parent.mkdir(exist_ok=True)
            log.write_text("")
            landed = land_carried(plan.project, carried, job["upstream"], job["order"], log, dvc_env())
        proc = subprocess.run([sys.executable, "-m", "dvc", "repro", "--pull", *stages], cwd=plan.project,
                              env=dvc_env(), capture_output=True, text=True)
    finally:  # the checkout's own DVC config as it was
        if before is None:
            local.unlink(missing_ok=True)
        else:
            local.write_bytes(before)
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"the final `dvc repro --pull` in {plan.project} exited {proc.returncode}:\n{text[-3000:]}")
    if carried:  # what the landing's restores did comes first
        text = (plan.project / ".farm-logs" / "land.log").read_text(errors="replace") + text
    ran = list(dict.fromkeys(re.findall(r"Running stage '([^']+)'", text)))
    restored = [n for n in dict.fromkeys(re.findall(r"Stage '([^']+)' is cached - skipping run", text))
                if n not in ran]
    unchanged = [n for n in dict.fromkeys(re.findall(r"Stage '([^']+)' didn't change, skipping", text))
                 if n not in ran and n not in restored]
    return ran, restored, unchanged, landed


def run_farm(pipeline: Path, selectors: Sequence[str] = (), *, address: str | None = None, cpus: int | None = None,
             git_url: str | None = None, remote_url: str | None = None, workdir: Path | None = None,
             max_retries: int = 2, kill_once: tuple[str, Path] | None = None,
             out: Callable[[str], None] = print) -> FarmResult:
    """Run the stale stages of ``pipeline`` (and ``selectors``, :func:`osfl.farm.plan.make_plan`) on Ray: a local
    instance with ``cpus`` CPUs, or the cluster at ``address``. Each worker stage is a task with its family's
    resources, retried up to ``max_retries`` times whatever the failure (a lost worker, a failing command); then
    the finished stages are restored here and the local stages run (``dvc repro --pull``). Stages downstream of
    one that failed every attempt are skipped and reported; nothing finished is lost (it is on the remote).
    ``kill_once``: (stage, marker file) for the tests: the first attempt of that stage loses its worker mid-stage."""
    import ray

    t0 = time.perf_counter()
    if max_retries < 0:
        raise ConfigError("max_retries", f"must be >= 0, got {max_retries}")
    plan = make_plan(pipeline, selectors)
    result = FarmResult(plan)
    job = job_for(plan, git_url, remote_url, workdir)
    carried = sum(s.via == "carried" for s in plan.workers)
    out(f"[farm] {plan.pipeline}: {len(plan.selected)} stages selected, {len(plan.up_to_date)} up to date, "
        f"{len(plan.workers)} to run on workers ({carried} carried back: a persistent output, which DVC's run-cache "
        f"cannot hold), {len(plan.local)} to run here (no output); commit {job['commit'][:10]}, remote "
        f"{job['remote_url']}")
    started = False
    if plan.workers:
        if address is None:
            ray.init(num_cpus=cpus or os.cpu_count(), include_dashboard=False, log_to_driver=False,
                     object_store_memory=128 * 1024 ** 2, logging_level="ERROR")
        else:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        started = True
    try:
        if plan.workers:
            _schedule(ray, plan, job, result, max_retries, kill_once, out)
    finally:
        if started:
            ray.shutdown()
    blocked = set(result.failed) | set(result.skipped)
    todo = [s.name for s in plan.stale if s.name not in blocked and not blocked & set(s.after)]
    out(f"[farm] restoring {len(todo)} stages in {plan.project} (dvc repro --pull)")
    carried = {k: v for rec in result.done.values() for k, v in rec.get("carried", {}).items() if k in todo}
    result.restore_ran, result.restored, result.unchanged, result.landed = _restore(plan, todo, job, carried)
    recomputed = [s for s in result.restore_ran if s in {w.name for w in plan.workers}]
    if recomputed:
        out(f"[farm] WARNING: the restore computed worker stages again: {', '.join(recomputed)}")
    result.seconds = time.perf_counter() - t0
    _summary(result, out)
    return result


def _schedule(ray, plan: Plan, job: dict, result: FarmResult, max_retries: int,
              kill_once: tuple[str, Path] | None, out: Callable[[str], None]) -> None:
    gpus = ray.cluster_resources().get("GPU", 0) > 0
    if not gpus and any(s.resources.gpus for s in plan.workers):
        out("[farm] the cluster has no GPU: the stages' GPU requests are dropped")
    board = ray.remote(_Board).remote()
    task = ray.remote(_task)
    refs: dict[str, Any] = {}
    pending: dict[Any, str] = {}
    for st in plan.workers:
        r = st.resources
        opts = {"num_cpus": r.cpus, "num_gpus": r.gpus if gpus else 0, "memory": int(r.memory_gb * 1024 ** 3),
                "max_retries": max_retries, "retry_exceptions": True, "name": st.name}
        kill = str(kill_once[1]) if kill_once and kill_once[0] == st.name else None
        refs[st.name] = task.options(**opts).remote(job, st.name, board, kill, *[refs[a] for a in st.after])
        pending[refs[st.name]] = st.name
        wait = f", after {', '.join(st.after)}" if st.after else ""
        out(f"[farm] {st.name}: queued (cpus {r.cpus:g}, gpus {opts['num_gpus']:g}, memory {r.memory_gb:g} GB{wait})")
    seen = 0
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
        events, attempts = ray.get(board.since.remote(seen))
        seen += len(events)
        for stage, state, detail in events:
            out(f"[farm] {stage}: {state} {detail}")
        for ref in ready:
            stage = pending.pop(ref)
            try:
                rec = ray.get(ref)
                result.done[stage] = rec
                how = "computed" if rec["computed"] else "restored from the run-cache"
                out(f"[farm] {stage}: done on {rec['node']} ({how}, {rec['seconds']:.1f} s, attempt {rec['attempt']})")
            except Exception as exc:  # every attempt failed, or an upstream stage did
                _, attempts = ray.get(board.since.remote(seen))
                if stage not in attempts:
                    result.skipped.append(stage)
                    out(f"[farm] {stage}: skipped (an upstream stage failed)")
                else:
                    result.failed[stage] = str(exc)
                    out(f"[farm] {stage}: FAILED after {attempts[stage]} attempts:\n{exc}")
        result.attempts = attempts


def _summary(result: FarmResult, out: Callable[[str], None]) -> None:
    out(f"[farm] summary ({result.seconds:.1f} s):")
    for st in result.plan.stale:
        if st.name in result.done:
            rec = result.done[st.name]
            how = "computed" if rec["computed"] else "from the run-cache"
            line = f"done on {rec['node']}, {how}, {result.attempts.get(st.name, rec['attempt'])} attempt(s), " \
                   f"{rec['seconds']:.1f} s (the stage's own {rec.get('command_s', 0):.1f} s)"
            line += ", landed here" if st.name in result.landed else ""
        elif st.name in result.failed:
            line = f"FAILED after {result.attempts.get(st.name, 0)} attempts"
        elif st.name in result.skipped:
            line = "skipped (upstream failed)"
        elif st.name in result.restore_ran:
            line = "ran here (no output)"
        elif st.name in result.restored:
            line = "restored here"
        elif st.name in result.unchanged:
            line = "up to date (its inputs came out unchanged)"
        else:
            line = "not run (upstream failed)"
        out(f"  {st.name:<48} {line}")
