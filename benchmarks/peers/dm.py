"""Peer run of distribution matching (DM, Zhao & Bilen), the client step of OFedED: the official loop
(``main_DM.py`` of VICO-UoE/DatasetCondensation, run through its own ``main``) against ours
(:func:`osfl.condense.distribution_matching`) on the same data and the same initial images.

Per seed, the whole Fashion-MNIST training set (60,000 images, the official ``get_dataset('FashionMNIST')``:
28x28, normalised with mean 0.2861, std 0.3530) is condensed into ``--ipc`` images per class with ``--iterations``
image updates on each side, both starting from the SAME real images (ours draws them; the official ``get_images``
returns the same dataset indices for its initialisation through the shim). Then one evaluation network (the official
``ConvNet``, drawn by the official ``get_network`` from the same seed for every arm) is trained on each synthetic set
by the official ``evaluate_synset`` (SGD lr 0.01, momentum 0.9, weight decay 5e-4, lr × 0.1 after half the epochs,
batch 256, DSA augmentation as ``main_DM.py`` evaluates) and tested on all 10,000 test images. Arms:

* ``official``: ``main_DM.main`` with ``sys.argv`` set (``--dataset FashionMNIST --model ConvNet --init real
  --num_eval 0 --Iteration K-1``: the official loop runs ``Iteration + 1`` updates), run until its final
  ``data_save.append`` (the last iteration), whose locals give the synthetic set and the last loss;
* ``ours``: ``distribution_matching`` on the same normalised tensors, one layer (the ConvNet's ``features``, which is
  what the official ``embed`` returns), one stage of K steps, lr 1, momentum 0.5, the real batch, DSA (all six ops,
  the official strategy), and a fresh random ConvNet every step like the official loop: the network handed to ours
  is re-drawn by the official ``get_network`` in ours' ``on_step`` callback, from the same clock, so step i of both
  arms matches against the same network;
* ``ours_fixed_net`` (``--arms``): ours as it runs when handed one network: the first of those networks for all
  K steps (OFedED hands it the clients' trained models, fixed);
* ``init`` (``--arms``): the shared initial real images, not condensed (what K steps add).

Metrics per arm: ``final`` (test accuracy, %), ``condense_seconds`` (the loop: official from its first network draw
to its last update; ours the ``distribution_matching`` call), ``eval_seconds``, ``loss_first``, ``loss_last`` and
``loss_last10_mean`` (the DM loss Σ_c ‖mean embed(real_c) − mean embed(syn_c)‖², summed over classes as ours
records it, at the first and last update and averaged over the last 10; the official code prints it divided by the
class count every 10 iterations: the harness reads each iteration's ``loss`` from main's frame when main calls
``get_network`` for the next iteration, and the last from run_until's locals). Run from the repository root::

    python -m benchmarks.peers.dm --seeds 0 1 2    # -> benchmarks/peers/records/dm.json
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch

from .clients import torchvision_root, write_record
from .official import OFFICIAL, run_until, statement_line

REPO = Path(__file__).resolve().parents[2]
PEER = "DatasetCondensation"
ARMS = ("official", "ours", "ours_fixed_net", "init")
STRATEGY = "color_crop_cutout_flip_scale_rotate"  # main_DM.py's default --dsa_strategy
SHIMS = [
    "main_DM.main: sys.argv set to --dataset FashionMNIST --model ConvNet --ipc IPC --eval_mode S --num_exp 1 "
    "--num_eval 0 --Iteration K-1 --lr_img 1.0 --batch_real B --init real --dsa_strategy "
    f"{STRATEGY} --data_path (Debian's Fashion-MNIST unpacked for torchvision, no download) --save_path (scratch)",
    "main_DM.main run with run_until up to its final data_save.append (the last iteration): the synthetic set and "
    "the last loss are read from its locals (the torch.save of the result file is not reached); the earlier "
    "iterations' losses are read (not changed) from main's frame by the get_network wrapper below",
    "clock: utils.time.time (get_network's torch seed) and main_DM.time.time (the DSA seeds) are counters, the n-th "
    "call returning (start + n + 0.5) ms, so int(time()*1000) % 100000 = start + n: every network and DSA seed is "
    "reproducible (as released they come from the wall clock); the network counter starts at the same value for "
    "the official loop and for ours' re-drawn networks, and is reset to one evaluation value before each arm's "
    "evaluation network is drawn",
    "initial images: main_DM.np is numpy but for np.random.permutation, whose first <classes> calls (the "
    "initialisation's get_images(c, ipc)) return the dataset indices of ours' initial images of class c; numpy's "
    "global RNG (the real batches) is seeded with the run seed (the official code never seeds it)",
    "DiffAugment (main_DM's and utils' names) wrapped to return a copy of its result in torch.contiguous_format "
    "strides: with this torch, rand_crop's permute leaves a 1-channel batch with channels-last strides (which "
    "count as contiguous), the ConvNet's features come out channels-last and ConvNet.embed/forward's "
    "out.view(N, -1) raises 'view size is not compatible'; the values are unchanged",
    "main_DM.get_network wrapped: notes the time of its first call (the loop's start, for condense_seconds), checks "
    "that the initialisation took the queued indices, reads the previous iteration's loss from main's frame; then "
    "calls utils.get_network",
    "ours: the network handed to distribution_matching is re-drawn (official get_network, load_state_dict) in its "
    "on_step callback, so that ours too matches against a fresh random ConvNet each step",
    "evaluation: the official evaluate_synset on an args namespace (device cpu, lr_net 0.01, epoch_eval_train E, "
    "batch_train 256, dsa True with the strategy above and ParamDiffAug()), as main_DM.main would call it; its "
    "prints silenced",
]


# ---------------------------------------------------------------------------------------------------- shims
class Clock:
    """A stand-in for ``time.time``: the n-th call returns (start + n + 0.5) / 1000 s, so the official
    ``int(time.time() * 1000) % 100000`` seeds are start, start + 1, ..."""

    def __init__(self, start: int):
        self.n = int(start)

    def __call__(self) -> float:
        value = (self.n + 0.5) / 1000.0
        self.n += 1
        return value


def time_module(clock: Clock) -> types.ModuleType:
    """The ``time`` module with ``time.time`` replaced by ``clock`` (strftime, localtime, ... unchanged)."""
    m = types.ModuleType("time")
    m.__dict__.update({k: v for k, v in time.__dict__.items() if not k.startswith("__")})
    m.time = clock
    return m


class _Random:
    """numpy.random, but ``permutation`` hands out the queued index arrays first."""

    def __init__(self, queue: list[np.ndarray]):
        self.queue = list(queue)

    def permutation(self, x):
        if self.queue:
            idx = self.queue.pop(0)
            if not set(idx.tolist()) <= set(np.asarray(x).tolist()):
                raise RuntimeError("the queued initial indices are not of the class get_images asked for")
            return idx
        return np.random.permutation(x)

    def __getattr__(self, name):
        return getattr(np.random, name)


class _Numpy:
    """numpy with ``random`` = :class:`_Random` (main_DM's ``np``)."""

    def __init__(self, queue: list[np.ndarray]):
        self.random = _Random(queue)

    def __getattr__(self, name):
        return getattr(np, name)


# ---------------------------------------------------------------------------------------------------- helpers
def clock_starts(seed: int) -> tuple[int, int, int]:
    """(networks, DSA, evaluation) clock starts of a seed, in separate ranges of the official 0 .. 99999 seeds."""
    base = (seed * 1000) % 30000
    return base, 30000 + base, 60000 + seed % 30000


def initial_indices(x: torch.Tensor, y: torch.Tensor, init: torch.Tensor, ipc: int, classes: int) -> list[np.ndarray]:
    """For each class c, the dataset indices of ours' initial images of c (exact matches in ``x``)."""
    out = []
    for c in range(classes):
        members = (y == c).nonzero().flatten()
        pool = x[members].flatten(1)
        idx = []
        for img in init[c * ipc:(c + 1) * ipc]:
            hit = (pool == img.flatten()).all(1).nonzero().flatten()
            if len(hit) == 0:
                raise RuntimeError(f"an initial image of class {c} is not in the training set")
            idx.append(int(members[hit[0]]))
        out.append(np.asarray(idx, dtype=np.int64))
    return out


# ---------------------------------------------------------------------------------------------------- one seed
def run_seed(seed: int, args, data_root: Path, scratch: Path) -> dict[str, dict]:
    from osfl.condense import DSA_OPS, distribution_matching
    from osfl.runtime import derive_seed

    torch.set_num_threads(args.threads)
    net_start, dsa_start, eval_start = clock_starts(seed)
    out: dict[str, dict] = {}
    with official_dm() as (dm, utils):
        channel, im_size, classes, _, _, _, dst_train, _, testloader = utils.get_dataset("FashionMNIST",
                                                                                        str(data_root))
        # the training set as main_DM.main organises it (the same transform, the same order)
        x = torch.cat([dst_train[i][0].unsqueeze(0) for i in range(len(dst_train))])
        y = torch.tensor([int(t) for t in dst_train.targets], dtype=torch.long)
        common = dict(ipc=args.ipc, layers=["features"], lr=1.0, momentum=0.5, real_batch=args.batch_real,
                      augment_ops=DSA_OPS, init="real")
        gen_seed = derive_seed(seed, "condense", 0)

        def network():
            return utils.get_network("ConvNet", channel, classes, im_size)

        # ours' initial images: its own draw (no step), then their dataset indices for the official side
        utils.time = time_module(Clock(net_start))
        init = distribution_matching([network()], x, y, iterations=[0], gen=torch.Generator().manual_seed(gen_seed),
                                     **common).images
        picks = initial_indices(x, y, init, args.ipc, classes)
        labels = torch.arange(classes).repeat_interleave(args.ipc)
        sets: dict[str, tuple[torch.Tensor, dict]] = {}

        if "official" in args.arms:
            sets["official"] = official_condense(dm, utils, seed, args, picks, data_root, scratch, net_start,
                                                 dsa_start)[:2]
        for arm in ("ours", "ours_fixed_net"):
            if arm not in args.arms:
                continue
            utils.time = time_module(Clock(net_start))
            net = network()  # network 0: the official loop's first
            redraw = (lambda *_: net.load_state_dict(network().state_dict())) if arm == "ours" else None
            t = time.perf_counter()
            res = distribution_matching([net], x, y, iterations=[args.iterations],
                                        gen=torch.Generator().manual_seed(gen_seed), on_step=redraw, **common)
            seconds = time.perf_counter() - t
            if not torch.equal(res.labels, labels):
                raise RuntimeError("ours' labels are not class-major 0 .. 9")
            sets[arm] = (res.images, {"condense_seconds": seconds, **loss_metrics(res.losses)})
        if "init" in args.arms:
            sets["init"] = (init, {})

        for arm in args.arms:
            images, metrics = sets[arm]
            utils.time = time_module(Clock(eval_start))  # the same evaluation network and RNG stream for every arm
            net = network()
            eval_args = argparse.Namespace(device="cpu", lr_net=0.01, epoch_eval_train=args.eval_epochs,
                                           batch_train=256, dsa=True, dsa_strategy=STRATEGY,
                                           dsa_param=utils.ParamDiffAug(), dc_aug_param=None)
            t = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                _, _, acc = utils.evaluate_synset(0, net, images.detach().clone(), labels.clone(), testloader,
                                                  eval_args)
            out[arm] = {"final": 100.0 * float(acc), **metrics, "eval_seconds": time.perf_counter() - t}
    return out


def official_condense(dm, utils, seed: int, args, picks, data_root: Path, scratch: Path, net_start: int,
                      dsa_start: int) -> tuple[torch.Tensor, dict, list[int]]:
    """``main_DM.main`` as released with the shims above: (its final synthetic images, metrics, the dataset indices
    its initialisation used)."""
    utils.time = time_module(Clock(net_start))
    dm.time = time_module(Clock(dsa_start))
    dm.np = _Numpy(picks)
    np.random.seed(seed)
    started: list[float] = []
    losses: list[float] = []
    get_network = utils.get_network

    def noting(*a, **k):
        """Called by main at the start of every iteration: notes the loop's start, and reads (never changes) the
        previous iteration's loss from main's frame."""
        if not started:
            if dm.np.random.queue:
                raise RuntimeError("the official initialisation did not take the shared initial indices")
            started.append(time.perf_counter())
        else:
            losses.append(float(sys._getframe(1).f_locals["loss"].detach()))
        return get_network(*a, **k)

    dm.get_network = noting
    save = scratch / f"dm-s{seed}"
    save.mkdir(parents=True, exist_ok=True)
    argv = ["main_DM.py", "--dataset", "FashionMNIST", "--model", "ConvNet", "--ipc", str(args.ipc), "--eval_mode",
            "S", "--num_exp", "1", "--num_eval", "0", "--Iteration", str(args.iterations - 1), "--lr_img", "1.0",
            "--batch_real", str(args.batch_real), "--init", "real", "--dsa_strategy", STRATEGY, "--data_path",
            str(data_root), "--save_path", str(save)]
    saved_argv, sys.argv = sys.argv, argv
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            loc = run_until(dm.main, "data_save.append(")
        end = time.perf_counter()
    finally:
        sys.argv = saved_argv
        dm.get_network = get_network
    losses.append(float(loc["loss"].detach()))
    if len(losses) != args.iterations:
        raise RuntimeError(f"the official loop ran {len(losses)} updates, expected {args.iterations}")
    return loc["image_syn"].detach().clone(), {"condense_seconds": end - started[0], **loss_metrics(losses)}, \
        [int(i) for p in picks for i in p]


def loss_metrics(losses: list[float]) -> dict:
    """The DM loss (summed over classes) at the first and the last update, and its mean over the last 10."""
    return {"loss_first": losses[0], "loss_last": losses[-1], "loss_last10_mean": float(np.mean(losses[-10:]))}


@contextlib.contextmanager
def official_dm():
    from .official import official_modules

    with official_modules(PEER, "main_DM", "utils") as (dm, utils), warnings_quiet():
        augment = utils.DiffAugment

        def contiguous(*a, **k):  # the values unchanged; the memory layout torch < 1.x gave (SHIMS)
            return augment(*a, **k).clone(memory_format=torch.contiguous_format)

        dm.DiffAugment = utils.DiffAugment = contiguous
        yield dm, utils


@contextlib.contextmanager
def warnings_quiet():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy.ndimage.interpolation, torch.meshgrid indexing, affine_grid
        yield


def lines(dm) -> dict[str, str]:
    """Where the official loop does what (main_DM.py:line), for the record."""
    f = dm.main
    return {"network_per_iteration": f"main_DM.py:{statement_line(f, 'net = get_network(args.model')}",
            "loss": f"main_DM.py:{statement_line(f, 'loss += torch.sum((torch.mean(output_real, dim=0)')}",
            "image_optimiser": f"main_DM.py:{statement_line(f, 'optimizer_img = torch.optim.SGD(')}"}


# ---------------------------------------------------------------------------------------------------- main
def summary(values: list) -> dict:
    from .clients import summary as s

    return s([float(v) for v in values])


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.peers.dm", description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--ipc", type=int, default=10, help="images per class (main_DM.get_loops knows 1, 10, 20, 30, 40, "
                                                       "50; official default 50)")
    p.add_argument("--iterations", type=int, default=30,
                   help="K image updates on each side (official --Iteration K-1; official default 20000)")
    p.add_argument("--batch-real", type=int, default=64, help="real images per class and step (official 256)")
    p.add_argument("--eval-epochs", type=int, default=50,
                   help="evaluate_synset's epochs (official epoch_eval_train 1000)")
    p.add_argument("--arms", nargs="+", choices=ARMS, default=["official", "ours"],
                   help="ours_fixed_net: ours with one network for all steps; init: the initial images, not condensed "
                        "(each about 1/4 more time)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--scratch", type=Path, default=Path(os.environ.get("OSFL_PEERS", "/tmp/peers")) / "work")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks/peers/records/dm.json")
    args = p.parse_args(argv)
    if args.iterations < 1:
        p.error("--iterations must be >= 1")
    OFFICIAL[PEER].require()
    at = OFFICIAL[PEER].checked_out()
    if at != OFFICIAL[PEER].commit:
        print(f"warning: the checkout is at {at}, the harness was written against {OFFICIAL[PEER].commit}",
              file=sys.stderr)
    data_root = torchvision_root(args.scratch / "torchvision")
    rows: dict[str, list[dict]] = {a: [] for a in args.arms}
    for seed in args.seeds:
        t = time.perf_counter()
        res = run_seed(seed, args, data_root, args.scratch)
        for arm in args.arms:
            rows[arm].append(res[arm])
        print(f"seed {seed}: " + "; ".join(
            f"{a}: {r['final']:.2f}%" + (f" (condense {r['condense_seconds']:.0f} s, loss {r['loss_first']:.3g} -> "
                                         f"{r['loss_last']:.3g})" if "condense_seconds" in r else "")
            for a, r in res.items()) + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    with official_dm() as (dm, _):
        where = lines(dm)
    record = {
        "method": "DM", "harness": "benchmarks/peers/dm.py", "peer": PEER,
        "layer": "distribution matching (OFedED's client condensation), the whole Fashion-MNIST training set as "
                 "the client's data",
        "official": OFFICIAL[PEER].as_dict(), "shims": SHIMS + OFFICIAL[PEER].stub_notes(),
        "torch": torch.__version__,
        "settings": {
            "dataset": "fmnist (Debian dataset-fashion-mnist), the whole training set (60,000), the official "
                       "get_dataset('FashionMNIST'): 28x28, normalised (mean 0.2861, std 0.3530), for every arm",
            "ipc": args.ipc, "iterations": args.iterations, "official_Iteration_arg": args.iterations - 1,
            "batch_real": args.batch_real, "lr_img": 1.0, "momentum_img": 0.5, "dsa": STRATEGY,
            "init": "real: the same dataset indices on both sides (ours' draw, torch.randint from "
                    "derive_seed(seed, 'condense', 0))",
            "embedding": "the official ConvNet (width 128, depth 3, instancenorm, avgpooling), a fresh random one "
                         "per step (official get_network); matched layer: its features (= embed)",
            "eval": {"network": "the official ConvNet, the same draw for every arm of a seed", "epochs":
                     args.eval_epochs, "lr": 0.01, "momentum": 0.9, "weight_decay": 5e-4, "batch": 256,
                     "augmentation": f"DSA {STRATEGY}", "function": "official evaluate_synset"},
            "official_defaults": {"Iteration": 20000, "ipc": 50, "batch_real": 256, "epoch_eval_train": 1000},
            "official_lines": where, "test": "all 10,000 test images", "threads": args.threads,
            "arms": {"official": "main_DM.main as released, on the shared initial images",
                     "ours": "osfl.condense.distribution_matching, one layer, one stage, a fresh network per step",
                     "ours_fixed_net": "ours with the first network for every step",
                     "init": "the shared initial images, not condensed"},
        },
        "seeds": args.seeds,
        "arms": {arm: {k: summary([r[k] for r in rs]) for k in rs[0] if rs[0][k] is not None}
                 for arm, rs in rows.items()},
    }
    write_record(args.out, record)


if __name__ == "__main__":
    main()
