"""What a farm run would do (no Ray here): a pipeline's stage graph as DVC builds it, which stages are stale, where
each runs and what it asks of a node.

* Stale: what `dvc status` reports changed for the stages of the pipeline file, and every stage downstream of one
  (its inputs will change), restricted to the stages selected and their upstream.
* Where: every stage with a command and outputs runs on a Ray worker (``worker``). One that DVC can key in its
  run-cache, the farm's data plane, travels through it (``via`` ``run-cache``; git-tracked records as the entry's
  objects: :mod:`osfl.farm.runcache`); one it cannot (a ``persist`` output, such as HFLDD's round checkpoints or the
  root pipeline's persisted records) is carried (``via`` ``carried``: its lock entry comes back with the task's
  result and lands where it is needed, :mod:`osfl.farm.carry`). A stage with no output runs in the user's
  checkout (``local``).
* Upstream: each stage's direct upstream stages of the selection, so that a carried stage's inputs can be put in
  place before it lands.
* After: a worker stage waits for its nearest worker-stage ancestors (through local stages).
* Resources: per stage family (the stage name before ``@``), :data:`DEFAULT_RESOURCES` overridden by the pipeline
  params file's ``farm.resources`` section, e.g. ``farm: {resources: {server: {gpus: 0.25, cpus: 1, memory_gb: 4}}}``.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from ..errors import ConfigError
from .runcache import hashable

# A small-CNN run leaves a GPU mostly idle: the families that compute with torch ask for a fraction so several share
# one. GPU requests are dropped (with a note) on a cluster that has no GPU.
DEFAULT_RESOURCES: dict[str, dict[str, float]] = {
    "default": {"cpus": 1, "gpus": 0.0, "memory_gb": 2.0},
    "train_clients": {"gpus": 0.25, "memory_gb": 4.0},
    "train": {"gpus": 0.25, "memory_gb": 4.0},
    "train_part": {"gpus": 0.25, "memory_gb": 4.0},
    "server": {"gpus": 0.25, "memory_gb": 4.0},
    "variant": {"gpus": 0.25, "memory_gb": 4.0},
    "condense": {"gpus": 0.25, "memory_gb": 4.0},
    "kip": {"gpus": 0.25, "memory_gb": 4.0},
    "hfldd": {"gpus": 0.25, "memory_gb": 4.0},
    "baseline": {"gpus": 0.25, "memory_gb": 4.0},
}
RESOURCE_KEYS = ("cpus", "gpus", "memory_gb")


@dataclass(frozen=True)
class Resources:
    cpus: float = 1
    gpus: float = 0.0
    memory_gb: float = 2.0


@dataclass
class StagePlan:
    name: str  # DVC's address of the stage, e.g. server@fmnist-dir0.5-s0-fedavg
    family: str  # the name before '@'
    where: str  # "worker" | "local"
    after: list[str] = field(default_factory=list)  # worker stages that must finish first
    via: str = "run-cache"  # how a worker stage's results come back: "run-cache" | "carried"
    upstream: list[str] = field(default_factory=list)  # the stages its dependencies come from (of the selection)
    resources: Resources = field(default_factory=Resources)


@dataclass
class Plan:
    pipeline: Path  # the dvc.yaml
    project: Path  # the DVC project holding it (its folder)
    selected: list[str]  # every stage of the selection, in an order DVC could run them
    stale: list[StagePlan]  # the stale ones, same order
    up_to_date: list[str]

    @property
    def workers(self) -> list[StagePlan]:
        return [s for s in self.stale if s.where == "worker"]

    @property
    def local(self) -> list[StagePlan]:
        return [s for s in self.stale if s.where == "local"]

    def as_dict(self) -> dict[str, Any]:
        return {"pipeline": str(self.pipeline), "selected": len(self.selected), "up_to_date": self.up_to_date,
                "stale": [asdict(s) for s in self.stale]}


def family(name: str) -> str:
    return name.split("@", 1)[0]


def stage_resources(params: Mapping[str, Any] | None, params_file: str = "params.yaml") -> dict[str, Resources]:
    """The resources per family: :data:`DEFAULT_RESOURCES` with the params' ``farm.resources`` over them (a family
    named there and not in the defaults starts from ``default``). Bad keys or values fail naming the key."""
    farm = (params or {}).get("farm") or {}
    if not isinstance(farm, Mapping):
        raise ConfigError("farm", f"must be a mapping with a 'resources' key in {params_file}, got {farm!r}")
    unknown = set(farm) - {"resources"}
    if unknown:
        raise ConfigError(f"farm.{sorted(unknown)[0]}", "unknown key; allowed: resources")
    given = farm.get("resources") or {}
    if not isinstance(given, Mapping):
        raise ConfigError("farm.resources", f"must map a stage family to {{cpus, gpus, memory_gb}}, got {given!r}")
    merged: dict[str, dict[str, float]] = {k: dict(v) for k, v in DEFAULT_RESOURCES.items()}
    for fam, res in given.items():
        if not isinstance(res, Mapping):
            raise ConfigError(f"farm.resources.{fam}", f"must be a mapping of {', '.join(RESOURCE_KEYS)}, got {res!r}")
        for key, value in res.items():
            if key not in RESOURCE_KEYS:
                raise ConfigError(f"farm.resources.{fam}.{key}", f"unknown key; allowed: {', '.join(RESOURCE_KEYS)}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(f"farm.resources.{fam}.{key}", f"must be a number >= 0, got {value!r}")
        merged.setdefault(fam, {}).update(res)
    base = merged["default"]
    return {fam: Resources(**{**base, **res}) for fam, res in merged.items()}


def make_plan(pipeline: Path, selectors: Sequence[str] = ()) -> Plan:
    """The plan for ``pipeline`` (a dvc.yaml) and ``selectors`` (stage names or shell patterns such as
    ``'server@*'``; none: every stage). A selector that matches no stage fails naming the stages there are."""
    pipeline = Path(pipeline).resolve()
    if pipeline.name != "dvc.yaml" or not pipeline.exists():
        raise ConfigError("pipeline", f"must be an existing dvc.yaml, got {pipeline}")
    project = pipeline.parent
    params_file = project / "params.yaml"
    params = yaml.safe_load(params_file.read_text()) if params_file.exists() else {}
    resources = stage_resources(params, str(params_file))
    cwd = os.getcwd()
    os.chdir(project)  # DVC resolves stage targets against the working directory
    try:
        return _plan(pipeline, project, selectors, resources)
    finally:
        os.chdir(cwd)


def _plan(pipeline: Path, project: Path, selectors: Sequence[str], resources: dict[str, Resources]) -> Plan:
    import networkx as nx
    from dvc.repo import Repo

    with Repo(str(project)) as repo:
        graph = repo.index.graph  # edges: dependent -> dependency
        stages = {s.name: s for s in graph.nodes if Path(s.path).resolve() == pipeline}
        if not stages:
            raise ConfigError("pipeline", f"{pipeline} defines no stage DVC can read")
        sub = graph.subgraph([s for s in graph.nodes if s.name in stages])
        names = sorted(stages)
        chosen = set(names)
        if selectors:
            chosen = set()
            for sel in selectors:
                hit = [n for n in names if fnmatch.fnmatchcase(n, sel)]
                if not hit:
                    raise ConfigError("stage", f"{sel!r} matches no stage of {pipeline.name}; stages: "
                                               f"{', '.join(names[:12])}{' ...' if len(names) > 12 else ''}")
                chosen.update(hit)
            for n in list(chosen):  # and everything they need
                chosen.update(s.name for s in nx.descendants(sub, stages[n]))
        order = [s.name for s in nx.lexicographical_topological_sort(sub.reverse(copy=False), key=lambda s: s.name)
                 if s.name in chosen]  # upstream first, ties by name
        changed = set(repo.status(targets=[f"dvc.yaml:{n}" for n in order], with_deps=False) or {})
        changed = {c.split(":")[-1] for c in changed} & chosen
        stale = set(changed)
        for n in changed:
            stale.update(s.name for s in nx.ancestors(sub, stages[n]) if s.name in chosen)
        plans: dict[str, StagePlan] = {}
        for n in order:
            if n not in stale:
                continue
            st = stages[n]
            where = "worker" if st.cmd and st.outs else "local"
            fam = family(n)
            plans[n] = StagePlan(n, fam, where, via="run-cache" if hashable(st) else "carried",
                                 upstream=[d.name for d in sub.successors(st) if d.name in chosen],
                                 resources=resources.get(fam, resources["default"]))
        for n, plan in plans.items():  # nearest worker-stage ancestors, through local stages
            seen, todo, after = set(), [stages[n]], set()
            while todo:
                for dep in sub.successors(todo.pop()):
                    d = dep.name
                    if d in seen:
                        continue
                    seen.add(d)
                    if d in plans and plans[d].where == "worker":
                        after.add(d)
                    else:
                        todo.append(dep)
            plan.after = [d for d in order if d in after]
            plan.upstream = [d for d in order if d in plan.upstream]
    return Plan(pipeline, project, order, [plans[n] for n in order if n in plans],
                [n for n in order if n not in stale])
