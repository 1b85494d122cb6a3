"""Stage `condense@<run>`: the clients' side of OFedED's second round trip (SPEC §2.3, Algorithm 1).

The server sends every client the ensemble of all uploaded classifiers (M_w, w_k = 1/K: the classifier uploads
under models/<run>/clients/); each client condenses its own data into ``condense.ipc`` images per class it holds by
layer-wise distribution matching against every member (:func:`osfl.condense.distribution_matching`, settings
:class:`osfl.condense.settings.Condensation`) and uploads them. Writes models/<run>/distilled/client_<k>/
(``distilled_set``: ``images`` float32 in the models' input space, ``labels`` int64) and
results/<run>/distilled.json (per client: classes, images, first and last matching loss; its seconds and host in
results/<run>/runtime/distilled.json), so a change on
the server side never re-runs this stage. Client k's randomness comes from ``derive_seed(seed, "condense", k)``.

A variant (OFedED's Fig. 2(b) IPC sweep, Fig. 3's noise) writes another folder, ``--distilled NAME``
(models/<run>/<NAME>/, results/<run>/<NAME>.json), and may read another experiment's clients (``--clients-of``).
With ``condense.noise`` = σ > 0 each client adds Gaussian noise to its distilled images once, before the upload
(Fig. 3's "noise on the synthetic images"; SPEC §2.8 [P]: σ an absolute standard deviation in the normalised
pixel space, so σ·std in our [0, 1] pixels, σ/2 under OFedED's ``inputs``), drawn from
``derive_seed(seed, "condense-noise", k)``.
"""
from __future__ import annotations

import shutil
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from ..clients.upload import write_upload
from ..condense import distribution_matching
from ..condense.settings import Condensation
from ..cost.counter import spent
from ..errors import ConfigError
from ..evaluation import to_float
from ..profiles import scaled
from ..runconfig import load_run
from ..runtime import derive_seed, write_json
from .client_side import client_inputs
from .common import check_upload_name, parser, run_stage
from .records import runtime_record, write_runtime_record


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--count-flops", action="store_true",
                   help="count each client's matching FLOPs (torch's FlopCounterMode) into distilled.json")
    p.add_argument("--distilled", default="distilled", metavar="NAME",
                   help="the upload folder written: models/<experiment>/NAME/ and results/<experiment>/NAME.json "
                        "(default: distilled; a variant names its own)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec, profile, seed, device = cfg.dataset, cfg.profile, cfg.seed, cfg.device
    settings = cfg.settings(Condensation, "condense")
    inputs = client_inputs(paths, cfg)
    uploads, pt, x_all, y_all = inputs.uploads, inputs.partition, inputs.x, inputs.y
    archs = sorted({u.manifest["arch"] for u in uploads})
    if len(archs) > 1:
        raise ConfigError("condense.layers", f"the ensemble mixes architectures ({', '.join(archs)}); layer-wise "
                                             "matching needs one layer list for all members")
    layers = settings.layers_for(archs[0])
    iterations = [scaled(i, profile.step_scale) for i in settings.iterations]
    ensemble = [u.build_model(device) for u in uploads]
    out = paths.uploads(check_upload_name(args.distilled))
    if out.exists():
        shutil.rmtree(out)
    summary, per_client_seconds, t0 = [], [], time.perf_counter()
    bar = tqdm(total=len(pt.client_indices), desc=f"condensing against {len(ensemble)} {archs[0]}",
               disable=args.no_progress, unit="client")
    try:
        for k, idx in enumerate(pt.client_indices):
            t = time.perf_counter()
            idx = torch.from_numpy(np.asarray(idx)).to(device)
            try:
                with spent(getattr(args, "count_flops", False)) as cost:
                    res = distribution_matching(
                        ensemble, to_float(x_all[idx]), y_all[idx], ipc=settings.ipc, layers=layers,
                        iterations=iterations, gen=torch.Generator().manual_seed(derive_seed(seed, "condense", k)),
                        lr=settings.lr, momentum=settings.momentum, real_batch=settings.real_batch,
                        augment_ops=settings.augment, init=settings.init, init_mean=settings.init_mean,
                        init_std=settings.init_std)
            except FloatingPointError as e:
                raise ConfigError("condense.lr", f"client {k}: {e}") from None
            images = res.images
            if settings.noise > 0:  # Fig. 3: Gaussian noise on the uploaded images (σ in normalised units)
                g = torch.Generator().manual_seed(derive_seed(seed, "condense-noise", k))
                sd = cfg.inputs.pixel_std()  # one normalised unit in pixels (0.5 under mean = std = 0.5)
                images = images + (sd * settings.noise) * torch.randn(images.shape, generator=g).to(images.device)
            arrays = {"images": images.cpu().numpy().astype(np.float32),
                      "labels": res.labels.cpu().numpy().astype(np.int64)}
            write_upload(out, k, "distilled_set",
                         {"n_samples": int(len(idx)), "label_histogram": [int(c) for c in pt.class_counts[k]],
                          "input_shape": list(spec.shape), "num_classes": spec.num_classes, "classes": res.classes,
                          "space": "pixels in [0, 1] (the models' input), unclamped"},
                         arrays=arrays)
            summary.append({"client": k, "classes": res.classes, "images": int(len(res.labels)),
                            "loss_first": res.losses[0] if res.losses else None,
                            "loss_last": res.losses[-1] if res.losses else None,
                            **({} if cost.flops is None else {"flops": cost.flops}),
                            "upload_bytes": sum(int(a.nbytes) for a in arrays.values())})
            per_client_seconds.append(round(time.perf_counter() - t, 3))
            bar.update(1)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    record = {"settings": settings.as_dict(), "clients_dir": str(paths.clients), "iterations_run": iterations,
              "layers": layers, "ensemble": archs[0],
              "members": [u.client_id for u in uploads], "profile": profile.name, "clients": summary,
              "runtime": cfg.runtime.in_force(device)}  # seconds and the host: the runtime record
    write_json(out / "index.json", record)
    write_json(paths.results / f"{args.distilled}.json", record)
    write_runtime_record(runtime_record(paths, args.distilled), seconds, device, cfg.runtime,
                         per_client_seconds=per_client_seconds)
    print(f"condensed {len(summary)} clients ({sum(s['images'] for s in summary)} images) in {seconds:.1f} s")


if __name__ == "__main__":
    main()
