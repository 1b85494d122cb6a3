"""The multi-round protocol (FedHydra Tables 5, 8, 11-18; osfl.protocols.multi_round) on the embedded digits
data at profile smoke: clients restart from the broadcast global model, runs are deterministic, the protocol's
limits fail early with one line, and the `rounds` stage writes its json, csv and model."""
import copy
import csv
import json
import os
from pathlib import Path

import pytest
import torch
import yaml

from osfl.clients.cohort import initial_states
from osfl.config import ExperimentPaths, get_profile
from osfl.runconfig import validate
from osfl.errors import ConfigError
from osfl.protocols.multi_round import RoundsConfig, read_rounds
from osfl.stages import rounds as rounds_stage

SHAPE = (1, 28, 28)
REPO_PARAMS = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text())


def smoke_params(**extra) -> dict:
    params = copy.deepcopy(REPO_PARAMS)
    params.update(profile="smoke", dataset="digits", clients=5, model="auto", client_models=[])
    params["runtime"] = {**(params.get("runtime") or {}), "batched_clients": False}
    params["server"] = {**(params.get("server") or {}), "dense": {"g_steps": 2, "nz": 16}}
    params.update(extra)
    return params


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    """A folder with params.yaml, the prepared digits data and the partition (the prepare/partition stages)."""
    from osfl.stages import partition, prepare

    folder = tmp_path_factory.mktemp("rounds")
    (folder / "params.yaml").write_text(yaml.safe_dump(smoke_params()))
    old = os.getcwd()
    os.chdir(folder)
    try:
        prepare.main(["--no-progress"])
        partition.main(["--no-progress"])
    finally:
        os.chdir(old)
    return folder


def run(params, T=2, local_epochs=50, **hooks):
    cfg = validate(params)
    rounds = read_rounds({"T": T, "local_epochs": local_epochs}, cfg.profile)
    return rounds_stage.run(cfg, ExperimentPaths("main", "digits"), hooks.pop("method", "fedavg"), rounds,
                            torch.device("cpu"), progress=False, **hooks)


def states_equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_fedavg_rounds_restart_clients_from_the_global_model(setting, monkeypatch):
    monkeypatch.chdir(setting)
    params = smoke_params()
    starts, globals_ = {}, {}
    res = run(params, T=2,
              on_round_start=lambda t, models: starts.__setitem__(t, [
                  {k: v.clone() for k, v in m.state_dict().items()} for m in models]),
              on_round_end=lambda t, model: globals_.__setitem__(t, {
                  k: v.clone() for k, v in model.state_dict().items()}))
    assert [r["round"] for r in res.records] == [1, 2]
    for r in res.records:
        assert 0.0 <= r["test_acc"] <= 100.0 and len(r["client_accs"]) == 5
        assert r["client_acc_mean"] == pytest.approx(sum(r["client_accs"]) / 5)
        assert not {"local_seconds", "server_seconds", "seconds"} & set(r)  # the host's: kept apart
    assert [s["round"] for s in res.seconds] == [1, 2] and all(s["local"] > 0 <= s["server"] for s in res.seconds)
    # round 1: the one-shot pipeline's shared initial model; round 2: round 1's global model
    shared = initial_states(["cnn2"] * 5, SHAPE, 10, params["seed"])["cnn2"]
    assert all(states_equal(s, shared) for s in starts[1])
    assert all(states_equal(s, globals_[1]) for s in starts[2])
    assert not states_equal(globals_[1], shared) and not states_equal(globals_[2], globals_[1])
    assert states_equal(res.model.state_dict(), globals_[2])
    assert res.protocol["local_epochs_run"] == 1  # E = 50 x 0.01 (smoke), at least 1


def test_runs_are_deterministic(setting, monkeypatch):
    monkeypatch.chdir(setting)
    a = run(smoke_params(), T=2, method="dense")
    b = run(smoke_params(), T=2, method="dense")
    key = [(r["test_acc"], r["client_accs"], r["server_epochs"]) for r in a.records]
    assert key == [(r["test_acc"], r["client_accs"], r["server_epochs"]) for r in b.records]
    assert a.records[0]["server_epochs"] == 2  # DENSE 200 epochs x 0.01, fresh every round
    assert states_equal(a.model.state_dict(), b.model.state_dict())
    assert a.choices["g_steps"] == 1  # the params' 2 x 0.1 (smoke's steps per server epoch), at least 1


def test_feddf_rounds_get_the_auxiliary_data(setting, monkeypatch):
    """The stage hands FedDF's aux-data loader to every round (fmnist: prepared on first use, a stand-in at smoke
    when the data cannot be obtained)."""
    monkeypatch.chdir(setting)
    params = smoke_params()
    params["server"] = {**params["server"], "feddf": {"aux_data": "fmnist", "steps_per_epoch": 2}}
    res = run(params, T=1, method="feddf")
    assert res.records[0]["server_epochs"] == 2 and res.choices["aux_data"] == "fmnist"
    assert (setting / "data" / "aux" / "fmnist" / "meta.json").exists()


@pytest.mark.parametrize("extra,method,match", [
    ({}, "ensemble", r"^methods: ensemble returns kind 'ensemble', not one global classifier, .*; allowed: .*fedavg"),
    ({"client_models": ["cnn2", "lenet5", "cnn2", "lenet5", "cnn2"]}, "fedavg",
     r"^client_models: the multi-round protocol broadcasts the server's cnn2 to every client"),
    ({"client_models": ["lenet5"] * 5}, "fedhydra", r"^client_models: .*got clients \['lenet5'\]"),
])
def test_protocol_limits_fail_before_any_work(tmp_path, monkeypatch, extra, method, match):
    monkeypatch.chdir(tmp_path)  # no data here: a later failure would name `input`
    with pytest.raises(ConfigError, match=match) as e:
        run(smoke_params(**extra), method=method)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("rounds,match", [
    ({"T": 0}, "rounds.T: must be >= 1, got 0"),
    ({"T": 2.5}, "rounds.T: must be an integer, got 2.5"),
    ({"local_epochs": 0}, "rounds.local_epochs: must be >= 1, got 0"),
    ({"local_epochs": "50"}, "rounds.local_epochs: must be an integer"),
    ({"E": 50}, "rounds.E: unknown key; allowed: T, local_epochs"),
    ([5, 50], "rounds: must be a mapping"),
])
def test_bad_rounds_fail_with_one_line(rounds, match):
    with pytest.raises(ConfigError, match=match) as e:
        read_rounds(rounds, get_profile("smoke"))
    assert "\n" not in str(e.value)


def test_rounds_defaults_and_profile_scaling():
    assert read_rounds({}, get_profile("paper")) == RoundsConfig(5, 50, 50)
    assert read_rounds({"T": 3}, get_profile("quick")) == RoundsConfig(3, 50, 5)
    assert read_rounds(None, get_profile("smoke")) == RoundsConfig(5, 50, 1)


def test_stage_writes_json_csv_and_model(setting, monkeypatch, capsys):
    from osfl.evaluation import accuracy
    from osfl.models import build_model
    from osfl.runtime import load_state_dict
    from osfl.stages import rounds

    monkeypatch.chdir(setting)
    rounds.main(["--method", "fedavg", "--tag", "t2", "--set", "rounds.T=2", "--no-progress"])
    doc = json.loads(Path("results/main/rounds/fedavg-t2.json").read_text())
    assert (doc["method"], doc["tag"], doc["T"], doc["local_epochs_run"]) == ("fedavg", "t2", 2, 1)
    assert [r["round"] for r in doc["rounds"]] == [1, 2] and doc["acc_final"] == doc["rounds"][-1]["test_acc"]
    assert doc["choices"] == {"weighting": "samples"} and doc["stand_in_data"] is False
    assert doc["runtime"]["device"] == "cpu"
    with open("results/main/rounds/fedavg-t2.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["round", "test_acc"] and [r[0] for r in rows[1:]] == ["1", "2"]
    assert float(rows[2][1]) == pytest.approx(doc["acc_final"], abs=1e-4)
    # the saved global model gives the recorded final accuracy
    model = build_model("cnn2", SHAPE, 10)
    model.load_state_dict(load_state_dict("models/main/rounds/fedavg-t2/model.pt"))
    import numpy as np

    x = torch.from_numpy(np.load("data/prepared/digits/x_test.npy"))
    y = torch.from_numpy(np.load("data/prepared/digits/y_test.npy")).long()
    assert doc["test_samples"] == len(y)  # digits has 360 test images, under the smoke cap
    assert accuracy(model, x, y) == pytest.approx(doc["acc_final"])
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        rounds.main(["--method", "ensemble", "--no-progress"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: methods: ensemble returns kind 'ensemble'") and "\n" not in err
