"""``python -m osfl.provenance.record`` commits the locked stages whose only change is a code dependency's hash, keeps
every other stage out with its reason, and refuses to leave a lock whose entries moved beyond code hashes: on a
two-stage DVC project made here (its code under ``src/osfl/`` as the repository's)."""
from __future__ import annotations

import sys
from pathlib import Path

import yaml
from helpers import sh

from osfl.provenance import record
from osfl.provenance.lineage import locked_stages

STEP = ("import sys, pathlib; pathlib.Path(sys.argv[2]).write_text(str(sum(map(int, "
        "pathlib.Path(sys.argv[1]).read_text().split()))))")


def _project(tmp_path: Path) -> Path:
    work = tmp_path / "proj"
    (work / "src" / "osfl").mkdir(parents=True)
    (work / "src" / "osfl" / "step.py").write_text(STEP + "\n")
    (work / "numbers.txt").write_text("1 2 3\n")
    (work / "more.txt").write_text("4 5\n")
    (work / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "total": {"cmd": f"{sys.executable} src/osfl/step.py numbers.txt total.txt",
                  "deps": ["src/osfl/step.py", "numbers.txt"], "outs": ["total.txt"]},
        "other": {"cmd": f"{sys.executable} src/osfl/step.py more.txt other.txt",
                  "deps": ["src/osfl/step.py", "more.txt"], "outs": ["other.txt"]},
    }}))
    sh("git", "init", "-q", cwd=work)
    sh("dvc", "init", "-q", cwd=work)
    sh("dvc", "repro", "-q", cwd=work)
    return work


def test_code_only_entries_are_committed_and_the_rest_kept_out(tmp_path):
    work = _project(tmp_path)
    before = locked_stages(work)
    (work / "src" / "osfl" / "step.py").write_text(STEP + "  # a comment: the same computation\n")
    (work / "more.txt").write_text("4 6\n")  # 'other' changed in its data as well: not recordable
    committed, kept = record.record(work, exclude=[], progress=lambda *_: None)
    assert committed == ["total"] and kept == {"other": "changed deps: more.txt"}
    after = locked_stages(work)
    assert after["total"]["outs"] == before["total"]["outs"]
    assert [d["md5"] for d in after["total"]["deps"] if d["path"] == "numbers.txt"] == \
           [d["md5"] for d in before["total"]["deps"] if d["path"] == "numbers.txt"]
    assert after["total"]["deps"] != before["total"]["deps"] and after["other"] == before["other"]
    assert "total" not in sh("dvc", "status", cwd=work).stdout


def test_exclude_and_dry_run_commit_nothing(tmp_path):
    work = _project(tmp_path)
    lock = (work / "dvc.lock").read_text()
    (work / "src" / "osfl" / "step.py").write_text(STEP + "  # edited\n")
    committed, kept = record.record(work, exclude=["oth*"], dry_run=True, progress=lambda *_: None)
    assert committed == ["total"] and kept == {"other": "--exclude oth*"}
    assert (work / "dvc.lock").read_text() == lock


def test_an_output_that_a_commit_would_change_restores_the_lock(tmp_path):
    """The output is on disk and differs from the record only after the edit: a code-only status cannot see it
    (``dvc status`` reports the dep), but the entry would move: the lock is restored and it says so."""
    work = _project(tmp_path)
    lock = (work / "dvc.lock").read_text()
    (work / "src" / "osfl" / "step.py").write_text(STEP + "  # edited\n")
    (work / "total.txt").write_text("7")  # as if the stage had re-run with other behaviour, outside DVC
    committed, kept = record.record(work, exclude=["other"], dry_run=True, progress=lambda *_: None)
    assert committed == [] and "changed outs: total.txt" in kept["total"]
    assert (work / "dvc.lock").read_text() == lock


def test_a_moved_code_dependency_counts_as_code(tmp_path):
    """make deps rewrites a stage's code list when a module moves: a dropped and a new code path are code changes."""
    work = _project(tmp_path)
    (work / "src" / "osfl" / "moved.py").write_text(STEP + "\n")
    text = (work / "dvc.yaml").read_text().replace("deps:\n    - src/osfl/step.py\n    - numbers.txt",
                                                   "deps:\n    - src/osfl/moved.py\n    - numbers.txt")
    (work / "dvc.yaml").write_text(text)
    committed, kept = record.record(work, exclude=["other"], progress=lambda *_: None)
    assert committed == ["total"], kept
    assert [d["path"] for d in locked_stages(work)["total"]["deps"]] == ["numbers.txt", "src/osfl/moved.py"]
