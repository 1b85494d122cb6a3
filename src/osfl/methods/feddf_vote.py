"""FedDF with prototype voting (FedMHO SPEC §2), the FedDF baseline of FedMHO's heterogeneous setting: for each
client architecture ("model prototype"), a student starts from the FedAvg average of that architecture's clients and
is distilled from the ensemble of **all** uploaded classifiers (their averaged logits, KL at temperature ``T``) on
unlabeled data of another dataset (:mod:`osfl.distill.unlabeled`, FedDF's loop); the global prediction is the
prototypes' vote (their outputs averaged).

Defaults are what FedMHO's code runs (``noise_knowledge_transfer``, SPEC §2): Adam lr 2e-4 with cosine annealing,
batch 128, 6,000 server batches (here 30 epochs × 200 batches, so that the run has a curve; no early stopping, the
code's validation split is not used), T = 1, the 1/n average as the students' start, the student's gradient norm
clipped at 5 (``grad_clip``; the code's ``clip_grad_norm_(..., 5)``, finding F14 of benchmarks/peers; 0 = no clip). ``aux_data: auto`` is the
SPEC's proposal (Fashion-MNIST ← MNIST, MNIST ← Fashion-MNIST, SVHN ← CIFAR-100 here; the paper names none);
``generator`` is the data-free fallback of :class:`osfl.methods.feddf.FedDF`. All students take the same batches.
"""
from __future__ import annotations

import torch

from ..distill.unlabeled import UnlabeledDistillation, distil_epoch, feddf_batches
from ..distill.ensemble import voting_predictor
from . import register
from .base import ServerContext, ServerMethod, ServerResult, prototype_averages, track_epochs


@register
class FedDFVote(UnlabeledDistillation, ServerMethod):
    name = "feddf_vote"
    description = "FedDF per client architecture (each from its FedAvg), distilled from all clients; prototypes vote"
    trains_global = True
    defaults = {
        "aux_data": "auto", "epochs": 30, "steps_per_epoch": 200, "batch_size": 128, "lr": 2e-4,
        "cosine": True, "T": 1.0, "weighting": "uniform", "grad_clip": 5.0,
        "g_steps": 30, "lr_g": 1e-3, "nz": 256, "ngf": 64,
    }
    allowed = {"weighting": ("uniform", "samples"), "cosine": (True, False)}
    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.resolved(ctx.profile)
        groups, students = prototype_averages(ctx, p["weighting"], self.name)  # each student from its FedAvg
        ups = [u for g in groups.values() for u in g]
        teacher = ctx.teacher([u.build_model(ctx.device) for u in ups])  # all classifiers, averaged logits
        batches, aux, source = feddf_batches(ctx, p, teacher.predict, method=self.name)
        total = p["epochs"] * p["steps_per_epoch"]
        opts = [torch.optim.Adam(s.parameters(), lr=p["lr"]) for s in students.values()]
        scheds = [torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=total) if p["cosine"] else None for o in opts]
        vote = voting_predictor(list(students.values()))

        def epoch(_: int):
            distil_epoch(list(students.values()), opts, scheds, batches, teacher.predict, p["T"],
                         grad_clip=float(p["grad_clip"]) or None)
            for s in students.values():
                s.eval()
            return vote

        curve = track_epochs(ctx, p["epochs"], epoch, desc="feddf_vote", start=vote)
        return ServerResult("voting", prototypes={a: s.eval() for a, s in students.items()}, curve=curve,
                            choices={"aux_data_in_force": aux, "distillation_data": source, "total_steps": total,
                                     "early_stopping": False,
                                     "prototypes": {a: [u.client_id for u in g] for a, g in groups.items()}})
