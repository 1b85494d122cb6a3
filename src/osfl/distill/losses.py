"""Distillation losses shared by DENSE, Co-Boosting and FedHydra (ANCHORS.md §1, §3; FedHydra SPEC §1.6–§1.7).

* ``kl_div_t``: KL(softmax(teacher/T) ‖ softmax(student/T))·T² (DENSE's ``kldiv``/``KLDiv``).
* ``adversarial_loss``: −mean_i(mask_i·KL_i): DENSE (mask = student and teacher disagree, T=1) or Co-Boosting
  (no mask, T=3). Gradients flow through both arguments (the generator reaches both via its images).
* ``hard_sample_ce``: Co-Boosting's hard-sample weighted CE, mean_i((1 − p_{i,y_i})^hs·CE_i) with p detached.
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
