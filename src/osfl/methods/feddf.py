"""FedDF (Lin et al., NeurIPS 2020): ensemble distillation on unlabeled auxiliary data, FedAvg initialisation.

Facts from the reference code (ANCHORS.md §6) and FedHydra SPEC §2. The global model starts from the FedAvg
average of the client models (weights n_k/n; a random initialisation with ``init: random``) and is trained
with Adam (lr 1e-3, cosine annealing over all steps) on KL(AE(d)/T ‖ F_g(d)/T)·T², T = 1, where AE is the
average of the client logits and d are batches of unlabeled images from ANOTHER dataset.

``aux_data`` (FedHydra does not say what FedDF distilled on, AMBIG-20):
    ``auto`` follows SPEC §2's proposal (:data:`osfl.distill.unlabeled.AUTO_AUX`): MNIST ↔ Fashion-MNIST, SVHN and CIFAR-10 ← CIFAR-100 (digits ←
    Fashion-MNIST); any dataset name of the same image shape picks that dataset; ``generator`` is the data-free
    fallback: a DENSE generator (kept across epochs) trained with CE(AE(G(z)), y) only for ``g_steps`` steps per
    epoch, whose samples are then distilled on.
The reference code runs up to 10⁴ server steps with early stopping on a validation split; here the 10⁴ steps are
``epochs`` × ``steps_per_epoch`` (200 × 50) so that the run has a test-accuracy curve like the other methods,
and no early stopping is done (the final and the best epoch are both reported).
"""
from __future__ import annotations

import torch

from ..distill.unlabeled import UnlabeledDistillation, distil_epoch, feddf_batches
from . import register
from .base import ServerContext, ServerMethod, ServerResult, average_state_dicts, client_weights, track_epochs


@register
class FedDF(UnlabeledDistillation, ServerMethod):
    name = "feddf"
    description = "FedDF: FedAvg init, distil averaged client logits on unlabeled auxiliary data"
    trains_global = True
    defaults = {
        "aux_data": "auto", "epochs": 200, "steps_per_epoch": 50, "batch_size": 128, "lr": 1e-3,
        "cosine": True, "T": 1.0, "init": "fedavg", "weighting": "samples",
        "g_steps": 30, "lr_g": 1e-3, "nz": 256, "ngf": 64,
    }
    allowed = {"init": ("fedavg", "random"), "weighting": ("samples", "uniform"), "cosine": (True, False)}
    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        models = ctx.client_models()
        teacher = ctx.teacher(models)  # AE: plain average of client logits
        batches, aux, source = feddf_batches(ctx, p, teacher.predict, method=self.name)
        student = ctx.make_global()
        if p["init"] == "fedavg":
            student.load_state_dict(average_state_dicts([m.state_dict() for m in models],
                                                        client_weights(ctx, p["weighting"])))
        total = p["epochs"] * p["steps_per_epoch"]
        opt = torch.optim.Adam(student.parameters(), lr=p["lr"])
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total) if p["cosine"] else None

        def epoch(_: int):
            distil_epoch([student], [opt], [sched], batches, teacher.predict, p["T"])
            return student

        curve = track_epochs(ctx, p["epochs"], epoch, desc="feddf", start=student)
        return ServerResult("classifier", model=student.eval(), curve=curve,
                            choices={"aux_data_in_force": aux, "distillation_data": source,
                                     "total_steps": total, "early_stopping": False})

