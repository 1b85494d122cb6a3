"""The repository's pipelines and papers, discovered from the folders, never listed by hand (issue 75).

* A **pipeline** is a folder ``papers/<name>/`` with a ``dvc.yaml`` (each paper, and the cross-paper benchmark).
* A **paper** is a pipeline with ``published/artifacts.yaml`` (the paper's tables and figures as printed). Its
  display name comes from that file: ``paper.short``, else ``paper.method``, else the title's part before ":",
  else the folder's name.

The Makefile reads the same folders with its own wildcard; the render stage, the compiled report and the tests
read them here. Adding a paper is a folder under ``papers/`` and a module ``osfl.papers.<name>``: no list to edit.
A leaf module: it imports nothing of osfl.
"""
from __future__ import annotations

from pathlib import Path

import yaml

__all__ = ["ROOT", "display_name", "papers", "pipelines"]

#: The repository's root (this file is src/osfl/discover.py).
ROOT = Path(__file__).resolve().parents[2]


def pipelines(papers_root: Path | None = None) -> list[str]:
    """The names of the folders under ``papers_root`` (default: the repository's ``papers/``) with a dvc.yaml,
    sorted."""
    root = Path(papers_root) if papers_root is not None else ROOT / "papers"
    return sorted(p.parent.name for p in root.glob("*/dvc.yaml"))


def papers(papers_root: Path | None = None) -> list[str]:
    """The pipelines that are papers (they have ``published/artifacts.yaml``), sorted."""
    root = Path(papers_root) if papers_root is not None else ROOT / "papers"
    return [p for p in pipelines(root) if (root / p / "published" / "artifacts.yaml").is_file()]


def display_name(folder: Path) -> str:
    """A paper's name as the reports print it, from its ``published/artifacts.yaml`` (see the module docstring)."""
    folder = Path(folder)
    meta = yaml.safe_load((folder / "published" / "artifacts.yaml").read_text(encoding="utf-8")) or {}
    paper = meta.get("paper")
    if isinstance(paper, dict):
        for key in ("short", "method"):
            if paper.get(key):
                return str(paper[key]).strip()
        paper = paper.get("title") or paper.get("name")
    title = str(paper or "").strip()
    return title.split(":", 1)[0].strip() if ":" in title else folder.name
