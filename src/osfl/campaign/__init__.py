"""A campaign for a short GPU slot (issue 41): a prioritised queue of DVC stages run to a deadline on the lent
machine, what finished packed into one archive, and that archive landed in the user's checkout as dvc.lock entries.

``python -m osfl.campaign`` (see ``--help``):

* ``plan QUEUE --minutes M [--pack N]``: which steps of the queue are done, which run when (``run``'s schedule, N at
  a time, each taking its estimate), which do not fit and which are skipped for an upstream step that does not run;
* ``run QUEUE --minutes M --out DIR`` (on the lent machine, in its copy of the repository): runs the steps that are
  not done in the queue's order, at most ``--pack`` at a time (several small stages share one GPU), a step only once
  the queue's steps whose outputs it reads have finished (skipped if one did not), each stage's own
  ``cmd`` in its ``wdir`` (frozen stages too: paper-profile stages are frozen so that ``dvc repro`` never repeats
  GPU-hours by accident), stops what runs at the deadline, ``dvc commit``s each finished stage there and packs its
  outputs with its lock entry into ``DIR/campaign.tar.gz`` (outputs cached by DVC only up to ``--max-mib``: the rest
  stay behind and are named);
* ``queue PROJECT -o FILE [--stage GLOB] [--scale F]``: writes a queue of the project's stages whose lock entry is not
  current or missing (a re-record, or grid items never run), upstream first, each estimated from its committed
  runtime record or its recorded siblings' (the estimate's source in a comment);
* ``land ARCHIVE`` (back home): unpacks each finished stage's outputs and records it with ``dvc commit``, then checks
  that every dependency hashes here as it did on the lent machine (the same bytes travelled); a stage whose
  dependencies differ, or whose cached outputs stayed behind, is not landed, and the report says why.

A later lending resumes: a step whose lock entry matches its dependencies and command is done and skipped, so a
queue run in several slots runs each stage once. A step with ``rerun: true`` is done only when its outputs are here
as well: the way to remake cached outputs that a committed run kept nowhere. A stage stopped at the deadline starts
again in the next slot (stages do not checkpoint inside; a step's ``minutes`` is its estimate, and a step that would
not fit in what is left is not started).
"""
from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import ConfigError
from ..provenance.lineage import locked_stages

ARCHIVE = "campaign.tar.gz"
MANIFEST = "campaign.json"


@dataclass(frozen=True)
class Step:
    """One queue entry: a stage of a DVC project (a folder with dvc.yaml, relative to the repository root) and the
    minutes it is expected to take on the lent machine. ``rerun``: the stage is done only when its outputs are in
    the workspace too (``dvc checkout`` first), so a stage whose lock entry is current but whose cached outputs were
    kept nowhere (not in the shipped store, not in this cache) runs again to make them and records what it made."""
    project: str
    stage: str
    minutes: float
    rerun: bool = False

    @property
    def key(self) -> str:
        return f"{self.project}:{self.stage}"


@dataclass
class Outcome:
    step: Step
    state: str                       # done (before), skipped (does not fit), finished, failed, stopped
    seconds: float = 0.0
    detail: str = ""
    files: list[str] = field(default_factory=list)       # relative to the repository root, packed
    left_behind: list[str] = field(default_factory=list)  # cached outputs over the size cap


STEP_KEYS = {"project", "stage", "minutes"}  # a queue step's keys; ``rerun`` may come with them


def load_queue(path: Path) -> list[Step]:
    """The queue file: ``steps: [{project, stage, minutes[, rerun]}, ...]`` in priority order; one-line errors."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError("queue", f"{path} does not exist") from None
    steps = (data or {}).get("steps") if isinstance(data, dict) else None
    if not isinstance(steps, list) or not steps:
        raise ConfigError("steps", f"{path} needs a non-empty list `steps` of {{project, stage, minutes}}")
    out = []
    for i, s in enumerate(steps):
        if not isinstance(s, dict) or not STEP_KEYS <= set(s) <= STEP_KEYS | {"rerun"}:
            raise ConfigError(f"steps[{i}]", "needs the keys project, stage, minutes (and may have rerun)")
        if not isinstance(s.get("rerun", False), bool):
            raise ConfigError(f"steps[{i}].rerun", f"{s['rerun']!r} is not true or false")
        if not isinstance(s["minutes"], (int, float)) or s["minutes"] <= 0:
            raise ConfigError(f"steps[{i}].minutes", f"{s['minutes']!r} is not a positive number of minutes")
        out.append(Step(str(s["project"]), str(s["stage"]), float(s["minutes"]), bool(s.get("rerun", False))))
    if len({s.key for s in out}) != len(out):
        raise ConfigError("steps", "a stage is listed twice")
    return out


class _Projects:
    """Each project's DVC repository loaded once (a paper's dvc.yaml has a hundred stages: seconds per load) and its
    steps' stage objects resolved from it (foreach/matrix included), for every check the campaign makes: whether a
    step's project and stage exist, whether its lock entry is current, its cmd, wdir, deps and outputs."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._repos: dict[str, object] = {}
        self._stages: dict[str, dict] = {}
        self._locks: dict[str, dict] = {}  # project -> its dvc.lock's stages, read once with the repository

    def __enter__(self) -> "_Projects":
        return self

    def __exit__(self, *exc) -> None:
        for repo in self._repos.values():
            repo.close()
        self._repos.clear()

    def _load(self, project: str) -> None:
        """Read ``project``'s stages and lock entries once; a one-line error for a folder without dvc.yaml."""
        if project in self._repos:
            return
        from dvc.repo import Repo

        if not (self.root / project / "dvc.yaml").is_file():
            raise ConfigError("project", f"{project!r} has no dvc.yaml under {self.root}")
        self._repos[project], self._stages[project], self._locks[project] = _load_project(Repo, self.root / project)

    def stage(self, step: Step):
        """The DVC stage object of a step; one-line errors for a missing project or stage."""
        self._load(step.project)
        try:
            return self._stages[step.project][step.stage]
        except KeyError:
            raise ConfigError("stage", f"{step.stage!r} is not a stage of {step.project}/dvc.yaml") from None

    def names(self, project: str) -> list[str]:
        """Every stage name of ``project`` (foreach/matrix items resolved), in dvc.yaml's order."""
        self._load(project)
        return list(self._stages[project])

    def info(self, step: Step) -> dict:
        """The step's ``cmd``, ``wdir``, ``deps``, ``outs`` and ``cached`` outputs (absolute paths)."""
        stage = self.stage(step)
        return {"cmd": stage.cmd, "wdir": stage.wdir, "deps": [d.fs_path for d in stage.deps],
                "outs": [o.fs_path for o in stage.outs], "cached": [o.fs_path for o in stage.outs if o.use_cache]}

    def done(self, step: Step) -> bool:
        """The stage has a lock entry and it matches its command, dependencies and outputs (frozen or not; cached
        outputs may be missing here, as on a fresh clone that did not pull them, unless the step is a ``rerun``)."""
        stage = self.stage(step)
        if not self._locks[step.project].get(step.stage):
            return False
        frozen = stage.frozen
        stage.frozen = False  # in memory only: a frozen stage's dependencies are otherwise never compared
        try:
            with _project_lock(self._repos[step.project]):
                return not stage.changed(allow_missing=not step.rerun)
        finally:
            stage.frozen = frozen


def stale_queue(root: Path, project: str, *, patterns: list[str] | None = None, scale: float = 1.0,
                default_minutes: float = 2.0, frozen: bool = False,
                kernels: str | None = None) -> list[tuple[Step, str]]:
    """A queue for re-recording ``project`` or running what it has not run: its stages (those matching one of
    ``patterns``, fnmatch, if given) whose lock entry is not current or missing, frozen ones only with ``frozen``
    (paper-profile GPU stages), upstream before downstream and else in dvc.yaml's order, each with (step, where its
    estimate came from). A stage's minutes are ``scale`` times the seconds of its committed runtime record (an output
    ``runtime/*.json`` with ``seconds``; ``scale`` converts between machines, e.g. 1.65 from AVX512 to AVX2 kernels,
    and a record that names ``kernels``, those of the machine the queue is for, is taken as it is); a stage without
    one takes the median of its siblings' (the same template and the same last part of the item, e.g.
    ``server@*-col3``, else the same template), each scaled so, else ``default_minutes``."""
    root = Path(root).resolve()
    picked, source, resolved, records = [], {}, {}, {}
    with _Projects(root) as projects:
        for name in projects.names(project):
            step = Step(project, name, 1.0)
            stage = projects.stage(step)
            if not stage.cmd:
                continue
            info = projects.info(step)
            seconds, record, made_with = _recorded_seconds(info["outs"])
            factor = 1.0 if kernels is not None and made_with == kernels else scale
            records[name] = (None, "") if seconds is None else (
                seconds * factor, f"{seconds:.0f} s x {factor:g} ({os.path.relpath(record, root / project)}"
                                  f"{', ' + made_with if made_with else ''})")  # (scaled seconds, where from)
            if (patterns and not any(fnmatch.fnmatchcase(name, pat) for pat in patterns)) \
                    or (stage.frozen and not frozen) or projects.done(step):
                continue
            picked.append(name)
            resolved[name] = info
    steps = []
    for name in picked:
        seconds, why = records[name] if records[name][0] is not None else _siblings_seconds(name, records)
        minutes = round(max(seconds / 60, 0.1), 1) if seconds is not None else default_minutes
        steps.append(Step(project, name, minutes))
        source[steps[-1].key] = why if seconds is not None else "no runtime record here or in its siblings: the default"
    upstream = _upstream({step.key: resolved[step.stage] for step in steps})
    ordered, placed = [], set()
    while len(ordered) < len(steps):  # Kahn's order, ties in dvc.yaml's order (DVC refuses cycles)
        step = next(s for s in steps if s.key not in placed and upstream[s.key] <= placed)
        ordered.append(step)
        placed.add(step.key)
    return [(step, source[step.key]) for step in ordered]


def _siblings_seconds(name: str, records: dict[str, tuple[float | None, str]]) -> tuple[float | None, str]:
    """The median of ``name``'s siblings' recorded seconds (``records``: stage -> (scaled seconds or None, where
    from), as :func:`stale_queue` keeps them) and how they were chosen; (None, "") without any. Siblings, first found
    first: the same template and last part of the item, the same template, the same family (the
    template's name before ``_``)."""
    import statistics

    template, _, item = name.partition("@")
    last = item.rsplit("-", 1)[-1]
    family = template.split("_")[0]  # condense_v's family is condense's, train_dp's train's
    rules = [(f"{template}@*-{last}", lambda n: n.startswith(template + "@") and n.endswith("-" + last))] if item else []
    rules += [(f"{template}@*", lambda n: n.partition("@")[0] == template),
              (f"{family}*@*", lambda n: n.partition("@")[0].split("_")[0] == family)]
    for rule, same in rules:
        found = [s for n, (s, _) in records.items() if n != name and s is not None and same(n)]
        if found:
            median = statistics.median(found)
            return median, f"median of {len(found)} recorded {rule} ({median:.0f} s as scaled)"
    return None, ""


def _recorded_seconds(outs: list[str]) -> tuple[float | None, Path | None, str]:
    """(``seconds``, path, kernels or "") of the first runtime record among a stage's outputs (a file under a
    ``runtime`` folder; the kernels name the machine its seconds are from). A declared ``<run>/runtime/<x>.json``
    that is not there (a run made before runtime records were written apart, as FedHydra's committed ones) falls back
    to the run record beside it, ``<run>/runs/<x>.json``, and its ``server_seconds``."""
    for out in map(Path, outs):
        if out.suffix == ".json" and out.parent.name == "runtime" and not out.exists():
            candidates = [(out.parent.parent / "runs" / out.name, "server_seconds")]
        else:
            candidates = [(path, "seconds") for path in (_files(out) if out.exists() else [])
                          if path.suffix == ".json" and "runtime" in path.parts]
        for path, key in candidates:
            try:
                record = json.loads(path.read_text())
                seconds = record.get(key)
            except (OSError, ValueError, AttributeError):
                continue
            if isinstance(seconds, (int, float)):
                kernels = (record.get("runtime") or {}).get("cpu_capability")
                return float(seconds), path, str(kernels or "")
    return None, None, ""


def write_queue(path: Path, queue: list[tuple[Step, str]], header: str) -> None:
    """The queue file ``load_queue`` reads, each step's estimate explained in a comment."""
    lines = [f"# {line}" for line in header.splitlines()] + ["steps:"]
    for step, why in queue:
        lines.append(f"  - {{project: {step.project}, stage: '{step.stage}', minutes: {step.minutes:g}}}  # {why}")
    Path(path).write_text("\n".join(lines) + "\n")


def is_done(root: Path, step: Step) -> bool:
    """:meth:`_Projects.done` of one step."""
    with _Projects(root) as projects:
        return projects.done(step)


LOCK_BUSY = "Unable to acquire lock"
LOCK_WAIT_S = 120.0


def _dvc(project: Path, *args: str, wait_s: float = LOCK_WAIT_S) -> subprocess.CompletedProcess:
    """``dvc <args>`` in ``project``, tried again for up to ``wait_s`` seconds while another DVC process holds the
    project's lock (two campaigns in one project, or a user's ``dvc status``, once cost a finished stage its commit)."""
    end = time.monotonic() + wait_s
    while True:
        done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=project, capture_output=True, text=True)
        if done.returncode == 0 or LOCK_BUSY not in done.stderr + done.stdout or time.monotonic() > end:
            return done
        time.sleep(2.0)


@contextlib.contextmanager
def _project_lock(repo, wait_s: float = LOCK_WAIT_S):
    """Hold a project's DVC lock (``.dvc/tmp/lock``), as DVC's own commands do while they read or write dvc.lock,
    waiting up to ``wait_s`` seconds while another DVC process holds it (a second campaign started in a project
    while the first committed a stage read half a dvc.lock and stopped)."""
    from dvc.lock import LockError

    end = time.monotonic() + wait_s
    while True:
        try:
            repo.lock.lock()
            break
        except LockError:
            if time.monotonic() > end:
                raise
            time.sleep(2.0)
    try:
        yield
    finally:
        repo.lock.unlock()


def _load_project(repo_class, project: Path, wait_s: float = LOCK_WAIT_S) -> tuple[object, dict, dict]:
    """(the DVC repository, its stages by name in dvc.yaml's order, its lock entries), read under the project's
    lock."""
    repo = repo_class(str(project))
    with _project_lock(repo, wait_s):
        return repo, {stage.name: stage for stage in repo.index.stages}, locked_stages(project)


def _lock_entry(project: Path, name: str) -> dict:
    return locked_stages(project).get(name, {})


def _files(path: Path) -> list[Path]:
    return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())


def _next_step(todo: list[Step], upstream: dict[str, set[str]],
               ended: dict[str, bool]) -> tuple[Step | None, list[str]]:
    """The schedule's next decision, shared by ``plan`` and ``run`` (``ended``: step key -> whether it finished, for
    the steps that ended or were decided): (the first step that reads one that ended without finishing, those
    keys), else (the first step whose upstream steps all finished, []), else (None, []): every step left waits."""
    for step in todo:
        lost = [u for u in upstream[step.key] if u in ended and not ended[u]]
        if lost:
            return step, lost
    return next((s for s in todo if all(ended.get(u) for u in upstream[s.key])), None), []


def plan(root: Path, queue: list[Step], minutes: float, *, pack: int = 1) -> list[tuple[Step, str]]:
    """(step, what happens to it) in queue order: done, runs (from when to when, in minutes from the start), does not
    fit, or skipped (a step whose outputs it reads does not run). The schedule is ``run``'s: at most ``pack`` steps at
    a time, each taking its estimate, a step only after the steps it reads from, in the queue's order."""
    with _Projects(root) as projects:
        done = {step.key: projects.done(step) for step in queue}
        todo = [step for step in queue if not done[step.key]]
        resolved = {step.key: projects.info(step) for step in todo}
    upstream = _upstream(resolved)
    what = {key: "done" for key, d in done.items() if d}
    t, running, finished = 0.0, {}, set()  # now, key -> its end, keys that ended
    while todo:
        while todo and len(running) < max(1, pack):
            ended = {k: k in finished for k in what if k not in running}
            step, lost = _next_step(todo, upstream, ended)
            if step is None:  # every step left waits for one that runs
                break
            todo.remove(step)
            if lost:
                what[step.key] = "skipped (reads " + ", ".join(sorted(lost)) + ", which does not run)"
                continue
            if t + step.minutes > minutes + 1e-9:
                what[step.key] = f"does not fit ({step.minutes:g} min, {minutes - t:.3g} left)"
                continue
            running[step.key] = t + step.minutes
            what[step.key] = f"runs ({t:.3g}-{t + step.minutes:.3g} min)"
        if not running:
            break
        t = min(running.values())
        for key in [k for k, end in running.items() if end <= t]:
            finished.add(key)
            del running[key]
    return [(step, what[step.key]) for step in queue]


def run(root: Path, queue: list[Step], minutes: float, out: Path, *, pack: int = 1, max_mib: float = 12.0,
        progress=print) -> list[Outcome]:
    """Run the queue to a deadline of ``minutes`` from now (see the module's docstring); writes ``out/ARCHIVE``."""
    root, out = Path(root).resolve(), Path(out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    deadline = start + minutes * 60
    outcomes: dict[str, Outcome] = {}
    todo = []
    with _Projects(root) as projects:
        for step in queue:
            if projects.done(step):
                outcomes[step.key] = Outcome(step, "done", detail="its lock entry is current")
            else:
                todo.append(step)
        resolved = {step.key: projects.info(step) for step in todo}
    _refuse_git_tracked(root, resolved)
    upstream = _upstream(resolved)
    running: dict[str, tuple[subprocess.Popen, float, object]] = {}  # key -> (process, start, its log file)
    exited: list[tuple[Step, float]] = []  # finished commands whose stage is still to be committed and packed

    def start_ready() -> None:
        """Start the next steps that fit and whose inputs are ready, up to ``pack`` running."""
        now = time.monotonic()
        while todo and len(running) < max(1, pack):
            step, lost = _next_step(todo, upstream, {k: o.state == "finished" for k, o in outcomes.items()})
            if step is None:  # every step left waits for one that runs
                return
            todo.remove(step)
            if lost:
                outcomes[step.key] = Outcome(step, "skipped", detail="an upstream step did not finish: "
                                                                     + ", ".join(lost))
                progress(f"[campaign] {step.key}: skipped ({outcomes[step.key].detail})")
                continue
            if now + step.minutes * 60 > deadline:
                outcomes[step.key] = Outcome(step, "skipped", detail=f"does not fit: {step.minutes:g} min, "
                                                                     f"{(deadline - now) / 60:.1f} left")
                continue
            wdir, cmd = Path(resolved[step.key]["wdir"]), resolved[step.key]["cmd"]
            log = open(out / "logs" / f"{step.stage.replace('@', '_')}.log", "w")
            proc = subprocess.Popen(cmd if isinstance(cmd, str) else " && ".join(cmd), shell=True, cwd=wdir,
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            running[step.key] = (proc, now, log)
            progress(f"[campaign] started {step.key} (estimate {step.minutes:g} min)")

    while todo or running or exited:
        start_ready()
        for key, (proc, t0, log) in list(running.items()):
            step = next(s for s in queue if s.key == key)
            if proc.poll() is None and time.monotonic() < deadline:
                continue
            if proc.poll() is None:  # the deadline: the whole process group, SIGTERM then SIGKILL
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                outcomes[key] = Outcome(step, "stopped", time.monotonic() - t0, "stopped at the deadline")
            elif proc.returncode != 0:
                log.flush()
                outcomes[key] = Outcome(step, "failed", time.monotonic() - t0,
                                        f"exit code {proc.returncode}: {_last_line(Path(log.name))} ({log.name})")
            else:  # its dependants may start now; the commit (seconds of DVC) comes after they did
                outcomes[key] = Outcome(step, "finished", time.monotonic() - t0)
                exited.append((step, time.monotonic() - t0))
            log.close()
            del running[key]
            if outcomes[key].state != "finished":
                progress(f"[campaign] {key}: {outcomes[key].state} ({outcomes[key].seconds:.0f} s) "
                         f"{outcomes[key].detail}")
        start_ready()
        if exited:
            step, seconds = exited.pop(0)
            outcomes[step.key] = o = _collect(root, step, resolved[step.key], seconds, max_mib)
            progress(f"[campaign] {step.key}: {o.state} ({o.seconds:.0f} s) {o.detail}")
        elif running:
            time.sleep(0.5)
    result = [outcomes[s.key] for s in queue]
    _pack(root, out, result, minutes, time.monotonic() - start)
    return result


def _last_line(path: Path, limit: int = 240) -> str:
    """The last non-empty line of a step's log (what a failed command said last, usually its error), shortened."""
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    last = lines[-1] if lines else "its log is empty"
    return last if len(last) <= limit else last[:limit - 3] + "..."


def _refuse_git_tracked(root: Path, resolved: dict[str, dict]) -> None:
    """Fail before any GPU second is spent when a step's cached output is tracked by git there: ``dvc commit`` refuses
    it after the stage ran (a slot once lost its first call so: an older stage had those files git-tracked)."""
    cached = [Path(p) for v in resolved.values() for p in v["cached"]]
    if not cached or not (root / ".git").exists():
        return
    listed = subprocess.run(["git", "ls-files", "--", *map(str, cached)], cwd=root, capture_output=True, text=True)
    tracked = listed.stdout.splitlines()
    if tracked:
        first = next(rel for rel in (str(c.relative_to(root)) for c in cached)
                     if any(t == rel or t.startswith(rel + "/") for t in tracked))
        raise ConfigError("outs", f"{first} is tracked by git, and DVC will not commit a cached output git tracks: "
                                  f"`git rm -r --cached {first}` (and commit) before the slot")


def _upstream(resolved: dict[str, dict]) -> dict[str, set[str]]:
    """Step key -> the keys of the other steps whose outputs it reads (a dependency path at, under or above one of
    their output paths, as DVC resolves them): a step starts only once those finished, and is skipped if one did not."""
    outs = {k: [Path(o) for o in v["outs"]] for k, v in resolved.items()}
    deps = {k: [Path(d) for d in v["deps"]] for k, v in resolved.items()}

    def overlap(a: Path, b: Path) -> bool:
        return a == b or b in a.parents or a in b.parents

    return {k: {o for o in outs if o != k and any(overlap(d, p) for d in deps[k] for p in outs[o])} for k in deps}


def _collect(root: Path, step: Step, info: dict, seconds: float, max_mib: float) -> Outcome:
    """A finished stage (``info``: :meth:`_Projects.info`): ``dvc commit`` on this machine writes its lock entry; its
    outputs join the archive, the cached ones only while the archive stays under ``max_mib``."""
    project = root / step.project
    done = _dvc(project, "commit", "-f", step.stage)
    if done.returncode != 0:
        return Outcome(step, "failed", seconds, "dvc commit: " + (done.stderr.strip().splitlines() or ["?"])[-1])
    files, behind, size = [], [], 0
    for out in info["outs"]:
        paths = _files(Path(out))
        mib = sum(p.stat().st_size for p in paths) / 2**20
        rel = str(Path(out).relative_to(root))
        if out in info["cached"] and size + mib > max_mib:
            behind.append(rel)
            continue
        size += mib
        files += [str(p.relative_to(root)) for p in paths]
    return Outcome(step, "finished", seconds, "" if not behind else "cached outputs over the cap stay behind",
                   files, behind)


def _pack(root: Path, out: Path, outcomes: list[Outcome], minutes: float, wall: float) -> None:
    manifest = {"minutes": minutes, "wall_seconds": round(wall, 1), "steps": []}
    with tarfile.open(out / ARCHIVE, "w:gz") as tar:
        for o in outcomes:
            entry = {"project": o.step.project, "stage": o.step.stage, "state": o.state,
                     "seconds": round(o.seconds, 1), "detail": o.detail, "files": o.files,
                     "left_behind": o.left_behind}
            if o.state == "finished":
                entry["lock"] = _lock_entry(root / o.step.project, o.step.stage)
                for f in o.files:
                    tar.add(root / f, arcname=f"files/{f}")
            manifest["steps"].append(entry)
        data = json.dumps(manifest, indent=2).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


def _deps(entry: dict) -> dict[str, str]:
    return {d["path"]: d.get("md5", "") for d in entry.get("deps", [])}


def land(root: Path, archive: Path, progress=print) -> list[tuple[str, str]]:
    """Land the finished stages of an archive in this checkout: (stage key, landed | why not) per step."""
    root = Path(root).resolve()
    report = []
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        manifest = json.loads((Path(tmp) / MANIFEST).read_text())
        for entry in manifest["steps"]:
            key = f"{entry['project']}:{entry['stage']}"
            if entry["state"] != "finished":
                report.append((key, f"not landed: {entry['state']} on the lent machine ({entry['detail']})"))
            elif entry["left_behind"]:
                report.append((key, "not landed: cached outputs stayed on the lent machine: "
                                    + ", ".join(entry["left_behind"])))
            else:
                report.append((key, _land_one(root, Path(tmp) / "files", entry)))
            progress(f"[campaign] {report[-1][0]}: {report[-1][1]}")
    return report


def _land_one(root: Path, files: Path, entry: dict) -> str:
    project = root / entry["project"]
    lock = project / "dvc.lock"
    before = lock.read_bytes() if lock.is_file() else None
    for f in entry["files"]:
        dst = root / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(files / f, dst)
    done = _dvc(project, "commit", "-f", entry["stage"])
    here = _lock_entry(project, entry["stage"])
    differ = sorted(p for p, md5 in _deps(entry["lock"]).items() if _deps(here).get(p) != md5)
    if done.returncode == 0 and not differ and here.get("cmd") == entry["lock"].get("cmd"):
        return "landed"
    if before is None:  # put dvc.lock back as it was; the unpacked outputs stay for a look
        lock.unlink(missing_ok=True)
    else:
        lock.write_bytes(before)
    if done.returncode != 0:
        return "not landed: dvc commit: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    if differ:
        return "not landed: dependencies differ from the lent machine's: " + ", ".join(differ)
    return "not landed: its command differs from the lent machine's"
