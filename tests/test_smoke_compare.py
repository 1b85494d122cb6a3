"""osfl.provenance.smoke (check 3 of recording a refactor): the smoke repositories' output folders of two runs,
compared file by file with seconds and host set aside."""
import json

from osfl.provenance import smoke, verify


def _repo(base, acc, seconds, extra=False):
    proj = base / "ofeded0" / "repo" / "papers" / "p"
    (proj / "results" / "r" / "runtime").mkdir(parents=True)
    (proj / "dvc.yaml").write_text("stages: {}\n")
    (proj / "results" / "r" / "run.json").write_text(json.dumps({"acc_final": acc, "server_seconds": seconds}))
    (proj / "results" / "r" / "runtime" / "x.json").write_text(json.dumps({"seconds": seconds}))
    (proj / "models").mkdir()
    (proj / "models" / "m.pt").write_bytes(b"\x00\x01")
    if extra:
        (base / "ofeded0" / "repo" / "models").mkdir(parents=True)


def test_same_outputs_but_for_seconds_pass_and_any_other_change_fails(tmp_path):
    _repo(tmp_path / "old", 81.25, 3.0)
    _repo(tmp_path / "new", 81.25, 9.5)
    rows = smoke.compare(tmp_path / "old", tmp_path / "new")
    assert [(n, v) for n, v, _ in rows] == [("ofeded0/repo/papers/p/models", "identical"),
                                           ("ofeded0/repo/papers/p/results", "timings")]
    _repo(tmp_path / "changed", 81.5, 3.0, extra=True)
    rows = {n: v for n, v, _ in smoke.compare(tmp_path / "old", tmp_path / "changed")}
    assert rows == {"ofeded0/repo/models": "one side only", "ofeded0/repo/papers/p/models": "identical",
                    "ofeded0/repo/papers/p/results": "differs"}


def test_the_base_worktree_gets_the_checkouts_data(tmp_path):
    """A root data output (data/mnist, found beside the code) is linked into the worktree when it lacks it, so both
    sides run on the same data; one the worktree has already, or the checkout lacks, is left alone."""
    root, wt = tmp_path / "root", tmp_path / "wt"
    for d in (root / "data", wt / "data"):
        d.mkdir(parents=True)
    (root / "data" / "mnist.dvc").write_text("outs:\n- path: mnist\n")
    (root / "data" / "absent.dvc").write_text("outs:\n- path: absent\n")
    (root / "data" / "mnist").mkdir()
    (root / "data" / "mnist" / "train.gz").write_bytes(b"x")
    assert verify.link_data(root, wt) == [wt / "data" / "mnist"]
    assert (wt / "data" / "mnist" / "train.gz").read_bytes() == b"x" and not (wt / "data" / "absent").exists()
    assert verify.link_data(root, wt) == []


def test_a_failed_side_shows_its_failures_not_the_time_breakdown():
    log = "\n".join(["....F", "=" * 20 + " FAILURES " + "=" * 20, "___ test_x ___", "E   assert 1 == 2",
                     "-" * 10 + " time breakdown " + "-" * 10, "per stage script (count, start-up+imports s, work s):",
                     "=" * 10 + " short test summary info " + "=" * 10, "FAILED tests/t.py::test_x - assert 1 == 2",
                     "1 failed in 3.0s"])
    excerpt = smoke.failure_excerpt(log)
    assert "E   assert 1 == 2" in excerpt and excerpt.endswith("1 failed in 3.0s")
    assert smoke.failure_excerpt(log, limit=30).count("...") == 1
    assert smoke.failure_excerpt("ERROR: file or directory not found: x") == "ERROR: file or directory not found: x"
