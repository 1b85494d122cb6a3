"""Several clients of one architecture trained together as ONE batched model (``torch.func`` + ``vmap``).

The clients' parameters and buffers are stacked (``torch.func.stack_module_state``) and a single copy of the
module is run with ``functional_call`` under ``vmap`` over the stacked state, so one forward/backward serves
every client. The result equals training each client alone with :func:`osfl.clients.training.train_classifier`
within float tolerance (``tests/test_batched_training.py``), because everything that makes a client's run is
kept per client:

* data order and augmentation: each client keeps its own CPU ``torch.Generator``; per epoch it draws its
  permutation first, then one augmentation draw per batch, exactly the sequence of the sequential path;
* batches: a client's epoch has ``ceil(n_k / B)`` batches, the last one smaller (no ``drop_last``). At a step
  where clients are at different batch sizes (the last batch, or a client that has finished its epoch), the
  step runs once per batch size over the subset of clients at that size, so no sample is padded and BatchNorm
  statistics see exactly the client's batch;
* optimiser: SGD with momentum and weight decay, written on the stacked tensors with torch's update rule
  (``d = g + wd·p``; ``buf = momentum·buf + d``, ``buf = d`` at a client's first step; ``p -= lr·buf``), applied
  only to the clients that took the step;
* gradient-norm clipping (``grad_clip`` > 0, OFedED SPEC §2.1 [CB]) is per client: each client's total norm
  over its slice of every stacked gradient, with ``torch.nn.utils.clip_grad_norm_``'s coefficient
  (:func:`_clip_per_client_`), before weight decay and momentum;
* BatchNorm running statistics are per client (stacked buffers updated inside ``vmap``).

DP-SGD (``dp_sigma`` > 0, :mod:`osfl.clients.dp`) is not batched: :func:`train_clients` trains such clients
one by one.

Models with stochastic layers (dropout, as FedMHO's VGG-9) are not batched: their masks come from the device's
random stream, which ``vmap`` cannot split per client the way the sequential path draws them, so
:func:`train_clients` trains such clients one by one (:func:`batchable`) and the numbers stay those of the
sequential path.

Loss per client is the mean cross-entropy over its batch; the batched loss is the sum over clients, whose
gradient with respect to each client's slice is that client's own gradient.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

from ..accel import Accel
from ..evaluation import to_float
from ..models import architecture_key, hookless_copy
from ..augment import augment_batch
from .dp import check_dp_model
from .parallel import client_processes, local_curve, train_in_processes
from .training import TrainResult, has_dropout, prepare_model, train_classifier


def _sgd_(params, grads, bufs, rows, *, lr: float, momentum: float, weight_decay: float) -> None:
    """torch.optim.SGD (dampening 0, no Nesterov) on rows ``rows`` (None = all) of stacked tensors, in place.

    The momentum buffer starts at zero, so its first update ``0·momentum + d`` equals torch's ``buf = d``.
    """
    with torch.no_grad():
        for name, p in params.items():
            sub = p if rows is None else p[rows]
            d = grads[name] + weight_decay * sub if weight_decay else grads[name]
            if momentum:
                buf = bufs[name] if rows is None else bufs[name][rows]
                buf = buf.mul_(momentum).add_(d)
                if rows is not None:
                    bufs[name][rows] = buf
                d = buf
            if rows is None:
                p.sub_(lr * d)
            else:
                p[rows] = sub - lr * d


def _clip_per_client_(grads: dict[str, torch.Tensor], max_norm: float) -> None:
    """Scale each client's row of the stacked ``grads`` (k, ...) in place so that the client's total gradient
    norm is at most ``max_norm``, as ``torch.nn.utils.clip_grad_norm_`` does for one model: total = ‖(‖g_p‖)_p‖,
    coefficient max_norm / (total + 1e-6) clamped to 1."""
    with torch.no_grad():
        norms = torch.stack([torch.linalg.vector_norm(g.flatten(1), dim=1) for g in grads.values()])  # (P, k)
        coef = (max_norm / (torch.linalg.vector_norm(norms, dim=0) + 1e-6)).clamp(max=1.0)  # (k,)
        for g in grads.values():
            g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))


def batchable(model: nn.Module) -> bool:
    """Whether ``model`` can train inside the batched (``vmap``) path: no dropout layer with p > 0."""
    return not has_dropout(model)


class BatchedClients:
    """Stacked state of ``models`` (one architecture) and one training step over any subset of them."""

    def __init__(self, models: Sequence[nn.Module]):
        if not all(batchable(m) for m in models):
            raise ValueError("batched client training: a model has dropout (random masks per client cannot be "
                             "drawn inside vmap); train it with train_clients, which runs such clients one by one")
        self.models = list(models)
        self.base = hookless_copy(self.models[0])
        params, buffers = stack_module_state(self.models)
        self.params = {k: v.detach().clone() for k, v in params.items()}
        self.buffers = {k: v.detach().clone() for k, v in buffers.items()}
        self.bufs = {k: torch.zeros_like(v) for k, v in self.params.items()}

    def _loss(self, params, buffers, x, y):
        def one(p, b, xb, yb):
            return F.cross_entropy(functional_call(self.base, (p, b), (xb,)), yb)

        return vmap(one)(params, buffers, x, y)  # (k,) mean CE per client

    def step(self, rows: list[int] | None, x: torch.Tensor, y: torch.Tensor, *, lr: float, momentum: float,
             weight_decay: float, accel: Accel | None = None, grad_clip: float = 0.0) -> torch.Tensor:
        """One SGD step for the clients ``rows`` (None = all) on their batches x (k, B, ...), y (k, B); with
        ``grad_clip`` > 0 each client's gradient is clipped to that total norm first.

        Returns the detached per-client losses (k,).
        """
        self.base.train()
        if rows is None:
            params = {k: v.requires_grad_(True) for k, v in self.params.items()}
            buffers = self.buffers
        else:
            idx = torch.as_tensor(rows, device=next(iter(self.params.values())).device)
            params = {k: v[idx].detach().requires_grad_(True) for k, v in self.params.items()}
            buffers = {k: v[idx].clone() for k, v in self.buffers.items()}
        with (accel or Accel()).autocast(x.device):
            losses = self._loss(params, buffers, x, y).float()
        grads = torch.autograd.grad(losses.sum(), list(params.values()))
        grads = dict(zip(params.keys(), grads))
        if grad_clip > 0:
            _clip_per_client_(grads, grad_clip)
        if rows is None:
            for v in self.params.values():
                v.requires_grad_(False)
            _sgd_(self.params, grads, self.bufs, None, lr=lr, momentum=momentum,
                  weight_decay=weight_decay)
        else:
            _sgd_(self.params, grads, self.bufs, idx, lr=lr, momentum=momentum,
                  weight_decay=weight_decay)
            with torch.no_grad():
                for k, v in self.buffers.items():
                    v[idx] = buffers[k]
        return losses.detach()

    def write_back(self, k: int | None = None) -> None:
        """Copy the stacked state into the caller's model objects (client ``k``, or all)."""
        ks = range(len(self.models)) if k is None else [k]
        with torch.no_grad():
            for i in ks:
                model = self.models[i]
                for name, t in model.named_parameters():
                    t.copy_(self.params[name][i])
                for name, t in model.named_buffers():
                    t.copy_(self.buffers[name][i])


def train_classifiers_batched(
    models: Sequence[nn.Module],
    data: Sequence[tuple[torch.Tensor, torch.Tensor]],
    gens: Sequence[torch.Generator],
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    momentum: float,
    weight_decay: float,
    augment: str,
    eval_fn: Callable[[nn.Module], float] | None = None,
    eval_every: int = 0,
    on_epoch: Callable[[int, int, float], None] | None = None,
    accel: Accel | None = None,
    optimizer: str = "sgd",
    grad_clip: float = 0.0,
    dp_sigma: float = 0.0,
    dp_clip: float = 1.0,
) -> list[TrainResult]:
    """Train ``models`` (same architecture) on their own (x_u8, y) with their own generators, as one batch.

    Same contract as :func:`osfl.clients.training.train_classifier` applied to each client;
    ``on_epoch(client, epoch, loss)`` is called for every client after each epoch. The models are updated in
    place and left in eval mode. DP-SGD (``dp_sigma`` > 0) is refused (``dp_clip`` is accepted so that one
    set of keyword arguments serves both paths): :func:`train_clients` runs it one by one.
    """
    m = len(models)
    if optimizer != "sgd":
        raise ValueError(f"batched client training implements SGD only, not {optimizer!r}; train_clients runs "
                         "other optimisers one by one")
    if dp_sigma > 0:
        raise ValueError("batched client training does not implement DP-SGD (dp_sigma > 0); train_clients runs "
                         "it one by one")
    if not (m == len(data) == len(gens)):
        raise ValueError(f"models, data and gens must have one entry per client; got {m}, {len(data)}, {len(gens)}")
    state = BatchedClients(models)
    device = data[0][0].device
    sizes = [len(y) for _, y in data]
    nsteps = [math.ceil(n / batch_size) for n in sizes]
    curves: list[list[dict]] = [[] for _ in range(m)]
    steps = [0] * m
    seen = [0] * m
    last = [float("nan")] * m
    for epoch in range(1, epochs + 1):
        perms = [torch.randperm(n, generator=g).to(device) for n, g in zip(sizes, gens)]
        totals = torch.zeros(m, device=device)
        for t in range(max(nsteps)):
            by_size: dict[int, list[int]] = {}
            batches = {}
            for k in range(m):
                if t >= nsteps[k]:
                    continue
                idx = perms[k][t * batch_size:(t + 1) * batch_size]
                x_u8, y = data[k]
                batches[k] = (augment_batch(to_float(x_u8[idx]), augment, gens[k]), y[idx])
                by_size.setdefault(len(idx), []).append(k)
            for size, ks in by_size.items():
                xs = torch.stack([batches[k][0] for k in ks])
                ys = torch.stack([batches[k][1] for k in ks])
                rows = None if len(ks) == m else ks
                losses = state.step(rows, xs, ys, lr=lr, momentum=momentum, weight_decay=weight_decay,
                                    accel=accel, grad_clip=grad_clip)
                totals[ks] += losses * size
                for k in ks:
                    steps[k] += 1
        for k in range(m):
            seen[k] += sizes[k]
        mean_loss = (totals / torch.tensor(sizes, device=device, dtype=totals.dtype)).tolist()
        last = mean_loss
        if eval_fn is not None and eval_every > 0 and (epoch % eval_every == 0 or epoch == epochs):
            for k in range(m):
                state.write_back(k)
                curves[k].append({"epoch": epoch, "test_acc": eval_fn(models[k]), "train_loss": mean_loss[k]})
        if on_epoch is not None:
            for k in range(m):
                on_epoch(k, epoch, mean_loss[k])
    state.write_back()
    for model in models:
        model.eval()
    return [TrainResult(epochs, steps[k], seen[k], last[k], curves[k]) for k in range(m)]


def train_clients(
    models: Sequence[nn.Module],
    data: Sequence[tuple[torch.Tensor, torch.Tensor]],
    gens: Sequence[torch.Generator],
    *,
    batched: bool,
    on_epoch: Callable[[int, int, float], None] | None = None,
    accel: Accel | None = None,
    noise_gens: Sequence[torch.Generator] | None = None,
    **hp,
) -> tuple[list[TrainResult], list[float]]:
    """Train every client; returns (results, seconds per client), both in the order of ``models``.

    ``batched``: clients are grouped by architecture (:func:`osfl.models.architecture_key`) and each group of
    two or more is trained as one batched model; a client alone in its architecture, a client whose model is not
    :func:`batchable` (dropout), or every client when ``batched`` is False or the training is Adam or DP-SGD,
    is trained with :func:`osfl.clients.training.train_classifier`. A group's seconds are
    shared equally among its clients. ``noise_gens``: each client's DP-SGD noise generator (with
    ``dp_sigma`` > 0; every model is checked for BatchNorm before any client trains).
    """
    accel = accel or Accel()
    dp = hp.get("dp_sigma", 0.0) > 0
    if dp:
        if noise_gens is None or len(noise_gens) != len(models):
            raise ValueError("train_clients: dp_sigma > 0 needs noise_gens, one seeded CPU generator per client")
        for model in models:
            check_dp_model(model)
    # the batched step is SGD's without DP; Adam and DP-SGD train one by one
    batched = batched and hp.get("optimizer", "sgd") == "sgd" and not dp
    groups: dict = {}
    for k, model in enumerate(models):
        groups.setdefault(architecture_key(model) if batched and batchable(model) else k, []).append(k)
    results: list[TrainResult | None] = [None] * len(models)
    seconds = [0.0] * len(models)
    # the one-by-one clients in worker processes where OSFL_CLIENT_PROCESSES asks (clients/parallel.py): the same
    # bits, several at a time; a local test curve (eval_fn, a closure) keeps them here
    alone = [ks[0] for ks in groups.values() if len(ks) == 1]
    processes = client_processes()
    if processes > 1 and len(alone) > 1 and not local_curve(hp):
        for k, (res, secs) in train_in_processes(alone, models, data, gens, noise_gens, processes=processes,
                                                  accel=accel, hp={**hp, "eval_fn": None},
                                                  on_epoch=on_epoch).items():
            results[k], seconds[k] = res, secs
        groups = {key: ks for key, ks in groups.items() if len(ks) > 1}
    for ks in groups.values():
        t0 = time.perf_counter()
        if len(ks) > 1:
            cb = None if on_epoch is None else (lambda j, e, loss, ks=ks: on_epoch(ks[j], e, loss))
            for k, res in zip(ks, train_classifiers_batched([models[k] for k in ks], [data[k] for k in ks],
                                                            [gens[k] for k in ks], on_epoch=cb, accel=accel,
                                                            **hp)):
                results[k] = res
        else:
            k = ks[0]
            device = data[k][0].device
            cb = None if on_epoch is None else (lambda e, loss, k=k: on_epoch(k, e, loss))
            noise = {} if noise_gens is None else {"noise_gen": noise_gens[k]}
            results[k] = train_classifier(prepare_model(models[k], accel, device), *data[k], gen=gens[k],
                                          on_epoch=cb, accel=accel, **noise, **hp)
        for k in ks:
            seconds[k] = (time.perf_counter() - t0) / len(ks)
    return results, seconds
