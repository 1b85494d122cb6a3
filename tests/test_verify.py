"""``python -m osfl.provenance.verify`` re-runs committed stages and tells identical outputs from changed ones, and a
stage it cannot check (stale code, an input not on the machine) from one it can: on a two-stage DVC project made here."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from helpers import sh

from osfl.provenance import verify

STEP = "import sys, pathlib; pathlib.Path(sys.argv[2]).write_text(str(sum(map(int, pathlib.Path(sys.argv[1]).read_text().split()))))"


def _project(tmp_path: Path) -> Path:
    work = tmp_path / "proj"
    work.mkdir()
    (work / "step.py").write_text(STEP + "\n")
    (work / "numbers.txt").write_text("1 2 3\n")
    (work / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "total": {"cmd": f"{sys.executable} step.py numbers.txt total.txt", "deps": ["step.py", "numbers.txt"],
                  "outs": ["total.txt"]},
        "again": {"cmd": f"{sys.executable} step.py total.txt again.json", "deps": ["step.py", "total.txt"],
                  "outs": [{"again.json": {"cache": False}}]},
    }}))
    sh("git", "init", "-q", cwd=work)
    sh("dvc", "init", "-q", cwd=work)
    sh("dvc", "config", "core.autostage", "true", cwd=work)  # as the repository's projects: DVC stages what it writes
    sh("dvc", "repro", "-q", cwd=work)
    sh("git", "add", "-A", cwd=work)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "runs", cwd=work)
    return work


def test_identical_reruns_then_a_changed_record_and_a_stale_stage(tmp_path, capsys):
    work = _project(tmp_path)
    assert verify.main([str(work), "--sample", "2"]) == 0
    out = capsys.readouterr().out
    assert "identical        total" in out and "identical        again" in out and "2 identical" in out
    assert subprocess.run(["git", "status", "--porcelain"], cwd=work, capture_output=True, text=True).stdout == ""
    # a record that the code does not give (as if computed elsewhere): caught, and the checkout is put back
    (work / "again.json").write_text("7")
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "edited by hand", cwd=work)
    lock = (work / "dvc.lock").read_text()
    sh("dvc", "commit", "-f", "-q", "again", cwd=work)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "recorded", cwd=work)
    assert verify.main([str(work), "--sample", "2", "--stages", "again"]) == 1
    out = capsys.readouterr().out
    assert "differs          again" in out and "again.json differs by value (|7 - 6|" in out
    assert (work / "again.json").read_text() == "7" and (work / "dvc.lock").read_text() != lock
    # code changed since the run: stale, not checkable, and said so
    (work / "step.py").write_text(STEP + "# edited\n")
    assert verify.main([str(work)]) == 1
    out = capsys.readouterr().out
    assert "not checkable (2): stale" in out and "0 identical" in out


def test_a_record_that_differs_only_in_its_seconds_and_host_counts_as_the_same(tmp_path):
    """A re-run writes its own seconds and host: a stage's runtime/ record, and the seconds and runtime block of its
    run record. Those alone do not make it differ; any other field does."""
    import json

    work = tmp_path / "p"
    (work / "runs").mkdir(parents=True)
    (work / ".dvc").mkdir()
    record = {"acc_final": 81.25, "server_seconds": 55.7, "runtime": {"cpu": "A", "threads": 2}, "tag": ""}
    (work / "runs" / "x.json").write_text(json.dumps(record))
    sh("git", "init", "-q", cwd=work)
    sh("git", "add", "-A", cwd=work)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "r", cwd=work)
    (work / "runs" / "x.json").write_text(json.dumps({**record, "server_seconds": 94.2, "runtime": {"cpu": "B"}}))
    assert verify.timing_only(work, "runs/x.json", "0" * 32)
    assert verify.timing_only(work, "results/r/runtime/x.json", "0" * 32)  # the seconds-and-host record itself
    (work / "runs" / "x.json").write_text(json.dumps({**record, "acc_final": 81.3}))
    assert not verify.timing_only(work, "runs/x.json", "0" * 32)
    # a recorded copy in DVC's cache (named by its md5, no suffix) is read by the same rule
    md5 = "ab" + "1" * 30
    cached = work / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
    cached.parent.mkdir(parents=True)
    cached.write_text(json.dumps(record))
    (work / "runs" / "y.json").write_text(json.dumps({**record, "server_seconds": 3.0}))
    assert verify.timing_only(work, "runs/y.json", md5)
    assert verify.compare_runs(cached, work / "runs" / "y.json", "runs/y.json", 0, 0)[0] == "timings"
    (work / "runs" / "y.json").write_text(json.dumps({**record, "tag": "b"}))
    assert not verify.timing_only(work, "runs/y.json", md5)


def test_a_refactor_is_checked_against_the_records_or_against_the_base_revision_s_code(tmp_path, capsys):
    """Check 2 of docs/rerecord.md: stages stale only in their code re-run under the new code and compare with the
    records (--code-changed) or with a run of the base revision's code on this machine (--base REV)."""
    work = _project(tmp_path)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    commit = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam"]
    (work / "step.py").write_text(STEP.replace("str(sum(", "str(sum(  ") + "  # a refactor\n")
    sh(*commit, "refactor", cwd=work)
    assert verify.main([str(work), "--sample", "2"]) == 1
    assert "not checkable (2): stale" in capsys.readouterr().out
    assert verify.main([str(work), "--sample", "2", "--code-changed"]) == 0
    assert "2 identical" in capsys.readouterr().out
    assert verify.main([str(work), "--sample", "2", "--base", base]) == 0
    out = capsys.readouterr().out
    assert "byte for byte as" in out and "2 identical" in out
    # an edit that changes what the stage computes: both checks catch it, and the checkout is put back
    (work / "step.py").write_text(STEP.replace("str(sum(", "str(1 + sum(") + "\n")
    sh(*commit, "not a refactor", cwd=work)
    assert verify.main([str(work), "--stages", "total", "--base", base]) == 1
    assert "differs          total" in capsys.readouterr().out
    assert verify.main([str(work), "--stages", "total", "--code-changed"]) == 1
    assert (work / "total.txt").read_text() == "6"
    assert subprocess.run(["git", "status", "--porcelain"], cwd=work, capture_output=True, text=True).stdout == ""
    assert "osfl-verify-base" not in subprocess.run(["git", "worktree", "list"], cwd=work, capture_output=True,
                                                     text=True).stdout


TIMED = ("import sys, time, pathlib; pathlib.Path(sys.argv[1]).write_text('42'); "
         "pathlib.Path('runtime').mkdir(exist_ok=True); pathlib.Path('runtime/make.json').write_text("
         "'{\"seconds\": %f}' % time.perf_counter())")


def test_a_chain_whose_outputs_do_not_ship_is_checked_stage_after_stage(tmp_path, capsys):
    """A run whose outputs are not here (not shipped, not in the cache): a re-run that comes out as recorded but for
    its seconds-and-host record leaves its outputs for the next stage, and drops that record (it was not here), so
    the stage that reads them can be checked next."""
    work = tmp_path / "chain"
    work.mkdir()
    (work / "make.py").write_text(TIMED + "\n")
    (work / "step.py").write_text(STEP + "\n")
    (work / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "make": {"cmd": f"{sys.executable} make.py made.txt", "deps": ["make.py"],
                 "outs": ["made.txt", "runtime/make.json"]},
        "use": {"cmd": f"{sys.executable} step.py made.txt used.txt", "deps": ["step.py", "made.txt"],
                "outs": ["used.txt"]},
    }}))
    (work / ".gitignore").write_text("")
    sh("git", "init", "-q", cwd=work)
    sh("dvc", "init", "-q", cwd=work)
    sh("dvc", "config", "core.autostage", "true", cwd=work)
    sh("dvc", "repro", "-q", cwd=work)
    sh("git", "add", "-A", cwd=work)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "runs", cwd=work)
    for name in ("made.txt", "runtime/make.json", "used.txt"):  # as on a fresh clone: nothing of the run is here
        (work / name).unlink()
    subprocess.run(["rm", "-rf", str(work / ".dvc" / "cache")], check=True)
    assert verify.main([str(work), "--sample", "2"]) == 0
    out = capsys.readouterr().out
    assert "identical        make" in out and "differ only in seconds and host" in out
    assert "identical        use" in out and "2 identical" in out
    assert (work / "made.txt").read_text() == "42" and (work / "used.txt").read_text() == "42"
    assert not (work / "runtime" / "make.json").exists()  # not as recorded, and not here before: dropped
    # a seconds-and-host record that WAS here is put back with the rest, so the workspace keeps what it had
    sh("dvc", "repro", "-q", "-f", "make", cwd=work)
    before = (work / "runtime" / "make.json").read_text()
    sh("git", "reset", "-q", "--hard", cwd=work)  # the record stays as committed; the new run is in the workspace
    assert verify.main([str(work), "--sample", "1", "--stages", "make"]) == 0
    assert (work / "runtime" / "make.json").read_text() == before
