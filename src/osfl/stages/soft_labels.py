"""Stage `soft_labels@<run>`: HFLDD's step 1, each client's label knowledge (SPEC §1.3).

Every client (its pre-trained classifier under models/<run>/clients/, stage train@) computes its softmax outputs
S_i on the public set D_g: ``clustering.public_size`` samples drawn uniformly (seed ``derive_seed(seed, "public")``)
from the training split of the dataset ``public.<dataset>`` names, prepared under ``--public-root`` (Fashion-MNIST
for MNIST in the paper; its labels are never read), and uploads them (kind ``soft_labels``, |D_g| × N_c float32)
to models/<run>/soft_labels/. Writes results/<run>/soft_labels.json (the public set, its sample indices, the upload sizes).
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import torch

from ..clients.upload import write_upload
from ..clustering import ClusteringSettings, predict_soft_labels
from ..data import load_prepared
from ..errors import ConfigError
from ..evaluation import to_float
from ..runconfig import load_run
from ..runtime import derive_seed, write_json
from .client_side import classifier_uploads
from .common import check_upload_name, parser, require_input, run_stage, subset
from .records import runtime_record, write_runtime_record


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--public-root", default="data/public", metavar="DIR",
                   help="where the public sets are prepared (default: data/public)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec, seed, device = cfg.dataset, cfg.seed, cfg.device
    settings = cfg.settings(ClusteringSettings, "clustering")
    names = cfg.block("public")
    if not isinstance(names, dict) or not isinstance(names.get(spec.name), str):
        raise ConfigError(f"public.{spec.name}", f"names no public set for {spec.name}; give the dataset D_g is drawn "
                                                 f"from, e.g. public: {{{spec.name}: digits}}")
    name = check_upload_name(names[spec.name], f"public.{spec.name}")
    uploads = classifier_uploads(paths)
    public = load_prepared(require_input(Path(args.public_root) / name, "prepare_public"),
                           allow_stand_in=cfg.profile.stand_in_data)
    if tuple(public.x_train.shape[1:]) != tuple(spec.shape):
        raise ConfigError(f"public.{spec.name}", f"{name} images are {'x'.join(map(str, public.x_train.shape[1:]))}, the "
                                      f"clients' {'x'.join(map(str, spec.shape))}; the public set must fit the models")
    idx = subset(len(public.y_train), settings.public_size, derive_seed(seed, "public"))
    x_public = to_float(torch.from_numpy(public.x_train[idx]).to(device))
    out = paths.uploads("soft_labels")
    if out.exists():
        shutil.rmtree(out)
    sizes, t0 = [], time.perf_counter()
    for u in uploads:
        soft = predict_soft_labels(u.build_model(device), x_public).cpu().numpy().astype(np.float32)
        write_upload(out, u.client_id, "soft_labels",
                     {"n_samples": u.manifest["n_samples"], "label_histogram": u.manifest["label_histogram"],
                      "public": name, "num_classes": spec.num_classes}, arrays={"soft_labels": soft})
        sizes.append(int(soft.nbytes))
    write_json(paths.results / "soft_labels.json",
               {"public": name, "public_size": len(idx), "public_indices": idx.tolist(),
                "clients": len(sizes), "upload_bytes": sizes, "runtime": cfg.runtime.in_force(device)})
    write_runtime_record(runtime_record(paths, "soft_labels"), time.perf_counter() - t0, device, cfg.runtime)
    print(f"soft labels of {len(sizes)} clients on {len(idx)} {name} samples -> {out}")


if __name__ == "__main__":
    main()
