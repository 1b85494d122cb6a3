"""Stage `local_curve` (FedHydra Fig. 8) on the embedded digits at profile smoke: every client and their FedAvg
tested along local training, the FedAvg point is the weighted average of the clients' weights at that epoch."""
import copy
import csv
import json
from pathlib import Path

import pytest
import yaml

from osfl.errors import ConfigError
from osfl.stages.local_curve import curve_settings

REPO_PARAMS = yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text())


@pytest.mark.parametrize("value", [0, -1, 2.5, "x"])
def test_bad_settings_fail_with_the_key(value):
    with pytest.raises(ConfigError, match="localcurve.every"):
        curve_settings({"epochs": 400, "every": value})


def test_stage_writes_the_curve(tmp_path, monkeypatch):
    from osfl.stages import local_curve, partition, prepare

    params = copy.deepcopy(REPO_PARAMS)
    # smoke scales epochs x0.01: 400 -> 4 local epochs, a point every 2 (paper: every 20 of 400)
    params.update(profile="smoke", dataset="digits", clients=3, model="auto",
                  localcurve={"epochs": 400, "every": 200})
    params["runtime"] = {**params["runtime"], "batched_clients": False}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    prepare.main(["--no-progress"])
    partition.main(["--no-progress"])
    local_curve.main(["--no-progress"])
    with open("results/main/local_curve.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(float(r["epoch"])) for r in rows] == [2, 4]
    assert set(rows[0]) == {"epoch", "fedavg", "client_1", "client_2", "client_3"}
    assert all(0.0 <= float(r["fedavg"]) <= 100.0 for r in rows)
    meta = json.loads(Path("results/main/local_curve.json").read_text())
    assert meta["epochs_run"] == 4 and meta["every_run"] == 2 and meta["weighting"] == "samples"
    # the last point is the one-shot pipeline's FedAvg after the same 4 local epochs (same seeds, same clients)
    from osfl.stages import evaluate, server, train_clients

    train_clients.main(["--no-progress", "--set", "local.epochs=400"])
    server.main(["--no-progress", "--method", "fedavg"])
    evaluate.main(["--no-progress", "--method", "fedavg"])
    acc = json.loads(Path("results/main/runs/fedavg.json").read_text())["acc_final"]
    assert float(rows[-1]["fedavg"]) == pytest.approx(acc, abs=1e-6)
    clients = json.loads(Path("results/main/clients.json").read_text())["per_client"]
    assert [float(rows[-1][f"client_{c['client'] + 1}"]) for c in clients] == pytest.approx(
        [c["local_test_acc"] for c in clients], abs=1e-6)
