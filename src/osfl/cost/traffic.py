"""Communication traffic of multi-round federated training to reach a target accuracy (HFLDD §III-B, §IV-C, §V-C;
SPEC §1.8): the closed forms of HFLDD's Eqs. 3, 6 and 7, fed with parameter counts, image sizes and the rounds a
run actually needed.

* FedAvg (Eq. 3): ``N · (2T − 1) · |w| · B_1`` — every one of the N clients downloads and uploads the model each
  round, except the first download (a random seed, not counted).
* HFLDD (Eq. 6): ``N·|D_g|·N_c·B_1`` (each client's soft labels on the public set) ``+ Σ |D̃_i|·B_s`` (the
  members' distilled images, sent to their header) ``+ H·|w|·(2T − 1)·B_1`` (the H headers with the server).
* FedSeq (Eq. 7): ``O · |w| · B_1 · ((2T − 1) + T·J)`` — O superclients with J clients each; inside a superclient
  the model passes from client to client every round.

Conventions, each checked against the paper's six printed numbers (tests/test_traffic.py): B_1 = 4 bytes per
parameter and per soft-label entry; a distilled image costs 1 byte per pixel value (28×28×1 = 784 B for MNIST,
3,072 B for CIFAR-10); "MB" is MiB (2^20 bytes); T is the number of rounds run, i.e. the paper's printed round index
(0-based: the accuracy record after each aggregation) plus one (:func:`rounds_to_target`). Not counted, as in the
paper: labels of distilled images, the broadcast of the cluster assignment, FedSeq's own clustering.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

MIB = 2 ** 20
BYTES_PER_PARAM = 4  # B_1 = 32 bits, parameters and soft-label entries alike


@dataclass(frozen=True)
class Traffic:
    """Bytes sent in total, by part (the terms of the method's equation)."""

    method: str
    parts: dict[str, int] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return sum(self.parts.values())

    @property
    def mib(self) -> float:
        return self.bytes / MIB

    def as_dict(self) -> dict:
        return {"method": self.method, "bytes": self.bytes, "mib": self.mib,
                "parts_mib": {k: v / MIB for k, v in self.parts.items()}}


def _check(**values: int) -> None:
    for name, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {v!r}")


def model_exchanges(rounds: int) -> int:
    """Model transfers per participant over ``rounds`` rounds: 2T − 1 (the first download is a seed)."""
    _check(rounds=rounds)
    return max(0, 2 * rounds - 1)


def fedavg_traffic(clients: int, rounds: int, params: int, bytes_per_param: int = BYTES_PER_PARAM) -> Traffic:
    """Eq. 3: ``clients`` participants exchanging a model of ``params`` parameters for ``rounds`` rounds."""
    _check(clients=clients, params=params)
    return Traffic("FedAvg", {"model": clients * model_exchanges(rounds) * params * bytes_per_param})


def hfldd_traffic(clients: int, public_size: int, num_classes: int, distilled_images: int, image_bytes: int,
                  headers: int, rounds: int, params: int, bytes_per_param: int = BYTES_PER_PARAM) -> Traffic:
    """Eq. 6: soft labels (``clients`` × ``public_size`` × ``num_classes`` entries), ``distilled_images`` images of
    ``image_bytes`` each sent to the headers (all members together), and the ``headers`` exchanging the model."""
    _check(clients=clients, public_size=public_size, num_classes=num_classes, distilled_images=distilled_images,
           image_bytes=image_bytes, headers=headers, params=params)
    return Traffic("HFLDD", {"soft_labels": clients * public_size * num_classes * bytes_per_param,
                             "distilled": distilled_images * image_bytes,
                             "model": headers * model_exchanges(rounds) * params * bytes_per_param})


def fedseq_traffic(superclients: int, per_superclient: int, rounds: int, params: int,
                   bytes_per_param: int = BYTES_PER_PARAM) -> Traffic:
    """Eq. 7: ``superclients`` exchanging the model with the server, plus ``per_superclient`` hand-overs inside each
    superclient every round."""
    _check(superclients=superclients, per_superclient=per_superclient, rounds=rounds, params=params)
    return Traffic("FedSeq", {"model": superclients * model_exchanges(rounds) * params * bytes_per_param,
                              "chain": superclients * rounds * per_superclient * params * bytes_per_param})


def rounds_to_target(accuracies: Sequence[float], target: float) -> int | None:
    """T for the cost model: the number of rounds run until the test accuracy first reaches ``target`` (same unit
    as ``accuracies``, one per round, in order). The paper prints the 0-based index of that round, i.e. T − 1.
    None when the run never reaches it."""
    for r, acc in enumerate(accuracies):
        if acc is not None and not math.isnan(acc) and acc >= target:
            return r + 1
    return None
