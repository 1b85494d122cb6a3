"""Stage `train_clients`: train every client of one federated setting and write each client's upload."""
from __future__ import annotations

import shutil
import time

import numpy as np
import torch

from ..augment import resolve_augment
from ..clients.cohort import (build_cohort, cohort_training_flops, initial_states, local_hparams, train_cohort,
                              upload_cohort)
from ..clients.dp import dp_record
from ..clients.parallel import client_processes
from ..config import scaled_epochs
from ..cpu_profile import client_guard, warn_failed
from ..evaluation import accuracy
from ..partition import load_partition
from ..runconfig import load_run
from ..runtime import derive_seed, write_json
from .common import load_data, parser, require_input, run_stage, test_tensors
from .records import runtime_record, write_runtime_record


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--count-flops", action="store_true",
                   help="count local training's FLOPs into clients.json (train_flops): torch's FlopCounterMode on one "
                        "step of each batch size, times its steps (clients.cohort.cohort_training_flops)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec, profile, seed, local = cfg.dataset, cfg.profile, cfg.seed, cfg.local
    data = load_data(paths, cfg)
    part = load_partition(require_input(paths.partition / "partition.json", "partition"))
    part.verify(data.y_train)
    device = cfg.device
    epochs = scaled_epochs(local.epochs, profile)
    augment = resolve_augment(local.augment, spec.shape)
    x_all = torch.from_numpy(data.x_train).to(device)
    y_all = torch.from_numpy(data.y_train).long().to(device)
    x_test, y_test = test_tensors(data, profile, derive_seed(seed, "test-subset"), device)

    out = paths.clients
    if out.exists():
        shutil.rmtree(out)
    archs = cfg.client_models
    shared_init = initial_states(archs, spec.shape, spec.num_classes, seed, cfg.inputs.norm())  # one per architecture
    accel = cfg.runtime
    cohort = build_cohort(archs, part.client_indices, x_all, y_all, spec.shape, spec.num_classes, device,
                          seed=seed, start=shared_init if local.init == "shared" else None,
                          data_seed=lambda k: derive_seed(seed, "client-data", k), inputs=cfg.inputs.norm())
    hp = local_hparams(local, epochs, augment, accel, eval_fn=lambda m: accuracy(m, x_test, y_test),
                       eval_every=local.eval_every)
    t0 = time.perf_counter()
    results, per_client_seconds, batched = train_cohort(cohort, hp, device, progress=not args.no_progress,
                                                     live=paths.results / "live" / "clients")
    train_info = {**local.as_dict(), "epochs_run": epochs, "augment_in_force": augment, "profile": profile.name,
                  "runtime": accel.in_force(device)}
    _, accs = upload_cohort(out, cohort, results, spec=spec, class_counts=part.class_counts, x_test=x_test,
                            y_test=y_test, train_info=train_info)
    summary = [{"client": k, "n_samples": int(len(idx)), "local_test_acc": accs[k],
                "samples_seen": results[k].samples_seen} for k, idx in enumerate(part.client_indices)]
    seconds = time.perf_counter() - t0
    seen = sum(s["samples_seen"] for s in summary)
    # what was computed, and the switches that decide it; seconds and the host go to the runtime record
    write_json(out / "index.json", {"clients": summary, "epochs_run": epochs, "profile": profile.name,
                                   "runtime": accel.in_force(device)})
    write_runtime_record(runtime_record(paths, "clients"), seconds, device, accel, batched=batched,
                         per_client_seconds=[round(float(s), 3) for s in per_client_seconds],
                         samples_per_second=round(seen / max(seconds, 1e-9), 1), client_processes=client_processes())
    # all clients, local training only: each step size counted once, times its steps (cohort_training_flops)
    flops = {"train_flops": cohort_training_flops(cohort, hp, device)} if getattr(args, "count_flops", False) else {}
    # DP-SGD clients (SPEC §2.8 [P]): σ, τ, δ and each client's ε (opacus' RDP accountant); no entry without DP
    dp = {} if not local.dp else {"dp": dp_record(local, [r.steps for r in results],
                                                  [len(idx) for idx in part.client_indices])}
    guards = client_guard(cfg.guard_floors, [s["local_test_acc"] for s in summary])
    if guards:  # the regime guard (a params file's cpu.guards): clients at chance feed their servers nothing
        warn_failed("clients", guards)
    write_json(paths.results / "clients.json", {
        **flops,
        **({"guards": guards} if guards else {}),
        **cfg.inputs.entry(),
        **dp,
        "local_acc_mean": float(np.mean([s["local_test_acc"] for s in summary])),
        "local_acc_min": float(np.min([s["local_test_acc"] for s in summary])),
        "local_acc_max": float(np.max([s["local_test_acc"] for s in summary])),
        "per_client": [{"client": s["client"], "arch": archs[s["client"]], "local_test_acc": s["local_test_acc"]}
                       for s in summary],
    })
    print(f"trained {len(summary)} clients x {epochs} epochs on {device} "
          f"({'batched' if batched else 'one by one'}) in {seconds:.1f} s "
          f"({seen / max(seconds, 1e-9):.0f} samples/s)"
          + (f"; DP-SGD sigma {local.dp_sigma}, max epsilon {dp['dp']['epsilon_max']:.3g} "
             f"(delta {local.dp_delta})" if dp else ""))


if __name__ == "__main__":
    main()
