"""FedAvg in one shot (McMahan et al., AISTATS 2017): the global model is Σ_k w_k θ_k of the uploaded models.

All floating-point entries of the state dict are averaged, BatchNorm running statistics included; integer
buffers (``num_batches_tracked``) take the maximum. ``weighting``: ``samples`` = n_k/n (standard FedAvg, the
FedHydra SPEC §2 proposal) or ``uniform`` = 1/m (DENSE's ``average_weights``). No server training, so it has no
curve. Homogeneous architectures only.
"""
from __future__ import annotations

from ..errors import ConfigError
from . import register
from .base import ServerContext, ServerMethod, ServerResult, average_state_dicts, client_weights


@register
class FedAvg(ServerMethod):
    name = "fedavg"
    description = "one-shot parameter averaging, weights n_k/n"
    defaults = {"weighting": "samples"}
    allowed = {"weighting": ("samples", "uniform")}

    def run(self, ctx: ServerContext) -> ServerResult:
        archs = {u.manifest.get("arch") for u in ctx.uploads}
        if len(archs) != 1 or ctx.model_name not in archs:
            raise ConfigError("methods", f"fedavg needs every client and the server on one architecture, got {sorted(archs)}")
        weights = client_weights(ctx, self.params["weighting"])
        state = average_state_dicts([u.state_dict() for u in ctx.uploads], weights)
        model = ctx.make_global()
        model.load_state_dict(state)
        return ServerResult("classifier", model=model.eval(), choices=dict(self.params))
