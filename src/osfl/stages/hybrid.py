"""Stage `hybrid@<run>-<method>`: HFLDD's step 5 and its baselines, T rounds of FedAvg-family training in memory
(SPEC §1.6, §2; :mod:`osfl.protocols.rounds`, groups from :mod:`osfl.protocols.hybrid`):

* ``hfldd``: the H headers of results/<run>/clustering.json, each on its own data plus its members' distilled images
  (models/<run>/kip/), FedAvg among them;
* ``fedavg``: all clients, FedAvg;
* ``fedseq``: ``hybrid.superclients`` chains of clients trained in turn (order reshuffled every round), FedAvg among
  the chains;
* ``cl``: centralized learning, one epoch over all the training data per round (batch ``hybrid.cl_batch_size``).

Every method starts from the shared initial model w^0 (the one the clients pre-trained from). T and the local epochs
are scaled by the profile. The test accuracy after every aggregation is the curve. A checkpoint
(models/<run>/rounds/<method>/checkpoint.pt, a persistent DVC output) is kept every ``hybrid.checkpoint_every``
rounds: a run killed mid-way resumes where it stopped, and a larger T continues a finished run, with the same result
as a run from round 0. Writes results/<run>/rounds/<method>.json (the curve, what was computed) and
results/<run>/runtime/rounds-<method>.json (this call's seconds, per round, and the host).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..clients.cohort import initial_states
from ..clients.upload import read_uploads
from ..clustering import Clustering
from ..config import scaled_epochs
from ..cpu_profile import server_guard, warn_failed
from ..evaluation import accuracy
from ..models import build_model
from ..runconfig import load_run
from ..protocols.hybrid import (METHODS, HybridSettings, central_group, client_groups, client_participants,
                                header_groups, superclient_groups)
from ..protocols.rounds import LocalSpec, run_rounds
from ..runtime import derive_seed, read_json, write_json
from .client_side import client_data
from .common import parser, require_input, run_stage, test_tensors
from .records import runtime_record, write_runtime_record


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--method", required=True, choices=METHODS, help="who trains together (module docstring)")
    p.add_argument("--stop-after", type=int, default=None, metavar="ROUND",
                   help="stop after this round (a checkpoint is written; the next run resumes there)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec, profile, seed, device = cfg.dataset, cfg.profile, cfg.seed, cfg.device
    h = cfg.settings(HybridSettings, "hybrid")
    rounds, epochs = scaled_epochs(h.T, profile), scaled_epochs(h.epochs, profile)
    d = client_data(paths, cfg)
    clients = client_participants(d.partition.client_indices, d.x, d.y)
    local = LocalSpec(epochs, h.batch_size, h.lr, h.momentum, h.weight_decay)
    extra = {}
    if args.method == "hfldd":
        clustering = Clustering.from_dict(read_json(require_input(paths.results / "clustering.json", "cluster")))
        distilled = {u.client_id: (torch.from_numpy(u.array("images")), torch.from_numpy(u.array("labels")))
                     for u in read_uploads(require_input(paths.uploads("kip"), "kip"))}
        groups = header_groups(clustering, clients, distilled)
        extra = {"H": len(groups), "distilled_images": sum(len(v[1]) for v in distilled.values())}
    elif args.method == "fedavg":
        groups = client_groups(clients)
    elif args.method == "fedseq":
        groups = superclient_groups(clients, h.superclients, np.random.default_rng(derive_seed(seed, "fedseq")))
        extra = {"superclients": [[p.name for p in g] for g in groups]}
    else:
        groups = central_group(clients)
        local = LocalSpec(1, h.cl_batch_size, h.lr, h.momentum, h.weight_decay)
    model = build_model(cfg.model, spec.shape, spec.num_classes, cfg.inputs.norm()).to(device)
    model.load_state_dict(initial_states([cfg.model], spec.shape, spec.num_classes, seed, cfg.inputs.norm())[cfg.model])
    x_test, y_test = test_tensors(d.data, profile, derive_seed(seed, "test-subset"), device)
    ckpt = Path("models") / paths.name / "rounds" / args.method / "checkpoint.pt"
    res = run_rounds(model, groups, rounds=rounds, local=local, seed=derive_seed(seed, "hybrid", args.method),
                     evaluate=lambda m: accuracy(m, x_test, y_test), weighting=h.weighting,
                     shuffle=args.method == "fedseq", checkpoint=ckpt, checkpoint_every=h.checkpoint_every,
                     # the inputs' preparation too: the initial model's digest cannot tell a normalising model
                     signature={"method": args.method, "model": cfg.model, **cfg.inputs.entry()},
                     stop_after=args.stop_after,
                     batched=cfg.runtime.batched(device),
                     progress=not args.no_progress, desc=f"{args.method} rounds")
    curve = res.curve
    guards = server_guard(cfg.guard_floors, max((p["test_acc"] for p in curve), default=0.0), spec.num_classes)
    if guards:  # the regime guard: a run whose curve never leaves chance feeds no verdict
        warn_failed(args.method, guards)
    write_json(paths.results / "rounds" / f"{args.method}.json", {
        **({"guards": guards} if guards else {}), **cfg.inputs.entry(),
        "method": args.method, "settings": h.as_dict(), "rounds": rounds, "rounds_run": len(curve),
        "local": vars(local), "profile": profile.name, "groups": [[p.n for p in g] for g in groups], **extra,
        "curve": curve, "acc_final": curve[-1]["test_acc"] if curve else None, "resumed_from": res.resumed_from,
        "test_samples": int(len(y_test)), "runtime": cfg.runtime.in_force(device)})
    write_runtime_record(runtime_record(paths, f"rounds-{args.method}"), res.seconds, device, cfg.runtime,
                         rounds_timed=[res.resumed_from + 1, len(curve)], round_seconds=res.round_seconds)
    print(f"{args.method}: {len(curve)}/{rounds} rounds ({res.resumed_from} from the checkpoint), "
          f"final test accuracy {curve[-1]['test_acc'] if curve else float('nan'):.2f}")


if __name__ == "__main__":
    main()
