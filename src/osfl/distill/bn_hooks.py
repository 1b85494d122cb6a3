"""DeepInversion/DENSE BatchNorm-statistics loss (ANCHORS.md §1; FedHydra SPEC §1.6 Eq. 14).

For every ``nn.BatchNorm2d`` layer of a teacher, on that layer's INPUT x (N, C, H, W):

    r = ‖running_var − var_{N,H,W}(x)‖₂ + ‖running_mean − mean_{N,H,W}(x)‖₂      (var with unbiased=False)

DENSE sums r over all layers of all client models; Co-Boosting divides the sum by the number of models and
FedHydra's Eq. 14 writes (1/m)·Σ_k Σ_l, so ``BNStatHooks`` gives both the total (``loss()``) and the per-model
sums (``per_model()``). A model without BatchNorm2d contributes 0.

``bn_stat_loss`` is the single definition of r; ``ensemble.BatchedEnsemble`` reuses it inside its vmapped call.
"""
from __future__ import annotations

from typing import Iterable

import torch
import torch.nn as nn


def bn_stat_loss(bn: nn.BatchNorm2d, x: torch.Tensor) -> torch.Tensor:
    """‖running_var − batch_var‖₂ + ‖running_mean − batch_mean‖₂ on the BN input ``x`` (N, C, H, W)."""
    mean = x.mean(dim=(0, 2, 3))
    var = x.var(dim=(0, 2, 3), unbiased=False)
    return (torch.linalg.vector_norm(bn.running_var - var) + torch.linalg.vector_norm(bn.running_mean - mean))


def bn_layers(model: nn.Module) -> list[nn.BatchNorm2d]:
    """The BatchNorm2d layers that carry running statistics, in ``modules()`` order."""
    return [m for m in model.modules()
            if isinstance(m, nn.BatchNorm2d) and m.running_mean is not None and m.running_var is not None]


class BNStatHooks:
    """Forward hooks on every BatchNorm2d of every model; each stores the r of the latest forward pass.

    Use as a context manager (hooks are removed on exit) or call ``remove()``::

        with BNStatHooks(client_models) as hooks:
            logits = [m(x) for m in client_models]
            loss_bn = hooks.loss()          # Σ over layers and models (DENSE)

    Values belong to the latest forward of each layer; a layer not run since the hooks were registered (or since
    ``clear()``) contributes nothing. Values keep their graph, so ``loss()`` is differentiable w.r.t. the input.
    """

    def __init__(self, models: nn.Module | Iterable[nn.Module]):
        self.models = [models] if isinstance(models, nn.Module) else list(models)
        self._values: list[list[torch.Tensor | None]] = []
        self._handles = []
        for k, model in enumerate(self.models):
            layers = bn_layers(model)
            self._values.append([None] * len(layers))
            for l, layer in enumerate(layers):
                self._handles.append(layer.register_forward_hook(self._make_hook(k, l)))

    def _make_hook(self, k: int, l: int):
        def hook(module, inputs, output):
            self._values[k][l] = bn_stat_loss(module, inputs[0])
        return hook

    @property
    def num_layers(self) -> int:
        return sum(len(v) for v in self._values)

    def _zero(self) -> torch.Tensor:
        for model in self.models:
            for t in model.parameters():
                return torch.zeros((), device=t.device, dtype=t.dtype)
        return torch.zeros(())

    def per_model(self) -> torch.Tensor:
        """(m,) tensor: Σ over BN layers of each model (0 for a model without BN)."""
        zero = self._zero()
        sums = []
        for vals in self._values:
            present = [v for v in vals if v is not None]
            sums.append(torch.stack(present).sum() if present else zero)
        return torch.stack(sums) if sums else zero.reshape(0)

    def loss(self) -> torch.Tensor:
        """Σ over layers and models (DENSE); a 0-d zero tensor when there are no BN layers."""
        present = [v for vals in self._values for v in vals if v is not None]
        return torch.stack(present).sum() if present else self._zero()

    def clear(self) -> None:
        for vals in self._values:
            vals[:] = [None] * len(vals)

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []

    def __enter__(self) -> "BNStatHooks":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
