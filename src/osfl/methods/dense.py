"""DENSE (Zhang et al., NeurIPS 2022): data-free one-shot FL by generator training and ensemble distillation.

Facts from the reference code (ANCHORS.md §1) and FedHydra SPEC §2. Every epoch:

1. **Data generation.** The generator is re-initialised (DENSE ``reset_model``) and a fresh latent z is drawn
   and optimised jointly with it (Adam, lr_g, betas 0.5/0.999) for ``g_steps`` steps on sorted random targets y.
   The images pass a differentiable crop(pad 4)+flip "global view" before the teachers. Loss:
   ``bn``·Σ_k Σ_l BN-statistics loss (summed over the layers of all client models, not averaged)
   + ``oh``·CE(AE(x), y) + ``adv``·(−mean_i mask_i·KL(AE(x_i) ‖ F_g(x_i))) with mask_i = 1 where the student
   and the averaging ensemble AE disagree. The batch with the lowest total loss is kept in the pool
   (quantised to 8 bits, as DENSE's PNG files are).
2. **Model distillation.** One pass over the whole pool (all epochs so far) in shuffled batches of
   ``kd_batch``, student SGD on KL(AE/T ‖ F_g/T)·T²; pool images get DENSE's KD transform (crop+flip for
   3-channel images, flip for grey ones).

The student is a freshly initialised global model (DENSE), tested before training (epoch 0) and after every
epoch. ``T`` defaults to 1 (DENSE code default and FedHydra's τ; the DENSE README command uses 20).

``bn``: 1 is the paper's DENSE (the default). The official code registers its BN-statistics hooks on an ensemble
wrapper that keeps the client models in a plain Python list, so the hooks find no BatchNorm layer and its BN loss
is identically 0 (ANCHORS.md §1b): ``bn: 0`` is DENSE "as the official code runs", recorded as the run's
``reading``. The loop itself is :mod:`osfl.distill.adversarial`, shared with FedHydra.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..augment import augment_batch
from ..distill import (Synthesis, SyntheticPool, adversarial_loss, distill_pool, frozen_forward,
                       kd_augmentation, make_generator)
from . import register
from .base import ServerContext, ServerMethod, ServerResult, client_weights, track_epochs


@register
class Dense(ServerMethod):
    name = "dense"
    description = "DENSE: per-epoch generator + BN/CE/masked-adversarial loss, distil over the image pool"
    trains_global = True
    tracks_teacher = True  # its teacher is fixed: measured once
    defaults = {
        "epochs": 200, "g_steps": 30, "lr_g": 1e-3, "synthesis_batch": 256, "nz": 256, "ngf": 64,
        "bn": 1.0, "oh": 1.0, "adv": 1.0, "adv_mask": True, "T": 1.0,
        "lr": 0.01, "momentum": 0.9, "kd_batch": 256, "weighting": "uniform",
        "synth_augment": "crop_flip", "kd_augment": "auto",
    }
    allowed = {"weighting": ("uniform", "samples"), "adv_mask": (True, False),
               "synth_augment": ("crop_flip", "flip", "none"), "kd_augment": ("auto", "crop_flip", "flip", "none")}
    positive = ("g_steps", "lr_g", "synthesis_batch", "nz", "ngf", "T", "lr", "kd_batch")
    epoch_keys = ("epochs",)
    step_keys = ("g_steps",)
    synth_keys = ("synthesis_batch", "kd_batch")
    width_keys = ("ngf",)

    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        dev, shape = ctx.device, ctx.input_shape
        kd_aug = kd_augmentation(p["kd_augment"], shape)
        teacher = ctx.teacher(ctx.client_models(), client_weights(ctx, p["weighting"]))
        student = ctx.make_global()
        opt = torch.optim.SGD(student.parameters(), lr=p["lr"], momentum=p["momentum"])
        aug_rng, reset_rng, pool_rng = ctx.rng("dense", "augment"), ctx.rng("dense", "reset"), ctx.rng("dense", "pool")
        # DENSE's loop (osfl.distill.adversarial); resets, z and y all come from one generator
        synth = Synthesis(make_generator(shape, p["nz"], p["ngf"], dev, reset_rng), p["synthesis_batch"], p["nz"],
                          ctx.num_classes, p["g_steps"], p["lr_g"], dev, reset_rng=reset_rng, latent_rng=reset_rng)
        pool = SyntheticPool()

        def step_loss(x, y):
            view = augment_batch(x, p["synth_augment"], aug_rng)
            if p["bn"]:  # bn = 0 (the official code's reading) collects no statistics, as FedHydra's λ1 = 0
                per_client, bn = teacher.forward_with_bn(view)
            else:
                per_client, bn = teacher(view), None
            t_out = teacher.combine(per_client)
            loss = p["oh"] * F.cross_entropy(t_out, y)
            if bn is not None:
                loss = loss + p["bn"] * bn.sum()
            if p["adv"]:
                loss = loss + p["adv"] * adversarial_loss(frozen_forward(student, view), t_out, T=1.0,
                                                          mask=p["adv_mask"])
            return loss, view, t_out

        teacher_acc = ctx.evaluate(teacher.predict) if ctx.track_teacher else None  # the uniform ensemble: fixed

        def epoch(_: int):
            student.eval()
            made = synth.run_epoch(step_loss)
            pool.add(made.best_x)
            distill_pool(student, opt, pool, p["kd_batch"], teacher=lambda x, _y: teacher.predict(x), device=dev,
                         order_rng=pool_rng, augment=kd_aug, aug_rng=aug_rng, T=p["T"])
            return student, {"gen_loss": made.best_loss, **({} if teacher_acc is None else {"teacher_acc": teacher_acc})}

        curve = track_epochs(ctx, p["epochs"], epoch, desc="dense", start=student)
        return ServerResult("classifier", model=student.eval(), curve=curve,
                            choices={"kd_augment_in_force": kd_aug, "pool": "lowest-loss batch per epoch",
                                     "student_init": "random", "generator_reset": "every epoch",
                                     "optimize_z": True,
                                     "reading": "paper (bn = 1)" if p["bn"] else
                                                "as the official code runs (bn = 0: its BN hooks find no layer)"})
