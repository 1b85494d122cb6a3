"""The averaging ensemble of client logits, AE(x) = Σ_k w_k F_k(x) / Σ_k w_k, evaluated directly.

This is the teacher of DENSE (``Ensemble_A``: plain average) and FedHydra, and the upper reference both
papers compare to. ``weighting``: ``uniform`` (DENSE) or ``samples`` (n_k/n).
"""
from __future__ import annotations

from . import register
from .base import ServerContext, ServerMethod, ServerResult, client_weights


@register
class AverageEnsemble(ServerMethod):
    name = "ensemble"
    description = "average of client logits (upper reference)"
    defaults = {"weighting": "uniform"}
    allowed = {"weighting": ("uniform", "samples")}

    def run(self, ctx: ServerContext) -> ServerResult:
        weights = client_weights(ctx, self.params["weighting"])
        return ServerResult("ensemble", members=[u.client_id for u in ctx.uploads], weights=weights,
                            choices=dict(self.params))
