"""FedDF's ensemble distillation on unlabeled batches (Lin et al., NeurIPS 2020), shared by FedDF (one student) and
FedMHO's FedDF baseline with prototype voting (one student per client architecture, the same batches and teacher).

* :func:`aux_batches`: seeded random batches of another dataset's training images (labels unused).
* :func:`generator_batches`: FedDF's data-free fallback: a DENSE generator, kept across epochs, trained each epoch
  with CE(teacher(G(z)), y) for ``g_steps`` steps, then sampled.
* :func:`distil_epoch`: one epoch: for each batch, the teacher's logits once, then one KL step (and a scheduler
  step) for each student.
"""
from __future__ import annotations

from typing import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F

from .synthesis import generator_adam, kd_step, make_generator, new_latent, random_labels

Batches = Callable[[], Iterator[torch.Tensor]]  # one epoch's float batches in [0, 1]


def aux_batches(x_aux: torch.Tensor, *, batch_size: int, steps: int, rng: torch.Generator) -> Batches:
    """``steps`` batches of ``batch_size`` images drawn with replacement from ``x_aux`` (uint8) by ``rng``."""
    def batches():
        for _ in range(steps):
            idx = torch.randint(0, len(x_aux), (batch_size,), generator=rng).to(x_aux.device)
            yield x_aux[idx].float().div_(255.0)
    return batches


def generator_batches(teacher: Callable[[torch.Tensor], torch.Tensor], *, shape, num_classes: int, nz: int,
                      ngf: int, lr_g: float, g_steps: int, batch_size: int, steps: int, device,
                      reset_rng: torch.Generator, draw_rng: torch.Generator) -> Batches:
    """A generator (drawn from ``reset_rng``) trained ``g_steps`` steps per epoch on CE(teacher(G(z)), y), then
    ``steps`` batches of its samples; z and y from ``draw_rng``."""
    gen = make_generator(shape, nz, ngf, device, reset_rng)
    opt_g = generator_adam(gen.parameters(), lr_g)

    def batches():
        gen.train()
        for _ in range(g_steps):
            z = new_latent(batch_size, nz, device, draw_rng)
            y = random_labels(batch_size, num_classes, device, draw_rng)
            loss = F.cross_entropy(teacher(gen(z)), y)
            opt_g.zero_grad(set_to_none=True)
            loss.backward()
            opt_g.step()
        gen.eval()
        for _ in range(steps):
            with torch.no_grad():  # (never yield inside no_grad: it would leak into the caller)
                x = gen(new_latent(batch_size, nz, device, draw_rng))
            yield x
    return batches


def distil_epoch(students: Sequence[torch.nn.Module], opts: Sequence[torch.optim.Optimizer], scheds: Sequence,
                 batches: Batches, teacher: Callable[[torch.Tensor], torch.Tensor], T: float,
                 grad_clip: float | None = None) -> None:
    """One pass over ``batches()``: each student takes one KL(teacher / T ‖ student / T)·T² step per batch (its
    gradient norm clipped at ``grad_clip`` when given), then its scheduler (if any) steps."""
    for x in batches():
        with torch.no_grad():
            t_out = teacher(x)
        for student, opt, sched in zip(students, opts, scheds):
            kd_step(student, opt, x, t_out, T=T, grad_clip=grad_clip)
            if sched is not None:
                sched.step()


#: FedDF's unlabeled data when ``aux_data: auto`` (FedHydra SPEC §2 proposal; FedMHO SPEC §2 [S] agrees for
#: Fashion-MNIST ↔ MNIST); a dataset without an entry falls back to the generator.
AUTO_AUX = {"mnist": "fmnist", "fmnist": "mnist", "digits": "fmnist", "emnist": "fmnist",
            "svhn": "cifar100", "cifar10": "cifar100", "cifar100": "cifar10"}


def check_aux_data(value, method: str) -> None:
    """``aux_data`` must be ``auto``, ``generator`` or a dataset name (checked when the method is built)."""
    from ..errors import ConfigError

    if not isinstance(value, str) or not value:
        raise ConfigError(f"server.{method}.aux_data", f"must be 'auto', 'generator' or a dataset name, got {value!r}")


class UnlabeledDistillation:
    """Mixin of the FedDF-style server methods (FedDF, its voting variant): the hyper-parameters the ``profile``
    scales and must be positive (see :class:`osfl.methods.base.ServerMethod`), and the ``aux_data`` check."""

    positive = ("steps_per_epoch", "batch_size", "T", "g_steps", "lr_g", "nz", "ngf")
    epoch_keys = ("epochs",)
    step_keys = ("steps_per_epoch", "g_steps")
    synth_keys = ("batch_size",)
    width_keys = ("ngf",)

    def __init__(self, **params):
        super().__init__(**params)
        check_aux_data(self.params["aux_data"], self.name)


def feddf_batches(ctx, p: dict, teacher: Callable[[torch.Tensor], torch.Tensor], *, method: str) -> tuple[
        Batches, str, str]:
    """FedDF's batches for a server context ``ctx`` and the method's resolved params ``p`` (``aux_data``,
    ``batch_size``, ``steps_per_epoch`` and the generator's ``nz``, ``ngf``, ``lr_g``, ``g_steps``): (batches, the
    dataset in force or ``generator``, a description). Random draws come from ``ctx.rng(method, ...)``."""
    from ..errors import ConfigError

    aux = p["aux_data"]
    if aux == "auto":
        aux = AUTO_AUX.get(ctx.dataset, "generator")
    if aux == ctx.dataset:
        raise ConfigError(f"server.{method}.aux_data",
                          f"{aux} is the clients' own dataset; FedDF distils on another one")
    b = p["batch_size"]
    if aux == "generator":
        batches = generator_batches(teacher, shape=ctx.input_shape, num_classes=ctx.num_classes, nz=p["nz"],
                                    ngf=p["ngf"], lr_g=p["lr_g"], g_steps=p["g_steps"], batch_size=b,
                                    steps=p["steps_per_epoch"], device=ctx.device, reset_rng=ctx.rng(method, "reset"),
                                    draw_rng=ctx.rng(method, "latent"))
        return batches, aux, "generator (CE on the averaging ensemble, kept across epochs)"
    x_aux = ctx.load_aux(aux, f"server.{method}.aux_data")
    batches = aux_batches(x_aux, batch_size=b, steps=p["steps_per_epoch"], rng=ctx.rng(method, "batches"))
    return batches, aux, f"{aux} training images, labels unused ({len(x_aux)} images)"
