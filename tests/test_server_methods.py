"""The data-free and distillation server methods: DENSE, Co-Boosting, FedHydra (MS + SA + HASA), FedDF.

The stratified-aggregation closed form, the BN loss of BN-free models and the batched ensemble are tested in
test_distill.py; OT fusion in test_ot.py.
"""
import math

import pytest
import torch
import torch.nn as nn

from osfl.clients.upload import read_uploads, write_upload
from osfl.config import get_profile
from osfl.errors import ConfigError
from osfl.methods import METHODS
from osfl.methods.base import ServerContext
from osfl.distill import sign_reweight as reweight
from osfl.methods.fedhydra import guidance_capability, model_stratification, normalise
from osfl.models import build_model

SHAPE = (1, 28, 28)
TRAINED = ("dense", "coboost", "fedhydra", "feddf")
# the smallest settings that still run every part of each method (epochs come from the smoke profile: 200 -> 2)
TINY = {
    "dense": {"g_steps": 2, "nz": 16},
    "coboost": {"g_steps": 2, "nz": 16},
    "fedhydra": {"g_steps": 2, "ms_steps": 3, "nz": 16},
    "feddf": {"steps_per_epoch": 3, "g_steps": 2, "nz": 16},
}


class OwnClasses(nn.Module):
    """A stand-in client whose logits can move only for its own classes (the others are fixed at 0)."""

    def __init__(self, classes, num_classes, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        d = math.prod(SHAPE)
        mask = torch.zeros(num_classes, 1)
        mask[list(classes)] = 1.0
        self.W = nn.Parameter(torch.randn(num_classes, d, generator=g) / math.sqrt(d) * mask)

    def forward(self, x):
        return 20.0 * (x.flatten(1) - 0.5) @ self.W.T


def make_ctx(tmp_path, sizes=(40, 25, 35), arch="cnn2", aux_loader=None, dataset="digits", n_test=64):
    torch.manual_seed(0)
    for k, n in enumerate(sizes):
        write_upload(tmp_path, k, "classifier",
                     {"arch": arch, "input_shape": list(SHAPE), "num_classes": 10, "n_samples": n,
                      "label_histogram": [n] + [0] * 9},
                     tensors={"state_dict": build_model(arch, SHAPE, 10).state_dict()})
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 255, (n_test, *SHAPE), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (n_test,), generator=g)
    return ServerContext(uploads=read_uploads(tmp_path), model_name=arch, input_shape=SHAPE, num_classes=10,
                         x_test=x, y_test=y, device=torch.device("cpu"), seed=0, profile=get_profile("smoke"),
                         progress=False, dataset=dataset, aux_loader=aux_loader)


def fake_aux(name):
    return torch.randint(0, 255, (50, *SHAPE), dtype=torch.uint8, generator=torch.Generator().manual_seed(2))


# ---------------------------------------------------------------------------------------------------------
# FedHydra: model stratification


def test_guidance_capability_and_normalisation():
    L = torch.tensor([[4.0, 2.0, 1.0], [3.0, 3.0, 3.0]])
    u = guidance_capability(L, eps=0.0)
    assert torch.allclose(u, torch.tensor([3.0, 0.0]))
    U = torch.tensor([[1.0, 3.0], [0.0, 0.0], [2.0, 2.0]])  # (c=3, m=2)
    Ur, Uc = normalise(U, 1), normalise(U, 0)
    assert torch.allclose(Ur.sum(1), torch.ones(3)) and torch.allclose(Ur[1], torch.tensor([0.5, 0.5]))
    assert torch.allclose(Uc.sum(0), torch.ones(2))
    assert torch.allclose(Uc[:, 0], torch.tensor([1 / 3, 0.0, 2 / 3]))


def test_model_stratification_peaks_on_the_client_holding_each_class():
    c = 6
    owners = {0: (0, 1), 1: (2, 3), 2: (4, 5)}
    models = [OwnClasses(cls, c, seed=k).eval() for k, cls in owners.items()]
    ms = model_stratification(models, SHAPE, c, steps=30, batch=16, nz=16, ngf=8, lr=1e-2, eps=1e-8,
                              device=torch.device("cpu"), rng=torch.Generator().manual_seed(0), batched=False)
    U_r, U_c = ms["U_r"], ms["U_c"]
    assert U_r.shape == (c, 3) and torch.allclose(U_r.sum(1), torch.ones(c, dtype=U_r.dtype))
    assert torch.allclose(U_c.sum(0), torch.ones(3, dtype=U_c.dtype))
    for j in range(c):
        owner = j // 2
        assert int(U_r[j].argmax()) == owner, f"class {j}: {U_r[j].tolist()}"
        assert U_r[j, owner] > 0.6
    # the trajectory minimum of a class the client cannot raise stays above log(#other classes)
    assert ms["trajectories"][0, 5].min() > math.log(c - 2) - 1e-3


def test_model_stratification_batched_equals_looped_on_the_first_steps():
    torch.manual_seed(3)
    models = [build_model("cnn2", SHAPE, 10).eval() for _ in range(2)]
    kw = dict(steps=3, batch=8, nz=16, ngf=8, lr=1e-3, eps=1e-8, device=torch.device("cpu"))
    a = model_stratification(models, SHAPE, 10, rng=torch.Generator().manual_seed(5), batched=False, **kw)
    b = model_stratification(models, SHAPE, 10, rng=torch.Generator().manual_seed(5), batched=True, **kw)
    assert torch.allclose(a["trajectories"], b["trajectories"], atol=1e-4, rtol=0)
    assert not torch.equal(a["trajectories"][:, 0], a["trajectories"][:, 1])  # the classes differ


# ---------------------------------------------------------------------------------------------------------
# Co-Boosting's client weights


def test_coboost_reweight_stays_in_unit_interval():
    g = torch.Generator().manual_seed(0)
    w = torch.full((5,), 0.2)
    w0 = w.clone()
    for step in (0.01, 0.5, 3.0):
        for _ in range(50):
            w = reweight(w, w0, torch.randn(5, generator=g), step)
            assert bool(((w >= 0) & (w <= 1)).all())
    # one step moves each weight by exactly step·sign(grad), clamped
    w = reweight(torch.full((3,), 0.5), torch.full((3,), 0.5), torch.tensor([1.0, -1.0, 0.0]), 0.1)
    assert torch.allclose(w, torch.tensor([0.4, 0.6, 0.5]))


# ---------------------------------------------------------------------------------------------------------
# every method end to end on a tiny context


@pytest.mark.parametrize("name", TRAINED)
def test_method_runs_and_records_its_curve(tmp_path, name):
    ctx = make_ctx(tmp_path, aux_loader=fake_aux)
    method = METHODS.get(name)(**TINY[name])
    res = method.run(ctx)
    assert res.kind == "classifier" and not res.model.training
    assert [c["epoch"] for c in res.curve] == [0, 1, 2]  # epoch 0: before server training; smoke: 200 x 0.01
    assert res.curve[-1]["test_acc"] == pytest.approx(ctx.evaluate(res.model))
    start = ctx.make_global()  # every trained method except FedDF starts from a fresh global model
    if name == "feddf":  # FedDF starts from the FedAvg average of the clients
        start.load_state_dict(METHODS.get("fedavg")().run(ctx).model.state_dict())
    assert res.curve[0] == {"epoch": 0, "test_acc": pytest.approx(ctx.evaluate(start))}
    resolved = method.resolved(ctx.profile)
    assert resolved["epochs"] == 2
    if "ngf" in resolved:
        assert resolved["ngf"] == 16  # generator width x0.25 under smoke
    if name == "coboost":
        for c in res.curve[1:]:
            assert all(0.0 <= w <= 1.0 for w in c["client_weights"])
    if name == "fedhydra":
        Ur = torch.tensor(res.extras["U_r"])
        assert Ur.shape == (10, 3) and torch.allclose(Ur.sum(1), torch.ones(10))


def test_fedhydra_ablation_switches(tmp_path):
    ctx = make_ctx(tmp_path)
    res = METHODS.get("fedhydra")(**TINY["fedhydra"], aggregation="ae", distill_data="pool",
                                  generator_reset="epoch", sa_scale="classes", ad_mask=True).run(ctx)
    assert "U_r" not in res.extras and len(res.curve) == 3  # AE skips model stratification
    samples = res.extras["synthetic_samples"]  # Fig. 12: a few images of the last synthetic batch, 2 per label
    assert samples["shape"] == list(SHAPE) and len(samples["images_u8"]) == len(samples["labels"]) > 0
    assert all(samples["labels"].count(k) <= 2 for k in range(10))
    assert 0 <= min(map(min, sum(sum(samples["images_u8"], []), []))) <= max(
        map(max, sum(sum(samples["images_u8"], []), []))) <= 255
    assert res.choices["teacher"].startswith("averaging ensemble")


def test_feddf_initialises_from_fedavg_and_checks_aux_data(tmp_path):
    ctx = make_ctx(tmp_path, aux_loader=fake_aux)
    res = METHODS.get("feddf")(**TINY["feddf"], lr=0.0).run(ctx)  # lr 0: the FedAvg weights are kept
    fedavg = METHODS.get("fedavg")().run(ctx).model  # (BN running statistics do move: the student trains)
    for (k, a), b in zip(res.model.named_parameters(), fedavg.parameters()):
        assert torch.allclose(a, b, atol=1e-6), k
    assert res.choices["aux_data_in_force"] == "fmnist"  # digits <- Fashion-MNIST (auto)
    with pytest.raises(ConfigError, match="server.feddf.aux_data: digits is the clients' own dataset"):
        METHODS.get("feddf")(aux_data="digits").run(ctx)
    wrong = make_ctx(tmp_path / "w", aux_loader=lambda n: torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    with pytest.raises(ConfigError, match=r"server.feddf.aux_data: cifar100 images are \(3, 32, 32\)"):
        METHODS.get("feddf")(aux_data="cifar100").run(wrong)


def test_feddf_generator_fallback_needs_no_data(tmp_path):
    ctx = make_ctx(tmp_path, aux_loader=None)
    res = METHODS.get("feddf")(**TINY["feddf"], aux_data="generator").run(ctx)
    assert res.choices["aux_data_in_force"] == "generator" and len(res.curve) == 3


@pytest.mark.parametrize("name,params,match", [
    ("dense", {"g_steps": 0}, "server.dense.g_steps: must be > 0"),
    ("dense", {"adv_mask": "yes"}, "server.dense.adv_mask: unknown value 'yes'"),
    ("coboost", {"mu": -1}, "server.coboost.mu: must be >= 0"),
    ("fedhydra", {"beta": "high"}, "server.fedhydra.beta: must be a number"),
    ("fedhydra", {"epochs": 2.5}, "server.fedhydra.epochs: must be a whole number"),
    ("fedhydra", {"distill_data": "all"}, "server.fedhydra.distill_data: unknown value 'all'; allowed: pool, intermediates"),
    ("fedhydra", {"ms_batched": 1}, "server.fedhydra.ms_batched: unknown value 1"),
    ("feddf", {"aux_data": ""}, "server.feddf.aux_data: must be"),
    ("feddf", {"temperature": 2}, "server.feddf.temperature: unknown key"),
])
def test_bad_method_parameters_fail_early_with_one_line(name, params, match):
    with pytest.raises(ConfigError, match=match) as e:
        METHODS.get(name)(**params)
    assert "\n" not in str(e.value)


def test_paper_defaults_are_written_unchanged():
    fh = METHODS.get("fedhydra").defaults
    assert (fh["epochs"], fh["g_steps"], fh["ms_steps"], fh["lr_g"], fh["lambda1"], fh["lambda2"], fh["lr"]) == \
        (200, 30, 30, 1e-3, 1.0, 1.0, 0.01)
    cb = METHODS.get("coboost").defaults
    assert (cb["kd_T"], cb["adv_T"], cb["odseta"], cb["mu"], cb["wdc"], cb["hs"], cb["weight_decay"]) == \
        (4.0, 3.0, 8.0, 0.01, 0.99, 1.0, 1e-4)
    assert METHODS.get("dense").defaults["adv_mask"] is True
    assert METHODS.get("feddf").defaults["epochs"] * METHODS.get("feddf").defaults["steps_per_epoch"] == 10_000
    paper = get_profile("paper")
    for name in TRAINED:
        m = METHODS.get(name)()
        assert m.resolved(paper) == m.params  # the paper profile changes nothing


@pytest.mark.parametrize("profile,stand_in", [("quick", None), ("smoke", (1000, 500))])
def test_feddf_aux_data_offline(tmp_path, monkeypatch, profile, stand_in):
    """Unobtainable auxiliary data: one line naming server.feddf.aux_data at quick/paper; at smoke the stand-in
    sizes are offered (the data layer then writes generated arrays, marked stand_in in meta.json)."""
    import osfl.stages.server as server
    from osfl.errors import DataUnavailableError
    from types import SimpleNamespace

    from osfl.config import ExperimentPaths

    seen = {}

    def fake_prepare(name, folder, mirror=None, stand_in=None):
        seen["stand_in"] = stand_in
        raise DataUnavailableError("dataset", f"{name} needs files that cannot be downloaded here")

    monkeypatch.setattr(server, "prepare_dataset", fake_prepare)
    paths = ExperimentPaths("main", "fmnist", str(tmp_path / "prepared"))
    cfg = SimpleNamespace(profile=get_profile(profile), seed=0, mirror=None)  # the RunConfig fields it reads
    with pytest.raises(ConfigError) as e:
        server.aux_images("mnist", paths, cfg, torch.device("cpu"))
    assert str(e.value).startswith("server.feddf.aux_data: mnist cannot be loaded") and "\n" not in str(e.value)
    assert seen["stand_in"] == stand_in


def test_fedhydra_readings_differ_only_in_their_named_choices(tmp_path):
    """The authors' loop (default) and Alg. 1 read literally differ only in the choices READINGS names: the
    default run with the literal values of those choices set one by one is the literal run, bit for bit."""
    from osfl.methods.fedhydra import READINGS, FedHydra, colour_view

    assert set(READINGS["authors"]) == set(READINGS["literal"]) == {
        "distill_data", "generator_reset", "optimize_z", "ad_mask", "synth_augment", "ms_augment", "kd_augment"}
    assert all(READINGS["authors"][k] != READINGS["literal"][k] for k in READINGS["authors"])
    assert FedHydra().params["reading"] == "authors" and FedHydra().params["distill_data"] == "pool"
    ctx = make_ctx(tmp_path)
    literal = FedHydra(**TINY["fedhydra"], reading="literal").run(ctx)
    by_choice = FedHydra(**TINY["fedhydra"], **READINGS["literal"]).run(ctx)
    authors = FedHydra(**TINY["fedhydra"]).run(ctx)
    assert literal.curve == by_choice.curve
    assert all(torch.equal(a, b) for a, b in zip(literal.model.state_dict().values(),
                                                by_choice.model.state_dict().values()))
    assert literal.extras["trajectory_min_max"] == by_choice.extras["trajectory_min_max"]
    # grey images: the authors' views resolve to none, so MS is the literal one; colour images get crop+flip
    assert authors.extras["trajectory_min_max"] == literal.extras["trajectory_min_max"]
    assert authors.choices["views_in_force"] == {"synth": "none", "ms": "none", "kd": "none"}
    assert literal.choices["views_in_force"] == {"synth": "none", "ms": "none", "kd": "none"}
    assert authors.curve != literal.curve
    assert [colour_view("colour", s) for s in ((3, 32, 32), (1, 28, 28))] == ["crop_flip", "none"]
    assert colour_view("flip", (1, 28, 28)) == "flip"
    # a choice given on its own overrides its reading's value
    assert FedHydra(reading="literal", distill_data="pool").params["distill_data"] == "pool"


def test_model_stratification_views_are_the_same_in_both_paths():
    """MS with the authors' crop+flip view: the batched and looped paths draw the same views (one generator per
    client and class) and so give the same trajectories."""
    torch.manual_seed(0)
    models = [build_model("cnn2", SHAPE, 10).eval() for _ in range(2)]
    kw = dict(steps=3, batch=4, nz=8, ngf=8, lr=1e-3, eps=1e-8, device=torch.device("cpu"), augment="crop_flip",
              augment_rng=lambda k, j: torch.Generator().manual_seed(100 * k + j))
    a = model_stratification(models, SHAPE, 10, rng=torch.Generator().manual_seed(3), batched=True, **kw)
    b = model_stratification(models, SHAPE, 10, rng=torch.Generator().manual_seed(3), batched=False, **kw)
    plain = model_stratification(models, SHAPE, 10, rng=torch.Generator().manual_seed(3), batched=False,
                                 **{**kw, "augment": "none"})
    assert torch.allclose(a["trajectories"], b["trajectories"], atol=1e-5)
    assert not torch.allclose(b["trajectories"], plain["trajectories"])


def test_dense_bn0_is_the_official_code_reading(tmp_path):
    ctx = make_ctx(tmp_path)
    paper = METHODS.get("dense")(**TINY["dense"]).run(ctx)
    code = METHODS.get("dense")(**TINY["dense"], bn=0).run(ctx)
    assert paper.choices["reading"].startswith("paper") and code.choices["reading"].startswith("as the official code")
    assert paper.curve[1:] != code.curve[1:] or any(
        not torch.equal(a, b) for a, b in zip(paper.model.state_dict().values(), code.model.state_dict().values()))
