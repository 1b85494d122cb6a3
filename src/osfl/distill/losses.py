"""Distillation losses shared by DENSE, Co-Boosting and FedHydra (ANCHORS.md §1, §3; FedHydra SPEC §1.6–§1.7).

* ``kl_div_t``: KL(softmax(teacher/T) ‖ softmax(student/T))·T² (DENSE's ``kldiv``/``KLDiv``).
* ``adversarial_loss``: −mean_i(mask_i·KL_i): DENSE (mask = student and teacher disagree, T=1) or Co-Boosting
  (no mask, T=3). Gradients flow through both arguments (the generator reaches both via its images).
* ``hard_sample_ce``: Co-Boosting's hard-sample weighted CE, mean_i((1 − p_{i,y_i})^hs·CE_i) with p detached.
* ``class_centre_loss``: OFedED's class-centre distance (SPEC §2.4): for a generated image of label y, its squared
  distance to the ensemble output of class y's centre over the sum of its squared distances to every class's
  centre, averaged over the batch.
* ``sign_reweight``: Co-Boosting's sign-gradient step on ensemble weights with its two clamps (per client, or per
  client and class for OFedED's K×C weights).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def kl_div_t(student_logits: torch.Tensor, teacher_logits: torch.Tensor, T: float = 1.0,
             reduction: str = "batchmean") -> torch.Tensor:
    """KL(softmax(teacher/T) ‖ softmax(student/T))·T².

    ``reduction='batchmean'``: a scalar, sum over classes averaged over the batch; ``'none'``: per-sample KL (B,)
    (already summed over classes).
    """
    if reduction not in ("batchmean", "none"):
        raise ValueError(f"reduction must be 'batchmean' or 'none', got {reduction!r}")
    log_q = F.log_softmax(student_logits / T, dim=1)
    log_p = F.log_softmax(teacher_logits / T, dim=1)
    per_sample = F.kl_div(log_q, log_p, reduction="none", log_target=True).sum(1) * (T * T)
    return per_sample.mean() if reduction == "batchmean" else per_sample


def adversarial_loss(s_logits: torch.Tensor, t_logits: torch.Tensor, T: float = 1.0,
                     mask: bool = True) -> torch.Tensor:
    """−mean_i(mask_i·KL_i) with KL_i = kl_div_t(s, t, T, 'none')[i].

    ``mask=True`` (DENSE): mask_i = 1 iff argmax s_i ≠ argmax t_i, averaged over the whole batch (not over the
    masked samples). ``mask=False`` (Co-Boosting, use T=3): every sample counts.
    """
    kl = kl_div_t(s_logits, t_logits, T, reduction="none")
    if mask:
        m = (s_logits.argmax(1) != t_logits.argmax(1)).to(kl.dtype)
        kl = kl * m
    return -kl.mean()


def hard_sample_ce(t_logits: torch.Tensor, targets: torch.Tensor, hs: float = 1.0) -> torch.Tensor:
    """mean_i((1 − p_{i,y_i})^hs · CE_i), p = softmax(t_logits) detached (Co-Boosting; hs=0 is plain CE)."""
    ce = F.cross_entropy(t_logits, targets, reduction="none")
    p = F.softmax(t_logits.detach(), dim=1).gather(1, targets.view(-1, 1)).squeeze(1)
    return ((1.0 - p).pow(hs) * ce).mean()


def class_centre_loss(out: torch.Tensor, targets: torch.Tensor, centres: torch.Tensor,
                      present: torch.Tensor | None = None) -> torch.Tensor:
    """OFedED's L_CCD (SPEC §2.4, with its proposals): ``out`` (B, C) the ensemble's outputs on generated images of
    labels ``targets`` (B,); ``centres`` (C, C) its outputs on the pixel-space mean of each class's uploaded
    synthetic images (row c = class c; computed once per epoch, no gradient). Per sample, ‖out − centre_y‖² over
    Σ_c' ‖out − centre_c'‖², the sum over the classes ``present`` (C,) bool (those with synthetic images; all when
    None); samples whose label has no centre are left out; the mean over the rest (0 when none is left)."""
    d = ((out[:, None, :] - centres[None, :, :].to(out.dtype)) ** 2).sum(-1)  # (B, C) squared distances
    if present is None:
        present = torch.ones(centres.shape[0], dtype=torch.bool, device=out.device)
    present = present.to(out.device)
    keep = present[targets]
    if not bool(keep.any()):
        return out.sum() * 0.0
    num = d[keep].gather(1, targets[keep, None]).squeeze(1)
    den = d[keep][:, present].sum(1)
    return (num / den.clamp_min(torch.finfo(out.dtype).tiny)).mean()


def sign_reweight(w: torch.Tensor, w0: torch.Tensor, grad: torch.Tensor, step: float) -> torch.Tensor:
    """Co-Boosting's update: w − step·sign(grad), kept within 1 of ``w0`` (the weights at the start of the
    adjustment), then clamped to [0, 1]. Element-wise, so ``w`` may be (K,) or OFedED's (K, C)."""
    w = w - step * grad.sign()
    return (w0 + (w - w0).clamp(-1.0, 1.0)).clamp(0.0, 1.0)
