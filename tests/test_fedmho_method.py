"""FedMHO's server (methods/fedmho.py) on a tiny setting: two classifier clients, two decoder clients."""
import numpy as np
import pytest
import torch

from osfl.clients.upload import read_uploads, write_upload
from osfl.config import get_profile
from osfl.errors import ConfigError
from osfl.generative.synthesis import allocate, write_decoder_upload
from osfl.methods import METHODS
from osfl.methods.base import ServerContext, average_state_dicts
from osfl.models import build_model

SHAPE, K = (1, 28, 28), 3
HIST = [[20, 0, 5], [0, 10, 5]]


def make_ctx(tmp_path, decoders=True, archs=("cnn2", "cnn2")):
    torch.manual_seed(0)
    for k, arch in enumerate(archs):
        write_upload(tmp_path, k, "classifier",
                     {"arch": arch, "input_shape": list(SHAPE), "num_classes": K, "n_samples": 30,
                      "label_histogram": [10, 10, 10]},
                     tensors={"state_dict": build_model(arch, SHAPE, K).state_dict()})
    if decoders:
        for k, hist in enumerate(HIST, start=2):
            write_decoder_upload(tmp_path, k, build_model("cvae_small", SHAPE, K), arch="cvae_small",
                                 input_shape=SHAPE, num_classes=K, label_histogram=hist, n_samples=sum(hist))
    g = torch.Generator().manual_seed(1)
    return ServerContext(uploads=read_uploads(tmp_path), model_name="cnn2", input_shape=SHAPE, num_classes=K,
                         x_test=torch.randint(0, 255, (40, *SHAPE), dtype=torch.uint8, generator=g),
                         y_test=torch.randint(0, K, (40,), generator=g), device=torch.device("cpu"), seed=0,
                         profile=get_profile("smoke"), progress=False)


def run(ctx, **kw):
    return METHODS.get("fedmho")(samples=60, batch_size=16, **kw).run(ctx)


def test_generation_cleaning_and_init(tmp_path):
    ctx = make_ctx(tmp_path)
    res = run(ctx)
    alloc = allocate(np.array(HIST), 60)
    assert res.extras["allocation"] == alloc.tolist()
    per_class = alloc.sum(axis=0)
    assert res.choices["synthetic_generated"] == per_class.sum()
    assert res.choices["synthetic_kept"] == sum(int(np.floor(0.8 * n)) for n in per_class)
    assert res.choices["decoder_clients"] == [2, 3] and res.choices["classifier_clients"] == [0, 1]
    # epoch 0 is the uniform average of the two classifiers (Eq. 4)
    avg = build_model("cnn2", SHAPE, K)
    avg.load_state_dict(average_state_dicts([u.state_dict() for u in ctx.uploads[:2]], [1.0, 1.0]))
    assert res.curve[0] == {"epoch": 0, "test_acc": ctx.evaluate(avg.eval())}
    assert len(res.curve) > 1


def test_runs_are_seeded_and_kd_variants_differ(tmp_path):
    ctx = make_ctx(tmp_path)
    states = {name: run(ctx, **kw).model.state_dict()
              for name, kw in {"none": {}, "again": {}, "sd0": {"kd": "sd", "lam": 0.0}, "sd": {"kd": "sd"},
                               "md": {"kd": "md"}}.items()}
    same = lambda a, b: all(torch.equal(x, y) for x, y in zip(states[a].values(), states[b].values()))
    assert same("none", "again") and same("none", "sd0")  # λ = 0 adds exactly nothing
    assert not same("none", "sd") and not same("none", "md") and not same("sd", "md")


def test_table5_and_table6_switches(tmp_path):
    """ce_weight (λ₁) 1 changes nothing and 2 does; cleaning: none generates ⌊keep·M⌋ and drops none (Table VI)."""
    ctx = make_ctx(tmp_path)
    base, one, two = (run(ctx, kd="md", **kw).model.state_dict() for kw in ({}, {"ce_weight": 1.0}, {"ce_weight": 2.0}))
    assert all(torch.equal(a, b) for a, b in zip(base.values(), one.values()))
    assert not all(torch.equal(a, b) for a, b in zip(base.values(), two.values()))
    res = run(ctx, cleaning="none")
    alloc = allocate(np.array(HIST), 48)  # ⌊0.8 · 60⌋ asked for, all kept
    assert res.extras["allocation"] == alloc.tolist()
    assert res.choices["synthetic_generated"] == res.choices["synthetic_kept"] == alloc.sum()


def test_trainable_loss_weights_start_at_the_fixed_ones_and_move(tmp_path):
    """Table V's "both trainable" row: λ₁, λ₂ = softplus(w) from ce_weight and lam, trained by the same Adam; every
    epoch records them, and the model differs from the fixed-weight run."""
    ctx = make_ctx(tmp_path)
    fixed = run(ctx, kd="md", epochs=400)  # smoke scales 400 epochs to 4
    res = run(ctx, kd="md", weights="trainable", epochs=400)
    entries = [e for e in res.curve if e["epoch"] > 0]
    assert len(entries) == 4 and all({"ce_weight", "kd_weight"} <= set(e) for e in entries)
    # each Adam step moves w by about lr (5e-4): after a few steps both weights are just below 1 (softplus(w) with
    # dL/dw > 0 always), and different from each other
    assert all(0.9 < e["ce_weight"] < 1.0 and 0.9 < e["kd_weight"] < 1.0 for e in entries)
    assert entries[-1]["ce_weight"] < entries[0]["ce_weight"] and entries[-1]["kd_weight"] < entries[0]["kd_weight"]
    assert not all(torch.equal(a, b) for a, b in zip(fixed.model.state_dict().values(), res.model.state_dict().values()))
    assert "ce_weight" not in fixed.curve[-1]
    with pytest.raises(ConfigError, match="^server.fedmho.weights: unknown value 'learned'"):
        METHODS.get("fedmho")(weights="learned")


def test_classifiers_of_several_architectures_start_from_their_distilled_ensemble(tmp_path):
    """Table X (init: distill, SPEC §3.3's proposal): the classifiers' averaged logits distilled into a fresh global
    model before stage 2; epoch 0 of the curve is that model, which the SD teacher copies. Averaging refuses them."""
    ctx = make_ctx(tmp_path, archs=("cnn2", "cnn_mnist"))
    with pytest.raises(ConfigError, match="^server.fedmho.init: init: average averages the classifiers into the "
                                          "global cnn2, but clients also use cnn_mnist"):
        run(ctx)
    res = run(ctx, init="distill", kd="sd", epochs=300)  # smoke: 3 epochs of distillation, then 3 of stage 2
    assert res.choices["init_epochs"] == 3 and res.curve[0] == {"epoch": 0, "test_acc": res.choices["init_acc"]}
    random = run(ctx, init="random", kd="sd", epochs=300)  # the same run without the distillation
    assert not all(torch.equal(a, b) for a, b in zip(res.model.state_dict().values(),
                                                     random.model.state_dict().values()))
    md = run(ctx, init="distill", kd="md")  # the MD teacher is the ensemble of both architectures
    assert md.choices["classifier_clients"] == [0, 1]
    with pytest.raises(ConfigError, match="^server.fedmho.init: init: average / distill and kd: md need classifier"):
        run(make_ctx(tmp_path / "d", archs=()), init="distill")


def test_refuses_settings_it_cannot_run(tmp_path):
    with pytest.raises(ConfigError, match="^methods: fedmho needs generative clients"):
        run(make_ctx(tmp_path / "a", decoders=False))
    with pytest.raises(ConfigError, match="^server.fedmho.keep:"):
        run(make_ctx(tmp_path / "b"), keep=1.5)
    with pytest.raises(ConfigError, match="^server.fedmho.kd: unknown value 'xd'"):
        METHODS.get("fedmho")(kd="xd")


def test_fedcvae_trains_a_fresh_model_on_every_generated_image(tmp_path):
    ctx = make_ctx(tmp_path)
    res = METHODS.get("fedcvae")(samples=60, batch_size=16).run(ctx)
    assert res.choices["synthetic_kept"] == res.choices["synthetic_generated"] == allocate(np.array(HIST), 60).sum()
    assert res.choices["decoder_clients"] == [2, 3] and res.choices["ignored_clients"] == [0, 1]
    fresh = ctx.make_global().eval()  # the run's seeded initialisation, not the classifiers' average
    assert res.curve[0]["test_acc"] == ctx.evaluate(fresh)
    again = METHODS.get("fedcvae")(samples=60, batch_size=16).run(ctx)
    assert all(torch.equal(a, b) for a, b in zip(res.model.state_dict().values(), again.model.state_dict().values()))
    with pytest.raises(ConfigError, match="^methods: fedcvae needs generative clients"):
        METHODS.get("fedcvae")().run(make_ctx(tmp_path / "c", decoders=False))
