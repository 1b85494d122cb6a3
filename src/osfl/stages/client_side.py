"""The inputs of a stage that runs on the clients after their first upload (OFedED's condense@, MA-Echo's project@,
HFLDD's soft_labels@, kip@ and hybrid@): the classifier uploads, the partition and the training data, each checked
once here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..clients.upload import read_uploads
from ..config import ExperimentPaths, RunConfig
from ..errors import ConfigError
from ..partition import load_partition
from .common import load_data, require_input


@dataclass
class ClientData:
    """The training data the partition splits among the clients: the prepared arrays, the partition (verified
    against them) and the training images and labels on the device."""

    data: Any  # the prepared dataset (ArrayData)
    partition: Any
    x: torch.Tensor  # all training images (the prepared dtype), on the device
    y: torch.Tensor  # their labels, int64


@dataclass
class ClientInputs(ClientData):
    """:class:`ClientData` and the classifier uploads, one per client of the partition, in client order."""

    uploads: list = field(default_factory=list)


def classifier_uploads(paths: ExperimentPaths) -> list:
    """The classifier uploads under ``paths.clients`` (stage train_clients), sorted by client; none fails early."""
    uploads = [u for u in read_uploads(require_input(paths.clients, "train_clients")) if u.kind == "classifier"]
    if not uploads:
        raise ConfigError("input", f"{paths.clients} holds no classifier uploads")
    return uploads


def client_data(paths: ExperimentPaths, cfg: RunConfig) -> ClientData:
    """The prepared data and the partition, the partition verified against the data (a missing input names the stage
    that makes it), the training arrays on ``cfg.device``."""
    data = load_data(paths, cfg)
    pt = load_partition(require_input(paths.partition / "partition.json", "partition"))
    pt.verify(data.y_train)
    device = cfg.device
    return ClientData(data, pt, torch.from_numpy(data.x_train).to(device),
                      torch.from_numpy(data.y_train).long().to(device))


def client_inputs(paths: ExperimentPaths, cfg: RunConfig) -> ClientInputs:
    """:func:`client_data` and :func:`classifier_uploads`; uploads that are not one per client of the partition fail
    early."""
    uploads = classifier_uploads(paths)
    d = client_data(paths, cfg)
    if [u.client_id for u in uploads] != list(range(len(d.partition.client_indices))):
        raise ConfigError("input", f"{paths.clients} holds uploads of clients {[u.client_id for u in uploads]}, the "
                                   f"partition {len(d.partition.client_indices)} clients "
                                   f"(0 .. {len(d.partition.client_indices) - 1})")
    return ClientInputs(d.data, d.partition, d.x, d.y, uploads)
