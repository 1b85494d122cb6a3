"""The schedule a campaign keeps: ``plan`` and the next-step rule ``run`` follows too."""
from __future__ import annotations

from pathlib import Path

from .projects import _Projects
from .steps import Step


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


def _upstream(resolved: dict[str, dict]) -> dict[str, set[str]]:
    """Step key -> the keys of the other steps whose outputs it reads (a dependency path at, under or above one of
    their output paths, as DVC resolves them): a step starts only once those finished, and is skipped if one did not."""
    outs = {k: [Path(o) for o in v["outs"]] for k, v in resolved.items()}
    deps = {k: [Path(d) for d in v["deps"]] for k, v in resolved.items()}
    return {k: {o for o in outs if o != k and any(overlap(d, p) for d in deps[k] for p in outs[o])} for k in deps}


def overlap(a: Path, b: Path) -> bool:
    """Whether a dependency path and an output path name the same files (equal, or one inside the other)."""
    return a == b or b in a.parents or a in b.parents
