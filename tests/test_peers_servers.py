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
    assert servers.parse_variant("loop:runtime.batched_teachers=false,bn=0", "dense")[1] == (
        "runtime.batched_teachers=false", "server.dense.bn=0")
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


def test_the_same_work_timer_takes_out_ours_extra_tests_at_no_more_than_a_typical_one():
    """F35: the official loops test once per epoch; ours also before training. The extra call is taken out, but at
    no more than the median epoch test (the first call also pays the process's warm-up)."""
    assert servers.epoch_tests_seconds(100.0, [2.8, 2.0, 1.9, 2.1], 3) == 98.0
    assert servers.epoch_tests_seconds(100.0, [1.5, 2.0, 1.9, 2.1], 3) == 98.5
    assert servers.epoch_tests_seconds(100.0, [2.0, 2.0], 2) == 100.0  # no extra test: nothing out
    with pytest.raises(RuntimeError, match="2 evaluations timed for 3 epochs"):
        servers.epoch_tests_seconds(100.0, [2.0, 2.0], 3)


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


class _ReleaseTeacher(torch.nn.Module):
    """A stand-in for the release's Ensemble_E and Ensemble_A (helpers/synthesizers.py): the constructor and the
    attributes the shims read, without the official checkout."""

    def __init__(self, model_list, label_logit_weights, model_logit_weights):
        super().__init__()
        self.models = model_list
        self.label_logit_weights = label_logit_weights

    def forward(self, x):  # Ensemble_A.forward: the mean of the clients' logits
        return sum(m(x) for m in self.models) / len(self.models)


def test_the_fedhydra_release_shims_weight_each_client_by_its_u_for_the_label():
    """--loop column: P_i = sum_k u[k][y_i] P_k(x_i), with the generator's gradient; --average: the plain mean."""
    from types import SimpleNamespace

    from benchmarks.peers import fedhydra_release as fr

    synth = SimpleNamespace(Ensemble_E=_ReleaseTeacher, Ensemble_A=_ReleaseTeacher)
    g = torch.Generator().manual_seed(0)
    models = [torch.nn.Linear(4, 3) for _ in range(2)]
    u = [[0.5, 1.0, 2.0], [3.0, 0.0, 1.0]]  # clients x classes
    x = torch.randn(5, 4, generator=g, requires_grad=True)
    y = torch.tensor([0, 1, 2, 2, 0])
    teacher = fr.column_teacher(synth)(models, u, None)
    teacher.set_batch_targets(y)
    out = teacher(x)
    for i in range(5):
        want = sum(u[k][int(y[i])] * models[k](x[i:i + 1])[0] for k in range(2))
        assert torch.allclose(out[i], want)
    out.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0  # the release's numpy forward had no graph
    avg = fr.average_teacher(synth)(models, u, None)
    avg.set_batch_targets(y)
    assert torch.allclose(avg(x), (models[0](x) + models[1](x)) / 2)


def test_the_fedhydra_row_refuses_another_records_settings_before_running_anything(tmp_path, monkeypatch):
    """--add / --merge onto a record of other settings stop at once (not after an hour of runs); --merge of seeds the
    record has does too. No official checkout is needed for that (it once failed on a machine without one)."""
    import argparse
    import json

    from benchmarks.peers import fedhydra_release as fr

    monkeypatch.setenv("OSFL_PEERS", str(tmp_path / "no-checkouts-here"))

    args = argparse.Namespace(alpha=0.5, epochs=20, g_steps=10, ngf=16, batch=64, threads=1, seeds=[0],
                              average=False, ours_ae=False, variant=[], add=True, merge=False,
                              scratch=tmp_path / "no-clients-here")
    out = tmp_path / "row.json"
    record = fr.row_record(args, {"official": [], "ours": []}, [0])
    assert record["official_checked_out"] == "not checked out"
    out.write_text(json.dumps({**record, "settings": {**record["settings"], "threads": 2}}))
    with pytest.raises(SystemExit, match="settings differ"):
        fr.column_row(args, out)
    out.write_text(json.dumps(record))
    args.add, args.merge = False, True
    with pytest.raises(SystemExit, match="seeds \\[0\\] are in the record already"):
        fr.column_row(args, out)
