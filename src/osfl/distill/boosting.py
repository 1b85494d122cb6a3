"""Co-Boosting's server loop (ANCHORS.md §3), shared by Co-Boosting and OFedED (one copy; OFedED SPEC §2.4–§2.6).

Every epoch of :meth:`BoostingLoop.epoch`:

1. **Hard-sample synthesis.** The generator is re-initialised and a fresh latent z is optimised jointly with it
   (Adam lr_g, betas 0.5/0.999, generator gradient norm clipped at 10) for ``g_steps`` steps. Loss:
   ``oh``·mean_i (1 − p_{i,y_i})^hs·CE(WE(x_i), y_i) + ``adv``·(−mean_i KL(WE(x_i)/3 ‖ F_g(x_i)/3)·9), no mask,
   + ``bn``·(Σ BN-statistics loss)/m + the caller's ``extra_loss`` (OFedED's class-centre distance). The
   lowest-loss batch is kept, with its targets.
2. **Ensemble re-weighting** (from the second epoch on): for ``wa_steps`` passes over the pool of the earlier
   epochs (the new batch joins the pool after it, as in the official code: reports/peers.md, finding F2), per batch,
   w ← clip(w₀ + clip(w − μ·wdc^epoch·sign(∇_w CE(WE(x), y)) − w₀, −1, 1), 0, 1) (:func:`sign_reweight`), w₀ the
   weights at the start of the adjustment. ``w`` is one weight per client (Co-Boosting) or per client and class
   (OFedED's K×C, :meth:`BatchedEnsemble.combine`). A ``gate`` (OFedED's "synthetic images guide the update")
   sees the candidate weights and says whether to keep them; kept weights are passed to ``accepted`` (OFedED's
   ensemble fine-tuning). Without a gate every update is kept (Co-Boosting).
3. **Diversified KD (ODS).** Each pool batch is perturbed, x ← x + ε·sign(∇_x Σ r ⊙ softmax(WE(x)/4)) with
   r ~ U(−1, 1) and ε = ``odseta``/255, then the student takes an SGD step (momentum 0.9, weight decay 1e-4,
   gradient norm clipped at 10) on KL(WE/T ‖ F_g/T)·T², T = 4, with a cosine learning rate over the epochs.

WE(x) = combine(teacher(x), w). Every random draw comes from CPU generators named ``<tag>/reset``, ``<tag>/pool``
and ``<tag>/ods`` (``rng(tag, part)``; ``method`` names the caller in errors): OFedED runs under Co-Boosting's tag, so with its parts turned off it draws
the same numbers and gives Co-Boosting's run bit for bit (its Table 3, row 1).
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn as nn

from ..errors import ConfigError
from .ensemble import BatchedEnsemble
from .losses import adversarial_loss, hard_sample_ce, sign_reweight
from .pool import SyntheticPool
from .adversarial import Synthesis
from .synthesis import frozen_forward, kd_step, make_generator

# extra generator loss: (images, ensemble logits WE(x), targets) -> scalar
ExtraLoss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

# hyper-parameters the loop reads (Co-Boosting's code defaults; the method's params supply them)
BOOSTING_DEFAULTS = {
    "epochs": 200, "g_steps": 30, "lr_g": 1e-3, "synthesis_batch": 128, "nz": 256, "ngf": 64,
    "oh": 1.0, "hs": 1.0, "adv": 1.0, "adv_T": 3.0, "bn": 0.0,
    "mu": 0.01, "wdc": 0.99, "wa_steps": 1, "odseta": 8.0, "kd_T": 4.0,
    "lr": 0.01, "momentum": 0.9, "weight_decay": 1e-4, "kd_batch": 128, "grad_clip": 10.0,
    "cosine": True,
}


class BoostingLoop:
    """One Co-Boosting run's state: generator, pool, ensemble weights ``w``, student and its optimiser.

    ``p``: the hyper-parameters of :data:`BOOSTING_DEFAULTS` (resolved under the profile). ``rng(tag, part)`` gives
    a seeded CPU generator (``ServerContext.rng``). ``extra_loss`` is added to the generator's loss; ``gate(w')``
    decides whether candidate weights replace ``w`` and ``accepted(w)`` runs after they do. ``evaluate`` (the
    context's, when it asks for ``track_teacher``) measures the weighted ensemble's test accuracy after each epoch
    (curve field ``teacher_acc``; no random draws).
    """

    def __init__(self, teacher: BatchedEnsemble, student: nn.Module, w: torch.Tensor, p: dict, *,
                 input_shape: tuple[int, int, int], num_classes: int, device: torch.device,
                 rng: Callable[[str, str], torch.Generator], tag: str = "coboost", method: str = "coboost",
                 extra_loss: ExtraLoss | None = None, gate: Callable[[torch.Tensor], bool] | None = None,
                 accepted: Callable[[torch.Tensor], None] | None = None,
                 evaluate: Callable[[Callable], float] | None = None):
        self.teacher, self.student, self.w, self.p, self.dev = teacher, student, w, p, device
        self.m, self.method = len(teacher), method
        self.extra_loss, self.gate, self.accepted, self.evaluate = extra_loss, gate, accepted, evaluate
        self.opt = torch.optim.SGD(student.parameters(), lr=p["lr"], momentum=p["momentum"],
                                   weight_decay=p["weight_decay"])
        self.sched = torch.optim.lr_scheduler.CosineAnnealingLR(self.opt, T_max=p["epochs"]) if p["cosine"] else None
        reset_rng, self.pool_rng, self.ods_rng = rng(tag, "reset"), rng(tag, "pool"), rng(tag, "ods")
        # DENSE's loop (osfl.distill.adversarial) with the generator's gradient norm clipped at 10
        self.synth = Synthesis(make_generator(input_shape, p["nz"], p["ngf"], device, reset_rng), p["synthesis_batch"],
                               p["nz"], num_classes, p["g_steps"], p["lr_g"], device, reset_rng=reset_rng,
                               latent_rng=reset_rng, grad_clip=10.0)
        self.pool = SyntheticPool()
        self.updates = {"proposed": 0, "kept": 0}

    def combine(self, per_client: torch.Tensor, w: torch.Tensor | None = None) -> torch.Tensor:
        return self.teacher.combine(per_client, self.w if w is None else w)

    def _step_loss(self, x, y):
        p, teacher = self.p, self.teacher
        if p["bn"]:
            per_client, bn = teacher.forward_with_bn(x)
        else:
            per_client, bn = teacher(x), None
        t_out = self.combine(per_client)
        loss = p["oh"] * hard_sample_ce(t_out, y, p["hs"])
        if bn is not None:
            loss = loss + p["bn"] * bn.sum() / self.m
        if p["adv"]:
            loss = loss + p["adv"] * adversarial_loss(frozen_forward(self.student, x), t_out, T=p["adv_T"], mask=False)
        if self.extra_loss is not None:
            loss = loss + self.extra_loss(x, t_out, y)
        return loss, x, t_out

    def synthesize(self):
        """The epoch's lowest-loss batch (added to the pool by :meth:`epoch`, after the re-weighting)."""
        self.student.eval()
        made = self.synth.run_epoch(self._step_loss)
        if made.best_x is None:
            raise ConfigError(f"server.{self.method}", "the generator loss was not finite at any step (diverged "
                                                       "teachers or generator; lower the learning rates)")
        return made

    def candidate_weights(self, epoch0: int) -> torch.Tensor:
        """Co-Boosting's ``wa_steps`` passes of sign steps over the pool, from the current weights."""
        p, w = self.p, self.w
        w0 = w.clone()
        step = p["mu"] * p["wdc"] ** epoch0
        for _ in range(p["wa_steps"]):
            for x, y in self.pool.batches(p["kd_batch"], gen=self.pool_rng, device=self.dev):
                with torch.no_grad():
                    per_client = self.teacher(x)
                wv = w.clone().requires_grad_(True)
                loss = nn.functional.cross_entropy(self.combine(per_client, wv), y)
                (grad,) = torch.autograd.grad(loss, wv)
                w = sign_reweight(w, w0, grad, step)
        return w

    def adjust_weights(self, epoch0: int) -> None:
        cand = self.candidate_weights(epoch0)
        self.updates["proposed"] += 1
        if self.gate is None or self.gate(cand):
            self.w = cand
            self.updates["kept"] += 1
            if self.accepted is not None:
                self.accepted(cand)

    def ods(self, x: torch.Tensor) -> torch.Tensor:
        p = self.p
        if not p["odseta"]:
            return x
        x = x.clone().requires_grad_(True)
        probs = torch.softmax(self.combine(self.teacher(x)) / p["kd_T"], dim=1)
        r = torch.rand(probs.shape, generator=self.ods_rng).mul_(2.0).sub_(1.0).to(probs.device)  # U(-1, 1)
        (grad,) = torch.autograd.grad((r * probs).sum(), x)
        return (x + grad.sign() * (p["odseta"] / 255.0)).detach()

    def distill(self) -> None:
        p = self.p
        for x, _y in self.pool.batches(p["kd_batch"], gen=self.pool_rng, device=self.dev):
            x = self.ods(x)
            with torch.no_grad():
                t_out = self.combine(self.teacher(x))
            kd_step(self.student, self.opt, x, t_out, T=p["kd_T"], grad_clip=p["grad_clip"] or None)
        if self.sched is not None:
            self.sched.step()

    def weight_fields(self) -> list[float]:
        """The weights as a curve field: one per client (the per-class weights' mean for K×C weights)."""
        w = self.w if self.w.dim() == 1 else self.w.mean(1)
        return [round(float(v), 6) for v in w]

    def epoch(self, e: int) -> tuple[nn.Module, dict]:
        """Server epoch ``e`` (1-based), for :func:`osfl.methods.base.track_epochs`."""
        made = self.synthesize()
        if e > 1:  # on the pool of the earlier epochs: the official loop adds the new batch after re-weighting
            self.adjust_weights(e - 1)  # (rong-dai/Co-Boosting@b95d715 datafree/synthesis/coboost.py:151 then :162)
        self.pool.add(made.best_x, made.y)
        gen_loss = made.best_loss
        self.distill()
        fields = {"gen_loss": gen_loss, "client_weights": self.weight_fields()}
        if self.evaluate is not None:  # the weighted ensemble the epoch ends with (Fig. 2(a) of OFedED)
            fields["teacher_acc"] = self.evaluate(lambda x: self.combine(self.teacher(x)))
        return self.student, fields
