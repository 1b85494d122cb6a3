"""Check 3 of recording a refactor (docs/rerecord.md): the smoke outputs of the stage types a change touches, under
the old code and the new, compared file by file.

    python -m osfl.provenance.smoke --base REV tests/test_ofeded_pipeline.py::test_smoke_pipeline_renders_tables_1_and_3

runs the given pipeline tests twice on this machine, once in a git worktree of ``REV`` (its code and tests) and
once in this checkout, each with its own ``src`` first on the import path (the stages' subprocesses inherit it) and
its own ``--basetemp``, so the smoke repositories the tests build are kept. Then every ``models/`` and ``results/``
folder of those repositories (``<basetemp>/<fixture>/repo/[papers/<p>/]{models,results}``) is compared with its
counterpart by :func:`osfl.provenance.verify.compare_runs`: byte for byte, with seconds and host set aside. It
prints one line per folder and exits 1 when any folder differs or is written by one side only, or a test fails.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .verify import _base_worktree, _git_root, code_first, compare_runs

OUTPUT_DIRS = ("models", "results")


def run_tests(root: Path, tests: list[str], basetemp: Path) -> subprocess.CompletedProcess:
    """The tests of the tree at ``root`` with that tree's code, their temporary folders kept under ``basetemp``."""
    env = code_first(root, dict(os.environ))
    env["SOURCE_DATE_EPOCH"] = "0"  # matplotlib's PDFs (a partition's bubble plot) carry no creation date
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider",
                           f"--basetemp={basetemp}", *tests], cwd=root, env=env, capture_output=True, text=True)


def failure_excerpt(log: str, limit: int = 3000) -> str:
    """What a failed pytest run says about its failures: its FAILURES / ERRORS section (cut to ``limit``
    characters) and its short summary, not the time breakdown the suite prints last."""
    lines = log.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("=") and (" FAILURES " in line or
                                                                             " ERRORS " in line)), None)
    summary = next((i for i, line in enumerate(lines) if " short test summary info " in line), None)
    if start is None:
        return log.strip()[-limit:]
    body = "\n".join(lines[start:summary] if summary is not None and summary > start else lines[start:])
    tail = "\n".join(lines[summary:]) if summary is not None else ""
    return (body[:limit] + ("\n..." if len(body) > limit else "") + ("\n" + tail if tail else "")).strip()


def output_folders(basetemp: Path) -> dict[str, Path]:
    """{relative name: folder} of every smoke repository's models/ and results/ under ``basetemp``."""
    found = {}
    for repo in sorted(basetemp.glob("*/repo")):
        for project in [repo, *sorted(p.parent for p in repo.glob("papers/*/dvc.yaml"))]:
            for name in OUTPUT_DIRS:
                if (project / name).is_dir():
                    found[str((project / name).relative_to(basetemp))] = project / name
    return found


def compare(old: Path, new: Path, rtol: float = 0.0, atol: float = 0.0) -> list[tuple[str, str, str]]:
    """(folder, verdict, detail) for every output folder of either side: identical | timings | within tolerance |
    differs | one side only."""
    a, b = output_folders(old), output_folders(new)
    rows = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            rows.append((name, "one side only", "written by the " + ("new" if name in b else "old") + " code only"))
            continue
        verdict, detail = compare_runs(a[name], b[name], name, rtol, atol)
        rows.append((name, verdict, detail))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m osfl.provenance.smoke", description=__doc__.split("\n\n")[0])
    ap.add_argument("tests", nargs="+", help="pytest node ids of pipeline tests that build smoke repositories")
    ap.add_argument("--base", required=True, help="the revision whose code is the old side (e.g. HEAD)")
    ap.add_argument("--keep", type=Path, help="keep both sides' temporary folders here (default: removed)")
    args = ap.parse_args(argv)
    root = _git_root(Path.cwd())
    with tempfile.TemporaryDirectory(prefix="osfl-smoke-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)  # pytest creates --basetemp itself, not its parents
        with _base_worktree(root, args.base) as (wt, _):
            old = run_tests(wt, args.tests, work / "old")
        new = run_tests(root, args.tests, work / "new")
        failed = [(side, r) for side, r in (("old", old), ("new", new)) if r.returncode != 0]
        for side, r in failed:
            print(f"the tests failed with the {side} code:\n{failure_excerpt(r.stdout + r.stderr)}")
        # the outputs are compared even then: a test that fails in its body has built its smoke repository
        rows = compare(work / "old", work / "new")
    if not rows:
        print("no smoke repository with models/ or results/ was kept: are these pipeline tests?")
        return 1
    for name, verdict, detail in rows:
        print(f"{verdict:>16}  {name}" + (f"  ({detail})" if detail else ""))
    bad = [r for r in rows if r[1] in ("differs", "one side only")]
    print(f"{len(rows) - len(bad)} of {len(rows)} output folders as the old code writes them"
          f" (base {args.base}, seconds and host set aside)" + ("; a test failed (above)" if failed else ""))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
