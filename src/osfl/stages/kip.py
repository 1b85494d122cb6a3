"""Stage `kip@<run>`: HFLDD's step 4 (SPEC §1.5): every non-header client (results/<run>/clustering.json, stage
cluster@) distils its data by kernel inducing points (settings ``kip``; steps scaled by the profile like other inner
steps) with its own generator ``derive_seed(seed, "kip", k)``, clients of one size ``MEMBERS_PER_BATCH`` at a time in
one batched run (:func:`osfl.condense.kernel_inducing_points_many`), and sends the images, quantised to uint8 as
counted by the cost model (8 bits per pixel value), to its header: uploads ``distilled_set`` under
models/<run>/kip/client_<k>/ (the manifest names the header). Writes results/<run>/kip.json (settings, steps run,
first and last loss, last KRR accuracy on the target batch, bytes per client) and, apart, results/<run>/runtime/kip.json
(seconds, a batch's time shared out per client, and the host).

``--for headers`` distils the clustering's headers instead, alike (their own generators), for Table IV's K sweep
(stage ``ksweep@``), where another K makes some of them members: uploads under models/<run>/kip_headers/, records
results/<run>/kip_headers.json and results/<run>/runtime/kip_headers.json. Every client's set depends only on its own
data and generator, so the two folders together hold every client's set whatever the clustering.
"""
from __future__ import annotations

import shutil
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from ..clients.upload import write_upload
from ..clustering import Clustering
from ..condense import KIPSettings, kernel_inducing_points_many, to_uint8
from ..evaluation import to_float
from ..profiles import scaled
from ..runconfig import load_run
from ..runtime import derive_seed, read_json, write_json
from .client_side import client_data
from .common import parser, require_input, run_stage
from .records import runtime_record, write_runtime_record

# Clients distilled in one batched KIP run (kernel_inducing_points_many). Each client's images equal its own run's up
# to rounding; measured on the 2-core CPU (600 images per client, 100 support, 500 targets): 27 ms per client-step
# alone, 20 batched by 4, 18 by 16.
MEMBERS_PER_BATCH = 16


#: --for: whose data is distilled -> (the upload folder and record name, the clients of a clustering)
TARGETS = {"members": ("kip", lambda c: c.members),
           "headers": ("kip_headers", lambda c: {a: a for a in c.headers})}


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--for", dest="targets", choices=tuple(TARGETS), default="members",
                   help="distil the clustering's members (sent to their headers; default) or its headers (K sweep)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec, profile, seed, device = cfg.dataset, cfg.profile, cfg.seed, cfg.device
    settings = cfg.settings(KIPSettings, "kip")
    steps = scaled(settings.steps, profile.step_scale)
    name, clients_of = TARGETS[args.targets]
    header_of = clients_of(Clustering.from_dict(read_json(require_input(paths.results / "clustering.json",
                                                                        "cluster"))))
    d = client_data(paths, cfg)
    pt, x_all, y_all = d.partition, d.x, d.y
    out = paths.uploads(name)
    if out.exists():
        shutil.rmtree(out)
    summary, per_client_seconds, t0 = [], [], time.perf_counter()
    kw = {**settings.as_dict(), "steps": steps}
    sizes = {k: len(pt.client_indices[k]) for k in header_of}
    # clients of one size draw target batches of one size: KIP runs them MEMBERS_PER_BATCH at a time, batched
    groups = [[k for k in sorted(header_of) if sizes[k] == n] for n in sorted(set(sizes.values()))]
    batches = [g[i:i + MEMBERS_PER_BATCH] for g in groups for i in range(0, len(g), MEMBERS_PER_BATCH)]
    bar = tqdm(total=len(header_of), desc="KIP (members)", disable=args.no_progress, unit="client")
    for batch in batches:
        t = time.perf_counter()
        idx = [torch.from_numpy(np.asarray(pt.client_indices[k])).to(device) for k in batch]
        n_images = min(settings.n_images, sizes[batch[0]])  # a client smaller than the support sends all it has
        results = kernel_inducing_points_many(
            [to_float(x_all[i]) for i in idx], [y_all[i] for i in idx], num_classes=spec.num_classes,
            gens=[torch.Generator().manual_seed(derive_seed(seed, "kip", k)) for k in batch],
            **{**kw, "n_images": n_images})
        share = (time.perf_counter() - t) / len(batch)
        for k, i, res in zip(batch, idx, results):
            arrays = {"images": to_uint8(res.images).cpu().numpy(),
                      "labels": res.labels.cpu().numpy().astype(np.int64)}
            write_upload(out, k, "distilled_set",
                         {"n_samples": int(len(i)), "label_histogram": [int(c) for c in pt.class_counts[k]],
                          "header": header_of[k], "classes": res.classes, "input_shape": list(spec.shape),
                          "space": "uint8 pixels, as transmitted"}, arrays=arrays)
            summary.append({"client": k, "header": header_of[k], "images": int(len(res.labels)),
                            "steps_run": res.steps_run, "loss_first": res.losses[0] if res.losses else None,
                            "loss_last": res.losses[-1] if res.losses else None,
                            "train_acc_last": res.train_acc[-1] if res.train_acc else None,
                            "upload_bytes": int(arrays["images"].nbytes)})
            per_client_seconds.append(round(share, 3))
        bar.update(len(batch))
    bar.close()
    seconds = time.perf_counter() - t0
    write_json(paths.results / f"{name}.json", {"settings": settings.as_dict(), "steps": steps,
                                                "profile": profile.name, "members_per_batch": MEMBERS_PER_BATCH,
                                                "clients": summary})
    write_runtime_record(runtime_record(paths, name), seconds, device, cfg.runtime,
                         per_client_seconds=per_client_seconds)
    print(f"KIP: {len(summary)} {args.targets} distilled {sum(s['images'] for s in summary)} images in {seconds:.1f} s")


if __name__ == "__main__":
    main()
