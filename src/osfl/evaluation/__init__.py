"""Evaluation: top-1 accuracy of a model or of any predictor (an ensemble's: :mod:`osfl.distill.ensemble`) on an
in-memory test set, and the images' float form every model reads."""
from __future__ import annotations

from typing import Callable

import torch

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
