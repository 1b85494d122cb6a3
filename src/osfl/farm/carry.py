"""A stage DVC cannot key in its run-cache (a ``persist`` output), carried from a worker to another checkout.

DVC refuses run-cache entries for such stages (``dvc.stage.cache._can_hash``): a persistent output, such as HFLDD's
round checkpoints or the root pipeline's persisted records, may hold what an earlier run left. The farm carries
them in two steps, with DVC's own objects:

* :func:`send` (on the worker, after its ``dvc repro``): the stage's state as its dvc.lock holds it (the *entry*:
  command, dependencies and outputs with their hashes), every output committed into the cache (the git-tracked ones
  as copies, as DVC's run-cache does) and pushed to the remote. The entry travels with the task's result.
* :func:`land` (in a checkout of the same commit whose upstream outputs are in place): the outputs pulled and checked
  out as the entry names them, then ``dvc commit --force <stage>``, so DVC itself hashes the dependencies and
  outputs in the workspace and writes dvc.lock. A dependency whose hash differs from the entry's (the stage would
  have run on other inputs here) fails, naming it, and nothing is written.

    python -m osfl.farm.carry send <stage> --remote <name> --entry <file.json>
    python -m osfl.farm.carry land <stage> --remote <name> --entry <file.json>      (in the DVC project's folder)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .runcache import find_stage, push_used


def _as_cached(repo, entry: dict[str, Any], wdir: str):
    """A stage built from ``entry`` whose outputs are all cached, as DVC's run-cache builds one to restore."""
    return repo.stage_cache._create_stage(entry, wdir=wdir)


def send(project: str, name: str, remote: str) -> dict[str, Any]:
    """The stage's entry, its outputs committed into the cache and pushed with every object the entry names."""
    from dvc.repo import Repo
    from dvc.stage.serialize import to_single_stage_lockfile

    with Repo(project) as repo:
        stage = find_stage(repo, name)
        entry = to_single_stage_lockfile(stage)
        cached = _as_cached(repo, entry, stage.wdir)
        git_tracked = {o.def_path for o in stage.outs if not o.use_cache}
        with repo.stage_cache._cache_type_copy():
            for out in cached.outs:
                if out.def_path in git_tracked:
                    out.commit()
        pushed = push_used(repo, cached, remote)
    return {"stage": name, "entry": entry, "objects_pushed": pushed}


def land(project: str, name: str, entry: dict[str, Any], remote: str) -> None:
    """Check the entry's dependencies against this checkout, pull and check out its outputs (over what a persistent
    output held here), then let DVC commit the stage (dvc.lock written by DVC)."""
    from dvc.repo import Repo

    with Repo(project) as repo:
        stage = find_stage(repo, name)
        stage.save_deps()
        here = {d.def_path: d.hash_info.value for d in stage.deps if d.hash_info and d.hash_info.name == "md5"}
        there = {d["path"]: d.get("md5") for d in entry.get("deps", [])}
        differ = sorted(p for p in set(here) | set(there) if here.get(p) != there.get(p))
        if differ:
            raise SystemExit(f"{name}: dependency {differ[0]} differs from the worker's ({len(differ)} in all): its "
                             "upstream outputs are not those the worker ran on; nothing landed")
        cached = _as_cached(repo, entry, stage.wdir)
        for odb, objs in cached.get_used_objs().items():
            failed = repo.cloud.pull(objs, remote=remote, odb=odb).failed
            if failed:
                raise SystemExit(f"{name}: {len(failed)} objects are not on remote {remote!r}; nothing landed")
        with repo.lock, repo.stage_cache._cache_type_copy():
            stats = cached.checkout(force=True)
        if stats.get("failed"):
            raise SystemExit(f"{name}: checking out {', '.join(map(str, stats['failed']))} failed")
    proc = subprocess.run([sys.executable, "-m", "dvc", "commit", "--force", name], cwd=project, capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{name}: `dvc commit --force` exited {proc.returncode}:\n{proc.stderr[-2000:]}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("send", "land"))
    p.add_argument("stage", help="the stage's name in ./dvc.yaml")
    p.add_argument("--remote", required=True, help="the DVC remote's name")
    p.add_argument("--entry", type=Path, required=True, help="send: where to write the entry; land: the entry")
    args = p.parse_args(argv)
    if args.action == "send":
        sent = send(".", args.stage, args.remote)
        args.entry.write_text(json.dumps(sent["entry"]))
        print(f"[carry] {args.stage}: sent ({sent['objects_pushed']} objects pushed)")
    else:
        land(".", args.stage, json.loads(args.entry.read_text()), args.remote)
        print(f"[carry] {args.stage}: landed")


if __name__ == "__main__":
    main()
