"""A re-record's queue (``python -m osfl.campaign queue``): the stale stages, estimated from runtime records."""
from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path

from .projects import _files, _Projects
from .schedule import _upstream, overlap
from .steps import Step


def stale_queue(root: Path, project: str, *, patterns: list[str] | None = None, scale: float = 1.0,
                default_minutes: float = 2.0, frozen: bool = False,
                kernels: str | None = None, with_inputs: bool = False) -> list[tuple[Step, str]]:
    """A queue for re-recording ``project`` or running what it has not run: its stages (those matching one of
    ``patterns``, fnmatch, if given) whose lock entry is not current or missing, frozen ones only with ``frozen``
    (paper-profile GPU stages), upstream before downstream and else in dvc.yaml's order, each with (step, where its
    estimate came from). A stage's minutes are ``scale`` times the seconds of its committed runtime record (an output
    ``runtime/*.json`` with ``seconds``; ``scale`` converts between machines, e.g. 1.65 from AVX512 to AVX2 kernels,
    and a record that names ``kernels``, those of the machine the queue is for, is taken as it is); a stage without
    one takes the median of its siblings' (the same template and the same last part of the item, e.g.
    ``server@*-col3``, else the same template), each scaled so, else ``default_minutes``.

    ``with_inputs``: also the stages that write an input a queued stage reads and that is not here (a current stage
    whose outputs do not ship, e.g. a run's client models on a fresh clone), as ``rerun`` steps, transitively: the
    queue then runs on a fresh clone as it is."""
    root = Path(root).resolve()
    picked, source, resolved, records, infos = [], {}, {}, {}, {}
    with _Projects(root) as projects:
        for name in projects.names(project):
            step = Step(project, name, 1.0)
            stage = projects.stage(step)
            if not stage.cmd:
                continue
            info = infos[name] = projects.info(step)
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
    rerun = _missing_inputs(picked, infos) if with_inputs else set()
    picked = [name for name in infos if name in rerun or name in picked]  # dvc.yaml's order
    resolved = {name: infos[name] for name in picked}
    steps = []
    for name in picked:
        seconds, why = records[name] if records[name][0] is not None else _siblings_seconds(name, records)
        minutes = round(max(seconds / 60, 0.1), 1) if seconds is not None else default_minutes
        steps.append(Step(project, name, minutes, rerun=name in rerun))
        source[steps[-1].key] = why if seconds is not None else "no runtime record here or in its siblings: the default"
    upstream = _upstream({step.key: resolved[step.stage] for step in steps})
    ordered, placed = [], set()
    while len(ordered) < len(steps):  # Kahn's order, ties in dvc.yaml's order (DVC refuses cycles)
        step = next(s for s in steps if s.key not in placed and upstream[s.key] <= placed)
        ordered.append(step)
        placed.add(step.key)
    return [(step, source[step.key]) for step in ordered]


def _missing_inputs(picked: list[str], infos: dict[str, dict]) -> set[str]:
    """The stages (of ``infos``: every stage's :meth:`_Projects.info`) not in ``picked`` that write an input which a
    picked stage, or one of these, reads and which is not here; transitively."""
    queued, added, todo = set(picked), set(), list(picked)
    while todo:
        name = todo.pop()
        written = [Path(o) for q in queued for o in infos[q]["outs"]]
        for dep in map(Path, infos[name]["deps"]):
            if dep.exists() or any(overlap(dep, o) for o in written):
                continue
            maker = next((m for m, info in infos.items() if m not in queued
                          and any(overlap(dep, Path(o)) for o in info["outs"])), None)
            if maker is not None:
                queued.add(maker)
                added.add(maker)
                todo.append(maker)
                written += [Path(o) for o in infos[maker]["outs"]]
    return added


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
