"""The body of one farm task, run by a Ray worker process: one stage, in a checkout of its own, with DVC's remote
and run-cache as the only way data comes in and goes out.

1. The worker's checkout: ``<workdir>/<host>-<pid>`` (one per worker process, reused by its later tasks; never
   shared, so its DVC cache is its own), cloned from ``git_url`` and forced to ``commit``; the project's default
   remote is set (``--local``) to the shared remote's URL.
2. The carried stages upstream (their lock entries came with the upstream tasks' results) land here, upstream
   first (:func:`land_carried`, :mod:`osfl.farm.carry`): a persistent output is never recomputed on a worker.
3. ``dvc repro --pull <stage>``: the stage's other upstream outputs come from the remote through the run-cache
   (git-tracked outputs included), then the stage runs, or is restored if its run is already in the run-cache.
4. ``python -m osfl.farm.runcache <stage>``: its outputs, its run-cache entry and the entry's objects (the
   git-tracked outputs too, which ``dvc push --run-cache`` leaves out) go to the remote; for a carried stage,
   ``python -m osfl.farm.carry send <stage>``: its outputs go to the remote and its lock entry into the result.

The log of every attempt is ``<checkout>/.farm-logs/<stage>.<attempt>.log``; a failed stage raises
:class:`StageFailed` with the log's tail (the launcher retries it, a bounded number of times).
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TAIL = 3000  # characters of a failed stage's log shown by the launcher


class StageFailed(RuntimeError):
    pass


def dvc_env() -> dict[str, str]:
    """The environment for a `python -m dvc` subprocess: this interpreter's bin folder first on PATH, so the stage
    commands DVC runs (`python -m osfl.stages...`) find the same Python and packages."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def checkout(job: dict[str, Any]) -> Path:
    """This worker process's checkout of the job's commit (module docstring, step 1); the project folder in it."""
    root = Path(job["workdir"]) / f"{socket.gethostname()}-{os.getpid()}"
    if not (root / ".git").exists():
        root.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "--quiet", "--no-checkout", job["git_url"], str(root))
    have = subprocess.run(["git", "cat-file", "-e", f"{job['commit']}^{{commit}}"], cwd=root, capture_output=True)
    if have.returncode != 0:  # by its hash (servers that refuse that: every branch)
        try:
            _git("fetch", "--quiet", job["git_url"], job["commit"], cwd=root)
        except subprocess.CalledProcessError:
            _git("fetch", "--quiet", job["git_url"], "+refs/heads/*:refs/remotes/farm/*", cwd=root)
    _git("checkout", "--quiet", "--force", job["commit"], cwd=root)
    project = root / job["project"]
    subprocess.run([sys.executable, "-m", "dvc", "remote", "add", "--force", "--default", "--local", "farm",
                    job["remote_url"]], cwd=project, check=True, capture_output=True, text=True)
    return project


def _tail(path: Path) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-TAIL:]


def land_carried(project: Path, carried: dict[str, dict], upstream: dict[str, list[str]], order: list[str],
                 log: Path, env: dict[str, str]) -> list[str]:
    """Land the carried stages (:mod:`osfl.farm.carry`) in ``project``, upstream first: each one's upstream stages
    restored (``dvc repro --pull``: from the run-cache, or landed already), then its outputs and lock entry. The
    stages landed, in order."""
    landed = []
    for name in [n for n in order if n in carried]:
        with open(log, "a") as fh:
            if upstream.get(name):
                _dvc_step(["-m", "dvc", "repro", "--pull", *upstream[name]], project, fh, env, f"restoring the upstream "
                          f"of {name}")
            entry = log.with_suffix(f".{len(landed)}.entry.json")
            entry.write_text(json.dumps(carried[name]))
            _dvc_step(["-m", "osfl.farm.carry", "land", name, "--remote", "farm", "--entry", str(entry)], project, fh,
                      env, f"landing {name}")
        landed.append(name)
    return landed


def _dvc_step(args: list[str], project: Path, fh, env: dict[str, str], what: str) -> None:
    fh.flush()
    proc = subprocess.run([sys.executable, *args], cwd=project, stdout=fh, stderr=subprocess.STDOUT, env=env)
    if proc.returncode != 0:
        raise StageFailed(f"{what}: `{' '.join(args[1:4])} ...` exited {proc.returncode}; log {fh.name}:\n"
                          f"{_tail(Path(fh.name))}")


def run_stage(job: dict[str, Any], stage: str, attempt: int, *, carried: dict[str, dict] | None = None,
              kill_once: str | None = None) -> dict[str, Any]:
    """Steps 2-4 of the module docstring for ``stage``; returns where it ran, whether DVC computed it (or restored it
    from the run-cache), the seconds, and the carried stages' entries known downstream of it (its upstream's and, for
    a carried stage, its own). ``carried``: the lock entries of the carried stages upstream (landed first).
    ``kill_once``: a marker file; when it does not exist yet, it is created and this worker process is killed
    (SIGKILL, with the stage's process group) once the stage has started: a node lost mid-stage, for the tests."""
    carried = dict(carried or {})
    t0 = time.perf_counter()
    project = checkout(job)
    t_checkout = time.perf_counter()
    logs = project / ".farm-logs"
    logs.mkdir(exist_ok=True)
    log = logs / f"{stage.replace('/', '_')}.{attempt}.log"
    env = dvc_env()
    log.write_text("")
    land_carried(project, carried, job.get("upstream", {}), job.get("order", []), log, env)
    t_land = time.perf_counter()
    with open(log, "a") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "dvc", "repro", "--pull", stage], cwd=project, stdout=fh,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        if kill_once is not None and not Path(kill_once).exists():
            Path(kill_once).write_text(f"{stage} attempt {attempt} on {socket.gethostname()} pid {os.getpid()}\n")
            while proc.poll() is None and f"Running stage '{stage}'" not in log.read_text(errors="replace"):
                time.sleep(0.05)
            time.sleep(0.5)
            os.killpg(proc.pid, signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)
        rc = proc.wait()
    if rc != 0:
        raise StageFailed(f"{stage}: `dvc repro --pull {stage}` exited {rc} (attempt {attempt}); log {log}:\n"
                          f"{_tail(log)}")
    t_repro = time.perf_counter()
    with open(log, "a") as fh:
        if job.get("via", {}).get(stage, "run-cache") == "carried":
            entry = log.with_suffix(".entry.json")
            _dvc_step(["-m", "osfl.farm.carry", "send", stage, "--remote", "farm", "--entry", str(entry)], project, fh,
                      env, f"{stage}: sending its outputs (attempt {attempt})")
            carried[stage] = json.loads(entry.read_text())
        else:
            _dvc_step(["-m", "osfl.farm.runcache", stage, "--remote", "farm"], project, fh, env,
                      f"{stage}: pushing its run-cache entry (attempt {attempt})")
    text = log.read_text(errors="replace")
    t_end = time.perf_counter()
    # the stage scripts' own wall time ("[<script>] done in X s", start-up and imports included): the rest of the
    # task's seconds is the farm's overhead (checkout, DVC's pull/checks/commit, push)
    own = sum(float(a) + float(b) for a, b in re.findall(
        r"^\[[\w.]+\] done in ([0-9.]+) s \(start-up and imports ([0-9.]+) s\)", text, flags=re.M))
    return {"stage": stage, "node": socket.gethostname(), "pid": os.getpid(), "attempt": attempt,
            "computed": f"Running stage '{stage}'" in text, "seconds": round(t_end - t0, 3),
            "checkout_s": round(t_checkout - t0, 3), "land_s": round(t_land - t_checkout, 3),
            "repro_s": round(t_repro - t_land, 3), "carried": carried,
            "push_s": round(t_end - t_repro, 3), "command_s": round(own, 3),
            "checkout": str(project), "log": str(log)}
