"""The clients of one federated setting: building them from a partition, one round of local training, uploads.

Shared by the ``train_clients`` stage (one shot: one round from the shared initial model) and the multi-round
protocol (:mod:`osfl.protocols.multi_round`: every round starts from the broadcast global model). The order of
the seeded draws is part of the contract (the one-shot stage's outputs must not change):

1. :func:`initial_states`: for each distinct architecture in client order, :func:`osfl.runtime.seeded_init` then one
   model built (the first architecture under ``derive_seed(seed, "init")``, any other under
   ``derive_seed(seed, "init", arch)``);
2. :func:`build_cohort`: for each client k, ``seeded_init(derive_seed(seed, "client-init", k))``, one
   model built, then the start state loaded (shared init or global model); its data generator is seeded with
   ``data_seed(k)``, its DP-SGD noise generator with ``derive_seed(data_seed(k), "dp-noise")`` (a second CPU
   generator, read only with ``local.dp_sigma`` > 0; seeding it draws nothing from any other stream).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
import torch.nn as nn
from tqdm.auto import tqdm

from ..accel import Accel
from ..evaluation import accuracy
from ..live import ClientsLive
from ..models import build_model
from ..models.normalise import input_normalisation
from ..runtime import derive_seed, seeded_init
from .batched import batchable, train_clients
from .parallel import client_processes, local_curve
from .training import TrainResult
from .upload import ClientUpload, write_upload

State = dict[str, torch.Tensor]


def initial_states(archs: Sequence[str], shape, num_classes: int, seed: int, inputs: dict | None = None) -> dict[str, State]:
    """One common initial model per architecture (``local.init: shared``), keyed by architecture."""
    states = {}
    for arch in dict.fromkeys(archs):
        with seeded_init(derive_seed(seed, "init") if arch == archs[0] else derive_seed(seed, "init", arch)):
            states[arch] = build_model(arch, shape, num_classes, inputs).state_dict()
    return states


@dataclass
class Cohort:
    """Every client's model (on the device), training data (uint8 images, labels), data generator and DP-SGD
    noise generator (None: none given; DP-SGD then refuses to start)."""

    archs: list[str]
    models: list[nn.Module]
    data: list[tuple[torch.Tensor, torch.Tensor]]
    gens: list[torch.Generator]
    noise_gens: list[torch.Generator] | None = None

    def __len__(self) -> int:
        return len(self.models)


def build_cohort(archs: Sequence[str], client_indices: Sequence[Any], x_all: torch.Tensor, y_all: torch.Tensor,
                 shape, num_classes: int, device: torch.device, *, seed: int, start: dict[str, State] | None,
                 data_seed: Callable[[int], int], inputs: dict | None = None) -> Cohort:
    """Client k: a ``archs[k]`` model drawn under ``derive_seed(seed, "client-init", k)``, then loaded with
    ``start[archs[k]]`` unless ``start`` is None (``local.init: independent``); its samples
    ``x_all[client_indices[k]]``; a CPU generator seeded with ``data_seed(k)`` (data order, augmentation) and
    one seeded with ``derive_seed(data_seed(k), "dp-noise")`` (DP-SGD's noise, SPEC §2.8 [P]), kept apart so
    that DP leaves the data order and augmentation of the run without it unchanged. ``inputs``: the models'
    input normalisation (``InputPrep.norm()``), recorded in each upload's manifest."""
    models, data, gens, noise_gens = [], [], [], []
    for k, idx in enumerate(client_indices):
        with seeded_init(derive_seed(seed, "client-init", k)):
            model = build_model(archs[k], shape, num_classes, inputs)
        if start is not None:
            model.load_state_dict(start[archs[k]])
        models.append(model.to(device))
        idx_t = torch.from_numpy(np.asarray(idx)).to(device)
        data.append((x_all[idx_t], y_all[idx_t]))
        gens.append(torch.Generator().manual_seed(data_seed(k)))
        noise_gens.append(torch.Generator().manual_seed(derive_seed(data_seed(k), "dp-noise")))
    return Cohort(list(archs), models, data, gens, noise_gens)


def local_hparams(local, epochs: int, augment: str, accel: Accel, eval_fn=None, eval_every: int = 0) -> dict:
    """The keyword arguments of :func:`osfl.clients.batched.train_clients` for ``local`` (LocalTraining)."""
    return dict(epochs=epochs, batch_size=local.batch_size, lr=local.lr, momentum=local.momentum,
                weight_decay=local.weight_decay, optimizer=local.optimizer, augment=augment, eval_fn=eval_fn, eval_every=eval_every,
                accel=accel, grad_clip=local.grad_clip, dp_sigma=local.dp_sigma, dp_clip=local.dp_clip)


def train_cohort(cohort: Cohort, hp: dict, device: torch.device, *, progress: bool, desc: str = "",
                 live: str | Path | None = None) -> tuple[list[TrainResult], list[float], bool]:
    """Train every client of ``cohort`` in place (batched when ``runtime`` allows and there are two or more).

    Returns (results, seconds per client, batched: every client went through the batched path; clients whose
    model has dropout train one by one, and so do all clients with Adam or DP-SGD). A progress bar counts
    client-epochs; with ``live`` (a folder), each client's loss per epoch is logged there with dvclive as it
    happens (:class:`osfl.live.ClientsLive`).
    """
    n = len(cohort)
    dp = hp.get("dp_sigma", 0.0) > 0  # train_clients refuses BatchNorm models before any client trains
    bar = tqdm(total=hp["epochs"] * n, desc="local training", disable=not progress, mininterval=1.0,
               unit="epoch")
    # batched: SGD without DP only
    want = hp["accel"].batched(device) and n > 1 and hp.get("optimizer", "sgd") == "sgd" and not dp
    with_dropout = sum(not batchable(m) for m in cohort.models)  # trained one by one (clients/batched.py)
    batched = want and not with_dropout
    how = ("one by one (DP-SGD, not batched)" if dp else "batched" if batched
           else "one by one" if not want or with_dropout == n
           else f"batched, {with_dropout} with dropout one by one")
    procs = client_processes()
    if procs > 1 and not batched and n > 1 and not local_curve(hp):
        how += f", {min(procs, n)} at a time (OSFL_CLIENT_PROCESSES)"
    bar.set_description(f"{desc}{n} clients {how}")
    logger = None if live is None else ClientsLive(live, n)

    def on_epoch(k: int, e: int, loss: float) -> None:
        bar.set_postfix(client=k, loss=f"{loss:.3f}", refresh=False)
        bar.update(1)
        if logger is not None:
            logger.epoch(k, e, loss)

    try:
        results, seconds = train_clients(cohort.models, cohort.data, cohort.gens, batched=want, **hp,
                                         on_epoch=on_epoch, noise_gens=cohort.noise_gens)
    finally:
        bar.close()
        if logger is not None:
            logger.end()
    return results, seconds, batched


def upload_cohort(out: str | Path, cohort: Cohort, results: Sequence[TrainResult], *, spec, class_counts,
                  x_test: torch.Tensor, y_test: torch.Tensor, train_info: dict,
                  ids: Sequence[int] | None = None) -> tuple[list[ClientUpload], list[float]]:
    """Write each client's ``classifier`` upload under ``out``; returns (uploads, test accuracy per client).

    ``train_info`` goes into each manifest's ``train`` entry, with the client's final loss and step count.
    ``ids`` are the clients' ids in the whole setting (default 0, 1, ...) when the cohort is a part of it.
    """
    uploads, accs = [], []
    for k, (model, res) in enumerate(zip(cohort.models, results)):
        acc = accuracy(model, x_test, y_test)
        manifest = {
            "arch": cohort.archs[k], "input_shape": list(spec.shape), "num_classes": spec.num_classes,
            "dataset": spec.name, "n_samples": int(len(cohort.data[k][1])),
            "label_histogram": np.asarray(class_counts[k]).tolist(), "local_test_acc": acc,
            "train": {**train_info, "final_loss": res.final_loss, "steps": res.steps},
            "curve": res.curve,
        }
        if input_normalisation(model) is not None:  # the model normalises its input (params' inputs.mean/std)
            manifest["inputs"] = input_normalisation(model)
        uploads.append(write_upload(out, k if ids is None else int(ids[k]), "classifier", manifest,
                                    tensors={"state_dict": model.state_dict()}))
        accs.append(acc)
    return uploads, accs



def cohort_training_flops(cohort: Cohort, hp: dict, device: torch.device) -> int:
    """The FLOPs of training every client of ``cohort`` as :func:`train_cohort` does (``FlopCounterMode``'s count:
    matrix products and convolutions, forward and backward), without counting the run itself: one step of each batch
    size a client sees (``B`` and its epoch's last, smaller batch) is counted on a copy of its model, times the
    steps of that size. Every epoch runs the same steps, so this equals counting the whole run (a test checks) at a
    fraction of its time (the counter slows small-batch training about four-fold). Test evaluations during training
    (``eval_every``) are not training and are not counted."""
    import copy
    import math

    from ..cost.counter import spent
    from .training import train_classifier

    B, total, cache = hp["batch_size"], 0, {}
    step_hp = {k: v for k, v in hp.items() if k not in ("epochs", "eval_fn", "eval_every", "accel")}
    for k, (model, (x, y)) in enumerate(zip(cohort.models, cohort.data)):
        n = len(y)
        for b, count in ((B, n // B), (n % B, 1 if n % B else 0)):
            if not count:
                continue
            key = (cohort.archs[k], b)
            if key not in cache:
                twin = copy.deepcopy(model)
                gen = torch.Generator().manual_seed(0)
                noise = torch.Generator().manual_seed(1)
                with spent(True) as cost:
                    train_classifier(twin, x[:b], y[:b], epochs=1, gen=gen, noise_gen=noise, accel=hp["accel"],
                                     **{**step_hp, "batch_size": b})
                cache[key] = cost.flops
            total += cache[key] * count * hp["epochs"]
    return int(total)
