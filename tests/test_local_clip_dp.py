"""Client-side gradient-norm clipping (``local.grad_clip``, OFedED SPEC §2.1 [CB]) and DP-SGD local training
(``local.dp_sigma``/``dp_clip``/``dp_delta``, SPEC §2.8 [P]) on tiny generated data."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from osfl.clients.batched import _clip_per_client_, train_classifiers_batched, train_clients
from osfl.clients.dp import dp_epsilon, dp_record, dp_sgd_grads
from osfl.clients.training import train_classifier
from osfl.config import LocalTraining
from osfl.errors import ConfigError
from osfl.models import build_model

HP = dict(batch_size=16, lr=0.05, momentum=0.9, weight_decay=1e-3, augment="none")


def clients_data(sizes, shape=(1, 28, 28), seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, 256, (n, *shape), dtype=torch.uint8, generator=g),
             torch.randint(0, 10, (n,), generator=g)) for n in sizes]


def gens(n, seed=0):
    return [torch.Generator().manual_seed(seed + k) for k in range(n)]


def states_equal(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def max_diff(a, b) -> float:
    return max((x.double() - y.double()).abs().max().item()
               for x, y in zip(a.state_dict().values(), b.state_dict().values()))


class TinyMLP(torch.nn.Module):
    """No BatchNorm: per-sample gradients are defined (DP-SGD)."""

    def __init__(self, shape=(1, 8, 8), classes=10):
        super().__init__()
        d = shape[0] * shape[1] * shape[2]
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(d, 12), torch.nn.ReLU(),
                                       torch.nn.Linear(12, classes))

    def forward(self, x):
        return self.net(x)


def tiny(seed=0):
    torch.manual_seed(seed)
    return TinyMLP()


# ------------------------------------------------------------------ grad_clip


def test_per_client_clip_equals_clip_grad_norm_on_each_client():
    g = torch.Generator().manual_seed(0)
    stacked = {"w": torch.randn(3, 4, 5, generator=g), "b": torch.randn(3, 5, generator=g) * 10}
    stacked["w"][1] *= 1e-3  # client 1 tiny: below max_norm, left as is
    stacked["b"][1] *= 1e-3
    expected = []
    for k in range(3):
        ps = [torch.nn.Parameter(torch.zeros(4, 5)), torch.nn.Parameter(torch.zeros(5))]
        ps[0].grad, ps[1].grad = stacked["w"][k].clone(), stacked["b"][k].clone()
        torch.nn.utils.clip_grad_norm_(ps, 2.0)
        expected.append((ps[0].grad, ps[1].grad))
    before = {n: t.clone() for n, t in stacked.items()}
    _clip_per_client_(stacked, 2.0)
    for k in range(3):
        assert torch.allclose(stacked["w"][k], expected[k][0], atol=1e-6)
        assert torch.allclose(stacked["b"][k], expected[k][1], atol=1e-6)
    assert torch.equal(stacked["w"][1], before["w"][1]) and not torch.equal(stacked["w"][0], before["w"][0])


def test_grad_clip_batched_equals_one_by_one_and_really_clips():
    """cnn2 (BatchNorm) clients of unequal sizes (a partial last batch, one smaller than a batch): the batched path
    with grad_clip equals train_classifier with grad_clip, which differs from the unclipped run."""
    sizes = (40, 33, 12)
    data = clients_data(sizes)
    torch.manual_seed(3)
    init = build_model("cnn2", (1, 28, 28), 10).state_dict()

    def models():
        out = []
        for _ in sizes:
            m = build_model("cnn2", (1, 28, 28), 10)
            m.load_state_dict(init)
            out.append(m)
        return out

    clip = 0.05
    seq, plain = models(), models()
    for m, p, (x, y), g, g2 in zip(seq, plain, data, gens(3), gens(3)):
        train_classifier(m, x, y, epochs=2, gen=g, grad_clip=clip, **HP)
        train_classifier(p, x, y, epochs=2, gen=g2, **HP)
    bat = models()
    res = train_classifiers_batched(bat, data, gens(3), epochs=2, grad_clip=clip, **HP)
    also = models()
    train_clients(also, data, gens(3), batched=True, epochs=2, grad_clip=clip, **HP)
    for k in range(len(sizes)):
        assert max_diff(seq[k], bat[k]) < 1e-4, k
        assert max_diff(seq[k], also[k]) < 1e-4, k
        assert max_diff(seq[k], plain[k]) > 1e-3, k  # clipping happened
    assert all(r.steps > 0 for r in res)


def test_grad_clip_large_changes_nothing():
    x, y = clients_data((30,))[0]
    a, b = build_model("cnn2", (1, 28, 28), 10), build_model("cnn2", (1, 28, 28), 10)
    b.load_state_dict(a.state_dict())
    train_classifier(a, x, y, epochs=1, gen=torch.Generator().manual_seed(0), **HP)
    train_classifier(b, x, y, epochs=1, gen=torch.Generator().manual_seed(0), grad_clip=1e9, **HP)
    assert max_diff(a, b) < 1e-6


# ------------------------------------------------------------------ DP-SGD


def test_dp_sgd_grads_equals_a_loop_of_clipped_per_sample_gradients():
    model = tiny()
    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(6, 1, 8, 8, generator=g), torch.randint(0, 10, (6,), generator=g)
    clip = 0.3
    total, clipped = None, 0
    for i in range(len(y)):
        loss = F.cross_entropy(model(x[i:i + 1]), y[i:i + 1])
        gs = torch.autograd.grad(loss, list(model.parameters()))
        norm = torch.sqrt(sum((t ** 2).sum() for t in gs))
        clipped += int(norm > clip)
        coef = min(1.0, clip / (norm.item() + 1e-6))
        gs = [t * coef for t in gs]
        total = gs if total is None else [a + b for a, b in zip(total, gs)]
    expected = [t / len(y) for t in total]
    assert clipped >= 1  # the bound is really exercised
    got = dp_sgd_grads(model, x, y, clip, 1e-9, torch.Generator().manual_seed(7))
    assert list(got) == [n for n, _ in model.named_parameters()]
    for e, t in zip(expected, got.values()):
        assert torch.allclose(e, t, atol=1e-6)
    # the noise: N(0, (σ·τ)²) per entry from the generator, one draw per parameter in order, divided by B
    noisy = dp_sgd_grads(model, x, y, clip, 2.0, torch.Generator().manual_seed(7))
    ng = torch.Generator().manual_seed(7)
    for (n, p), e in zip(model.named_parameters(), expected):
        noise = torch.randn(p.shape, generator=ng) * (2.0 * clip) / len(y)
        assert torch.allclose(noisy[n], e + noise, atol=1e-5)
    with pytest.raises(ValueError, match="CPU"):
        dp_sgd_grads(model, x, y, clip, 1.0, None)


def dp_train(noise_seed=5, data_seed=0, sigma=1.0, **kw):
    x, y = clients_data((40,), shape=(1, 8, 8))[0]
    m = tiny()
    res = train_classifier(m, x, y, epochs=2, gen=torch.Generator().manual_seed(data_seed), dp_sigma=sigma,
                           dp_clip=1.0, noise_gen=torch.Generator().manual_seed(noise_seed), **{**HP, **kw})
    return m, res


def test_dp_training_is_seeded_by_its_noise_generator_only():
    before = torch.get_rng_state()
    a, res = dp_train()
    assert torch.equal(torch.get_rng_state(), before)  # nothing drawn from the global stream
    b, _ = dp_train()
    c, _ = dp_train(noise_seed=6)
    plain = tiny()
    x, y = clients_data((40,), shape=(1, 8, 8))[0]
    train_classifier(plain, x, y, epochs=2, gen=torch.Generator().manual_seed(0), **HP)
    assert states_equal(a, b)
    assert not states_equal(a, c)
    assert max_diff(a, plain) > 1e-3
    assert res.steps == 2 * 3 and res.final_loss == res.final_loss  # 40 samples, B 16: 3 steps per epoch
    d, _ = dp_train(grad_clip=1e-3)  # grad_clip applies to the noisy gradient too
    assert not states_equal(a, d)


def test_dp_trains_one_by_one_with_the_same_numbers_and_batched_refuses_it():
    data = clients_data((30, 21), shape=(1, 8, 8))

    def run(batched):
        models = [tiny(), tiny()]
        train_clients(models, data, gens(2), batched=batched, epochs=1, dp_sigma=1.0, dp_clip=1.0,
                      noise_gens=gens(2, seed=50), **HP)
        return models

    seq, bat = run(False), run(True)
    assert all(states_equal(a, b) for a, b in zip(seq, bat))
    with pytest.raises(ValueError, match="DP-SGD"):
        train_classifiers_batched([tiny(), tiny()], data, gens(2), epochs=1, dp_sigma=1.0, **HP)
    with pytest.raises(ValueError, match="noise_gens"):
        train_clients([tiny(), tiny()], data, gens(2), batched=False, epochs=1, dp_sigma=1.0, **HP)


def test_dp_cohort_reports_one_by_one_and_batchnorm_fails_before_any_training():
    from osfl.accel import Accel
    from osfl.clients.cohort import Cohort, train_cohort

    data = clients_data((20, 20), shape=(1, 8, 8))
    hp = dict(epochs=1, eval_fn=None, eval_every=0, accel=Accel(batched_clients=True), dp_sigma=1.0, dp_clip=1.0,
              grad_clip=0.0, **HP)
    cohort = Cohort(["mlp", "mlp"], [tiny(), tiny()], data, gens(2), gens(2, seed=9))
    _, _, batched = train_cohort(cohort, hp, torch.device("cpu"), progress=False)
    assert batched is False
    first = tiny()
    untouched = tiny()
    bn = build_model("cnn2", (1, 28, 28), 10)
    data28 = clients_data((20, 20))
    with pytest.raises(ConfigError, match=r"^local.dp_sigma: DP-SGD needs per-sample gradients.*BatchNorm"):
        train_cohort(Cohort(["mlp", "cnn2"], [first, bn], data28, gens(2), gens(2)), hp, torch.device("cpu"),
                     progress=False)
    assert states_equal(first, untouched)  # client 0 did not train before client 1 failed
    with pytest.raises(ConfigError, match=r"^local.dp_sigma: "):
        train_classifier(bn, *data28[0], epochs=1, gen=torch.Generator(), dp_sigma=1.0,
                         noise_gen=torch.Generator(), **HP)


def test_build_cohort_gives_a_separate_seeded_noise_generator():
    from osfl.clients.cohort import build_cohort
    from osfl.runtime import derive_seed

    x = torch.randint(0, 256, (10, 1, 28, 28), dtype=torch.uint8)
    y = torch.randint(0, 10, (10,))
    c = build_cohort(["cnn2", "cnn2"], [[0, 1, 2], [3, 4]], x, y, (1, 28, 28), 10, torch.device("cpu"), seed=0,
                     start=None, data_seed=lambda k: 100 + k)
    assert torch.equal(c.gens[1].get_state(), torch.Generator().manual_seed(101).get_state())
    assert torch.equal(c.noise_gens[1].get_state(),
                       torch.Generator().manual_seed(derive_seed(101, "dp-noise")).get_state())


# ------------------------------------------------------------------ config and record


@pytest.mark.parametrize("local,message", [
    ({"grad_clip": -1}, "local.grad_clip: must be >= 0.0, got -1"),
    ({"grad_clip": "10"}, "local.grad_clip: must be a number, got '10'"),
    ({"dp_sigma": -0.5}, "local.dp_sigma: must be >= 0.0, got -0.5"),
    ({"dp_clip": 0}, "local.dp_clip: must be > 0, got 0"),
    ({"dp_delta": 0}, "local.dp_delta: must be > 0, got 0"),
    ({"dp_delta": 1}, "local.dp_delta: must be < 1, got 1.0"),
    ({"dp_sigm": 1}, "local.dp_sigm: unknown key; did you mean local.dp_sigma?"),
])
def test_bad_values_fail_with_one_line_naming_the_key(local, message):
    from osfl.config import check_keys

    with pytest.raises(ConfigError) as e:
        check_keys({"local": local})
        LocalTraining.from_params(local)
    assert str(e.value).startswith(message)


def test_as_dict_records_the_new_keys_only_when_they_change_something():
    assert LocalTraining().as_dict() == LocalTraining.from_params({"dp_clip": 2.0, "dp_delta": 1e-6}).as_dict()
    assert not {"grad_clip", "dp_sigma", "dp_clip", "dp_delta"} & set(LocalTraining().as_dict())
    assert LocalTraining.from_params({"grad_clip": 10}).as_dict()["grad_clip"] == 10.0
    d = LocalTraining.from_params({"dp_sigma": 3}).as_dict()
    assert (d["dp_sigma"], d["dp_clip"], d["dp_delta"]) == (3.0, 1.0, 1e-5)


def test_epsilon_is_recorded_and_falls_as_sigma_grows():
    pytest.importorskip("opacus")
    records = [dp_record(LocalTraining.from_params({"dp_sigma": s, "batch_size": 128}), [390, 40], [5000, 500])
               for s in (1, 3, 5)]
    r = records[0]
    assert (r["sigma"], r["clip"], r["delta"], r["accountant"]) == (1.0, 1.0, 1e-5, "opacus RDP")
    assert [c["sample_rate"] for c in r["per_client"]] == [128 / 5000, 128 / 500]
    eps = [[c["epsilon"] for c in rec["per_client"]] for rec in records]
    for k in range(2):
        assert eps[0][k] > eps[1][k] > eps[2][k] > 0
    assert r["epsilon_max"] == max(eps[0])
    assert dp_epsilon(0, 0.1, 1.0, 1e-5) == 0.0


def test_train_clients_stage_records_dp(tmp_path, monkeypatch):
    """Stage train_clients on the embedded digits (profile smoke, LeNet-5: no BatchNorm) with local.dp_sigma:
    clients.json gains a ``dp`` entry with each client's ε; the manifests record σ, τ, δ."""
    import copy
    import json
    from pathlib import Path

    import yaml

    from osfl.stages import partition, prepare, train_clients

    pytest.importorskip("opacus")
    params = copy.deepcopy(yaml.safe_load((Path(__file__).resolve().parents[1] / "params.yaml").read_text()))
    params.update(profile="smoke", dataset="digits", clients=2, model="lenet5")
    params.pop("client_models", None)
    params["local"] = {**(params.get("local") or {}), "epochs": 100, "dp_sigma": 2.0, "grad_clip": 10.0}
    params["runtime"] = {**params["runtime"], "batched_clients": True}  # DP still trains one by one
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)
    prepare.main(["--no-progress"])
    partition.main(["--no-progress"])
    train_clients.main(["--no-progress"])
    record = json.loads(Path("results/main/clients.json").read_text())["dp"]
    assert (record["sigma"], record["clip"], record["delta"], record["accountant"]) == (2.0, 1.0, 1e-5, "opacus RDP")
    assert len(record["per_client"]) == 2 and all(c["epsilon"] > 0 and c["steps"] > 0 for c in record["per_client"])
    manifest = json.loads(next(Path("models/main/clients").rglob("manifest.json")).read_text())
    assert {k: manifest["train"][k] for k in ("dp_sigma", "dp_clip", "dp_delta", "grad_clip")} == {
        "dp_sigma": 2.0, "dp_clip": 1.0, "dp_delta": 1e-5, "grad_clip": 10.0}
