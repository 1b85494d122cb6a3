"""The ``profile`` knob: how far a run scales the paper's settings down (epochs, synthetic batches, widths, data).

Kept apart from :mod:`osfl.config` so that the DVC stages whose results depend on these numbers can list this
file as a dependency without re-running when validation code changes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import ConfigError


@dataclass(frozen=True)
class Profile:
    """How a profile scales the paper's settings.

    ``epoch_scale`` multiplies every epoch-like count (local epochs, server epochs); the result is rounded and
    at least 1 when the paper's value is at least 1. ``step_scale`` multiplies the step counts inside one server
    epoch (generator steps, FedHydra's model-stratification steps per (client, class), FedDF's KD steps per
    epoch): at smoke they dominate a run that is otherwise seconds. ``synth_scale`` multiplies the batch size of synthetic
    (generator) batches and ``width_scale`` the generator's width ``ngf``: on a CPU a paper-size generator step
    (256 images, ngf 64) takes about 1.8 s, so the data-free methods need both to finish in minutes. ``max_train``/``max_test`` cap the number of training and
    test samples used (a seeded, class-stratified subset); ``None`` means all. ``stand_in_data`` allows
    generated arrays of the right shape in place of datasets that cannot be obtained (smoke only).
    """

    name: str
    epoch_scale: float
    step_scale: float
    synth_scale: float
    width_scale: float
    max_train: int | None
    max_test: int | None
    stand_in_data: bool
    description: str


PROFILES: dict[str, Profile] = {
    "paper": Profile("paper", 1.0, 1.0, 1.0, 1.0, None, None, False, "the paper's hyper-parameters, unchanged"),
    "quick": Profile("quick", 0.1, 1.0, 0.25, 0.5, None, None, False,
                     "epochs x0.1, synthetic batches x0.25, generator width x0.5, all data: minutes on a CPU"),
    "demo": Profile("demo", 0.1, 0.5, 0.25, 0.5, None, None, False,
                    "quick with half the steps per server epoch (generator, model-stratification and KD steps): "
                    "the main experiment's default, under 5 minutes on a 2-core CPU"),
    "cpu": Profile("cpu", 1.0, 1.0, 1.0, 1.0, None, None, False,
                   "the paper's settings with the reductions its params file names under `cpu` (each with its reason), "
                   "checked by that block's regime guards: a paper's grid, one seed, in one sitting on a 2-core CPU"),
    "smoke": Profile("smoke", 0.01, 0.1, 0.0625, 0.25, 1000, 500, True,
                     "epochs x0.01, steps per server epoch x0.1, synthetic batches x0.0625, generator width x0.25, "
                     "<=1000 train / 500 test samples, stand-in data allowed: seconds per stage (the tests)"),
}


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise ConfigError("profile", f"unknown profile {name!r}; allowed: {', '.join(PROFILES)}")
    return PROFILES[name]


def scaled_epochs(epochs: int, profile: Profile | str) -> int:
    """The number of epochs run under ``profile`` for a paper value ``epochs`` (0 stays 0)."""
    p = get_profile(profile) if isinstance(profile, str) else profile
    if epochs <= 0:
        return 0
    return max(1, int(math.floor(epochs * p.epoch_scale + 0.5)))


def scaled(value: int, scale: float) -> int:
    """``value·scale`` rounded, at least 1 (0 stays 0): batch sizes and widths under a profile."""
    if value <= 0:
        return 0
    return max(1, int(math.floor(value * scale + 0.5)))
