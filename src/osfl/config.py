"""Parameters of a run: loading ``params.yaml``, the ``profile`` knob, and validation.

The paper's hyper-parameters are written in ``params.yaml`` unchanged. Reduced scale comes only from the
``profile`` key, which the stages apply when they read a value (:func:`scaled_epochs`); the value in force is
recorded next to every result. Every bad value fails before any work, with one line that names the key and
what is allowed (:class:`osfl.errors.ConfigError`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from .errors import ConfigError


@dataclass(frozen=True)
class Profile:
    """How a profile scales the paper's settings.

    ``epoch_scale`` multiplies every epoch-like count (local epochs, server epochs); the result is rounded and
    at least 1 when the paper's value is at least 1. ``synth_scale`` multiplies the batch size of synthetic
    (generator) batches and ``width_scale`` the generator's width ``ngf``: on a CPU a paper-size generator step
    (256 images, ngf 64) takes about 1.8 s, so the data-free methods need both to finish in minutes. ``max_train``/``max_test`` cap the number of training and
    test samples used (a seeded, class-stratified subset); ``None`` means all. ``stand_in_data`` allows
    generated arrays of the right shape in place of datasets that cannot be obtained (smoke only).
    """

    name: str
    epoch_scale: float
    synth_scale: float
    width_scale: float
    max_train: int | None
    max_test: int | None
    stand_in_data: bool
    description: str


PROFILES: dict[str, Profile] = {
    "paper": Profile("paper", 1.0, 1.0, 1.0, None, None, False, "the paper's hyper-parameters, unchanged"),
    "quick": Profile("quick", 0.1, 0.25, 0.5, None, None, False,
                     "epochs x0.1, synthetic batches x0.25, generator width x0.5, all data: minutes on a CPU"),
    "smoke": Profile("smoke", 0.01, 0.125, 0.25, 2000, 1000, True,
                     "epochs x0.01, synthetic batches x0.125, generator width x0.25, "
                     "<=2000 train / 1000 test samples: seconds"),
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


def load_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise ConfigError("params", f"{path} not found; run from the repository root or pass --params")
    with open(path) as f:
        params = yaml.safe_load(f) or {}
    if not isinstance(params, dict):
        raise ConfigError("params", f"{path} must hold a mapping of keys")
    return params


# ---------------------------------------------------------------------------------------------------------
# validation helpers: each raises ConfigError(key, one line)


def require(params: Mapping[str, Any], key: str) -> Any:
    node: Any = params
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ConfigError(key, "missing from params.yaml")
        node = node[part]
    return node


def check_int(key: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(key, f"must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(key, f"must be <= {maximum}, got {value}")
    return value


def check_float(key: str, value: Any, *, positive: bool = False, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(key, f"must be a number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(key, f"must be > 0, got {value}")
    if minimum is not None and value < minimum:
        raise ConfigError(key, f"must be >= {minimum}, got {value}")
    return float(value)


def check_choice(key: str, value: Any, allowed: list[str]) -> str:
    if value not in allowed:
        raise ConfigError(key, f"unknown value {value!r}; allowed: {', '.join(allowed)}")
    return value


@dataclass(frozen=True)
class LocalTraining:
    """Client-side training hyper-parameters (FedHydra SPEC §1.9: SGD, lr 0.01, B 128, E 200)."""

    epochs: int
    batch_size: int
    lr: float
    momentum: float
    weight_decay: float
    augment: str
    init: str
    eval_every: int

    AUGMENTS = ("auto", "none", "crop_flip", "flip")
    INITS = ("shared", "independent")  # one common initial model (FedAvg protocol), or one draw per client

    @classmethod
    def from_params(cls, local: Mapping[str, Any]) -> "LocalTraining":
        def get(k):
            if k not in local:
                raise ConfigError(f"local.{k}", "missing from params.yaml")
            return local[k]

        return cls(
            epochs=check_int("local.epochs", get("epochs"), minimum=0),
            batch_size=check_int("local.batch_size", get("batch_size"), minimum=1),
            lr=check_float("local.lr", get("lr"), positive=True),
            momentum=check_float("local.momentum", get("momentum"), minimum=0.0),
            weight_decay=check_float("local.weight_decay", get("weight_decay"), minimum=0.0),
            augment=check_choice("local.augment", get("augment"), list(cls.AUGMENTS)),
            init=check_choice("local.init", get("init"), list(cls.INITS)),
            eval_every=check_int("local.eval_every", get("eval_every"), minimum=0),
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def validate_main(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check every key of the main experiment before any work; return the resolved settings.

    The stages of the main pipeline all call this first, so whichever stage runs first stops a bad value.
    """
    # late imports: the registries import torch, and config must stay importable on its own
    from .data import get_spec
    from .methods import METHODS
    from .models import resolve_model_name
    from .partition import validate_params as validate_partition

    profile = get_profile(require(params, "profile"))
    seed = check_int("seed", require(params, "seed"), minimum=0)
    spec = get_spec(require(params, "dataset"))
    clients = check_int("clients", require(params, "clients"), minimum=1)
    scheme = require(params, "partition")
    alpha = require(params, "alpha")
    cpc = require(params, "classes_per_client")
    assignment = params.get("assignment", "cyclic")
    n_train = spec.n_train if profile.max_train is None else min(spec.n_train, profile.max_train)
    validate_partition(scheme, clients, n_train, spec.num_classes, alpha=alpha, classes_per_client=cpc,
                       assignment=assignment)
    model = resolve_model_name(require(params, "model"), spec.shape, key="model")
    methods = require(params, "methods")
    if isinstance(methods, str):
        methods = [methods]
    if not isinstance(methods, list) or not methods:
        raise ConfigError("methods", f"must be a non-empty list; allowed: {', '.join(METHODS.names())}")
    for m in methods:
        METHODS.get(m, key="methods")
    if len(set(methods)) != len(methods):
        raise ConfigError("methods", f"lists a method twice: {methods}")
    local = LocalTraining.from_params(require(params, "local"))
    mirror = (params.get("data") or {}).get("mirror") or None
    return {
        "profile": profile,
        "seed": seed,
        "dataset": spec,
        "clients": clients,
        "partition": scheme,
        "alpha": alpha,
        "classes_per_client": cpc,
        "assignment": assignment,
        "model": model,
        "methods": methods,
        "local": local,
        "mirror": Path(mirror) if mirror else None,
    }
