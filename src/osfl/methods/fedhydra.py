"""FedHydra: Model Stratification + Heterogeneity-Aware Stratified Aggregation (FedHydra SPEC §1).

**Model Stratification** (Alg. 2, Eqs. 1–7). For every (client k, class j) a freshly initialised generator is
trained for ``ms_steps`` Adam steps on ONE fixed noise batch z (``ms_batch`` × nz, not optimised) to make the
frozen client k (eval mode) predict j; the batch-mean CE before each update forms the loss trajectory L_{k,j},
u_{k,j} = (max L − min L)/(min L + ε) (Eq. 2, ε as in V003). U[j, k] = u_{k,j} (c × m); Ū_r normalises each row
over clients (inter-model weights), Ū_c each column over classes (in-model weights). A row or column whose u
are all 0 is spread uniformly (no division by zero).

**HASA** (Alg. 1). For ``epochs`` epochs: draw fresh z and y (uniform labels); train the generator for
``g_steps`` steps on L_Gen = CE(P, y) + λ1·(1/m)Σ_k BN_k + λ2·(−KL(P ‖ F_g)) (Eq. 16), P = SA(x, y) (Eqs. 8–11);
then distil the global model on L_Glo = KL(P ‖ F_g) + β·CE(F_g, argmax P) (Eq. 19) with SGD (lr 0.01,
momentum 0.9), P recomputed without gradient; test after every epoch.

Choices the paper leaves open (SPEC §6), each a parameter with the SPEC's proposed default:

* ``beta`` (AMBIG-1) = 1.0.
* ``distill_data`` (AMBIG-4): ``intermediates`` = one student step on each of the epoch's g_steps generated
  batches ("all generated intermediates"); ``pool`` = DENSE-style labelled pool of each epoch's lowest-loss
  batch, one pass per epoch.
* ``generator_reset`` (AMBIG-5): ``never`` = one generator and its Adam state for the whole run (Alg. 1 line 3);
  ``epoch`` = DENSE's per-epoch re-initialisation.
* ``sa_scale`` (AMBIG-6): ``none`` = SA logits as written (about 1/c the scale of AE); ``classes`` = SA × c.
* ``ad_mask`` (AMBIG-9) = False (Eq. 15 has no mask); True = DENSE's disagreement mask.
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

from ..distill import (BestBatch, SyntheticPool, adversarial_loss, frozen_forward, generator_adam,
                       kd_step, make_generator, new_latent, random_labels, reset_generator,
                       stratified_aggregate)
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


def _ms_client_looped(model, gen, states, zs, steps, lr, device) -> torch.Tensor:
    """Reference path: one generator at a time, as Alg. 2 is written. Returns (c, steps) CE trajectories."""
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
            loss = F.cross_entropy(frozen_forward(model, gen(z)), y)
            traj[j, t] = loss.detach()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return traj.cpu()


def _ms_client_batched(model, gen, states, zs, steps, lr, device) -> torch.Tensor:
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
        x = many(params, z)  # (c, b, C, H, W)
        ce = F.cross_entropy(frozen_forward(model, x.flatten(0, 1)), y, reduction="none").view(c, b).mean(1)
        traj[:, t] = ce.detach()
        opt.zero_grad(set_to_none=True)
        ce.sum().backward()
        opt.step()
    return traj.cpu()


def model_stratification(models: list[torch.nn.Module], input_shape, num_classes: int, *, steps: int, batch: int,
                         nz: int, ngf: int, lr: float, eps: float, device: torch.device,
                         rng: torch.Generator, batched: bool = True, progress: bool = False
                         ) -> dict[str, torch.Tensor]:
    """Alg. 2: loss trajectories (m, c, steps) → U (c, m), Ū_r, Ū_c.

    ``batched`` trains the c generators of a client together (same numbers as the loop up to float rounding).
    """
    m = len(models)
    traj = torch.zeros(m, num_classes, steps, dtype=torch.float64)
    gen = make_generator(input_shape, nz, ngf, device, rng)
    run_client = _ms_client_batched if batched else _ms_client_looped
    for k, model in enumerate(tqdm(models, desc="fedhydra MS", disable=not progress, mininterval=1.0)):
        model.eval()
        states, zs = _ms_generators(gen, rng, num_classes, batch, nz)
        traj[k] = run_client(model, gen, states, zs, steps, lr, device)
    U = guidance_capability(traj, eps).T.contiguous()  # (c, m): U[j, k] = u_{k,j}
    return {"trajectories": traj, "U": U, "U_r": normalise(U, 1), "U_c": normalise(U, 0)}


@register
class FedHydra(ServerMethod):
    name = "fedhydra"
    description = "FedHydra: model stratification, stratified aggregation, HASA generator + distillation"
    trains_global = True
    defaults = {
        "epochs": 200, "g_steps": 30, "ms_steps": 30, "lr_g": 1e-3, "synthesis_batch": 256, "ms_batch": 256,
        "nz": 256, "ngf": 64, "lambda1": 1.0, "lambda2": 1.0, "beta": 1.0, "T": 1.0, "eps": 1e-8,
        "lr": 0.01, "momentum": 0.9,
        "distill_data": "intermediates", "generator_reset": "never", "sa_scale": "none", "ad_mask": False,
        "aggregation": "sa", "ms_batched": "auto",
    }
    allowed = {"distill_data": ("intermediates", "pool"), "generator_reset": ("never", "epoch"),
               "sa_scale": ("none", "classes"), "ad_mask": (False, True), "aggregation": ("sa", "ae"),
               "ms_batched": ("auto", True, False)}
    positive = ("g_steps", "ms_steps", "lr_g", "synthesis_batch", "ms_batch", "nz", "ngf", "T", "eps", "lr")
    epoch_keys = ("epochs",)
    step_keys = ("g_steps", "ms_steps")
    synth_keys = ("synthesis_batch", "ms_batch")
    width_keys = ("ngf",)

    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        dev, c = ctx.device, ctx.num_classes
        models = ctx.client_models()
        ens = ctx.teacher(models)
        extras: dict = {}
        ms_batched = p["ms_batched"] if p["ms_batched"] != "auto" else dev.type == "cuda"
        if p["aggregation"] == "sa":
            ms = model_stratification(models, ctx.input_shape, c, steps=p["ms_steps"], batch=p["ms_batch"],
                                      nz=p["nz"], ngf=p["ngf"], lr=p["lr_g"], eps=p["eps"], device=dev,
                                      rng=ctx.rng("fedhydra", "ms"), batched=ms_batched,
                                      progress=ctx.progress)
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
        draw_rng = ctx.rng("fedhydra", "latent")
        gen = make_generator(ctx.input_shape, p["nz"], p["ngf"], dev, reset_rng)
        opt_g = generator_adam(gen.parameters(), p["lr_g"])
        pool = SyntheticPool()
        b = p["synthesis_batch"]
        last: dict = {}  # the last epoch's final synthetic batch (Fig. 12 shows a few of its images)

        def pooled():
            for x, yb in pool.batches(b, gen=pool_rng, device=dev):
                with torch.no_grad():
                    P = teach(ens(x), yb)
                yield x, P  # (outside no_grad: a yield inside it would switch gradients off in the caller)

        def epoch(_: int):
            nonlocal opt_g
            if p["generator_reset"] == "epoch":
                reset_generator(gen, reset_rng)
                opt_g = generator_adam(gen.parameters(), p["lr_g"])
            z = new_latent(b, p["nz"], dev, draw_rng)
            y = random_labels(b, c, dev, draw_rng)
            student.eval()
            gen.train()
            inter, best = [], BestBatch()
            for _t in range(p["g_steps"]):
                x = gen(z)
                if p["lambda1"]:
                    per_client, bn = ens.forward_with_bn(x)
                else:
                    per_client, bn = ens(x), None
                P = teach(per_client, y)
                loss = F.cross_entropy(P, y)  # Eq. 13
                if bn is not None:
                    loss = loss + p["lambda1"] * bn.mean()  # Eq. 14: (1/m) Σ_k Σ_l
                if p["lambda2"]:
                    s_out = frozen_forward(student, x)
                    loss = loss + p["lambda2"] * adversarial_loss(s_out, P, T=p["T"], mask=p["ad_mask"])  # Eq. 15
                inter.append((x.detach(), P.detach()))  # the teacher is fixed: its P is reused for the student
                best.offer(x, loss)
                opt_g.zero_grad(set_to_none=True)
                loss.backward()
                opt_g.step()
            last.update(x=inter[-1][0], y=y)
            if p["distill_data"] == "intermediates":
                batches = inter
            else:
                pool.add(best.x, y)
                batches = pooled()
            for x, P in batches:
                kd_step(student, opt, x, P, T=p["T"], beta=p["beta"])  # Eqs. 17-19
            return student, {"gen_loss": best.loss}

        curve = track_epochs(ctx, p["epochs"], epoch, desc="fedhydra")
        if last:
            extras["synthetic_samples"] = synthetic_samples(last["x"], last["y"], c)
        return ServerResult("classifier", model=student.eval(), curve=curve, extras=extras,
                            choices={"student_init": "random", "optimize_z": False, "ms_batched_in_force": ms_batched,
                                     "teacher": "stratified aggregation" if p["aggregation"] == "sa"
                                     else "averaging ensemble (Fig. 7 ablation)"})


def synthetic_samples(x: torch.Tensor, y: torch.Tensor, num_classes: int, per_class: int = 2) -> dict:
    """Up to ``per_class`` images per assigned label of a synthetic batch, as uint8 lists (JSON-ready)."""
    keep = torch.cat([torch.nonzero(y == k).flatten()[:per_class] for k in range(num_classes)]).cpu()
    images = (x.detach().float().clamp(0, 1)[keep.to(x.device)] * 255).round().to(torch.uint8).cpu()
    return {"labels": y.cpu()[keep].tolist(), "shape": list(images.shape[1:]), "images_u8": images.tolist()}
