"""Many-round federated training in memory, with checkpoints: FedAvg, its hybrid form over cluster headers, FedSeq's
chains and centralized learning as one loop (HFLDD SPEC §1.6, §2).

A run is a list of *groups*, each a chain of :class:`Participant` (uint8 images and labels in memory: a client's own
data, or a header's own data joined with the distilled images it received). Round t = 1..T:

1. every group starts from the global model w^{t-1}; its participants train one after another, each
   ``local.epochs`` epochs of SGD on its own data from where the previous one stopped (a group of one is a
   FedAvg client; FedSeq's superclients are groups of J, their order shuffled every round with ``shuffle``;
   centralized learning is one group holding all the data);
2. the server averages the groups' final models (their whole state dicts, BatchNorm statistics included),
   weighted by the samples each group holds (``weighting: samples``, FedAvg's n_k) or uniformly;
3. the new global model is evaluated (``evaluate(model)``, e.g. test accuracy): the curve has one point per round.

Randomness: participant p of group g in round t shuffles with ``derive_seed(seed, "round", t, g, p)`` and a
chain's order comes from ``derive_seed(seed, "chain", t, g)``; no state is carried from round to round but the
global model. So a run resumed from a checkpoint is the uninterrupted run, bit for bit, and growing T continues
where the last run stopped: ``checkpoint`` (a file) is written atomically every ``checkpoint_every`` rounds and after
the last one, holding the round, the global state, the curve and the run's ``signature`` (everything that
determines the result except T: the caller's ``signature``, the groups' sizes and data digest, the local settings,
the seed, the initial model's digest); a checkpoint with another signature is ignored (the run starts from round 0 and
says so). Loads use ``torch.load(..., weights_only=True)``.
"""
from __future__ import annotations

import copy
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
import torch.nn as nn
from tqdm.auto import tqdm

from ..clients.batched import train_clients
from ..clients.training import train_classifier
from ..methods.base import average_state_dicts
from ..runtime import derive_seed

WEIGHTINGS = ("samples", "uniform")


@dataclass(frozen=True)
class Participant:
    """One trainer's data in memory: ``x`` uint8 images (N, C, H, W), ``y`` int64 labels, on the model's device."""

    x: torch.Tensor
    y: torch.Tensor
    name: str = ""

    @property
    def n(self) -> int:
        return int(len(self.y))


@dataclass(frozen=True)
class LocalSpec:
    """Local training in every round: epochs over the participant's data, SGD settings."""

    epochs: int
    batch_size: int
    lr: float
    momentum: float = 0.0
    weight_decay: float = 0.0
    augment: str = "none"


@dataclass
class RoundsResult:
    curve: list[dict] = field(default_factory=list)  # [{"round": t, "test_acc": a}], t = 1..T: what was computed
    resumed_from: int = 0  # rounds taken from a checkpoint (0: a fresh run)
    seconds: float = 0.0  # this call's training time
    round_seconds: list[float] = field(default_factory=list)  # this call's rounds' seconds (not in the checkpoint)


def _digest(tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def data_digest(groups: Sequence[Sequence[Participant]]) -> str:
    """SHA-256 of every participant's images and labels, in order: a checkpoint of other data is not resumed."""
    return _digest(t for g in groups for p in g for t in (p.x, p.y))


def state_digest(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 of a state dict's tensors in key order (the initial model w^0 of a run)."""
    return _digest(state[k] for k in sorted(state))


def load_checkpoint(path: Path | None, signature: dict) -> dict | None:
    """The checkpoint at ``path`` when it exists and was written by a run with the same ``signature``."""
    if path is None or not Path(path).exists():
        return None
    ck = torch.load(path, map_location="cpu", weights_only=True)
    return ck if ck.get("signature") == signature else None


def _save(path: Path, signature: dict, t: int, state: dict, curve: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save({"signature": signature, "round": t, "state": state, "curve": curve}, tmp)
    os.replace(tmp, path)


def _copy_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _participant_gen(seed: int, t: int, g: int, p: int) -> torch.Generator:
    """Participant p of group g shuffles round t's data with this generator, on either path."""
    return torch.Generator().manual_seed(derive_seed(seed, "round", t, g, p))


def _train_sequential(model: nn.Module, groups: Sequence[Sequence[Participant]], local: LocalSpec, seed: int, t: int,
                      shuffle: bool) -> list[dict[str, torch.Tensor]]:
    """Round t: each group from ``model``'s state (the global model), its participants one after another (a chain's
    order reshuffled when ``shuffle``); the groups' final state dicts in group order. ``model`` ends holding the
    last group's."""
    global_state = _copy_state(model)
    states = []
    for g, group in enumerate(groups):
        order = list(range(len(group)))
        if shuffle and len(group) > 1:
            order = torch.randperm(len(group), generator=torch.Generator().manual_seed(
                derive_seed(seed, "chain", t, g))).tolist()
        model.load_state_dict(global_state)
        for p in order:
            part = group[p]
            train_classifier(model, part.x, part.y, epochs=local.epochs, batch_size=local.batch_size, lr=local.lr,
                             momentum=local.momentum, weight_decay=local.weight_decay, augment=local.augment,
                             gen=_participant_gen(seed, t, g, p))
        states.append(_copy_state(model))
    return states


def _train_batched(model: nn.Module, groups: Sequence[Sequence[Participant]], local: LocalSpec, seed: int,
                   t: int) -> list[dict[str, torch.Tensor]]:
    """Round t's one-participant groups trained together from ``model``'s state as one batched model, with the
    generators of the sequential path; their final state dicts in group order."""
    models = [copy.deepcopy(model) for _ in groups]
    train_clients(models, [(g[0].x, g[0].y) for g in groups],
                  [_participant_gen(seed, t, g, 0) for g in range(len(groups))],
                  batched=True, epochs=local.epochs, batch_size=local.batch_size, lr=local.lr,
                  momentum=local.momentum, weight_decay=local.weight_decay, augment=local.augment)
    return [_copy_state(m) for m in models]


def run_rounds(model: nn.Module, groups: Sequence[Sequence[Participant]], *, rounds: int, local: LocalSpec,
               seed: int, evaluate: Callable[[nn.Module], float], weighting: str = "samples", shuffle: bool = False,
               checkpoint: Path | None = None, checkpoint_every: int = 10, signature: dict[str, Any] | None = None,
               stop_after: int | None = None, batched: bool = False, progress: bool = False,
               desc: str = "rounds") -> RoundsResult:
    """Train ``model`` (holding w^0; it ends holding the last global model) for ``rounds`` rounds over ``groups``
    (module docstring). ``stop_after`` ends the call after that round (a checkpoint is written): an interrupted
    run, for tests and for splitting long runs. ``batched``: when every group is one participant (FedAvg's clients,
    HFLDD's headers), the round's participants train as one batched model (:func:`osfl.clients.batched.train_clients`,
    the same numbers within float tolerance: ``runtime.batched_clients``, on by default on CUDA); the signature
    records it, so a checkpoint of the other path is not resumed."""
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {weighting!r}")
    if not groups or any(not g for g in groups):
        raise ValueError("run_rounds needs at least one group, each with at least one participant")
    if rounds < 0 or checkpoint_every < 1:
        raise ValueError("rounds must be >= 0 and checkpoint_every >= 1")
    batched = batched and len(groups) > 1 and all(len(g) == 1 for g in groups)
    signature = {**(signature or {}), "groups": [[p.n for p in g] for g in groups], "local": vars(local),
                 "seed": seed, "weighting": weighting, "shuffle": shuffle, "data": data_digest(groups),
                 "w0": state_digest(model.state_dict()), **({"batched": True} if batched else {})}
    result = RoundsResult()
    ck = load_checkpoint(checkpoint, signature)
    if ck is not None and ck["round"] <= rounds:
        model.load_state_dict(ck["state"])
        # a checkpoint written before the rounds' seconds left the curve: drop them, as a fresh run's curve has none
        result.curve = [{k: v for k, v in p.items() if k != "seconds"} for p in ck["curve"]]
        result.resumed_from = int(ck["round"])
    elif checkpoint is not None and Path(checkpoint).exists():
        why = "another run's" if ck is None else f"{ck['round']} rounds, more than the {rounds} asked"
        print(f"[rounds] {checkpoint} holds {why} checkpoint; starting from round 0")
    weights = [float(sum(p.n for p in g)) if weighting == "samples" else 1.0 for g in groups]
    last = rounds if stop_after is None else min(rounds, stop_after)
    start = time.perf_counter()
    bar = tqdm(range(result.resumed_from + 1, last + 1), desc=desc, disable=not progress, unit="round",
               initial=result.resumed_from, total=rounds)
    for t in bar:
        t0 = time.perf_counter()
        if batched:
            states = _train_batched(model, groups, local, seed, t)
        else:
            states = _train_sequential(model, groups, local, seed, t, shuffle)
        model.load_state_dict(average_state_dicts(states, weights))
        acc = float(evaluate(model))
        result.curve.append({"round": t, "test_acc": acc})
        result.round_seconds.append(round(time.perf_counter() - t0, 3))
        bar.set_postfix(acc=f"{acc:.2f}", refresh=False)
        if checkpoint is not None and (t % checkpoint_every == 0 or t == last):
            _save(Path(checkpoint), signature, t, model.state_dict(), result.curve)
    bar.close()
    result.seconds = time.perf_counter() - start
    return result
