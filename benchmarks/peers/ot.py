"""Peer run of OT fusion: Singh & Jaggi's official ``wasserstein_ensemble.py`` against our ``ot`` server method.

Both fuse the SAME client models, trained once per seed by our own stages (``prepare``, ``partition``,
``train_clients``, as ``benchmarks/peers/clients.py`` runs them) on our partition of Fashion-MNIST, with our LeNet-5
(``lenet5``, 28×28, no BatchNorm: the official code cannot fuse BatchNorm layers). Per seed:

* ``ours``: our ``server --method ot`` and ``evaluate`` stages (exact OT = the Hungarian assignment on the Euclidean
  distance between incoming-aligned weight(+bias) vectors, every client aligned onto the anchor = the largest
  client, then averaged), and our ``fedavg`` of the same clients for reference;
* ``official``: the official ``get_wassersteinized_layers_modularized`` (imported from a scratch checkout, see
  ``benchmarks/peers/README.md``), driven by an ``args`` namespace from its own ``parameters.get_parser()`` with the
  flags below, and its ``baseline.get_avg_parameters`` (weighted parameter average) and ``routines.test``;
* ``official_normalize_wts`` (``--arms``): the same with ``--normalize-wts`` (FedLPA's ``do_ot.py`` defaults and the
  README's VGG11 command), which our method does not do.

The official code fuses two networks: ``networks[0]`` is aligned onto ``networks[1]``, and the fused layer is
``(1 - ensemble_step)·Tᵀ·W0_aligned + ensemble_step·W1``. Ours aligns N clients onto one anchor and averages. The
harness chains the official code the same way: for each non-anchor client k it calls the official function on
``[client k, anchor]`` with ``--ensemble-step 0`` (the official output is then client k aligned onto the anchor:
``Tᵀ·W_k``, and its last layer with aligned inputs under ``--skip-last-layer``), then averages the anchor and the
aligned clients with the official ``get_avg_parameters`` and the same weights as ours (``--weighting``; with two
clients and uniform weights this is exactly the official ``--ensemble-step 0.5``).

Biases: the official code assumes bias-free layers (``wasserstein_ensemble.py:49``; ``sidak/otfusion#4``): it iterates
``named_parameters()`` and would take a bias vector for a layer. It is therefore given each client as a module that
holds the 5 weight tensors only; the biases are carried by the official transport maps, as the author suggests in
#4: the corrected map ``T_var`` of each hidden layer is read from the official function's frame (``sys.settrace``,
nothing changed in it) and client k's bias becomes ``T_varᵀ·b_k``; the output layer's bias is not transported
(``--skip-last-layer``). Our method appends the bias to each neuron's weight vector in the ground cost; the official
cost sees weights only, so the two can match neurons differently (the checks measure how often).

Checks per seed (record key ``checks``, the largest value over seeds), on the anchor and the first other client, with
the biases left out on both sides so that both solve the same problem: the layer-1 transport map (official ``T_var``
against our permutation as a 0/1 matrix), layer 1 of client k aligned onto the anchor, and every fused layer of the
official 2-model fusion as released (``--ensemble-step 0.5``) against our ``fuse`` of the two with weights ½, ½; then
the share of hidden neurons that our method as run (bias in the cost) and the official ``--normalize-wts`` arm match
as the official main arm does.

Run from the repository root::

    python -m benchmarks.peers.ot --seeds 0 1 2          # -> benchmarks/peers/records/ot.json
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import inspect
import io
import json
import os
import sys
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from .clients import FMNIST_DEBIAN, REPO, fresh_dir, our_clients, summary, write_record
from .official import OFFICIAL, official_modules, peers_root, statement_line, tracing

PEER = "otfusion"
ARCH = "lenet5"
# The official code's flags (parameters.py names): FedLPA's do_ot.py defaults (ANCHORS.md §5), which are also the
# README's VGG11 command, except --normalize-wts (an arm of its own): our method does not normalise the weights.
FLAGS = ["--gpu-id", "-1", "--geom-ensemble-type", "wts", "--exact", "--correction", "--past-correction",
         "--skip-last-layer", "--ground-metric", "euclidean", "--ground-metric-normalize", "none", "--not-squared",
         "--ground-metric-eff"]
ARMS = {"official": [], "official_normalize_wts": ["--normalize-wts"]}
# The official statement after which T_var is final for the layer (correction applied): where the tracer reads it.
T_VAR_AFTER = "setattr(args, 'trace_sum_ratio_{}'"


class MissingPOT(RuntimeError):
    """POT (the official code's ``ot``) is not importable from ``pot_site()``; the message is the one line to run."""


def pot_site() -> Path:
    """Where POT is installed for the official code only (``$OSFL_POT_SITE``, default ``$OSFL_PEERS/_site``): it is no
    requirement of this repository and never on the venv's path."""
    return Path(os.environ.get("OSFL_POT_SITE") or peers_root() / "_site")


@contextlib.contextmanager
def pot_on_path():
    """``pot_site()`` at the end of ``sys.path`` for the block (after the venv, so numpy and scipy stay the venv's)."""
    site = pot_site()
    if not (site / "ot" / "__init__.py").exists():
        raise MissingPOT(f"POT not found at {site}: run `pip install --no-deps --target {site} POT` (the official "
                         "code's dependency; kept outside the venv)")
    saved = list(sys.path)
    sys.path.append(str(site))
    importlib.invalidate_caches()
    try:
        yield
    finally:
        sys.path[:] = saved


def unpack_cifar(root: Path) -> None:
    """The official README: "you need to unzip the cifar.zip file for some imports to work" (its ``train`` module,
    imported by model.py, routines.py and utils.py; never called here)."""
    if not (root / "cifar" / "train.py").exists():
        with zipfile.ZipFile(root / "cifar.zip") as z:
            z.extractall(root)


SHIMS = [
    "POT (the official code's `ot`) installed outside the venv (`pip install --no-deps --target $OSFL_PEERS/_site "
    "POT`, 0.9.7.post1 here) and put at the end of sys.path while the harness runs the official code only",
    "cifar.zip unpacked into the checkout, as the official README requires for its imports (cifar/train.py; unused)",
    "working directory: the checkout's root while the official code runs (its modules put the relative ./cifar/ on "
    "sys.path at import)",
    "args: the official parameters.get_parser().parse_args(FLAGS) (see settings), --gpu-id -1 (CPU); prints "
    "silenced (redirect_stdout)",
    "networks: each client passed as a module holding only its 5 weight tensors (the official code assumes bias-free "
    "layers, wasserstein_ensemble.py:49; our LeNet-5 has biases)",
    "biases: transported by the official corrected transport maps T_var (read from the official function's frame "
    "with sys.settrace at wasserstein_ensemble.py:215, nothing changed in it): b_k -> T_var^T b_k for hidden "
    "layers, output bias untouched (skip-last-layer), as the author suggests in sidak/otfusion#4",
    "N clients: the official 2-model fusion called once per non-anchor client with --ensemble-step 0 (= that client "
    "aligned onto the anchor), then the anchor and aligned clients averaged by the official "
    "baseline.get_avg_parameters with our weights (two clients, uniform weights = the official --ensemble-step 0.5)",
    "clients, partition and test data: ours (train_clients stage; 28x28, pixels in [0, 1], our prepared test "
    "arrays as a TensorDataset for the official routines.test)",
    "checkout: cifar_models.zip and resnet_models.zip (pretrained models) absent from the snapshot; not used",
]


class WeightsOnly(nn.Module):
    """A client as the official code needs it: its weight tensors only, in forward order (``named_parameters``)."""

    def __init__(self, state: dict, keys: list[str]):
        super().__init__()
        self.weights = nn.ParameterList([nn.Parameter(state[k].detach().clone().float(), requires_grad=False)
                                         for k in keys])


def traced(func, after: str, name: str, *args, **kwargs):
    """``func(*args, **kwargs)`` and a copy of its local ``name`` each time its statement containing ``after`` is
    reached (read from its own frame with ``sys.settrace``; the function runs unchanged)."""
    line = statement_line(func, after)
    code = inspect.unwrap(func).__code__
    seen = []

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno == line:
            seen.append(frame.f_locals[name].detach().clone())
        return local

    with tracing(code, local):
        out = func(*args, **kwargs)
    return out, seen


# ---------------------------------------------------------------------------------------------------- ours
def our_run(work: Path, seed: int, args) -> dict:
    """Our stages in ``work`` (a scratch folder with its own params.yaml), as ``dvc repro`` would run them."""
    stage = our_clients(work, {
        "profile": "paper", "seed": seed, "dataset": "fmnist", "partition": "dirichlet", "alpha": args.alpha,
        "clients": args.clients, "model": ARCH, "methods": ["fedavg", "ot"], "data": {"mirror": str(FMNIST_DEBIAN)},
        "local": {"epochs": args.epochs, "batch_size": 128, "lr": 0.01, "momentum": 0.9, "augment": "none",
                  "init": args.init},
        "runtime": {"threads": args.threads},
        "server": {"fedavg": {"weighting": args.weighting}, "ot": {"weighting": args.weighting, "anchor": "largest"}},
    })
    exp = ["--experiment", "peer"]
    out = {}
    for method in ("ot", "fedavg"):
        stage("osfl.stages.server", *exp, "--method", method)
        stage("osfl.stages.evaluate", *exp, "--method", method)
        out[method] = json.loads((work / "results" / "peer" / "runs" / f"{method}.json").read_text())["acc_final"]
    seconds = json.loads((work / "results" / "peer" / "runtime" / "ot.json").read_text())["seconds"]
    clients = json.loads((work / "results" / "peer" / "clients.json").read_text())
    return {"final": out["ot"], "fedavg": out["fedavg"], "server_seconds": seconds,
            "client_acc_mean": clients["local_acc_mean"]}


# ---------------------------------------------------------------------------------------------------- official
def official_args(parameters, extra: list[str], ensemble_step: float):
    return parameters.get_parser().parse_args(FLAGS + extra + ["--ensemble-step", str(ensemble_step)])


def official_align(we, parameters, extra, state_k, state_a, keys, ensemble_step=0.0):
    """The official fusion of ``[client k, anchor]`` (weights only): its returned layer list and the corrected
    transport map ``T_var`` of every hidden layer (``traced``)."""
    oargs = official_args(parameters, extra, ensemble_step)
    nets = [WeightsOnly(state_k, keys), WeightsOnly(state_a, keys)]
    with contextlib.redirect_stdout(io.StringIO()):
        layers, maps = traced(we.get_wassersteinized_layers_modularized, T_VAR_AFTER, "T_var", oargs, nets)
    return [t.detach().clone() for t in layers], maps


def aligned_state(state: dict, layers: list[torch.Tensor], maps: list[torch.Tensor], keys: list[str],
                  bias_keys: list[str | None]) -> dict:
    """Client k aligned onto the anchor: the official aligned weights, and its biases carried by the official maps."""
    out = {k: v.clone() for k, v in state.items()}
    for i, (wk, bk) in enumerate(zip(keys, bias_keys)):
        out[wk] = layers[i].reshape(state[wk].shape).to(state[wk].dtype)
        if bk is not None and i < len(maps):  # hidden layer: T_var^T b ; output layer (skip-last-layer): b
            out[bk] = (maps[i].t().double() @ state[bk].double()).to(state[bk].dtype)
    return out


def official_run(work: Path, seed: int, args, arm: str) -> dict:
    from osfl.clients.upload import read_uploads
    from osfl.models import build_model

    torch.set_num_threads(args.threads)
    uploads = read_uploads(work / "models" / "peer" / "clients")
    states = [u.state_dict() for u in uploads]
    sizes = [u.n_samples for u in uploads]
    anchor = int(np.argmax(sizes))  # ours: anchor "largest" (np.argmax of the client sizes, first on ties)
    weights = np.asarray([float(n) for n in sizes] if args.weighting == "samples" else [1.0] * len(sizes))
    weights = (weights / weights.sum()).tolist()
    model = build_model(ARCH, (1, 28, 28), 10)
    keys = [n for n, p in model.named_parameters() if n.endswith("weight")]
    bias_keys = [k[: -len("weight")] + "bias" for k in keys]
    x = torch.from_numpy(np.load(work / "data" / "prepared" / "fmnist" / "x_test.npy")).float().div_(255.0)
    y = torch.from_numpy(np.load(work / "data" / "prepared" / "fmnist" / "y_test.npy")).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=1000, shuffle=False)
    root = OFFICIAL[PEER].require()
    unpack_cifar(root)
    with pot_on_path(), contextlib.chdir(root), official_modules(
            PEER, "wasserstein_ensemble", "parameters", "baseline", "routines") as (we, parameters, baseline, routines):
        t0 = time.perf_counter()
        aligned = []
        for k, s in enumerate(states):
            if k == anchor:
                aligned.append(s)
                continue
            layers, maps = official_align(we, parameters, ARMS[arm], s, states[anchor], keys)
            aligned.append(aligned_state(s, layers, maps, keys, bias_keys))
        nets = [load(build_model(ARCH, (1, 28, 28), 10), s) for s in aligned]
        with contextlib.redirect_stdout(io.StringIO()):
            fused = load_params(build_model(ARCH, (1, 28, 28), 10), baseline.get_avg_parameters(nets, weights))
        seconds = time.perf_counter() - t0
        clients = [load(build_model(ARCH, (1, 28, 28), 10), s) for s in states]
        with contextlib.redirect_stdout(io.StringIO()):
            fedavg = load_params(build_model(ARCH, (1, 28, 28), 10), baseline.get_avg_parameters(clients, weights))
        test_args = parameters.get_parser().parse_args(FLAGS)
        with contextlib.redirect_stdout(io.StringIO()), torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", "size_average and reduce args", UserWarning)  # its nll_loss call
            final = routines.test(test_args, fused, loader, {"test_losses": []})
            fedavg_acc = routines.test(test_args, fedavg, loader, {"test_losses": []})
            if arm == "official":  # our server stage's fused model under the official test (vs our evaluate stage)
                ours = load(build_model(ARCH, (1, 28, 28), 10),
                            torch.load(work / "models" / "peer" / "global" / "ot" / "model.pt", weights_only=True))
                ours_acc = routines.test(test_args, ours, loader, {"test_losses": []})
        checks = {}
        if arm == "official":
            checks = equation_checks(we, parameters, states, anchor, keys)
            checks["official_arm_vs_ours_weights_cost"] = whole_arm_check(fused.state_dict(), states, anchor,
                                                                          weights)
            checks["ours_final_official_test"] = float(ours_acc)
    return {"final": float(final), "fedavg": float(fedavg_acc), "server_seconds": seconds}, checks


def load(model: nn.Module, state: dict) -> nn.Module:
    model.load_state_dict(state)
    return model.eval()


def load_params(model: nn.Module, params: list[torch.Tensor]) -> nn.Module:
    """``params`` (in ``model.parameters()`` order, as the official ``get_avg_parameters`` returns them) into
    ``model`` (our LeNet-5 has no buffers: its parameters are its state)."""
    names = [n for n, _ in model.named_parameters()]
    assert len(names) == len(params) == len(model.state_dict())
    return load(model, {n: p.detach().clone() for n, p in zip(names, params)})


# ---------------------------------------------------------------------------------------------------- checks
def whole_arm_check(fused: dict, states: list[dict], anchor: int, weights: list[float]) -> float:
    """Largest difference, over every tensor biases included, between the official arm's fused model and ours run
    with the official cost (weights only, no bias): our permutations from the bias-free cost, applied by our
    ``permute_state`` to the whole clients (biases follow), averaged by our ``average_state_dicts``."""
    from osfl.methods import ot as our_ot
    from osfl.methods.base import average_state_dicts
    from osfl.models import build_model

    layers = our_ot.discover_layers(build_model(ARCH, (1, 28, 28), 10))
    no_bias = [dataclasses.replace(l, has_bias=False) for l in layers]
    keys = [l.key("weight") for l in layers]
    aligned = []
    for k, s in enumerate(states):
        if k == anchor:
            aligned.append(s)
            continue
        perms = our_ot.match_to_anchor({w: s[w] for w in keys}, {w: states[anchor][w] for w in keys}, no_bias)
        aligned.append(our_ot.permute_state(s, layers, perms))
    ours = average_state_dicts(aligned, weights)
    return max(float((fused[key].double() - ours[key].double()).abs().max()) for key in ours)


def equation_checks(we, parameters, states, anchor, keys) -> dict:
    """The official code and ours on the same two models (the anchor and the first other client), biases left out."""
    from osfl.methods import ot as our_ot
    from osfl.models import build_model

    k = next(i for i in range(len(states)) if i != anchor)
    layers = our_ot.discover_layers(build_model(ARCH, (1, 28, 28), 10))
    assert [l.key("weight") for l in layers] == keys
    no_bias = [dataclasses.replace(l, has_bias=False) for l in layers]
    wk = {key: states[k][key] for key in keys}
    wa = {key: states[anchor][key] for key in keys}
    # official aligned client k (ensemble step 0) and its maps; ours: the permutations and the permuted state
    off_aligned, off_maps = official_align(we, parameters, [], wk, wa, keys)
    perms = our_ot.match_to_anchor(wk, wa, no_bias)
    ours_aligned = our_ot.permute_state(wk, no_bias, perms)
    n1 = layers[0].out_size
    P = torch.zeros(n1, n1, dtype=torch.float64)
    P[perms[0], torch.arange(n1)] = 1.0  # anchor position i takes client neuron perms[0][i]: T[perm[i], i] = 1
    t_diff = float((off_maps[0].double() - P).abs().max())
    a_diff = float((off_aligned[0].reshape(wk[keys[0]].shape).double() - ours_aligned[keys[0]].double()).abs().max())
    # the official 2-model fusion as released (ensemble step 0.5) against ours with weights 1/2, 1/2
    off_fused, _ = official_align(we, parameters, [], wk, wa, keys, ensemble_step=0.5)
    ours_fused = our_ot.fuse([wk, wa], [0.5, 0.5], no_bias, anchor=1)
    f_diff = max(float((o.reshape(wk[key].shape).double() - ours_fused[key].double()).abs().max())
                 for o, key in zip(off_fused, keys))
    # how often our method as run (bias in the cost) and the --normalize-wts arm match as the official arm does
    off_match = [m.argmax(0) for m in off_maps]  # anchor neuron j <- client neuron argmax_i T[i, j]
    ours_bias = our_ot.match_to_anchor(states[k], states[anchor], layers)
    _, norm_maps = official_align(we, parameters, ARMS["official_normalize_wts"], wk, wa, keys)
    agree_bias = [float((p.long() == m).double().mean()) for p, m in zip(ours_bias[:-1], off_match)]
    agree_norm = [float((n.argmax(0) == m).double().mean()) for n, m in zip(norm_maps, off_match)]
    return {"transport_map_layer1": t_diff, "aligned_weights_layer1": a_diff, "fused_two_models": f_diff,
            "match_agreement_ours_bias_in_cost": agree_bias, "match_agreement_normalize_wts": agree_norm,
            "pair": [k, anchor]}


def check_records(rows: list[dict], ours_final: list[float]) -> list[dict]:
    """One entry per check, the equations.json shape (the largest difference over seeds)."""
    we = OFFICIAL[PEER].as_dict()

    def where(after: str | None = None) -> dict:
        return {"repo": we["repo"], "commit": we["commit"],
                "where": "wasserstein_ensemble.py:get_wassersteinized_layers_modularized"
                         + (f" (line {after})" if after else "")}

    out = []
    for key, what, ours in (
            ("transport_map_layer1", "layer-1 transport map: official corrected T_var (exact, euclidean, not "
             "squared, no bias) vs our permutation as a 0/1 matrix, same two trained LeNet-5 clients",
             "osfl.methods.ot:match_to_anchor"),
            ("aligned_weights_layer1", "layer-1 weights of client k aligned onto the anchor: official T_var^T W "
             "(ensemble step 0) vs our permuted rows", "osfl.methods.ot:permute_state"),
            ("fused_two_models", "every fused weight layer of the official 2-model fusion as released (ensemble "
             "step 0.5, skip-last-layer) vs our fuse of the two with weights 1/2, 1/2 (biases left out on both "
             "sides)", "osfl.methods.ot:fuse")):
        diff = max(r[key] for r in rows)
        out.append({"id": f"ot-{key.replace('_', '-')}", "method": "OT", "what": what, "official": where(),
                    "ours": ours, "max_abs_diff": diff, "tolerance": 1e-5,
                    "verdict": "equal" if diff <= 1e-5 else "differs",
                    "note": "official correction divides by 1/n + 1e-7 (T_var = 1 - n·1e-7 on the matched pairs) and "
                            "works in float32; ours permutes exactly (float64 cost)",
                    "per_seed": [r[key] for r in rows]})
    diff = max(r["official_arm_vs_ours_weights_cost"] for r in rows)
    out.append({"id": "ot-whole-arm-weights-cost", "method": "OT",
                "what": "the official arm's fused N-client model (every tensor, biases included) vs ours run with the "
                        "official cost (weights only): our permutations from the bias-free cost applied to the whole "
                        "clients, our average with the same weights",
                "official": where(), "ours": "osfl.methods.ot:match_to_anchor/permute_state, "
                                             "osfl.methods.base:average_state_dicts",
                "max_abs_diff": diff, "tolerance": 1e-5, "verdict": "equal" if diff <= 1e-5 else "differs",
                "note": "the fused models of the two arms differ only through the bias in our cost when this is equal",
                "per_seed": [r["official_arm_vs_ours_weights_cost"] for r in rows]})
    out.append({"id": "ot-test-function", "method": "OT",
                "what": "our ot model's test accuracy (%) by the official routines.test vs our evaluate stage",
                "official": {**where(), "where": "routines.py:test"}, "ours": "osfl.stages.evaluate",
                "max_abs_diff": max(abs(r["ours_final_official_test"] - f) for r, f in zip(rows, ours_final)),
                "tolerance": 1e-9, "per_seed": [r["ours_final_official_test"] for r in rows]})
    out[-1]["verdict"] = "equal" if out[-1]["max_abs_diff"] <= 1e-9 else "differs"
    out.append({"id": "ot-bias-in-cost", "method": "OT",
                "what": "share of hidden neurons (per layer) that our method as run (bias appended to the cost) "
                        "matches to the same anchor neuron as the official weights-only cost",
                "official": where(), "ours": "osfl.methods.ot:_neuron_vectors",
                "per_seed": [r["match_agreement_ours_bias_in_cost"] for r in rows]})
    out.append({"id": "ot-normalize-wts", "method": "OT",
                "what": "share of hidden neurons (per layer) matched alike by the official code with and without "
                        "--normalize-wts (FedLPA's default; ours never normalises)",
                "official": {**where(), "where": "ground_metric.py:GroundMetric.process"},
                "ours": "osfl.methods.ot:match_to_anchor",
                "per_seed": [r["match_agreement_normalize_wts"] for r in rows]})
    return out


# ---------------------------------------------------------------------------------------------------- main
def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=10, help="local epochs of our train_clients stage")
    p.add_argument("--clients", type=int, default=5)
    p.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration of our partition stage")
    p.add_argument("--init", choices=("shared", "independent"), default="independent",
                   help="local.init of our train_clients stage: one draw per client (the OT fusion paper's setting, "
                        "where alignment matters) or one common initial model (our pipeline's default; with seed 0 every "
                        "permutation found was the identity and OT fusion = FedAvg on every arm)")
    p.add_argument("--weighting", choices=("uniform", "samples"), default="uniform",
                   help="averaging weights of both fusions and FedAvg: uniform (the official --ensemble-step 0.5 "
                        "generalised) or n_k/n (our default)")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--scratch", type=Path, default=peers_root() / "work")
    p.add_argument("--out", type=Path, default=None,
                   help="default: benchmarks/peers/records/ot.json (--init independent), ot-shared-init.json (shared)")
    args = p.parse_args(argv)
    args.out = args.out or REPO / "benchmarks/peers/records" / (
        "ot.json" if args.init == "independent" else "ot-shared-init.json")
    torch.set_num_threads(args.threads)
    fedavg_key = "fedavg" if args.weighting == "uniform" else "fedavg_samples"
    arms: dict[str, list[dict]] = {**{a: [] for a in args.arms}, "ours": []}
    checks = []
    for seed in args.seeds:
        work = fresh_dir(args.scratch.resolve() / f"ot-s{seed}")
        t = time.perf_counter()
        arms["ours"].append(our_run(work, seed, args))
        client_acc = arms["ours"][-1]["client_acc_mean"]
        for arm in args.arms:
            row, chk = official_run(work, seed, args, arm)
            arms[arm].append({**row, "client_acc_mean": client_acc})  # the same clients
            if chk:
                checks.append(chk)
        print(f"seed {seed}: clients {client_acc:.2f}; " + "; ".join(
            f"{a}: OT {r[-1]['final']:.2f}, FedAvg {r[-1]['fedavg']:.2f}, {r[-1]['server_seconds']:.2f} s"
            for a, r in arms.items()) + (f"; layer-1 T max|Δ| {checks[-1]['transport_map_layer1']:.1e}, fused "
                                         f"max|Δ| {checks[-1]['fused_two_models']:.1e}, bias-cost agreement "
                                         f"{checks[-1]['match_agreement_ours_bias_in_cost']}" if checks else "")
              + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    rename = (lambda k: fedavg_key if k == "fedavg" else k)  # noqa: E731
    off = OFFICIAL[PEER]
    record = {
        "method": "OT fusion", "harness": "benchmarks/peers/ot.py", "peer": PEER,
        "layer": f"one-shot OT fusion of the same trained clients ({args.init} client initialisation)",
        "official": off.as_dict(), "shims": SHIMS + off.stub_notes(), "torch": torch.__version__,
        "settings": {
            "dataset": "fmnist (Debian dataset-fashion-mnist)", "model": f"{ARCH} (our LeNet-5, 28x28, biases, no BN)",
            "clients": args.clients, "partition": f"dirichlet, alpha {args.alpha} (our partition stage, seed = run seed)",
            "local": {"epochs": args.epochs, "batch_size": 128, "lr": 0.01, "momentum": 0.9, "init": args.init},
            "fusion": {"anchor": "largest client (ours: anchor=largest; official: networks[1])",
                       "weighting": args.weighting, "official_flags": " ".join(FLAGS),
                       "official_arms": {a: " ".join(ARMS[a]) or "(FLAGS)" for a in args.arms},
                       "ours": "server.ot: exact assignment (scipy linear_sum_assignment), euclidean (not squared), "
                               "bias in the cost, output layer not permuted"},
            "threads": args.threads, "test": "all 10,000 test images (our prepared arrays, pixels in [0, 1])",
            "server_seconds": "ours: the server stage's runtime record (the method's run); official: the aligning "
                              "calls (prints to a StringIO), bias transport and average, in process",
        },
        "seeds": args.seeds,
        "arms": {arm: {rename(key): summary([r[key] for r in rows]) for key in rows[0]} for arm, rows in arms.items()},
        "checks": check_records(checks, [r["final"] for r in arms["ours"]]) if checks else [],
    }
    write_record(args.out, record)


if __name__ == "__main__":
    main()
