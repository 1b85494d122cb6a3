"""MA-Echo (Su et al., "One-shot Federated Learning without Server-side Training", Neural Networks 2023), an
OFedED baseline: model aggregation by null-space projections, no server training, no data on the server.

Each client uploads its classifier and, per Conv2d/Linear layer except the output layer, a matrix P_k that
approximately projects onto the null space of the inputs that layer sees on the client's data (computed after
training by :func:`osfl.clients.projections.layer_projections`, payload ``projections`` of the classifier
upload: ``{module name: P}``). The server follows the official code (github.com/FudanVI/MAEcho, ``utils.py``
``noniid_aggr``; defaults of ``noniid.py``), layer by layer with the weight flattened to W (F × d; a conv is a
linear map on unfolded patches, its kernel flattened in (C_in, k_h, k_w) order; a bias is the last column of
[W | b], the weight of a constant input 1, the reading :mod:`osfl.clients.projections` uses):

1. start the global G from the average Σ_k a_k W_k (``weighting``: ``uniform`` a_k = 1/m as the official
   ``alpha = [1/N]*N``, or ``samples`` n_k/n);
2. repeat ``iterations`` times (official ``--maxt_times`` 50), with step λ (``step``, official ``--lambdastep``
   1.6):
   G ← G + λ Σ_k a_k (G − W_k)(P_k − I)ᵀ  — G moves towards W_k along the directions client k's data spans;
   W_k ← W_k + λ (G − W_k) P_kᵀ            — W_k moves towards G inside its own null space (its outputs on its
   data stay put); ``norm: true`` (official ``--norm``, default off) uses (G − W_k)P_kᵀ with unit rows instead;
3. the aggregated layer is the average Σ_k a_k W_k of the updated local models (the official code returns
   ``noniid_avgmodel`` of the updated ``w``, not G).

Layers are independent of one another in this recursion, so running the iterations layer by layer equals the
official loop order (iterations outside, layers inside). The output layer is never updated (official: ``if
layer == last key: continue``); with ``last_layer: split`` (official ``--split``, default on) each class row of
its weight and bias is averaged over the clients that hold more than one sample of that class (from the upload's
``label_histogram``) and is 0 where none does; ``average`` averages it like the other entries. Every entry
without a projection (BatchNorm parameters and running statistics, which the official models lack) is averaged
as FedAvg does (:func:`average_state_dicts`). Homogeneous architectures only. The client-side constants
(c = 0.5, α, batch 64, patch stride 2) live with the clients; see :mod:`osfl.clients.projections`.
"""
from __future__ import annotations

import torch

from ..errors import ConfigError
from . import register
from .base import ServerContext, ServerMethod, ServerResult, average_state_dicts, client_weights

KEY = "server.maecho"
PAYLOAD = "projections"


def echo_layer(weights: list[torch.Tensor], projections: list[torch.Tensor], client_w: list[float], *,
               iterations: int, step: float, norm: bool = False) -> torch.Tensor:
    """MA-Echo's iteration for one layer: ``weights`` W_k (F × d, same device), ``projections`` P_k (d × d),
    ``client_w`` a_k (normalised here); returns Σ_k a_k W_k after ``iterations`` steps (float64)."""
    total = float(sum(client_w))
    a = [float(x) / total for x in client_w]
    W = [w.to(torch.float64).clone() for w in weights]
    P = [p.to(device=W[0].device, dtype=torch.float64) for p in projections]
    eye = torch.eye(P[0].shape[0], dtype=torch.float64, device=W[0].device)
    G = sum(ak * wk for ak, wk in zip(a, W))
    for _ in range(iterations):
        G = G + step * sum(ak * (G - wk) @ (pk - eye).T for ak, wk, pk in zip(a, W, P))
        for k in range(len(W)):
            dd = (G - W[k]) @ P[k].T
            if norm:  # rows of norm 0 (nothing left to move) stay 0 instead of the official 0/0
                dd = dd / dd.norm(dim=1, keepdim=True).clamp_min(torch.finfo(dd.dtype).tiny)
            W[k] = W[k] + step * dd
    return sum(ak * wk for ak, wk in zip(a, W))


def split_rows(states: list[dict[str, torch.Tensor]], keys: list[str], histograms: list[list[int]],
               client_w: list[float]) -> dict[str, torch.Tensor]:
    """The official ``split`` average of the output layer: class row c of each of ``keys`` averaged (weights
    ``client_w``) over the clients with more than one sample of class c; 0 where no client has one."""
    hist = torch.tensor(histograms, dtype=torch.float64)  # (m, classes)
    held = (hist > 1).to(torch.float64) * torch.tensor(client_w, dtype=torch.float64)[:, None]
    norm = held.sum(0)
    coef = torch.where(norm > 0, held / norm.clamp_min(1e-300), torch.zeros_like(held))  # (m, classes)
    out = {}
    for key in keys:
        t0 = states[0][key]
        stacked = torch.stack([s[key].to(torch.float64) for s in states])  # (m, classes, ...)
        c = coef.reshape(*coef.shape, *([1] * (stacked.dim() - 2)))
        out[key] = (c * stacked).sum(0).to(t0.dtype)
    return out


@register
class MAEcho(ServerMethod):
    name = "maecho"
    description = "MA-Echo: iterative null-space projected aggregation of the client models, no server training"
    defaults = {"iterations": 50, "step": 1.6, "norm": False, "weighting": "uniform", "last_layer": "split"}
    allowed = {"weighting": ("uniform", "samples"), "last_layer": ("split", "average"), "norm": (False, True)}
    positive = ("step",)

    def run(self, ctx: ServerContext) -> ServerResult:
        p = self.params
        archs = {u.manifest.get("arch") for u in ctx.uploads}
        if len(archs) != 1 or ctx.model_name not in archs:
            raise ConfigError("methods", f"maecho needs every client and the server on one architecture, "
                                         f"got {sorted(map(str, archs))}")
        missing = [u.client_id for u in ctx.uploads if PAYLOAD not in u.manifest.get("files", {})]
        if missing:
            raise ConfigError(KEY, f"client(s) {missing} uploaded no {PAYLOAD!r}: the clients must compute "
                                   f"projections (osfl.clients.projections.layer_projections) for MA-Echo")
        states = [u.state_dict() for u in ctx.uploads]
        projs = [u.state_dict(PAYLOAD) for u in ctx.uploads]
        a = client_weights(ctx, p["weighting"])
        state = average_state_dicts(states, a)
        out_layer = next(reversed(states[0])).rpartition(".")[0]
        names = [n for n in projs[0] if n != out_layer]  # the official server never updates the last layer
        for k, pk in enumerate(projs):
            if set(pk) != set(projs[0]):
                raise ConfigError(KEY, f"client {ctx.uploads[k].client_id} has projections for {sorted(pk)}, "
                                       f"client {ctx.uploads[0].client_id} for {sorted(projs[0])}")
        dev = ctx.device
        for name in names:
            wkey, bkey = (f"{name}.{t}" if name else t for t in ("weight", "bias"))
            if wkey not in states[0]:
                raise ConfigError(KEY, f"projection for {name!r}, but the model has no {wkey!r}")
            shape = states[0][wkey].shape
            has_bias = bkey in states[0]
            mats = []
            for s in states:
                w = s[wkey].to(dev, torch.float64).reshape(shape[0], -1)
                mats.append(torch.cat([w, s[bkey].to(dev, torch.float64)[:, None]], 1) if has_bias else w)
            d = mats[0].shape[1]
            for k, pk in enumerate(projs):
                if tuple(pk[name].shape) != (d, d):
                    raise ConfigError(KEY, f"client {ctx.uploads[k].client_id}: projection of {name!r} is "
                                           f"{tuple(pk[name].shape)}, the layer needs {(d, d)} (bias augmented)")
            merged = echo_layer(mats, [pk[name] for pk in projs], a, iterations=int(p["iterations"]),
                                step=float(p["step"]), norm=bool(p["norm"])).cpu()
            state[wkey] = merged[:, :shape[1:].numel()].reshape(shape).to(states[0][wkey].dtype)
            if has_bias:
                state[bkey] = merged[:, -1].to(states[0][bkey].dtype)
        if p["last_layer"] == "split":
            keys = [k for k in (f"{out_layer}.{t}" if out_layer else t for t in ("weight", "bias")) if k in states[0]]
            if not keys:
                raise ConfigError(KEY, f"last_layer: split needs a weight in the output layer {out_layer!r}")
            hists = [[int(v) for v in u.label_histogram] for u in ctx.uploads]
            rows = states[0][keys[0]].shape[0]
            if any(len(h) != rows for h in hists):
                raise ConfigError(KEY, f"last_layer: split needs label histograms of {rows} classes "
                                       f"(the output layer's rows)")
            state.update(split_rows(states, keys, hists, a))
        model = ctx.make_global()
        model.load_state_dict(state)
        choices = {**p, "projected_layers": names, "output_layer": out_layer,
                   "bias": "augmented input (x, 1)", "conv": "linear map on unfolded patches"}
        return ServerResult("classifier", model=model.eval(), choices=choices)
