"""The suite's time breakdown (tests/conftest.py): budgets per paper, the DVC split, the warnings."""
from __future__ import annotations

from conftest import BUDGET_S, SUITE_BUDGET_S, paper_of, time_breakdown


def test_files_are_charged_to_their_paper():
    assert paper_of("tests/test_fedhydra_pipeline.py::test_x") == "fedhydra"
    assert paper_of("tests/test_fedmho_pipeline.py::test_x") == "fedmho"  # a new paper's files by name
    assert paper_of("tests/test_partition.py::test_x") == "core"


def test_over_budget_warns_and_splits_dvc_time():
    durations = {"tests/test_fedhydra_pipeline.py::a": BUDGET_S["fedhydra"] + 1.0, "tests/test_data.py::b": 1.0}
    commands = [{"cmd": "dvc repro", "test": "t", "wall": 10.0,
                 "stages": [{"stage": "server", "method": "dense", "startup_s": 2.0, "work_s": 5.0}]}]
    lines, warnings = time_breakdown(durations, commands, wall=SUITE_BUDGET_S + 1.0)
    assert any(w.startswith("WARNING: fedhydra tests took") for w in warnings)
    assert any(w.startswith("WARNING: the suite took") for w in warnings)
    assert not any("core" in w for w in warnings)
    assert any("start-up    2.0  work    5.0  dvc    3.0" in line for line in lines), lines
    assert any(line.strip().startswith("server@dense") for line in lines)
    assert not any("torch kernels" in w for w in warnings)
    _, other = time_breakdown(durations, commands, wall=SUITE_BUDGET_S + 1.0, kernels="DEFAULT")
    assert other[-1].startswith("WARNING: this CPU's torch kernels are DEFAULT")
    _, none = time_breakdown({"tests/test_data.py::b": 1.0}, [], wall=1.0, kernels="DEFAULT")
    assert none == []


def test_the_run_s_temporary_folders_are_its_own_and_old_ones_go_in_the_background(tmp_path, request):
    """tests/conftest.py: a run without --basetemp works under a fresh osfl-pytest-* folder (pytest then has no
    numbered folders of earlier runs to delete in the run's time); folders of ours older than a day are stale and a
    detached rm -rf deletes them."""
    import os
    import time

    from conftest import OWN_BASETEMP, STALE_TMP_S, TMP_PREFIX, remove_in_background, stale_tmp_folders

    own = request.config.stash.get(OWN_BASETEMP, None)
    if own is not None:  # this run made its own base folder: every tmp_path lies in it
        assert own.name.startswith(TMP_PREFIX) and tmp_path.is_relative_to(own.resolve())
    now = time.time()
    old, fresh, other = tmp_path / f"{TMP_PREFIX}old", tmp_path / f"{TMP_PREFIX}fresh", tmp_path / "pytest-7"
    for d in (old, fresh, other):
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "f").write_text("x")
    for d in (old, other):
        os.utime(d, (now - STALE_TMP_S - 60, now - STALE_TMP_S - 60))
    assert stale_tmp_folders(tmp_path, now) == [old]
    remove_in_background([old])
    deadline = time.time() + 10
    while old.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert not old.exists() and fresh.exists() and other.exists()
