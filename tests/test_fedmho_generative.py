"""Generative clients (osfl.generative): CVAE training, squared-count allocation, decoding, k-means cleaning."""
import numpy as np
import pytest
import torch

from osfl.errors import ConfigError
from osfl.generative.cvae import cvae_loss, train_cvae
from osfl.generative.synthesis import allocate, clean, generate
from osfl.models import build_model


def test_allocation_is_class_balanced_and_split_by_squared_counts():
    # class 0: only decoder 0 holds it; class 1: nobody (uniform); class 2: 3² : 4² = 0.36 : 0.64 of 10
    assert allocate([[10, 0, 3], [0, 0, 4]], 30).tolist() == [[10, 5, 3], [0, 5, 6]]
    # floors: 47 classes and 12,000 samples give 255 per class (SPEC §1.4)
    assert allocate(np.ones((5, 47)), 12_000).sum(axis=0).max() <= 255


def test_allocation_refuses_bad_input():
    with pytest.raises(ConfigError, match="^synthesis.counts:"):
        allocate([[1, -1]], 10)
    with pytest.raises(ConfigError, match="^synthesis.total:"):
        allocate([[1, 1, 1]], 2)


def _decoders(k=2, classes=3):
    torch.manual_seed(0)
    return [build_model("cvae_small", (1, 28, 28), classes).decoder for _ in range(k)]


def test_generate_follows_the_allocation_and_its_seed():
    decs, alloc = _decoders(), np.array([[4, 0, 2], [1, 3, 0]])
    x, y = generate(decs, alloc, torch.Generator().manual_seed(1), batch_size=3)
    assert x.shape == (10, 1, 28, 28) and 0 <= x.min() and x.max() <= 1
    assert y.tolist() == [0] * 4 + [2] * 2 + [0] + [1] * 3
    x2, _ = generate(decs, alloc, torch.Generator().manual_seed(1))  # batching does not change the draws
    assert torch.allclose(x, x2, atol=1e-6)  # (only the kernels' rounding for another batch size)
    assert torch.equal(x, generate(decs, alloc, torch.Generator().manual_seed(1), batch_size=3)[0])
    x3, _ = generate(decs, alloc, torch.Generator().manual_seed(2))
    assert not torch.equal(x, x3)


def test_clean_keeps_the_samples_nearest_the_class_mean():
    gen = torch.Generator().manual_seed(0)
    near = torch.rand(8, 1, 4, 4, generator=gen) * 0.1
    far = torch.ones(2, 1, 4, 4)
    x = torch.cat([far[:1], near[:4], far[1:], near[4:], torch.rand(5, 1, 4, 4, generator=gen)])
    y = torch.tensor([0] * 10 + [1] * 5)
    kept = clean(x, y, 0.8)
    assert kept.tolist() == sorted(kept.tolist())
    assert set(kept.tolist()) >= {1, 2, 3, 4, 6, 7, 8, 9} and not {0, 5} & set(kept.tolist())
    # class 1: ⌊0.8 · 5⌋ = 4 kept, the ones nearest the class mean, computed here without k-means
    ones = x[10:].reshape(5, -1)
    expect = 10 + torch.argsort((ones - ones.mean(0)).norm(dim=1))[:4]
    assert sorted(k for k in kept.tolist() if k >= 10) == sorted(expect.tolist())
    with pytest.raises(ConfigError, match="^clean_rate:"):
        clean(x, y, 0)


def _data(n=48, classes=3):
    """One fixed binary template per class, a few pixels flipped per image: something a CVAE can learn."""
    gen = torch.Generator().manual_seed(3)
    templates = torch.rand(classes, 1, 28, 28, generator=gen) > 0.5
    y = torch.arange(n) % classes
    flip = torch.rand(n, 1, 28, 28, generator=gen) < 0.05
    return ((templates[y] ^ flip).to(torch.uint8) * 255), y


def test_train_cvae_is_seeded_and_lowers_its_loss():
    x, y = _data()
    xf = x.float() / 255
    noise = torch.randn(len(x), 2, generator=torch.Generator().manual_seed(9))
    states, before, after = [], None, None
    for _ in range(2):
        torch.manual_seed(0)
        model = build_model("cvae_small", (1, 28, 28), 3)
        with torch.no_grad():
            before = cvae_loss(model, xf, y, noise).item()
        res = train_cvae(model, x, y, epochs=3, batch_size=16, lr=5e-3, gen=torch.Generator().manual_seed(4))
        with torch.no_grad():
            after = cvae_loss(model, xf, y, noise).item()
        states.append(model.state_dict())
        assert res.steps == 9 and res.samples_seen == 3 * len(x)
    assert all(torch.equal(a, b) for a, b in zip(states[0].values(), states[1].values()))
    assert after < before


def test_train_cvae_refuses_a_classifier_and_unknown_reductions():
    x, y = _data(8)
    with pytest.raises(ConfigError, match="^model: train_cvae needs a conditional VAE"):
        train_cvae(build_model("cnn_mnist", (1, 28, 28), 3), x, y, epochs=1, batch_size=4, lr=1e-3,
                   gen=torch.Generator())
    with pytest.raises(ConfigError, match="^cvae.reduction:"):
        train_cvae(build_model("cvae_small", (1, 28, 28), 3), x, y, epochs=1, batch_size=4, lr=1e-3,
                   gen=torch.Generator(), reduction="mean")


def test_a_diverging_cvae_stops_with_one_line_naming_the_epoch():
    """FedMHO's Table III Adam lr 5e-2 diverged for one client of the cpu grid; a much larger one does at once."""
    x, y = _data()
    torch.manual_seed(0)
    with pytest.raises(RuntimeError, match=r"^CVAE training diverged in epoch \d+ of 30 \(Adam lr 1000000.0"):
        train_cvae(build_model("cvae_small", (1, 28, 28), 3), x, y, epochs=30, batch_size=16, lr=1e6,
                   gen=torch.Generator().manual_seed(4))


def test_a_nan_reconstruction_never_reaches_bce(monkeypatch):
    """On CUDA, BCE on a NaN input is a device-side assert that ends the process (FedMHO's CVAE-small part on an
    H100), so the retry never saw the divergence: a BCE that fails the test on a non-finite input, as CUDA does,
    must never be called; the divergence still stops the training with its one line."""
    import osfl.generative.cvae as cvae

    real = cvae.F.binary_cross_entropy

    def cuda_like(inp, target, **kw):
        assert bool(torch.isfinite(inp).all()), "BCE called on a non-finite reconstruction"
        return real(inp, target, **kw)

    monkeypatch.setattr(cvae.F, "binary_cross_entropy", cuda_like)
    x, y = _data()
    torch.manual_seed(0)
    with pytest.raises(RuntimeError, match=r"^CVAE training diverged in epoch \d+ of 30 .*not finite"):
        train_cvae(build_model("cvae_small", (1, 28, 28), 3), x, y, epochs=30, batch_size=16, lr=1e6,
                   gen=torch.Generator().manual_seed(4))


def test_the_mean_image_loss_lies_between_a_trained_and_an_untrained_cvae():
    """A decoder that draws the data's mean image: a trained CVAE ends below it, an untrained one (sigmoid ~ 0.5,
    784 ln 2 per image) above it; FedMHO's lr 5e-2 left one client at a finite 5e27."""
    from osfl.generative.cvae import mean_image_loss

    x, y = _data()
    base = mean_image_loss(x, batch_size=16)
    xf = (x.float() / 255).flatten(1)
    m = xf.mean(0).clamp(1e-6, 1 - 1e-6)
    assert base == pytest.approx(float(-(xf * m.log() + (1 - xf) * (1 - m).log()).sum(1).mean()), rel=1e-5)
    assert mean_image_loss(x, batch_size=16, reduction="sum") == pytest.approx(16 * base, rel=1e-5)  # 3 full batches
    for lr, epochs, below in ((1e-9, 1, False), (1e-2, 30, True)):
        torch.manual_seed(0)
        res = train_cvae(build_model("cvae_small", (1, 28, 28), 3), x, y, epochs=epochs, batch_size=16, lr=lr,
                         gen=torch.Generator().manual_seed(4))
        assert (res.final_loss < base) is below


def _cvae_part(tmp_path, monkeypatch, diverge_first: int, retries: int, lr: float = 1e-2, epochs: int = 30,
               restart_above: bool = True, diverge_after: int = 0, logged: list | None = None):
    """_train_cvaes on two clients of _data() whose first ``diverge_first`` attempts diverge after completing
    ``diverge_after`` epochs (the real training runs after them); returns the summary and the generator seeds each
    attempt drew. ``logged`` collects the (client, epoch) pairs the part's curve received."""
    from types import SimpleNamespace

    import osfl.stages.train_part as tp
    from osfl.generative.cvae import CVAEDiverged

    x, y = _data()
    seeds, real = [], tp.train_cvae

    def flaky(model, *a, gen, **kw):
        seeds.append(gen.initial_seed())
        if len(seeds) <= diverge_first:
            for e in range(1, diverge_after + 1):
                kw["on_epoch"](e, 1.0)
            raise CVAEDiverged(f"CVAE training diverged in epoch {diverge_after + 1} of 2", diverge_after + 1)
        return real(model, *a, gen=gen, **kw)

    class Curve:  # the part's live curve, recorded
        def __init__(self, *_):
            pass

        def epoch(self, client, epoch, loss):
            if logged is not None:
                logged.append((client, epoch))

        def end(self):
            pass

    monkeypatch.setattr(tp, "train_cvae", flaky)
    monkeypatch.setattr(tp, "ClientsLive", Curve)
    pt = SimpleNamespace(client_indices=[list(range(24)), list(range(24, 48))], class_counts=[[8, 8, 8]] * 2)
    spec = SimpleNamespace(shape=(1, 28, 28), num_classes=3)
    from osfl.config import CVAETraining
    summary = tp._train_cvaes(tmp_path / "out", [0, 1], "cvae_small", pt, x, y, spec, 0, epochs,
                              CVAETraining(epochs=epochs, batch_size=16, lr=lr), "cpu", retries=retries,
                              restart_above=restart_above, progress=False, live=tmp_path / "live")
    return summary, seeds


def test_a_diverged_cvae_client_restarts_from_a_fresh_draw_and_says_so(tmp_path, monkeypatch):
    summary, seeds = _cvae_part(tmp_path, monkeypatch, diverge_first=1, retries=2)
    assert [s.get("diverged_in_epochs") for s in summary] == [[1], None]
    assert len(seeds) == 3 and len(set(seeds)) == 3  # client 0's retry draws anew; client 1 as without retries
    from osfl.runtime import derive_seed
    assert seeds[1] == derive_seed(0, "client-data", 0, "retry", 1) and seeds[2] == derive_seed(0, "client-data", 1)
    assert len(list((tmp_path / "out").iterdir())) == 2  # one upload per client, the diverged attempt's none
    assert all(s["final_loss"] < s["mean_image_loss"] for s in summary)


def test_a_cvae_client_above_its_mean_image_retries_then_is_kept(tmp_path, monkeypatch):
    """Finite but useless (lr 1e-9, one epoch): each client tries 1 + retries times, then the last attempt is kept
    (train_part records the failed guard cvae_below_mean_image)."""
    summary, seeds = _cvae_part(tmp_path, monkeypatch, diverge_first=0, retries=1, lr=1e-9, epochs=1)
    assert len(seeds) == 4 and [s["diverged_in_epochs"] for s in summary] == [[1], [1]]
    assert all(s["final_loss"] > s["mean_image_loss"] for s in summary)


def test_without_the_guard_a_cvae_client_above_its_mean_image_is_kept_at_once(tmp_path, monkeypatch):
    """Where no cvae_below_mean_image_min guard is set (smoke), only divergence restarts a client."""
    summary, seeds = _cvae_part(tmp_path, monkeypatch, diverge_first=0, retries=2, lr=1e-9, epochs=1,
                                restart_above=False)
    assert len(seeds) == 2 and all("diverged_in_epochs" not in s for s in summary)
    assert all(s["final_loss"] > s["mean_image_loss"] for s in summary)


def test_a_restarted_cvae_curve_continues_from_the_last_completed_epoch(tmp_path, monkeypatch):
    """An attempt that diverged in epoch 3 completed 2: the retry's epochs are logged as 3, 4, ... (no gap)."""
    logged = []
    summary, _ = _cvae_part(tmp_path, monkeypatch, diverge_first=1, retries=1, epochs=3, diverge_after=2,
                            logged=logged)
    assert summary[0]["diverged_in_epochs"] == [3]
    assert [e for c, e in logged if c == 0] == [1, 2, 3, 4, 5] and [e for c, e in logged if c == 1] == [1, 2, 3]


def test_a_cvae_client_that_diverges_past_its_retries_stops_naming_it(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match=r"^client 0: CVAE training diverged .* \(attempt 2 of 2; raise the part's "
                                           r"retries or lower cvae.lr\)$"):
        _cvae_part(tmp_path, monkeypatch, diverge_first=2, retries=1)


def test_a_server_refuses_a_part_that_did_not_finish(tmp_path):
    """A part's folder without its index.json (written last) is not a cohort: read_cohort says which stage to run."""
    from osfl.stages.server import read_cohort

    (tmp_path / "cvae_small" / "client_005").mkdir(parents=True)
    with pytest.raises(ConfigError, match="train_part"):
        read_cohort(tmp_path, "cvae_small")
