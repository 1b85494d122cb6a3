"""FedAvg with prototype voting (FedMHO SPEC §2; official ``pcode/aggregation/federated_average_ensemble.py``), the
FedAvg baseline of FedMHO's heterogeneous setting: the clients' classifiers are averaged within each architecture
("model prototype": FedMHO's 5 VGG-9 and 5 CNNs), and the global prediction is the average of the prototype models'
outputs (soft voting). ``weighting: uniform`` is the code's 1/n average (FedMHO SPEC §1.6, ``_fedavg``); ``samples``
weights by client data size. The official MNIST CNN ends in a softmax, so its vote averages VGG-9 logits with CNN
probabilities, as the code does (SPEC §7.11). No server training, so no curve.
"""
from __future__ import annotations

from ..errors import ConfigError
from . import register
from .base import ServerContext, ServerMethod, ServerResult, average_state_dicts


@register
class FedAvgVote(ServerMethod):
    name = "fedavg_vote"
    description = "FedAvg within each client architecture, the prototypes' logits averaged at prediction"
    defaults = {"weighting": "uniform"}
    allowed = {"weighting": ("uniform", "samples")}

    def run(self, ctx: ServerContext) -> ServerResult:
        groups = ctx.prototypes()
        if not groups:
            raise ConfigError("methods", "fedavg_vote needs classifier uploads; none came")
        prototypes = {}
        for arch, ups in groups.items():
            w = [float(u.n_samples) for u in ups] if self.params["weighting"] == "samples" else [1.0] * len(ups)
            model = ctx.make_global(arch)
            model.load_state_dict(average_state_dicts([u.state_dict() for u in ups], w))
            prototypes[arch] = model.eval()
        return ServerResult("voting", prototypes=prototypes, choices={
            **self.params, "prototypes": {a: [u.client_id for u in ups] for a, ups in groups.items()}})
