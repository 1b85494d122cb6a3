"""DENSE's data-free distillation loop, shared by DENSE, Co-Boosting and FedHydra's HASA (one copy; ANCHORS.md §1, §1b).

One server epoch is two halves:

* :class:`Synthesis` (data generation): optionally re-initialise the generator (DENSE ``reset_model``; FedHydra's
  authors' code does the same, Alg. 1 read literally never does), draw a latent batch z (optimised jointly with the
  generator in DENSE and the authors' code, fixed in the literal reading) and targets y, then ``g_steps`` Adam steps
  (betas 0.5/0.999) on a loss the method supplies. The method's loss sees the generated batch and returns the loss,
  the view the teacher saw and the teacher's logits; the loop keeps the lowest-loss batch (what goes to DENSE's
  pool) and, when asked, every intermediate (view, teacher logits) pair (FedHydra's literal AMBIG-4 reading).
* :func:`distill_pool` (model distillation, pool batches augmented as :func:`kd_augmentation` resolves): one pass over the whole synthetic pool in shuffled batches, each batch
  augmented, labelled by the method's teacher (which may read the pool's stored targets, as FedHydra's SA does) and
  used for one :func:`~osfl.distill.synthesis.kd_step`.

Every random draw (reset, z, y, pool order, augmentation) comes from a seeded CPU generator the method passes in.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from ..augment import augment_batch
from .generator import Generator, reset_generator
from .pool import SyntheticPool
from .synthesis import BestBatch, generator_adam, kd_step, new_latent, random_labels

# loss(x, y) -> (loss, view the teacher saw, teacher logits on that view)
StepLoss = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


@dataclass
class EpochBatch:
    """What one epoch of data generation leaves: the lowest-loss batch (un-augmented, detached) with its loss and
    the targets y, and, with ``keep_intermediates``, every step's (view, teacher logits), detached."""
    best_x: torch.Tensor
    best_loss: float
    y: torch.Tensor
    last_x: torch.Tensor
    intermediates: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)


@dataclass
class Synthesis:
    gen: Generator
    batch: int
    nz: int
    num_classes: int
    g_steps: int
    lr_g: float
    device: torch.device
    reset_rng: torch.Generator  # generator re-initialisations
    latent_rng: torch.Generator  # z and y (DENSE draws everything from one generator: pass it twice)
    reset_every_epoch: bool = True
    optimize_z: bool = True
    sort_targets: bool = True  # DENSE sorts its random targets
    keep_intermediates: bool = False
    grad_clip: float | None = None  # clip the generator's gradient norm (Co-Boosting: 10)
    _opt_g: torch.optim.Optimizer | None = field(default=None, init=False, repr=False)

    def run_epoch(self, step_loss: StepLoss) -> EpochBatch:
        """One epoch of generator training; ``step_loss`` as :data:`StepLoss`."""
        if self.reset_every_epoch:
            reset_generator(self.gen, self.reset_rng)
        z = new_latent(self.batch, self.nz, self.device, self.latent_rng, learnable=self.optimize_z)
        y = random_labels(self.batch, self.num_classes, self.device, self.latent_rng)
        if self.sort_targets:
            y = y.sort().values
        if self.reset_every_epoch:  # a new Adam with the new generator (and z: one optimiser, two groups)
            groups = [{"params": self.gen.parameters()}] + ([{"params": [z]}] if self.optimize_z else [])
            opt, opt_z = generator_adam(groups, self.lr_g), None
        else:  # one generator and its Adam state for the whole run; z (if optimised) gets its own Adam
            if self._opt_g is None:
                self._opt_g = generator_adam(self.gen.parameters(), self.lr_g)
            opt, opt_z = self._opt_g, (generator_adam([z], self.lr_g) if self.optimize_z else None)
        self.gen.train()
        best, inter, x = BestBatch(), [], None
        for _ in range(self.g_steps):
            x = self.gen(z)
            loss, view, t_out = step_loss(x, y)
            if self.keep_intermediates:
                inter.append((view.detach(), t_out.detach()))
            best.offer(x, loss)
            opt.zero_grad(set_to_none=True)
            if opt_z is not None:
                opt_z.zero_grad(set_to_none=True)
            loss.backward()
            if self.grad_clip:
                torch.nn.utils.clip_grad_norm_(self.gen.parameters(), self.grad_clip)
            opt.step()
            if opt_z is not None:
                opt_z.step()
        return EpochBatch(best.x, best.loss, y, x.detach(), inter)


def kd_augmentation(name: str, input_shape: tuple[int, int, int]) -> str:
    """The augmentation of pool batches before distillation: ``auto`` = DENSE's KD transform (crop+flip for
    3-channel images, flip for grey ones); any other name as given."""
    if name != "auto":
        return name
    return "crop_flip" if input_shape[0] == 3 else "flip"


def distill_pool(student: torch.nn.Module, opt: torch.optim.Optimizer, pool: SyntheticPool, batch: int, *,
                 teacher: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor], device: torch.device,
                 order_rng: torch.Generator, augment: str, aug_rng: torch.Generator, T: float = 1.0,
                 beta: float = 0.0, grad_clip: float | None = None) -> None:
    """One pass of ``student`` over ``pool`` in shuffled batches: each batch augmented (``augment``), labelled by
    ``teacher(x, stored targets or None)`` without gradient, then one :func:`kd_step` (KL·T² + ``beta``·CE, the
    student's gradient norm clipped at ``grad_clip`` when given)."""
    for x, y in pool.batches(batch, gen=order_rng, device=device):
        x = augment_batch(x, augment, aug_rng)
        with torch.no_grad():
            t_out = teacher(x, y)
        kd_step(student, opt, x, t_out, T=T, beta=beta, grad_clip=grad_clip)
class PoolKD:
    """The distillation half of the baselines that fill a synthetic pool and distil the client ensemble into the
    student once per epoch (F-DAFL, F-ADI, FedLMG), with Co-Boosting's KD settings as ``p`` gives them: SGD (``lr``,
    ``momentum``, ``weight_decay``), cosine over ``epochs`` when ``cosine``; each :meth:`epoch` is one
    :func:`distill_pool` pass (batches of ``kd_batch`` through ``kd_augment``, KL at ``kd_T``, the student's
    gradient norm clipped at ``grad_clip``, 0 for none), then one scheduler step. ``rng(part)`` gives the pool-order
    ("pool") and augmentation ("augment") generators; ``augment`` is the augmentation in force."""

    def __init__(self, student: torch.nn.Module, p: dict, input_shape: tuple[int, int, int],
                 rng: Callable[[str], torch.Generator]):
        self.student, self.p = student, p
        self.opt = torch.optim.SGD(student.parameters(), lr=p["lr"], momentum=p["momentum"],
                                   weight_decay=p["weight_decay"])
        self.sched = torch.optim.lr_scheduler.CosineAnnealingLR(self.opt, T_max=p["epochs"]) if p["cosine"] else None
        self.augment = kd_augmentation(p["kd_augment"], input_shape)
        self.order_rng, self.aug_rng = rng("pool"), rng("augment")

    def epoch(self, pool: SyntheticPool, teacher: Callable[[torch.Tensor], torch.Tensor], device: torch.device) -> None:
        """One pass over ``pool`` labelled by ``teacher(x)`` (the ensemble's logits), then the scheduler's step."""
        distill_pool(self.student, self.opt, pool, self.p["kd_batch"], teacher=lambda x, _y: teacher(x),
                     device=device, order_rng=self.order_rng, augment=self.augment, aug_rng=self.aug_rng,
                     T=self.p["kd_T"], grad_clip=self.p["grad_clip"] or None)
        if self.sched is not None:
            self.sched.step()


