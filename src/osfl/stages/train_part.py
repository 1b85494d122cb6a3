"""Stage `train@<run>-<part>`: train one part of a federated setting (the clients that use one architecture) and
write their uploads to models/<run>/clients/<part>/.

A setting whose clients are of several kinds (FedMHO SPEC §3.2: clients 1–5 train a VGG-9, clients 6–10 a CVAE or a
small CNN) is split into parts, each named in the params file's ``parts``:

    parts:
      - {name: vgg9, half: first, model: vgg9}
      - {name: cvae_small, half: second, model: cvae_small}
      - {name: cvae_large, half: first, model: cvae_large, cvae: {lr: 1.0e-3}}

``half: first`` is clients 0 .. N/2 − 1, ``second`` the rest; ``model`` is a registry name or a mapping dataset ->
name. A classifier part trains as ``train_clients`` does (``local``: SGD, shared initial model per architecture) and
uploads ``classifier``; a conditional-VAE part trains each client's CVAE (``cvae``, :class:`CVAETraining`) and uploads
only its decoder and label histogram (``cvae_decoder``). A part's own ``local`` / ``cvae`` keys override the shared
ones. Each part is trained once and every server cohort that lists it reads the same uploads, so a client is never
trained twice.
"""
from __future__ import annotations

import shutil
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from ..clients.augment import resolve_augment
from ..clients.cohort import build_cohort, initial_states, local_hparams, train_cohort, upload_cohort
from ..config import CVAETraining, LocalTraining, scaled_epochs
from ..errors import ConfigError, unknown_key
from ..generative.cvae import train_cvae
from ..generative.synthesis import write_decoder_upload
from ..live import ClientsLive
from ..models import MODELS, build_model, resolve_model_name
from ..models.cvae import CVAE
from ..partition import load_partition
from ..runtime import derive_seed, device_info, seeded_init, write_json
from .common import for_dataset, load_config, load_data, parser, require_input, run_stage, test_tensors

PART_KEYS = ("name", "half", "model", "local", "cvae")
HALVES = ("first", "second")


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--part", required=True, help="the part of the setting to train (a name in `parts`)")
    run_stage(_run, p, argv)


def resolve_part(params: dict, name: str, dataset: str, shape, clients: int) -> dict:
    """``{"name", "ids", "model", "local", "cvae"}`` of part ``name`` (in ``parts`` or ``sweeps.parts``); a bad key
    fails naming it."""
    parts, sweep_parts = params.get("parts"), (params.get("sweeps") or {}).get("parts") or []
    for key, listed in (("parts", parts), ("sweeps.parts", sweep_parts)):
        if not isinstance(listed, list) or not all(isinstance(q, dict) and "name" in q for q in listed):
            raise ConfigError(key, "must be a list of parts, each {name, half, model}")
    by_name = {q["name"]: q for q in parts + sweep_parts}  # sweeps.parts: trained on the sweeps' runs only
    if name not in by_name:
        raise unknown_key(f"parts.{name}", list(by_name))
    part = by_name[name]
    key = f"parts.{name}"
    if not isinstance(part, dict):
        raise ConfigError(key, f"must be a mapping of {', '.join(PART_KEYS)}")
    for k in part:
        if k not in PART_KEYS:
            raise unknown_key(f"{key}.{k}", PART_KEYS)
    half = part.get("half")
    if half not in HALVES:
        raise ConfigError(f"{key}.half", f"must be one of {', '.join(HALVES)}, got {half!r}")
    if clients < 2:
        raise ConfigError("clients", f"a setting of parts needs at least 2 clients, got {clients}")
    ids = list(range(clients // 2)) if half == "first" else list(range(clients // 2, clients))
    model = for_dataset(part.get("model"), dataset, f"{key}.model")
    if not isinstance(model, str):
        raise ConfigError(f"{key}.model", f"must be a model name or a mapping dataset -> name; allowed: "
                                          f"{', '.join(MODELS.names())}")
    model = resolve_model_name(model, shape, key=f"{key}.model")
    local = LocalTraining.from_params({**(params.get("local") or {}), **(part.get("local") or {})})
    cvae = CVAETraining.from_params({**(params.get("cvae") or {}), **(part.get("cvae") or {})}, key=f"{key}.cvae")
    return {"name": name, "ids": ids, "model": model, "local": local, "cvae": cvae}


def _run(args) -> None:
    params, cfg, paths = load_config(args)
    spec, profile, seed = cfg["dataset"], cfg["profile"], cfg["seed"]
    part = resolve_part(params, args.part, spec.name, spec.shape, cfg["clients"])
    device = cfg["device"]
    data = load_data(paths, cfg)
    pt = load_partition(require_input(paths.partition / "partition.json", "partition"))
    pt.verify(data.y_train)
    if len(pt.client_indices) != cfg["clients"]:
        raise ConfigError("clients", f"clients={cfg['clients']} but the partition has {len(pt.client_indices)}")
    ids, arch = part["ids"], part["model"]
    x_all = torch.from_numpy(data.x_train).to(device)
    y_all = torch.from_numpy(data.y_train).long().to(device)
    x_test, y_test = test_tensors(data, profile, derive_seed(seed, "test-subset"), device)
    out = paths.clients / args.part
    if out.exists():
        shutil.rmtree(out)
    live = paths.results / "live" / f"clients-{args.part}"
    with torch.device("meta"):  # the architecture's class only: no weights drawn, no memory
        generative = isinstance(build_model(arch, spec.shape, spec.num_classes), CVAE)
    t0 = time.perf_counter()
    if generative:
        train = part["cvae"]
        epochs = scaled_epochs(train.epochs, profile)
        info = {**train.as_dict(), "epochs_run": epochs, "profile": profile.name}
        summary = _train_cvaes(out, ids, arch, pt, x_all, y_all, spec, seed, epochs, train, device,
                               progress=not args.no_progress, live=live)
    else:
        local = part["local"]
        epochs = scaled_epochs(local.epochs, profile)
        augment = resolve_augment(local.augment, spec.shape)
        accel = cfg["runtime"]
        shared = initial_states([arch], spec.shape, spec.num_classes, seed)
        cohort = build_cohort([arch] * len(ids), [pt.client_indices[k] for k in ids], x_all, y_all, spec.shape,
                              spec.num_classes, device, seed=seed, start=shared if local.init == "shared" else None,
                              data_seed=lambda j: derive_seed(seed, "client-data", ids[j]))
        hp = local_hparams(local, epochs, augment, accel)
        results, secs, _ = train_cohort(cohort, hp, device, progress=not args.no_progress, live=live)
        info = {**local.as_dict(), "epochs_run": epochs, "augment_in_force": augment, "profile": profile.name,
                "runtime": accel.in_force(device)}
        _, accs = upload_cohort(out, cohort, results, spec=spec, class_counts=[pt.class_counts[k] for k in ids],
                                x_test=x_test, y_test=y_test, train_info=info, ids=ids)
        summary = [{"client": k, "n_samples": int(len(pt.client_indices[k])), "local_test_acc": accs[j],
                    "seconds": secs[j]} for j, k in enumerate(ids)]
    seconds = time.perf_counter() - t0
    write_json(out / "index.json", {"part": args.part, "arch": arch, "kind": "cvae_decoder" if generative else
                                    "classifier", "clients": summary, "train": info,
                                    "runtime": device_info(device), "seconds": seconds})
    record = {"part": args.part, "arch": arch, "clients": ids, "epochs_run": epochs, "seconds": round(seconds, 3),
              "per_client": summary}
    if not generative:
        record["local_acc_mean"] = float(np.mean([s["local_test_acc"] for s in summary]))
    write_json(paths.results / f"clients-{args.part}.json", record)
    print(f"part {args.part}: {len(ids)} {arch} clients x {epochs} epochs in {seconds:.1f} s")


def _train_cvaes(out, ids, arch, pt, x_all, y_all, spec, seed, epochs, train: CVAETraining, device, *,
                 progress: bool, live) -> list[dict]:
    """Each client's CVAE: drawn under ``derive_seed(seed, "client-init", k)``, trained with a generator seeded by
    ``derive_seed(seed, "client-data", k)`` (order and noise); its decoder upload written under ``out``."""
    bar = tqdm(total=epochs * len(ids), desc=f"{len(ids)} {arch} clients", disable=not progress, mininterval=1.0,
               unit="epoch")
    logger = ClientsLive(live, len(ids))
    summary = []
    try:
        for j, k in enumerate(ids):
            with seeded_init(derive_seed(seed, "client-init", k)):
                model = build_model(arch, spec.shape, spec.num_classes)
            model = model.to(device)
            idx = torch.from_numpy(np.asarray(pt.client_indices[k])).to(device)
            gen = torch.Generator().manual_seed(derive_seed(seed, "client-data", k))

            def on_epoch(e: int, loss: float, j=j) -> None:
                bar.set_postfix(client=k, loss=f"{loss:.2f}", refresh=False)
                bar.update(1)
                logger.epoch(j, e, loss)

            t = time.perf_counter()
            res = train_cvae(model, x_all[idx], y_all[idx], epochs=epochs, batch_size=train.batch_size, lr=train.lr,
                             gen=gen, beta=train.beta, reduction=train.reduction, on_epoch=on_epoch)
            write_decoder_upload(out, k, model.cpu(), arch=arch, input_shape=spec.shape, num_classes=spec.num_classes,
                                 label_histogram=pt.class_counts[k], n_samples=len(idx))
            summary.append({"client": k, "n_samples": int(len(idx)), "final_loss": res.final_loss,
                            "seconds": time.perf_counter() - t})
    finally:
        bar.close()
        logger.end()
    return summary


if __name__ == "__main__":
    main()
