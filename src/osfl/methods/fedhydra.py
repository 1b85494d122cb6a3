"""FedHydra: Model Stratification + Heterogeneity-Aware Stratified Aggregation (FedHydra SPEC §1).

**Model Stratification** (Alg. 2, Eqs. 1–7). For every (client k, class j) a freshly initialised generator is
trained for ``ms_steps`` Adam steps on ONE fixed noise batch z (``ms_batch`` × nz, not optimised) to make the
frozen client k (eval mode) predict j; the batch-mean CE before each update forms the loss trajectory L_{k,j},
u_{k,j} = (max L − min L)/(min L + ε) (Eq. 2, ε as in V003). U[j, k] = u_{k,j} (c × m); Ū_r normalises each row
over clients (inter-model weights), Ū_c each column over classes (in-model weights). A row or column whose u
are all 0 is spread uniformly (no division by zero).

**HASA** (Alg. 1) is DENSE's loop (:mod:`osfl.distill.adversarial`) with the SA teacher P = SA(x, y) (Eqs. 8-11),
the generator loss L_Gen = CE(P, y) + λ1·(1/m)Σ_k BN_k + λ2·(−KL(P ‖ F_g)) (Eq. 16) and the student loss
L_Glo = KL(P ‖ F_g) + β·CE(F_g, argmax P) (Eq. 19, SGD lr 0.01, momentum 0.9); the student is tested before
training (epoch 0) and after every epoch.

**Two readings** (``reading``), which differ only in the named choices of :data:`READINGS` (a test pins this):

* ``authors`` (the default): the first author's released code (ANCHORS.md §1b, SPEC §1.8 revision), a DENSE fork.
  Every epoch the generator is re-initialised (``generator_reset: epoch``) and z is optimised with it
  (``optimize_z: true``); the adversarial term has DENSE's disagreement mask (``ad_mask: true``); the
  lowest-loss batch and its targets join a labelled pool, and the student makes one pass over the whole pool
  (``distill_data: pool``), SA evaluated on each batch's stored targets. Views (``synth_augment``,
  ``ms_augment``, ``kd_augment``, all ``colour``): on colour images the generated images pass DENSE's
  crop(pad 4)+flip view before the teachers, in MS and in the pool, as the release does; on grey images no view.
  The release's views are written for 32×32 colour data (its pool loader crops 28×28 images to 32×32, so it does
  not run on MNIST/FMNIST as shipped, ANCHORS §1b), and on the digits demo clients at quick (seed 0) the views
  cost 25-56 points: no views 88.61 final / 88.61 best; crop+flip in MS only 48.06 / 57.50; crop+flip before
  the teachers and flip in the pool 63.61 / 68.89; all three 32.78 / 43.61 (README, "FedHydra's views").
  ``crop_flip``/``flip``/``auto`` (DENSE's KD transform: flip for grey, crop+flip for colour) set them by hand.
* ``literal``: Alg. 1 as written, the SPEC's first proposals for AMBIG-4/5/9: one generator and its Adam state for
  the whole run (``generator_reset: never``), a fixed z per epoch (``optimize_z: false``), no mask, no views, and one
  student step on each of the epoch's g_steps intermediate batches (``distill_data: intermediates``: "all generated
  intermediates").

Any named choice can also be set on its own (it overrides the reading's value); every run records the reading and
every choice in force.

Other choices the paper leaves open (SPEC §6), each a parameter with the SPEC's proposed default:

* ``beta`` (AMBIG-1) = 1.0. (The authors' code's KD criterion is α1·CE + α2·T²·KL with the KL averaged over
  batch × classes and α1 = 0 by default; Eq. 19 is kept here, since the release does not run as shipped.)
* ``sa_scale`` (AMBIG-6): ``none`` = SA logits as written (about 1/c the scale of AE); ``classes`` = SA × c.
* ``T`` (AMBIG-9) = 1, the temperature of Eqs. 15 and 17.
* ``aggregation``: ``sa`` (FedHydra) or ``ae`` (averaging ensemble instead of SA, everything else equal; the
  reading of Fig. 7 proposed in SPEC AMBIG-24; MS is skipped).
* ``nz`` 256, ``synthesis_batch``/``ms_batch`` 256, ``ngf`` 64, ``eps`` 1e-8 (AMBIG-2).

``ms_batched`` (speed only): ``auto`` trains a client's c MS generators as one vmapped generator on CUDA and
one after another on a CPU, where the vmapped convolutions measured no faster.

The U, Ū_r and Ū_c matrices go into the result's extras (FedHydra Fig. 5b plots Ū_r).
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch.func import functional_call, vmap
from tqdm.auto import tqdm

from ..augment import augment_batch
from ..distill import (Synthesis, SyntheticPool, adversarial_loss, distill_pool, frozen_forward, generator_adam,
                       kd_augmentation, kd_step, make_generator, reset_generator, stratified_aggregate)
from . import register
from .base import ServerContext, ServerMethod, ServerResult, track_epochs


def guidance_capability(losses: torch.Tensor, eps: float) -> torch.Tensor:
    """Eq. 2 on trajectories (..., T_G): (max − min)/(min + ε)."""
    lo, hi = losses.min(-1).values, losses.max(-1).values
    return (hi - lo) / (lo + eps)


def normalise(U: torch.Tensor, dim: int) -> torch.Tensor:
    """U divided by its sums along ``dim`` (dim=1: rows over clients → Ū_r; dim=0: columns over classes → Ū_c).

    A slice that sums to 0 becomes uniform.
    """
    s = U.sum(dim, keepdim=True)
    uniform = torch.full_like(U, 1.0 / U.shape[dim])
    return torch.where(s > 0, U / s.clamp_min(torch.finfo(U.dtype).tiny), uniform)


def _ms_generators(gen: torch.nn.Module, rng: torch.Generator, classes: int, batch: int, nz: int):
    """Initial generator weights and noise for each class, drawn in the order of Alg. 2's loop (reset, then z)."""
    states, zs = [], []
    for _ in range(classes):
        reset_generator(gen, rng)
        states.append({k: v.detach().clone() for k, v in gen.named_parameters()})
        zs.append(torch.randn(batch, nz, generator=rng))
    return states, zs


def _ms_client_looped(model, gen, states, zs, steps, lr, device, view) -> torch.Tensor:
    """Reference path: one generator at a time, as Alg. 2 is written. Returns (c, steps) CE trajectories.

    ``view(x, j)``: the view of class j's generated batch that the client sees."""
    traj = torch.zeros(len(states), steps, dtype=torch.float64, device=device)
    for j, (state, z) in enumerate(zip(states, zs)):
        with torch.no_grad():
            for k, v in gen.named_parameters():
                v.copy_(state[k])
        gen.train()
        opt = generator_adam(gen.parameters(), lr)
        z = z.to(device)
        y = torch.full((len(z),), j, dtype=torch.long, device=device)
        for t in range(steps):
            loss = F.cross_entropy(frozen_forward(model, view(gen(z), j)), y)
            traj[j, t] = loss.detach()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return traj.cpu()


def _ms_client_batched(model, gen, states, zs, steps, lr, device, view) -> torch.Tensor:
    """Fast path: the c generators of one client as ONE vmapped generator over stacked weights.

    Adam is elementwise, so one Adam over the stacked (c, ...) weights makes exactly the per-generator updates of
    the looped path; the loss is the sum of the c per-class CEs, so each generator only gets its own gradient.
    The generator's BatchNorm layers use batch statistics in both paths (training mode; their running statistics
    are never read in MS, so the vmapped copy does not track them).
    """
    c, b = len(states), len(zs[0])
    base = copy.deepcopy(gen).train()
    for mod in base.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.track_running_stats = False
            mod.running_mean = mod.running_var = mod.num_batches_tracked = None
    params = {k: torch.stack([s[k] for s in states]).to(device).requires_grad_(True) for k in states[0]}
    z = torch.stack(zs).to(device)  # (c, b, nz)
    y = torch.arange(c, device=device).repeat_interleave(b)
    opt = generator_adam(params.values(), lr)
    many = vmap(lambda pr, zz: functional_call(base, pr, (zz,)))
    traj = torch.zeros(c, steps, dtype=torch.float64, device=device)
    for t in range(steps):
        x = torch.stack([view(xj, j) for j, xj in enumerate(many(params, z))])  # (c, b, C, H, W)
        ce = F.cross_entropy(frozen_forward(model, x.flatten(0, 1)), y, reduction="none").view(c, b).mean(1)
        traj[:, t] = ce.detach()
        opt.zero_grad(set_to_none=True)
        ce.sum().backward()
        opt.step()
    return traj.cpu()


def model_stratification(models: list[torch.nn.Module], input_shape, num_classes: int, *, steps: int, batch: int,
                         nz: int, ngf: int, lr: float, eps: float, device: torch.device,
                         rng: torch.Generator, batched: bool = True, progress: bool = False,
                         augment: str = "none", augment_rng=None) -> dict[str, torch.Tensor]:
    """Alg. 2: loss trajectories (m, c, steps) → U (c, m), Ū_r, Ū_c.

    ``batched`` trains the c generators of a client together (same numbers as the loop up to float rounding).
    ``augment`` (``crop_flip`` in the authors' code): the view of the generated images each client sees, drawn
    from ``augment_rng(k, j)``, one CPU generator per (client, class), so both paths draw the same numbers.
    """
    m = len(models)
    traj = torch.zeros(m, num_classes, steps, dtype=torch.float64)
    gen = make_generator(input_shape, nz, ngf, device, rng)
    run_client = _ms_client_batched if batched else _ms_client_looped
    for k, model in enumerate(tqdm(models, desc="fedhydra MS", disable=not progress, mininterval=1.0)):
        model.eval()
        states, zs = _ms_generators(gen, rng, num_classes, batch, nz)
        rngs = None if augment == "none" else [augment_rng(k, j) for j in range(num_classes)]

        def view(x, j, rngs=rngs):  # what client k sees of class j's batch
            return x if rngs is None else augment_batch(x, augment, rngs[j])

        traj[k] = run_client(model, gen, states, zs, steps, lr, device, view)
    U = guidance_capability(traj, eps).T.contiguous()  # (c, m): U[j, k] = u_{k,j}
    return {"trajectories": traj, "U": U, "U_r": normalise(U, 1), "U_c": normalise(U, 0)}


# The named choices of the two readings of Alg. 1 (module docstring); everything else is shared.
READINGS = {
    "authors": {"distill_data": "pool", "generator_reset": "epoch", "optimize_z": True, "ad_mask": True,
                "synth_augment": "colour", "ms_augment": "colour", "kd_augment": "colour"},
    "literal": {"distill_data": "intermediates", "generator_reset": "never", "optimize_z": False, "ad_mask": False,
                "synth_augment": "none", "ms_augment": "none", "kd_augment": "none"},
}


@register
class FedHydra(ServerMethod):
    name = "fedhydra"
    description = "FedHydra: model stratification, stratified aggregation, HASA generator + distillation"
    trains_global = True
    defaults = {
        "epochs": 200, "g_steps": 30, "ms_steps": 30, "lr_g": 1e-3, "synthesis_batch": 256, "ms_batch": 256,
        "nz": 256, "ngf": 64, "lambda1": 1.0, "lambda2": 1.0, "beta": 1.0, "T": 1.0, "eps": 1e-8,
        "lr": 0.01, "momentum": 0.9, "reading": "authors", **READINGS["authors"],
        "sa_scale": "none", "aggregation": "sa", "ms_batched": "auto",
    }
    allowed = {"reading": tuple(READINGS), "distill_data": ("pool", "intermediates"),
               "generator_reset": ("epoch", "never"), "optimize_z": (True, False), "ad_mask": (True, False),
               "synth_augment": ("colour", "crop_flip", "flip", "none"),
               "ms_augment": ("colour", "crop_flip", "flip", "none"),
               "kd_augment": ("colour", "auto", "crop_flip", "flip", "none"),
               "sa_scale": ("none", "classes"), "aggregation": ("sa", "ae"), "ms_batched": ("auto", True, False)}
    positive = ("g_steps", "ms_steps", "lr_g", "synthesis_batch", "ms_batch", "nz", "ngf", "T", "eps", "lr")
    epoch_keys = ("epochs",)
    step_keys = ("g_steps", "ms_steps")
    synth_keys = ("synthesis_batch", "ms_batch")
    width_keys = ("ngf",)

    def __init__(self, **params):
        super().__init__(**params)
        # the reading sets its named choices; a choice given on its own overrides it
        self.params = {**self.params, **READINGS[self.params["reading"]],
                       **{k: v for k, v in params.items() if k in READINGS["authors"]}}

    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        dev, c = ctx.device, ctx.num_classes
        models = ctx.client_models()
        ens = ctx.teacher(models)
        extras: dict = {}
        ms_batched = p["ms_batched"] if p["ms_batched"] != "auto" else dev.type == "cuda"
        views = {"synth": colour_view(p["synth_augment"], ctx.input_shape),
                 "ms": colour_view(p["ms_augment"], ctx.input_shape),
                 "kd": kd_augmentation(colour_view(p["kd_augment"], ctx.input_shape), ctx.input_shape)}
        if p["aggregation"] == "sa":
            ms = model_stratification(models, ctx.input_shape, c, steps=p["ms_steps"], batch=p["ms_batch"],
                                      nz=p["nz"], ngf=p["ngf"], lr=p["lr_g"], eps=p["eps"], device=dev,
                                      rng=ctx.rng("fedhydra", "ms"), batched=ms_batched,
                                      progress=ctx.progress, augment=views["ms"],
                                      augment_rng=lambda k, j: ctx.rng("fedhydra", "ms-augment", k, j))
            U_r, U_c = ms["U_r"].float().to(dev), ms["U_c"].float().to(dev)
            extras = {k: ms[k].tolist() for k in ("U", "U_r", "U_c")}
            extras["trajectory_min_max"] = torch.stack([ms["trajectories"].min(-1).values,
                                                        ms["trajectories"].max(-1).values], -1).tolist()
        scale = float(c) if p["sa_scale"] == "classes" else 1.0

        def teach(per_client: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            if p["aggregation"] == "ae":
                return per_client.mean(0)
            return stratified_aggregate(per_client, y, U_r, U_c) * scale

        student = ctx.make_global()
        opt = torch.optim.SGD(student.parameters(), lr=p["lr"], momentum=p["momentum"])
        reset_rng, pool_rng = ctx.rng("fedhydra", "reset"), ctx.rng("fedhydra", "pool")
        aug_rng = ctx.rng("fedhydra", "augment")
        pooled = p["distill_data"] == "pool"
        synth = Synthesis(make_generator(ctx.input_shape, p["nz"], p["ngf"], dev, reset_rng), p["synthesis_batch"],
                          p["nz"], c, p["g_steps"], p["lr_g"], dev, reset_rng=reset_rng,
                          latent_rng=ctx.rng("fedhydra", "latent"), reset_every_epoch=p["generator_reset"] == "epoch",
                          optimize_z=p["optimize_z"], sort_targets=False, keep_intermediates=not pooled)
        pool = SyntheticPool()
        last: dict = {}  # the last epoch's final synthetic batch (Fig. 12 shows a few of its images)

        def step_loss(x, y):
            view = augment_batch(x, views["synth"], aug_rng)
            if p["lambda1"]:
                per_client, bn = ens.forward_with_bn(view)
            else:
                per_client, bn = ens(view), None
            P = teach(per_client, y)
            loss = F.cross_entropy(P, y)  # Eq. 13
            if bn is not None:
                loss = loss + p["lambda1"] * bn.mean()  # Eq. 14: (1/m) Σ_k Σ_l
            if p["lambda2"]:
                loss = loss + p["lambda2"] * adversarial_loss(frozen_forward(student, view), P, T=p["T"],
                                                              mask=p["ad_mask"])  # Eq. 15
            return loss, view, P

        def epoch(_: int):
            student.eval()
            made = synth.run_epoch(step_loss)
            last.update(x=made.last_x, y=made.y)
            if pooled:
                pool.add(made.best_x, made.y)
                distill_pool(student, opt, pool, p["synthesis_batch"], teacher=lambda x, y: teach(ens(x), y),
                             device=dev, order_rng=pool_rng, augment=views["kd"], aug_rng=aug_rng, T=p["T"],
                             beta=p["beta"])
            else:  # the teacher is fixed: each intermediate's P is reused for the student (Eqs. 17-19)
                for x, P in made.intermediates:
                    kd_step(student, opt, x, P, T=p["T"], beta=p["beta"])
            return student, {"gen_loss": made.best_loss}

        curve = track_epochs(ctx, p["epochs"], epoch, desc="fedhydra", start=student)
        if last:
            extras["synthetic_samples"] = synthetic_samples(last["x"], last["y"], c)
        return ServerResult("classifier", model=student.eval(), curve=curve, extras=extras,
                            choices={"student_init": "random", "ms_batched_in_force": ms_batched,
                                     "views_in_force": {**views, "kd": views["kd"] if pooled else "none"},
                                     "teacher": "stratified aggregation" if p["aggregation"] == "sa"
                                     else "averaging ensemble (Fig. 7 ablation)"})


def colour_view(name: str, input_shape) -> str:
    """``colour``: DENSE's crop+flip view on colour (3-channel) images, no view on grey ones; any other name as given."""
    if name != "colour":
        return name
    return "crop_flip" if input_shape[0] == 3 else "none"


def synthetic_samples(x: torch.Tensor, y: torch.Tensor, num_classes: int, per_class: int = 2) -> dict:
    """Up to ``per_class`` images per assigned label of a synthetic batch, as uint8 lists (JSON-ready)."""
    keep = torch.cat([torch.nonzero(y == k).flatten()[:per_class] for k in range(num_classes)]).cpu()
    images = (x.detach().float().clamp(0, 1)[keep.to(x.device)] * 255).round().to(torch.uint8).cpu()
    return {"labels": y.cpu()[keep].tolist(), "shape": list(images.shape[1:]), "images_u8": images.tolist()}
