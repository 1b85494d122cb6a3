"""One stage's run through DVC's run-cache, whatever its outputs: the farm's data plane.

DVC saves a run-cache entry only for a stage whose outputs are all in its cache, or are metrics or plots
(``Stage.run``: a plain ``cache: false`` output, such as a partition file or an evaluation record, turns the entry
off), and ``dvc push --run-cache`` sends the entries but not the objects of their git-tracked outputs. Its
restore has neither limit: an entry found with its objects on the remote is checked out, git-tracked outputs
included (as copies), and dvc.lock is written by DVC. So after a worker's ``dvc repro`` this module saves the
stage's entry through DVC's own :class:`dvc.stage.cache.StageCache` (which commits the git-tracked outputs into the
cache as copies, as it does for metrics) and pushes the stage's outputs, the entry and the entry's objects. A stage
with a ``persist`` output cannot be keyed by DVC (a later run continues from it): :func:`hashable` says so and the
farm carries such a stage instead (:mod:`osfl.farm.carry`).

    python -m osfl.farm.runcache <stage> --remote <name>     (in the DVC project's folder)
"""
from __future__ import annotations

import argparse
from typing import Any


def hashable(stage: Any) -> bool:
    """Whether DVC can key ``stage`` (a :class:`dvc.stage.Stage`) in its run-cache, read from dvc.yaml alone: a
    command, dependencies and outputs, none of them persistent, remote or outside the repository, and not always
    changed (``dvc.stage.cache._can_hash``, less its check that the dependencies exist: they may not yet)."""
    if stage.is_callback or stage.always_changed or not (stage.cmd and stage.deps and stage.outs):
        return False
    return all(d.protocol == "local" and d.def_path for d in stage.deps) and all(
        o.protocol == "local" and o.def_path and not o.persist and o.is_in_repo for o in stage.outs)


def find_stage(repo: Any, name: str) -> Any:
    """The stage called ``name`` in ``repo``'s dvc.yaml; a name that is not one stage fails naming it."""
    found = [s for s in repo.index.stages if getattr(s, "name", None) == name]
    if len(found) != 1:
        raise SystemExit(f"stage: {name!r} is not one stage of {repo.root_dir}/dvc.yaml")
    return found[0]


def push_used(repo: Any, cached_stage: Any, remote: str) -> int:
    """Push every object ``cached_stage`` (one whose outputs are all cached, as the run-cache builds it) names to
    ``remote``; how many were sent."""
    return sum(len(repo.cloud.push(objs, remote=remote, odb=odb).transferred)
               for odb, objs in cached_stage.get_used_objs().items())


def save_and_push(project: str, stage_name: str, remote: str) -> dict[str, int]:
    """Save ``stage_name``'s run-cache entry (from its dvc.lock state in ``project``) and push the objects the entry
    names (every output, git-tracked ones included) and every run-cache entry of the local cache to ``remote``;
    the counts pushed."""
    from dvc.repo import Repo
    from dvc.stage.cache import _can_hash
    from dvc.stage.serialize import to_single_stage_lockfile

    with Repo(project) as repo:
        stage = find_stage(repo, stage_name)
        if not _can_hash(stage):
            raise SystemExit(f"stage: {stage_name!r} has a persistent output; DVC's run-cache cannot carry it")
        repo.stage_cache.save(stage)  # idempotent: an existing entry is kept
        entry = to_single_stage_lockfile(stage)
        objects = push_used(repo, repo.stage_cache._create_stage(entry, wdir=stage.wdir), remote)
        entries = len(repo.stage_cache.push(remote))
    return {"entries": entries, "objects": objects}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("stage", help="the stage's name in ./dvc.yaml, e.g. train@fmnist-dir0.5-0")
    p.add_argument("--remote", required=True, help="the DVC remote's name")
    args = p.parse_args(argv)
    counts = save_and_push(".", args.stage, args.remote)
    print(f"[runcache] {args.stage}: pushed {counts['objects']} objects of its run-cache entry, {counts['entries']} "
          "entries")


if __name__ == "__main__":
    main()
