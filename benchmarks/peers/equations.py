"""Equation-level comparison: the authors' official code and ours called on the same tensors (README.md).

Every check builds its inputs from seeded ``torch.Generator`` objects (float64 where the official code allows it),
calls the official function (imported from ``$OSFL_PEERS/<repo>``, :mod:`.official`) and ours, and records the
largest absolute difference, the relative difference (``max|official − ours| / max|official|``), the same for the
gradients w.r.t. the inputs where the step is a gradient step, the tolerance and a verdict.

Where the official equation is written inline inside a long function, the harness calls that function on tiny stub
objects (a fixed image batch as "generator", identity augmentations and normaliser, small client models) and stops
it right after the statement that computes the equation (:func:`.official.run_until`), reading the official
values from its local variables; the official expression itself is never re-typed here. Where the official code
offers only a building block (DENSE's ``kldiv`` with ``reduction='none'``), the harness composes it as the official
line does and says so in the check's note.

Run from the repository root (a few seconds on one CPU core)::

    python -m benchmarks.peers.equations [--out benchmarks/peers/records/equations.json]

The record (JSON, indent 1, sorted keys, no timestamps or host names) is byte-identical from run to run.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import logging
import math
import platform
import random
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn

from .official import (CPU_DEVICE_NOTE, OFFICIAL, MissingCheckout, cpu_device, official_modules, run_until,
                       statement_line)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "benchmarks/peers/records/equations.json"
TOLERANCE = {torch.float64: 1e-6, torch.float32: 1e-5}  # relative, on values and on gradients
F64 = torch.float64
B = 8  # batch size of every check
SHAPE = (1, 28, 28)  # images of the small client models (our cnn2: the DENSE/FedHydra CNN with BatchNorm)
CLASSES = 10
LOGIT_SCALE = 8.0


# ---------------------------------------------------------------------------------------------------- record
def _sig(x: float | None) -> float | None:
    """Three significant digits: the record does not depend on the last bits of a rounding difference."""
    if x is None:
        return None
    if not math.isfinite(x):
        return None
    return float(f"{x:.3g}")


def differences(pairs) -> tuple[float, float | None]:
    """(max |a − b|, max over pairs of max |a − b| / max |a|) over (official, ours) tensor pairs."""
    mx, rel = 0.0, 0.0
    for a, b in pairs:
        a = torch.as_tensor(a).detach().to(F64)
        b = torch.as_tensor(b).detach().to(F64)
        if a.shape != b.shape:
            raise ValueError(f"shapes differ: official {tuple(a.shape)}, ours {tuple(b.shape)}")
        if a.numel() == 0:
            continue
        d = (a - b).abs().max().item()
        scale = a.abs().max().item()
        mx = max(mx, d)
        rel = max(rel, d / scale if scale > 0 else (0.0 if d == 0 else math.inf))
    return mx, (None if not math.isfinite(rel) else rel)


def write_record(record: dict, path: Path) -> None:
    """JSON with indent 1 and sorted keys, newline-terminated (deterministic bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")


def line_of(rel_path: str, text: str) -> str:
    """``rel_path:line`` of the first line of one of our files that contains ``text``."""
    for i, line in enumerate((REPO / rel_path).read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return f"{rel_path}:{i}"
    raise ValueError(f"{rel_path} has no line containing {text!r}")


@dataclass
class Harness:
    root: Path | None = None
    checks: list[dict] = field(default_factory=list)
    shims: dict[str, set[str]] = field(default_factory=dict)
    _commits: dict[str, str] = field(default_factory=dict)

    def commit(self, peer: str) -> str:
        if peer not in self._commits:
            self._commits[peer] = OFFICIAL[peer].checked_out(self.root)
        return self._commits[peer]

    def line(self, peer: str, rel_path: str, text: str) -> str:
        """``rel_path:line`` of the first line of an official file (not importable, e.g. a script) containing
        ``text``."""
        path = OFFICIAL[peer].require(self.root) / rel_path
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if text in line:
                return f"{rel_path}:{i}"
        raise ValueError(f"{peer}/{rel_path} has no line containing {text!r}")

    def shim(self, peer: str, *notes: str) -> None:
        s = self.shims.setdefault(OFFICIAL[peer].repo, set())
        s.update(OFFICIAL[peer].stub_notes())
        s.update(notes)

    def add(self, *, id: str, method: str, what: str, peer: str, where: str, ours: str, inputs: str,
            values=None, grads=None, dtype=F64, note: str = "", documented: str | None = None,
            verdict: str | None = None, tolerance: float | None = None) -> dict:
        tol = TOLERANCE[dtype] if tolerance is None else tolerance
        mx, rel = differences(values) if values is not None else (None, None)
        gmx, grel = differences(grads) if grads else (None, None)
        if verdict is None:
            ok = rel is not None and rel <= tol and (not grads or (grel is not None and grel <= tol))
            verdict = "equal" if ok else ("differs (documented choice)" if documented else "differs")
        if documented and verdict != "equal":
            note = (note.rstrip(".") + ". " if note else "") + f"Documented in {documented}."
        rec = {"id": id, "method": method, "what": what,
               "official": {"repo": OFFICIAL[peer].repo, "commit": self.commit(peer), "where": where},
               "ours": ours, "inputs": inputs, "dtype": str(dtype).replace("torch.", ""),
               "max_abs_diff": _sig(mx), "rel_diff": _sig(rel), "grad_max_abs_diff": _sig(gmx),
               "grad_rel_diff": _sig(grel), "tolerance": tol, "verdict": verdict, "note": note}
        self.checks.append(rec)
        return rec

    def record(self) -> dict:
        return {"harness": "benchmarks/peers/equations.py", "torch": torch.__version__,
                "python": platform.python_version(),
                "shims": {repo: sorted(notes) for repo, notes in sorted(self.shims.items())},
                "checks": self.checks}


# ---------------------------------------------------------------------------------------------------- inputs
def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@contextlib.contextmanager
def seeded(seed: int):
    """The global torch, numpy and random generators seeded for the block (the official code draws from them) and
    put back afterwards."""
    np_state, py_state = np.random.get_state(), random.getstate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(np_state)
            random.setstate(py_state)


@contextlib.contextmanager
def quiet():
    """The official code prints progress bars and losses: keep them out of the harness's output."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def client_models(m: int, seed: int, dtype=F64) -> list[nn.Module]:
    """``m`` of our cnn2 (two conv + BatchNorm blocks, 29,034 parameters) with random weights (the classifier's
    scaled by ``LOGIT_SCALE``) and random BN running statistics, in eval mode."""
    from osfl.models import build_model

    g = gen(seed)
    out = []
    with seeded(seed):
        for _ in range(m):
            net = build_model("cnn2", SHAPE, CLASSES).to(dtype)
            with torch.no_grad():
                for mod in net.modules():
                    if isinstance(mod, nn.BatchNorm2d):
                        mod.running_mean.copy_(0.2 * torch.randn(mod.num_features, generator=g, dtype=dtype))
                        mod.running_var.copy_(0.5 + torch.rand(mod.num_features, generator=g, dtype=dtype))
                    elif isinstance(mod, nn.Linear):  # logits of a few units, as trained models give
                        mod.weight.mul_(LOGIT_SCALE)
            out.append(net.eval())
    return out


def perturbed(model: nn.Module, seed: int, scale: float = 0.05) -> nn.Module:
    """A copy of ``model`` with N(0, scale²) added to every parameter: a student that agrees with the teachers on
    some samples only (random students predict one class everywhere)."""
    out, g = copy.deepcopy(model), gen(seed)
    with torch.no_grad():
        for p in out.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return out


def images(seed: int, n: int = B, shape=SHAPE, dtype=F64) -> torch.Tensor:
    """Images in [0, 1]: coarse 4x4 noise upsampled (70 %) plus pixel noise (30 %), so that the small models do
    not all see the same thing."""
    g = gen(seed)
    coarse = torch.rand((n, shape[0], 4, 4), generator=g, dtype=dtype)
    coarse = nn.functional.interpolate(coarse, size=shape[1:], mode="bilinear", align_corners=False)
    return 0.7 * coarse + 0.3 * torch.rand((n, *shape), generator=g, dtype=dtype)


class FixedImages(nn.Module):
    """Stands for a generator: returns a fixed image batch whatever z is (it holds the batch as its only
    parameter, so the official optimiser and re-initialisation have something to hold)."""

    def __init__(self, x: torch.Tensor):
        super().__init__()
        self.x = nn.Parameter(x.clone())

    def forward(self, z):
        return self.x * 1.0


class Identity:
    """Stands for Co-Boosting's ``Normalizer`` (``normalizer(x)`` and ``normalizer(x, reverse)``)."""

    def __call__(self, x, reverse=False):
        return x


class WithFeatures(nn.Module):
    """A client model with the ``return_features`` keyword Co-Boosting's ``WEnsemble`` passes (same logits)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x, return_features=False):
        out = self.model(x)
        return (out, out) if return_features else out


def silent_logger() -> logging.Logger:
    log = logging.getLogger("peers-equations-silent")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log


@contextlib.contextmanager
def observing(module, name: str):
    """Record the arguments and result of every call of ``module.name`` (one of ours) in the block; the calls
    themselves are unchanged."""
    real, calls = getattr(module, name), []

    def wrapper(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((tuple(a.detach().clone() if torch.is_tensor(a) else a for a in args),
                      out.detach().clone() if torch.is_tensor(out) else out))
        return out

    setattr(module, name, wrapper)
    try:
        yield calls
    finally:
        setattr(module, name, real)


def leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(True)


def grads(out: torch.Tensor, wrt: list[torch.Tensor]) -> list[torch.Tensor]:
    return list(torch.autograd.grad(out, wrt, retain_graph=True, allow_unused=False))


# ---------------------------------------------------------------------------------------------------- DENSE
def check_kldiv(h: Harness) -> None:
    """DENSE's kldiv / KLDiv and Co-Boosting's KLDiv (its KD criterion) against kl_div_t."""
    from osfl.distill.losses import kl_div_t

    g = gen(11)
    s, t = 3 * torch.randn(B, CLASSES, generator=g, dtype=F64), 3 * torch.randn(B, CLASSES, generator=g, dtype=F64)
    v = torch.randn(B, generator=g, dtype=F64)  # weights the per-sample values so that their gradients differ
    temps = (1.0, 3.0, 4.0, 20.0)
    with official_modules("DENSE", "helpers.utils", root=h.root) as (u,):
        h.shim("DENSE")
        for reduction in ("batchmean", "none"):
            vals, grs = [], []
            for T in temps:
                so, to, sr, tr = leaf(s), leaf(t), leaf(s), leaf(t)
                off = u.kldiv(so, to, T=T, reduction=reduction)
                our = kl_div_t(sr, tr, T, reduction=reduction)
                if reduction == "none":
                    off = off.sum(1)  # composed as helpers/synthesizers.py does: kldiv(.., reduction='none').sum(1)
                    off, our = off * v, our * v
                vals.append((off, our))
                grs += list(zip(grads(off.sum(), [so, to]), grads(our.sum(), [sr, tr])))
            h.add(id=f"dense-kldiv-{reduction}", method="DENSE",
                  what=f"kldiv(student, teacher, T, reduction='{reduction}')"
                       + (" summed over classes" if reduction == "none" else "") + " = KL(p_t || p_s)·T²",
                  peer="DENSE", where="helpers/utils.py:kldiv", ours="osfl.distill.losses:kl_div_t",
                  inputs=f"logits {B}x{CLASSES} (3·N(0,1)), T in {list(temps)}; gradients w.r.t. both logits"
                         + ("; per-sample values weighted by a random vector" if reduction == "none" else ""),
                  values=vals, grads=grs,
                  note=("official reduction='none' is element-wise (B, C); the harness sums it over classes as the "
                        "official adversarial line does; ours returns the per-sample sums (B,)"
                        if reduction == "none" else ""))
        kl_module_check(h, u.KLDiv, 20.0, s, t, id="dense-KLDiv-kd", method="DENSE",
                        what="KLDiv(T) module, the KD criterion of kd_train (batchmean)",
                        where="helpers/utils.py:KLDiv.forward", t_note="T=20 (README)")
    with official_modules("Co-Boosting", "datafree.criterions", root=h.root) as (crit,):
        h.shim("Co-Boosting")
        kl_module_check(h, crit.KLDiv, 4.0, s, t, id="coboost-KLDiv-kd", method="Co-Boosting",
                        what="KLDiv(T=kd_T) module, the KD criterion (batchmean)",
                        where="datafree/criterions.py:KLDiv.forward", t_note="T=4 (kd_T default)")


def kl_module_check(h: Harness, KLDiv, T: float, s, t, *, id: str, method: str, what: str, where: str,
                    t_note: str) -> None:
    """An official KLDiv(T) criterion module against our kl_div_t on the same logits, values and gradients."""
    from osfl.distill.losses import kl_div_t

    so, to, sr, tr = leaf(s), leaf(t), leaf(s), leaf(t)
    off, our = KLDiv(T=T)(so, to), kl_div_t(sr, tr, T)
    h.add(id=id, method=method, what=what, peer=method, where=where, ours="osfl.distill.losses:kl_div_t",
          inputs=f"logits {B}x{CLASSES}, {t_note}; gradients w.r.t. both logits",
          values=[(off, our)], grads=list(zip(grads(off, [so, to]), grads(our, [sr, tr]))))


def check_dense_synthesis(h: Harness, models, student, x) -> None:
    """The loss terms of AdvSynthesizer.synthesize (masked adversarial KL, BN loss as the official code runs it)
    and DeepInversionHook registered on the client models."""
    from osfl.distill.bn_hooks import BNStatHooks
    from osfl.distill.ensemble import BatchedEnsemble
    from osfl.distill.losses import adversarial_loss

    after = "loss_adv = -(kldiv(s_out, t_out"
    with official_modules("DENSE", "helpers.synthesizers", "helpers.utils", root=h.root) as (syn, u), \
            cpu_device(), tempfile.TemporaryDirectory() as tmp, quiet(), seeded(21), contextlib.chdir(tmp):
        h.shim("DENSE", CPU_DEVICE_NOTE,
               "synthesize: the working directory is a scratch folder (it writes 1.png there) and save_dir too")
        teachers, st = [copy.deepcopy(m) for m in models], copy.deepcopy(student)
        s = syn.AdvSynthesizer(teacher=None, model_list=teachers, student=st, generator=FixedImages(x), nz=8,
                               num_classes=CLASSES, img_size=SHAPE, iterations=1, lr_g=1e-3,
                               synthesis_batch_size=B, sample_batch_size=B, adv=1.0, bn=1.0, oh=1.0,
                               save_dir=str(Path(tmp) / "pool"), dataset="mnist")
        loc = run_until(s.synthesize, after, nn.Identity(), 0)
        line = statement_line(syn.AdvSynthesizer.synthesize, after)
        bn_line = statement_line(syn.AdvSynthesizer.synthesize, "loss_bn = sum([h.r_feature")
        hook_line = statement_line(syn.AdvSynthesizer.synthesize, "hooks.append(DeepInversionHook(m))")
        s_out, t_out, loss_adv, view = loc["s_out"], loc["t_out"], loc["loss_adv"], loc["global_view"]
        masked = int(loc["mask"].sum())
        if not 0 < masked < B:
            raise RuntimeError(f"dense-adversarial-masked: the mask should keep some samples and drop others; it "
                               f"keeps {masked} of {B} (change the inputs)")
        sr, tr = leaf(s_out), leaf(t_out)
        our = adversarial_loss(sr, tr, T=1.0, mask=True)
        h.add(id="dense-adversarial-masked", method="DENSE",
              what="generator's adversarial term −mean(mask·KL(t‖s)), mask = argmax s ≠ argmax t, T=1",
              peer="DENSE", where=f"helpers/synthesizers.py:{line} (AdvSynthesizer.synthesize)",
              ours="osfl.distill.losses:adversarial_loss(mask=True, T=1)",
              inputs=f"synthesize run to this line: 3 cnn2 teachers (Ensemble_A), a cnn2 student (teacher 0 with "
                     f"perturbed weights), a fixed {B}-image "
                     f"batch as generator output, identity views; {masked} of {B} samples disagree; gradients "
                     "w.r.t. student and teacher logits",
              values=[(loss_adv, our)], grads=list(zip(grads(loss_adv, [s_out, t_out]), grads(our, [sr, tr]))))

        # the BN term as the official loop computes it: its hooks look for BatchNorm2d in Ensemble_A(model_list)
        # .modules(), and Ensemble_A keeps the models in a plain list, so there are none and loss_bn = sum([]) = 0
        loss_bn = torch.as_tensor(float(loc["loss_bn"]), dtype=F64)
        xr = leaf(view)
        with BNStatHooks(models) as hooks:
            for m in models:
                m(xr)
            our_bn = hooks.loss()
        h.add(id="dense-bn-as-run", method="DENSE",
              what="BN-statistics term inside AdvSynthesizer.synthesize as the official loop runs it",
              peer="DENSE", where=f"helpers/synthesizers.py:{bn_line} (hooks: line {hook_line})",
              ours="osfl.distill.bn_hooks:BNStatHooks.loss",
              inputs="the same run; 3 cnn2 teachers with 2 BN layers each",
              values=[(loss_bn, our_bn.detach())],
              note=(f"official: {len(loc['hooks'])} hooks, because they are registered on "
                    f"Ensemble_A(model_list).modules() (helpers/synthesizers.py:{hook_line}) and Ensemble_A keeps "
                    "the models in a plain Python list, so loss_bn = sum([]) = 0 whatever bn is; ours sums the BN "
                    "loss over every BN layer of every client (the paper's DENSE, bn = 1 by default) and bn: 0 "
                    "reproduces the official run"),
              documented=line_of("src/osfl/methods/dense.py", "``bn``: 1 is the paper's DENSE"))

        # DeepInversionHook itself, registered on the client models directly
        hooks = [[u.DeepInversionHook(mod) for mod in m.modules() if isinstance(mod, nn.BatchNorm2d)] for m in teachers]
        xo = leaf(x)
        for m in teachers:
            m(xo)
        per_model_off = torch.stack([sum(hk.r_feature for hk in hs) for hs in hooks])
        total_off = sum(hk.r_feature for hs in hooks for hk in hs)  # the official line: sum([h.r_feature ...])
        for hs in hooks:
            for hk in hs:
                hk.remove()
    xr = leaf(x)
    with BNStatHooks(models) as bn_hooks:
        for m in models:
            m(xr)
        total, per_model = bn_hooks.loss(), bn_hooks.per_model()
    h.add(id="dense-bn-hook", method="DENSE",
          what="BN-statistics loss Σ_models Σ_layers ‖running_var − var‖₂ + ‖running_mean − mean‖₂ (and per model)",
          peer="DENSE", where="helpers/utils.py:DeepInversionHook.hook_fn",
          ours="osfl.distill.bn_hooks:BNStatHooks.loss/per_model",
          inputs=f"{B} images in [0,1], 3 cnn2 models with random BN running statistics; gradient w.r.t. the images",
          values=[(total_off, total), (per_model_off, per_model)],
          grads=[(grads(total_off, [xo])[0], grads(total, [xr])[0])],
          note="official hooks registered on each model's BatchNorm2d layers and summed as "
               f"helpers/synthesizers.py:{bn_line} does")
    xb = leaf(x)
    ens = BatchedEnsemble(models)
    _, per_model_b = ens.forward_with_bn(xb)
    h.add(id="dense-bn-batched", method="DENSE",
          what="the same per-model BN losses from our vmapped ensemble (the path DENSE/Co-Boosting/FedHydra run)",
          peer="DENSE", where="helpers/utils.py:DeepInversionHook.hook_fn",
          ours="osfl.distill.ensemble:BatchedEnsemble.forward_with_bn",
          inputs="as dense-bn-hook; gradient of the sum w.r.t. the images",
          values=[(per_model_off, per_model_b)],
          grads=[(grads(total_off, [xo])[0], grads(per_model_b.sum(), [xb])[0])])


def check_generator(h: Harness) -> None:
    """DENSE's Generator against ours: parameter counts, output shape, and the forward with the same weights."""
    from osfl.distill.generator import Generator as Ours

    with official_modules("DENSE", "models.generator", root=h.root) as (mg,):
        h.shim("DENSE")
        for shape in ((1, 28, 28), (3, 32, 32)):
            c, s, _ = shape
            with seeded(31):
                off, our = mg.Generator(nz=256, ngf=64, img_size=s, nc=c).to(F64), Ours(256, 64, s, c).to(F64)
            n_off, n_our = (sum(p.numel() for p in m.parameters()) for m in (off, our))
            so, sd = off.state_dict(), our.state_dict()
            if [v.shape for v in so.values()] != [v.shape for v in sd.values()]:
                raise ValueError("generator state dicts do not line up")
            our.load_state_dict(dict(zip(sd.keys(), so.values())))  # the same weights, key by key in order
            z = torch.randn(4, 256, generator=gen(32), dtype=F64)
            outs = []
            for mode in ("train", "eval"):
                off.train(mode == "train"), our.train(mode == "train")
                zo, zr = leaf(z), leaf(z)
                a, b = off(zo), our(zr)
                outs.append(((a, b), (grads(a.sum(), [zo])[0], grads(b.sum(), [zr])[0])))
            h.add(id=f"dense-generator-{c}x{s}x{s}", method="DENSE",
                  what=f"Generator(nz=256, ngf=64, img {c}x{s}x{s}): parameter count, output, gradient w.r.t. z",
                  peer="DENSE", where="models/generator.py:Generator", ours="osfl.distill.generator:Generator",
                  inputs="official weights copied into ours (same order and shapes); z 4x256 N(0,1); train and eval "
                         f"mode; parameters official {n_off:,}, ours {n_our:,}",
                  values=[(torch.tensor(float(n_off)), torch.tensor(float(n_our)))] + [o[0] for o in outs],
                  grads=[o[1] for o in outs],
                  note=f"output shape {tuple(outs[0][0][0].shape)} on both sides")


# ---------------------------------------------------------------------------------------------------- Co-Boosting
def _coboost_synthesizer(cb, ufl, models, student, x, tmp, *, iterations: int, w: torch.Tensor, args):
    teachers = [WithFeatures(copy.deepcopy(m)) for m in models]
    teacher = ufl.WEnsemble(teachers, w)
    return cb.COBOOSTSynthesizer(teacher, teachers, copy.deepcopy(student), FixedImages(x), nz=8,
                                 num_classes=CLASSES, img_size=SHAPE, save_dir=str(Path(tmp) / "pool"),
                                 iterations=iterations, lr_g=1e-3, synthesis_batch_size=B, sample_batch_size=B,
                                 adv=1.0, bn=1.0, oh=1.0, normalizer=Identity(), args=args)


def check_coboost_synthesis(h: Harness, models, student, x) -> None:
    """The loss terms of COBOOSTSynthesizer.synthesize: hard-sample CE, unmasked adversarial KL (T=3), BN loss / m."""
    from osfl.distill.bn_hooks import BNStatHooks
    from osfl.distill.losses import adversarial_loss, hard_sample_ce

    # float32: the official hard-sample mask is built with .float() and scattered into softmax(t_out)
    models = [copy.deepcopy(mdl).float() for mdl in models]
    student, x = copy.deepcopy(student).float(), x.float()
    m = len(models)
    after = "loss_adv = -(dense_kldiv(s_out, t_out"
    where = "datafree/synthesis/coboost.py:{} (COBOOSTSynthesizer.synthesize)"
    args = SimpleNamespace(hs=1.0, print_freq=1, logger=silent_logger(), weighted=False, wa_steps=1, mu=0.01,
                           wdc=0.99, his=True)
    with official_modules("Co-Boosting", "datafree.synthesis.coboost", "utils_fl", "datafree.utils",
                          root=h.root) as (cb, ufl, du), \
            cpu_device(), tempfile.TemporaryDirectory() as tmp, quiet(), seeded(41):
        h.shim("Co-Boosting", CPU_DEVICE_NOTE)
        s = _coboost_synthesizer(cb, ufl, models, student, x, tmp, iterations=1,
                                 w=torch.full((m,), 1.0 / m, dtype=F64), args=args)
        loc = run_until(s.synthesize, after, cur_ep=0)
        # the same logits in float64, through the official dense_kldiv composed as the official line composes it
        so64, to64 = leaf(loc["s_out"].to(F64)), leaf(loc["t_out"].to(F64))
        adv64 = -(du.dense_kldiv(so64, to64, T=3, reduction="none").sum(1)).mean()
        fn = cb.COBOOSTSynthesizer.synthesize
        l_oh = statement_line(fn, "loss_oh = ((1-p.detach()).pow(")
        l_adv = statement_line(fn, after)
        l_bn = statement_line(fn, "loss_bn = sum([h.r_feature")
        for hooks in (s.hooks,):
            for hk in hooks:
                hk.remove()
    t_out, s_out, y, inputs = loc["t_out"], loc["s_out"], loc["targets"], loc["inputs"]

    tr = leaf(t_out)
    our = hard_sample_ce(tr, y, 1.0)
    h.add(id="coboost-hard-sample-ce", method="Co-Boosting",
          what="hard-sample weighted CE mean((1 − p_y)^hs · CE(t, y)), p detached, hs=1",
          peer="Co-Boosting", where=where.format(l_oh), ours="osfl.distill.losses:hard_sample_ce",
          inputs=f"synthesize run to the adversarial line: weighted ensemble (WEnsemble, w=1/3) of 3 cnn2, fixed "
                 f"{B}-image batch, identity normaliser, random targets; gradient w.r.t. the ensemble logits",
          values=[(loc["loss_oh"], our)], grads=[(grads(loc["loss_oh"], [t_out])[0], grads(our, [tr])[0])],
          dtype=torch.float32, note="float32: the official one-hot mask is made with .float() (float64 fails)")

    sr, tr = leaf(s_out), leaf(t_out)
    our = adversarial_loss(sr, tr, T=3.0, mask=False)
    h.add(id="coboost-adversarial", method="Co-Boosting",
          what="generator's adversarial term −mean KL(t/3 ‖ s/3)·9 over all samples (no mask)",
          peer="Co-Boosting", where=where.format(l_adv), ours="osfl.distill.losses:adversarial_loss(mask=False, T=3)",
          inputs="the same run; gradients w.r.t. student and ensemble logits",
          values=[(loc["loss_adv"], our)],
          grads=list(zip(grads(loc["loss_adv"], [s_out, t_out]), grads(our, [sr, tr]))),
          dtype=torch.float32)
    sr, tr = leaf(so64), leaf(to64)
    our = adversarial_loss(sr, tr, T=3.0, mask=False)
    h.add(id="coboost-adversarial-f64", method="Co-Boosting",
          what="the same term in float64: official dense_kldiv(s, t, T=3, reduction='none') composed as the line does",
          peer="Co-Boosting", where=f"datafree/utils/_utils.py:dense_kldiv, composed as {where.format(l_adv)}",
          ours="osfl.distill.losses:adversarial_loss(mask=False, T=3)",
          inputs="the run's student and ensemble logits cast to float64; gradients w.r.t. both",
          values=[(adv64, our)], grads=list(zip(grads(adv64, [so64, to64]), grads(our, [sr, tr]))),
          note="composed in the harness: -(dense_kldiv(s, t, T=3, reduction='none').sum(1)).mean(), the official "
               "line's expression around the official function")

    xr = leaf(inputs)
    with BNStatHooks(models) as hooks:
        for mdl in models:
            mdl(xr)
        our = hooks.loss() / m
    h.add(id="coboost-bn", method="Co-Boosting",
          what="BN-statistics term Σ hooks / number of models (bn > 0)",
          peer="Co-Boosting", where=f"{where.format(l_bn)}; hooks datafree/hooks.py:DeepInversionHook",
          ours="osfl.distill.bn_hooks:BNStatHooks.loss() / m (as osfl.distill.boosting:BoostingLoop._step_loss)",
          inputs="the same run with bn=1 (the official default is 0: term off); gradient w.r.t. the images",
          values=[(loc["loss_bn"], our)], grads=[(grads(loc["loss_bn"], [inputs])[0], grads(our, [xr])[0])],
          dtype=torch.float32)


class FixedPool:
    """Stands for our SyntheticPool: yields the given batches in order."""

    def __init__(self, batches):
        self._batches = batches

    def batches(self, *args, **kwargs):
        for xb, yb in self._batches:
            yield xb.clone(), yb.clone()


def _our_loop(models, student, w, **p):
    from osfl.distill.boosting import BOOSTING_DEFAULTS, BoostingLoop
    from osfl.distill.ensemble import BatchedEnsemble

    params = {**BOOSTING_DEFAULTS, "nz": 8, "ngf": 4, "synthesis_batch": B, "kd_batch": B, **p}
    seed = p.get("seed", 0)
    params.pop("seed", None)
    return BoostingLoop(BatchedEnsemble(models), copy.deepcopy(student), w, params, input_shape=SHAPE,
                        num_classes=CLASSES, device=torch.device("cpu"),
                        rng=lambda tag, part: gen(seed))


def check_coboost_weights(h: Harness, models, student) -> None:
    """The ensemble-weight sign steps with their two clamps, and WEnsemble's weighted logits."""
    from osfl.distill import boosting
    from osfl.distill.ensemble import BatchedEnsemble

    m = len(models)
    batches = [(images(50 + i), torch.randint(0, CLASSES, (B,), generator=gen(60 + i))) for i in range(3)]
    cases = {"default": (torch.full((m,), 1.0 / m, dtype=F64), 0.01, 1),
             "clamps": (torch.tensor([1.6, -0.4, 0.05], dtype=F64), 0.45, 2)}
    after = "self.student.train()"
    with official_modules("Co-Boosting", "datafree.synthesis.coboost", "utils_fl", root=h.root) as (cb, ufl), \
            cpu_device(), tempfile.TemporaryDirectory() as tmp, quiet():
        h.shim("Co-Boosting", CPU_DEVICE_NOTE,
               "COBOOSTSynthesizer.get_data (instance attribute): returns the check's fixed batches (the pool of "
               "PNG files and its shuffled DataLoader are not part of the equation)")
        fn = cb.COBOOSTSynthesizer.synthesize
        l_step = statement_line(fn, "mix_weight = mix_weight - self.args.mu")
        l_add = statement_line(fn, "self.data_pool.add( best_inputs")
        for name, (w0, mu, wa_steps) in cases.items():
            args = SimpleNamespace(hs=1.0, print_freq=1, logger=silent_logger(), weighted=True, wa_steps=wa_steps,
                                   mu=mu, wdc=0.99, his=True)
            with seeded(51):
                s = _coboost_synthesizer(cb, ufl, models, student, images(49), tmp, iterations=0, w=w0.clone(),
                                         args=args)
                s.get_data = lambda labeled=True: [(xb.clone(), yb.clone()) for xb, yb in batches]
                loc = run_until(s.synthesize, after, cur_ep=3)
            loop = _our_loop(models, student, w0.clone(), mu=mu, wdc=0.99, wa_steps=wa_steps)
            loop.pool = FixedPool(batches)
            with observing(boosting, "sign_reweight") as steps:
                ours = loop.candidate_weights(3)
            off = loc["mix_weight"]
            # which clamp acted, and how far every gradient is from 0 (a sign of a gradient that is 0 in exact
            # arithmetic would be decided by rounding, e.g. the weight of the only client left at w > 0)
            far = [(a[0] - a[3] * a[2].sign()) - a[1] for a, _ in steps]
            clamp1 = sum(int(d.abs().gt(1).sum()) for d in far)
            clamp01 = sum(int(((a[1] + d.clamp(-1, 1)) != out).sum()) for (a, out), d in zip(steps, far))
            min_grad = min(a[2].abs().min().item() for a, _ in steps)
            h.add(id=f"coboost-weight-step-{name}", method="Co-Boosting",
                  what="ensemble weights w ← clip(w₀ + clip(w − μ·wdc^ep·sign(∇_w CE(WE(x), y)) − w₀, −1, 1), 0, 1)"
                       ", per batch over the pool",
                  peer="Co-Boosting", where=f"datafree/synthesis/coboost.py:{l_step} (COBOOSTSynthesizer.synthesize)",
                  ours="osfl.distill.boosting:BoostingLoop.candidate_weights (osfl.distill.losses:sign_reweight)",
                  inputs=f"w₀={[round(v, 4) for v in w0.tolist()]}, μ={mu}, wdc=0.99, epoch 3, wa_steps={wa_steps}, "
                         f"3 fixed batches of {B}, 3 cnn2 clients: {len(steps)} steps, the ±1 clamp acting "
                         f"{clamp1} times and the [0, 1] clamp {clamp01} times (element-wise), min |∇w| "
                         f"{_sig(min_grad)}",
                  values=[(off, ours)],
                  note=("w₀ outside [0, 1] and a large μ so that both clamps act (from w₀ in [0, 1] the ±1 clamp "
                        "never can)" if name == "clamps" else
                        "Co-Boosting's defaults (w₀ = 1/m, μ = 0.01, wa_steps = 1). Order within an epoch: the "
                        f"official loop re-weights on the pool BEFORE adding the epoch's new batch (its "
                        f"data_pool.add, datafree/synthesis/coboost.py:{l_add}, comes after the re-weighting block "
                        f"at line {l_step}); so does ours since finding F2 (adjust_weights at "
                        f"{line_of('src/osfl/distill/boosting.py', 'self.adjust_weights(e - 1)')}, then pool.add at "
                        f"{line_of('src/osfl/distill/boosting.py', 'self.pool.add(made.best_x')})"))

        # WEnsemble: Σ w_i logits_i / Σ w_i, gradient w.r.t. w (the re-weighting step) and the images
        w = torch.tensor([0.2, 0.7, 0.45], dtype=F64)
        x = images(70)
        wo, xo, wr, xr = leaf(w), leaf(x), leaf(w), leaf(x)
        off = ufl.WEnsemble([WithFeatures(copy.deepcopy(mdl)) for mdl in models], wo)(xo)
        ens = BatchedEnsemble(models)
        our = ens.combine(ens(xr), wr)
        v = torch.randn(off.shape, generator=gen(71), dtype=F64)
        h.add(id="coboost-wensemble", method="Co-Boosting", what="weighted ensemble logits Σ w_i z_i / Σ w_i",
              peer="Co-Boosting", where="utils_fl.py:WEnsemble.forward",
              ours="osfl.distill.ensemble:BatchedEnsemble.combine (used by osfl.distill.boosting:BoostingLoop.combine)",
              inputs=f"3 cnn2 clients, w={w.tolist()}, {B} images; gradients of a random projection w.r.t. w and "
                     "images",
              values=[(off, our)], grads=list(zip(grads((off * v).sum(), [wo, xo]), grads((our * v).sum(), [wr, xr]))))


def check_coboost_ods(h: Harness, models, student) -> None:
    """ODS: x ← x + ε·sign(∇_x Σ r ⊙ softmax(WE(x)/4)), r ~ U(−1, 1), in cb_kd_train."""
    m = len(models)
    w = torch.full((m,), 1.0 / m, dtype=F64)
    x, y = images(80), torch.randint(0, CLASSES, (B,), generator=gen(81))
    seed = 82
    after = "images = (torch.sign(images.grad) * args.odseta + images).detach()"
    with official_modules("Co-Boosting", "datafree_kd", "utils_fl", root=h.root) as (kd, ufl), cpu_device(), quiet():
        h.shim("Co-Boosting", CPU_DEVICE_NOTE,
               "cb_kd_train: the synthesizer argument is a stub whose get_data returns the check's one batch")
        teacher = ufl.WEnsemble([WithFeatures(copy.deepcopy(mdl)) for mdl in models], w.clone())
        st = copy.deepcopy(student)
        synth = SimpleNamespace(get_data=lambda labeled=True: [(x.clone(), y.clone())])
        opt = torch.optim.SGD(st.parameters(), lr=0.0)
        args = SimpleNamespace(odseta=8 / 255, kd_T=4.0, print_freq=0, logger=silent_logger(), current_epoch=0)
        with seeded(seed):
            loc = run_until(kd.cb_kd_train, after, synth, [st, teacher], kd.datafree.criterions.KLDiv(T=4.0), opt, args)
        line = statement_line(kd.cb_kd_train, after)
        r_line = statement_line(kd.cb_kd_train, "random_w = torch.FloatTensor(*teacher(images).shape)")
    loop = _our_loop(models, student, w.clone(), odseta=8.0, kd_T=4.0, seed=seed)
    with observing(torch, "rand") as drawn:  # our draw of u, r = 2u − 1 (observed, not changed)
        ours = loop.ods(x.clone())
    r_off, r_ours = loc["random_w"], drawn[0][1] * 2 - 1
    r_diff = differences([(r_off, r_ours)])[0]
    moved = int((loc["images"] != x).sum())
    h.add(id="coboost-ods", method="Co-Boosting",
          what="ODS perturbation x + (8/255)·sign(∇_x Σ r ⊙ softmax(WE(x)/4)) before each KD step",
          peer="Co-Boosting", where=f"datafree_kd.py:{line} (cb_kd_train; r at line {r_line})",
          ours="osfl.distill.boosting:BoostingLoop.ods",
          inputs=f"cb_kd_train run to this line on one batch of {B} images, WEnsemble (w=1/3) of 3 cnn2; the global "
                 f"generator (official) and ours both seeded {seed}: max |Δr| = {_sig(r_diff)}; the step moves "
                 f"{moved} of {x.numel()} pixels",
          values=[(loc["images"], ours)],
          note="a sign flip would show as a difference of 2·8/255 = 0.063")


# ---------------------------------------------------------------------------------------------------- FedMHO
class _Named(nn.Module):
    def __init__(self, model: nn.Module, name: str):
        super().__init__()
        self.model, self.name = model, name

    def forward(self, x):
        return self.model(x)


def check_fedmho_kl(h: Harness, models, student) -> None:
    """FedMHO-MD's KL term: KLDivLoss()(log_softmax(pred), softmax(mean teacher logits)), reduction 'mean'."""
    from osfl.generative.fusion import kl_to_teacher

    x, y = images(90, n=B), torch.randint(0, CLASSES, (B,), generator=gen(91))
    after = "loss_kd = loss_criterion_kd(F.log_softmax(pred, dim=1)"
    shims = ["aggregate: pcode.aggregation.utils.recover_models returns the check's classifier clients (no MPI "
             "flattened buffers)",
             "aggregate: get_resnet_vae_model returns our cnn2 as the global model (and a placeholder CVAE); "
             "get_VAE_list one placeholder decoder; get_synthesis_data_list the check's fixed labelled batch "
             "(CVAE synthesis and k-means cleaning are not part of the equation)",
             "aggregate: VGG9 (an unused scratch model of ~69M parameters) built as a 1-parameter placeholder"]
    with official_modules("FedMHO", "pcode.aggregation.semi_supervised", root=h.root) as (ss,), cpu_device(), \
            quiet(), seeded(92):
        h.shim("FedMHO", CPU_DEVICE_NOTE, *shims)
        teachers = {k: _Named(copy.deepcopy(mdl), "vgg9") for k, mdl in enumerate(models)}
        teachers[len(models)] = _Named(nn.Linear(1, 1), "cvae")
        ss.agg_utils.recover_models = lambda conf, client_models, flat, *a, **k: (len(teachers), teachers)
        ss.get_resnet_vae_model = lambda conf, fedavg_models: (copy.deepcopy(student), nn.Linear(1, 1))
        ss.get_VAE_list = lambda num_class, local_models: ([teachers[len(models)]], [[1] * num_class])
        ss.get_synthesis_data_list = lambda *a, **k: [torch.utils.data.TensorDataset(x, y)]
        ss.VGG9 = lambda *a, **k: nn.Linear(1, 1)
        conf = SimpleNamespace(data="fashionmnist", fedcvae=False, num_synthesis_sample=B, latent_size=20,
                               graph=SimpleNamespace(on_cuda=False, comm_round=1), one_shot=True, is_md=True,
                               is_sd=False, arch="vgg9")
        loc = run_until(ss.aggregate, after, conf, {}, {}, None, None, {}, None, [[] for _ in range(10)],
                        train_global_model=True)
        line = statement_line(ss.aggregate, after)
        crit_line = statement_line(ss.aggregate, "loss_criterion_kd = torch.nn.KLDivLoss()")
    pred, soft = loc["pred"], loc["soft_labels"]
    pr = leaf(pred)
    ours = kl_to_teacher(pr, soft.detach(), 1.0, "mean")
    h.add(id="fedmho-md-kl", method="FedMHO",
          what="FedMHO-MD's KL term: KLDivLoss() (reduction 'mean' over B×C) of log_softmax(student) and "
               "softmax(mean teacher logits)",
          peer="FedMHO", where=f"pcode/aggregation/semi_supervised.py:{line} (aggregate; criterion line {crit_line})",
          ours="osfl.generative.fusion:kl_to_teacher(T=1, reduction='mean')",
          inputs=f"aggregate run to this line: 3 cnn2 classifier clients as teachers, cnn2 global model, one batch "
                 f"of {B} fixed images (FashionMNIST settings); gradient w.r.t. the student logits",
          values=[(loc["loss_kd"], ours)], grads=[(grads(loc["loss_kd"], [pred])[0], grads(ours, [pr])[0])],
          note=f"the teachers' mean logits: soft_labels of the official run (ours averages with "
               f"{line_of('src/osfl/distill/ensemble.py', 'return per_client.mean(0)')})")


# ---------------------------------------------------------------------------------------------------- DM
class EmbedNet(nn.Module):
    """A small ConvNet-like embedding network (instance norm as GroupNorm(C, C), avg pooling, no BN/dropout, so
    train and eval mode agree); ``embed`` is what DM matches."""

    def __init__(self, channel: int, num_classes: int, width: int = 8, side: int = 16):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(channel, width, 3, padding=1), nn.GroupNorm(width, width), nn.ReLU(),
                                      nn.AvgPool2d(2), nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
                                      nn.AvgPool2d(2))
        self.classifier = nn.Linear(width * (side // 4) ** 2, num_classes)

    def embed(self, x):
        return self.features(x).flatten(1)

    def forward(self, x):
        return self.classifier(self.embed(x))


class _ListData:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], int(self.y[i])


def check_dm(h: Harness) -> None:
    """DM's distance Σ_c ‖mean embed(real_c) − mean embed(syn_c)‖² against our batched and per-class losses."""
    from osfl.condense.matching import LayerFeatures, _step_loss, _step_loss_per_class

    classes, per_class, ipc, side = 3, 24, 10, 16  # ipc 10: main_DM.get_loops knows 1, 10, 20, 30, 40, 50
    g = gen(100)
    x = torch.rand(classes * per_class, 1, side, side, generator=g)
    y = torch.arange(classes).repeat_interleave(per_class)
    with seeded(101):
        net = EmbedNet(1, classes, side=side)
    after = "loss += torch.sum((torch.mean(output_real, dim=0)"
    with official_modules("DatasetCondensation", "main_DM", root=h.root) as (dm,), quiet(), seeded(102), \
            tempfile.TemporaryDirectory() as tmp:
        h.shim("DatasetCondensation",
               "main_DM.main: sys.argv set to --dataset MNIST --model ConvNet --ipc 10 --eval_mode S --num_exp 1 "
               "--num_eval 0 --Iteration 0 --batch_real 256 --init noise --dsa_strategy none and scratch "
               "data/save paths",
               "main_DM.get_dataset returns the check's 3-class 1x16x16 set; main_DM.get_network returns the "
               "check's small embedding network (the official ConvNet is not needed: both sides use the same "
               "features)")
        dm.get_dataset = lambda *a, **k: (1, (side, side), classes, [str(c) for c in range(classes)], [0.5], [0.5],
                                          _ListData(x, y), None, None)
        dm.get_network = lambda *a, **k: net
        argv = ["main_DM.py", "--dataset", "MNIST", "--model", "ConvNet", "--ipc", str(ipc), "--eval_mode", "S",
                "--num_exp", "1", "--num_eval", "0", "--Iteration", "0", "--batch_real", "256", "--init", "noise",
                "--dsa_strategy", "none", "--data_path", str(Path(tmp) / "data"), "--save_path",
                str(Path(tmp) / "result")]
        saved_argv = sys.argv
        sys.argv = argv
        try:
            loc = run_until(dm.main, after, occurrence=classes)
        finally:
            sys.argv = saved_argv
        line = statement_line(dm.main, after)
    loss, syn = loc["loss"], loc["image_syn"]
    off_grad = grads(loss, [syn])[0]
    reals = [x[y == c] for c in range(classes)]
    for fn, name in ((_step_loss, "batched"), (_step_loss_per_class, "per-class")):
        mine = leaf(syn)
        feats = [LayerFeatures(net, ["features"])]
        try:
            ours = fn(feats, reals, [mine[c * ipc:(c + 1) * ipc] for c in range(classes)], [0])
        finally:
            feats[0].close()
        h.add(id=f"dm-distance-{name}", method="DM (OFedED)",
              what="DM distance Σ_c ‖mean embed(real_c) − mean embed(syn_c)‖² (one network, one layer)",
              peer="DatasetCondensation", where=f"main_DM.py:{line} (main, ConvNet branch)",
              ours=f"osfl.condense.matching:{fn.__name__}",
              inputs=f"main run to this line for the last of {classes} classes: {per_class} real 1x{side}x{side} "
                     f"images per class (all of them: batch_real 256), ipc {ipc} noise-initialised images, no DSA; "
                     "gradient w.r.t. the synthetic images",
              values=[(loss, ours)], grads=[(off_grad, grads(ours, [mine])[0])], dtype=torch.float32,
              note="official embeds in train mode (net.train()), ours in eval mode: the same for networks without "
                   "BatchNorm (DM's ConvNet, this check's network); the official BN variant takes its other branch")


# ---------------------------------------------------------------------------------------------------- FedHydra
def check_fedhydra_kd(h: Harness) -> None:
    """The FedHydra authors' KD criterion klcom against the KD step of our FedHydra (kl_div_t + β·CE)."""
    from osfl.distill.synthesis import kd_step

    g = gen(110)
    s, t = 3 * torch.randn(B, CLASSES, generator=g, dtype=F64), 3 * torch.randn(B, CLASSES, generator=g, dtype=F64)

    def ours(T: float, beta: float):
        logits = nn.Parameter(s.clone())

        class Table(nn.Module):  # a "student" whose output is the logits themselves
            def __init__(self):
                super().__init__()
                self.logits = logits

            def forward(self, x):
                return self.logits * 1.0

        student = Table()
        opt = torch.optim.SGD(student.parameters(), lr=0.0)
        value = kd_step(student, opt, torch.zeros(B, 1), t.clone(), T=T, beta=beta)
        return torch.tensor(value, dtype=F64), logits.grad.detach().clone()

    from osfl.methods.fedhydra import FedHydra

    beta_default = FedHydra.defaults.get("beta", 1.0)
    with official_modules("ICDE2025-FL-SA", "helpers.utils", root=h.root) as (u,), quiet():
        h.shim("ICDE2025-FL-SA")
        criterion_at = h.line("ICDE2025-FL-SA", "fed-main.py", "criterion = KLCom(")
        cases = [("as-released", dict(T=1.0, alpha1=0.0, alpha2=1.0, reduction="mean"), (1.0, beta_default)),
                 ("same-terms", dict(T=1.0, alpha1=1.0, alpha2=1.0, reduction="batchmean"), (1.0, 1.0)),
                 ("same-terms-T4", dict(T=4.0, alpha1=1.0, alpha2=1.0, reduction="batchmean"), (4.0, 1.0))]
        for name, kw, (T, beta) in cases:
            so = leaf(s)
            off = u.KLCom(**kw)(so, t.clone())
            g_off = grads(off, [so])[0]
            val, g_ours = ours(T, beta)
            common = dict(method="FedHydra", peer="ICDE2025-FL-SA", where="helpers/utils.py:klcom (KLCom.forward)",
                          ours="osfl.distill.synthesis:kd_step (kl_div_t + β·CE(student, argmax teacher))",
                          values=[(off.detach(), val)], grads=[(g_off, g_ours)])
            if name == "as-released":
                h.add(id="fedhydra-kd-as-released", what="KD criterion as fed-main.py builds it: α1·CE + α2·T²·KL "
                      "with reduction 'mean', α1=0, α2=1, T=1 (argparse defaults)",
                      inputs=f"logits {B}x{CLASSES} (3·N(0,1)); ours with FedHydra's defaults (β={beta}, T=1, "
                             "batchmean); gradient w.r.t. the student logits",
                      note=f"official {criterion_at} KLCom(T, kl_alpha1=0, kl_alpha2=1, reduction='mean'): KL "
                           "averaged over batch × classes (1/C of batchmean) and no CE term; ours uses the paper's "
                           "Eq. 19, KL (batchmean) + β·CE with β = 1",
                      documented=line_of("src/osfl/methods/fedhydra.py", "The authors' code's KD criterion"),
                      **common)
            else:
                h.add(id=f"fedhydra-kd-{name}", what=f"klcom with the terms ours uses: α1=α2=1, batchmean, T={T:g}",
                      inputs=f"logits {B}x{CLASSES} (3·N(0,1)); ours β=1, T={T:g}; gradient w.r.t. the student logits",
                      note="the official CE targets argmax softmax(teacher/T), ours argmax teacher: the same class",
                      **common)


# ---------------------------------------------------------------------------------------------------- main
CHECKS_NEED = ("DENSE", "Co-Boosting", "FedMHO", "DatasetCondensation", "ICDE2025-FL-SA")


def run(root: Path | None = None) -> dict:
    """All checks; the record (module docstring)."""
    for peer in CHECKS_NEED:
        OFFICIAL[peer].require(root)
        at = OFFICIAL[peer].checked_out(root)
        if at != OFFICIAL[peer].commit:
            print(f"warning: {OFFICIAL[peer].path(root)} is at {at}, the harness was written against "
                  f"{OFFICIAL[peer].commit} (the record names the commit checked out)", file=sys.stderr)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same reduction order on every run
    try:
        return _run_checks(root)
    finally:
        torch.set_num_threads(threads)


def _run_checks(root: Path | None) -> dict:
    h = Harness(root=root)
    models, student = client_models(3, seed=1), client_models(1, seed=2)[0]
    x = images(3)
    check_kldiv(h)
    check_dense_synthesis(h, models, perturbed(models[0], seed=4), x)
    check_generator(h)
    check_coboost_synthesis(h, models, student, x)
    check_coboost_weights(h, models, student)
    check_coboost_ods(h, models, student)
    check_fedmho_kl(h, models, student)
    check_dm(h)
    check_fedhydra_kd(h)
    return h.record()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.peers.equations", description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    try:
        record = run()
    except MissingCheckout as e:
        print(e, file=sys.stderr)
        return 2
    write_record(record, args.out)
    width = max(len(c["id"]) for c in record["checks"])
    for c in record["checks"]:
        print(f"{c['id']:<{width}}  {c['verdict']:<28} max|Δ| {c['max_abs_diff']}  grad {c['grad_max_abs_diff']}")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
