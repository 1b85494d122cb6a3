"""Peer run of the layer every method shares: the clients (issue 38).

``--peer Co-Boosting`` (the default, below) or ``--peer DENSE``: DENSE's official pre-training (``loop_df_fl.py``:
``LocalUpdate``, ``average_weights``, ``Ensemble``, ``test``; its fmnist data and ``CNNMnist``, which is our ``cnn2``)
against ours with its settings (no gradient clip, 5 clients, the NIID-Bench Dirichlet draw); DENSE prepares its
inputs as we do, so it has the one arm ``official``.

Co-Boosting's official pre-training (``fl_pretrain.py``: its ``LocalUpdate``, ``average_weights``, ``Ensemble`` and
``class_test``, imported from a scratch checkout, see ``benchmarks/peers/README.md``) and ours (the stages
``prepare``, ``partition``, ``train_clients``, ``server``/``evaluate`` for FedAvg and the ensemble, run as a user runs
them) on the same Fashion-MNIST partition: OUR partition stage draws the client indices, and the official code gets
them through the shim instead of drawing its own. Three arms per seed:

* ``official``: the official code as released: images resized to 32×32 and normalised (mean = std = 0.5), its
  LeNet-5, its loop (SGD, momentum 0.9, batch 128, gradient-norm clip 10), FedAvg with uniform weights;
* ``official_our_inputs``: the official loop and aggregation on OUR inputs (28×28, pixels in [0, 1]) and OUR LeNet-5
  (the same layers for 28×28 input): isolates the loop from the input preparation;
* ``official_norm28`` and ``official_resize32`` (``--arms``): the official loop with normalisation alone (our
  LeNet-5 at 28×28) or resizing alone (the official LeNet-5, pixels in [0, 1]): which of the two matters;
* ``ours``: our pipeline with the same partition, epochs, batch, learning rate, momentum and clip; FedAvg with our
  default weights (n_k/n) and with uniform weights (the official choice), and the logit-averaging ensemble.

``--init`` picks the official arms' initial model: ``own`` (drawn by the official code, as released) or ``shared``
(the one our clients start from, so that every arm of a seed starts from the same weights: one-shot FedAvg depends
on that draw far more than on anything else here). Writes one JSON record (``--out``): settings, per seed and arm the clients' mean test accuracy, FedAvg and ensemble
test accuracy, local-training seconds; the official commit and every shim change. Deterministic apart from the
seconds. Run from the repository root::

    python -m benchmarks.peers.clients --epochs 10 --seeds 0 1 2 --init shared   # -> records/clients-coboost-shared-init.json
    python -m benchmarks.peers.clients --epochs 10 --seeds 0 1 2 --init own      # -> records/clients-coboost-own-init.json
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import yaml

from torch.utils.data import DataLoader

from .official import CPU_DEVICE_NOTE, OFFICIAL, Stub, cpu_device, official_modules

REPO = Path(__file__).resolve().parents[2]
FMNIST_DEBIAN = Path("/usr/share/datasets/fashion-mnist")
# one of our stage modules run with its server's test evaluations timed (eval_timer.py's docstring says how); a script,
# not a module: the scratch folder's PYTHONPATH holds only src/
EVAL_TIMER = str(Path(__file__).with_name("eval_timer.py"))
PEER = "Co-Boosting"
DENSE_SHARED = ("every arm starts its clients from our shared initial model of the run's seed (our cnn2 draw, "
                "loaded into DENSE's CNNMnist under its layer names)")


def arm_text(peer: str, arm: str) -> str:
    """What an official arm feeds which model (the record's settings)."""
    if peer == "DENSE":
        return "28x28, pixels in [0, 1] (DENSE's fmnist transforms), DENSE's CNNMnist, as released"
    side, normalise, model = ARMS[arm]
    return f"{side}x{side}, {'normalised (0.5, 0.5)' if normalise else '[0, 1]'}, {model} LeNet-5"


DENSE_SHIMS = [
    CPU_DEVICE_NOTE,
    "wandb stub: an empty module (wandb is used under __main__ only)",
    "models.vit stub: no ViT (it imports torch._six, removed from torch; only --model vit uses it)",
    "loop_df_fl.DataLoader: num_workers 4 -> 0 (loading only); loop_df_fl.test_loader set (a global of __main__); "
    "loop_df_fl.tqdm: the plain iterator; prints silenced",
    "helpers.datasets.load_data('fmnist'): its transforms, FashionMNIST read from Debian's files instead of /dataset",
    "partition: our partition stage's client indices replace partition_data's draw (the same data for both sides)",
    "clients' accuracy: each client's test accuracy after its last local epoch, as update_weights records it",
]
INITS = {"own": "the official arms draw their own initial model (torch's global RNG after setup_seed(seed)); ours "
                "draws its shared initial model under derive_seed(seed, 'init')",
         "shared": "every arm starts its clients from our shared initial model of the run's seed (the official "
                   "LeNet-5 from our 32x32 draw, its conv3 = our first linear layer reshaped)"}
SHIMS = [
    CPU_DEVICE_NOTE,
    "fl_pretrain.logger: a silent logging.Logger (the script creates it under __main__ only)",
    "fl_pretrain.DataLoader: num_workers 4 -> 0 (loading only; the shuffle order comes from the same torch RNG)",
    "partition: our partition stage's client indices replace partition_data's draw (the same data for both sides)",
    "dataset: torchvision FashionMNIST read from Debian's dataset-fashion-mnist files (no download)",
    "arms with our LeNet-5: the model wrapped to accept Ensemble's return_features=False keyword",
]


class _TakesFeatureFlag(torch.nn.Module):
    """Our model inside the official ``Ensemble``, which calls each member with ``return_features=False``."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x, return_features=False):
        return self.model(x)


def torchvision_root(scratch: Path) -> Path:
    """A folder torchvision's FashionMNIST reads without downloading: Debian's four files, unpacked."""
    raw = scratch / "FashionMNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for gz in FMNIST_DEBIAN.glob("*-ubyte.gz"):
        out = raw / gz.name[:-3]
        if not out.exists():
            with gzip.open(gz, "rb") as f, open(out, "wb") as g:
                shutil.copyfileobj(f, g)
    return scratch


def stage_runner(work: Path, *extra: str) -> Callable[..., None]:
    """``stage(module, *argv)``: one of our stage scripts run in ``work`` (a scratch folder holding its params file)
    as ``dvc repro`` would run it: this checkout's src/ on PYTHONPATH, ``extra`` arguments after ``argv``, no
    progress bars, output hidden."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}

    def stage(*argv: str) -> None:
        launch = [] if argv[0].endswith(".py") else ["-m"]  # a script (a launcher around a stage) or a module
        subprocess.run([sys.executable, *launch, *argv, *extra, "--no-progress"], cwd=work, env=env, check=True,
                       stdout=subprocess.DEVNULL)
    return stage


def fresh_dir(work: Path) -> Path:
    """``work`` emptied for a new run of a seed (whatever an earlier run left there is removed)."""
    if work.exists():
        shutil.rmtree(work)
    return work


def write_record(path: Path, record: dict) -> None:
    """A harness's record as the report reads it (sorted keys, one space of indent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"-> {path}")


def our_workspace(work: Path, overrides: dict) -> Callable[..., None]:
    """``work`` made a scratch project: the root params.yaml (every key a stage reads) with ``overrides`` on top,
    written to ``work/params.yaml``; returns the :func:`stage_runner` for it."""
    work.mkdir(parents=True, exist_ok=True)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params.update(overrides)
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return stage_runner(work)


def our_clients(work: Path, overrides: dict) -> Callable[..., None]:
    """:func:`our_workspace`, then our prepare, partition and train_clients stages for the experiment ``peer``;
    returns the stage runner for the server stages that follow."""
    stage = our_workspace(work, overrides)
    stage("osfl.stages.prepare", "--experiment", "fmnist")
    stage("osfl.stages.partition", "--experiment", "peer")
    stage("osfl.stages.train_clients", "--experiment", "peer")
    return stage


def our_run(work: Path, seed: int, args) -> dict:
    """Our stages in ``work`` (a scratch folder with its own params.yaml), as ``dvc repro`` would run them."""
    stage = our_clients(work, {
        "profile": "paper", "seed": seed, "dataset": "fmnist", "partition": args.partition, "alpha": args.alpha,
        "clients": args.clients, "model": PEERS[args.peer]["model"], "methods": ["fedavg", "ensemble"],
        "data": {"mirror": str(FMNIST_DEBIAN)},
        "local": {"epochs": args.epochs, "batch_size": 128, "lr": 0.01, "momentum": 0.9,
                  "grad_clip": PEERS[args.peer]["grad_clip"], "augment": "none"},
        "runtime": {"threads": args.threads}, "server": {"fedavg": {}, "ensemble": {}},
    })
    exp = ["--experiment", "peer"]
    out = {}
    for method, tag, sets in (("fedavg", "", []), ("fedavg", "uniform", ["--set", "server.fedavg.weighting=uniform"]),
                              ("ensemble", "", [])):
        stage("osfl.stages.server", *exp, "--method", method, f"--tag={tag}", *sets)
        stage("osfl.stages.evaluate", *exp, "--method", method, f"--tag={tag}")
        name = f"{method}-{tag}" if tag else method
        out[name] = json.loads((work / "results" / "peer" / "runs" / f"{name}.json").read_text())["acc_final"]
    clients = json.loads((work / "results" / "peer" / "clients.json").read_text())
    runtime = json.loads((work / "results" / "peer" / "runtime" / "clients.json").read_text())
    return {"client_acc_mean": clients["local_acc_mean"], "fedavg": out["fedavg-uniform"],
            "fedavg_samples": out["fedavg"], "ensemble": out["ensemble"], "local_seconds": runtime["seconds"]}


# The official arms: (image side, normalise with mean = std = 0.5, model). "official" is the code as released
# (its registry's transforms and LeNet-5); the others run its loop on other inputs, to tell apart what matters.
# Per peer: our model and gradient clip matching its code, its partition scheme and client count (its scripts'),
# and the official arms run by default.
PEERS = {
    "Co-Boosting": {"model": "lenet5", "grad_clip": 10.0, "partition": "inner_dirichlet", "clients": 10,
                    "arms": ["official", "official_our_inputs"], "tag": "coboost"},
    "DENSE": {"model": "cnn2", "grad_clip": 0.0, "partition": "dirichlet", "clients": 5, "arms": ["official"],
              "tag": "dense"},  # DENSE feeds 28x28 pixels in [0, 1], as we do: one official arm
}
ARMS = {
    "official": (32, True, "official"),
    "official_our_inputs": (28, False, "ours"),  # our preparation and our LeNet-5 (the same layers for 28x28)
    "official_norm28": (28, True, "ours"),  # normalisation alone
    "official_resize32": (32, False, "official"),  # resizing alone
}


def official_run(partition: dict, seed: int, args, *, arm: str, data_root: Path) -> dict:
    if args.peer == "DENSE":
        return dense_run(partition, seed, args, arm=arm, data_root=data_root)
    return coboost_run(partition, seed, args, arm=arm, data_root=data_root)


def coboost_run(partition: dict, seed: int, args, *, arm: str, data_root: Path) -> dict:
    """The official pre-training on our partition's client indices, inputs and model as ``ARMS[arm]`` says."""
    import logging

    from torchvision import datasets, transforms as T

    side, normalise, model = ARMS[arm]
    torch.set_num_threads(args.threads)
    with official_modules(PEER, "fl_pretrain", "utils_fl", "registry") as (fl, utils_fl, registry), cpu_device():
        fl.logger = logging.getLogger("peer-silent")
        fl.logger.addHandler(logging.NullHandler())
        fl.logger.propagate = False
        loader = fl.DataLoader
        fl.DataLoader = lambda *a, **k: loader(*a, **{**k, "num_workers": 0})
        utils_fl.setup_seed(seed)
        if arm == "official":
            _, train, test = registry.get_dataset(name="fmnist", data_root=str(data_root))
        else:
            tf = T.Compose([*([T.Resize((side, side))] if side != 28 else []), T.ToTensor(),
                            *([T.Normalize((0.5,), (0.5,))] if normalise else [])])
            train = datasets.FashionMNIST(str(data_root), train=True, download=False, transform=tf)
            test = datasets.FashionMNIST(str(data_root), train=False, download=False, transform=tf)
        if model == "official":
            make = lambda: registry.get_model("lenet", num_classes=10)  # noqa: E731
        else:
            from osfl.models import build_model

            make = lambda: build_model("lenet5", (1, side, side), 10)  # noqa: E731
        our_model = model == "ours"
        global_model = make()
        if args.init == "shared":  # our shared initial model (train_clients' initial_states), in their layout
            global_model.load_state_dict(shared_start(seed, our_model))
        hp = argparse.Namespace(local_bs=128, local_lr=0.01, local_ep=args.epochs)
        test_loader = torch.utils.data.DataLoader(test, batch_size=256, shuffle=False, num_workers=0)
        weights, t0 = [], time.perf_counter()
        for k in range(args.clients):
            w, _ = fl.LocalUpdate(hp, train, partition[k], fl.logger).update_weights(copy.deepcopy(global_model), k)
            weights.append(copy.deepcopy(w))
        local_seconds = time.perf_counter() - t0
        test_fn = lambda m: utils_fl.class_test(m, test_loader, fl.logger)[0]  # noqa: E731
        members = [load(make(), w) for w in weights]
        accs = [test_fn(m) for m in members]
        fedavg, ensemble = fedavg_and_ensemble(weights, members, make, utils_fl.average_weights, utils_fl.Ensemble,
                                               test_fn, wrap=_TakesFeatureFlag if our_model else None)
    return {"client_acc_mean": float(np.mean(accs)), "fedavg": fedavg, "ensemble": ensemble,
            "local_seconds": local_seconds}


def load(model: torch.nn.Module, state: dict) -> torch.nn.Module:
    model.load_state_dict(state)
    return model


def fedavg_and_ensemble(weights, members, make, average_weights, Ensemble, test, wrap=None) -> tuple[float, float]:
    """The official FedAvg (its ``average_weights`` into a fresh model) and logit ensemble of the clients'
    ``members``, each tested with the official ``test``; ``wrap`` adapts a member to the official Ensemble's call."""
    fedavg = test(load(make(), average_weights(weights)))
    ensemble = test(Ensemble([wrap(m) if wrap else m for m in members]))
    return float(fedavg), float(ensemble)


def _no_vit(root: Path) -> dict:
    mod = types.ModuleType("models.vit")
    mod.deit_tiny_patch16_224 = None  # the "vit" model only; its module imports torch._six, gone from torch
    return {"models.vit": mod}


#: what importing DENSE's loop_df_fl.py needs (its __main__ block, the only user of both, never runs)
LOOP_DF_FL_STUBS = (
    Stub(("wandb",), lambda root: {"wandb": types.ModuleType("wandb")},
         "wandb stub: an empty module (the script logs to wandb under __main__ only)"),
    Stub(("models.vit",), _no_vit, "models.vit stub: no ViT (it imports torch._six, removed from torch; only "
                                   "--model vit uses it)"))


def dense_run(partition: dict, seed: int, args, *, arm: str, data_root: Path) -> dict:
    """DENSE's official pre-training (``loop_df_fl.py --type pretrain``: its ``LocalUpdate``, ``average_weights``,
    ``Ensemble`` and ``test``, the fmnist data of ``helpers/datasets.py``, ``CNNMnist``) on our partition."""
    from torchvision import datasets

    torch.set_num_threads(args.threads)
    with official_modules("DENSE", "loop_df_fl", "helpers.datasets", "helpers.utils", "models.nets",
                          extra_stubs=LOOP_DF_FL_STUBS) as (loop, ds, utils, nets), cpu_device(), contextlib.redirect_stdout(
                              io.StringIO()):
        ds.datasets = types.SimpleNamespace(FashionMNIST=lambda _root, **kw: datasets.FashionMNIST(
            str(data_root), download=False, **kw))
        train, test = ds.load_data("fmnist")[4:6]  # (X_train, y_train, X_test, y_test, train, test)
        loop.DataLoader = lambda *a, **k: DataLoader(*a, **{**k, "num_workers": 0})
        loop.test_loader = DataLoader(test, batch_size=256, shuffle=False, num_workers=0)
        loop.tqdm = lambda it, *a, **k: it
        utils.setup_seed(seed)
        global_model = nets.CNNMnist()
        if args.init == "shared":
            ours = shared_state(seed, "cnn2", (1, 28, 28))
            names = {"features.0": "layer1.0", "features.1": "layer1.1", "features.4": "layer2.0",
                     "features.5": "layer2.1", "classifier": "fc"}
            global_model.load_state_dict({names[k.rsplit(".", 1)[0]] + "." + k.rsplit(".", 1)[1]: v
                                          for k, v in ours.items()})
        hp = argparse.Namespace(local_bs=128, lr=0.01, local_ep=args.epochs)
        weights, accs, t0 = [], [], time.perf_counter()
        for k in range(args.clients):
            w, local = loop.LocalUpdate(hp, train, partition[k]).update_weights(copy.deepcopy(global_model), k)
            weights.append(copy.deepcopy(w))
            accs.append(float(local[-1]))  # its test accuracy after the last local epoch (the official log)
        local_seconds = time.perf_counter() - t0
        fedavg, ensemble = fedavg_and_ensemble(weights, [load(nets.CNNMnist(), w) for w in weights], nets.CNNMnist,
                                               utils.average_weights, loop.Ensemble,
                                               lambda m: utils.test(m, loop.test_loader)[0])
    return {"client_acc_mean": float(np.mean(accs)), "fedavg": fedavg, "ensemble": ensemble,
            "local_seconds": local_seconds}


def shared_state(seed: int, model: str, shape) -> dict:
    from osfl.clients.cohort import initial_states

    return initial_states([model], shape, 10, seed)[model]


def shared_start(seed: int, our_model: bool) -> dict:
    """Our shared initial LeNet-5 (``initial_states``: the one every client of our run starts from) for 28×28 input,
    or for the official 32×32 input in the official LeNet-5's layout: its third convolution (16 → 120, 5×5, on a
    5×5 map) is our first linear layer (400 → 120), the same weights reshaped."""
    shape = (1, 28, 28) if our_model else (1, 32, 32)
    ours = shared_state(seed, "lenet5", shape)
    if our_model:
        return ours
    return {"features.0.weight": ours["features.0.weight"], "features.0.bias": ours["features.0.bias"],
            "features.3.weight": ours["features.3.weight"], "features.3.bias": ours["features.3.bias"],
            "features.6.weight": ours["classifier.0.weight"].reshape(120, 16, 5, 5),
            "features.6.bias": ours["classifier.0.bias"],
            "fc.0.weight": ours["classifier.2.weight"], "fc.0.bias": ours["classifier.2.bias"],
            "fc.2.weight": ours["classifier.4.weight"], "fc.2.bias": ours["classifier.4.bias"]}


def summary(values: list[float]) -> dict:
    """Mean, sample std (None for one value), n and the values, as the reports compute them (spread.mean_std)."""
    from osfl.reporting.spread import mean_std

    mean, std, n = mean_std(values)
    return {"mean": mean, "std": std if n > 1 else None, "n": n, "values": [round(float(v), 4) for v in values]}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--peer", choices=list(PEERS), default="Co-Boosting")
    p.add_argument("--epochs", type=int, default=10, help="local epochs (official default 100)")
    p.add_argument("--clients", type=int, default=None, help="default: the peer's scripts' (PEERS)")
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--partition", default=None,
                   help="our partition scheme; default the peer's own: inner_dirichlet (Co-Boosting's FedDyn-style "
                        "draw), dirichlet (DENSE's NIID-Bench draw)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--init", choices=("own", "shared"), default="shared",
                   help="the official arms' initial model: own = drawn by the official code from its global RNG "
                        "(as released); shared = ours (the one our clients start from; for the 32x32 official "
                        "LeNet-5, our 32x32 draw): a paired comparison, free of the draw's large effect on FedAvg")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=None,
                   help="the official arms to run (ARMS: the code as released, and its loop on other inputs)")
    p.add_argument("--scratch", type=Path, default=Path(os.environ.get("OSFL_PEERS", "/tmp/peers")) / "work")
    p.add_argument("--out", type=Path, default=None,
                   help="default: benchmarks/peers/records/clients-<coboost|dense>-<init>-init.json")
    args = p.parse_args(argv)
    peer = PEERS[args.peer]
    args.clients = args.clients or peer["clients"]
    args.partition = args.partition or peer["partition"]
    args.arms = args.arms or peer["arms"]
    if args.peer == "DENSE" and args.arms != ["official"]:
        p.error("--arms: DENSE feeds our inputs already; it has the one arm 'official'")
    args.out = args.out or REPO / "benchmarks/peers/records" / f"clients-{peer['tag']}-{args.init}-init.json"
    data_root = torchvision_root(args.scratch / "torchvision")
    arms: dict[str, list[dict]] = {**{a: [] for a in args.arms}, "ours": []}
    for seed in args.seeds:
        work = fresh_dir(args.scratch / f"clients-s{seed}")
        t = time.perf_counter()
        arms["ours"].append(our_run(work, seed, args))
        part = json.loads((work / "data" / "partitions" / "peer" / "partition.json").read_text())
        partition = {k: np.asarray(idx) for k, idx in enumerate(part["client_indices"])}
        for arm in args.arms:
            arms[arm].append(official_run(partition, seed, args, arm=arm, data_root=data_root))
        print(f"seed {seed}: " + "; ".join(f"{a}: FedAvg {r[-1]['fedavg']:.2f}, ensemble {r[-1]['ensemble']:.2f}, "
                                           f"clients {r[-1]['client_acc_mean']:.2f}" for a, r in arms.items())
              + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    record = {
        "harness": "benchmarks/peers/clients.py", "peer": args.peer,
        "layer": f"clients, FedAvg and ensemble; official arms' initial model: {args.init}", "official": OFFICIAL[args.peer].as_dict(),
        "shims": (SHIMS if args.peer == "Co-Boosting" else DENSE_SHIMS) + OFFICIAL[args.peer].stub_notes(), "torch": torch.__version__,
        "settings": {"dataset": "fmnist (Debian dataset-fashion-mnist)", "clients": args.clients,
                     "partition": f"{args.partition}, alpha {args.alpha} (our partition stage, seed = run seed)",
                     "local": {"epochs": args.epochs, "batch_size": 128, "lr": 0.01, "momentum": 0.9,
                               "grad_clip": peer["grad_clip"], "official_default_epochs": 100},
                     "model": "LeNet-5" if args.peer == "Co-Boosting" else "DENSE's CNNMnist = our cnn2", "threads": args.threads, "init": INITS[args.init] if args.peer == "Co-Boosting" or args.init == "own" else DENSE_SHARED,
                     "test": "all 10,000 test images",
                     "arms": {a: arm_text(args.peer, a) for a in args.arms}},
        "seeds": args.seeds,
        "arms": {arm: {key: summary([r[key] for r in rows]) for key in rows[0]} for arm, rows in arms.items()},
    }
    write_record(args.out, record)


if __name__ == "__main__":
    main()
