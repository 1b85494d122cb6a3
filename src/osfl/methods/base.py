"""The interface every server method implements.

A method gets a :class:`ServerContext` (the client uploads, the global model architecture, the test set on the
device, seed, profile, its own hyper-parameters) and returns a :class:`ServerResult`: either a trained global
classifier or an ensemble of client models, plus the per-epoch test-accuracy curve for methods that train a
global model for many epochs (``trains_global = True``) and the choices in force (recorded with the metrics).

Hyper-parameters: ``defaults`` holds the paper's values and the SPEC's proposals for values the paper leaves
open; ``params.yaml`` may override any of them under ``server.<method>``; an unknown key fails early.
``epoch_keys`` names the hyper-parameters the ``profile`` knob scales.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import torch

from ..clients.upload import ClientUpload
from ..config import Profile, scaled_epochs
from ..errors import ConfigError
from ..evaluation import Predictor, accuracy


@dataclass
class ServerContext:
    uploads: list[ClientUpload]
    model_name: str  # global model architecture (registry name)
    input_shape: tuple[int, int, int]
    num_classes: int
    x_test: torch.Tensor  # uint8 on device
    y_test: torch.Tensor
    device: torch.device
    seed: int
    profile: Profile
    progress: bool = True

    def evaluate(self, predict: Predictor | torch.nn.Module) -> float:
        return accuracy(predict, self.x_test, self.y_test)

    def client_sizes(self) -> list[int]:
        return [u.n_samples for u in self.uploads]

    def make_global(self) -> torch.nn.Module:
        from ..models import build_model

        return build_model(self.model_name, self.input_shape, self.num_classes).to(self.device)


@dataclass
class ServerResult:
    kind: str  # "classifier" (a global model) or "ensemble" (client models combined at prediction time)
    model: torch.nn.Module | None = None
    members: list[int] = field(default_factory=list)  # ensemble: client ids
    weights: list[float] = field(default_factory=list)  # ensemble: combination weights
    curve: list[dict] = field(default_factory=list)  # [{"epoch": e, "test_acc": a, ...}] for trained globals
    choices: dict[str, Any] = field(default_factory=dict)  # every hyper-parameter in force


class ServerMethod:
    name: ClassVar[str]
    description: ClassVar[str]
    trains_global: ClassVar[bool] = False
    defaults: ClassVar[dict[str, Any]] = {}
    epoch_keys: ClassVar[tuple[str, ...]] = ()
    allowed: ClassVar[dict[str, tuple]] = {}  # key -> allowed values, for choice parameters

    def __init__(self, **params: Any):
        for k, v in params.items():
            key = f"server.{self.name}.{k}"
            if k not in self.defaults:
                raise ConfigError(key, f"unknown parameter; allowed: {', '.join(sorted(self.defaults)) or 'none'}")
            if k in self.allowed and v not in self.allowed[k]:
                raise ConfigError(key, f"unknown value {v!r}; allowed: {', '.join(map(str, self.allowed[k]))}")
        self.params = {**self.defaults, **params}

    def resolved(self, profile: Profile) -> dict[str, Any]:
        """Hyper-parameters in force under ``profile`` (epoch-like keys scaled)."""
        out = dict(self.params)
        for k in self.epoch_keys:
            out[k] = scaled_epochs(int(out[k]), profile)
        return out

    def run(self, ctx: ServerContext) -> ServerResult:  # pragma: no cover - interface
        raise NotImplementedError


def track_epochs(ctx: ServerContext, epochs: int, step: Callable[[int], torch.nn.Module], desc: str) -> list[dict]:
    """Run ``step(epoch)`` for each epoch, evaluating the returned model on the test set after each one."""
    from tqdm.auto import tqdm

    curve = []
    bar = tqdm(range(1, epochs + 1), desc=desc, disable=not ctx.progress, mininterval=1.0)
    for epoch in bar:
        model = step(epoch)
        acc = ctx.evaluate(model)
        curve.append({"epoch": epoch, "test_acc": acc})
        bar.set_postfix(acc=f"{acc:.2f}", refresh=False)
    return curve


# ---------------------------------------------------------------------------------------------------------
# helpers shared by several methods (a method file imports shared code only from here, so that each
# server@<method> stage can depend on its own file plus base.py; see tests/test_methods_layout.py)


def average_state_dicts(states: list[dict[str, torch.Tensor]], weights: list[float]) -> dict[str, torch.Tensor]:
    total = float(sum(weights))
    w = [float(x) / total for x in weights]
    out = {}
    for key in states[0]:
        t0 = states[0][key]
        if t0.is_floating_point():
            out[key] = sum(wk * s[key].to(torch.float64) for wk, s in zip(w, states)).to(t0.dtype)
        else:
            out[key] = torch.stack([s[key] for s in states]).max(0).values
    return out


def client_weights(ctx: ServerContext, weighting: str) -> list[float]:
    sizes = ctx.client_sizes()
    return [float(n) for n in sizes] if weighting == "samples" else [1.0] * len(sizes)
