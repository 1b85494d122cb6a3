"""Record a behaviour-preserving code edit in a pipeline's dvc.lock without re-running its stages.

The last step of docs/rerecord.md's procedure, after the equivalence check (``python -m benchmarks.equivalence``):
every stage that has a lock entry and whose ONLY change since it ran is in its code dependencies (a path under
``src/osfl`` edited, or added to or dropped from its list when ``make deps`` follows moved imports) is committed by DVC (``dvc commit --force``, missing outputs allowed, as
``Repo.commit(..., allow_missing=True)``), so that its entry gets the new code hashes and keeps every recorded output,
params value and data dependency. Anything else that changed (a data dependency, a params value, the command, an
output) keeps the stage out, and it is listed with the reason; ``--exclude`` keeps stages out by name pattern (e.g.
the stages whose outputs the edit does change). Afterwards each committed entry is compared with the entry before:
only code dependencies may differ, else the lock is restored and the command exits 1.

    python -m osfl.provenance.record papers/hfldd --dry-run
    python -m osfl.provenance.record papers/fedmho --exclude 'server@*-col[1-9]*'

Then re-run a seeded sample of every stage type the edit touches (``python -m osfl.provenance.verify``), as the
procedure asks, before the lock is committed to git.
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import sys
from pathlib import Path

from .lineage import locked_stages

__all__ = ["code_only", "main", "record"]

CODE = "src/osfl"


#: states ``dvc status`` gives a path that is only absent from the workspace (not shipped, not pulled), not changed
MISSING = ("deleted", "not in cache")


def code_only(entry: list) -> str | None:
    """None when a stage's ``dvc status`` entry changes only code dependencies (other paths may be absent from the
    workspace, not changed), else what else changed."""
    code = False
    for item in entry:
        if isinstance(item, str):
            return item
        for kind, changes in item.items():
            if kind not in ("changed deps", "changed outs") or not isinstance(changes, dict):
                return f"{kind}: {', '.join(sorted(changes)[:3]) if isinstance(changes, dict) else changes}"
            # a code dependency may be edited, moved or new (make deps rewrites the lists from the imports)
            other = sorted(p for p, state in changes.items() if not (kind == "changed deps" and CODE in p)
                           and state not in MISSING)
            if other:
                return f"{kind}: {', '.join(other[:3])}"
            code |= any(CODE in p for p in changes) and kind == "changed deps"
    return None if code else "no code dependency changed (only paths absent from the workspace)"


def _without_code(entry: dict) -> dict:
    """A lock entry with its code dependencies' hashes dropped (what a code-only commit must leave unchanged)."""
    return {**entry, "deps": [d for d in entry.get("deps") or [] if CODE not in d["path"]]}


def record(project: Path, exclude: list[str], dry_run: bool = False, progress=print) -> tuple[list[str], dict]:
    """(the stages committed, stage -> why it was kept out) in ``project``; see the module docstring."""
    from dvc.repo import Repo

    project = Path(project).resolve()
    before = locked_stages(project)
    lock_file = project / "dvc.lock"
    saved = lock_file.read_text()
    with contextlib.chdir(project), Repo(str(project)) as repo:  # DVC resolves stage names from the working directory
        # keys are "<dvc.yaml relative to the working directory>:<stage>" outside the project, "<stage>" in it
        status = {key.rpartition("dvc.yaml:")[2]: entry for key, entry in repo.status().items()}
        todo, kept = [], {}
        for name, entry in sorted(status.items()):
            if name not in before:
                continue  # never run: nothing to record
            why = code_only(entry) or next((f"--exclude {p}" for p in exclude if fnmatch.fnmatchcase(name, p)), None)
            if why:
                kept[name] = why
            else:
                todo.append(name)
        progress(f"record: {project.name}: {len(todo)} stage(s) changed in code only, {len(kept)} kept out")
        if dry_run:
            return todo, kept
        # DVC's own commit (stage.save + stage.commit, as `dvc commit --force` does), but the lock file written once
        # for all the stages: repo.commit(name) per stage rewrites the whole dvc.lock each time (ruamel, pure
        # Python), about a minute per stage for the benchmark's 15,000-line lock
        done = []
        with repo.lock:
            for name in list(todo):
                (stage,) = repo.stage.collect(name)
                try:
                    stage.save(allow_missing=True, run_cache=False)
                    stage.commit(allow_missing=True)
                except FileNotFoundError as e:  # an output DVC cannot leave missing (a folder it must list)
                    todo.remove(name)
                    kept[name] = f"not committable with an output absent: {Path(e.filename or '').name or e}"
                    continue
                done.append(stage)
            if done:
                done[0].dvcfile.dump_stages(done, update_pipeline=False)
    after = locked_stages(project)
    moved = [n for n in todo if _without_code(after[n]) != _without_code(before[n])]
    moved += [n for n in before if n not in todo and after.get(n) != before[n]]
    if moved:
        lock_file.write_text(saved)
        raise RuntimeError(f"record: {project.name}: {len(moved)} entries changed beyond their code hashes "
                           f"({', '.join(moved[:3])}); dvc.lock restored")
    return todo, kept


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m osfl.provenance.record", description=__doc__.split("\n")[0])
    p.add_argument("projects", nargs="+", type=Path, help="pipeline folders: . or papers/<paper>")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="stages kept out by name (repeatable): those whose outputs the edit changes")
    p.add_argument("--dry-run", action="store_true", help="say what would be committed, commit nothing")
    args = p.parse_args(argv)
    code = 0
    for project in args.projects:
        if not (project / "dvc.lock").is_file():
            print(f"record: {project}: no dvc.lock", file=sys.stderr)
            code = 1
            continue
        try:
            _, kept = record(project, args.exclude, args.dry_run)
        except RuntimeError as e:
            print(e, file=sys.stderr)
            code = 1
            continue
        reasons: dict[str, list[str]] = {}
        for name, why in kept.items():
            reasons.setdefault(why, []).append(name)
        for why, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            print(f"  kept out ({len(names)}): {why}: {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}")
    return code


if __name__ == "__main__":
    sys.exit(main())
