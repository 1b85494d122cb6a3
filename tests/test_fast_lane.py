"""``make test-fast`` (``pytest -m "not slow"``) builds no smoke pipeline: every test that needs one is ``slow``,
whether its file marks it or not (tests/conftest.py, ``pytest_collection_modifyitems``)."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT, smoke_built


def test_a_repo_fixture_anywhere_in_a_test_s_closure_makes_it_slow():
    assert smoke_built(["tmp_path", "fedmho_repo"]) and smoke_built(["ofeded_farmed", "ofeded_repo"])
    assert not smoke_built(["tmp_path", "repo_root", "capsys"])


def test_the_fast_lane_collects_no_test_that_builds_a_smoke_pipeline():
    files = ["tests/test_fedmho_pipeline.py", "tests/test_ofeded_pipeline.py", "tests/test_hfldd_pipeline.py"]
    run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "-o", "addopts=", "-m", "not slow", *files],
                         cwd=ROOT, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "OSFL_SUITE_TIMES"})  # not this run's timings
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    collected = [line for line in run.stdout.splitlines() if line.startswith("tests/") and "::" in line]
    assert any("test_fedmho_pipeline.py::test_table4_shows_mean_and_spread_over_seeds" in c for c in collected)
    built = ("smoke_pipeline", "seconds_and_host", "render_from_copies", "sweep_artifacts", "column_depends")
    assert not [c for c in collected if any(b in c for b in built)], collected
