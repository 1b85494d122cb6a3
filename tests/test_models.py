"""Parameter counts against the papers and reference code (the Flower-baselines check)."""
import pytest
import torch

from osfl.errors import ConfigError
from osfl.models import MODELS, build_model, count_parameters, resolve_model_name

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
    with pytest.raises(ConfigError, match=r"^model: 'cnn3' takes inputs"):
        resolve_model_name("cnn3", (1, 28, 28))
