"""Local training, augmentation, uploads, FedAvg and the ensemble on tiny generated data."""
import numpy as np
import pytest
import torch

from osfl.augment import augment_batch
from osfl.clients.training import train_classifier
from osfl.clients.upload import read_uploads, write_upload
from osfl.config import get_profile
from osfl.errors import ConfigError
from osfl.distill.ensemble import ensemble_predictor
from osfl.evaluation import accuracy
from osfl.methods import METHODS
from osfl.methods.base import ServerContext
from osfl.methods.base import average_state_dicts
from osfl.models import build_model


def toy_data(n=256, seed=0):
    """Two classes separable by mean brightness of the left half."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    x = torch.randint(0, 100, (n, 1, 28, 28), generator=g, dtype=torch.uint8)
    x[y == 1, :, :, :14] += 150
    return x, y


def train(seed=0, epochs=3, **kw):
    x, y = toy_data()
    torch.manual_seed(seed)
    m = build_model("cnn2", (1, 28, 28), 2)
    hp = {"lr": 0.05, "momentum": 0.9, **kw}
    res = train_classifier(m, x, y, epochs=epochs, batch_size=32, weight_decay=0.0, augment="none",
                           gen=torch.Generator().manual_seed(seed), eval_fn=lambda mm: accuracy(mm, x, y),
                           eval_every=1, **hp)
    return m, res, x, y


def test_training_learns_and_records_curve():
    m, res, x, y = train()
    assert accuracy(m, x, y) > 90.0
    assert [c["epoch"] for c in res.curve] == [1, 2, 3]
    assert res.samples_seen == 3 * 256


def test_adam_clients_learn_and_differ_from_sgd():
    """local.optimizer: adam (FedMHO Table X: Adam, lr 5e-4): it learns, momentum is not read, and the weights are not
    SGD's; the batched path refuses it (train_clients sends Adam clients one by one)."""
    from osfl.clients.batched import train_classifiers_batched
    from osfl.config import LocalTraining

    adam, _, x, y = train(optimizer="adam", lr=5e-3)
    again, _, _, _ = train(optimizer="adam", lr=5e-3, momentum=0.0)
    sgd, _, _, _ = train(lr=5e-3)
    assert accuracy(adam, x, y) > 90.0
    assert all(torch.equal(a, b) for a, b in zip(adam.state_dict().values(), again.state_dict().values()))
    assert not all(torch.equal(a, b) for a, b in zip(adam.state_dict().values(), sgd.state_dict().values()))
    with pytest.raises(ValueError, match="implements SGD only"):
        train_classifiers_batched([adam, sgd], [(x, y)] * 2, [torch.Generator()] * 2, epochs=1, batch_size=32,
                                  lr=1e-3, momentum=0.0, weight_decay=0.0, augment="none", optimizer="adam")
    assert LocalTraining.from_params({"optimizer": "adam"}).as_dict()["optimizer"] == "adam"
    assert "optimizer" not in LocalTraining().as_dict()  # SGD records as before the key existed
    with pytest.raises(ConfigError, match="^local.optimizer: "):
        LocalTraining.from_params({"optimizer": "rmsprop"})


def test_training_is_seeded():
    a, _, _, _ = train(seed=1)
    b, _, _, _ = train(seed=1)
    c, _, _, _ = train(seed=2)
    for k in a.state_dict():
        assert torch.equal(a.state_dict()[k], b.state_dict()[k])
    assert any(not torch.equal(a.state_dict()[k], c.state_dict()[k]) for k in a.state_dict()
               if a.state_dict()[k].is_floating_point())


def test_crop_flip_keeps_shape_and_content_range():
    x = torch.rand(16, 3, 32, 32)
    out = augment_batch(x, "crop_flip", torch.Generator().manual_seed(0))
    assert out.shape == x.shape
    assert not torch.equal(out, x)
    # a crop of a zero-padded image: every pixel is either 0 (padding) or a value from the input
    assert set(out.unique().tolist()) <= set(x.unique().tolist()) | {0.0}
    flipped = augment_batch(x, "flip", torch.Generator().manual_seed(0))
    for i in range(16):
        assert torch.equal(flipped[i], x[i]) or torch.equal(flipped[i], x[i].flip(2))


def test_fedavg_weighted_mean_of_state_dicts():
    a = {"w": torch.tensor([0.0, 2.0]), "n": torch.tensor(3)}
    b = {"w": torch.tensor([4.0, 6.0]), "n": torch.tensor(5)}
    avg = average_state_dicts([a, b], [1.0, 3.0])
    assert torch.allclose(avg["w"], torch.tensor([3.0, 5.0]))
    assert avg["n"].item() == 5


def make_uploads(tmp_path, n_clients=3):
    x, y = toy_data(96)
    for k in range(n_clients):
        torch.manual_seed(k)
        m = build_model("cnn2", (1, 28, 28), 2)
        write_upload(tmp_path, k, "classifier",
                     {"arch": "cnn2", "input_shape": [1, 28, 28], "num_classes": 2, "n_samples": 10 * (k + 1),
                      "label_histogram": [5 * (k + 1), 5 * (k + 1)]},
                     tensors={"state_dict": m.state_dict()})
    ups = read_uploads(tmp_path)
    ctx = ServerContext(uploads=ups, model_name="cnn2", input_shape=(1, 28, 28), num_classes=2, x_test=x,
                        y_test=y, device=torch.device("cpu"), seed=0, profile=get_profile("smoke"), progress=False)
    return ups, ctx


def test_upload_roundtrip_and_other_kinds(tmp_path):
    ups, _ = make_uploads(tmp_path)
    assert [u.client_id for u in ups] == [0, 1, 2]
    assert ups[1].n_samples == 20 and ups[1].label_histogram.tolist() == [10, 10]
    write_upload(tmp_path / "distilled", 0, "distilled_set", {"n_samples": 4, "label_histogram": [2, 2]},
                 arrays={"images": np.zeros((4, 1, 28, 28), np.float32), "labels": np.array([0, 0, 1, 1])})
    d = read_uploads(tmp_path / "distilled")[0]
    assert d.kind == "distilled_set" and d.array("labels").tolist() == [0, 0, 1, 1]
    with pytest.raises(ValueError, match="not a classifier"):
        d.build_model()
    with pytest.raises(ValueError, match="unknown upload kind"):
        write_upload(tmp_path, 9, "gradients", {"n_samples": 1, "label_histogram": [1]})


def test_fedavg_method_equals_manual_average(tmp_path):
    ups, ctx = make_uploads(tmp_path)
    res = METHODS.get("fedavg")().run(ctx)
    sizes = [10, 20, 30]
    manual = average_state_dicts([u.state_dict() for u in ups], sizes)
    for k, v in res.model.state_dict().items():
        assert torch.allclose(v, manual[k])
    res_u = METHODS.get("fedavg")(weighting="uniform").run(ctx)
    assert not torch.allclose(res_u.model.state_dict()["classifier.weight"], res.model.state_dict()["classifier.weight"])


def test_ensemble_averages_logits(tmp_path):
    ups, ctx = make_uploads(tmp_path)
    res = METHODS.get("ensemble")().run(ctx)
    models = [u.build_model() for u in ups]
    predict = ensemble_predictor(models, res.weights)
    x = ctx.x_test[:8].float() / 255
    with torch.no_grad():
        expected = sum(m(x) for m in models) / 3
        assert torch.allclose(predict(x), expected, atol=1e-5)


def test_method_parameters_are_checked():
    with pytest.raises(ConfigError, match=r"^server.fedavg.weighting: unknown value 'median'"):
        METHODS.get("fedavg")(weighting="median")
    with pytest.raises(ConfigError, match=r"^server.ensemble.temperature: unknown key"):
        METHODS.get("ensemble")(temperature=2)


class ToyDistill:
    """A method that trains a global model for a few epochs (stand-in for DENSE-like methods)."""

    @staticmethod
    def run(ctx, epochs=3):
        from osfl.methods.base import track_epochs

        model = ctx.make_global()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        x = ctx.x_test.float() / 255

        def step(epoch):
            model.train()
            loss = torch.nn.functional.cross_entropy(model(x), ctx.y_test)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return model

        return model, track_epochs(ctx, epochs, step, "toy", start=model)


def test_epoch_curve_best_equals_recorded_best(tmp_path):
    """The live log (what dvc exp show and the reports read) holds the curve, its best and the final model's
    accuracy; a method without server epochs logs one point at epoch 0 with best = final."""
    from osfl.live import LiveRun, read_curve, read_summary

    _, ctx = make_uploads(tmp_path)
    live = LiveRun(tmp_path / "live" / "toy", "toy")
    ctx.on_epoch = live.epoch
    model, curve = ToyDistill.run(ctx, epochs=4)
    assert [c["epoch"] for c in curve] == [0, 1, 2, 3, 4]  # epoch 0: the model before server training
    final = ctx.evaluate(model)
    assert final == pytest.approx(curve[-1]["test_acc"])  # the last curve point is the returned model
    live.end(final)
    s = read_summary(tmp_path / "live" / "toy", "toy")
    assert s["best"] == max(c["test_acc"] for c in curve[1:])  # best over server epochs, not epoch 0
    assert s["epoch"] == 4 and s["final"] == curve[-1]["test_acc"]
    assert read_curve(tmp_path / "live" / "toy") == ([0, 1, 2, 3, 4], [c["test_acc"] for c in curve])
    high = LiveRun(tmp_path / "live" / "high", "high")  # epoch 0 above every server epoch: not the best
    for e, a in enumerate((90.0, 20.0, 30.0)):
        high.epoch({"epoch": e, "test_acc": a})
    high.end(30.0)
    assert read_summary(tmp_path / "live" / "high", "high") == {"final": 30.0, "best": 30.0, "epoch": 2}
    flat = LiveRun(tmp_path / "live" / "flat", "flat")
    flat.end(55.0)
    assert read_summary(tmp_path / "live" / "flat", "flat") == {"final": 55.0, "best": 55.0}
    assert read_curve(tmp_path / "live" / "flat") == ([0], [55.0])
