"""OT fusion: permuted copies of one model fuse back to that model; plain averaging does not."""
import pytest
import torch
import torch.nn as nn

from osfl.clients.upload import read_uploads, write_upload
from osfl.config import get_profile
from osfl.errors import ConfigError
from osfl.methods import METHODS
from osfl.methods.base import ServerContext
from osfl.methods.base import average_state_dicts
from osfl.methods.ot import (
    NotSequentialError, align_to_anchor, check_sequential, discover_layers, fuse, sequential_layers,
)
from osfl.models import build_model

# Hand-written layer lists (module path, BatchNorm path) used to permute models independently of the code
# under test; discover_layers must find the same chain.
CHAINS = {
    "cnn2": [("features.0", "features.1"), ("features.4", "features.5"), ("classifier", None)],
    "lenet5": [("features.0", None), ("features.3", None), ("classifier.0", None), ("classifier.2", None),
               ("classifier.4", None)],
    "cnn3": [("features.0", None), ("features.3", None), ("features.6", None), ("classifier", None)],
}
SHAPES = {"cnn2": (1, 28, 28), "lenet5": (1, 28, 28), "cnn3": (3, 32, 32)}


def make_model(arch, seed=0):
    torch.manual_seed(seed)
    m = build_model(arch, SHAPES[arch], 10)
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):  # non-trivial affine parameters
                mod.weight.copy_(torch.rand(mod.num_features, generator=g) + 0.5)
                mod.bias.copy_(torch.randn(mod.num_features, generator=g) * 0.5)
        m.train()
        for _ in range(3):  # non-trivial running statistics
            m(torch.randn(8, *SHAPES[arch], generator=g) * 2 + 0.5)
    return m.eval()


def permuted_copy(model, arch, seed):
    """A copy of ``model`` with every hidden layer's units randomly permuted (conv channels with their BN)."""
    g = torch.Generator().manual_seed(seed)
    new = build_model(arch, SHAPES[arch], 10)
    new.load_state_dict(model.state_dict())
    mods = dict(new.named_modules())
    chain = CHAINS[arch]
    with torch.no_grad():
        prev = None  # (permutation, previous module)
        for i, (name, bn) in enumerate(chain):
            layer = mods[name]
            if prev is not None:
                p, pm = prev
                w = layer.weight
                if isinstance(layer, nn.Linear) and isinstance(pm, nn.Conv2d):
                    blocks = w.view(w.shape[0], pm.out_channels, -1)
                    w.copy_(blocks[:, p].reshape(w.shape))
                else:
                    w.copy_(w[:, p])
            if i == len(chain) - 1:
                break
            n = layer.weight.shape[0]
            p = torch.randperm(n, generator=g)
            assert not torch.equal(p, torch.arange(n))
            layer.weight.copy_(layer.weight[p])
            layer.bias.copy_(layer.bias[p])
            if bn is not None:
                b = mods[bn]
                for t in (b.weight, b.bias, b.running_mean, b.running_var):
                    t.copy_(t[p])
            prev = (p, layer)
    return new.eval()


def outputs(model, arch, seed=7):
    x = torch.randn(6, *SHAPES[arch], generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        return model.eval()(x)


def load(arch, state):
    m = build_model(arch, SHAPES[arch], 10)
    m.load_state_dict(state)
    return m.eval()


@pytest.mark.parametrize("arch", ["cnn2", "lenet5", "cnn3"])
def test_fusing_permuted_copy_recovers_the_model(arch):
    a = make_model(arch)
    b = permuted_copy(a, arch, seed=1)
    ya = outputs(a, arch)
    assert torch.allclose(outputs(b, arch), ya, atol=1e-5)  # the permutation preserves the function
    assert any(not torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())

    layers = sequential_layers(arch, SHAPES[arch], 10)
    found = [(l.name, l.bn) for l in layers]
    assert found == CHAINS[arch]
    for anchor in (0, 1):
        fused = load(arch, fuse([a.state_dict(), b.state_dict()], [1.0, 3.0], layers, anchor=anchor))
        assert torch.allclose(outputs(fused, arch), ya, atol=1e-4)
    # the aligned copy is A itself, BN running statistics included
    aligned = align_to_anchor(b.state_dict(), a.state_dict(), layers)
    for k, v in a.state_dict().items():
        assert torch.allclose(aligned[k].float(), v.float(), atol=1e-6), k

    plain = load(arch, average_state_dicts([a.state_dict(), b.state_dict()], [1.0, 3.0]))
    assert (outputs(plain, arch) - ya).abs().max() > 1e-2


@pytest.mark.parametrize("arch", ["cnn2", "lenet5"])
def test_aligning_to_itself_is_identity(arch):
    a = make_model(arch, seed=3)
    layers = sequential_layers(arch, SHAPES[arch], 10)
    s = a.state_dict()
    aligned = align_to_anchor(s, s, layers)
    assert aligned.keys() == s.keys()
    for k in s:
        assert torch.equal(aligned[k], s[k]), k


def test_three_clients_fuse_to_the_anchor_function():
    arch = "cnn2"
    a = make_model(arch, seed=5)
    b, c = permuted_copy(a, arch, seed=11), permuted_copy(a, arch, seed=12)
    assert not torch.equal(b.state_dict()["features.0.weight"], c.state_dict()["features.0.weight"])
    layers = sequential_layers(arch, SHAPES[arch], 10)
    fused = load(arch, fuse([a.state_dict(), b.state_dict(), c.state_dict()], [1.0, 2.0, 3.0], layers, anchor=2))
    assert torch.allclose(outputs(fused, arch), outputs(a, arch), atol=1e-4)


def test_resnet18_is_refused_with_one_line():
    with pytest.raises(ConfigError) as e:
        sequential_layers("resnet18", (3, 32, 32), 10)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == ("methods: ot supports sequential CNN/MLP architectures "
                   "(cnn2, cnn3, cnn3_bn, lenet5, lenet5_avg), not resnet18")
    # the structural check alone already finds the projection shortcut (the functional check is a second guard)
    with pytest.raises(NotSequentialError, match=r"^layer2\.0\.shortcut\.0: takes 64 inputs but layer2\.0\.conv2 gives"):
        discover_layers(build_model("resnet18", (3, 32, 32), 10))


@pytest.mark.parametrize("arch,shape", [("cnn3_bn", (3, 32, 32)), ("lenet5_avg", (1, 28, 28))])
def test_other_sequential_archs_are_accepted(arch, shape):
    layers = sequential_layers(arch, shape, 10)
    assert layers[-1].name == "classifier" or layers[-1].name.startswith("classifier.")
    assert (arch == "cnn3_bn") == all(l.bn is not None for l in layers[:-1])


class ResidualMLP(nn.Module):
    """Passes the shape checks (all widths 8) but is not a chain: the functional check must catch it."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.out(h + torch.relu(self.fc2(h)))


class PlainMLP(ResidualMLP):
    def forward(self, x):
        return self.out(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def test_functional_check_rejects_skip_connections():
    torch.manual_seed(0)
    plain = PlainMLP()
    check_sequential(plain, discover_layers(plain), (8,))
    res = ResidualMLP()
    layers = discover_layers(res)
    assert [l.name for l in layers] == ["fc1", "fc2", "out"]
    with pytest.raises(NotSequentialError, match="changes the outputs"):
        check_sequential(res, layers, (8,))


def make_ctx(tmp_path, arch="cnn2", states=None, sizes=(10, 30, 20)):
    for k, n in enumerate(sizes):
        write_upload(tmp_path, k, "classifier",
                     {"arch": arch, "input_shape": list(SHAPES.get(arch, (3, 32, 32))), "num_classes": 10,
                      "n_samples": n, "label_histogram": [n] + [0] * 9},
                     tensors={"state_dict": states[k]} if states else None)
    ups = read_uploads(tmp_path)
    shape = SHAPES.get(arch, (3, 32, 32))
    x = torch.randint(0, 255, (8, *shape), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    return ServerContext(uploads=ups, model_name=arch, input_shape=shape, num_classes=10, x_test=x,
                         y_test=torch.zeros(8, dtype=torch.long), device=torch.device("cpu"), seed=0,
                         profile=get_profile("smoke"), progress=False)


def test_method_through_server_context(tmp_path):
    a = make_model("cnn2", seed=9)
    states = [permuted_copy(a, "cnn2", seed=s).state_dict() for s in (21, 22)]
    states.insert(1, a.state_dict())
    ctx = make_ctx(tmp_path, states=states)
    res = METHODS.get("ot")().run(ctx)
    assert res.kind == "classifier" and not res.model.training
    assert res.choices == {"anchor": "largest", "weighting": "samples", "anchor_client": 1,
                           "ground_metric": "euclidean", "solver": "exact assignment (scipy linear_sum_assignment)",
                           "skip_last_layer": True, "alignment": "weights"}
    assert torch.allclose(outputs(res.model, "cnn2"), outputs(a, "cnn2"), atol=1e-4)
    # the permuted copies' units were moved (nearly all of them), and the record says how many
    assert set(res.extras["units_moved_share"]) == {"0", "2"} and min(res.extras["units_moved_share"].values()) > 0.5
    # the largest client is the anchor: its parameters come back exactly in its own order
    assert torch.allclose(res.model.state_dict()["features.0.weight"], a.state_dict()["features.0.weight"], atol=1e-6)
    res_first = METHODS.get("ot")(anchor="first", weighting="uniform").run(ctx)
    assert res_first.choices["anchor_client"] == 0
    assert torch.allclose(res_first.model.state_dict()["features.0.weight"], states[0]["features.0.weight"], atol=1e-6)
    assert torch.allclose(outputs(res_first.model, "cnn2"), outputs(a, "cnn2"), atol=1e-4)
    with pytest.raises(ConfigError, match=r"^server.ot.anchor: unknown value"):
        METHODS.get("ot")(anchor="median")


def test_clients_from_one_initial_model_keep_its_order_and_ot_is_their_average(tmp_path):
    """Clients that moved little from a shared initial model (FedHydra's runs: DENSE's code trains every client
    from one) are aligned by the identity: nothing moves, and OT fusion is their weighted average (FedAvg)."""
    a = make_model("cnn2", seed=9)
    gen = torch.Generator().manual_seed(3)
    states = [{k: v + 1e-3 * torch.randn(v.shape, generator=gen) if v.is_floating_point() else v
               for k, v in a.state_dict().items()} for _ in range(3)]
    res = METHODS.get("ot")().run(make_ctx(tmp_path, states=states))
    assert set(res.extras["units_moved_share"].values()) == {0.0}
    avg = METHODS.get("fedavg")().run(make_ctx(tmp_path / "avg", states=states))
    for k, v in avg.model.state_dict().items():
        assert torch.allclose(res.model.state_dict()[k].float(), v.float(), atol=1e-6), k


def test_method_refuses_resnet18_and_mixed_archs(tmp_path):
    ctx = make_ctx(tmp_path / "r", arch="resnet18")  # no payloads: the check comes before any state is read
    with pytest.raises(ConfigError, match=r"^methods: ot supports sequential .*not resnet18$"):
        METHODS.get("ot")().run(ctx)
    ctx = make_ctx(tmp_path / "c", arch="cnn2")
    ctx.model_name = "lenet5"
    with pytest.raises(ConfigError, match="one architecture"):
        METHODS.get("ot")().run(ctx)
