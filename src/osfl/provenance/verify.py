"""Recompute a seeded sample of a pipeline's committed stages and compare their outputs with what dvc.lock records.

    python -m osfl.provenance.verify papers/hfldd                 # 3 stages drawn with seed 0
    python -m osfl.provenance.verify papers/hfldd --sample 5 --seed 1
    python -m osfl.provenance.verify papers/hfldd --stages 'partition@*'
    make verify PAPER=hfldd

A stage can be checked when dvc.lock records it and DVC finds its dependencies (code, params, inputs) exactly as
recorded: then re-running it (``dvc repro --force --single-item``) must give the recorded outputs. Every other
stage is listed with the reason it cannot be checked here: its code or params changed since it ran (it is stale:
re-run it), or an input is not on this machine (not shipped: see tests/test_shipped_store.py), or it is frozen.

Outputs are compared by their md5. Floating-point results differ in their last bits between CPU types (float sums
in another order), so an output that differs is compared again by value where it can be read (JSON numbers, tensors
of ``.pt`` files, ``.tsv``/``.csv`` numbers): "within tolerance" when every number agrees to ``--rtol``/``--atol``.
The check leaves the checkout as it found it: dvc.lock and git's index are put back, and a stage's outputs are moved
aside before its re-run (a persistent checkpoint would otherwise turn it into a resume) and back after, unless they
came out as recorded.

Recording a refactor (docs/rerecord.md, check 2) re-runs stages whose only change is their code:

    python -m osfl.provenance.verify papers/hfldd --code-changed --stages 'kip@*'   # against the records
    python -m osfl.provenance.verify papers/hfldd --base d44fa37 --stages 'kip@*'   # against REV's code, here

``--code-changed`` also draws the stages that are stale only because a code file they import changed, and compares
their re-run under the working tree's code with the records. Records made on another kind of CPU cannot match byte
for byte (float sums in another order), so ``--base REV`` compares with a second re-run instead: the same stage run
with REV's code (a git worktree of REV, its data inputs linked from this checkout) on this machine. Identical bytes
then show that the edit changed nothing the stage computes, whatever machine made the records.
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from . import machine
from .lineage import locked_stages

ROOT = Path(__file__).resolve().parents[3]


@dataclass
class Check:
    stage: str
    status: str  # identical | within tolerance | differs | not checked
    detail: str = ""
    seconds: float = 0.0
    timings: tuple[str, ...] = ()  # outputs that came out different only in their seconds and host


def _dvc(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    from osfl.farm.worker import dvc_env  # the stage commands DVC runs find this interpreter, as the farm's do

    p = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, capture_output=True, text=True, env=dvc_env())
    if check and p.returncode != 0:
        raise RuntimeError(f"dvc {' '.join(args)} failed in {cwd}:\n{(p.stdout + p.stderr)[-2000:]}")
    return p


def _is_code(path: str) -> bool:
    return "src/osfl" in path or path.endswith(".py")


def _why_not(entry: list, code_changed: bool = False) -> str | None:
    """Why a stage ``dvc status`` lists cannot be checked, or None when only its outputs are missing or differ (or,
    with ``code_changed``, when besides them only code files it depends on changed: a refactor to check)."""
    for item in entry:
        if isinstance(item, str):
            return "frozen or always changed" if "frozen" in item or "always" in item else f"dvc status: {item}"
        if "changed deps" in item:
            deps = item["changed deps"]
            changed = sorted(p for p, s in deps.items() if s != "deleted")
            gone = sorted(p for p, s in deps.items() if s == "deleted")
            if changed and not (code_changed and not gone and all(_is_code(p) for p in changed)):
                code = [p for p in changed if _is_code(p)]
                what = (f"{len(code)} code dep(s) changed since it ran" if code else
                        f"dependency changed since it ran: {', '.join(changed[:3])}")
                return f"stale: {what} (re-run it)"
            if gone:
                return f"input not on this machine: {', '.join(gone[:2])}{' ...' if len(gone) > 2 else ''}"
        if "changed command" in item or "changed params" in item:
            return "stale: its command or params changed since it ran (re-run it)"
    return None


def candidates(project: Path, code_changed: bool = False) -> tuple[list[str], dict[str, str]]:
    """(stages that can be checked, stage -> why not) for the stages dvc.lock records (``code_changed``: stages stale
    only in their code count as checkable)."""
    lock = locked_stages(project)
    status = json.loads(_dvc(["status", "--json"], project).stdout or "{}")
    ok, skipped = [], {}
    frozen = {name for name, body in _stages_yaml(project).items() if body.get("frozen")}
    for name in lock:
        template = name.split("@")[0]
        if template in frozen or name in frozen:
            skipped[name] = "frozen (its outputs came from elsewhere, e.g. a lent GPU)"
            continue
        why = _why_not(status.get(name, []), code_changed)
        if why:
            skipped[name] = why
        else:
            ok.append(name)
    return ok, skipped


def _stages_yaml(project: Path) -> dict:
    return (yaml.safe_load((project / "dvc.yaml").read_text()) or {}).get("stages", {})


def _outs(lock_entry: dict) -> dict[str, str]:
    return {o["path"]: o.get("md5", "") for o in lock_entry.get("outs", [])}


def _cache_file(project: Path, md5: str) -> Path | None:
    for cache in (project / ".dvc" / "cache", ROOT / ".dvc" / "cache"):
        p = cache / "files" / "md5" / md5[:2] / md5[2:]
        if p.is_file():
            return p
    return None


def _numbers(path: Path, suffix: str) -> list[float] | None:
    """Every number a file holds, in order, read as the format ``suffix`` names (a cache object has no suffix of its
    own); None when it cannot be read as numbers."""
    try:
        if suffix == ".json":
            found: list[float] = []

            def walk(v):
                if isinstance(v, bool):
                    return
                if isinstance(v, (int, float)):
                    found.append(float(v))
                elif isinstance(v, dict):
                    for k in sorted(v):
                        walk(v[k])
                elif isinstance(v, list):
                    for x in v:
                        walk(x)
            walk(json.loads(path.read_text()))
            return found
        if suffix in (".tsv", ".csv"):
            sep = "\t" if suffix == ".tsv" else ","
            out = []
            for line in path.read_text().splitlines()[1:]:
                for cell in line.split(sep):
                    try:
                        out.append(float(cell))
                    except ValueError:
                        pass
            return out
        if suffix == ".pt":
            import torch

            state = torch.load(path, map_location="cpu", weights_only=True)
            tensors = state.values() if isinstance(state, dict) else [state]
            return [float(x) for t in tensors if hasattr(t, "flatten") for x in t.flatten().double().tolist()]
    except Exception:  # noqa: BLE001 - unreadable as numbers: compared by md5 only
        return None
    return None


def _file_pairs(project: Path, path: str, md5: str) -> list[tuple[str, Path | None, Path]]:
    """(relative name, the recorded file in the cache or None, the recomputed file) for an output."""
    new = project / path
    if not md5.endswith(".dir"):
        return [(path, _cache_file(project, md5) or _git_copy(project, path), new)]
    listing = _cache_file(project, md5)
    if listing is None:
        return [(path, None, new)]
    return [(f"{path}/{e['relpath']}", _cache_file(project, e["md5"]), new / e["relpath"])
            for e in json.loads(listing.read_text())]


def _git_copy(project: Path, path: str) -> Path | None:
    """The committed copy of a git-tracked output (cache: false), written to a temporary file, or None."""
    shown = subprocess.run(["git", "show", f"HEAD:./{path}"], cwd=project, capture_output=True)
    if shown.returncode != 0:
        return None
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"osfl-verify-{hashlib.md5(shown.stdout).hexdigest()}"
    tmp.write_bytes(shown.stdout)
    return tmp


def compare_by_value(project: Path, path: str, md5: str, rtol: float, atol: float) -> tuple[bool, str]:
    """Whether a differing output agrees by value with the recorded one (and the largest difference found)."""
    worst, files = 0.0, 0
    for name, old, new in _file_pairs(project, path, md5):
        if old is None or not new.is_file():
            return False, (f"{name} differs; its recorded copy is not on this machine (not shipped): md5 only"
                           if old is None else f"{name} was not written")
        if old.read_bytes() == new.read_bytes():
            continue
        a, b = _numbers(old, new.suffix), _numbers(new, new.suffix)
        if a is None or b is None or len(a) != len(b):
            return False, f"{name} differs (not comparable by value)"
        files += 1
        largest, why = _by_value(a, b, name, rtol, atol)
        if why:
            return False, why
        worst = max(worst, largest)
    return True, f"{path}: {files} file(s) differ in their bits; largest difference {worst:.3g}"


def _by_value(a: list[float], b: list[float], name: str, rtol: float, atol: float) -> tuple[float, str]:
    """(the largest difference, "" or what differs beyond the tolerance) of two files' numbers, in order."""
    worst = 0.0
    for x, y in zip(a, b):
        d = abs(x - y)
        worst = max(worst, d if not math.isnan(d) else math.inf)
        if not (math.isclose(x, y, rel_tol=rtol, abs_tol=atol) or (math.isnan(x) and math.isnan(y))):
            return worst, f"{name} differs by value (|{x:.6g} - {y:.6g}| = {d:.3g})"
    return worst, ""


def check_stage(project: Path, name: str, rtol: float, atol: float) -> Check:
    """Re-run ``name`` from scratch and compare its outputs with the recorded ones; then put the checkout back as it
    was. Its outputs are moved aside first (so a persistent checkpoint does not turn the re-run into a resume) and
    moved back after, unless they came out as recorded, seconds included: then the new ones stay, and the stages
    that read them can be checked next. Nothing that was there is lost."""
    with _aside(project, name) as aside:
        check = _rerun(project, name, aside.recorded, rtol, atol)
        # kept: outputs as recorded, seconds included; or as recorded but for seconds-and-host records that were not
        # here before (a run whose outputs do not ship): those records are dropped, the rest stays for the next draw
        aside.keep = check.status == "identical" and not (set(check.timings) & aside.present)
        aside.drop = check.timings if aside.keep else ()
        said = machine.note(aside.runtime) if aside.runtime and check.status != "identical" else ""
        if said:
            check.detail += f" [{said}]"
        return check


@dataclass
class _Aside:
    """A stage's recorded outputs (path -> md5) and the runtime block of its recorded run record, set aside for a
    re-run in place; ``keep``: leave the re-run's outputs (they came out as recorded, seconds included)."""
    recorded: dict[str, str]
    runtime: dict
    keep: bool = False
    present: set[str] = field(default_factory=set)  # the recorded outputs that were in the workspace before
    drop: tuple[str, ...] = ()  # outputs removed after a kept re-run (seconds-and-host records that were not here)


@contextlib.contextmanager
def _aside(project: Path, name: str):
    """The stage's recorded outputs moved aside for a re-run in place; yields an :class:`_Aside`. Afterwards
    dvc.lock and git's index are put back, and the recorded outputs too unless its ``keep`` was set."""
    lock_text = (project / "dvc.lock").read_text()
    recorded = _outs(locked_stages(project)[name])
    state = _Aside(recorded, _recorded_runtime(project, recorded))
    staged = _staged(project)
    (project / ".dvc" / "tmp").mkdir(parents=True, exist_ok=True)
    aside = Path(tempfile.mkdtemp(prefix="verify-", dir=project / ".dvc" / "tmp"))  # same file system: renames
    for path in recorded:
        if (project / path).exists():
            state.present.add(path)
            (aside / path).parent.mkdir(parents=True, exist_ok=True)
            (project / path).rename(aside / path)
    try:
        yield state
    finally:
        (project / "dvc.lock").write_text(lock_text)
        added = sorted(_staged(project) - staged)  # DVC's autostage (core.autostage) adds what it wrote to git's index
        if added:
            subprocess.run(["git", "reset", "-q", "--", *added], cwd=_git_root(project), capture_output=True)
        for path in state.drop:  # set only on a kept re-run
            _remove(project / path)
        if not state.keep:  # the recorded outputs back
            for path in recorded:
                _remove(project / path)
                if (aside / path).exists():
                    (aside / path).rename(project / path)
        shutil.rmtree(aside, ignore_errors=True)


def check_against_base(project: Path, name: str, base: str, rtol: float, atol: float) -> Check:
    """Re-run ``name`` in place with the working tree's code and in a git worktree of ``base`` with that revision's
    code (its data inputs linked from this checkout), both on this machine, and compare the two runs' outputs; then
    put the checkout back as it was (the recorded outputs, dvc.lock, git's index)."""
    entry = locked_stages(project)[name]
    with _aside(project, name) as aside:
        recorded = aside.recorded
        failed, seconds = _repro(project, name)
        if failed:
            return Check(name, "not checked", f"the re-run with this code failed: {failed}", seconds)
        with _base_worktree(project, base) as (wt, wproj):
            failed, base_seconds = _run_in(wt, wproj, project, entry)
            if failed:
                return Check(name, "not checked", f"the run with {base}'s code failed: {failed}", seconds)
            differ, close, timings = [], True, []
            for path in recorded:
                same, why = compare_runs(wproj / path, project / path, path, rtol, atol)
                if same == "timings":
                    timings.append(path)
                elif same != "identical":
                    close &= same == "within tolerance"
                    differ.append(why)
    took = seconds + base_seconds
    if differ:
        return Check(name, "within tolerance" if close else "differs", f"against {base}'s code: " + "; ".join(differ),
                     took)
    return Check(name, "identical", f"{len(recorded)} output(s) byte for byte as {base}'s code writes them here"
                 + (f" but for {len(timings)} that differ only in seconds and host" if timings else ""), took,
                 tuple(timings))


@contextlib.contextmanager
def _base_worktree(project: Path, base: str):
    """A detached git worktree of ``base`` in a scratch folder, the checkout's root data linked in
    (:func:`link_data`); yields (the worktree, the project's folder in it)."""
    root = _git_root(project)
    wt = Path(tempfile.mkdtemp(prefix="osfl-verify-base-"))
    added = subprocess.run(["git", "worktree", "add", "-q", "--detach", str(wt), base], cwd=root, capture_output=True,
                           text=True)
    if added.returncode != 0:
        shutil.rmtree(wt, ignore_errors=True)
        raise RuntimeError(f"base: git worktree add {base} failed: {added.stderr.strip()[-300:]}")
    try:
        link_data(root, wt)
        yield wt, wt / project.resolve().relative_to(root.resolve())
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=root, capture_output=True)
        shutil.rmtree(wt, ignore_errors=True)


def link_data(root: Path, wt: Path) -> list[Path]:
    """Link into worktree ``wt`` every output of a ``.dvc`` file under ``root/data`` that this checkout has and the
    worktree lacks (``data/mnist``: the code finds it beside itself, so a bare worktree would run on a stand-in and
    its outputs would differ for want of data, not because of code). Returns the links made."""
    made = []
    for dvc_file in sorted((root / "data").glob("*.dvc")):
        for out in (yaml.safe_load(dvc_file.read_text()) or {}).get("outs", []):
            src, dst = dvc_file.parent / out["path"], wt / dvc_file.parent.relative_to(root) / out["path"]
            if src.exists() and not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.symlink_to(src.resolve())
                made.append(dst)
    return made


def _run_in(wt: Path, wproj: Path, project: Path, entry: dict) -> tuple[str, float]:
    """Run a lock entry's command in ``wproj`` (worktree ``wt``'s copy of ``project``) with ``wt/src`` first on the
    import path: every dependency the worktree lacks (data, models: what git does not track) is linked from
    ``project``; code and params are the revision's. Returns (why it failed or "", seconds)."""
    from osfl.farm.worker import dvc_env

    for out in entry.get("outs", []):  # as DVC does before a run; a persistent checkpoint too (a run from scratch)
        _remove(wproj / out["path"])
    for dep in entry.get("deps", []):
        target = Path(os.path.normpath(wproj / dep["path"]))
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(Path(os.path.normpath(project / dep["path"])).resolve())
    for out in entry.get("outs", []):  # never write through a link into this checkout
        inside = Path(os.path.normpath(wproj / out["path"]))
        if any(q.is_symlink() for q in [inside, *inside.parents] if wt in q.parents or q == wt):
            return f"{out['path']} lies in a linked input", 0.0
    env = code_first(wt, dvc_env())
    cmd = entry["cmd"] if isinstance(entry["cmd"], str) else " && ".join(entry["cmd"])
    t0 = time.perf_counter()
    done = subprocess.run(cmd, shell=True, cwd=wproj, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    return ("" if done.returncode == 0 else (done.stdout + done.stderr).strip()[-300:]), seconds


def code_first(tree: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``tree``'s ``src`` first on PYTHONPATH: a command (and the stages it starts) runs that tree's
    code."""
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(tree / "src"), env.get("PYTHONPATH", "")]))}


def compare_runs(old: Path, new: Path, name: str, rtol: float, atol: float) -> tuple[str, str]:
    """Two runs' copies of an output (a file or a folder): ("identical" | "timings" | "within tolerance" |
    "differs", what differs). "timings": they differ only in seconds and host (a runtime/ record, or a JSON record
    equal without its timings)."""
    pairs = [(name, old, new)] if old.is_file() or new.is_file() else [
        (f"{name}/{rel}", old / rel, new / rel)
        for rel in sorted({p.relative_to(old) for p in old.rglob("*") if p.is_file()}
                          | {p.relative_to(new) for p in new.rglob("*") if p.is_file()})]
    verdict, worst = "identical", 0.0
    for label, a, b in pairs:
        if not a.is_file() or not b.is_file():
            return "differs", f"{label} was written by one run only"
        if a.read_bytes() == b.read_bytes():
            continue
        if _only_timings(label, a, b):
            verdict = "timings" if verdict == "identical" else verdict
            continue
        x, y = _numbers(a, b.suffix), _numbers(b, b.suffix)
        if x is None or y is None or len(x) != len(y):
            return "differs", f"{label} differs (not comparable by value)"
        largest, why = _by_value(x, y, label, rtol, atol)
        if why:
            return "differs", why
        worst, verdict = max(worst, largest), "within tolerance"
    return verdict, (f"{name}: largest difference {worst:.3g}" if verdict == "within tolerance" else "")


def _recorded_runtime(project: Path, recorded: dict[str, str]) -> dict:
    """The runtime block of the stage's recorded run record (an output ``.../runtime/*.json``), or {}."""
    for path in recorded:
        p = project / path
        if "runtime" in Path(path).parts and p.suffix == ".json" and p.is_file():
            try:
                return machine.runtime_of(json.loads(p.read_text()))
            except ValueError:
                return {}
    return {}


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _without_timings(value):
    """A run record without what varies from run to run of the same computation: every ``*seconds`` key and the
    ``runtime`` block (host, threads, switches), recursively."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "runtime" and not k.endswith("seconds")}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def timing_only(project: Path, path: str, md5: str) -> bool:
    """Whether a differing output differs only in timings: a stage's seconds-and-host record (an output under a
    ``runtime/`` folder, written apart from what was computed) or a JSON record equal once its timings are dropped."""
    if "runtime" in Path(path).parts:
        return True
    return all(old is not None and new.is_file() and (old.read_bytes() == new.read_bytes()
                                                      or _only_timings(label, old, new))
               for label, old, new in _file_pairs(project, path, md5))


def _only_timings(label: str, old: Path, new: Path) -> bool:
    """The one rule for two differing copies of an output: they differ only in timings when the output lies under a
    ``runtime/`` folder (seconds and host, written apart from what was computed) or both are JSON records equal once
    their timings are dropped."""
    if "runtime" in Path(label).parts:
        return True
    if Path(label).suffix != ".json":  # a cached copy has no suffix: the output's name says what it is
        return False
    try:
        return _without_timings(json.loads(old.read_text())) == _without_timings(json.loads(new.read_text()))
    except (ValueError, UnicodeDecodeError):
        return False


def _git_root(project: Path) -> Path:
    return Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=project, capture_output=True, text=True,
                               check=True).stdout.strip())


def _staged(project: Path) -> set[str]:
    """Paths (relative to the git root) whose index entry differs from HEAD."""
    return set(subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=project, capture_output=True,
                              text=True).stdout.split())


def _repro(project: Path, name: str) -> tuple[str, float]:
    """``dvc repro --force --single-item name`` in ``project``: (why it failed or "", seconds)."""
    t0 = time.perf_counter()
    run = _dvc(["repro", "--force", "--single-item", name], project, check=False)
    seconds = time.perf_counter() - t0
    return ("" if run.returncode == 0 else (run.stdout + run.stderr).strip()[-300:]), seconds


def _rerun(project: Path, name: str, recorded: dict[str, str], rtol: float, atol: float) -> Check:
    failed, seconds = _repro(project, name)
    if failed:
        return Check(name, "not checked", f"the re-run failed: {failed}", seconds)
    now = _outs(locked_stages(project)[name])
    differ = [p for p in recorded if now.get(p) != recorded[p]]
    timings = [p for p in differ if timing_only(project, p, recorded[p])]
    differ = [p for p in differ if p not in timings]
    if not differ:
        return Check(name, "identical", f"{len(recorded)} output(s), md5 as recorded" + (
            f" but for {len(timings)} that differ only in seconds and host ({', '.join(timings)})" if timings else ""),
            seconds, tuple(timings))
    details, close = [], True
    for p in differ:
        ok, why = compare_by_value(project, p, recorded[p], rtol, atol)
        close &= ok
        details.append(why)
    return Check(name, "within tolerance" if close else "differs", "; ".join(details), seconds)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m osfl.provenance.verify", description=__doc__.split("\n")[0])
    p.add_argument("project", type=Path, help="a pipeline's folder: . (the main experiment) or papers/<paper>")
    p.add_argument("--sample", type=int, default=3, help="how many checkable stages to re-run (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    p.add_argument("--stages", default="", help="only stages matching these glob patterns (comma-separated)")
    p.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of a comparison by value")
    p.add_argument("--atol", type=float, default=1e-6, help="absolute tolerance of a comparison by value")
    p.add_argument("--code-changed", action="store_true",
                   help="also check stages stale only in their code (a refactor's check 2, against the records)")
    p.add_argument("--base", default="", metavar="REV",
                   help="compare with a re-run under REV's code on this machine instead of the records (implies "
                        "--code-changed): a refactor's check 2 where the records came from another kind of CPU")
    args = p.parse_args(argv)
    project = args.project.resolve()
    if not (project / "dvc.yaml").is_file():
        p.error(f"project: {args.project} holds no dvc.yaml")
    if not (project / "dvc.lock").is_file():
        print(f"verify: {args.project} has no dvc.lock: nothing was run there yet, so nothing can be checked")
        return 1
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "dvc.lock"], cwd=project, capture_output=True,
                           text=True).stdout.strip()
    if dirty:
        p.error(f"project: {args.project}/dvc.lock has uncommitted changes; commit or restore them first")
    here = machine.this_machine()

    pats = [s.strip() for s in args.stages.split(",") if s.strip()]
    rng = random.Random(args.seed)
    checks: list[Check] = []
    first = None
    # one stage at a time: a stage whose outputs came out as recorded stays in place, so the stages that read them
    # become checkable in the next draw (prepare -> partition -> train ...)
    while len(checks) < args.sample:
        ok, skipped = candidates(project, args.code_changed or bool(args.base))
        first = first or (len(ok), len(ok) + len(skipped))
        done = {c.stage for c in checks}
        pool = [s for s in ok if s not in done and (not pats or any(fnmatch.fnmatch(s, pat) for pat in pats))]
        if not pool:
            break
        if not checks:
            print(f"verify {args.project}: {first[0]} of {first[1]} recorded stages can be checked now (more as their "
                  f"inputs are recomputed); re-running up to {args.sample}, drawn with seed {args.seed}, on "
                  f"{here['cpu']} ({here['cpu_capability']})", flush=True)
        drawn = rng.choice(sorted(pool))
        c = (check_against_base(project, drawn, args.base, args.rtol, args.atol) if args.base else
             check_stage(project, drawn, args.rtol, args.atol))
        checks.append(c)
        print(f"  {c.status:16s} {c.stage} ({c.seconds:.0f} s): {c.detail}", flush=True)
    done = {c.stage for c in checks}
    skipped = {k: v for k, v in skipped.items() if k not in done}
    skipped.update({k: "checkable, not drawn" for k in candidates(project, args.code_changed or bool(args.base))[0]
                    if k not in done} if checks else {})
    reasons: dict[str, list[str]] = {}
    for name, why in skipped.items():
        key = ("stale: its code, params or inputs changed since it ran (re-run it)" if why.startswith("stale") else
               "an input is not on this machine" if why.startswith("input not") else why)
        reasons.setdefault(key, []).append(name)
    for why, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        print(f"  not checkable ({len(names)}): {why}: {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}")
    bad = [c for c in checks if c.status in ("differs", "not checked")]
    print(f"verify {args.project}: {sum(c.status == 'identical' for c in checks)} identical, "
          f"{sum(c.status == 'within tolerance' for c in checks)} within tolerance, {len(bad)} differ or failed")
    return 1 if bad or not checks else 0


if __name__ == "__main__":
    sys.exit(main())
