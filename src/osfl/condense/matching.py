"""Distribution matching (DM, Zhao & Bilen, WACV 2023) with OFedED's backward layer-wise stages (OFedED SPEC §2.3).

A client condenses its data (x, y) into ``ipc`` synthetic images per class it holds: the images are optimised so
that, for every embedding network θ (every member of the ensemble the server sent down, Eq. 2) and every class c,
the mean embedding of the synthetic images of c is close to that of the real images of c:

    L = Σ_θ Σ_{q ∈ active layers} Σ_c ‖ mean_i h^{v_q}_θ(real_c,i) − mean_j h^{v_q}_θ(syn_c,j) ‖²

(squared, as DM and FedDM; OFedED writes the norm without the square: SPEC §2.3's proposal). The layers
``v_1 .. v_J`` are named modules of the networks (their outputs, flattened); stage p = J, J−1, .., 1 uses the layers
p .. J and runs ``iterations[p − 1]`` steps (OFedED's 3-layer CNN: 200 steps on v_3, then 100 on v_2 + v_3, then 100
on all three; the synthetic images carry over from stage to stage). A classic single-stage DM is one layer and one
entry. Each step draws, per class, up to ``real_batch`` real images and (with ``augment_ops``) one DSA transform
applied alike to the real and the synthetic images of that class; the images take an SGD step (DM: lr 1, momentum
0.5). The networks are frozen and in eval mode (their BN layers use running statistics); their weights are never
changed and get no gradients.

Images live in the networks' input space (ours: pixels in [0, 1]); ``init: noise`` draws them as
``init_mean + init_std · N(0, 1)`` (OFedED: "initialised randomly"; 0.5 + 0.5·N(0, 1) is N(0, 1) under the
mean = std = 0.5 normalisation of Co-Boosting's code), ``init: real`` starts from randomly chosen real images of the
class (DM's default). Everything random comes from ``gen``.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch
import torch.nn as nn
from tqdm.auto import tqdm

from ..distill import frozen_forward
from .dsa import DSA_OPS, apply, draw

INITS = ("noise", "real")


class LayerFeatures:
    """The outputs of ``model``'s modules ``names`` (in that order), flattened per sample, captured by forward
    hooks during one call of the model. ``close()`` removes the hooks."""

    def __init__(self, model: nn.Module, names: Sequence[str]):
        modules = dict(model.named_modules())
        missing = [n for n in names if n not in modules]
        if missing:
            raise ValueError(f"{type(model).__name__} has no module {', '.join(map(repr, missing))}; its modules: "
                             f"{', '.join(n for n in modules if n)}")
        self.model, self.names, self._out = model, list(names), {}
        self._hooks = [modules[n].register_forward_hook(self._keep(n)) for n in self.names]

    def _keep(self, name: str):
        def hook(_module, _inputs, output):
            self._out[name] = output
        return hook

    def __call__(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The layers' outputs for ``x``; gradients reach ``x``, never the model's parameters."""
        self._out.clear()
        frozen_forward(self.model, x)
        return [self._out[n].flatten(1) for n in self.names]

    def close(self) -> None:
        for h in self._hooks:
            h.remove()


@contextmanager
def _eval_mode(models: Sequence[nn.Module]):
    """The models in eval mode (BN layers use their running statistics), their previous modes restored after."""
    modes = [m.training for m in models]
    try:
        for m in models:
            m.eval()
        yield
    finally:
        for m, t in zip(models, modes):
            m.train(t)


def _class_means(feature: torch.Tensor, segment: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """(classes, D): the mean of ``feature``'s rows per class, rows labelled by ``segment`` (0 .. classes − 1)."""
    sums = torch.zeros((len(counts), feature.shape[1]), dtype=feature.dtype, device=feature.device)
    return sums.index_add(0, segment, feature) / counts[:, None]


#: rows per forward of the real images (findings.yaml F38): one forward of every class's real batch (640 rows at
#: the cpu profile) is slower on a CPU than several of about this size, and the features come out the same bits as
#: long as no forward is much smaller (measured on an Intel Xeon, AVX512: a batch under 16 rows takes other conv
#: kernels; chunks of 16-640 rows give each row's features exactly as one batch does). So the rows are cut in
#: near-equal chunks of at least this many, never per class (a class may hold 2 images). 32 since 2026-12-07 (was
#: 128): DM's ConvNet steps 1.23x as fast, the same images.
REAL_CHUNK = 32


def _chunked(f: LayerFeatures, x: torch.Tensor) -> list[torch.Tensor]:
    """``f(x)``, run on near-equal chunks of at least :data:`REAL_CHUNK` rows, each layer's features concatenated."""
    k = len(x) // REAL_CHUNK
    if k <= 1:
        return f(x)
    return [torch.cat(per_layer) for per_layer in zip(*(f(c) for c in torch.tensor_split(x, k)))]


def _step_loss(feats: Sequence[LayerFeatures], reals: list[torch.Tensor], mines: list[torch.Tensor],
               active: Sequence[int]) -> torch.Tensor:
    """Σ_θ Σ_{q ∈ active} Σ_c ‖mean h_θ^q(real_c) − mean h_θ^q(syn_c)‖²: every class's (augmented) batch goes
    through a network together (the real ones in chunks, :func:`_chunked`; the networks are in eval mode, so a
    sample's features do not depend on the rest of its batch), and the per-class means are taken by segment. Equal
    to a loop over classes."""
    device = reals[0].device
    n_real = torch.tensor([len(r) for r in reals], device=device)
    n_syn = torch.tensor([len(m) for m in mines], device=device)
    seg_real = torch.repeat_interleave(torch.arange(len(reals), device=device), n_real)
    seg_syn = torch.repeat_interleave(torch.arange(len(mines), device=device), n_syn)
    real, mine = torch.cat(reals), torch.cat(mines)
    loss = torch.zeros((), device=device)
    for f in feats:
        with torch.no_grad():
            fr = _chunked(f, real)
        fs = f(mine)
        for q in active:
            diff = _class_means(fr[q], seg_real, n_real) - _class_means(fs[q], seg_syn, n_syn)
            loss = loss + (diff ** 2).sum()
    return loss


def _step_loss_per_class(feats: Sequence[LayerFeatures], reals: list[torch.Tensor], mines: list[torch.Tensor],
                         active: Sequence[int]) -> torch.Tensor:
    """The same loss with one forward per (class, network): the structure of the DM/DC reference code, kept as the
    reference the batched path is tested and benchmarked against (``batch_classes=False``)."""
    loss = torch.zeros((), device=reals[0].device)
    for real, mine in zip(reals, mines):
        for f in feats:
            with torch.no_grad():
                fr = f(real)
            fs = f(mine)
            for q in active:
                loss = loss + ((fr[q].mean(0) - fs[q].mean(0)) ** 2).sum()
    return loss


@dataclass
class MatchingResult:
    images: torch.Tensor  # (len(classes) · ipc, C, H, W) float32, the networks' input space
    labels: torch.Tensor  # (len(classes) · ipc,) int64, class-major
    classes: list[int]  # the classes distilled: those present in the real data
    losses: list[float] = field(default_factory=list)  # the matching loss of every step, stage after stage


def distribution_matching(models: Sequence[nn.Module], x: torch.Tensor, y: torch.Tensor, *, ipc: int,
                          layers: Sequence[str], iterations: Sequence[int], gen: torch.Generator,
                          lr: float = 1.0, momentum: float = 0.5, real_batch: int = 256,
                          augment_ops: Sequence[str] = DSA_OPS, init: str = "noise", init_mean: float = 0.5,
                          init_std: float = 0.5, progress: bool = False, desc: str = "distribution matching",
                          batch_classes: bool = True, on_step: Callable[[int, int, float], None] | None = None) -> MatchingResult:
    """Condense (x, y) (float images in the networks' input space, int labels, on one device) into ``ipc`` images
    per class present, matching the embeddings of ``models`` at ``layers`` in backward stages (module docstring).

    ``iterations[p]`` is the number of steps of the stage that starts at layer ``layers[p]``; the stages run from
    the last layer to the first. ``on_step(stage, step, loss)`` is called after every step. ``batch_classes``
    (default) sends all classes' batches through a network in one forward; False is the per-class reference loop
    (the same loss up to float rounding; ``benchmarks/bench_matching.py`` compares the two)."""
    if not models:
        raise ValueError("distribution matching needs at least one embedding network")
    if len(iterations) != len(layers):
        raise ValueError(f"iterations gives {len(iterations)} stage lengths for {len(layers)} layers; give one per "
                         "layer (the stage that starts at it)")
    if init not in INITS:
        raise ValueError(f"init must be one of {', '.join(INITS)}, got {init!r}")
    unknown = [op for op in augment_ops if op not in DSA_OPS]
    if unknown:
        raise ValueError(f"unknown DSA op(s) {', '.join(unknown)}; allowed: {', '.join(DSA_OPS)}")
    if ipc < 1 or real_batch < 1 or any(int(i) < 0 for i in iterations):
        raise ValueError("ipc and real_batch must be >= 1 and iterations >= 0")
    device = x.device
    classes = sorted(int(c) for c in torch.unique(y).tolist())
    members = {c: (y == c).nonzero().flatten().cpu() for c in classes}
    shape = tuple(x.shape[1:])
    if init == "noise":
        syn = init_mean + init_std * torch.randn((len(classes) * ipc, *shape), generator=gen)
    else:
        picks = [members[c][torch.randint(len(members[c]), (ipc,), generator=gen)] for c in classes]
        syn = x[torch.cat(picks).to(device)].detach().float().cpu()
    syn = syn.to(device=device, dtype=torch.float32).requires_grad_(True)
    labels = torch.tensor(classes, dtype=torch.long).repeat_interleave(ipc)
    opt = torch.optim.SGD([syn], lr=lr, momentum=momentum)
    losses: list[float] = []
    ops = tuple(augment_ops)
    feats = [LayerFeatures(m, layers) for m in models]
    bar = tqdm(total=int(sum(iterations)), desc=desc, disable=not progress, mininterval=1.0, unit="step")
    try:
        with _eval_mode(models):
            for stage in range(len(layers) - 1, -1, -1):
                for step in range(int(iterations[stage])):
                    reals, mines = [], []
                    for j, c in enumerate(classes):
                        idx = members[c]
                        if len(idx) > real_batch:
                            idx = idx[torch.randperm(len(idx), generator=gen)[:real_batch]]
                        real, mine = x[idx.to(device)].float(), syn[j * ipc:(j + 1) * ipc]
                        if ops:
                            op, u = draw(ops, gen)
                            real, mine = apply(op, u, real, mine)
                        reals.append(real)
                        mines.append(mine)
                    step_loss = _step_loss if batch_classes else _step_loss_per_class
                    loss = step_loss(feats, reals, mines, range(stage, len(layers)))
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                    losses.append(float(loss.detach()))
                    if not math.isfinite(losses[-1]):
                        raise FloatingPointError(f"the matching loss became {losses[-1]} at stage {stage + 1}, step "
                                                 f"{step + 1} (lr {lr}); a smaller image learning rate keeps it finite")
                    bar.update(1)
                    bar.set_postfix(stage=stage + 1, loss=f"{losses[-1]:.3g}", refresh=False)
                    if on_step is not None:
                        on_step(stage, step, losses[-1])
    finally:
        bar.close()
        for f in feats:
            f.close()
    return MatchingResult(syn.detach(), labels.to(device), classes, losses)
