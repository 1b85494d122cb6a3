"""F-ADI (Adaptive DeepInversion against the client ensemble, OFedED's baseline): the method end to end on the tiny
context of test_server_methods, its determinism, the inversion itself and its loss terms on hand-made inputs."""
import math

import pytest
import torch

from osfl.errors import ConfigError
from osfl.methods import METHODS
from osfl.methods.fadi import competition_loss, invert_batch, jitter_view, js_divergence, total_variation
from test_server_methods import SHAPE, OwnClasses, make_ctx

TINY = {"inv_steps": 20}  # smoke: 20 x 0.1 = 2 inversion steps per epoch; batches 128 x 0.0625 = 8


def run_fadi(ctx, **params):
    return METHODS.get("fadi")(**{**TINY, **params}).run(ctx)


def test_fadi_runs_and_records_its_curve(tmp_path):
    ctx = make_ctx(tmp_path)
    method = METHODS.get("fadi")(**TINY)
    res = method.run(ctx)
    assert res.kind == "classifier" and not res.model.training
    assert [c["epoch"] for c in res.curve] == [0, 1, 2]  # smoke: 200 epochs x 0.01
    assert res.curve[-1]["test_acc"] == pytest.approx(ctx.evaluate(res.model))
    assert res.curve[0] == {"epoch": 0, "test_acc": pytest.approx(ctx.evaluate(ctx.make_global()))}
    assert all(math.isfinite(c["gen_loss"]) and math.isfinite(c["target_ce"]) for c in res.curve[1:])
    resolved = method.resolved(ctx.profile)
    in_force = (resolved["epochs"], resolved["inv_steps"], resolved["synthesis_batch"], resolved["kd_batch"])
    assert in_force == (2, 2, 8, 8)
    assert res.choices["bn_term"].startswith("active")  # cnn2 has BatchNorm


def test_fadi_bn_term_is_a_no_op_without_batchnorm(tmp_path):
    res = run_fadi(make_ctx(tmp_path, arch="cnn3"), epochs=100)  # OFedED's 3-layer CNN: no BatchNorm; 1 epoch
    assert res.choices["bn_term"].startswith("no-op")
    assert [c["epoch"] for c in res.curve] == [0, 1]


def test_fadi_same_seed_gives_the_same_student(tmp_path):
    a = run_fadi(make_ctx(tmp_path / "a")).model.state_dict()
    b = run_fadi(make_ctx(tmp_path / "b")).model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_inversion_lowers_the_teacher_ce_and_keeps_images_in_range(tmp_path):
    ctx = make_ctx(tmp_path)
    # stand-in clients whose logits move with the input (fresh cnn2 clients give near-uniform ensemble outputs)
    owners = ((0, 1, 2), (3, 4, 5), (6, 7, 8, 9))
    teacher = ctx.teacher([OwnClasses(cls, 10, seed=k).eval() for k, cls in enumerate(owners)])
    student = ctx.make_global().eval()
    p = {**METHODS.get("fadi").defaults, "inv_steps": 30, "synthesis_batch": 16}  # every term on (BN: a no-op)
    made = invert_batch(teacher, student, p, input_shape=SHAPE, num_classes=10, device=ctx.device,
                        init_rng=torch.Generator().manual_seed(0), jitter_rng=torch.Generator().manual_seed(1))
    assert len(made.ce) == 30 and made.y.shape == (16,)
    first, last = sum(made.ce[:3]) / 3, sum(made.ce[-3:]) / 3
    assert last < 0.5 * first, (first, last)
    assert made.best_x.shape == (16, *SHAPE) and 0.0 <= float(made.best_x.min()) <= float(made.best_x.max()) <= 1.0
    cyclic = invert_batch(teacher, None, {**p, "inv_steps": 1, "targets": "cyclic"}, input_shape=SHAPE,
                          num_classes=10, device=ctx.device, init_rng=torch.Generator().manual_seed(0),
                          jitter_rng=torch.Generator().manual_seed(1))
    assert cyclic.y.tolist() == [i % 10 for i in range(16)]


def test_total_variation_on_hand_made_images():
    assert float(total_variation(torch.full((2, 3, 5, 5), 0.7))) == 0.0
    x = torch.tensor([[0.0, 1.0], [0.0, 1.0]]).view(1, 1, 2, 2)
    # horizontal differences (-1, -1): sqrt 2; vertical: 0; each diagonal one difference of magnitude 1
    assert float(total_variation(x)) == pytest.approx(math.sqrt(2) + 2.0)


def test_js_divergence_and_competition_term():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(6, 10, generator=g), torch.randn(6, 10, generator=g)
    assert float(js_divergence(a, a)) == pytest.approx(0.0, abs=1e-7)
    assert float(competition_loss(a, a, T=3.0)) == pytest.approx(1.0, abs=1e-7)
    assert float(js_divergence(a, b)) == pytest.approx(float(js_divergence(b, a)), abs=1e-7)
    P, Q = torch.softmax(a / 2, 1), torch.softmax(b / 2, 1)
    M = (P + Q) / 2
    want = (0.5 * (P * (P / M).log()).sum(1) + 0.5 * (Q * (Q / M).log()).sum(1)).mean()
    assert float(js_divergence(a, b, T=2.0)) == pytest.approx(float(want), rel=1e-5)
    one_hot = torch.tensor([[60.0, 0.0], [0.0, 60.0]])
    assert float(js_divergence(one_hot, one_hot.flip(1))) == pytest.approx(math.log(2), abs=1e-6)  # the maximum


def test_jitter_view_is_a_seeded_roll():
    u = torch.arange(2 * 1 * 6 * 6, dtype=torch.float32).view(2, 1, 6, 6)
    assert torch.equal(jitter_view(u, 0, False, torch.Generator().manual_seed(0)), u)
    v = jitter_view(u, 2, False, torch.Generator().manual_seed(3))
    assert torch.equal(v, jitter_view(u, 2, False, torch.Generator().manual_seed(3)))
    assert any(torch.equal(v, torch.roll(u, (dy, dx), (2, 3))) for dy in range(-2, 3) for dx in range(-2, 3))


@pytest.mark.parametrize("params, key", [
    ({"lr_x": 0.0}, "lr_x"), ({"inv_steps": 0}, "inv_steps"), ({"jitter": 1.5}, "jitter"), ({"tv": -1.0}, "tv"),
    ({"targets": "sorted"}, "targets"), ({"flip": "yes"}, "flip"), ({"adi_scale": 1.0}, "adi_scale"),
])
def test_bad_parameters_name_their_key(params, key):
    with pytest.raises(ConfigError, match=rf"^server\.fadi\.{key}:"):
        METHODS.get("fadi")(**params)
