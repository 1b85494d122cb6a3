"""F-DAFL (DAFL's generator losses against the client ensemble, OFedED's baseline): the method end to end on the tiny
context of test_server_methods, its determinism, the penultimate-feature capture and each loss term on hand-made
inputs."""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from osfl.errors import ConfigError
from osfl.methods import METHODS
from osfl.methods.fdafl import (PenultimateEnsemble, activation_term, dafl_generator_loss, information_entropy_loss,
                                one_hot_loss, weighted_mean)
from test_server_methods import SHAPE, make_ctx

TINY = {"g_steps": 20, "nz": 16}  # smoke: 20 x 0.1 = 2 generator steps per epoch; batches 128 x 0.0625 = 8


def run_fdafl(ctx, **params):
    return METHODS.get("fdafl")(**{**TINY, **params}).run(ctx)


class Mlp(nn.Module):
    """A stand-in client whose head is registered BEFORE the hidden layer, so the last-applied nn.Linear (the head)
    is not the last-registered one."""

    def __init__(self, d_in, hidden, num_classes, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.head = nn.Linear(hidden, num_classes)
        self.body = nn.Linear(d_in, hidden)
        with torch.no_grad():
            for lin in (self.head, self.body):
                lin.weight.copy_(torch.randn(lin.weight.shape, generator=g) / math.sqrt(lin.in_features))
                lin.bias.copy_(torch.randn(lin.bias.shape, generator=g) * 0.1)

    def features(self, x):
        return torch.relu(self.body(x.flatten(1)))

    def forward(self, x):
        return self.head(self.features(x))


def test_fdafl_runs_and_records_its_curve(tmp_path):
    ctx = make_ctx(tmp_path)
    method = METHODS.get("fdafl")(**TINY)
    res = method.run(ctx)
    assert res.kind == "classifier" and not res.model.training
    assert [c["epoch"] for c in res.curve] == [0, 1, 2]  # smoke: 200 epochs x 0.01
    assert res.curve[-1]["test_acc"] == pytest.approx(ctx.evaluate(res.model))
    assert res.curve[0] == {"epoch": 0, "test_acc": pytest.approx(ctx.evaluate(ctx.make_global()))}
    for c in res.curve[1:]:
        assert all(math.isfinite(c[k]) for k in ("gen_loss", "loss_oh", "loss_act", "loss_ie"))
        assert c["gen_loss"] == pytest.approx(c["loss_oh"] + 0.1 * c["loss_act"] + 5.0 * c["loss_ie"], rel=1e-5)
        assert -math.log(10) - 1e-5 <= c["loss_ie"] <= 0.0 and c["loss_act"] <= 0.0
    resolved = method.resolved(ctx.profile)
    in_force = tuple(resolved[k] for k in ("epochs", "g_steps", "synthesis_batch", "kd_batch", "ngf"))
    assert in_force == (2, 2, 8, 8, 16)
    assert res.choices["activation"].startswith("input of each client's last nn.Linear, element_mean")


def test_fdafl_same_seed_gives_the_same_student(tmp_path):
    a = run_fdafl(make_ctx(tmp_path / "a"), epochs=100).model.state_dict()  # smoke: 1 epoch
    b = run_fdafl(make_ctx(tmp_path / "b"), epochs=100).model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    c = run_fdafl(make_ctx(tmp_path / "c"), epochs=100, act=0.5).model.state_dict()  # the loss reaches the student
    assert any(not torch.equal(a[k], c[k]) for k in a if a[k].is_floating_point())


def test_fdafl_unbatched_teacher_gives_the_same_student(tmp_path):
    a = run_fdafl(make_ctx(tmp_path / "a"), epochs=100).model.state_dict()
    ctx = make_ctx(tmp_path / "b")
    ctx.batched_ensemble = False
    b = run_fdafl(ctx, epochs=100).model.state_dict()
    assert all(torch.allclose(a[k].float(), b[k].float(), atol=1e-5) for k in a)


def test_generator_steps_lower_the_dafl_loss(tmp_path):
    ctx = make_ctx(tmp_path)
    clients = [Mlp(math.prod(SHAPE), 32, 10, seed=k).eval() for k in range(3)]
    ctx.client_models = lambda: clients
    one = run_fdafl(ctx, epochs=100, g_steps=10).curve[1]["gen_loss"]  # smoke: 1 step = the first step's loss
    many = run_fdafl(ctx, epochs=100, g_steps=300).curve[1]["gen_loss"]  # 30 steps from the same generator and z
    assert many < one - 0.05, (one, many)


def test_model_without_linear_fails_on_the_act_key_unless_act_is_off(tmp_path):
    ctx = make_ctx(tmp_path)
    g = torch.Generator().manual_seed(0)
    convs = []
    for _ in range(3):
        m = nn.Sequential(nn.Conv2d(1, 10, 28), nn.Flatten())
        with torch.no_grad():
            m[0].weight.copy_(torch.randn(m[0].weight.shape, generator=g) * 0.05)
        convs.append(m.eval())
    ctx.client_models = lambda: convs
    with pytest.raises(ConfigError, match=r"^server\.fdafl\.act: .*no nn\.Linear"):
        run_fdafl(ctx)
    res = run_fdafl(ctx, act=0.0, epochs=100)
    assert len(res.curve) == 2 and res.choices["activation"] == "off (act = 0)"
    assert res.curve[1]["loss_act"] == 0.0


def test_penultimate_features_are_the_input_of_the_last_applied_linear():
    x = torch.rand(5, 1, 4, 4, generator=torch.Generator().manual_seed(3))
    models = [Mlp(16, 6, 3, seed=k).eval() for k in range(2)] + [Mlp(16, 7, 3, seed=9).eval()]  # 2 groups
    for reduction in ("element_mean", "sample_l1"):
        want_act = torch.stack([
            m.features(x).abs().mean() if reduction == "element_mean" else m.features(x).abs().sum(1).mean()
            for m in models])
        want_logits = torch.stack([m(x) for m in models])
        for batched in (True, False):
            logits, act = PenultimateEnsemble(models, batched=batched, reduction=reduction)(x)
            assert torch.allclose(logits, want_logits, atol=1e-6)
            assert torch.allclose(act, want_act, atol=1e-6), (reduction, batched)
    ens = PenultimateEnsemble(models)
    assert len(ens._groups) == 2 and len(ens) == 3
    # gradients reach the input, never the models' parameters
    xg = x.clone().requires_grad_(True)
    _, act = ens(xg)
    act.sum().backward()
    assert xg.grad is not None and float(xg.grad.abs().sum()) > 0
    assert all(p.grad is None for m in models for p in m.parameters())
    with pytest.raises(ValueError, match="no nn.Linear"):
        PenultimateEnsemble([nn.Sequential(nn.Conv2d(1, 3, 4), nn.Flatten())])


def test_penultimate_ensemble_matches_the_teacher_on_cnn_clients(tmp_path):
    ctx = make_ctx(tmp_path)
    models = ctx.client_models()
    x = torch.rand(4, *SHAPE, generator=torch.Generator().manual_seed(0))
    logits, act = PenultimateEnsemble(models)(x)
    assert torch.allclose(logits, ctx.teacher(models)(x), atol=1e-5)
    feats = [m.features(x).flatten(1) for m in models]  # cnn2: features -> flatten -> classifier (Linear)
    assert torch.allclose(act, torch.stack([f.abs().mean() for f in feats]), atol=1e-6)


def test_activation_term_on_a_hand_made_batch():
    f = torch.tensor([[1.0, -2.0, 0.0], [3.0, 0.0, -4.0]])
    assert float(activation_term(f)) == pytest.approx(10.0 / 6.0)  # mean |f| over every element
    assert float(activation_term(f, "sample_l1")) == pytest.approx(5.0)  # (3 + 7) / 2
    assert float(activation_term(f.view(2, 3, 1, 1))) == pytest.approx(10.0 / 6.0)
    with pytest.raises(ValueError):
        activation_term(f, "sum")
    assert float(weighted_mean(torch.tensor([1.0, 3.0]), None)) == pytest.approx(2.0)
    assert float(weighted_mean(torch.tensor([1.0, 3.0]), torch.tensor([3.0, 1.0]))) == pytest.approx(1.5)


def test_information_entropy_term_is_minimal_for_an_even_batch():
    C = 10
    even = 40.0 * torch.eye(C)  # each sample sure of a different class: the batch mean is (almost) uniform
    assert float(information_entropy_loss(even)) == pytest.approx(-math.log(C), abs=1e-4)
    assert float(information_entropy_loss(even, "10")) == pytest.approx(-math.log10(C), abs=1e-4)
    assert float(information_entropy_loss(torch.zeros(3, C))) == pytest.approx(-math.log(C), abs=1e-6)
    one_class = torch.zeros(4, C)
    one_class[:, 2] = 200.0  # every sample sure of class 2: other classes get probability exactly 0
    assert float(information_entropy_loss(one_class)) == pytest.approx(0.0, abs=1e-6)
    z = one_class.clone().requires_grad_(True)
    information_entropy_loss(z).backward()
    assert torch.isfinite(z.grad).all()
    g = torch.Generator().manual_seed(0)
    r = torch.randn(6, C, generator=g)
    p = torch.softmax(r, 1).mean(0)
    assert float(information_entropy_loss(r)) == pytest.approx(float((p * p.log()).sum()), rel=1e-6)
    assert float(information_entropy_loss(r)) > -math.log(C)


def test_one_hot_term_and_the_weighted_sum():
    t = torch.tensor([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0]])
    want = -(torch.log_softmax(t, 1)[0, 0] + torch.log_softmax(t, 1)[1, 1]) / 2
    assert float(one_hot_loss(t)) == pytest.approx(float(want), rel=1e-6)
    assert float(one_hot_loss(t)) == pytest.approx(float(F.cross_entropy(t, torch.tensor([0, 1]))), rel=1e-6)
    p = {**METHODS.get("fdafl").defaults}
    act = torch.tensor(0.7)
    total, terms = dafl_generator_loss(t, act, p)
    assert terms["loss_act"] == pytest.approx(-0.7)
    assert terms["loss_ie"] == pytest.approx(float(information_entropy_loss(t)), rel=1e-6)
    assert float(total) == pytest.approx(terms["loss_oh"] + 0.1 * terms["loss_act"] + 5.0 * terms["loss_ie"],
                                         rel=1e-6)
    total2, _ = dafl_generator_loss(t, act, {**p, "oh": 0.0, "act": 2.0, "ie": 0.0, "ie_log": "10"})
    assert float(total2) == pytest.approx(-1.4)


def test_defaults_are_dafl_weights_and_coboosting_settings():
    d = METHODS.get("fdafl").defaults
    assert (d["oh"], d["act"], d["ie"]) == (1.0, 0.1, 5.0)
    assert (d["epochs"], d["g_steps"], d["lr_g"], d["synthesis_batch"], d["nz"], d["ngf"]) == (200, 30, 1e-3, 128,
                                                                                                256, 64)
    assert (d["kd_T"], d["lr"], d["momentum"], d["weight_decay"], d["kd_batch"]) == (4.0, 0.01, 0.9, 1e-4, 128)


@pytest.mark.parametrize("params, key", [
    ({"g_steps": 0}, "g_steps"), ({"lr_g": 0.0}, "lr_g"), ({"act": -1.0}, "act"), ({"ie": "high"}, "ie"),
    ({"act_reduction": "sum"}, "act_reduction"), ({"ie_log": "2"}, "ie_log"), ({"weighting": "size"}, "weighting"),
    ({"epochs": 2.5}, "epochs"), ({"cosine": 1}, "cosine"), ({"alpha": 0.1}, "alpha"),
])
def test_bad_parameters_name_their_key(params, key):
    with pytest.raises(ConfigError, match=rf"^server\.fdafl\.{key}:") as e:
        METHODS.get("fdafl")(**params)
    assert "\n" not in str(e.value)
