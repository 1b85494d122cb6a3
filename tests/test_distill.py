"""Shared data-free KD building blocks (src/osfl/distill): generator, BN-statistics loss, KD losses, batched
teacher ensemble, FedHydra's stratified aggregation, synthetic image pool."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from osfl.distill import (BatchedEnsemble, BNStatHooks, Generator, SyntheticPool, adversarial_loss, bn_layers,
                          hard_sample_ce, kl_div_t, reset_generator, stratified_aggregate)
from osfl.models import build_model, count_parameters


def _clients(name, shape, m=5, seed=0, perturb_bn=True):
    torch.manual_seed(seed)
    models = [build_model(name, shape, 10) for _ in range(m)]
    for mdl in models:  # distinct, non-trivial running statistics so each client really differs
        for layer in bn_layers(mdl):
            layer.running_mean.uniform_(-0.5, 0.5)
            layer.running_var.uniform_(0.5, 2.0)
        mdl.eval()
    return models


# ---------------------------------------------------------------- generator
@pytest.mark.parametrize("img,nc,count", [(32, 3, 2_328_899), (28, 1, 1_834_305)])
def test_generator_parameter_count_and_output(img, nc, count):
    g = Generator(nz=256, ngf=64, img_size=img, nc=nc)
    assert count_parameters(g) == count
    out = g(torch.randn(4, 256))
    assert out.shape == (4, nc, img, img)
    assert out.min() >= 0 and out.max() <= 1


def test_reset_generator_is_seeded_and_follows_dense():
    g1, g2 = Generator(img_size=32), Generator(img_size=32)
    reset_generator(g1, torch.Generator().manual_seed(3))
    reset_generator(g2, torch.Generator().manual_seed(3))
    for a, b in zip(g1.state_dict().values(), g2.state_dict().values()):
        assert torch.equal(a, b)
    assert g1.l1.bias.abs().sum() == 0 and g1.conv_blocks[-2].bias.abs().sum() == 0
    w = g1.l1.weight
    assert abs(w.mean().item()) < 1e-3 and abs(w.std().item() - 0.02) < 1e-3
    bn_w = torch.cat([m.weight for m in g1.modules() if isinstance(m, nn.BatchNorm2d)])
    bn_b = torch.cat([m.bias for m in g1.modules() if isinstance(m, nn.BatchNorm2d)])
    assert abs(bn_w.mean().item() - 1) < 0.01 and 0.01 < bn_w.std().item() < 0.03 and bn_b.abs().sum() == 0
    reset_generator(g2, torch.Generator().manual_seed(4))
    assert not torch.equal(g1.l1.weight, g2.l1.weight)


# ---------------------------------------------------------------- BN statistics loss
def test_bn_loss_is_zero_without_batchnorm():
    model = build_model("cnn3", (3, 32, 32), 10).eval()
    with BNStatHooks([model]) as hooks:
        model(torch.rand(4, 3, 32, 32))
        assert hooks.num_layers == 0
        loss = hooks.loss()
    assert torch.is_tensor(loss) and loss.item() == 0.0


def _bn_inputs(model, x):
    seen = []
    hs = [l.register_forward_hook(lambda mod, inp, out: seen.append(inp[0])) for l in bn_layers(model)]
    with torch.no_grad():
        model(x)
    for h in hs:
        h.remove()
    return seen


def test_bn_loss_exactly_zero_at_matching_statistics_positive_otherwise_and_differentiable():
    torch.manual_seed(0)
    model = build_model("cnn2", (1, 28, 28), 10).eval()
    x = torch.rand(16, 1, 28, 28)
    layers = bn_layers(model)
    with torch.no_grad():  # set each layer's running stats to the batch statistics of its input, in order
        for l, layer in enumerate(layers):
            inp = _bn_inputs(model, x)[l]
            layer.running_mean.copy_(inp.mean(dim=(0, 2, 3)))
            layer.running_var.copy_(inp.var(dim=(0, 2, 3), unbiased=False))
    with BNStatHooks(model) as hooks:
        model(x)
        assert hooks.num_layers == 2
        assert hooks.loss().item() == 0.0
        x2 = (torch.rand(16, 1, 28, 28) * 0.5).requires_grad_(True)
        model(x2)
        loss = hooks.loss()
        assert loss.item() > 0
        (grad,) = torch.autograd.grad(loss, x2)
        assert torch.isfinite(grad).all() and grad.abs().sum() > 0
    assert not any(l._forward_hooks for l in layers)  # removed on exit


def test_bn_loss_sums_over_layers_and_models():
    models = _clients("cnn2", (3, 32, 32), m=3)
    x = torch.rand(8, 3, 32, 32)
    with BNStatHooks(models) as hooks:
        for mdl in models:
            mdl(x)
        per_model, total = hooks.per_model(), hooks.loss()
    manual = []
    for mdl in models:
        vals = []
        for layer, inp in zip(bn_layers(mdl), _bn_inputs(mdl, x)):
            vals.append(torch.norm(layer.running_var - inp.var(dim=(0, 2, 3), unbiased=False))
                        + torch.norm(layer.running_mean - inp.mean(dim=(0, 2, 3))))
        manual.append(sum(vals))
    assert torch.allclose(per_model, torch.stack(manual), atol=1e-5)
    assert torch.allclose(total, per_model.sum())


# ---------------------------------------------------------------- losses
def test_kl_div_t():
    torch.manual_seed(0)
    s, t = torch.randn(6, 10), torch.randn(6, 10)
    T = 4.0
    p, q = F.softmax(t / T, 1), F.softmax(s / T, 1)
    manual = (p * (p.log() - q.log())).sum(1) * T * T
    assert torch.allclose(kl_div_t(s, t, T, "none"), manual, atol=1e-5)
    assert torch.allclose(kl_div_t(s, t, T, "batchmean"), manual.mean(), atol=1e-5)
    assert kl_div_t(t, t, 2.0).abs().item() < 1e-6
    with pytest.raises(ValueError):
        kl_div_t(s, t, 1.0, "mean")


def test_adversarial_loss_mask_and_no_mask():
    torch.manual_seed(0)
    t = torch.randn(8, 10)
    s = torch.randn(8, 10)
    s[:4] = t[:4] + 0.01 * torch.randn(4, 10)  # first half agrees with the teacher
    kl = kl_div_t(s, t, 1.0, "none")
    disagree = (s.argmax(1) != t.argmax(1)).float()
    assert disagree[:4].sum() == 0 and disagree.sum() > 0
    assert torch.allclose(adversarial_loss(s, t, T=1, mask=True), -(kl * disagree).mean())
    kl3 = kl_div_t(s, t, 3.0, "none")
    assert torch.allclose(adversarial_loss(s, t, T=3, mask=False), -kl3.mean())
    s.requires_grad_(True)
    (g,) = torch.autograd.grad(adversarial_loss(s, t), s)
    assert g[:4].abs().sum() == 0 and g[4:].abs().sum() > 0


def test_hard_sample_ce():
    torch.manual_seed(0)
    logits = torch.randn(8, 10, requires_grad=True)
    y = torch.randint(0, 10, (8,))
    assert torch.allclose(hard_sample_ce(logits, y, hs=0.0), F.cross_entropy(logits, y))
    p = F.softmax(logits.detach(), 1)[torch.arange(8), y]
    w = (1 - p) ** 2.0
    manual = (w * F.cross_entropy(logits, y, reduction="none")).mean()
    loss = hard_sample_ce(logits, y, hs=2.0)
    assert torch.allclose(loss, manual)
    (g1,) = torch.autograd.grad(loss, logits)
    (g2,) = torch.autograd.grad(manual, logits)  # weights are constants: p is detached
    assert torch.allclose(g1, g2, atol=1e-7)


# ---------------------------------------------------------------- ensembles
@pytest.mark.parametrize("name,shape", [("cnn2", (3, 32, 32)), ("lenet5", (1, 28, 28))])
def test_batched_ensemble_matches_loop_and_passes_input_gradients(name, shape):
    models = _clients(name, shape)
    batched, looped = BatchedEnsemble(models), BatchedEnsemble(models, batched=False)
    assert batched.num_batched_calls == 1 and looped.num_batched_calls == 5
    x = torch.rand(12, *shape)
    ref = torch.stack([m(x) for m in models]).detach()

    xb = x.clone().requires_grad_(True)
    zb, bnb = batched.forward_with_bn(xb)
    xl = x.clone().requires_grad_(True)
    zl, bnl = looped.forward_with_bn(xl)
    assert zb.shape == (5, 12, 10)
    assert torch.allclose(zb, ref, atol=1e-5) and torch.allclose(zl, ref, atol=1e-5)
    assert torch.allclose(batched(x), ref, atol=1e-5)
    assert torch.allclose(bnb, bnl, atol=1e-4)
    if name == "cnn2":
        assert (bnb > 0).all()
        with BNStatHooks(models) as hooks:
            for mdl in models:
                mdl(x)
            assert torch.allclose(bnb, hooks.per_model(), atol=1e-4)
    else:
        assert (bnb == 0).all()

    objective = lambda z, bn: (z * torch.linspace(-1, 1, 10)).sum() + bn.sum()  # noqa: E731
    (gb,) = torch.autograd.grad(objective(zb, bnb), xb)
    (gl,) = torch.autograd.grad(objective(zl, bnl), xl)
    assert gb.abs().sum() > 0
    assert torch.allclose(gb, gl, atol=1e-5, rtol=1e-4)
    assert all(p.grad is None for m in models for p in m.parameters())  # teachers get no gradients


@pytest.mark.parametrize("batched", [True, False])
def test_collecting_bn_statistics_leaves_logits_and_input_gradients_bit_identical(batched):
    """A method whose BN weight is 0 may call ``forward`` in place of ``forward_with_bn`` (DENSE's bn = 0, FedHydra's
    λ1 = 0, Co-Boosting): the statistics are only read, so the logits and the gradient of a loss without the BN term
    are the same bits either way (the runs recorded before DENSE skipped them stay current)."""
    models = _clients("cnn2", (1, 28, 28))
    ens = BatchedEnsemble(models, batched=batched)
    y = torch.arange(12) % 10
    x = torch.rand(12, 1, 28, 28)
    outs = []
    for with_bn in (True, False):
        xi = x.clone().requires_grad_(True)
        z = ens.forward_with_bn(xi)[0] if with_bn else ens(xi)
        (g,) = torch.autograd.grad(F.cross_entropy(ens.combine(z), y), xi)
        outs.append((z.detach(), g))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


def test_batched_ensemble_runs_under_bf16_autocast_like_the_loop():
    """Autocast does not reach through vmap: the batched path casts weights and input as autocast would, so a
    bf16 server (runtime.precision: bf16) runs and agrees with the looped path to bf16 precision."""
    models = _clients("cnn2", (3, 32, 32))
    x = torch.rand(8, 3, 32, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        zb, bnb = BatchedEnsemble(models).forward_with_bn(x)
        zl, bnl = BatchedEnsemble(models, batched=False).forward_with_bn(x)
    assert zb.dtype == torch.bfloat16
    assert torch.allclose(zb.float(), zl.float(), atol=0.1, rtol=0.05)
    assert torch.allclose(bnb.float(), bnl.float(), rtol=0.05)


def test_batched_ensemble_weights_combine():
    models = _clients("lenet5", (1, 28, 28))
    x = torch.rand(6, 1, 28, 28)
    w = [0.1, 0.5, 0.0, 2.0, 1.4]
    ens = BatchedEnsemble(models, weights=w)
    z = ens(x)
    manual = sum(wk * z[k] for k, wk in enumerate(w)) / sum(w)
    assert torch.allclose(ens.combine(z), manual, atol=1e-6)
    assert torch.allclose(ens.predict(x), manual, atol=1e-6)
    assert torch.allclose(BatchedEnsemble(models).predict(x), z.mean(0), atol=1e-6)
    wt = torch.tensor(w, requires_grad=True)  # Co-Boosting's re-weighting needs d(loss)/d(w)
    loss = F.cross_entropy(ens.combine(z, wt), torch.zeros(6, dtype=torch.long))
    (gw,) = torch.autograd.grad(loss, wt)
    assert torch.isfinite(gw).all() and gw.abs().sum() > 0


def test_batched_ensemble_groups_mixed_architectures():
    torch.manual_seed(1)
    names = ["cnn2", "lenet5", "cnn2", "lenet5_avg", "lenet5"]
    models = [build_model(n, (1, 28, 28), 10).eval() for n in names]
    hooks = BNStatHooks(models[0])  # a caller's hook on models[0] must not leak into the vmapped copy
    ens = BatchedEnsemble(models)
    assert ens.num_batched_calls == 3  # {cnn2 ×2}, {lenet5 ×2}, {lenet5_avg} (avg ≠ max pooling)
    x = torch.rand(5, 1, 28, 28)
    z, bn = ens.forward_with_bn(x)
    assert torch.allclose(z, torch.stack([m(x) for m in models]), atol=1e-5)
    assert bn[0] > 0 and bn[2] > 0 and (bn[[1, 3, 4]] == 0).all()
    hooks.remove()
    with torch.no_grad():  # refresh() picks up parameter changes
        models[2].classifier.bias.add_(1.0)
    assert not torch.allclose(ens(x)[2], models[2](x))
    ens.refresh()
    assert torch.allclose(ens(x)[2], models[2](x), atol=1e-5)


# ---------------------------------------------------------------- stratified aggregation (FedHydra §1.5)
def test_stratified_aggregate_matches_closed_form_loop():
    torch.manual_seed(0)
    m, b, c = 4, 7, 5
    P = torch.randn(m, b, c)
    y = torch.randint(0, c, (b,))
    U = torch.rand(c, m) + 0.1
    U_r = U / U.sum(1, keepdim=True)  # Eqs. 4-5: rows over clients sum to 1
    U_c = U / U.sum(0, keepdim=True)  # Eqs. 6-7: columns over classes sum to 1
    out = stratified_aggregate(P, y, U_r, U_c)
    ref = torch.zeros(b, c)
    for i in range(b):
        for j in range(c):
            for k in range(m):
                ref[i, j] += U_r[y[i], k] * U_c[j, k] * P[k, i, j]
    assert torch.allclose(out, ref, atol=1e-6)
    with pytest.raises(ValueError):
        stratified_aggregate(P, y, U_r.t(), U_c)


def test_stratified_aggregate_uniform_weights_is_average_ensemble_over_c():
    torch.manual_seed(0)
    m, b, c = 5, 9, 10
    P = torch.randn(m, b, c)
    y = torch.randint(0, c, (b,))
    U = torch.full((c, m), 0.37)  # all guidance scores equal
    U_r = U / U.sum(1, keepdim=True)  # = 1/m
    U_c = U / U.sum(0, keepdim=True)  # = 1/c
    assert torch.allclose(U_r, torch.full((c, m), 1 / m)) and torch.allclose(U_c, torch.full((c, m), 1 / c))
    # SPEC §1.5: "If all u are equal, SA = (1/c)·AE", AE = (1/m) Σ_k P_k
    assert torch.allclose(stratified_aggregate(P, y, U_r, U_c), P.mean(0) / c, atol=1e-6)


# ---------------------------------------------------------------- synthetic pool
def test_synthetic_pool_quantises_keeps_history_and_batches():
    torch.manual_seed(0)
    pool = SyntheticPool()
    xs = [torch.rand(10, 3, 8, 8) for _ in range(3)]
    for x in xs:
        pool.add(x)
    assert len(pool) == 30 and not pool.labeled
    u8, labels = pool.tensors()
    assert u8.dtype == torch.uint8 and labels is None
    allx = torch.cat(xs)
    assert (u8.float() / 255 - allx).abs().max() <= 0.5 / 255 + 1e-6
    out = list(pool.batches(8, torch.Generator().manual_seed(1)))
    assert [o[0].shape[0] for o in out] == [8, 8, 8, 6] and all(o[1] is None for o in out)
    got = torch.cat([o[0] for o in out])
    assert got.dtype == torch.float32 and got.min() >= 0 and got.max() <= 1
    key = lambda t: sorted(map(tuple, t.flatten(1).mul(255).round().long().tolist()))  # noqa: E731
    assert key(got) == key(u8.float() / 255)  # every item exactly once
    again = torch.cat([o[0] for o in pool.batches(8, torch.Generator().manual_seed(1))])
    assert torch.equal(got, again)
    ordered = torch.cat([o[0] for o in pool.batches(8, shuffle=False)])
    assert torch.equal(ordered, u8.float() / 255)
    assert [o[0].shape[0] for o in pool.batches(8, shuffle=False, drop_last=True)] == [8, 8, 8]
    with pytest.raises(ValueError):
        pool.add(torch.rand(2, 3, 8, 8), torch.zeros(2, dtype=torch.long))


def test_synthetic_pool_labels_and_max_items():
    pool = SyntheticPool(max_items=5)
    for v in range(3):
        pool.add(torch.full((3, 1, 4, 4), v / 10), torch.full((3,), v))
    assert len(pool) == 5 and pool.labeled
    x, y = pool.tensors()
    assert y.tolist() == [1, 1, 2, 2, 2]  # oldest dropped first
    for xb, yb in pool.batches(2, torch.Generator().manual_seed(0)):
        assert yb.dtype == torch.long
        assert torch.allclose(xb.flatten(1).mean(1), yb.float() / 10, atol=1 / 255)


def test_class_weighted_combine_and_class_centre_loss():
    """OFedED's pieces (SPEC §2.4): K×C weights make logit c a w_{·,c}-weighted mean of the members' logit c (a
    (K,) weight vector is the same as every column equal); the class-centre loss is a share of distances, 0 at the
    own centre, 1 when only that class has a centre, and leaves out labels without one."""
    from osfl.distill import BatchedEnsemble, class_centre_loss, sign_reweight

    g = torch.Generator().manual_seed(0)
    per_client = torch.randn(3, 4, 5, generator=g)  # (K, B, C)
    ens = BatchedEnsemble([torch.nn.Identity()])  # combine() only reads its arguments
    w = torch.rand(3, generator=g)
    assert torch.allclose(ens.combine(per_client, w[:, None].expand(3, 5)), ens.combine(per_client, w), atol=1e-6)
    W = torch.zeros(3, 5)
    W[1] = 1.0  # every class from client 1 only
    assert torch.equal(ens.combine(per_client, W), per_client[1])
    W = torch.ones(3, 5)
    W[0, 2] = 0.0  # class 2 ignores client 0
    out = ens.combine(per_client, W)
    assert torch.allclose(out[:, 2], per_client[1:, :, 2].mean(0)) and torch.allclose(out[:, 0], per_client[:, :, 0].mean(0))

    centres = torch.eye(5) * 3.0
    y = torch.tensor([0, 1, 4])
    assert class_centre_loss(centres[y], y, centres) == 0.0  # every image at its own class's centre
    x = torch.randn(3, 5, generator=g, requires_grad=True)
    loss = class_centre_loss(x, y, centres)
    d = ((x[:, None] - centres[None]) ** 2).sum(-1)
    assert torch.allclose(loss, (d[torch.arange(3), y] / d.sum(1)).mean())
    loss.backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    only = torch.tensor([True, False, False, False, False])
    assert torch.allclose(class_centre_loss(x.detach(), y, centres, only), torch.tensor(1.0))  # label 0 only: 1/1
    assert class_centre_loss(x.detach()[1:], y[1:], centres, only) == 0.0  # no label with a centre

    W0 = torch.full((3, 5), 1 / 3)
    W1 = sign_reweight(W0, W0, torch.randn(3, 5, generator=g), 0.5)
    assert W1.shape == (3, 5) and W1.min() >= 0 and W1.max() <= 1 and not torch.equal(W1, W0)
