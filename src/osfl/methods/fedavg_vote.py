"""FedAvg with prototype voting (FedMHO SPEC §2; official ``pcode/aggregation/federated_average_ensemble.py``), the
FedAvg baseline of FedMHO's heterogeneous setting: the clients' classifiers are averaged within each architecture
("model prototype": FedMHO's 5 VGG-9 and 5 CNNs), and the global prediction is the average of the prototype models'
outputs (soft voting). ``weighting: uniform`` is the code's 1/n average (FedMHO SPEC §1.6, ``_fedavg``); ``samples``
weights by client data size. The official MNIST CNN ends in a softmax, so its vote averages VGG-9 logits with CNN
probabilities, as the code does (SPEC §7.11). No server training, so no curve.
"""
from __future__ import annotations

from . import register
from .base import ServerContext, ServerMethod, ServerResult, prototype_averages


@register
class FedAvgVote(ServerMethod):
    name = "fedavg_vote"
    description = "FedAvg within each client architecture, the prototypes' logits averaged at prediction"
    defaults = {"weighting": "uniform"}
    allowed = {"weighting": ("uniform", "samples")}

    def run(self, ctx: ServerContext) -> ServerResult:
        groups, prototypes = prototype_averages(ctx, self.params["weighting"], self.name)
        return ServerResult("voting", prototypes={a: m.eval() for a, m in prototypes.items()}, choices={
            **self.params, "prototypes": {a: [u.client_id for u in ups] for a, ups in groups.items()}})
