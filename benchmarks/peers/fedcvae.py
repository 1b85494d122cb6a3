"""Peer run of FedCVAE-Ens (Heinbaugh et al., ICLR 2023): the official code (``ceh-2000/fed_cvae``: its ``Data``
transforms, ``ServerFedCVAEEns`` with its ``UserFedCVAE`` clients, CVAE and ``Classifier``, imported from a scratch
checkout, see ``benchmarks/peers/README.md``) against ours (FedMHO's pipeline: the stages ``prepare``, ``partition``,
``train_part`` for the CVAE-large parts ``cvae_large`` and ``cvae_large_second`` of ``papers/fedmho/params.yaml``, i.e.
all ten clients train FedCVAE's CVAE-large as in the pipeline's ``fedcvae-large10`` run, then ``server --method
fedcvae`` and ``evaluate``), run as a user runs them, on the same Fashion-MNIST client data.

OUR partition stage draws the client indices (``--partition``, default FedMHO's ``dirichlet_feddf``, α 0.5, 10
clients); each client keeps a seeded ``--fraction`` of its indices (a CPU budget: our CVAE-large costs about 9 ms per
image and epoch on one thread, the official CVAE about 0.6 ms; the official tuned setting itself trains on half the data, ``sample_ratio=0.5``), and
the official users get exactly those indices through the shim instead of the official Dirichlet draw. The knobs both
sides have are set to the official best hyper-parameters for Fashion-MNIST (``experiments/best_hyperparameters/
fashion/onefedvae.txt``; the server's Adam lr 1e-3 and batch 32 are hard-coded in
``servers/server_fed_cvae_kd.py``): local Adam lr 1e-3, batch 32, β 1;
server: 5,000 generated samples, 5 classifier epochs, Adam lr 1e-3, batch 32, a freshly initialised classifier,
no cleaning. ``--epochs`` (local CVAE epochs, the official tuned value is 25) is small to fit the CPU budget.

Arms:

* ``official``: the official code as released: ``Data('fashion')``'s transforms (ToTensor, Resize(32): bilinear
  upsampling to 32x32, pixels in [0, 1]), its CVAE (z_dim 10, the tuned value), truncated-normal latents on
  (-3, 3), its server ``Classifier``;
* ``official_our_inputs``: the same official code on our 28x28 pixels zero-padded by 2 to 32x32 (its CVAE needs a
  side divisible by 16 and its classifier's first linear layer is sized for 32x32, so 28x28 cannot go in as they
  are): separates the bilinear resize from everything else;
* ``ours``: our pipeline with the same client data, epochs, optimisers, batch sizes and sample count; its own
  CVAE-large (latent 20), N(0, I) latents, class-balanced squared-count allocation and ``--model`` as the server's
  classifier (default ``cnn_m3``, our registry's closest to the official ``Classifier``: two 32/64-channel
  convolutions with max-pooling, two linear layers; with FedMHO's VGG-9 the classifier training alone, 5,000 images
  x 5 epochs, takes about 13 min on one thread).

Metrics per seed and arm: the server classifier's test accuracy after the last epoch (``final``) and its best over
the classifier epochs (``best``; the official code evaluates before and after training only, the shim also
evaluates after each classifier epoch with the official ``evaluate``, outside the training's random stream), the
seconds of local CVAE training (``local_seconds``) and of the server (``server_seconds``: generation, classifier
training and its per-epoch test evaluations). CVAE clients have no test accuracy on either side, so there is no
``client_acc_mean``. Test: all 10,000 test images. Run from the repository root::

    python -m benchmarks.peers.fedcvae --seeds 0 1 2        # -> benchmarks/peers/records/fedcvae.json
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import time
import types
from pathlib import Path

import numpy as np
import torch
import yaml

from .clients import FMNIST_DEBIAN, REPO, stage_runner, summary, torchvision_root, write_record
from .official import OFFICIAL, Stub, official_modules

PEER = "fed_cvae"
PARTS = ("cvae_large", "cvae_large_second")  # papers/fedmho/params.yaml: CVAE-large on clients 0-4 and 5-9
ARMS = {
    "official": "the official code as released: Data('fashion') transforms (ToTensor, Resize(32) bilinear), pixels "
                "in [0, 1], its CVAE (z_dim as set), truncated-normal latents, its Classifier",
    "official_our_inputs": "the official code on our 28x28 pixels in [0, 1] zero-padded by 2 to 32x32 (ToTensor, "
                           "Pad(2)); otherwise as 'official'",
}


def _stub(name: str, **attrs) -> Stub:
    def build(root):
        m = types.ModuleType(name)
        for k, v in attrs.items():
            setattr(m, k, v)
        return {name: m}
    return build


STUBS = (
    Stub(("torchsummary",), _stub("torchsummary", summary=lambda *a, **k: None),
         "torchsummary stub: summary() does nothing (not installed; called under __main__ only)"),
    Stub(("seaborn",), _stub("seaborn"),
         "seaborn stub: an empty module (not installed; used by plots under __main__ and Data(visualize=True) only)"),
)
SHIMS = [
    "utils.OneHotEncoder: called with sparse_output= where the code passes sparse= (scikit-learn >= 1.4 removed the "
    "keyword; the same dense one-hot array)",
    "data.FashionMNIST: torchvision's FashionMNIST read from Debian's dataset-fashion-mnist files (no download) with "
    "the transforms Data builds",
    "partition: our partition stage's client indices (each client thinned to --fraction, the same for both sides) "
    "replace Data's own split: data_subsets = Subset(train set, indices)",
    "writer: a recorder with TensorBoard SummaryWriter's add_scalar/add_image (no TensorBoard); the accuracies are "
    "read from its 'Global Accuracy/test' scalars",
    "per-epoch test accuracy: the classifier's loader is wrapped so that Server.evaluate also runs after each "
    "classifier epoch, under torch.random.fork_rng (the training's random stream is unchanged)",
    "timing: each user's train() is timed (local_seconds); server_seconds runs from the last user's end to the end "
    "of test()",
    "prints silenced (stdout of the official code)",
    "official_our_inputs arm: the train and test sets' transform set to ToTensor, Pad(2)",
]


# ---------------------------------------------------------------------------------------------------- official arm
class _Writer:
    """Stands for TensorBoard's SummaryWriter: keeps the scalars, drops the images."""

    def __init__(self):
        self.scalars: list[tuple[str, float, int]] = []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, float(value), int(step)))

    def add_image(self, *args, **kwargs):
        pass

    def accuracies(self) -> list[tuple[int, float]]:
        return [(step, v) for tag, v, step in self.scalars if tag == "Global Accuracy/test"]


class _EvalEachEpoch:
    """The official classifier loader; after each full pass (one classifier epoch) ``after_epoch()`` runs."""

    def __init__(self, loader, after_epoch):
        self.loader, self.after_epoch, self.dataset = loader, after_epoch, loader.dataset

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        yield from self.loader
        self.after_epoch()


def _one_hot_encoder(cls):
    def make(*args, sparse=None, **kwargs):
        if sparse is not None:
            kwargs["sparse_output"] = sparse
        return cls(*args, **kwargs)
    return make


def official_run(partition: dict, seed: int, args, *, arm: str, data_root: Path) -> dict:
    """``ServerFedCVAEEns`` as ``main.py --algorithm fedcvaeens --dataset fashion`` builds it, with the tuned
    Fashion-MNIST values, on our partition's client indices."""
    from torch.utils.data import Subset
    from torchvision import datasets, transforms as T

    torch.set_num_threads(args.threads)
    writer = _Writer()
    with official_modules(PEER, "data", "utils", "servers.server_fed_cvae_ens", extra_stubs=STUBS) as (
            data_mod, utils, ens), contextlib.redirect_stdout(io.StringIO()):
        utils.OneHotEncoder = _one_hot_encoder(utils.OneHotEncoder)
        data_mod.FashionMNIST = lambda root, **kw: datasets.FashionMNIST(str(data_root), **{**kw, "download": False})
        random.seed(seed)  # create_users draws each user's model version with random.choice (always 0 here)
        torch.manual_seed(seed)  # main.run_job: torch.manual_seed(args.seed) first, then Data seeds numpy
        d = data_mod.Data(seed, "fashion", args.clients, writer, False, alpha=None, sample_ratio=1.0)
        full = d.train_data[0].dataset  # Data's random_split is discarded: our indices instead
        if arm == "official_our_inputs":
            pad = T.Compose([T.ToTensor(), T.Pad(2)])
            full.transform = d.test_data.transform = pad
        d.train_data = [Subset(full, partition[k].tolist()) for k in range(args.clients)]
        params = {"device": torch.device("cpu"), "num_users": args.clients, "user_fraction": 1.0, "glob_epochs": 1,
                  "local_epochs": args.epochs, "local_LR": args.lr, "use_adam": True, "dataset_name": "fashion",
                  "data_subsets": d.train_data, "data_server": d.test_data, "num_channels": d.num_channels,
                  "num_classes": d.num_classes, "writer": writer}
        s = ens.ServerFedCVAEEns(params, args.z_dim, d.image_size, args.beta, args.samples, args.server_epochs,
                                 (-args.trunc, args.trunc), 1, 0, "0")
        s.create_users()
        clock = {"local": 0.0, "local_end": None}
        for u in s.users:
            def timed(local_epochs, _train=u.train):
                t = time.perf_counter()
                _train(local_epochs)
                clock["local"] += time.perf_counter() - t
                clock["local_end"] = time.perf_counter()
            u.train = timed
        epoch = {"n": 0}

        def after_epoch():
            epoch["n"] += 1
            with torch.random.fork_rng(devices=[]):
                s.evaluate(epoch["n"])

        generate = s.generate_dataset_from_user_decoders
        s.generate_dataset_from_user_decoders = lambda users, n: _EvalEachEpoch(generate(users, n), after_epoch)
        s.train()
        s.test()
        server_seconds = time.perf_counter() - clock["local_end"]
    accs = writer.accuracies()  # (0, before training), (1..E, after each epoch), (1, test() after training)
    trained = [a for step, a in accs[1:-1]]
    if len(trained) != args.server_epochs or abs(accs[-1][1] - trained[-1]) > 1e-9:
        raise RuntimeError(f"official run: unexpected evaluations {accs}")
    return {"final": accs[-1][1], "best": max(trained), "local_seconds": clock["local"],
            "server_seconds": server_seconds}


# ---------------------------------------------------------------------------------------------------- ours
def thin(work: Path, fraction: float, seed: int) -> None:
    """Keep a seeded ``fraction`` of every client's indices in the run's partition file (class counts recomputed)."""
    from osfl.data import load_prepared
    from osfl.partition import Partition, load_partition, save_partition

    path = work / "data" / "partitions" / "peer" / "partition.json"
    part = load_partition(path)
    if fraction >= 1:
        return
    y = load_prepared(work / "data" / "prepared" / "fmnist").y_train
    rng = np.random.default_rng([seed, 38])
    keep = [np.sort(rng.choice(ix, size=max(1, int(round(fraction * len(ix)))), replace=False))
            for ix in part.client_indices]
    counts = np.stack([np.bincount(y[ix], minlength=part.num_classes) for ix in keep])
    save_partition(Partition(part.scheme, {**part.params, "peer_fraction": fraction}, part.seed, part.num_classes,
                             keep, counts, part.num_samples), path)


def our_params(seed: int, args) -> dict:
    """papers/fedmho/params.yaml (FedMHO's pipeline, where our FedCVAE runs) with this run's settings."""
    params = yaml.safe_load((REPO / "papers" / "fedmho" / "params.yaml").read_text())
    cvae = {"epochs": args.epochs, "batch_size": 32, "lr": args.lr, "beta": args.beta, "reduction": "batch_mean"}
    params.update({
        "profile": "paper", "seed": seed, "dataset": "fmnist", "partition": args.partition, "alpha": args.alpha,
        "clients": args.clients, "model": args.model, "methods": ["fedcvae"], "data": {"mirror": str(FMNIST_DEBIAN)},
        "cvae": cvae, "runtime": {**params["runtime"], "threads": args.threads},
        "server": {"fedcvae": {"samples": args.samples, "epochs": args.server_epochs, "lr": 1e-3, "batch_size": 32,
                               "keep": 1.0}},
    })
    parts = {q["name"]: q for q in params["parts"]}
    params["parts"] = [{**parts[name], "cvae": {"lr": args.lr}} for name in PARTS]
    params["per_dataset"] = {}
    return params


def our_run(work: Path, seed: int, args) -> dict:
    """Our stages in ``work`` (a scratch folder ending in papers/fedmho/, with its own params.yaml: the stages admit
    the pipeline's keys from a params file there), as ``dvc repro`` would run them."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "params.yaml").write_text(yaml.safe_dump(our_params(seed, args), sort_keys=False))
    exp = ["--experiment", "peer"]
    stage = stage_runner(work)

    stage("osfl.stages.prepare", "--experiment", "fmnist")
    stage("osfl.stages.partition", *exp)
    thin(work, args.fraction, seed)
    for part in PARTS:
        stage("osfl.stages.train_part", *exp, "--part", part)
    stage("osfl.stages.server", *exp, "--method", "fedcvae", "--parts", ",".join(PARTS))
    stage("osfl.stages.evaluate", *exp, "--method", "fedcvae")
    results = work / "results" / "peer"
    run = json.loads((results / "runs" / "fedcvae.json").read_text())
    local = sum(json.loads((results / "runtime" / f"clients-{p}.json").read_text())["seconds"] for p in PARTS)
    part = json.loads((work / "data" / "partitions" / "peer" / "partition.json").read_text())
    return {"final": run["acc_final"], "best": run["acc_best"], "local_seconds": local,
            "server_seconds": run["server_seconds"], "_partition": part, "_choices": run["choices"]}


# ---------------------------------------------------------------------------------------------------- main
def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epochs", type=int, default=2, help="local CVAE epochs (official tuned value 25)")
    p.add_argument("--fraction", type=float, default=0.1,
                   help="share of each client's indices kept (official tuned sample_ratio 0.5, drawn before its split)")
    p.add_argument("--samples", type=int, default=5000, help="generated samples (official tuned 5000)")
    p.add_argument("--server-epochs", type=int, default=5, help="server classifier epochs (official tuned 5)")
    p.add_argument("--z-dim", type=int, default=10, help="official CVAE latent size (tuned 10; ours is fixed at 20)")
    p.add_argument("--trunc", type=float, default=3.0, help="official latents: truncnorm on (-trunc, trunc) (tuned 3)")
    p.add_argument("--lr", type=float, default=1e-3, help="local Adam learning rate (official 1e-3)")
    p.add_argument("--beta", type=float, default=1.0, help="KL weight (official 1.0)")
    p.add_argument("--model", default="cnn_m3", help="our server classifier (FedMHO: vgg9, ~13 min per seed)")
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--partition", default="dirichlet_feddf", help="our partition scheme (FedMHO's: dirichlet_feddf)")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(ARMS))
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--scratch", type=Path, default=Path(os.environ.get("OSFL_PEERS", "/tmp/peers")) / "work")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks/peers/records/fedcvae.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    data_root = torchvision_root(args.scratch / "torchvision")
    arms: dict[str, list[dict]] = {**{a: [] for a in args.arms}, "ours": []}
    sizes, choices = {}, None
    for seed in args.seeds:
        top = args.scratch / f"fedcvae-s{seed}"
        if top.exists():
            shutil.rmtree(top)
        work = top / "papers" / "fedmho"
        t = time.perf_counter()
        ours = our_run(work, seed, args)
        part, choices = ours.pop("_partition"), ours.pop("_choices")
        sizes[seed] = part["sizes"]
        arms["ours"].append(ours)
        partition = {k: np.asarray(idx) for k, idx in enumerate(part["client_indices"])}
        for arm in args.arms:
            arms[arm].append(official_run(partition, seed, args, arm=arm, data_root=data_root))
        print(f"seed {seed}: " + "; ".join(f"{a}: final {r[-1]['final']:.2f}, best {r[-1]['best']:.2f}, local "
                                           f"{r[-1]['local_seconds']:.0f} s, server {r[-1]['server_seconds']:.0f} s"
                                           for a, r in arms.items())
              + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    record = {
        "method": "FedCVAE-Ens", "harness": "benchmarks/peers/fedcvae.py", "peer": "FedCVAE-Ens",
        "layer": "FedCVAE-Ens end to end: local CVAE training, generation from the clients' decoders, server "
                 "classifier", "official": OFFICIAL[PEER].as_dict(),
        "shims": SHIMS + [s.note for s in STUBS] + OFFICIAL[PEER].stub_notes(), "torch": torch.__version__,
        "settings": {
            "dataset": "fmnist (Debian dataset-fashion-mnist)", "clients": args.clients,
            "partition": f"{args.partition}, alpha {args.alpha} (our partition stage, seed = run seed), each client "
                         f"thinned to a seeded {args.fraction} of its indices; sizes per seed: {sizes}",
            "local": {"epochs": args.epochs, "optimizer": "adam", "lr": args.lr, "batch_size": 32, "beta": args.beta,
                      "official_tuned_epochs": 25, "official_tuned_sample_ratio": 0.5},
            "server": {"samples": args.samples, "epochs": args.server_epochs, "optimizer": "adam", "lr": 1e-3,
                       "batch_size": 32, "classifier_init": "fresh (each side its own draw)"},
            "official": {"z_dim": args.z_dim, "latents": f"truncnorm(-{args.trunc}, {args.trunc})",
                         "allocation": "per user int(n_k/n * samples) (last user the rest), labels drawn from the "
                                       "user's label pmf", "classifier": "official Classifier (32x32)",
                         "cvae": "ConditionalEncoder/ConditionalDecoder (version 0), BatchNorm, encoder not label-"
                                 "conditioned, BCE-with-logits"},
            "ours": {"parts": list(PARTS), "cvae": "cvae_large (latent 20, label-conditioned encoder, sigmoid "
                                                   "decoder, BCE)", "latents": "N(0, I)",
                     "allocation": "floor(samples/C) per class, split over decoders by squared class counts",
                     "classifier": args.model, "server_choices": choices},
            "threads": args.threads, "test": "all 10,000 test images",
            "arms": {a: ARMS[a] for a in args.arms},
        },
        "seeds": args.seeds,
        "arms": {arm: {key: summary([r[key] for r in rows]) for key in rows[0]} for arm, rows in arms.items()},
    }
    write_record(args.out, record)


if __name__ == "__main__":
    main()
