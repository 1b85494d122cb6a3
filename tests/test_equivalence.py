"""benchmarks/equivalence.py: the check that a refactor leaves every stage's run configuration as it was."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import yaml

from benchmarks import equivalence
from osfl.config import ExperimentPaths
from osfl.runconfig import validate

ROOT = Path(__file__).resolve().parents[1]


def test_the_loader_before_and_after_the_typed_config_compare_equal_and_a_change_shows():
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    typed = validate(params).replace(paths=ExperimentPaths("main", "digits"))
    settings = {f.name: getattr(typed, f.name) for f in dataclasses.fields(typed) if f.name not in ("params", "paths")}
    before = (params, settings, typed.paths)  # what osfl.stages.common.load_config returned until 2026-11-29
    assert equivalence.configuration(before) == equivalence.configuration(typed)
    assert equivalence.configuration(typed.replace(seed=typed.seed + 1)) != equivalence.configuration(typed)
    changed = {**params, "server": {**params["server"], "dense": {**(params["server"].get("dense") or {}), "adv": 0.7}}}
    assert equivalence.configuration(typed.replace(params=changed)) != equivalence.configuration(typed)


def test_a_stage_command_is_run_until_its_configuration_is_loaded(monkeypatch):
    monkeypatch.chdir(ROOT)
    got = equivalence.resolve_stage(["python", "-m", "osfl.stages.partition", "--params", "params.yaml",
                                     "--set", "seed=3"])
    assert got["settings"]["seed"] == 3 and got["paths"]["name"] == "main"
    bad = equivalence.resolve_stage(["python", "-m", "osfl.stages.partition", "--set", "alpah=1"])
    assert bad["exit"].startswith("2: error: alpah") and "alpha" in bad["exit"]
    assert "not a run stage" in equivalence.resolve_stage(["bash", "-c", "true"])
    assert os.getcwd() == str(ROOT)


def test_a_young_field_at_the_value_of_the_recorded_runs_is_left_out_and_any_other_value_shows():
    """runtime.batched_teachers did not exist when the runs were recorded: at ``true`` (what they computed) the
    configuration compares equal to one without the field; ``false`` or ``auto`` is a change."""
    from osfl.accel import Accel

    typed = validate(yaml.safe_load((ROOT / "params.yaml").read_text()))
    now = equivalence.configuration(typed)
    assert "batched_teachers" not in now["settings"]["runtime"] and now["settings"]["runtime"]["__type__"] == "Accel"
    for other in (False, "auto"):
        moved = typed.replace(runtime=Accel(**{**dataclasses.asdict(typed.runtime), "batched_teachers": other}))
        assert equivalence.configuration(moved) != now
