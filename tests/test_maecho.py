"""MA-Echo: the clients' projection matrices (osfl.clients.projections) and the server's aggregation
(osfl.methods.maecho)."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from osfl.clients.projections import layer_projections
from osfl.clients.upload import read_uploads, write_upload
from osfl.config import get_profile
from osfl.errors import ConfigError
from osfl.methods import METHODS
from osfl.methods.base import ServerContext, average_state_dicts
from osfl.methods.maecho import echo_layer
from osfl.models import build_model
from test_server_methods import SHAPE, make_ctx


def _linear(d_in, d_out, seed, bias=False):
    m = nn.Linear(d_in, d_out, bias=bias)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        m.weight.copy_(torch.randn(d_out, d_in, generator=g))
        if bias:
            m.bias.copy_(torch.randn(d_out, generator=g))
    return m


# ---------------------------------------------------------------------------------------------------------
# the property MA-Echo is built for


def test_echo_keeps_each_clients_outputs_on_its_own_inputs_better_than_fedavg():
    """Two one-layer clients (Linear 8 -> 4, no bias) whose inputs lie in orthogonal 3-dim subspaces: after the
    echo iterations the aggregated layer reproduces each client's outputs on held-out inputs of that client's
    subspace far better than the plain average (FedAvg, = 0 iterations)."""
    g = torch.Generator().manual_seed(0)
    d = 8
    U = torch.linalg.qr(torch.randn(d, d, generator=g))[0]
    subspaces = [U[:, :3], U[:, 3:6]]
    clients = [_linear(d, 4, seed=k + 1) for k in range(2)]
    projs = [layer_projections(m, torch.rand(256, 3, generator=g) @ S.T, batch_size=4, skip_output=False)[""]
             for m, S in zip(clients, subspaces)]
    W = [m.weight.detach() for m in clients]

    def errors(G):
        out = []
        for S, w in zip(subspaces, W):
            x = (torch.rand(200, 3, generator=torch.Generator().manual_seed(9)) @ S.T).double()
            out.append(((x @ G.T - x @ w.double().T).norm() / (x @ w.double().T).norm()).item())
        return out

    fedavg = errors(echo_layer(W, projs, [1.0, 1.0], iterations=0, step=1.6))
    maecho = errors(echo_layer(W, projs, [1.0, 1.0], iterations=50, step=1.6))
    assert torch.allclose(echo_layer(W, projs, [1.0, 1.0], iterations=0, step=1.6), (W[0] + W[1]).double() / 2)
    for e_avg, e_echo in zip(fedavg, maecho):
        assert e_avg > 0.3  # the average is far from each client on its own inputs
        assert e_echo < 0.1 * e_avg, (fedavg, maecho)


# ---------------------------------------------------------------------------------------------------------
# the clients' projections


def test_linear_projection_is_the_null_space_projector_of_the_inputs():
    X = torch.tensor([[1.0, 2.0, 0.0, -1.0, 0.5], [0.0, 1.0, 1.0, 0.0, -2.0], [3.0, 0.0, 1.0, 1.0, 1.0]])
    m = _linear(5, 2, seed=0)
    # c = 1, batch 1: exact Sherman-Morrison, P = a (a I + X^T X)^-1 = I - X^T (X X^T + a I)^-1 X
    a = 0.5
    P = layer_projections(m, X, batch_size=1, c=1.0, alpha_linear=a, skip_output=False)[""].double()
    Xd = X.double()
    assert torch.allclose(P, a * torch.linalg.inv(a * torch.eye(5, dtype=torch.float64) + Xd.T @ Xd), atol=1e-6)
    # alpha -> 0: the orthogonal projector onto the null space of the rows
    P = layer_projections(m, X, batch_size=1, c=1.0, alpha_linear=1e-9, skip_output=False)[""].double()
    assert torch.allclose(P, P.T, atol=1e-5) and torch.allclose(P @ P, P, atol=1e-4)
    assert (P @ Xd.T).abs().max() < 1e-4 and abs(P.trace().item() - 2.0) < 1e-3
    # the official c = 0.5: symmetric, eigenvalues in (0, 1], 1 on the orthogonal complement of the rows
    P = layer_projections(m, X, batch_size=1, skip_output=False)[""].double()
    ev = torch.linalg.eigvalsh((P + P.T) / 2)
    assert torch.allclose(P, P.T, atol=1e-6) and ev.min() > 0 and ev.max() < 1 + 1e-6
    null = torch.linalg.svd(Xd, full_matrices=True).Vh[3:].T  # (5, 2)
    assert torch.allclose(P @ null, null, atol=1e-5)
    assert ((P @ Xd.T).norm(dim=0) < 0.8 * Xd.norm(dim=1)).all()
    # batch means, not samples: one batch of the three rows is the rank-1 update with their mean
    P1 = layer_projections(m, X, batch_size=3, c=1.0, alpha_linear=1e-9, skip_output=False)[""].double()
    mean = Xd.mean(0, keepdim=True)
    assert (P1 @ mean.T).abs().max() < 1e-4 and abs(P1.trace().item() - 4.0) < 1e-3


def test_conv_projection_acts_on_unfolded_patches_with_augmented_bias():
    """A conv is W·patch + b on the (C_in, k_h, k_w)-flattened patches of the batch-mean input, taken at stride
    2 without padding (official createp); the bias makes P (d+1) x (d+1) on the input (patch, 1)."""
    torch.manual_seed(0)
    conv = nn.Conv2d(2, 3, 3, padding=1)
    x = torch.rand(6, 2, 5, 5, generator=torch.Generator().manual_seed(1))
    P = layer_projections(conv, x, batch_size=6, c=1.0, alpha_conv=1e-10, skip_output=False)[""].double()
    assert P.shape == (19, 19)
    mean = x.mean(0).double()
    rows = [torch.cat([mean[:, i:i + 3, j:j + 3].reshape(-1), torch.ones(1, dtype=torch.float64)])
            for i in (0, 2) for j in (0, 2)]
    R = torch.stack(rows)  # (4 patches, 19)
    assert (P @ R.T).abs().max() < 1e-4 and abs(P.trace().item() - 15.0) < 1e-3
    assert torch.allclose(P @ P, P, atol=1e-4) and torch.allclose(P, P.T, atol=1e-5)
    Wb = torch.cat([conv.weight.detach().reshape(3, -1), conv.bias.detach()[:, None]], 1).double()
    out = F.conv2d(mean[None], conv.weight.double(), conv.bias.double())[0]  # valid conv of the mean input
    assert torch.allclose(Wb @ R.T, torch.stack([out[:, i, j] for i in (0, 2) for j in (0, 2)], 1), atol=1e-6)


def test_projections_skip_the_output_layer_and_are_deterministic():
    model = build_model("cnn2", SHAPE, 10)
    x = torch.rand(20, *SHAPE, generator=torch.Generator().manual_seed(0))
    model.train()
    P = layer_projections(model, x, batch_size=8, generator=torch.Generator().manual_seed(3))
    assert model.training  # mode restored
    assert list(P) == ["features.0", "features.4"]  # classifier (the output layer) has none
    assert P["features.0"].shape == (26, 26) and P["features.4"].shape == (401, 401)
    Q = layer_projections(model, x, batch_size=8, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(P[k], Q[k]) for k in P)


# ---------------------------------------------------------------------------------------------------------
# the server method


def _ctx_with_projections(tmp_path, arch="cnn2", sizes=(30, 20, 25)):
    hists = [[15, 15, 0, 0, 0, 0, 0, 0, 0, 0], [0, 1, 10, 9, 0, 0, 0, 0, 0, 0], [5, 0, 0, 0, 20, 0, 0, 0, 0, 0]]
    for k, n in enumerate(sizes):
        torch.manual_seed(10 + k)
        model = build_model(arch, SHAPE, 10)
        x = torch.rand(n, *SHAPE, generator=torch.Generator().manual_seed(20 + k))
        write_upload(tmp_path, k, "classifier",
                     {"arch": arch, "input_shape": list(SHAPE), "num_classes": 10, "n_samples": n,
                      "label_histogram": hists[k]},
                     tensors={"state_dict": model.state_dict(), "projections": layer_projections(model, x)})
    g = torch.Generator().manual_seed(1)
    x_test = torch.randint(0, 255, (64, *SHAPE), dtype=torch.uint8, generator=g)
    y_test = torch.randint(0, 10, (64,), generator=g)
    return ServerContext(uploads=read_uploads(tmp_path), model_name=arch, input_shape=SHAPE, num_classes=10,
                         x_test=x_test, y_test=y_test, device=torch.device("cpu"), seed=0,
                         profile=get_profile("smoke"), progress=False, dataset="digits")


def test_maecho_end_to_end_on_three_cnn2_clients(tmp_path):
    ctx = _ctx_with_projections(tmp_path)
    states = [u.state_dict() for u in ctx.uploads]
    res = METHODS.get("maecho")().run(ctx)
    assert res.kind == "classifier" and not res.curve
    assert 0.0 <= ctx.evaluate(res.model) <= 100.0
    assert res.choices["iterations"] == 50 and res.choices["step"] == 1.6
    assert res.choices["projected_layers"] == ["features.0", "features.4"]
    assert res.choices["output_layer"] == "classifier"
    sd = res.model.state_dict()
    avg = average_state_dicts(states, [1.0, 1.0, 1.0])
    assert not torch.allclose(sd["features.4.weight"], avg["features.4.weight"])  # the echo moved the convs
    assert torch.allclose(sd["features.1.running_var"], avg["features.1.running_var"])  # BN: plain average
    W = sd["classifier.weight"]
    assert torch.allclose(W[1], states[0]["classifier.weight"][1])  # class 1: only client 0 has > 1 sample
    assert torch.allclose(W[0], (states[0]["classifier.weight"][0] + states[2]["classifier.weight"][0]) / 2)
    assert torch.all(W[5:] == 0) and torch.all(sd["classifier.bias"][5:] == 0)  # classes no client holds
    # 0 iterations, plain last layer, n_k weights: exactly FedAvg
    fedavg = METHODS.get("fedavg")().run(ctx).model.state_dict()
    plain = METHODS.get("maecho")(iterations=0, last_layer="average", weighting="samples").run(ctx)
    for key, t in plain.model.state_dict().items():
        assert torch.allclose(t, fedavg[key], atol=1e-6), key


def test_maecho_without_projections_fails_early(tmp_path):
    ctx = make_ctx(tmp_path)
    with pytest.raises(ConfigError, match=r"server\.maecho.*clients must compute projections"):
        METHODS.get("maecho")().run(ctx)
    with pytest.raises(ConfigError, match="server.maecho.last_layer"):
        METHODS.get("maecho")(last_layer="last")
