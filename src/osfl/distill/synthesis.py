"""Pieces of the generator and student loops shared by DENSE, Co-Boosting, FedHydra and FedDF's fallback.

* ``make_generator``: the DENSE generator sized for a dataset's image shape (28×28×1 or 32×32×3).
* ``frozen_forward``: run a model with its parameters detached, so that gradients reach only the input (the
  student inside a generator step: the generator is trained against it, the student itself is not updated).
* ``new_latent``, ``random_labels``: a latent batch z ~ N(0, I) (optionally a leaf that the generator's optimiser
  updates: DENSE and Co-Boosting optimise z jointly with the generator) and uniform labels, drawn from a seeded
  CPU generator and moved to the device.
* ``generator_adam``: the generator optimiser of DENSE, Co-Boosting and FedHydra (Adam, betas (0.5, 0.999)).
* ``BestBatch``: keeps the generated batch with the lowest generator loss (what DENSE puts in its pool).
* ``kd_step``: one student update on a batch with teacher logits: KL(teacher/T ‖ student/T)·T², plus
  ``beta``·CE(student, argmax teacher) (FedHydra Eq. 19), optional gradient-norm clipping (Co-Boosting).
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

from ..runtime import seeded_init
from .generator import Generator, reset_generator
from .losses import kl_div_t


def make_generator(input_shape: tuple[int, int, int], nz: int, ngf: int, device: torch.device,
                   gen: torch.Generator) -> Generator:
    """DENSE generator for images of ``input_shape`` = (C, H, W), H = W, initialised with DENSE's reset drawn from
    ``gen``. (torch's own initialisation at construction is overwritten by the reset; it runs under a fixed seed
    so that no global generator is read or advanced.)"""
    c, h, w = input_shape
    if h != w:
        raise ValueError(f"the generator makes square images; got {h}x{w}")
    with seeded_init(0):
        g = Generator(nz=nz, ngf=ngf, img_size=h, nc=c)
    return reset_generator(g.to(device), gen)


def frozen_forward(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``model(x)`` with detached parameters and buffers in the model's current mode: no parameter gradients."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    return functional_call(model, params, (x,))


def new_latent(batch: int, nz: int, device: torch.device, gen: torch.Generator, learnable: bool = False) -> torch.Tensor:
    """z ~ N(0, I) of shape (batch, nz), drawn from the CPU generator ``gen`` and moved to ``device`` (the same
    numbers on every device)."""
    z = torch.randn(batch, nz, generator=gen).to(device)
    return z.requires_grad_(True) if learnable else z


def random_labels(batch: int, num_classes: int, device: torch.device, gen: torch.Generator) -> torch.Tensor:
    """Uniform class labels, drawn from the CPU generator ``gen`` and moved to ``device``."""
    return torch.randint(0, num_classes, (batch,), generator=gen).to(device)


def generator_adam(params, lr: float) -> torch.optim.Adam:
    """Adam with DENSE's betas (0.5, 0.999) over ``params`` (tensors or parameter groups)."""
    return torch.optim.Adam(params, lr=lr, betas=(0.5, 0.999))


class BestBatch:
    """The lowest-loss batch seen so far (detached) and its loss."""

    def __init__(self):
        self.x: torch.Tensor | None = None
        self.loss = float("inf")

    def offer(self, x: torch.Tensor, loss: torch.Tensor) -> None:
        value = float(loss.detach())
        if value < self.loss:
            self.x, self.loss = x.detach(), value


def kd_step(student: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, teacher: torch.Tensor, T: float = 1.0,
            beta: float = 0.0, grad_clip: float | None = None) -> float:
    """One optimiser step of ``student`` towards ``teacher`` logits on ``x``; returns the loss value."""
    student.train()
    out = student(x)
    loss = kl_div_t(out, teacher.detach(), T)
    if beta:
        loss = loss + beta * F.cross_entropy(out, teacher.detach().argmax(1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        nn.utils.clip_grad_norm_(student.parameters(), grad_clip)
    opt.step()
    return float(loss.detach())
