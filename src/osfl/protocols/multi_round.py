"""The multi-round protocol of FedHydra's Tables 5, 8, 11-18 (SPEC §3.5, AMBIG-21/22): T global rounds.

The paper does not describe it; this follows the SPEC proposal. Round t = 1..T:

1. every client starts from the current global model (round 1: the one-shot pipeline's initial models, i.e.
   the shared initial model under ``local.init: shared``), trains ``rounds.local_epochs`` epochs (E = 50 in
   the paper, scaled by the profile like ``local.epochs``) on its own data and uploads its classifier;
2. the server runs the method on the round's uploads from a fresh server state (FedHydra re-runs model
   stratification on the new client models, then HASA; the data-free methods distil into a freshly initialised
   global model; FedDF starts from the FedAvg average of the round's clients, as in one shot);
3. the global model is broadcast (its full state dict, BatchNorm statistics included) and evaluated.

The uploads of a round live in a temporary folder that is removed after the server has run. Only methods
whose result is one classifier of the server's architecture can be broadcast, so the clients must all use
that architecture and the method must not return an ensemble: both fail before any work.

Seeds are derived per round (``derive_seed(seed, "round", t, ...)``): client data order and augmentation per
round and client, the global generators before local training and before the server method, and the server
context's generators. Round 1 is therefore not the one-shot run (SPEC AMBIG-22: the two groups of tables are
independent experiments), but a run is deterministic.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np
import torch
import torch.nn as nn
from tqdm.auto import tqdm

from ..augment import resolve_augment
from ..clients.cohort import build_cohort, initial_states, local_hparams, train_cohort, upload_cohort
from ..config import RunConfig, check_int, scaled_epochs
from ..data import ArrayData
from ..errors import ConfigError
from ..methods import METHODS
from ..partition import Partition
from ..profiles import Profile
from ..runtime import derive_seed
from .one_shot import build_context, make_method, run_method

DEFAULTS = {"T": 5, "local_epochs": 50}  # FedHydra: T = 1..5 global rounds, E = 50 (V000 App. C.2)


@dataclass(frozen=True)
class RoundsConfig:
    T: int  # number of global rounds
    local_epochs: int  # local epochs per round, as written (the paper's E)
    local_epochs_run: int  # under the profile


def read_rounds(rounds: Any, profile: Profile) -> RoundsConfig:
    """The ``rounds`` block ({T, local_epochs}; absent keys take the paper's values), checked."""
    rounds = {} if rounds is None else rounds
    if not isinstance(rounds, Mapping):
        raise ConfigError("rounds", f"must be a mapping with keys T, local_epochs, got {rounds!r}")
    for key in rounds:
        if key not in DEFAULTS:
            raise ConfigError(f"rounds.{key}", f"unknown key; allowed: {', '.join(DEFAULTS)}")
    given = {**DEFAULTS, **rounds}
    T = check_int("rounds.T", given["T"], minimum=1)
    epochs = check_int("rounds.local_epochs", given["local_epochs"], minimum=1)
    return RoundsConfig(T, epochs, scaled_epochs(epochs, profile))


def result_kind(name: str) -> str:
    """What method ``name`` returns: "classifier" (one global model) or "ensemble".

    A method class may declare it as ``result_kind``; otherwise the averaging ensemble (and its subclasses)
    returns an ensemble and every other method a classifier.
    """
    cls = METHODS.get(name, key="methods")
    kind = getattr(cls, "result_kind", None)
    if kind is None:
        from ..methods.ensemble import AverageEnsemble

        kind = "ensemble" if issubclass(cls, AverageEnsemble) else "classifier"
    return kind


def check_protocol(cfg: RunConfig, method: str) -> None:
    """One line before any work when the protocol cannot run: a non-classifier method, or heterogeneous clients."""
    if result_kind(method) != "classifier":
        allowed = [m for m in METHODS.names() if result_kind(m) == "classifier"]
        raise ConfigError("methods", f"{method} returns kind {result_kind(method)!r}, not one global classifier, so it "
                                     f"cannot be broadcast in a multi-round run; allowed: {', '.join(allowed)}")
    archs = cfg.client_models
    if any(a != cfg.model for a in archs):
        raise ConfigError("client_models", f"the multi-round protocol broadcasts the server's {cfg.model} to "
                                           f"every client, got clients {sorted(set(archs))}; allowed: empty "
                                           f"(every client uses model)")


def check_run(cfg: RunConfig, method: str) -> None:
    """Everything that can fail before any work: the protocol's limits and the method's hyper-parameters."""
    check_protocol(cfg, method)
    make_method(cfg, method)


@dataclass
class RoundsResult:
    records: list[dict]  # one per round: round, test_acc, client_acc_mean, client_accs, server_epochs
    model: nn.Module  # the global model after the last round (eval mode, on the device)
    choices: dict  # the method's hyper-parameters in force (last round)
    protocol: dict  # the protocol's settings in force
    test_samples: int  # size of the test set the accuracies are measured on
    seconds: list[dict] = field(default_factory=list)  # one per round: local and server seconds (the host's)


def run_rounds(cfg: RunConfig, data: ArrayData, part: Partition, test: tuple[torch.Tensor, torch.Tensor],
               method_name: str, rounds: RoundsConfig, device: torch.device, *, progress: bool = True,
               aux_loader: Callable[[str], torch.Tensor] | None = None,
               on_round_start: Callable[[int, list[nn.Module]], None] | None = None,
               on_round_end: Callable[[int, nn.Module], None] | None = None) -> RoundsResult:
    """Run ``rounds.T`` rounds of ``method_name`` on the prepared ``data`` split by ``part``; every round's global
    model is tested on ``test`` = (uint8 images, labels) on ``device``. ``aux_loader`` gives FedDF its
    auxiliary data (see :func:`osfl.protocols.one_shot.build_context`).

    ``on_round_start(t, client_models)`` is called before local training of round t (the models hold their
    start state); ``on_round_end(t, global_model)`` after the round's global model is evaluated.
    """
    check_run(cfg, method_name)
    spec, profile, seed, local, accel = cfg.dataset, cfg.profile, cfg.seed, cfg.local, cfg.runtime
    part.verify(data.y_train)
    augment = resolve_augment(local.augment, spec.shape)
    x_all = torch.from_numpy(data.x_train).to(device)
    y_all = torch.from_numpy(data.y_train).long().to(device)
    x_test, y_test = test
    archs = cfg.client_models
    # round 1: the one-shot pipeline's start (same seeds as train_clients)
    start = initial_states(archs, spec.shape, spec.num_classes, seed, cfg.inputs.norm()) if local.init == "shared" else None
    hp = local_hparams(local, rounds.local_epochs_run, augment, accel)
    train_info = {**local.as_dict(), "epochs_run": rounds.local_epochs_run, "augment_in_force": augment,
                  "profile": profile.name, "runtime": accel.in_force(device)}

    records: list[dict] = []
    seconds: list[dict] = []
    model, choices = None, {}
    bar = tqdm(range(1, rounds.T + 1), desc=f"{method_name} rounds", disable=not progress, unit="round")
    for t in bar:
        cohort = build_cohort(archs, part.client_indices, x_all, y_all, spec.shape, spec.num_classes, device,
                              seed=seed, start=start,
                              data_seed=lambda k, t=t: derive_seed(seed, "round", t, "client-data", k),
                              inputs=cfg.inputs.norm())
        if on_round_start is not None:
            on_round_start(t, cohort.models)
        t0 = time.perf_counter()
        results, _, _ = train_cohort(cohort, hp, device, progress=progress, desc=f"round {t}: ")
        local_seconds = time.perf_counter() - t0
        with tempfile.TemporaryDirectory(prefix=f"osfl-round{t}-") as tmp:
            uploads, accs = upload_cohort(tmp, cohort, results, spec=spec, class_counts=part.class_counts,
                                          x_test=x_test, y_test=y_test, train_info={**train_info, "round": t})
            del cohort
            method = make_method(cfg, method_name)  # a fresh server state every round
            ctx = build_context(cfg, uploads, x_test, y_test, device, progress=progress,
                                seed=derive_seed(seed, "round", t), aux_loader=aux_loader)
            result, server_seconds = run_method(method, ctx, cfg)
        if result.kind != "classifier" or result.model is None:
            raise ConfigError("methods", f"{method_name} returned a {result.kind}, which cannot be broadcast")
        model = result.model.eval()
        acc = ctx.evaluate(model)
        records.append({"round": t, "test_acc": acc, "client_acc_mean": float(np.mean(accs)),
                        "client_accs": accs, "server_epochs": result.curve[-1]["epoch"] if result.curve else 0})
        seconds.append({"round": t, "local": round(local_seconds, 3), "server": round(server_seconds, 3)})
        choices = {**method.resolved(profile), **result.choices}
        start = {cfg.model: {k: v.detach().clone() for k, v in model.state_dict().items()}}
        bar.set_postfix(acc=f"{acc:.2f}", refresh=False)
        if on_round_end is not None:
            on_round_end(t, model)
    protocol = {"T": rounds.T, "local_epochs": rounds.local_epochs, "local_epochs_run": rounds.local_epochs_run,
                "round1_start": "shared initial model" if local.init == "shared" else "independent draws",
                "client_start": "global model of the previous round", "server_state": "fresh every round"}
    return RoundsResult(records, model, choices, protocol, int(len(y_test)), seconds)
