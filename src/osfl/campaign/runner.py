"""``run``: the queue to a deadline, each finished stage committed here and packed into the archive."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import tarfile
import time
from pathlib import Path

from ..errors import ConfigError
from .projects import _dvc, _files, _lock_entry, _Projects
from .schedule import _next_step, _upstream, overlap
from .steps import ARCHIVE, MANIFEST, Outcome, Step


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
        _refuse_missing_inputs(root, resolved, projects)
        resumed = {step.key: projects.resumed(step) for step in todo}
    _refuse_git_tracked(root, resolved)
    _refuse_recorded_checkpoint(root, resumed)
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


def _refuse_missing_inputs(root: Path, resolved: dict[str, dict], projects: _Projects) -> None:
    """Fail before anything runs when a step reads a path that is not here and that no step of the queue writes (an
    upstream stage whose lock entry is current but whose outputs were never checked out or pulled): otherwise the
    step fails minutes in and takes every step downstream of it along (a session lost a chain of four so, for want of
    HFLDD's public set)."""
    outs = [Path(o) for info in resolved.values() for o in info["outs"]]
    for key, info in resolved.items():
        for dep in map(Path, info["deps"]):
            if dep.exists() or any(overlap(dep, o) for o in outs):
                continue
            project = key.split(":", 1)[0]
            rel = os.path.relpath(dep, root / project)
            maker = next((name for name, entry in projects.locked(project).items()
                          if any(rel == o["path"] or rel.startswith(o["path"].rstrip("/") + "/")
                                 for o in entry.get("outs", []))), None)
            how = (f"`dvc checkout {maker}` or `dvc pull {maker}` in {project}, or queue {maker} (rerun: true)"
                   if maker else "no stage of its project records it")
            raise ConfigError("deps", f"{os.path.relpath(dep, root)}, read by {key}, is not here and no step of the "
                                      f"queue writes it: {how}")


def _refuse_recorded_checkpoint(root: Path, resumed: dict[str, list[str]]) -> None:
    """Fail before anything runs when a step's persistent output is the one dvc.lock records: the stage would resume
    from its own recorded end, redo nothing, and be committed as a run (a session once "ran" a 100-round FedAvg in
    3 s so, from a checkpoint ``dvc checkout`` had restored). A partial checkpoint, a killed run's, is not refused."""
    for key, paths in resumed.items():
        if paths:
            rel = Path(paths[0]).relative_to(root)
            raise ConfigError("outs", f"{rel} holds the checkpoint dvc.lock records for {key}, so the step would "
                                      f"resume at its recorded end and run nothing: `rm -r {rel}` to run it from "
                                      f"the start, or take the step out of the queue")


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
