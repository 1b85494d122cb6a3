"""Parameter counts against the papers and reference code (the Flower-baselines check)."""
import pytest
import torch

from osfl.errors import ConfigError
from osfl.models import MODELS, build_model, count_parameters, resolve_model_name
from osfl.models.cvae import CVAE

# (model, input shape, classes, expected count, source)
PAPER_COUNTS = [
    ("cnn2", (1, 28, 28), 10, 29_034, "DENSE CNNMnist (ANCHORS §1)"),
    ("cnn3", (3, 32, 32), 10, 319_242, "DENSE CNNCifar (ANCHORS §1)"),
    ("lenet5", (1, 28, 28), 10, 44_426, "HFLDD MNIST model / NIID-Bench SimpleCNNMNIST"),
    ("lenet5", (3, 32, 32), 10, 62_006, "NIID-Bench SimpleCNN"),
    ("lenet5_avg", (3, 32, 32), 10, 62_006, "FedHydra M5 LeNet (SPEC §3.4)"),
    ("resnet18", (3, 32, 32), 10, 11_173_962, "CIFAR ResNet-18 (OFedED SPEC: about 11.17M)"),
]


@pytest.mark.parametrize("name,shape,k,expected,source", PAPER_COUNTS)
def test_parameter_count_matches_reference(name, shape, k, expected, source):
    assert count_parameters(build_model(name, shape, k)) == expected, source


@pytest.mark.parametrize("name", MODELS.names())
def test_every_model_runs_forward_and_backward(name):
    spec = MODELS.get(name)
    shape = spec.shapes[0] if spec.shapes else (3, 32, 32)
    m = build_model(name, shape, 7)
    if isinstance(m, CVAE):  # a conditional generator: reconstructs its input given the label
        out, mu, logvar = m(torch.rand(3, *shape), torch.tensor([0, 3, 6]))
        assert out.shape == (3, *shape) and mu.shape == logvar.shape == (3, m.latent_size)
        out = out.sum() + mu.sum() + logvar.sum()
    else:
        out = m(torch.rand(3, *shape))
        assert out.shape == (3, 7)
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_auto_resolves_paper_defaults():
    assert resolve_model_name("auto", (1, 28, 28)) == "cnn2"
    assert resolve_model_name("auto", (3, 32, 32)) == "cnn3"


def test_bad_model_names_fail_with_one_line():
    with pytest.raises(ConfigError, match=r"^model: unknown model 'vgg99'; allowed: .*cnn2"):
        resolve_model_name("vgg99", (1, 28, 28))
    with pytest.raises(ConfigError, match=r"^model: 'cnn3_bn' takes inputs"):
        resolve_model_name("cnn3_bn", (1, 28, 28))
    assert resolve_model_name("cnn3", (1, 28, 28)) == "cnn3"  # OFedED's CNN on Fashion-MNIST, not resized


# --- FedHydra heterogeneous clients M1 (googlenet), M3 (cnn_m3), M4 (cnn_m4); SPEC §3.4 ------------------------
# Expected counts are computed by hand from the layer sizes, independently of the model code.

def _conv(cin, cout, k):  # weights + bias
    return cin * cout * k * k + cout


def _bn(c):  # affine weight + bias (running stats are buffers)
    return 2 * c


def _fc(fin, fout):
    return fin * fout + fout


def _googlenet_count(in_channels, k):
    # (in, n1x1, n3x3red, n3x3, n5x5red, n5x5, pool) for a3, b3, a4..e4, a5, b5 (GoogLeNet paper, Table 1)
    cfg = [(192, 64, 96, 128, 16, 32, 32), (256, 128, 128, 192, 32, 96, 64),
           (480, 192, 96, 208, 16, 48, 64), (512, 160, 112, 224, 24, 64, 64), (512, 128, 128, 256, 24, 64, 64),
           (512, 112, 144, 288, 32, 64, 64), (528, 256, 160, 320, 32, 128, 128),
           (832, 256, 160, 320, 32, 128, 128), (832, 384, 192, 384, 48, 128, 128)]
    cbr = lambda cin, cout, ks: _conv(cin, cout, ks) + _bn(cout)  # every conv has bias and is followed by BN
    total = cbr(in_channels, 192, 3)  # stem
    for cin, n1, r3, n3, r5, n5, npool in cfg:
        total += (cbr(cin, n1, 1)                                        # 1x1 branch
                  + cbr(cin, r3, 1) + cbr(r3, n3, 3)                     # 1x1 reduce -> 3x3
                  + cbr(cin, r5, 1) + cbr(r5, n5, 3) + cbr(n5, n5, 3)    # 1x1 reduce -> 3x3 -> 3x3 ("5x5")
                  + cbr(cin, npool, 1))                                  # maxpool -> 1x1
    return total + _fc(1024, k)


HETERO_COUNTS = [
    # GoogLeNet: 6,166,250 is the well-known count of the CIFAR-style GoogLeNet (kuangliu/pytorch-cifar, conv
    # biases kept before BN); the hand count reproduces it.
    ("googlenet", _googlenet_count(3, 10), 6_166_250),
    # M3: conv(3->32) + conv(32->64) + FC(64*8*8 -> 128) + FC(128 -> 10)
    ("cnn_m3", _conv(3, 32, 3) + _conv(32, 64, 3) + _fc(64 * 8 * 8, 128) + _fc(128, 10), 545_098),
    # M4: conv(3->32)+BN + conv(32->64)+BN + conv(64->128)+BN + FC(128*8*8 -> 256) + FC(256 -> 10)
    ("cnn_m4", _conv(3, 32, 3) + _bn(32) + _conv(32, 64, 3) + _bn(64) + _conv(64, 128, 3) + _bn(128)
     + _fc(128 * 8 * 8, 256) + _fc(256, 10), 2_193_674),
]


@pytest.mark.parametrize("name,by_hand,literal", HETERO_COUNTS)
def test_fedhydra_hetero_parameter_counts(name, by_hand, literal):
    assert by_hand == literal
    assert count_parameters(build_model(name, (3, 32, 32), 10)) == by_hand


@pytest.mark.parametrize("name", ["googlenet", "cnn_m3", "cnn_m4"])
@pytest.mark.parametrize("shape", [(3, 32, 32), (1, 28, 28)])
def test_fedhydra_hetero_forward_shape(name, shape):
    assert name in MODELS.names()
    assert resolve_model_name(name, shape) == name
    with torch.no_grad():
        assert build_model(name, shape, 10).eval()(torch.rand(2, *shape)).shape == (2, 10)
