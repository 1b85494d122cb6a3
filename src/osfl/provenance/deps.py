"""Code dependencies of every pipeline stage, derived from its imports and written into its dvc.yaml.

    python -m osfl.provenance.deps            # check: exit 1 and one line per stage whose code deps differ
    python -m osfl.provenance.deps --write    # rewrite the code deps of every stage that differs
    python -m osfl.provenance.deps --write papers/hfldd/dvc.yaml   # one pipeline

A stage's code deps are exactly the files of the ``osfl`` modules its command runs (osfl.provenance.imports),
written as a folder where every module of that folder is run, and as files otherwise. The other deps (data,
upstream outputs) and the entries that name a template variable (``src/osfl/methods/${item.method}.py``: an item's
own method file) are left as written. DVC gives every item of a ``matrix``/``foreach`` stage the same list, so that
list is the union of its items' closures under the committed params, each item's own templated file taken out; a
template those params leave empty is derived from the modules its command names and, where its command takes a
templated ``--method``, from every method its params file names. Lists are sorted.

Once the code deps change, DVC re-runs the stage: after an edit that adds or removes an import, ``--write``, then
``dvc repro``. A stage whose outputs are not on the machine stays stale in ``dvc status`` until it is re-run.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from .imports import Sources, tokens

ROOT = Path(__file__).resolve().parents[3]


def pipelines(root: Path = ROOT) -> list[str]:
    """The repository's dvc.yaml files, relative to ``root``: the main one, each paper's and the compiled report's."""
    return (["dvc.yaml"] + sorted(str(p.relative_to(root)) for p in (root / "papers").glob("*/dvc.yaml"))
            + (["report/dvc.yaml"] if (root / "report" / "dvc.yaml").is_file() else []))


@dataclass
class StageDeps:
    pipeline: str  # dvc.yaml path relative to the repository
    name: str  # the stage's name in dvc.yaml (a template's, for matrix/foreach stages)
    items: int  # stages DVC resolves from it with the committed params
    written: list[str]  # the literal code entries now in dvc.yaml, as written (relative to the pipeline's folder)
    derived: list[str]  # what the imports say they must be

    @property
    def missing(self) -> list[str]:
        """Derived entries that no written entry covers (the same path, or a folder holding it)."""
        written = _norm(self.written)
        return sorted(d for d in self.derived if not any(d == w or d.startswith(w + "/") for w in written))

    @property
    def extra(self) -> list[str]:
        return sorted(set(_norm(self.written)) - set(self.derived))


def _norm(entries: list[str]) -> list[str]:
    return [os.path.normpath(e).replace(os.sep, "/") for e in entries]


def _raw_stages(path: Path) -> dict:
    """name -> the stage's body (a foreach's ``do``) as written, read with ruamel so that lines are known."""
    from ruamel.yaml import YAML

    data = YAML().load(path.read_text())
    return {name: (body["do"] if "do" in body else body) for name, body in (data.get("stages") or {}).items()}


def _is_code(entry: str, folder: Path, root: Path) -> bool:
    full = Path(os.path.normpath(folder / entry))
    return full == root / "src" / "osfl" or (root / "src" / "osfl") in full.parents


def collapse(files: set[Path], src_osfl: Path) -> list[Path]:
    """``files`` (module files) with every folder whose modules are all in it written as the folder."""
    def walk(folder: Path) -> list[Path]:
        mods = [p for p in folder.rglob("*.py") if "__pycache__" not in p.parts]
        if mods and all(p in files for p in mods):
            return [folder]
        out = [p for p in sorted(folder.glob("*.py")) if p in files]
        for sub in sorted(d for d in folder.iterdir() if d.is_dir() and d.name != "__pycache__"):
            out += walk(sub)
        return out

    return walk(src_osfl)


def _resolved(pipeline: str, root: Path):
    """(template name, cmd, wdir, resolved deps) for every stage DVC resolves from ``pipeline`` under ``root``."""
    from dvc.repo import Repo

    folder = (root / pipeline).parent
    project = folder if (folder / ".dvc").is_dir() else root  # papers/<paper>/ is a DVC project of its own
    with Repo(str(project)) as repo:
        for stage in repo.stage.collect(str(root / pipeline)):
            deps = [Path(os.path.normpath(d.fs_path)) for d in stage.deps]
            yield stage.name.split("@")[0], stage.cmd, Path(stage.wdir), deps


def derive(pipeline: str, root: Path = ROOT) -> list[StageDeps]:
    """Every stage of ``pipeline`` with its code deps as written and as derived from the imports."""
    root = Path(root).resolve()
    src = Sources(root / "src")
    folder = (root / pipeline).parent
    params = folder / "params.yaml"
    names = tokens(yaml.safe_load(params.read_text())) if params.is_file() else set()
    raw = _raw_stages(root / pipeline)
    literal = {name: [str(e) for e in (body.get("deps") or []) if isinstance(e, str) and "${" not in e
                      and _is_code(e, folder, root)] for name, body in raw.items()}
    union: dict[str, set[Path]] = {name: set() for name in raw}
    items: dict[str, int] = {name: 0 for name in raw}
    for name, cmd, wdir, deps in _resolved(pipeline, root):
        written = {Path(os.path.normpath(folder / e)) for e in literal[name]}
        own = [d for d in deps if d not in written and _is_code(str(d), folder, root)]  # from templated entries
        files = {src.module_file(m) for m in src.stage_modules(cmd, wdir, names)}
        union[name] |= {f for f in files if not any(f == o or o in f.parents for o in own)}
        items[name] += 1
    for name, body in raw.items():  # a template the committed params leave empty: derived from its command
        if not items[name] and body.get("cmd"):
            cmd = " ".join(body["cmd"]) if isinstance(body["cmd"], list) else str(body["cmd"])
            mods = src.stage_modules(cmd, folder / body.get("wdir", "."), names)
            if re.search(r"--method\s+\$\{", cmd):  # a templated method: every method its params file names
                methods = [f"osfl.methods.{n}" for n in sorted(names) if n.isidentifier() and src.module_file(f"osfl.methods.{n}")]
                mods |= src.closure(methods) - set(methods)
            union[name] = {src.module_file(m) for m in mods}
    out = []
    for name in raw:
        derived = [os.path.relpath(p, folder).replace(os.sep, "/") for p in collapse(union[name], root / "src" / "osfl")]
        out.append(StageDeps(pipeline, name, items[name], literal[name], sorted(derived)))
    return out


def check(root: Path = ROOT, only: list[str] | None = None, extra: bool = True) -> list[str]:
    """One line per stage whose code deps differ from its imports (empty when every pipeline agrees). With
    ``extra=False`` only missing deps count (a copy with other params resolves items the committed lists are not
    written for, so a module they do not run is no fault there)."""
    lines = []
    for pipeline in only or pipelines(root):
        for s in derive(pipeline, root):
            if s.missing or (extra and s.extra):
                lines.append(f"{pipeline}: stage {s.name}: imported but not in deps: {', '.join(s.missing) or '-'}; "
                             f"in deps but not imported: {', '.join(s.extra) or '-'}")
    return lines


def write(pipeline: str, root: Path = ROOT) -> list[str]:
    """Rewrite the literal code deps of every stage of ``pipeline`` that differs; returns the stages rewritten."""
    root = Path(root).resolve()
    path = root / pipeline
    raw = _raw_stages(path)
    folder = path.parent
    lines = path.read_text().splitlines(keepends=True)
    edits = []  # (first line, lines to drop, lines to insert)
    for s in derive(pipeline, root):
        if not (s.missing or s.extra):
            continue
        deps = raw[s.name].get("deps")
        if deps is None:
            raise SystemExit(f"{pipeline}: stage {s.name} imports osfl modules but has no deps: key; add `deps:` to it")
        code_lines = [deps.lc.item(i)[0] for i, e in enumerate(deps)
                      if isinstance(e, str) and "${" not in e and _is_code(e, folder, root)]
        anchor = code_lines[0] if code_lines else deps.lc.item(len(deps) - 1)[0] + 1
        ref = lines[code_lines[0] if code_lines else deps.lc.item(0)[0]]
        indent = ref[: ref.index("-")]
        edits.append((anchor, set(code_lines), [f"{indent}- {d}\n" for d in s.derived], s.name))
    for anchor, drop, new, _ in sorted(edits, key=lambda e: -e[0]):
        for i in sorted(drop, reverse=True):
            del lines[i]
        lines[anchor:anchor] = new
    if edits:
        path.write_text("".join(lines))
    return [e[3] for e in edits]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m osfl.provenance.deps", description=__doc__.split("\n")[0])
    p.add_argument("pipelines", nargs="*", help="dvc.yaml files relative to the repository (default: all five)")
    p.add_argument("--write", action="store_true", help="rewrite the code deps that differ (default: only check)")
    p.add_argument("--root", type=Path, default=ROOT, help="the repository (default: this checkout)")
    args = p.parse_args(argv)
    chosen = args.pipelines or pipelines(args.root)
    for pipeline in chosen:
        if not (args.root / pipeline).is_file():
            p.error(f"pipelines: {pipeline} is not a file under {args.root}")
    if args.write:
        for pipeline in chosen:
            changed = write(pipeline, args.root)
            print(f"{pipeline}: {len(changed)} stage(s) rewritten")
    problems = check(args.root, chosen)
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"code deps match the imports in {len(chosen)} pipeline(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
