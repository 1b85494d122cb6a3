"""Stage `project@<run>`: MA-Echo's client-side statistic (:mod:`osfl.clients.projections`) as an upload of its own.

Each client of ``--experiment`` (its uploads under models/<run>/clients/, or ``--clients-of``'s) computes one
projection matrix per layer from its own training data and its trained model, and uploads its model again with
them (payload ``projections``), to models/<--out>/clients/: the MA-Echo column then runs the server with
``--clients-of <--out>``, so the other columns' uploads stay small and a change here re-runs MA-Echo only. The batch
order of client k comes from ``derive_seed(seed, "projections", k)`` (the official loader shuffles). Writes
results/<run>/projections.json (per client: layers, matrix sizes, upload bytes) and its seconds and host to
results/<run>/runtime/projections.json.
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from ..clients.projections import layer_projections
from ..clients.upload import write_upload
from ..errors import ConfigError
from ..evaluation import to_float
from ..runconfig import load_run
from ..runtime import derive_seed, write_json
from .client_side import client_inputs
from .common import check_upload_name, parser, run_stage
from .records import runtime_record, write_runtime_record


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--out", required=True, metavar="EXPERIMENT",
                   help="write the uploads with projections to models/EXPERIMENT/clients/ (e.g. <run>-maecho)")
    run_stage(_run, p, argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    seed, device = cfg.seed, cfg.device
    out = Path("models") / check_upload_name(args.out, "--out") / "clients"
    if out.resolve() == paths.clients.resolve():
        raise ConfigError("--out", f"{args.out!r} would overwrite the uploads it reads ({paths.clients})")
    inputs = client_inputs(paths, cfg)
    uploads, pt, x_all = inputs.uploads, inputs.partition, inputs.x
    if out.exists():
        shutil.rmtree(out)
    summary, per_client_seconds, t0 = [], [], time.perf_counter()
    for u in tqdm(uploads, desc="MA-Echo projections", disable=args.no_progress, unit="client"):
        t = time.perf_counter()
        k = u.client_id
        idx = torch.from_numpy(np.asarray(pt.client_indices[k])).to(device)
        model = u.build_model(device)
        proj = layer_projections(model, to_float(x_all[idx]),
                                 generator=torch.Generator().manual_seed(derive_seed(seed, "projections", k)))
        manifest = {key: v for key, v in u.manifest.items() if key not in ("client_id", "kind", "files")}
        write_upload(out, k, "classifier", manifest, tensors={"state_dict": u.state_dict(), "projections": proj})
        summary.append({"client": k, "layers": {n: list(p.shape) for n, p in proj.items()},
                        "projection_bytes": sum(p.numel() * p.element_size() for p in proj.values())})
        per_client_seconds.append(round(time.perf_counter() - t, 3))
    seconds = time.perf_counter() - t0
    write_json(paths.results / "projections.json",
               {"clients_dir": str(paths.clients), "out": str(out), "clients": summary})
    write_runtime_record(runtime_record(paths, "projections"), seconds, device, cfg.runtime,
                         per_client_seconds=per_client_seconds)
    print(f"projections of {len(summary)} clients in {seconds:.1f} s -> {out}")


if __name__ == "__main__":
    main()
