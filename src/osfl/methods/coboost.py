"""Co-Boosting (Dai et al., ICLR 2024): DENSE plus hard samples, ensemble re-weighting and diversified KD.

Facts from the reference code (ANCHORS.md §3) and FedHydra SPEC §2. The loop (hard-sample synthesis, sign-gradient
client weights from the second epoch on, ODS-perturbed KD at T = 4) is :class:`osfl.distill.boosting.BoostingLoop`,
shared with OFedED, which adds its parts to it; its docstring gives every step. Here: Co-Boosting's
hyper-parameters (its code's defaults) and one weight per client, initialised to 1/m.

Generated images (sigmoid, pixels in [0, 1]) enter each teacher and the student through the model's own input
preparation (the params' ``inputs``: OFedED's is Co-Boosting's, resized to 32 x 32 and normalised with mean = std =
0.5), which is where Co-Boosting's code applies its Normalizer. Co-Boosting's code runs DENSE as this loop with
its three parts off (``hs`` 0, ``wa_steps`` 0, ``odseta`` 0): OFedED's DENSE column.
"""
from __future__ import annotations

import torch

from ..distill.boosting import BOOSTING_DEFAULTS, BoostingLoop
from . import register
from .base import ServerContext, ServerMethod, ServerResult, track_epochs


@register
class CoBoosting(ServerMethod):
    name = "coboost"
    description = "Co-Boosting: hard samples, sign-gradient client weights, ODS-perturbed KD at T=4"
    trains_global = True
    tracks_teacher = True
    defaults = dict(BOOSTING_DEFAULTS)
    allowed = {"cosine": (True, False)}
    positive = ("g_steps", "lr_g", "synthesis_batch", "nz", "ngf", "adv_T", "kd_T", "lr", "kd_batch")
    epoch_keys = ("epochs",)
    step_keys = ("g_steps",)
    synth_keys = ("synthesis_batch", "kd_batch")
    width_keys = ("ngf",)

    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        m = len(ctx.uploads)
        student = ctx.make_global()
        loop = BoostingLoop(ctx.teacher(ctx.client_models()), student, torch.full((m,), 1.0 / m, device=ctx.device),
                            p, input_shape=ctx.input_shape, num_classes=ctx.num_classes, device=ctx.device,
                            rng=ctx.rng, evaluate=ctx.evaluate if ctx.track_teacher else None)
        curve = track_epochs(ctx, p["epochs"], loop.epoch, desc="coboost", start=student)
        return ServerResult("classifier", model=student.eval(), curve=curve,
                            choices={"pool": "lowest-loss batch per epoch, with labels", "student_init": "random",
                                     "generator_reset": "every epoch", "optimize_z": True,
                                     "final_client_weights": curve[-1].get("client_weights", [])})
