"""The projects a campaign touches: DVC repositories loaded once, lock entries, ``dvc`` retried while locked."""
from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

from ..errors import ConfigError
from ..provenance.lineage import locked_stages
from .steps import Step


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

    def locked(self, project: str) -> dict:
        """``project``'s dvc.lock stages (name -> entry), read once."""
        self._load(project)
        return self._locks[project]

    def info(self, step: Step) -> dict:
        """The step's ``cmd``, ``wdir``, ``deps``, ``outs`` and ``cached`` outputs (absolute paths)."""
        stage = self.stage(step)
        return {"cmd": stage.cmd, "wdir": stage.wdir, "deps": [d.fs_path for d in stage.deps],
                "outs": [o.fs_path for o in stage.outs], "cached": [o.fs_path for o in stage.outs if o.use_cache]}

    def resumed(self, step: Step) -> list[str]:
        """The step's persistent outputs (a rounds checkpoint) that are here and hold exactly what dvc.lock records:
        the stage would resume at its recorded end and redo nothing (``dvc checkout`` restores them). Hashes them, so
        only ``run`` asks, not ``plan`` or ``queue``."""
        stage = self.stage(step)
        with _project_lock(self._repos[step.project]):
            return [o.fs_path for o in stage.outs if o.persist and o.hash_info and o.exists and not o.changed_checksum()]

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
