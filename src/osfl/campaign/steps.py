"""The queue's steps and a run's outcomes (``osfl.campaign``): the queue file read and written."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import ConfigError

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


def write_queue(path: Path, queue: list[tuple[Step, str]], header: str) -> None:
    """The queue file ``load_queue`` reads, each step's estimate explained in a comment."""
    lines = [f"# {line}" for line in header.splitlines()] + ["steps:"]
    for step, why in queue:
        rerun = ", rerun: true" if step.rerun else ""
        lines.append(f"  - {{project: {step.project}, stage: '{step.stage}', minutes: {step.minutes:g}{rerun}}}  "
                     f"# {why}{' (its outputs are not here: an input of the queue)' if step.rerun else ''}")
    Path(path).write_text("\n".join(lines) + "\n")
