"""OT fusion (Singh & Jaggi, NeurIPS 2020, "Model Fusion via Optimal Transport"), weight-based, one shot.

Each client model is aligned neuron by neuron onto an anchor client, then the aligned models are averaged
(FedHydra SPEC §2 "OT"; ANCHORS.md §5). Data-free: the ground cost uses weights only, no activations.

Layer-wise, in forward order, for every non-anchor client k and hidden layer ℓ (a Conv2d or Linear with the
BatchNorm that follows it, if any):

1. the incoming dimension of ℓ is permuted with the map found for layer ℓ−1 (input channels of a conv, input
   features of a linear; at the conv→linear switch the flattened features are channel-major blocks of H·W,
   so whole blocks move);
2. the ground cost between client k's output neurons and the anchor's is the Euclidean distance between
   their incoming-aligned weight vectors (conv kernels flattened, bias appended);
3. the transport problem with uniform marginals is solved exactly. Both layers have the same number n of
   neurons, so the marginals are the uniform vector 1/n on both sides and the transport polytope is the
   Birkhoff polytope scaled by 1/n, whose vertices are permutation matrices: an exact optimum is a
   permutation, found by the Hungarian algorithm (``scipy.optimize.linear_sum_assignment``). The SPEC's
   Ŵ = diag(1/ν)·Tᵀ·W with ν = 1/n and T = P/n is then exactly the row permutation P·W;
4. client k's output neurons are put into the anchor's order: weight rows, bias, and the BatchNorm
   weight/bias/running_mean/running_var of that layer.

The output layer is not permuted (only its input dimension is aligned), as ``--skip-last-layer`` in the
reference code. Then the aligned state dicts are averaged with :func:`osfl.methods.base.average_state_dicts`
(BN running statistics included, after permutation), weights ``samples`` = n_k/n or ``uniform``.

Layer discovery is generic and checked, not a per-architecture whitelist: :func:`discover_layers` walks
``model.named_modules()`` (registration order) collecting Conv2d / Linear / BatchNorm layers and requires a
consistent chain (each layer's input size matches the previous layer's output size, every BatchNorm directly
follows the layer it normalises, no other module owns parameters); :func:`check_sequential` then permutes the
hidden units of a freshly built model at random and requires the outputs to be unchanged on random input. A
model whose forward pass is not that chain (skip connections, a different call order, channel-mixing
reshapes) fails one of the two checks and the method raises a ConfigError instead of returning a wrong model.
Registration order alone is not proof of forward order, hence the functional check. ResNet-18 fails the chain
check at its first projection shortcut.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn

from ..errors import ConfigError
from . import register
from .base import ServerContext, ServerMethod, ServerResult, average_state_dicts, client_weights

State = dict[str, torch.Tensor]

# Architectures of the registry that pass the checks (tests/test_ot.py); named in the error message.
SEQUENTIAL_ARCHS = ("cnn2", "cnn3", "cnn3_bn", "lenet5", "lenet5_avg")
_BN_KEYS = ("weight", "bias", "running_mean", "running_var")


@dataclass(frozen=True)
class FusionLayer:
    """One Conv2d/Linear of the chain, with the BatchNorm that follows it (``bn`` module path) if any."""

    name: str  # module path ("" for a bare module)
    kind: str  # "conv" or "linear"
    in_size: int  # input channels (conv) or input features (linear)
    out_size: int
    has_bias: bool
    bn: str | None = None

    def key(self, attr: str) -> str:
        return f"{self.name}.{attr}" if self.name else attr

    def bn_keys(self, state: State) -> list[str]:
        if self.bn is None:
            return []
        keys = [f"{self.bn}.{a}" if self.bn else a for a in _BN_KEYS]
        return [k for k in keys if k in state]


class NotSequentialError(ValueError):
    """The model is not a plain chain of conv/linear(+BN) layers; the message says where."""


def discover_layers(model: nn.Module) -> list[FusionLayer]:
    """The Conv2d/Linear(+BatchNorm) chain of ``model`` in module registration order.

    Raises :class:`NotSequentialError` when the modules cannot form one feed-forward chain. Registration
    order is taken as forward order; :func:`check_sequential` verifies that on the running model.
    """
    layers: list[FusionLayer] = []
    bn_done = False  # the last layer already has its BatchNorm
    for name, mod in model.named_modules():
        if isinstance(mod, nn.Conv2d):
            if mod.groups != 1:
                raise NotSequentialError(f"{name}: grouped convolution")
            new = FusionLayer(name, "conv", mod.in_channels, mod.out_channels, mod.bias is not None)
        elif isinstance(mod, nn.Linear):
            new = FusionLayer(name, "linear", mod.in_features, mod.out_features, mod.bias is not None)
        elif isinstance(mod, nn.modules.batchnorm._BatchNorm):
            if not layers or bn_done or layers[-1].out_size != mod.num_features:
                raise NotSequentialError(f"{name}: BatchNorm that does not follow a layer of its width")
            last = layers[-1]
            layers[-1] = FusionLayer(last.name, last.kind, last.in_size, last.out_size, last.has_bias, name)
            bn_done = True
            continue
        else:
            own = list(mod.named_parameters(recurse=False)) + list(mod.named_buffers(recurse=False))
            if own:
                raise NotSequentialError(f"{name or type(mod).__name__}: unsupported module with state "
                                         f"({type(mod).__name__})")
            continue
        if layers:
            prev = layers[-1]
            if prev.kind == "linear" and new.kind == "conv":
                raise NotSequentialError(f"{name}: convolution after a linear layer")
            if prev.kind == "conv" and new.kind == "linear":
                ok = new.in_size % prev.out_size == 0
            else:
                ok = new.in_size == prev.out_size
            if not ok:
                raise NotSequentialError(f"{name}: takes {new.in_size} inputs but {prev.name} gives {prev.out_size}")
        layers.append(new)
        bn_done = False
    if not layers:
        raise NotSequentialError("no Conv2d or Linear layer")
    return layers


def _take(t: torch.Tensor, dim: int, idx: torch.Tensor) -> torch.Tensor:
    return t.index_select(dim, idx.to(t.device))


def _permute_input(w: torch.Tensor, layer: FusionLayer, prev: FusionLayer, perm: torch.Tensor) -> torch.Tensor:
    """Permute the incoming dimension of ``w`` (layer ``layer``) by the output permutation of ``prev``."""
    if layer.kind == "linear" and prev.kind == "conv":  # flattened (C, H, W): channel-major blocks of H·W
        out, fin = w.shape
        return _take(w.reshape(out, prev.out_size, fin // prev.out_size), 1, perm).reshape(out, fin)
    return _take(w, 1, perm)


def permute_state(state: State, layers: Sequence[FusionLayer], perms: Sequence[torch.Tensor | None]) -> State:
    """Reorder hidden units: output unit i of layer ℓ becomes old unit ``perms[ℓ][i]`` (None = keep).

    ``perms`` has one entry per layer; the last layer's entry must be None (outputs are class logits). The
    result computes the same function as ``state``. Tensors not in the chain are copied unchanged.
    """
    if len(perms) != len(layers):
        raise ValueError(f"need {len(layers)} permutations, got {len(perms)}")
    if perms[-1] is not None:
        raise ValueError("the output layer cannot be permuted")
    out = {k: v.clone() for k, v in state.items()}
    for i, layer in enumerate(layers):
        wk = layer.key("weight")
        if i > 0 and perms[i - 1] is not None:
            out[wk] = _permute_input(out[wk], layer, layers[i - 1], perms[i - 1])
        p = perms[i]
        if p is not None:
            out[wk] = _take(out[wk], 0, p)
            if layer.has_bias:
                out[layer.key("bias")] = _take(out[layer.key("bias")], 0, p)
            for k in layer.bn_keys(out):
                out[k] = _take(out[k], 0, p)
    return out


def _neuron_vectors(state: State, layer: FusionLayer) -> np.ndarray:
    w = state[layer.key("weight")].detach().to("cpu", torch.float64)
    v = w.reshape(w.shape[0], -1)
    if layer.has_bias:
        v = torch.cat([v, state[layer.key("bias")].detach().to("cpu", torch.float64)[:, None]], 1)
    return v.numpy()


def match_to_anchor(model_state: State, anchor_state: State,
                    layers: Sequence[FusionLayer]) -> list[torch.Tensor | None]:
    """Per-layer permutations that put ``model_state``'s hidden units into the anchor's order.

    Layer by layer: align the incoming dimension with the previous layer's permutation, then solve the exact
    OT problem with uniform marginals (a permutation; see the module docstring) on the Euclidean cost between
    weight(+bias) vectors. The last entry is None (output layer not permuted).
    """
    perms: list[torch.Tensor | None] = [None] * len(layers)
    from scipy.optimize import linear_sum_assignment  # not at the top: half a second of every server's start-up

    current = {k: v for k, v in model_state.items()}
    for i, layer in enumerate(layers[:-1]):
        wk = layer.key("weight")
        if i > 0:
            current[wk] = _permute_input(current[wk], layer, layers[i - 1], perms[i - 1])
        a = _neuron_vectors(anchor_state, layer)
        b = _neuron_vectors(current, layer)
        # cost[i, j] = ||anchor neuron i - client neuron j||_2 (not squared; the optimal permutation differs)
        sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
        cost = np.sqrt(np.maximum(sq, 0.0))
        rows, cols = linear_sum_assignment(cost)
        perm = np.empty(len(rows), dtype=np.int64)
        perm[rows] = cols  # anchor position i takes client neuron perm[i]
        perms[i] = torch.from_numpy(perm)
        current[wk] = _take(current[wk], 0, perms[i])
        if layer.has_bias:
            current[layer.key("bias")] = _take(current[layer.key("bias")], 0, perms[i])
    return perms


def align_to_anchor(model_state: State, anchor_state: State, layers: Sequence[FusionLayer]) -> State:
    """``model_state`` with its hidden units permuted into ``anchor_state``'s order (same function)."""
    return permute_state(model_state, layers, match_to_anchor(model_state, anchor_state, layers))


def moved_share(perms: Sequence[torch.Tensor | None]) -> float:
    """The share of hidden units a client's alignment moves (0: every permutation is the identity; then fusing is
    plain averaging: clients trained from one shared initial model keep its neuron order)."""
    ps = [p for p in perms if p is not None]
    moved = sum(int((p != torch.arange(len(p))).sum()) for p in ps)
    return moved / max(1, sum(len(p) for p in ps))


def fuse(states: Sequence[State], weights: Sequence[float], layers: Sequence[FusionLayer], anchor: int = 0,
         moved: dict[int, float] | None = None) -> State:
    """Align every state onto ``states[anchor]`` and average with ``weights`` (normalised to sum 1); ``moved``, if
    given, receives each non-anchor state's :func:`moved_share` (by index)."""
    if len(states) != len(weights):
        raise ValueError(f"{len(states)} states but {len(weights)} weights")
    ref = states[anchor]
    aligned = []
    for k, s in enumerate(states):
        if k != anchor:
            perms = match_to_anchor(s, ref, layers)
            s = permute_state(s, layers, perms)
            if moved is not None:
                moved[k] = moved_share(perms)
        aligned.append(s)
    return average_state_dicts(aligned, list(weights))


def _random_stats(model: nn.Module, gen: torch.Generator) -> None:
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                if m.affine:
                    m.weight.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(m.num_features, generator=gen))
                if m.track_running_stats:
                    m.running_mean.copy_(torch.randn(m.num_features, generator=gen))
                    m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)


def check_sequential(model: nn.Module, layers: Sequence[FusionLayer], input_shape: Sequence[int],
                     seed: int = 0) -> None:
    """Raise :class:`NotSequentialError` unless permuting hidden units by ``layers`` preserves the function.

    ``model`` is modified (random BatchNorm statistics); pass a throw-away instance.
    """
    gen = torch.Generator().manual_seed(seed)
    model = model.cpu().eval()
    _random_stats(model, gen)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    perms = [torch.randperm(l.out_size, generator=gen) for l in layers[:-1]] + [None]
    x = torch.randn(4, *input_shape, generator=gen)
    try:
        with torch.no_grad():
            y0 = model(x)
            model.load_state_dict(permute_state(state, layers, perms))
            y1 = model(x)
    except RuntimeError as e:  # shape mismatch: the chain is not the forward order
        raise NotSequentialError(f"forward with permuted units fails: {str(e).splitlines()[0]}") from e
    finally:
        model.load_state_dict(state)
    tol = 1e-4 * (1.0 + float(y0.abs().max()))
    if y0.shape != y1.shape or not torch.allclose(y0, y1, atol=tol, rtol=1e-4):
        raise NotSequentialError("permuting hidden units changes the outputs (skip connections or another order)")


def sequential_layers(arch: str, input_shape: Sequence[int], num_classes: int) -> list[FusionLayer]:
    """The checked layer chain of a registry architecture; ConfigError('methods', ...) if it is not a chain."""
    from ..models import build_model

    model = build_model(arch, tuple(input_shape), num_classes)
    try:
        layers = discover_layers(model)
        check_sequential(model, layers, input_shape)
    except NotSequentialError as e:
        raise ConfigError("methods", f"ot supports sequential CNN/MLP architectures ({', '.join(SEQUENTIAL_ARCHS)}), "
                                     f"not {arch}") from e
    return layers


@register
class OTFusion(ServerMethod):
    name = "ot"
    description = "OT fusion (Singh & Jaggi 2020): align neurons to an anchor by exact OT, then average"
    defaults = {"anchor": "largest", "weighting": "samples"}
    allowed = {"anchor": ("largest", "first"), "weighting": ("samples", "uniform")}

    def __init__(self, **params):
        super().__init__(**params)
        # scipy.optimize's first import takes about half a second; paid when the method is built, it stays out of
        # run_method's timed window, as the official code's imports stay out of its timer (finding F36)
        import scipy.optimize  # noqa: F401

    def run(self, ctx: ServerContext) -> ServerResult:
        archs = {u.manifest.get("arch") for u in ctx.uploads}
        if len(archs) != 1 or ctx.model_name not in archs:
            raise ConfigError("methods", "ot needs every client and the server on one architecture, "
                                         f"got {sorted(archs, key=str)}")
        layers = sequential_layers(ctx.model_name, ctx.input_shape, ctx.num_classes)
        sizes = ctx.client_sizes()
        anchor = int(np.argmax(sizes)) if self.params["anchor"] == "largest" else 0
        weights = client_weights(ctx, self.params["weighting"])
        states = [u.state_dict() for u in ctx.uploads]
        moved: dict[int, float] = {}
        state = fuse(states, weights, layers, anchor, moved=moved)
        model = ctx.make_global()
        model.load_state_dict(state)
        choices = {**self.params, "anchor_client": ctx.uploads[anchor].client_id, "ground_metric": "euclidean",
                   "solver": "exact assignment (scipy linear_sum_assignment)", "skip_last_layer": True,
                   "alignment": "weights"}
        # what the alignment did: with one shared initial model every permutation may be the identity (OT = FedAvg)
        extras = {"units_moved_share": {str(ctx.uploads[k].client_id): round(v, 4) for k, v in moved.items()}}
        return ServerResult("classifier", model=model.eval(), choices=choices, extras=extras)
