"""FedMHO Table XI's FID (osfl.evaluation.fid): torchmetrics' Fréchet distance on an injectable extractor."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from osfl.errors import ConfigError
from osfl.evaluation.fid import RandomConvFeatures, frechet_distances


def images(n, seed, shift=0.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, 1, 28, 28, generator=g) * 0.5 + shift).clamp(0, 1)


def test_distance_is_near_zero_for_one_distribution_and_grows_with_a_shift():
    real = images(400, 0)
    out = frechet_distances(real, {"same": images(400, 1), "shifted": images(400, 2, shift=0.3),
                                   "further": images(400, 3, shift=0.5)}, "random_conv")
    assert out["same"] < 0.1 * out["shifted"] and out["shifted"] < out["further"]


def test_the_stand_in_extractor_is_fixed_by_its_seed():
    x = images(8, 0)
    a, b = RandomConvFeatures(1)(x), RandomConvFeatures(1)(x)
    assert a.shape == (8, RandomConvFeatures.num_features) and torch.equal(a, b)
    assert not torch.equal(a, RandomConvFeatures(1, seed=1)(x))


def test_unknown_extractor_fails_in_one_line():
    with pytest.raises(ConfigError, match="fid.extractor.*allowed: inception, random_conv"):
        frechet_distances(images(4, 0), {"x": images(4, 1)}, "vgg")


@pytest.mark.skipif(importlib.util.find_spec("torch_fidelity") is not None, reason="torch-fidelity is installed")
def test_inception_without_its_package_names_the_offline_stand_in():
    with pytest.raises(ConfigError, match="offline, use random_conv"):
        frechet_distances(images(4, 0), {"x": images(4, 1)}, "inception")
