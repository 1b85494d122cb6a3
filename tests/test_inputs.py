"""Input preparation (osfl.data.inputs, osfl.models.normalise): the params' ``inputs`` block, the resized arrays,
and classifiers that normalise their own input without changing their weights' names."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from osfl.data import ArrayData
from osfl.data.inputs import InputPrep, resize_uint8
from osfl.distill import BatchedEnsemble
from osfl.errors import ConfigError
from osfl.models import build_model, count_parameters, hookless_copy
from osfl.models.normalise import input_normalisation

NORM = {"mean": [0.5], "std": [0.5]}


def test_params_pick_the_dataset_entry_and_broadcast_a_number_over_channels():
    p = InputPrep.from_params({"size": {"fmnist": 32, "cifar10": None}, "mean": 0.5, "std": [0.25, 0.5, 1]},
                              "cifar10", 3)
    assert p == InputPrep(size=None, mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 1.0))
    q = InputPrep.from_params({"size": {"fmnist": 32}, "mean": {"fmnist": 0.2860}, "std": {"fmnist": 0.3530}}, "fmnist", 1)
    assert q.shape((1, 28, 28)) == (1, 32, 32) and q.norm() == {"mean": [0.286], "std": [0.353]}
    assert InputPrep.from_params(None, "fmnist", 1) == InputPrep() and InputPrep().norm() is None


@pytest.mark.parametrize("value, key", [
    ({"sizes": 32}, "inputs.sizes"),
    ({"size": 4}, "inputs.size"),
    ({"mean": 0.5}, "inputs.std"),
    ({"mean": [0.5, 0.5], "std": 0.5}, "inputs.mean"),
    ({"mean": 0.5, "std": 0}, "inputs.std"),
    ({"mean": {"mnist": 0.1}, "std": 0.3}, "inputs.mean"),
])
def test_bad_inputs_fail_naming_the_key(value, key):
    with pytest.raises(ConfigError) as e:
        InputPrep.from_params(value, "fmnist", 1)
    assert e.value.key == key


def test_resize_keeps_uint8_and_matches_bilinear_upsampling():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(5, 1, 28, 28), dtype=np.uint8)
    out = resize_uint8(x, 32)
    assert out.dtype == np.uint8 and out.shape == (5, 1, 32, 32)
    ref = torch.nn.functional.interpolate(torch.from_numpy(x).float(), size=(32, 32), mode="bilinear",
                                          align_corners=False)
    assert np.abs(out.astype(np.float64) - ref.numpy()).max() <= 1.0  # rounding only
    flat = np.full((2, 1, 28, 28), 77, dtype=np.uint8)
    assert (resize_uint8(flat, 32) == 77).all()
    data = ArrayData(x, np.zeros(5, np.int64), x[:2], np.zeros(2, np.int64), classes=[str(i) for i in range(10)])
    r = InputPrep(size=32).resize(data)
    assert r.shape == (1, 32, 32) and r.x_test.shape == (2, 1, 32, 32) and data.shape == (1, 28, 28)


def test_a_normalising_model_is_the_architecture_fed_normalised_pixels():
    torch.manual_seed(0)
    m = build_model("cnn3", (1, 32, 32), 10, NORM)
    plain = build_model("cnn3", (1, 32, 32), 10)
    assert list(m.state_dict()) == list(plain.state_dict()) and count_parameters(m) == count_parameters(plain)
    plain.load_state_dict(m.state_dict())
    x = torch.rand(6, 1, 32, 32)
    m.eval(), plain.eval()
    assert torch.allclose(m(x), plain((x - 0.5) / 0.5), atol=1e-6)
    assert not torch.allclose(m(x), plain(x), atol=1e-3)  # the normalisation is not a no-op
    assert input_normalisation(m) == NORM and input_normalisation(plain) is None
    for twin in (copy.deepcopy(m), hookless_copy(m)):
        assert torch.equal(twin(x), m(x)) and input_normalisation(twin) == NORM


def test_batched_ensembles_of_normalising_models_match_the_loop():
    torch.manual_seed(1)
    models = [build_model("lenet5", (1, 28, 28), 10, {"mean": [0.2860], "std": [0.3530]}).eval() for _ in range(3)]
    x = torch.rand(8, 1, 28, 28)
    fast = BatchedEnsemble(models, [1.0, 2.0, 1.0], batched=True).predict(x)
    slow = BatchedEnsemble(models, [1.0, 2.0, 1.0], batched=False).predict(x)
    assert torch.allclose(fast, slow, atol=1e-5)


def test_a_cvae_refuses_a_normalisation():
    with pytest.raises(ConfigError) as e:
        build_model("cvae_small", (1, 28, 28), 10, NORM)
    assert e.value.key == "inputs.mean"
