"""FedCVAE-Ens (Heinbaugh et al., ICLR 2023) as FedMHO's paper runs it, its "FEDCVAE" baseline (FedMHO SPEC §2:
the official FedMHO code with ``--fedcvae True``): every client uploads a CVAE decoder and its label histogram; the
server decodes ``samples`` labelled images with the same class-balanced, squared-count allocation as FedMHO and
trains a randomly initialised global model on them with Adam and cross-entropy. Whether FedMHO's k-means cleaning
applies to this baseline is not stated; ``keep: 1.0`` (no cleaning, as the original) is the SPEC's proposal.
Defaults are the Fashion-MNIST values of the code's ``fedcvae`` branch (Adam 5e-4, 20 epochs, batch 64, M 6,000).

Not this: the original FedCVAE-Ens code draws z from a truncated normal, splits the budget by client data size and
samples labels from each client's own distribution (ANCHORS §4); those are not implemented.
"""
from __future__ import annotations

from ..generative.fusion import epoch_step, synthetic_set
from . import register
from .base import ServerContext, ServerMethod, ServerResult, track_epochs


@register
class FedCVAE(ServerMethod):
    name = "fedcvae"
    description = "decoders generate a class-balanced labelled set; a fresh global model trains on it with CE"
    trains_global = True
    defaults = {"samples": 6000, "keep": 1.0, "epochs": 20, "lr": 5e-4, "batch_size": 64}
    epoch_keys = ("epochs",)
    data_keys = ("samples",)
    positive = ("samples", "keep", "epochs", "lr", "batch_size")

    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        syn = synthetic_set(ctx.uploads, p["samples"], p["keep"], ctx.rng("fedcvae", "latents"), ctx.device,
                            method=self.name)
        model = ctx.make_global()
        step = epoch_step(model, syn["x"], syn["y"], lr=p["lr"], batch_size=int(p["batch_size"]),
                          order=ctx.rng("fedcvae", "order"))
        curve = track_epochs(ctx, int(p["epochs"]), step, "fedcvae", start=model)
        choices = {**p, "synthetic_generated": syn["generated"], "synthetic_kept": len(syn["y"]),
                   "decoder_clients": [u.client_id for u in syn["decoders"]],
                   "ignored_clients": [u.client_id for u in ctx.uploads if u.kind != "cvae_decoder"]}
        return ServerResult("classifier", model=model.eval(), curve=curve, choices=choices,
                            extras={"allocation": syn["allocation"].tolist()})
