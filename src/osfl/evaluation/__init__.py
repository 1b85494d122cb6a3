"""Evaluation: top-1 accuracy of a model, or of an ensemble of models, on an in-memory test set."""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from ..distill.ensemble import BatchedEnsemble

Predictor = Callable[[torch.Tensor], torch.Tensor]  # float batch in [0,1] -> logits


def to_float(x_u8: torch.Tensor) -> torch.Tensor:
    """uint8 images -> float32 in [0, 1] (ToTensor without normalisation, as in DENSE; SPEC §1.9)."""
    return x_u8.float().div_(255.0)


@torch.no_grad()
def accuracy(predict: Predictor | torch.nn.Module, x_u8: torch.Tensor, y: torch.Tensor, batch_size: int = 1024) -> float:
    """Top-1 accuracy in percent. ``predict`` gets float batches on the device of ``x_u8``. Always in fp32:
    autocast (``runtime.precision: bf16``, which applies to training) is off here, so that a server's logged
    accuracies and the evaluate stage's recomputation of the saved model agree."""
    was_training = isinstance(predict, torch.nn.Module) and predict.training
    if isinstance(predict, torch.nn.Module):
        predict.eval()
    correct = 0
    with torch.autocast(x_u8.device.type, enabled=False):
        for i in range(0, len(y), batch_size):
            logits = predict(to_float(x_u8[i : i + batch_size]))
            correct += (logits.argmax(1) == y[i : i + batch_size]).sum().item()
    if was_training:
        predict.train()
    return 100.0 * correct / max(1, len(y))


def ensemble_predictor(models: Sequence[torch.nn.Module], weights: Sequence[float] | None = None,
                       batched: bool = True) -> Predictor:
    """Σ_k w_k·logits_k / Σ_k w_k: DENSE's averaging ensemble (uniform w) or a weighted one.

    Client models of one architecture run as one vmapped call (``distill.BatchedEnsemble``); ``batched=False``
    loops over the models (reference path).
    """
    w = [1.0] * len(models) if weights is None else [float(v) for v in weights]
    return BatchedEnsemble(models, w, batched=batched).predict


def voting_predictor(models: Sequence[torch.nn.Module]) -> Predictor:
    """Prototype voting (FedMHO SPEC §2, ``federated_average_ensemble.py``): one model per client architecture,
    their logits averaged with equal weights (soft voting)."""
    return ensemble_predictor(list(models))


def uploads_ensemble(uploads, members: Sequence[int], weights: Sequence[float], device: torch.device) -> Predictor:
    """The ensemble a server method returned (``members``: client ids, with their ``weights``), rebuilt from the
    client uploads on ``device``."""
    by_id = {u.client_id: u for u in uploads}
    return ensemble_predictor([by_id[c].build_model(device) for c in members], weights)
