"""MA-Echo's client-side statistic: one projection matrix per layer, from the client's own data after training.

MA-Echo (Su et al., "One-shot Federated Learning without Server-side Training", Neural Networks 2023; official
code github.com/FudanVI/MAEcho, ``utils.py`` ``createp``) has every client send, besides its weights, a matrix
P_ℓ per layer ℓ that approximately projects onto the orthogonal complement (the null space) of the inputs layer ℓ
sees on that client's data. The server (:mod:`osfl.methods.maecho`) moves the global weights only along
directions that leave each client's outputs on its own inputs unchanged.

What the official code does, and this module repeats:

* P_ℓ starts as the identity of size d_ℓ (in_features of a Linear; C_in·k_h·k_w of a Conv2d);
* the model in eval mode is run over the client's training data in batches (64, the official ``batch_size``);
  per batch and layer, the *batch mean* of the layer's input is taken (the official models return
  ``torch.mean(h, 0, True)`` of every layer input);
* each row r of that mean (a Linear: the mean feature vector; a Conv2d: every k_h×k_w patch of the mean input
  map, taken at stride 2 and without padding, flattened in the weight's (C_in, k_h, k_w) order, i.e. a conv is
  the linear map W·patch on unfolded patches) updates P by the recursive-least-squares step of orthogonal
  weight modification: k = P r, P ← P − c·k kᵀ / (α + rᵀ k);
* c = 0.5 (official ``--C``); α = 0.00001^0.8 = 1e-4 for convolutions and 0.01^0.8 ≈ 0.0251 for linear layers
  (official ``alpha_array[0]`` and ``alpha_array[2]`` with ``lamda = 0.8``).

With c = 1 the recursion is exact Sherman–Morrison: after rows r_1..r_n (the matrix R), P = α(αI + RᵀR)⁻¹ =
I − Rᵀ(RRᵀ + αI)⁻¹R, the regularised projector onto the null space of the rows (P² → P, P Rᵀ → 0 as α → 0).
With the official c = 0.5 each step removes only half of the component along r, so P is symmetric with
eigenvalues in (0, 1] and is a projector only in the limit of many updates along the same directions.

Readings of this repository (the official models have no biases and no BatchNorm):

* a layer with a bias sees the augmented input (x, 1): r gets a trailing 1 and P is (d+1)×(d+1), so the server
  treats [W | b] as one matrix (the output on client data, W x + b, is what the projection protects);
* the output layer (the module owning the last entry of the state dict) gets no matrix: the official server
  never updates the last layer (it averages it), so computing it would only make the upload larger;
* the conv patches ignore the conv's own padding and stride, as the official code does (stride 2, no padding);
* batches are taken in the order of ``x`` unless a CPU ``generator`` is given (the official loader shuffles);
  no global random state is used, so the result is a deterministic function of the inputs;
* the recursion runs in float64 on the device of ``x``; the matrices are returned as float32 on the CPU.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

# official createp: lamda = 0.8, alpha_array = [1e-5 ** lamda, 1e-4 ** lamda, 1e-2 ** lamda, 0.1 ** lamda]
ALPHA_CONV = 1e-5 ** 0.8  # alpha_array[0], used for every conv layer
ALPHA_LINEAR = 1e-2 ** 0.8  # alpha_array[2], used for every linear layer


def output_layer(model: nn.Module) -> str:
    """The module owning the last state-dict entry (the classifier of the registry's models)."""
    return next(reversed(model.state_dict())).rpartition(".")[0]


def projected_layers(model: nn.Module, skip_output: bool = True) -> dict[str, nn.Module]:
    """The Conv2d / Linear modules that get a projection, by module name (registration order)."""
    out = output_layer(model) if skip_output else None
    layers = {n: m for n, m in model.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear)) and n != out}
    for n, m in layers.items():
        if isinstance(m, nn.Conv2d) and m.groups != 1:
            raise ValueError(f"layer {n}: grouped convolutions are not supported by the MA-Echo projections")
    return layers


def _rows(module: nn.Module, mean_input: torch.Tensor, patch_stride: int) -> torch.Tensor:
    """The rows r that update P for one batch: (n_rows, d) or (n_rows, d+1) with a trailing 1 for a bias."""
    x = mean_input.to(torch.float64)
    if isinstance(module, nn.Conv2d):
        patches = F.unfold(x, module.kernel_size, dilation=module.dilation, stride=patch_stride)  # (1, d, L)
        rows = patches[0].T
    else:
        rows = x.reshape(-1, x.shape[-1])
    if module.bias is not None:
        rows = torch.cat([rows, rows.new_ones(len(rows), 1)], 1)
    return rows


@torch.no_grad()
def layer_projections(model: nn.Module, x_float01: torch.Tensor, *, batch_size: int = 64, c: float = 0.5,
                      alpha_conv: float = ALPHA_CONV, alpha_linear: float = ALPHA_LINEAR, patch_stride: int = 2,
                      skip_output: bool = True, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """MA-Echo's per-layer projection matrices of a trained ``model`` on its client's data ``x_float01``.

    ``x_float01``: the client's training images in the model's input space (float, [0, 1]), on the model's
    device. Returns ``{module name: P}`` for every Conv2d and Linear except the output layer (``skip_output``),
    P float32 on the CPU, of size d×d (d = in_features or C_in·k_h·k_w) or (d+1)×(d+1) for a layer with a
    bias. See the module docstring for the recursion, its constants and the readings. The model is left in the
    mode it was in.
    """
    layers = projected_layers(model, skip_output)
    if not layers:
        raise ValueError("the model has no Conv2d or Linear layer to project (besides the output layer)")
    device = x_float01.device
    proj: dict[str, torch.Tensor] = {}
    for name, m in layers.items():
        d = m.in_channels * m.kernel_size[0] * m.kernel_size[1] if isinstance(m, nn.Conv2d) else m.in_features
        proj[name] = torch.eye(d + (m.bias is not None), dtype=torch.float64, device=device)
    means: dict[str, list[torch.Tensor]] = {name: [] for name in layers}

    def hook(name):
        def record(_module, inputs):
            means[name].append(inputs[0].detach().mean(0, keepdim=True))
        return record

    handles = [m.register_forward_pre_hook(hook(name)) for name, m in layers.items()]
    was_training = model.training
    model.eval()
    try:
        n = len(x_float01)
        order = torch.randperm(n, generator=generator).to(device) if generator is not None else None
        for start in range(0, n, batch_size):
            xb = x_float01[start:start + batch_size] if order is None else x_float01[order[start:start + batch_size]]
            model(xb)
            for name, m in layers.items():
                alpha = alpha_conv if isinstance(m, nn.Conv2d) else alpha_linear
                P = proj[name]
                for mean in means[name]:
                    for r in _rows(m, mean, patch_stride):
                        k = P @ r
                        P.sub_(torch.outer(k, k) * (c / (alpha + r @ k)))  # no host sync on a GPU
                means[name].clear()
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return {name: P.float().cpu() for name, P in proj.items()}
