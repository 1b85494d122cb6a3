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
