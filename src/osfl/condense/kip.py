"""Kernel inducing points (KIP, Nguyen, Chen & Lee, ICLR 2021): HFLDD's client-side dataset distillation
(HFLDD SPEC §1.5; the proposals follow FedD3's KIP set-up).

A client turns its data (x, y) into ``n_images`` support images whose kernel ridge regression (KRR) predicts its
real images' labels. The kernel is the infinite-width neural tangent kernel (NTK) of the fully connected ReLU network
``Flatten → [Dense → ReLU] × depth → Dense(out)`` in NTK parameterisation, written in closed form (``fc_ntk``;
W_std = √2, b_std = 0.1, depth 4). With centred one-hot labels y (one-hot − 1/N_c, N_c = ``num_classes``) the KIP
loss of a support set S on a target batch T is

    L = ½ · mean((K_TS (K_SS + λ · tr(K_SS)/|S| · I)⁻¹ y_S − y_T)²),    λ = ``reg`` = 1e-6,

and Adam (lr 0.004) moves the support pixels only; the support labels stay fixed, and the label a support image is
sent with is its class. [PAPER]: KIP with lr 0.004 (HFLDD), the FC-NTK, centred labels, λ, Adam on the images
(FedD3). [PROPOSED]: 100 images, initialised as a class-balanced random sample of the client's real images; each step
a fresh class-balanced random target batch of up to 500 real images; a fixed 1000 steps and no early stopping
(FedD3 stops once the KRR accuracy on the target batch exceeds 0.999, at most 3000 steps: a one-class client is
100% accurate at step 1, so that rule distils nothing; ``early_stop=0.999`` reproduces it).

Inside KIP the images are normalised per channel by the client's own mean and std; the result is de-normalised, so
it lives in the caller's input space (ours: pixels in [0, 1]; not clipped, ``to_uint8`` clips and quantises for
transmission). The kernel is computed in float64 (K_SS is regularised by only 1e-6 of its mean diagonal, so its
solve needs float64); the support pixels are float32. Everything random comes from ``gen``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch
from tqdm.auto import tqdm

from ..config import check_float, check_int
from ..errors import ConfigError
from ..sections import section_reader

W_STD, B_STD = math.sqrt(2.0), 0.1
_EDGE = 1e-9  # |cos θ| beyond 1 − _EDGE gets no gradient through θ (see _arccos)


def nngp_diag(x: torch.Tensor, depth: int = 4, w_std: float = W_STD, b_std: float = B_STD) -> torch.Tensor:
    """(depth, n) float64: Σˡ(x, x) for l = 1 .. depth, the variances entering the ``depth`` ReLUs, per sample
    (on the diagonal cos θ = 1, so E[relu(u)²] = Σ/2 and Σˡ⁺¹ = W_std² · Σˡ/2 + b_std²)."""
    return _diag(x.flatten(1).double(), depth, w_std, b_std)


def _diag(a: torch.Tensor, depth: int, w_std: float, b_std: float) -> torch.Tensor:
    """``nngp_diag`` of already flattened float64 rows a (..., n, d): (depth, ..., n)."""
    s = w_std ** 2 * (a * a).sum(-1) / a.shape[-1] + b_std ** 2
    rows = [s]
    for _ in range(depth - 1):
        s = w_std ** 2 * s / 2 + b_std ** 2
        rows.append(s)
    return torch.stack(rows)


def _arccos(c: torch.Tensor) -> torch.Tensor:
    """arccos of c clamped to [−1, 1]: the exact value, but the gradient of arccos(clamp(c, ±(1 − _EDGE))) (zero at
    the ends). At cos θ = ±1 (a sample with itself: the kernel's diagonal) the gradient of θ is infinite while θ is
    constant along the diagonal; autograd would give NaN."""
    c = c.clamp(-1.0, 1.0)
    inner = torch.arccos(c.clamp(-1.0 + _EDGE, 1.0 - _EDGE))
    return inner + (torch.arccos(c) - inner).detach()


def fc_ntk(x1: torch.Tensor, x2: torch.Tensor, depth: int = 4, w_std: float = W_STD, b_std: float = B_STD,
           diag1: torch.Tensor | None = None, diag2: torch.Tensor | None = None) -> torch.Tensor:
    """(n1, n2) float64: the infinite-width NTK of ``Flatten → [Dense → ReLU] × depth → Dense`` (NTK
    parameterisation) between the rows of x1 and x2 (flattened, d = input dim), on their device, differentiable
    w.r.t. both (HFLDD SPEC §1.5):

        Σ¹ = W_std² · x·x'/d + b_std²,  Θ¹ = Σ¹;  per ReLU layer, cos θ = Σ₁₂ / √(Σ₁₁ Σ₂₂),
        Σˡ⁺¹ = W_std² · √(Σ₁₁ Σ₂₂)/(2π) · (sin θ + (π − θ) cos θ) + b_std²,
        Θˡ⁺¹ = Σˡ⁺¹ + W_std² · (π − θ)/(2π) · Θˡ;   the result is Θ^{depth+1} (the readout Dense).

    ``diag1`` / ``diag2``: ``nngp_diag`` of x1 / x2 when the caller already has them (else computed here). With x1
    and x2 the same tensor, cos θ on the diagonal is exactly 1 (not 1 up to rounding), so Θ(x, x) is smooth in x."""
    if x1.shape[1:] != x2.shape[1:]:
        raise ValueError(f"fc_ntk needs inputs of one shape, got {tuple(x1.shape[1:])} and {tuple(x2.shape[1:])}")
    a, b = x1.flatten(1).double(), x2.flatten(1).double()
    d1 = _diag(a, depth, w_std, b_std) if diag1 is None else diag1
    d2 = (d1 if x1 is x2 else _diag(b, depth, w_std, b_std)) if diag2 is None else diag2
    return _ntk(a, b if x1 is not x2 else a, d1, d2, x1 is x2, depth, w_std, b_std)


def _ntk(a: torch.Tensor, b: torch.Tensor, d1: torch.Tensor, d2: torch.Tensor, same: bool, depth: int,
         w_std: float, b_std: float) -> torch.Tensor:
    """``fc_ntk`` of flattened float64 rows a (..., n1, d) and b (..., n2, d) with their ``_diag``s: (..., n1, n2),
    one kernel per leading index (KIP distils several clients at once). ``same``: a and b are one tensor (the
    diagonal's cos θ is set to exactly 1)."""
    sigma = w_std ** 2 * (a @ b.transpose(-1, -2)) / a.shape[-1] + b_std ** 2
    theta = sigma
    for layer in range(depth):
        norm = torch.sqrt(d1[layer][..., :, None] * d2[layer][..., None, :])
        cos = sigma / norm
        if same:
            cos = cos.clone()
            cos.diagonal(dim1=-2, dim2=-1).fill_(1.0)
        angle = _arccos(cos)
        sigma = w_std ** 2 * norm / (2 * math.pi) * (torch.sin(angle) + (math.pi - angle) * torch.cos(angle)) \
            + b_std ** 2
        theta = sigma + w_std ** 2 * (math.pi - angle) / (2 * math.pi) * theta
    return theta


def centred_one_hot(y: torch.Tensor, num_classes: int) -> torch.Tensor:
    """(n, num_classes) float64 labels: one-hot − 1/num_classes (KIP's centred labels)."""
    return torch.nn.functional.one_hot(y, num_classes).double() - 1.0 / num_classes


def krr_predict(k_ts: torch.Tensor, k_ss: torch.Tensor, y_s: torch.Tensor, reg: float = 1e-6) -> torch.Tensor:
    """K_TS (K_SS + λ · tr(K_SS)/|S| · I)⁻¹ y_S: the kernel ridge regression of the support labels y_S (|S|, N_c)
    at the targets, with λ = ``reg`` relative to K_SS's mean diagonal (KIP's regulariser). Leading dimensions are
    batches of independent problems."""
    n = k_ss.shape[-1]
    ridge = reg * k_ss.diagonal(dim1=-2, dim2=-1).sum(-1) / n
    eye = torch.eye(n, dtype=k_ss.dtype, device=k_ss.device)
    return k_ts @ torch.linalg.solve(k_ss + ridge[..., None, None] * eye, y_s)


def kip_loss(k_ts: torch.Tensor, k_ss: torch.Tensor, y_s: torch.Tensor, y_t: torch.Tensor,
             reg: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(L, accuracy): L = ½ · mean((KRR prediction − y_T)²) over targets and classes, and the fraction of targets
    whose prediction's argmax is their class (y_T's argmax); one of each per leading index."""
    pred = krr_predict(k_ts, k_ss, y_s, reg)
    acc = (pred.argmax(-1) == y_t.argmax(-1)).double().mean(-1)
    return 0.5 * ((pred - y_t) ** 2).mean((-2, -1)), acc


def to_uint8(images: torch.Tensor) -> torch.Tensor:
    """Images in [0, 1] pixel space as uint8 for transmission: clipped to [0, 1], × 255, rounded."""
    return (images.clamp(0, 1) * 255).round().to(torch.uint8)


def _balanced_counts(total: int, available: list[int]) -> list[int]:
    """How many of ``total`` to take from each class: total / C each, the remainder to the first classes in order;
    a class with fewer than its share gives all it has and the shortfall goes to the others the same way."""
    take, left = [0] * len(available), total
    while left:
        open_ = [i for i, n in enumerate(available) if take[i] < n]
        share, rest = divmod(left, len(open_))
        for j, i in enumerate(open_):
            add = min(share + (j < rest), available[i] - take[i])
            take[i] += add
            left -= add
    return take


def _balanced_sample(members: list[torch.Tensor], total: int, gen: torch.Generator) -> list[torch.Tensor]:
    """Per class, a random subset (without replacement, drawn from ``gen``) of the class-balanced counts."""
    counts = _balanced_counts(total, [len(m) for m in members])
    return [m[torch.randperm(len(m), generator=gen)[:k]] for m, k in zip(members, counts)]


@dataclass
class KIPResult:
    images: torch.Tensor  # (n_images, C, H, W) float32 in the caller's input space (not clipped)
    labels: torch.Tensor  # (n_images,) int64, class-major: the class each image is sent with
    classes: list[int]  # the classes distilled: those present in the client's data
    losses: list[float] = field(default_factory=list)  # the KIP loss of every step (before its update)
    train_acc: list[float] = field(default_factory=list)  # the KRR accuracy on every step's target batch
    steps_run: int = 0


def kernel_inducing_points(x: torch.Tensor, y: torch.Tensor, *, n_images: int, num_classes: int,
                           gen: torch.Generator, steps: int = 1000, lr: float = 0.004, reg: float = 1e-6,
                           target_batch: int | None = 500, early_stop: float | None = None, depth: int = 4,
                           w_std: float = W_STD, b_std: float = B_STD, progress: bool = False,
                           desc: str = "kernel inducing points",
                           on_step: Callable[[int, float, float], None] | None = None) -> KIPResult:
    """Distil a client's (x, y) (float images in [0, 1], int labels < ``num_classes``, on one device) into
    ``n_images`` support images by KIP (module docstring).

    The support starts as a class-balanced random sample of the real images: n_images / C per class the client
    holds (C of them), the remainder of the division to the first classes in sorted order (FedD3 requires C to
    divide n_images; we do not), and a class with too few images gives all it has, its shortfall going to the
    others. Each step draws a target batch the same class-balanced way, of ``target_batch`` real images (None, or
    at least the client's count: all of them, every step). ``early_stop``: stop after the first step whose KRR
    accuracy on its target batch exceeds it (FedD3: 0.999); None runs all ``steps``. ``on_step(step, loss, acc)``
    is called after every step. One client of ``kernel_inducing_points_many``."""
    hook = None if on_step is None else (lambda step, losses, accs: on_step(step, losses[0], accs[0]))
    return kernel_inducing_points_many([x], [y], n_images=n_images, num_classes=num_classes, gens=[gen], steps=steps,
                                       lr=lr, reg=reg, target_batch=target_batch, early_stop=early_stop, depth=depth,
                                       w_std=w_std, b_std=b_std, progress=progress, desc=desc, on_step=hook)[0]


def kernel_inducing_points_many(xs: Sequence[torch.Tensor], ys: Sequence[torch.Tensor], *, n_images: int,
                                num_classes: int, gens: Sequence[torch.Generator], steps: int = 1000,
                                lr: float = 0.004, reg: float = 1e-6, target_batch: int | None = 500,
                                early_stop: float | None = None, depth: int = 4, w_std: float = W_STD,
                                b_std: float = B_STD, progress: bool = False, desc: str = "kernel inducing points",
                                on_step: Callable[[int, list[float], list[float]], None] | None = None
                                ) -> list[KIPResult]:
    """``kernel_inducing_points`` for several clients at once, client m with its data (xs[m], ys[m]) and its own
    generator gens[m]: every kernel, solve and Adam update is one batched tensor operation over the clients (on a
    CPU the per-step cost of one client is mostly dispatch, not arithmetic). Client m's result equals its own
    ``kernel_inducing_points`` run with gens[m] up to floating-point rounding (its losses depend on its support
    only, and Adam is elementwise); the draws from gens[m] are the same, in the same order. The clients must draw
    target batches of one size: ``target_batch`` below every client's count, or all clients of one count. A client
    stopped early (``early_stop``) keeps its support of that step while the others go on. ``on_step(step, losses,
    accs)`` gets the lists of the clients still running."""
    m = len(xs)
    if m < 1 or len(ys) != m or len(gens) != m:
        raise ValueError(f"KIP needs one label tensor and one generator per client; got {len(xs)} image tensors, "
                         f"{len(ys)} label tensors and {len(gens)} generators")
    if n_images < 1 or steps < 0 or lr <= 0 or reg < 0 or depth < 1:
        raise ValueError(f"KIP needs n_images >= 1, steps >= 0, lr > 0, reg >= 0 and depth >= 1; got n_images "
                         f"{n_images}, steps {steps}, lr {lr}, reg {reg}, depth {depth}")
    if target_batch is not None and target_batch < 1:
        raise ValueError(f"target_batch must be >= 1 or None (all the client's images), got {target_batch}")
    for x, y in zip(xs, ys):
        if len(x) != len(y) or len(x) < n_images:
            raise ValueError(f"KIP distils {n_images} images from {len(x)} images with {len(y)} labels; it needs one "
                             "label per image and at least n_images images")
        if y.min() < 0 or y.max() >= num_classes:
            raise ValueError(f"labels must lie in 0 .. {num_classes - 1} (num_classes {num_classes}), got "
                             f"{int(y.min())} .. {int(y.max())}")
    sizes = {len(x) if target_batch is None or target_batch >= len(x) else target_batch for x in xs}
    every = [target_batch is None or target_batch >= len(x) for x in xs]
    if len(sizes) > 1 or len(set(every)) > 1:
        raise ValueError(f"clients distilled together draw target batches of one size; target_batch {target_batch} "
                         f"gives sizes {sorted(sizes)} for client counts {[len(x) for x in xs]}")
    device = xs[0].device
    dims = [0] + list(range(2, xs[0].dim()))
    means, stds, reals, members, classes, picks = [], [], [], [], [], []
    for x, y, gen in zip(xs, ys, gens):
        mean = x.double().mean(dims, keepdim=True)[0]
        std = x.double().std(dims, keepdim=True)[0]
        std = torch.where(std > 0, std, torch.ones_like(std))  # a constant channel is only centred
        means.append(mean)
        stds.append(std)
        reals.append(((x.double() - mean) / std).float())
        classes.append(sorted(int(c) for c in torch.unique(y).tolist()))
        members.append([(y == c).nonzero().flatten().cpu() for c in classes[-1]])
        picks.append(_balanced_sample(members[-1], n_images, gen))
    support = torch.stack([r[torch.cat(p).to(device)] for r, p in zip(reals, picks)]).requires_grad_(True)
    labels = [torch.tensor(c, dtype=torch.long).repeat_interleave(torch.tensor([len(q) for q in p])).to(device)
              for c, p in zip(classes, picks)]
    y_s = torch.stack([centred_one_hot(lab, num_classes) for lab in labels])
    if every[0]:
        x_t = torch.stack(reals).flatten(2).double()
        y_t = torch.stack([centred_one_hot(y.long(), num_classes) for y in ys])
        d_t = _diag(x_t, depth, w_std, b_std)
    opt = torch.optim.Adam([support], lr=lr)
    losses: list[list[float]] = [[] for _ in range(m)]
    accs: list[list[float]] = [[] for _ in range(m)]
    done: dict[int, torch.Tensor] = {}  # client -> its support when it stopped early
    bar = tqdm(total=steps, desc=desc, disable=not progress, mininterval=1.0, unit="step")
    try:
        for step in range(steps):
            if not every[0]:
                idx = [torch.cat(_balanced_sample(mem, target_batch, gen)).to(device)
                       for mem, gen in zip(members, gens)]
                x_t = torch.stack([r[i] for r, i in zip(reals, idx)]).flatten(2).double()
                y_t = torch.stack([centred_one_hot(y[i].long(), num_classes) for y, i in zip(ys, idx)])
                d_t = _diag(x_t, depth, w_std, b_std)
            s = support.flatten(2).double()
            d_s = _diag(s, depth, w_std, b_std)
            k_ss = _ntk(s, s, d_s, d_s, True, depth, w_std, b_std)
            k_ts = _ntk(x_t, s, d_t, d_s, False, depth, w_std, b_std)
            loss, acc = kip_loss(k_ts, k_ss, y_s, y_t, reg)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()  # client m's gradient is that of its own loss
            opt.step()
            running = [k for k in range(m) if k not in done]
            step_losses, step_accs = loss.detach().tolist(), acc.tolist()
            for k in running:
                losses[k].append(step_losses[k])
                accs[k].append(step_accs[k])
                if not math.isfinite(step_losses[k]):
                    raise FloatingPointError(f"the KIP loss became {step_losses[k]} at step {step + 1} (lr {lr}, "
                                             f"reg {reg})")
            bar.update(1)
            bar.set_postfix(loss=f"{max(losses[k][-1] for k in running):.3g}",
                            acc=f"{min(accs[k][-1] for k in running):.3f}", refresh=False)
            if on_step is not None:
                on_step(step, [losses[k][-1] for k in running], [accs[k][-1] for k in running])
            if early_stop is not None:
                for k in running:
                    if accs[k][-1] > early_stop:
                        done[k] = support[k].detach().clone()
                if len(done) == m:
                    break
    finally:
        bar.close()
    final = support.detach()
    return [KIPResult((done.get(k, final[k]).double() * stds[k] + means[k]).float(), labels[k], classes[k],
                      losses[k], accs[k], len(losses[k])) for k in range(m)]


@dataclass(frozen=True)
class KIPSettings:
    """The ``kip`` section of a params file (HFLDD SPEC §1.5): the keyword arguments of ``kernel_inducing_points``
    other than the data, ``num_classes`` and ``gen``; defaults as the module docstring's [PAPER] / [PROPOSED]."""

    n_images: int = 100
    steps: int = 1000
    lr: float = 0.004
    reg: float = 1e-6
    target_batch: int | None = 500
    early_stop: float | None = None
    depth: int = 4
    w_std: float = W_STD
    b_std: float = B_STD

    KEYS = ("n_images", "steps", "lr", "reg", "target_batch", "early_stop", "depth", "w_std", "b_std")

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None, key: str = "kip") -> "KIPSettings":
        """Only what differs from the defaults; a bad value fails naming its key and what is allowed."""
        get = section_reader(cls, section, key)
        target_batch, early_stop = get("target_batch"), get("early_stop")
        if target_batch is not None:
            target_batch = check_int(f"{key}.target_batch", target_batch, minimum=1)
        if early_stop is not None:
            early_stop = check_float(f"{key}.early_stop", early_stop, positive=True)
            if early_stop >= 1:
                raise ConfigError(f"{key}.early_stop", f"must be a KRR accuracy below 1 (FedD3: 0.999) or null "
                                                       f"(no early stop), got {early_stop}")
        return cls(n_images=check_int(f"{key}.n_images", get("n_images"), minimum=1),
                   steps=check_int(f"{key}.steps", get("steps"), minimum=0),
                   lr=check_float(f"{key}.lr", get("lr"), positive=True),
                   reg=check_float(f"{key}.reg", get("reg"), minimum=0.0), target_batch=target_batch,
                   early_stop=early_stop, depth=check_int(f"{key}.depth", get("depth"), minimum=1),
                   w_std=check_float(f"{key}.w_std", get("w_std"), positive=True),
                   b_std=check_float(f"{key}.b_std", get("b_std"), minimum=0.0))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
