"""The server side of one round: a method built from its ``server.<name>`` hyper-parameters, the context it sees
and its seeded run. The one-shot server stage runs it once; the multi-round protocol once per round.

Nothing here reads or writes files: the caller loads the uploads and the test set and passes FedDF's auxiliary
data as a loader (``aux_loader(name) -> uint8 images on the device``).
"""
from __future__ import annotations

import time
from typing import Callable

import torch

from ..clients.upload import ClientUpload
from ..config import RunConfig
from ..errors import ConfigError
from ..methods import METHODS
from ..methods.base import ServerContext, ServerMethod, ServerResult
from ..runtime import derive_seed, seeded_default_generators


def make_method(cfg: RunConfig, name: str) -> ServerMethod:
    """The method ``name`` with the hyper-parameters the run's configuration validated for it
    (:meth:`osfl.config.RunConfig.method_settings`); it must be listed in ``methods``."""
    if name not in cfg.methods:
        raise ConfigError("methods", f"{name!r} is not in methods={cfg.methods}")
    return METHODS.get(name, key="methods")(**cfg.method_settings(name))


def build_context(cfg: RunConfig, uploads: list[ClientUpload], x_test: torch.Tensor, y_test: torch.Tensor,
                  device: torch.device, *, progress: bool, seed: int | None = None,
                  aux_loader: Callable[[str], torch.Tensor] | None = None,
                  on_epoch: Callable[[dict], None] | None = None,
                  distilled: list[ClientUpload] | None = None, track_teacher: bool = False) -> ServerContext:
    """What a server method sees: the uploads, the server architecture, the test set, the aux-data loader.

    ``seed`` (default: the run's seed) seeds the context's generators (:meth:`ServerContext.rng`); ``on_epoch``
    receives each epoch's curve entry as it is measured (live logging); ``distilled``: the clients' distilled sets
    (a two-transmission round's second upload) for methods that read them; ``track_teacher``: record the teacher's
    test accuracy per epoch in methods that can (``ServerMethod.tracks_teacher``).
    """
    spec, inputs = cfg.dataset, cfg.inputs.norm()
    for u in uploads:  # the clients must have been trained on the inputs this run prepares
        if u.kind == "classifier" and (u.manifest.get("inputs"), list(u.manifest["input_shape"])) != (inputs, list(spec.shape)):
            raise ConfigError("inputs", f"client {u.client_id} ({u.root.parent}) was trained on inputs "
                                        f"{u.manifest['input_shape']} normalised by {u.manifest.get('inputs')}; this run's "
                                        f"params give {list(spec.shape)} normalised by {inputs}: train the clients again")
    return ServerContext(uploads=uploads, model_name=cfg.model, input_shape=spec.shape, inputs=inputs,
                         num_classes=spec.num_classes, x_test=x_test, y_test=y_test, device=device,
                         seed=cfg.seed if seed is None else seed, profile=cfg.profile, progress=progress,
                         dataset=spec.name, aux_loader=aux_loader, on_epoch=on_epoch,
                         distilled=list(distilled or []), track_teacher=track_teacher,
                         batched_ensemble=cfg.runtime.teachers_batched(device))


def run_method(method: ServerMethod, ctx: ServerContext, cfg: RunConfig) -> tuple[ServerResult, float]:
    """Run ``method`` (under the runtime's autocast); (result, seconds). Every random draw of a method comes from
    the context's seeded CPU generators (:meth:`ServerContext.rng`, :meth:`ServerContext.make_global`), never from
    a global or device generator, so a seed gives the same draws on every device. What torch draws by itself,
    dropout's masks in a global model that has dropout (FedMHO's VGG-9), comes from torch's default generators:
    they are forked for the run and seeded from the run's seed (``derive_seed(seed, "server", "default-generator")``,
    as each client's training seeds them from its own), so the run gives the same bytes in every process."""
    t0 = time.perf_counter()
    with seeded_default_generators(derive_seed(ctx.seed, "server", "default-generator"), ctx.device):
        with cfg.runtime.autocast(ctx.device):
            result = method.run(ctx)
    return result, time.perf_counter() - t0
