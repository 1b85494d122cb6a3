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
    ("fedd3_cnn", (3, 32, 32), 10, 1_020_160, "HFLDD CIFAR-10 model = FedD3 CNN as instantiated (SPEC §3.4)"),
    ("lenet5_avg", (3, 32, 32), 10, 62_006, "FedHydra M5 LeNet (SPEC §3.4)"),
    ("resnet18", (3, 32, 32), 10, 11_173_962, "CIFAR ResNet-18 (OFedED SPEC: about 11.17M)"),
    # OFedED Fig. 2(c) students; the literals are checked against hand counts in test_cifar_student_hand_counts.
    ("resnet32", (3, 32, 32), 10, 466_906, "RepDistiller resnet32 = Co-Boosting 'resnet32' (hand count)"),
    ("resnet32", (1, 28, 28), 10, 466_618, "RepDistiller resnet32 with a 1-channel stem (hand count)"),
    ("shufflenet", (3, 32, 32), 10, 1_263_854, "Co-Boosting 'shuffle' = ShuffleNet V2 1.0x (torchvision 2,278,604 "
                                               "for 1000 classes, less the head difference; hand count)"),
    ("shufflenet", (1, 28, 28), 10, 1_263_422, "ShuffleNet V2 1.0x with a 1-channel stem (hand count)"),
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


# --- OFedED Fig. 2(c) students: CIFAR ResNet-32 and ShuffleNet V2 (Co-Boosting 'resnet32', 'shuffle') -----------
# Hand counts from the reference layer lists (RepDistiller models/resnet.py; Co-Boosting
# datafree/models/classifiers/shuffle.py), independently of the model code. All convs are bias-free, each is
# followed by BatchNorm.

def _cbn(cin, cout, k, groups=1):  # bias-free conv + BN
    return cin // groups * cout * k * k + _bn(cout)


def _resnet_cifar_count(depth, in_channels, k):
    n, total, cin = (depth - 2) // 6, _cbn(in_channels, 16, 3), 16
    for cout in (16, 32, 64):
        for _ in range(n):
            total += _cbn(cin, cout, 3) + _cbn(cout, cout, 3)  # two 3x3 convs
            if cin != cout:
                total += _cbn(cin, cout, 1)  # 1x1 projection shortcut (first block of stages 2 and 3)
            cin = cout
    return total + _fc(64, k)


def _shufflenet_v2_count(in_channels, k):
    total, cin = _cbn(in_channels, 24, 3), 24  # stem conv 3x3 s2 (then max-pool)
    for n, cout in zip((4, 8, 4), (116, 232, 464)):
        h = cout // 2
        # stride-2 unit: [dw3x3(cin) + 1x1 cin->h] and [1x1 cin->h + dw3x3(h) + 1x1 h->h]
        total += _cbn(cin, cin, 3, cin) + _cbn(cin, h, 1) + _cbn(cin, h, 1) + _cbn(h, h, 3, h) + _cbn(h, h, 1)
        # stride-1 units on half the channels: 1x1 h->h + dw3x3(h) + 1x1 h->h
        total += (n - 1) * (_cbn(h, h, 1) + _cbn(h, h, 3, h) + _cbn(h, h, 1))
        cin = cout
    return total + _cbn(464, 1024, 1) + _fc(1024, k)


def test_cifar_student_hand_counts():
    assert _resnet_cifar_count(32, 3, 10) == 466_906
    assert _resnet_cifar_count(32, 1, 10) == 466_618
    assert _shufflenet_v2_count(3, 10) == 1_263_854
    assert _shufflenet_v2_count(1, 10) == 1_263_422
    # the published torchvision count of the same network for 1000 classes (ShuffleNet_V2_X1_0_Weights.num_params)
    assert _shufflenet_v2_count(3, 1000) == 2_278_604
    for depth in (8, 20, 56):
        assert count_parameters(build_model(f"resnet{depth}", (3, 32, 32), 10)) == _resnet_cifar_count(depth, 3, 10)


@pytest.mark.parametrize("name", ["resnet32", "shufflenet"])
def test_cifar_students_train_at_batch_two(name):
    """3x32x32 is covered by test_every_model_runs_forward_and_backward; Fashion-MNIST's 1x28x28 here."""
    shape = (1, 28, 28)
    m = build_model(name, shape, 10)
    out = m(torch.rand(2, *shape))
    assert out.shape == (2, 10)
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    with torch.no_grad():
        assert m.eval()(torch.rand(1, *shape)).shape == (1, 10)
