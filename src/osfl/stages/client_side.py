"""The inputs of a stage that runs on the clients after their first upload (OFedED's condense@, MA-Echo's project@):
the classifier uploads, the partition and the training data, each checked once here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ..clients.upload import read_uploads
from ..errors import ConfigError
from ..partition import load_partition
from .common import ExperimentPaths, load_data, require_input


@dataclass
class ClientInputs:
    """What a stage that runs on the clients after their first upload reads: the classifier uploads (one per
    client, in client order), the partition (verified against the data) and the training arrays on the device."""

    uploads: list
    partition: Any
    x: torch.Tensor  # all training images (the prepared dtype), on the device
    y: torch.Tensor  # their labels, int64


def client_inputs(paths: ExperimentPaths, cfg: dict) -> ClientInputs:
    """The clients' uploads under ``paths.clients``, the training data and the partition, each checked: a missing
    input names the stage that makes it, a partition that does not fit the data or the uploads fails early."""
    uploads = [u for u in read_uploads(require_input(paths.clients, "train_clients")) if u.kind == "classifier"]
    if not uploads:
        raise ConfigError("input", f"{paths.clients} holds no classifier uploads")
    data = load_data(paths, cfg)
    pt = load_partition(require_input(paths.partition / "partition.json", "partition"))
    pt.verify(data.y_train)
    if [u.client_id for u in uploads] != list(range(len(pt.client_indices))):
        raise ConfigError("input", f"{paths.clients} holds uploads of clients {[u.client_id for u in uploads]}, the "
                                   f"partition {len(pt.client_indices)} clients (0 .. {len(pt.client_indices) - 1})")
    device = cfg["device"]
    return ClientInputs(uploads, pt, torch.from_numpy(data.x_train).to(device),
                        torch.from_numpy(data.y_train).long().to(device))
