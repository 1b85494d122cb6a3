"""Shared by the pipeline tests: run a command with the venv's tools first on PATH, copy the working tree."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

BIN = str(Path(sys.executable).parent)


def sh(*args, cwd, check=True, env_extra=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "OSFL_DEVICE": "cpu",
           "DVC_NO_ANALYTICS": "1", "PYTHONPATH": ""}
    env.update(env_extra or {})
    p = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p


def copy_worktree(repo_root: Path, work: Path) -> None:
    """The tracked and untracked-not-ignored files of the repository, without pipeline outputs and locks."""
    files = sh("git", "ls-files", "-co", "--exclude-standard", cwd=repo_root).stdout.split()
    for rel in files:
        src = repo_root / rel
        if src.is_file() and not rel.startswith(("results/", "reports/", "models/", "data/")) \
                and not rel.endswith("dvc.lock"):
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, work / rel)


def init_repo(work: Path, remote: Path) -> None:
    sh("git", "init", "-q", "-b", "main", cwd=work)
    sh("git", "config", "user.email", "t@example.com", cwd=work)
    sh("git", "config", "user.name", "test", cwd=work)
    sh("dvc", "remote", "add", "-f", "-d", "--local", "testremote", str(remote), cwd=work)
    sh("git", "add", "-A", cwd=work)
    sh("git", "commit", "-q", "-m", "copy", cwd=work)


def compile_latex(bodies: list[str], folder: Path) -> Path:
    """Compile table bodies in a minimal document with pdflatex (the caller skips when it is missing)."""
    from osfl.reporting import latex_document

    (folder / "doc.tex").write_text(latex_document(bodies), encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=folder,
                          capture_output=True, text=True, errors="replace", timeout=60)
    assert proc.returncode == 0, proc.stdout[-3000:]
    pdf = folder / "doc.pdf"
    assert pdf.exists() and pdf.read_bytes().startswith(b"%PDF")
    return pdf
