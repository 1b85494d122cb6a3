"""FedMHO (Yao et al., arXiv 2502.08518; SPEC §1.4–1.7, official ``pcode/aggregation/semi_supervised.py``).

The server receives classifiers (resource-sufficient clients) and CVAE decoders with label histograms
(resource-constrained clients). Stage 1: the decoders generate ``samples`` labelled images, class-balanced and
split over decoders by squared class counts; per class, 1-cluster k-means keeps the ``keep`` fraction nearest the
centre (:mod:`osfl.generative.synthesis`). Stage 2: the global model starts from the uniform average of the
uploaded classifiers (Eq. 4; ``init: random`` for FedCVAE-like training; ``init: distill`` for classifiers of
several architectures, Table X: SPEC §3.3's proposal, the averaged logits of the classifiers distilled into a fresh
global model on the kept images, KL at ``temperature``, Adam at ``lr`` for ``epochs`` epochs, before stage 2; the
SD teacher is then that distilled model) and is trained with Adam on the kept
images with cross-entropy (Eq. 5) plus ``lam`` × a KL term (Eq. 8): ``kd: md`` distils the averaged logits of the
uploaded classifiers (FedMHO-MD, Eq. 6 as the code computes it: one softmax of the mean logits), ``kd: sd`` the
frozen initial global model (FedMHO-SD, Eq. 7), ``kd: none`` is plain FedMHO. ``ce_weight`` is Table V's λ₁
(``lam`` its λ₂); ``weights: trainable`` is Table V's "both trainable" row (SPEC ambiguity 13's proposal: λ₁, λ₂ =
softplus of two scalars starting at ``ce_weight`` and ``lam``, trained by the same Adam; their values per epoch are
in the curve); ``cleaning: none`` is Table VI's ablation (no k-means: ⌊keep · M⌋ samples generated and all used,
the number cleaning would keep). The official KL uses
``KLDivLoss()``'s default ``reduction='mean'`` (the mean over B × C elements, i.e. 1/C of the batch-mean KL);
``kd_reduction: batchmean`` is the textbook scale (SPEC §1.7). The student trains in train mode (VGG-9's dropout
active), the teachers in eval mode. Defaults are the paper's Fashion-MNIST values (Table III); the paper's params
file sets the other datasets'.
"""
from __future__ import annotations

import copy

from ..errors import ConfigError
from ..generative.fusion import epoch_step, synthetic_set
from . import register
from .base import ServerContext, ServerMethod, ServerResult, average_state_dicts, track_epochs


@register
class FedMHO(ServerMethod):
    name = "fedmho"
    description = "decoders generate, k-means cleans, global from the classifiers' average trained with CE (+KD)"
    trains_global = True
    defaults = {"kd": "none", "lam": 1.0, "ce_weight": 1.0, "temperature": 1.0, "kd_reduction": "mean",
                "samples": 6000, "keep": 0.8, "cleaning": "kmeans", "epochs": 20, "lr": 5e-4, "batch_size": 64,
                "init": "average", "weights": "fixed"}
    allowed = {"kd": ("none", "md", "sd"), "kd_reduction": ("mean", "batchmean"),
               "init": ("average", "random", "distill"), "cleaning": ("kmeans", "none"),
               "weights": ("fixed", "trainable")}
    epoch_keys = ("epochs",)
    data_keys = ("samples",)
    positive = ("temperature", "samples", "keep", "epochs", "lr", "batch_size")

    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        classifiers = [u for u in ctx.uploads if u.kind == "classifier"]
        wrong = sorted({u.manifest.get("arch") for u in classifiers} - {ctx.model_name})
        if wrong and p["init"] == "average":
            raise ConfigError("server.fedmho.init", f"init: average averages the classifiers into the global "
                                                    f"{ctx.model_name}, but clients also use {', '.join(wrong)}; "
                                                    "init: distill takes classifiers of any architecture")
        if not classifiers and (p["init"] in ("average", "distill") or p["kd"] == "md"):
            raise ConfigError("server.fedmho.init", "init: average / distill and kd: md need classifier uploads; "
                                                    "none came")

        # stage 1: generate and clean (refuses a cohort without decoders)
        # Table VI's cleaning: none generates as many samples as cleaning keeps (⌊keep · M⌋) and keeps them all
        total, keep = ((p["samples"], p["keep"]) if p["cleaning"] == "kmeans" else
                       (int(p["keep"] * p["samples"]), 1.0))
        syn = synthetic_set(ctx.uploads, total, keep, ctx.rng("fedmho", "latents"), ctx.device, method=self.name)

        # stage 2: fuse
        model = ctx.make_global()
        ensemble = None  # the classifiers' averaged logits: init: distill and kd: md
        if p["init"] == "distill" or p["kd"] == "md":
            ensemble = ctx.teacher([u.build_model(ctx.device) for u in classifiers]).predict
        init = {}
        if p["init"] == "average":
            model.load_state_dict(average_state_dicts([u.state_dict() for u in classifiers], [1.0] * len(classifiers)))
        elif p["init"] == "distill":
            init = self._distill_init(ctx, p, model, syn, ensemble)
        teacher = None
        if p["kd"] == "md":
            teacher = ensemble
        elif p["kd"] == "sd":
            teacher = copy.deepcopy(model).eval()
        step = epoch_step(model, syn["x"], syn["y"], lr=p["lr"], batch_size=int(p["batch_size"]),
                          order=ctx.rng("fedmho", "order"), teacher=teacher, lam=p["lam"], T=float(p["temperature"]),
                          kd_reduction=p["kd_reduction"], ce_weight=p["ce_weight"],
                          trainable_weights=p["weights"] == "trainable")
        curve = track_epochs(ctx, int(p["epochs"]), step, f"fedmho ({p['kd']})", start=model)
        choices = {**p, **init, "synthetic_generated": syn["generated"], "synthetic_kept": len(syn["y"]),
                   "classifier_clients": [u.client_id for u in classifiers],
                   "decoder_clients": [u.client_id for u in syn["decoders"]]}
        return ServerResult("classifier", model=model.eval(), curve=curve, choices=choices,
                            extras={"allocation": syn["allocation"].tolist()})

    @staticmethod
    def _distill_init(ctx: ServerContext, p: dict, model, syn: dict, ensemble) -> dict:
        """``init: distill``: KL to the classifiers' averaged logits only (λ₁ = 0), ``epochs`` passes over the kept
        images, in place; returns what it recorded (its test accuracy)."""
        from tqdm.auto import tqdm

        step = epoch_step(model, syn["x"], syn["y"], lr=p["lr"], batch_size=int(p["batch_size"]),
                          order=ctx.rng("fedmho", "init-order"), teacher=ensemble, lam=1.0,
                          T=float(p["temperature"]), kd_reduction=p["kd_reduction"], ce_weight=0.0)
        for epoch in tqdm(range(1, int(p["epochs"]) + 1), desc="fedmho init (ensemble distillation)",
                          disable=not ctx.progress, mininterval=1.0):
            step(epoch)
        return {"init_epochs": int(p["epochs"]), "init_acc": ctx.evaluate(model.eval())}
