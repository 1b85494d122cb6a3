"""Stage `ksweep@<run>-k<K>`: one point of HFLDD's Table IV (SPEC §1.4, Table IV): the run's clients clustered again
with K homogeneous clusters (``clustering.K``, set per point), then HFLDD's T rounds among the new headers.

Everything but K is the run's: its soft labels (models/<run>/soft_labels/), the seeds of stage cluster@ (K-Means'
``derive_seed(seed, "kmeans")``, the header draw's ``derive_seed(seed, "cluster-sampling")``), its distilled sets (a
client's set depends only on its data and generator: models/<run>/kip/ for the members of the run's clustering,
models/<run>/kip_headers/ for its headers, stage kip_headers@) and HFLDD's rounds as stage hfldd@ runs them (the
shared initial model, ``derive_seed(seed, "hybrid", "hfldd")``). At the run's own K the point is hfldd@'s run, curve
for curve. Writes results/<run>/ksweep/k<K>.json (the clustering, the curve, what was computed),
results/<run>/runtime/ksweep-k<K>.json (seconds and host) and a resumable checkpoint under
models/<run>/rounds/hfldd-k<K>/.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..clients.cohort import initial_states
from ..clients.upload import read_uploads
from ..clustering import ClusteringSettings, cluster_clients
from ..config import scaled_epochs
from ..cpu_profile import server_guard, warn_failed
from ..evaluation import accuracy
from ..models import build_model
from ..protocols.hybrid import HybridSettings, client_participants, header_groups
from ..protocols.rounds import LocalSpec, run_rounds
from ..runconfig import load_run
from ..runtime import derive_seed, write_json
from .client_side import client_data
from .common import parser, require_input, run_stage, test_tensors
from .records import runtime_record, write_runtime_record


def main(argv=None) -> None:
    run_stage(_run, parser(__doc__), argv)


def _distilled(paths) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Every client's distilled set: the members' (stage kip@) and the headers' (stage kip_headers@)."""
    out = {}
    for upload, stage in (("kip", "kip"), ("kip_headers", "kip_headers")):
        for u in read_uploads(require_input(paths.uploads(upload), stage)):
            out[u.client_id] = (torch.from_numpy(u.array("images")), torch.from_numpy(u.array("labels")))
    return out


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec, profile, seed, device = cfg.dataset, cfg.profile, cfg.seed, cfg.device
    settings = cfg.settings(ClusteringSettings, "clustering")
    soft = np.stack([u.array("soft_labels") for u in read_uploads(require_input(paths.uploads("soft_labels"),
                                                                                "soft_labels"))
                     if u.kind == "soft_labels"])
    clustering, _ = cluster_clients(soft, settings.K, derive_seed(seed, "kmeans"),
                                    np.random.default_rng(derive_seed(seed, "cluster-sampling")), settings.eps)
    h = cfg.settings(HybridSettings, "hybrid")
    rounds, epochs = scaled_epochs(h.T, profile), scaled_epochs(h.epochs, profile)
    d = client_data(paths, cfg)
    groups = header_groups(clustering, client_participants(d.partition.client_indices, d.x, d.y), _distilled(paths))
    model = build_model(cfg.model, spec.shape, spec.num_classes, cfg.inputs.norm()).to(device)
    model.load_state_dict(initial_states([cfg.model], spec.shape, spec.num_classes, seed,
                                         cfg.inputs.norm())[cfg.model])
    x_test, y_test = test_tensors(d.data, profile, derive_seed(seed, "test-subset"), device)
    point = f"k{settings.K}"
    res = run_rounds(model, groups, rounds=rounds, local=LocalSpec(epochs, h.batch_size, h.lr, h.momentum,
                                                                   h.weight_decay),
                     seed=derive_seed(seed, "hybrid", "hfldd"), evaluate=lambda m: accuracy(m, x_test, y_test),
                     weighting=h.weighting, checkpoint=Path("models") / paths.name / "rounds" / f"hfldd-{point}"
                     / "checkpoint.pt", checkpoint_every=h.checkpoint_every,
                     signature={"method": "hfldd", "K": settings.K, "model": cfg.model, **cfg.inputs.entry()},
                     batched=cfg.runtime.batched(device), progress=not args.no_progress,
                     desc=f"HFLDD K = {settings.K} rounds")
    curve = res.curve
    guards = server_guard(cfg.guard_floors, max((p["test_acc"] for p in curve), default=0.0), spec.num_classes)
    if guards:
        warn_failed(f"HFLDD K = {settings.K}", guards)
    write_json(paths.results / "ksweep" / f"{point}.json", {
        **({"guards": guards} if guards else {}), **cfg.inputs.entry(), "method": "hfldd", "K": settings.K,
        "clustering": {**clustering.as_dict(), "settings": settings.as_dict()}, "settings": h.as_dict(),
        "rounds": rounds, "rounds_run": len(curve), "profile": profile.name,
        "groups": [[p.n for p in g] for g in groups],
        "curve": curve, "acc_final": curve[-1]["test_acc"] if curve else None, "resumed_from": res.resumed_from,
        "test_samples": int(len(y_test)), "runtime": cfg.runtime.in_force(device)})
    write_runtime_record(runtime_record(paths, f"ksweep-{point}"), res.seconds, device, cfg.runtime,
                         rounds_timed=[res.resumed_from + 1, len(curve)], round_seconds=res.round_seconds)
    print(f"HFLDD K = {settings.K}: H = {len(groups)}, {len(curve)}/{rounds} rounds, final test accuracy "
          f"{curve[-1]['test_acc'] if curve else float('nan'):.2f}")


if __name__ == "__main__":
    main()
