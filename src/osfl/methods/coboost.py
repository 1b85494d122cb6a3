"""Co-Boosting (Dai et al., ICLR 2024): DENSE plus hard samples, ensemble re-weighting and diversified KD.

Facts from the reference code (ANCHORS.md §3) and FedHydra SPEC §2. Every epoch:

1. **Hard-sample synthesis.** The generator is re-initialised and a fresh latent z is optimised jointly with it
   (Adam lr_g, betas 0.5/0.999, generator gradient norm clipped at 10) for ``g_steps`` steps. Loss:
   ``oh``·mean_i (1 − p_{i,y_i})^hs·CE(WE(x_i), y_i) + ``adv``·(−mean_i KL(WE(x_i)/3 ‖ F_g(x_i)/3)·9), no mask,
   + ``bn``·(Σ BN-statistics loss)/m (off by default). WE(x) = Σ_k w_k F_k(x) / Σ_k w_k. The lowest-loss batch is
   added to the labelled pool with its targets.
2. **Ensemble re-weighting** (from the second epoch on): for ``wa_steps`` passes over the pool, per batch,
   w ← clip(w₀ + clip(w − μ·wdc^epoch·sign(∇_w CE(WE(x), y)) − w₀, −1, 1), 0, 1), w₀ the weights at the start of
   the adjustment, w initialised to 1/m. The weights therefore always stay in [0, 1].
3. **Diversified KD (ODS).** Each pool batch is perturbed, x ← x + ε·sign(∇_x Σ r ⊙ softmax(WE(x)/4)) with
   r ~ U(−1, 1) and ε = ``odseta``/255, then the student takes an SGD step (momentum 0.9, weight decay 1e-4,
   gradient norm clipped at 10) on KL(WE/T ‖ F_g/T)·T², T = 4, with a cosine learning rate over the epochs.

Generated images enter the teachers in [0, 1]: our clients are trained on unnormalised inputs, which is what
Co-Boosting's Normalizer reproduces for its own clients.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from ..distill import (Synthesis, SyntheticPool, adversarial_loss, frozen_forward, hard_sample_ce, kd_step,
                       make_generator, sign_reweight)
from . import register
from .base import ServerContext, ServerMethod, ServerResult, track_epochs


@register
class CoBoosting(ServerMethod):
    name = "coboost"
    description = "Co-Boosting: hard samples, sign-gradient client weights, ODS-perturbed KD at T=4"
    trains_global = True
    defaults = {
        "epochs": 200, "g_steps": 30, "lr_g": 1e-3, "synthesis_batch": 128, "nz": 256, "ngf": 64,
        "oh": 1.0, "hs": 1.0, "adv": 1.0, "adv_T": 3.0, "bn": 0.0,
        "mu": 0.01, "wdc": 0.99, "wa_steps": 1, "odseta": 8.0, "kd_T": 4.0,
        "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4, "kd_batch": 128, "grad_clip": 10.0,
        "cosine": True,
    }
    allowed = {"cosine": (True, False)}
    positive = ("g_steps", "lr_g", "synthesis_batch", "nz", "ngf", "adv_T", "kd_T", "lr", "kd_batch")
    epoch_keys = ("epochs",)
    step_keys = ("g_steps",)
    synth_keys = ("synthesis_batch", "kd_batch")
    width_keys = ("ngf",)

    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        dev, m = ctx.device, len(ctx.uploads)
        teacher = ctx.teacher(ctx.client_models())
        w = torch.full((m,), 1.0 / m, device=dev)
        student = ctx.make_global()
        opt = torch.optim.SGD(student.parameters(), lr=p["lr"], momentum=p["momentum"],
                              weight_decay=p["weight_decay"])
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=p["epochs"]) if p["cosine"] else None
        reset_rng, pool_rng = ctx.rng("coboost", "reset"), ctx.rng("coboost", "pool")
        ods_rng = ctx.rng("coboost", "ods")
        # DENSE's loop (osfl.distill.adversarial) with the generator's gradient norm clipped at 10
        synth = Synthesis(make_generator(ctx.input_shape, p["nz"], p["ngf"], dev, reset_rng), p["synthesis_batch"],
                          p["nz"], ctx.num_classes, p["g_steps"], p["lr_g"], dev, reset_rng=reset_rng,
                          latent_rng=reset_rng, grad_clip=10.0)
        pool = SyntheticPool()

        def step_loss(x, y):
            if p["bn"]:
                per_client, bn = teacher.forward_with_bn(x)
            else:
                per_client, bn = teacher(x), None
            t_out = teacher.combine(per_client, w)
            loss = p["oh"] * hard_sample_ce(t_out, y, p["hs"])
            if bn is not None:
                loss = loss + p["bn"] * bn.sum() / m
            if p["adv"]:
                loss = loss + p["adv"] * adversarial_loss(frozen_forward(student, x), t_out, T=p["adv_T"], mask=False)
            return loss, x, t_out

        def synthesize() -> float:
            student.eval()
            made = synth.run_epoch(step_loss)
            pool.add(made.best_x, made.y)
            return made.best_loss

        def adjust_weights(epoch0: int) -> None:
            nonlocal w
            w0 = w.clone()
            step = p["mu"] * p["wdc"] ** epoch0
            for _ in range(p["wa_steps"]):
                for x, y in pool.batches(p["kd_batch"], gen=pool_rng, device=dev):
                    with torch.no_grad():
                        per_client = teacher(x)
                    wv = w.clone().requires_grad_(True)
                    loss = nn.functional.cross_entropy(teacher.combine(per_client, wv), y)
                    (grad,) = torch.autograd.grad(loss, wv)
                    w = sign_reweight(w, w0, grad, step)

        def ods(x: torch.Tensor) -> torch.Tensor:
            if not p["odseta"]:
                return x
            x = x.clone().requires_grad_(True)
            probs = torch.softmax(teacher.combine(teacher(x), w) / p["kd_T"], dim=1)
            r = torch.rand(probs.shape, generator=ods_rng).mul_(2.0).sub_(1.0).to(probs.device)  # U(-1, 1)
            (grad,) = torch.autograd.grad((r * probs).sum(), x)
            return (x + grad.sign() * (p["odseta"] / 255.0)).detach()

        def epoch(e: int):
            gen_loss = synthesize()
            if e > 1:
                adjust_weights(e - 1)
            for x, _y in pool.batches(p["kd_batch"], gen=pool_rng, device=dev):
                x = ods(x)
                with torch.no_grad():
                    t_out = teacher.combine(teacher(x), w)
                kd_step(student, opt, x, t_out, T=p["kd_T"], grad_clip=p["grad_clip"] or None)
            if sched is not None:
                sched.step()
            return student, {"gen_loss": gen_loss, "client_weights": [round(float(v), 6) for v in w]}

        curve = track_epochs(ctx, p["epochs"], epoch, desc="coboost", start=student)
        return ServerResult("classifier", model=student.eval(), curve=curve,
                            choices={"pool": "lowest-loss batch per epoch, with labels", "student_init": "random",
                                     "generator_reset": "every epoch", "optimize_z": True,
                                     "final_client_weights": curve[-1].get("client_weights", [])})
