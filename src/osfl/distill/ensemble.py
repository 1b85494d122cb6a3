"""Teacher ensembles for data-free distillation, and FedHydra's Stratified Aggregation.

``BatchedEnsemble(models, weights)``
    Client models that share one architecture are evaluated as ONE call: their parameters and buffers are
    stacked with ``torch.func.stack_module_state`` and a single copy of the module is run with
    ``torch.func.functional_call`` under ``torch.func.vmap`` over the stacked state (the input batch is shared,
    ``in_dims=None``). Models are grouped by architecture (class, ``repr`` and parameter/buffer shapes), so a
    mixed list (FedHydra's heterogeneous M1–M5) runs one vmapped call per group of ≥ 2 identical models and a
    plain call for the others; the output keeps the order of ``models``. Everything runs in eval mode (BN uses
    running statistics); teacher parameters are detached (no parameter gradients), gradients w.r.t. the INPUT
    flow, as the generator needs.

    BN-statistics loss under vmap — choice: computed FUNCTIONALLY INSIDE the vmapped call. Forward hooks
    registered on the caller's models do not fire for the batched path (the call goes through a private copy of
    the module, and values created inside vmap may not escape it). So the private copy carries its own hooks
    that, only while ``forward_with_bn`` runs, collect ``bn_hooks.bn_stat_loss`` of each BatchNorm2d input
    (the running statistics seen there are that model's slice of the stacked buffers); their sum is returned
    as an OUTPUT of the vmapped function, giving one BN loss per model (m,) without leaving the batched path.
    Singleton groups use ``BNStatHooks`` on the model itself. This keeps the single batched call (the point of
    batching) for the generator step, which is where the BN loss is needed, and gives per-model values so that
    DENSE (sum), Co-Boosting (sum / m) and FedHydra Eq. 14 ((1/m)·sum) are all one reduction away.

    The stacked state is a snapshot: call ``refresh()`` after changing the models' parameters.

``stratified_aggregate(P, y, U_r, U_c)``
    FedHydra SPEC §1.5 Eqs. 8–11: P[i,j] = Σ_k U_r[y_i,k]·U_c[j,k]·P_k[i,j], with U_r, U_c of shape (c, m).
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state, vmap

from ..evaluation import Predictor
from ..models import architecture_key, hookless_copy
from .bn_hooks import BNStatHooks, bn_layers, bn_stat_loss


class _Group:
    """Models with one architecture, evaluated by one vmapped functional call."""

    def __init__(self, models: list[nn.Module], chunk_size: int | None):
        self.models = models
        self.chunk_size = chunk_size
        self.base = hookless_copy(models[0]).eval()
        self.base.requires_grad_(False)
        self._collector: list[torch.Tensor] | None = None
        for layer in bn_layers(self.base):
            layer.register_forward_hook(self._hook)
        self.has_bn = bool(bn_layers(self.base))
        self.refresh()

    def _hook(self, module, inputs, output):
        if self._collector is not None:
            self._collector.append(bn_stat_loss(module, inputs[0]))

    def refresh(self) -> None:
        params, buffers = stack_module_state(self.models)
        self.params = {k: v.detach() for k, v in params.items()}
        self.buffers = {k: v.detach() for k, v in buffers.items()}

    def __call__(self, x: torch.Tensor, with_bn: bool):
        def one(params, buffers, inp):
            if not with_bn:
                return functional_call(self.base, (params, buffers), (inp,))
            self._collector = []
            try:
                out = functional_call(self.base, (params, buffers), (inp,))
                vals = self._collector
            finally:
                self._collector = None
            bn = torch.stack(vals).sum() if vals else out.new_zeros(())
            return out, bn

        params, buffers = self.params, self.buffers
        if torch.is_autocast_enabled(x.device.type):  # autocast does not reach through vmap: cast as it would
            dtype = torch.get_autocast_dtype(x.device.type)
            params, buffers = ({k: v.to(dtype) if v.is_floating_point() else v for k, v in d.items()}
                               for d in (params, buffers))
            x = x.to(dtype)
        return vmap(one, in_dims=(0, 0, None), chunk_size=self.chunk_size)(params, buffers, x)


class BatchedEnsemble:
    """Teacher ensemble returning logits; see the module docstring.

    * ``forward(x)`` / ``ens(x)``: per-client logits (m, B, K).
    * ``forward_with_bn(x)``: ((m, B, K) logits, (m,) BN-statistics loss per model, each summed over its layers).
    * ``combine(per_client, weights=None)``: Σ_k w_k z_k / Σ_k w_k, (B, K); ``weights`` may be a tensor that
      requires grad (Co-Boosting's ensemble re-weighting); ``None`` uses ``self.weights`` (uniform if unset). A
      (m, K) ``weights`` (OFedED's per client and class) gives logit c = Σ_k w_{k,c} z_k[c] / Σ_k w_{k,c}.
    * ``predict(x)``: ``combine(forward(x))``, a ``Predictor`` for ``evaluation.accuracy``.

    ``batched=False`` forces the Python loop for every model (reference path for tests and timing).
    ``chunk_size`` is passed to ``vmap`` to bound memory with many clients.
    """

    def __init__(self, models: Sequence[nn.Module], weights=None, batched: bool = True,
                 chunk_size: int | None = None):
        self.models = list(models)
        if not self.models:
            raise ValueError("BatchedEnsemble needs at least one model")
        for m in self.models:
            m.eval()
        self.weights = None if weights is None else torch.as_tensor(weights, dtype=torch.float32)
        self.batched = batched
        groups: dict = {}
        for i, m in enumerate(self.models):
            groups.setdefault(architecture_key(m) if batched else i, []).append(i)
        self._groups: list[tuple[list[int], _Group | None]] = [
            (idx, _Group([self.models[i] for i in idx], chunk_size) if len(idx) > 1 else None)
            for idx in groups.values()]

    def __len__(self) -> int:
        return len(self.models)

    @property
    def num_batched_calls(self) -> int:
        """Number of model calls one forward makes (1 for a homogeneous ensemble)."""
        return len(self._groups)

    def refresh(self) -> None:
        """Re-stack parameters and buffers after the models changed."""
        for _, g in self._groups:
            if g is not None:
                g.refresh()

    def _run(self, x: torch.Tensor, with_bn: bool):
        logits: list[torch.Tensor | None] = [None] * len(self.models)
        bns: list[torch.Tensor | None] = [None] * len(self.models)
        for idx, g in self._groups:
            if g is not None:
                res = g(x, with_bn)
                out, bn = res if with_bn else (res, None)
                for j, i in enumerate(idx):
                    logits[i] = out[j]
                    if with_bn:
                        bns[i] = bn[j]
            else:
                i = idx[0]
                model = self.models[i]
                params = {k: v.detach() for k, v in model.named_parameters()}
                if with_bn:
                    with BNStatHooks(model) as hooks:
                        logits[i] = functional_call(model, params, (x,))
                        bns[i] = hooks.loss().to(logits[i].dtype)
                else:
                    logits[i] = functional_call(model, params, (x,))
        out = torch.stack(logits)
        return (out, torch.stack(bns)) if with_bn else out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._run(x, with_bn=False)

    __call__ = forward

    def forward_with_bn(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self._run(x, with_bn=True)

    def per_client_logits(self, x: torch.Tensor, with_bn: bool = False):
        return self._run(x, with_bn)

    def combine(self, per_client: torch.Tensor, weights=None) -> torch.Tensor:
        w = self.weights if weights is None else weights
        if w is None:
            return per_client.mean(0)
        w = torch.as_tensor(w, dtype=per_client.dtype, device=per_client.device)
        if w.dim() == 2:  # OFedED's K×C class weights: logit c is a w_{·,c}-weighted mean (SPEC §2.4's reading)
            return torch.einsum("mk,mbk->bk", w, per_client) / w.sum(0)
        return torch.einsum("m,mbk->bk", w, per_client) / w.sum()

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.combine(self.forward(x))


def stratified_aggregate(per_client: torch.Tensor, targets: torch.Tensor, U_r: torch.Tensor,
                         U_c: torch.Tensor) -> torch.Tensor:
    """FedHydra's Stratified Aggregation (SPEC §1.5, Eqs. 8–11), vectorised.

    per_client: (m, B, c) client outputs P_k (logits, as in the paper); targets: (B,) assigned labels y;
    U_r, U_c: (c, m) with U_r rows summing to 1 over clients (inter-model weights, Eqs. 4–5) and U_c columns
    summing to 1 over classes (in-model weights, Eqs. 6–7). Returns P (B, c) with
    P[i, j] = Σ_k U_r[y_i, k] · U_c[j, k] · P_k[i, j]. With all guidance scores equal (U_r ≡ 1/m, U_c ≡ 1/c)
    this is (1/c)·AE, AE = (1/m)·Σ_k P_k (SPEC §1.5 note, AMBIG-6: implemented literally, no rescaling).
    """
    m, b, c = per_client.shape
    if U_r.shape != (c, m) or U_c.shape != (c, m):
        raise ValueError(f"U_r and U_c must be (c, m) = ({c}, {m}); got {tuple(U_r.shape)}, {tuple(U_c.shape)}")
    U_r = U_r.to(per_client)
    U_c = U_c.to(per_client)
    V = U_r[targets.to(per_client.device)]  # (B, m), Eq. 10
    return torch.einsum("bm,cm,mbc->bc", V, U_c, per_client)


# the predictors a server returns or an evaluation rebuilds (server side: client training imports none of this)

def ensemble_predictor(models: Sequence[torch.nn.Module], weights: Sequence[float] | None = None,
                       batched: bool = True) -> Predictor:
    """Σ_k w_k·logits_k / Σ_k w_k: DENSE's averaging ensemble (uniform w) or a weighted one.

    Client models of one architecture run as one vmapped call (:class:`BatchedEnsemble`); ``batched=False``
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
