"""The interface every server method implements.

A method gets a :class:`ServerContext` (the client uploads, the global model architecture, the test set on the
device, seed, profile, its own hyper-parameters) and returns a :class:`ServerResult`: either a trained global
classifier or an ensemble of client models, plus the per-epoch test-accuracy curve for methods that train a
global model for many epochs (``trains_global = True``) and the choices in force (recorded with the metrics).

Hyper-parameters: ``defaults`` holds the paper's values and the SPEC's proposals for values the paper leaves
open; ``params.yaml`` may override any of them under ``server.<method>``; an unknown key fails early.
``epoch_keys``, ``step_keys``, ``synth_keys`` and ``width_keys`` name the hyper-parameters the ``profile`` knob
scales (epoch counts, steps per server epoch, synthetic batch sizes, generator widths; see :class:`osfl.config.Profile`); ``data_keys``
(the size of a set the server generates and trains on, e.g. FedMHO's M) are capped at the profile's ``max_train``
like the clients' data; the values in force are recorded with the results.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import torch

from ..errors import ConfigError, unknown_key
from ..profiles import Profile, scaled, scaled_epochs

if TYPE_CHECKING:  # annotations only: validating params (osfl.runconfig) imports this file without them
    from ..clients.upload import ClientUpload
    from ..evaluation import Predictor


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
    dataset: str = ""  # registry name of the main dataset
    # name -> unlabeled uint8 training images of another dataset on the device (FedDF's auxiliary data)
    aux_loader: Callable[[str], torch.Tensor] | None = None
    # False runs every teacher ensemble as a Python loop over the clients (runtime.batched_teachers; the benchmarks'
    # reference path)
    batched_ensemble: bool = True
    # called with each epoch's curve entry as soon as it is measured (the server stage logs it live with dvclive)
    on_epoch: Callable[[dict], None] | None = None
    # the clients' second upload of a two-transmission round (OFedED's distilled sets), for methods that read it
    distilled: list[ClientUpload] = field(default_factory=list)
    # record the teacher's test accuracy per epoch (curve field ``teacher_acc``; Fig. 2(a) of OFedED) in methods
    # that declare ``tracks_teacher``: instrumentation, no random draws, the result unchanged
    track_teacher: bool = False
    # count the FLOPs of the context's test evaluations (the server stage's --count-flops subtracts them from the
    # run's total: a method's server computation does not include measuring it)
    count_eval_flops: bool = False
    eval_flops: int = 0
    # the models' input normalisation (params' inputs.mean/std: InputPrep.norm()); the global models get it too
    inputs: dict | None = None

    def load_aux(self, name: str, key: str) -> torch.Tensor:
        """Unlabeled images of dataset ``name``; ``key`` names the parameter that chose it (for errors)."""
        if self.aux_loader is None:
            raise ConfigError(key, "auxiliary data needs the server stage's data loader (none in this context)")
        x = self.aux_loader(name)
        if tuple(x.shape[1:]) != tuple(self.input_shape):
            raise ConfigError(key, f"{name} images are {tuple(x.shape[1:])}, the clients' are "
                                   f"{tuple(self.input_shape)}; choose a dataset of the same shape")
        return x

    def evaluate(self, predict: Predictor | torch.nn.Module) -> float:
        from ..evaluation import accuracy

        if not self.count_eval_flops:
            return accuracy(predict, self.x_test, self.y_test)
        from ..cost.counter import spent

        with spent(True) as cost:
            acc = accuracy(predict, self.x_test, self.y_test)
        self.eval_flops += cost.flops
        return acc

    def teacher(self, models, weights=None):
        """The client models as one teacher ensemble (one vmapped call per architecture unless turned off)."""
        from ..distill import BatchedEnsemble

        return BatchedEnsemble(models, weights, batched=self.batched_ensemble)

    def synthetic_set(self, method: str) -> tuple[torch.Tensor, torch.Tensor]:
        """S = ∪_k S_k: the clients' distilled images (float, the models' input space) and labels on the device;
        ``method`` names the caller in the error when there are none."""
        sets = [u for u in self.distilled if u.kind == "distilled_set"]
        if not sets:
            raise ConfigError("methods", f"{method} reads the clients' distilled sets (stage condense); none came")
        x = torch.cat([torch.from_numpy(u.array("images")).float() for u in sets]).to(self.device)
        y = torch.cat([torch.from_numpy(u.array("labels")).long() for u in sets]).to(self.device)
        return x, y

    def client_sizes(self) -> list[int]:
        return [u.n_samples for u in self.uploads]

    def client_models(self) -> list[torch.nn.Module]:
        """The uploaded classifiers, rebuilt on the device in eval mode."""
        return [u.build_model(self.device).eval() for u in self.uploads]

    def rng(self, *tags) -> torch.Generator:
        """A CPU generator seeded from the run's seed and ``tags`` (latents, labels, augmentation, resets).

        Draw on the CPU and move the result to the device (:func:`osfl.distill.randn`), so that a seed gives the
        same numbers on every device."""
        from ..runtime import derive_seed

        return torch.Generator().manual_seed(derive_seed(self.seed, "server", *tags))

    def make_global(self, arch: str | None = None) -> torch.nn.Module:
        """A fresh global model, its weights drawn on the CPU from the run's seed (the same on every device);
        ``arch`` builds another architecture than the server's (prototype voting: one global model per client
        architecture), drawn under a seed of its own."""
        from ..models import build_model
        from ..runtime import derive_seed, seeded_init

        tags = ("global-init",) if arch is None or arch == self.model_name else ("global-init", arch)
        with seeded_init(derive_seed(self.seed, "server", *tags)):
            model = build_model(arch or self.model_name, self.input_shape, self.num_classes, self.inputs)
        return model.to(self.device)

    def prototypes(self) -> dict[str, list[ClientUpload]]:
        """The classifier uploads grouped by architecture, in order of first appearance (FedMHO's "model
        prototypes"); other upload kinds are left out."""
        groups: dict[str, list] = {}
        for u in self.uploads:
            if u.kind == "classifier":
                groups.setdefault(u.manifest["arch"], []).append(u)
        return groups


@dataclass
class ServerResult:
    kind: str  # "classifier" (a global model), "ensemble" (client models combined at prediction time) or
    #            "voting" (one global model per client architecture, their logits averaged: FedMHO's prototype voting)
    model: torch.nn.Module | None = None
    prototypes: dict[str, torch.nn.Module] = field(default_factory=dict)  # voting: architecture -> its model
    members: list[int] = field(default_factory=list)  # ensemble: client ids
    weights: list[float] = field(default_factory=list)  # ensemble: combination weights
    curve: list[dict] = field(default_factory=list)  # [{"epoch": e, "test_acc": a, ...}], e = 0, 1, ...: trained globals
    choices: dict[str, Any] = field(default_factory=dict)  # every hyper-parameter in force
    extras: dict[str, Any] = field(default_factory=dict)  # results besides the model (e.g. FedHydra's U matrices)


class ServerMethod:
    name: ClassVar[str]
    description: ClassVar[str]
    trains_global: ClassVar[bool] = False
    defaults: ClassVar[dict[str, Any]] = {}
    epoch_keys: ClassVar[tuple[str, ...]] = ()
    step_keys: ClassVar[tuple[str, ...]] = ()  # steps inside one server epoch (generator, MS, KD steps)
    synth_keys: ClassVar[tuple[str, ...]] = ()
    width_keys: ClassVar[tuple[str, ...]] = ()
    data_keys: ClassVar[tuple[str, ...]] = ()  # sizes of a server-side training set: capped at the profile's max_train
    allowed: ClassVar[dict[str, tuple]] = {}  # key -> allowed values, for choice parameters
    positive: ClassVar[tuple[str, ...]] = ()  # numeric keys that must be > 0 (other numeric keys: >= 0)
    reads_distilled: ClassVar[bool] = False  # the server stage passes the clients' distilled sets (ctx.distilled)
    tracks_teacher: ClassVar[bool] = False  # honours ctx.track_teacher (the server stage's --track-teacher)

    def __init__(self, **params: Any):
        for k, v in params.items():
            key = f"server.{self.name}.{k}"
            if k not in self.defaults:
                raise unknown_key(key, self.defaults)
            if k in self.allowed:
                if not any(v == a and type(v) is type(a) for a in self.allowed[k]):
                    raise ConfigError(key, f"unknown value {v!r}; allowed: {', '.join(map(str, self.allowed[k]))}")
                continue
            d = self.defaults[k]
            if isinstance(d, (int, float)) and not isinstance(d, bool):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise ConfigError(key, f"must be a number, got {v!r}")
                if isinstance(d, int) and int(v) != v:
                    raise ConfigError(key, f"must be a whole number, got {v!r}")
                if k in self.positive and not v > 0:
                    raise ConfigError(key, f"must be > 0, got {v!r}")
                if v < 0:
                    raise ConfigError(key, f"must be >= 0, got {v!r}")
        self.params = {**self.defaults, **params}

    def resolved(self, profile: Profile) -> dict[str, Any]:
        """Hyper-parameters in force under ``profile`` (epoch counts, synthetic batches and widths scaled)."""
        out = dict(self.params)
        for k in self.epoch_keys:
            out[k] = scaled_epochs(int(out[k]), profile)
        for k in self.step_keys:
            out[k] = scaled(int(out[k]), profile.step_scale)
        for k in self.synth_keys:
            out[k] = scaled(int(out[k]), profile.synth_scale)
        for k in self.width_keys:
            out[k] = scaled(int(out[k]), profile.width_scale)
        if profile.max_train is not None:
            for k in self.data_keys:
                out[k] = min(int(out[k]), profile.max_train)
        return out

    def run(self, ctx: ServerContext) -> ServerResult:  # pragma: no cover - interface
        raise NotImplementedError


def track_epochs(ctx: ServerContext, epochs: int, step: Callable[[int], Any], desc: str, *,
                 start: torch.nn.Module) -> list[dict]:
    """Evaluate ``start`` (the model before server training: epoch 0), then run ``step(epoch)`` for each epoch,
    evaluating the returned model on the test set after each one.

    ``step`` returns the model, or ``(model, fields)`` where ``fields`` (e.g. the epoch's generator loss) are
    recorded in that epoch's curve entry. Epoch 0 shows a method that starts high and drops at once (FedDF starts
    from the FedAvg average); it is part of the curve, not of the run's best accuracy.
    """
    from tqdm.auto import tqdm

    curve = []

    def record(entry: dict) -> None:
        curve.append(entry)
        if ctx.on_epoch is not None:
            ctx.on_epoch(entry)

    record({"epoch": 0, "test_acc": ctx.evaluate(start)})
    bar = tqdm(range(1, epochs + 1), desc=desc, disable=not ctx.progress, mininterval=1.0)
    for epoch in bar:
        out = step(epoch)
        model, fields = out if isinstance(out, tuple) else (out, {})
        acc = ctx.evaluate(model)
        record({"epoch": epoch, "test_acc": acc, **fields})
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


def client_weights(ctx: ServerContext, weighting: str, uploads: list[ClientUpload] | None = None) -> list[float]:
    """Averaging weights of ``uploads`` (default: all of the context's): n_k (``samples``) or 1 (``uniform``)."""
    sizes = ctx.client_sizes() if uploads is None else [u.n_samples for u in uploads]
    return [float(n) for n in sizes] if weighting == "samples" else [1.0] * len(sizes)


def prototype_averages(ctx: ServerContext, weighting: str, method: str) -> tuple[dict[str, list[ClientUpload]],
                                                                              dict[str, torch.nn.Module]]:
    """FedMHO's prototype voting starts from one model per client architecture: the classifier uploads grouped
    by architecture (:meth:`ServerContext.prototypes`) and each group's average (:func:`client_weights`) loaded
    into a model of that architecture; ``method`` names the caller in the error for a cohort without classifiers."""
    groups = ctx.prototypes()
    if not groups:
        raise ConfigError("methods", f"{method} needs classifier uploads; none came")
    models = {}
    for arch, ups in groups.items():
        model = ctx.make_global(arch)
        model.load_state_dict(average_state_dicts([u.state_dict() for u in ups], client_weights(ctx, weighting, ups)))
        models[arch] = model
    return groups, models
