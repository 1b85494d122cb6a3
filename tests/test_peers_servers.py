"""The server-side peer harness's own logic (benchmarks/peers/servers.py), without the official checkouts: variants,
merging records of the same command on other seeds, the curve read back from dvclive, the normalised view."""
from __future__ import annotations

import pytest
import torch

from benchmarks.peers import servers


def record(seeds, finals, settings=None):
    arm = {"final": {"values": finals}, "best": {"values": finals}, "server_seconds": {"values": [1.0] * len(seeds)}}
    return {"seeds": seeds, "settings": settings or {"epochs": 3}, "arms": {"ours": arm, "official": arm},
            "curves": {"ours": [[1.0]] * len(seeds), "official": [[2.0]] * len(seeds)},
            "clients": {"client_acc_mean": {"values": [50.0] * len(seeds)}},
            "rerun": "python -m benchmarks.peers.servers --peer DENSE --alpha 0.5 --seeds 0 1 --epochs 3 --g-steps 2"}


def test_a_variant_is_an_arm_of_ours_with_server_settings():
    assert servers.parse_variant("ods4:odseta=4.0", "coboost") == ("ours_ods4", ("server.coboost.odseta=4.0",))
    assert servers.parse_variant("x:T=1,lr=0.01", "dense")[1] == ("server.dense.T=1", "server.dense.lr=0.01")
    with pytest.raises(SystemExit):
        servers.parse_variant("ods4", "coboost")


def test_merging_adds_seeds_and_refuses_other_settings_or_the_same_seeds():
    out = servers.merged(record([0, 1], [70.0, 72.0]), record([2], [74.0]))
    assert out["seeds"] == [0, 1, 2]
    assert out["arms"]["ours"]["final"]["values"] == [70.0, 72.0, 74.0] and out["arms"]["ours"]["final"]["n"] == 3
    assert len(out["curves"]["official"]) == 3 and out["clients"]["client_acc_mean"]["n"] == 3
    assert "--seeds 0 1 2 --epochs 3 --g-steps 2" in out["rerun"]
    with pytest.raises(SystemExit):
        servers.merged(record([0, 1], [70.0, 72.0]), record([1], [74.0]))
    with pytest.raises(SystemExit):
        servers.merged(record([0, 1], [70.0, 72.0]), record([2], [74.0], {"epochs": 4}))


def test_the_curve_is_read_from_the_live_folder_without_epoch_0(tmp_path):
    tsv = tmp_path / "plots" / "metrics" / "test_acc.tsv"
    tsv.parent.mkdir(parents=True)
    tsv.write_text("step\ttest_acc\n0\t9.95\n2\t30.5\n1\t21.24\n")
    assert servers.live_curve(tmp_path) == [21.24, 30.5]


def test_the_normalised_view_is_the_same_function_on_normalised_inputs():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3))
    x = torch.rand(5, 1, 4, 4)
    view = servers.NormalisedView(model)
    assert torch.allclose(view((x - 0.5) / 0.5), model(x), atol=1e-6)
    logits, feats = view((x - 0.5) / 0.5, return_features=True)
    assert torch.equal(logits, feats)
    with pytest.raises(RuntimeError):  # WEnsemble(images, labels): the official code's try/except falls back
        view(x, torch.zeros(5))
