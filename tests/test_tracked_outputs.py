"""Every git-tracked file under results/ and reports/ (the main experiment's and each paper's) is written by a current
stage: an output of a stage that its dvc.yaml resolves with the committed params. A record that no stage writes any
more, or one made outside ``dvc repro``, is a number nobody can trace to the code; this test names each such file.
DVC's own ``.gitignore`` files in those folders are the exception."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = [(".", "dvc.yaml")] + [(f"papers/{p.parent.name}", f"papers/{p.parent.name}/dvc.yaml")
                                  for p in sorted((ROOT / "papers").glob("*/dvc.yaml"))]


def stage_outputs(project: str, pipeline: str) -> list[Path]:
    from dvc.repo import Repo

    with Repo(str(ROOT / project)) as repo:
        return [Path(os.path.normpath(o.fs_path)).relative_to(ROOT)
                for stage in repo.stage.collect(str(ROOT / pipeline)) for o in stage.outs]


def not_written_by_a_stage(project: str, pipeline: str) -> list[str]:
    folders = [str(Path(project) / d) for d in ("results", "reports")]
    tracked = subprocess.run(["git", "ls-files", "--", *folders], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    outs = stage_outputs(project, pipeline)
    return [f for f in tracked if Path(f).name != ".gitignore"
            and not any(Path(f) == o or o in Path(f).parents for o in outs)]


@pytest.mark.slow  # DVC resolves every stage of every pipeline (about 50 s of worker time)
@pytest.mark.parametrize("project,pipeline", PROJECTS, ids=[p for p, _ in PROJECTS])
def test_every_tracked_result_is_a_stage_output(project, pipeline):
    orphans = not_written_by_a_stage(project, pipeline)
    assert not orphans, f"{len(orphans)} tracked file(s) no stage of {pipeline} writes: " + ", ".join(orphans[:20])
