"""Who trains together in HFLDD's runs (SPEC §1.5-§1.6, §2): the groups :func:`osfl.protocols.rounds.run_rounds` takes.

* HFLDD: one group per heterogeneous cluster, holding its header alone, whose data is D_h = its own real data joined
  with the distilled images its members sent (uint8, as transmitted; no re-weighting, SPEC §6.18) —
  :func:`header_groups`.
* FedAvg: every client a group of one — :func:`client_groups`.
* FedSeq: ``superclients`` chains of equal size (the remainder spread over the first ones), the clients assigned by a
  seeded random permutation (SPEC §2.2's "simpler acceptable stand-in"; FedSeq's own greedy KL grouping is not
  built) — :func:`superclient_groups`; their order inside a chain is reshuffled every round by ``run_rounds``.
* Centralized learning: one group holding all the training data — :func:`central_group`.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from ..clustering import Clustering
from ..config import check_choice, check_float, check_int
from ..sections import section_reader
from .rounds import WEIGHTINGS, Participant

METHODS = ("hfldd", "fedavg", "fedseq", "cl")


@dataclass(frozen=True)
class HybridSettings:
    """The ``hybrid`` section of HFLDD's params (SPEC §1.6, §2, §3.5): T = 300 rounds [S], E_2 = 2 local epochs [S],
    batch 32 [S], SGD lr 0.01 [S], momentum and weight decay 0 [P: unstated], aggregation weighted by the groups'
    samples [P], FedSeq's 10 superclients [S], centralized learning's batch 64 [S] (one epoch per round [P]), a
    checkpoint every 10 rounds. T and E_2 are epoch-like counts: the profile scales them."""

    T: int = 300
    epochs: int = 2
    batch_size: int = 32
    lr: float = 0.01
    momentum: float = 0.0
    weight_decay: float = 0.0
    weighting: str = "samples"
    superclients: int = 10
    cl_batch_size: int = 64
    checkpoint_every: int = 10

    KEYS = ("T", "epochs", "batch_size", "lr", "momentum", "weight_decay", "weighting", "superclients",
            "cl_batch_size", "checkpoint_every")

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None, key: str = "hybrid") -> "HybridSettings":
        get = section_reader(cls, section, key)
        ints = {k: check_int(f"{key}.{k}", get(k), minimum=1)
                for k in ("T", "epochs", "batch_size", "superclients", "cl_batch_size", "checkpoint_every")}
        return cls(**ints, lr=check_float(f"{key}.lr", get("lr"), positive=True),
                   momentum=check_float(f"{key}.momentum", get("momentum"), minimum=0.0),
                   weight_decay=check_float(f"{key}.weight_decay", get("weight_decay"), minimum=0.0),
                   weighting=check_choice(f"{key}.weighting", get("weighting"), list(WEIGHTINGS)))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def client_participants(client_indices: Sequence[Sequence[int]], x: torch.Tensor, y: torch.Tensor) -> list[Participant]:
    """Client k's data (``x[idx_k]``, ``y[idx_k]``) as a participant, for every client of a partition."""
    out = []
    for k, idx in enumerate(client_indices):
        i = torch.as_tensor(np.asarray(idx, dtype=np.int64), device=x.device)
        out.append(Participant(x[i], y[i], f"client_{k}"))
    return out


def client_groups(participants: Sequence[Participant]) -> list[list[Participant]]:
    return [[p] for p in participants]


def header_groups(clustering: Clustering, participants: Sequence[Participant],
                  distilled: Mapping[int, tuple[torch.Tensor, torch.Tensor]]) -> list[list[Participant]]:
    """One group per heterogeneous cluster: its header's own data plus every member's distilled (images, labels)."""
    missing = sorted(set(clustering.members) - set(distilled))
    if missing:
        raise ValueError(f"no distilled set from member client(s) {missing}; every non-header client sends one")
    groups = []
    for cluster, header in zip(clustering.heterogeneous, clustering.headers):
        own = participants[header]
        received = [distilled[c] for c in cluster if c != header]
        x = torch.cat([own.x] + [xi.to(own.x.device, own.x.dtype) for xi, _ in received])
        y = torch.cat([own.y] + [yi.to(own.y.device, own.y.dtype) for _, yi in received])
        groups.append([Participant(x, y, f"header_{header}")])
    return groups


def superclient_groups(participants: Sequence[Participant], superclients: int,
                       rng: np.random.Generator) -> list[list[Participant]]:
    """``superclients`` chains of (nearly) equal size from a seeded random permutation of the clients."""
    if not 1 <= superclients <= len(participants):
        raise ValueError(f"superclients must lie in 1 .. {len(participants)} (the clients), got {superclients}")
    order = rng.permutation(len(participants))
    return [[participants[int(i)] for i in part] for part in np.array_split(order, superclients)]


def central_group(participants: Sequence[Participant]) -> list[list[Participant]]:
    """All clients' data as one participant (centralized learning: a round is an epoch over everything)."""
    return [[Participant(torch.cat([p.x for p in participants]), torch.cat([p.y for p in participants]), "all")]]
