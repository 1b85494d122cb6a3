"""Stage `train@<run>-<part>`: train one part of a federated setting (the clients that use one architecture) and
write their uploads to models/<run>/clients/<part>/.

A setting whose clients are of several kinds (FedMHO SPEC §3.2: clients 1–5 train a VGG-9, clients 6–10 a CVAE or a
small CNN) is split into parts, each named in the params file's ``parts``:

    parts:
      - {name: vgg9, half: first, model: vgg9}
      - {name: cvae_small, half: second, model: cvae_small}
      - {name: cvae_large, half: first, model: cvae_large, cvae: {lr: 1.0e-3}}

``half: first`` is clients 0 .. N/2 − 1, ``second`` the rest; ``clients: [a, b]`` (instead of ``half``) is clients
a .. b − 1 (FedMHO Table X: clients 0–7 the eight large classifiers, 8–9 the small ones). ``model`` is a registry
name or a mapping dataset -> name, or a list of those with one entry per client of the part (Table X's
``[resnet50, resnet50, efficientnet_v2_s, ...]``: classifiers of several architectures in one part, each
architecture with its own shared initial model). A classifier part trains as ``train_clients`` does (``local``: SGD
or, with ``optimizer: adam``, Adam one client at a time; a shared initial model per architecture) and uploads
``classifier``; a conditional-VAE part trains each client's CVAE (``cvae``, :class:`CVAETraining`) and uploads
only its decoder and label histogram (``cvae_decoder``). A part's own ``local`` / ``cvae`` keys override the shared
ones. A CVAE client is in its regime when its last epoch's loss lies below the loss of its data's mean image (a decoder
that ignores z and y; ``mean_image_loss``): the part's record carries the share of such clients as the guard
``cvae_below_mean_image_min`` (where the params' ``cpu.guards`` set it), which every server that reads the part
inherits. ``retries`` (CVAE parts only; default
0) restarts a client whose training diverged (its reconstruction or loss turned non-finite) or, where that guard is
set, ended above its mean image, from a fresh draw of its initial model, order and noise, at most that many times
(FedMHO's Adam lr 5e-2 does both to some clients); the part's record says, per client, in which epochs earlier
attempts failed. ``retries`` sits on a list entry, out of `dvc exp run -S`'s reach: change it in the params file.
Each part is trained once and every server cohort that lists it reads the same uploads, so a client is never
trained twice.
"""
from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from dataclasses import asdict

import numpy as np
import torch
from tqdm.auto import tqdm

from ..augment import resolve_augment
from ..clients.cohort import build_cohort, initial_states, local_hparams, train_cohort, upload_cohort
from ..clients.parallel import client_processes
from ..config import CVAETraining, LocalTraining, check_int, for_dataset, scaled_epochs
from ..cpu_profile import client_guard, cvae_guard, warn_failed
from ..errors import ConfigError, unknown_key
from ..generative.cvae import CVAEDiverged, mean_image_loss, train_cvae
from ..generative.synthesis import write_decoder_upload
from ..live import ClientsLive
from ..models import MODELS, build_model, resolve_model_name
from ..models.cvae import CVAE
from ..partition import load_partition
from ..runconfig import load_run
from ..runtime import derive_seed, seeded_init, write_json
from .common import load_data, parser, require_input, run_stage, test_tensors
from .records import runtime_record, write_runtime_record

PART_KEYS = ("name", "half", "clients", "model", "local", "cvae", "retries")
HALVES = ("first", "second")


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--part", required=True, help="the part of the setting to train (a name in `parts`)")
    run_stage(_run, p, argv)


class Parts(tuple):
    """The params' ``parts`` (or ``sweeps.parts``) as a settings type (``cfg.settings(Parts, "parts")``): a tuple of
    part mappings, each with a ``name``; absent = none."""

    @classmethod
    def from_params(cls, value, key: str = "parts") -> "Parts":
        value = [] if value is None else value
        if not isinstance(value, (list, tuple)) or not all(isinstance(q, dict) and "name" in q for q in value):
            raise ConfigError(key, "must be a list of parts, each {name, half, model}")
        return cls(value)


def resolve_part(parts, name: str, dataset: str, shape, clients: int, *, local: LocalTraining,
                 cvae: Mapping | None = None, sweep_parts=None) -> dict:
    """``{"name", "ids", "model", "local", "cvae"}`` of part ``name`` (in ``parts`` or ``sweep_parts``, the params'
    ``sweeps.parts``), its ``local`` and ``cvae`` over the run's (``local``: the run's typed settings; ``cvae``: the
    params' ``cvae`` block); a bad key fails naming it."""
    parts, sweep_parts = Parts.from_params(parts, "parts"), Parts.from_params(sweep_parts, "sweeps.parts")
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
    if clients < 2:
        raise ConfigError("clients", f"a setting of parts needs at least 2 clients, got {clients}")
    ids = _part_ids(part, key, clients)
    listed = part.get("model")
    if isinstance(listed, list) and len(listed) != len(ids):
        raise ConfigError(f"{key}.model", f"lists {len(listed)} models for {len(ids)} clients ({ids[0]}-{ids[-1]}); "
                                          "give one per client, or one name for all")
    archs = []
    for j, entry in enumerate(listed if isinstance(listed, list) else [listed] * len(ids)):
        k = f"{key}.model[{j}]" if isinstance(listed, list) else f"{key}.model"
        model = for_dataset(entry, dataset, k)
        if not isinstance(model, str):
            raise ConfigError(k, f"must be a model name or a mapping dataset -> name (or a list of those, one per "
                                 f"client); allowed: {', '.join(MODELS.names())}")
        archs.append(resolve_model_name(model, shape, key=k))
    local = LocalTraining.from_params({**asdict(local), **(part.get("local") or {})})
    cvae = CVAETraining.from_params({**(cvae or {}), **(part.get("cvae") or {})}, key=f"{key}.cvae")
    retries = check_int(f"{key}.retries", part.get("retries", 0), minimum=0)
    return {"name": name, "ids": ids, "archs": archs, "local": local, "cvae": cvae, "retries": retries}


def _part_ids(part: dict, key: str, clients: int) -> list[int]:
    """The client ids of a part: ``half`` (first / second) or ``clients: [a, b]`` (ids a .. b − 1), one of them."""
    if ("half" in part) == ("clients" in part):
        raise ConfigError(key, "give its clients as half (first, second) or as clients: [first id, end id], "
                               "one of them")
    if "clients" in part:
        span = part["clients"]
        ok = (isinstance(span, list) and len(span) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                                for v in span))
        if not ok or not 0 <= span[0] < span[1] <= clients:
            raise ConfigError(f"{key}.clients", f"must be [a, b] with 0 <= a < b <= clients ({clients}): ids a .. b-1, "
                                                f"got {span!r}")
        return list(range(span[0], span[1]))
    half = part["half"]
    if half not in HALVES:
        raise ConfigError(f"{key}.half", f"must be one of {', '.join(HALVES)}, got {half!r}")
    return list(range(clients // 2)) if half == "first" else list(range(clients // 2, clients))


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    spec, profile, seed = cfg.dataset, cfg.profile, cfg.seed
    part = resolve_part(cfg.settings(Parts, "parts"), args.part, spec.name, spec.shape, cfg.clients, local=cfg.local,
                        cvae=cfg.block("cvae"), sweep_parts=cfg.block("sweeps").get("parts"))
    device = cfg.device
    data = load_data(paths, cfg)
    pt = load_partition(require_input(paths.partition / "partition.json", "partition"))
    pt.verify(data.y_train)
    if len(pt.client_indices) != cfg.clients:
        raise ConfigError("clients", f"clients={cfg.clients} but the partition has {len(pt.client_indices)}")
    ids, archs = part["ids"], part["archs"]
    arch = archs[0] if len(set(archs)) == 1 else archs  # recorded: one name, or one per client
    x_all = torch.from_numpy(data.x_train).to(device)
    y_all = torch.from_numpy(data.y_train).long().to(device)
    x_test, y_test = test_tensors(data, profile, derive_seed(seed, "test-subset"), device)
    # the part is written to a staging folder and moved into place once every client trained: a part that stops
    # half-way (a diverged CVAE) leaves no folder that a server stage could read as a smaller cohort
    final = paths.clients / args.part
    out = final.parent / f".{args.part}.partial"
    for stale in (final, out):
        if stale.exists():
            shutil.rmtree(stale)
    live = paths.results / "live" / f"clients-{args.part}"
    with torch.device("meta"):  # the architectures' classes only: no weights drawn, no memory
        kinds = {a: isinstance(build_model(a, spec.shape, spec.num_classes), CVAE) for a in dict.fromkeys(archs)}
    if len(set(kinds.values())) > 1:
        raise ConfigError(f"parts.{args.part}.model", "mixes CVAEs and classifiers; make them parts of their own")
    generative = kinds[archs[0]]
    if generative and isinstance(arch, list):
        raise ConfigError(f"parts.{args.part}.model", "a part of CVAE clients takes one architecture")
    t0 = time.perf_counter()
    if generative:
        train = part["cvae"]
        epochs = scaled_epochs(train.epochs, profile)
        info = {**train.as_dict(), "epochs_run": epochs, "profile": profile.name}
        # a decoder above its mean image is restarted only where the guard asks for better (not at smoke)
        restart_above = "cvae_below_mean_image_min" in cfg.guard_floors
        summary = _train_cvaes(out, ids, arch, pt, x_all, y_all, spec, seed, epochs, train, device,
                               retries=part["retries"], restart_above=restart_above, progress=not args.no_progress,
                               live=live)
    else:
        if part["retries"]:
            raise ConfigError(f"parts.{args.part}.retries", "restarts diverged CVAE training; this part's clients "
                                                            "are classifiers")
        local = part["local"]
        epochs = scaled_epochs(local.epochs, profile)
        augment = resolve_augment(local.augment, spec.shape)
        accel = cfg.runtime
        shared = initial_states(archs, spec.shape, spec.num_classes, seed, cfg.inputs.norm())
        cohort = build_cohort(archs, [pt.client_indices[k] for k in ids], x_all, y_all, spec.shape,
                              spec.num_classes, device, seed=seed, start=shared if local.init == "shared" else None,
                              data_seed=lambda j: derive_seed(seed, "client-data", ids[j]),
                              inputs=cfg.inputs.norm())
        hp = local_hparams(local, epochs, augment, accel)
        results, secs, _ = train_cohort(cohort, hp, device, progress=not args.no_progress, live=live)
        info = {**local.as_dict(), "epochs_run": epochs, "augment_in_force": augment, "profile": profile.name,
                "runtime": accel.in_force(device)}
        _, accs = upload_cohort(out, cohort, results, spec=spec, class_counts=[pt.class_counts[k] for k in ids],
                                x_test=x_test, y_test=y_test, train_info=info, ids=ids)
        summary = [{"client": k, "n_samples": int(len(pt.client_indices[k])), "local_test_acc": accs[j],
                    "seconds": secs[j]} for j, k in enumerate(ids)]
    seconds = time.perf_counter() - t0
    per_client_seconds = [round(float(s.pop("seconds")), 3) for s in summary]  # the host's, not the computation's
    # what was computed and the switches in force; seconds and the host go to the runtime record
    write_json(out / "index.json", {"part": args.part, "arch": arch, "kind": "cvae_decoder" if generative else
                                    "classifier", "clients": summary, "train": info})
    out.rename(final)
    write_runtime_record(runtime_record(paths, f"clients-{args.part}"), seconds, device, cfg.runtime,
                         per_client_seconds=per_client_seconds,
                         client_processes=1 if generative else client_processes())
    record = {"part": args.part, "arch": arch, "clients": ids, "epochs_run": epochs, "per_client": summary}
    if generative:  # the regime guard: a decoder worse than its data's mean image feeds the servers noise
        record["retries"] = part["retries"]
        guards = cvae_guard(cfg.guard_floors, [s["final_loss"] for s in summary], [s["mean_image_loss"] for s in summary])
    else:  # clients at chance would feed every server of this part nothing
        record["local_acc_mean"] = float(np.mean([s["local_test_acc"] for s in summary]))
        guards = client_guard(cfg.guard_floors, [s["local_test_acc"] for s in summary])
    if guards:
        record["guards"] = guards
        warn_failed(f"part {args.part}", guards)
    write_json(paths.results / f"clients-{args.part}.json", record)
    print(f"part {args.part}: {len(ids)} {', '.join(dict.fromkeys(archs))} clients x {epochs} epochs in "
          f"{seconds:.1f} s")


def _train_cvaes(out, ids, arch, pt, x_all, y_all, spec, seed, epochs, train: CVAETraining, device, *,
                 retries: int, restart_above: bool = True, progress: bool, live) -> list[dict]:
    """Each client's CVAE: drawn under ``derive_seed(seed, "client-init", k)``, trained with a generator seeded by
    ``derive_seed(seed, "client-data", k)`` (order and noise); its decoder upload written under ``out``. An attempt
    that diverged (or, with ``restart_above``, ended above the mean image's loss) is followed by a fresh one under
    the same labels with ``"retry", r`` appended (r = 1, 2, ...), up to ``retries`` of them; the last attempt is kept
    whatever its loss (non-finite: the part stops). The client's curve continues across attempts from the last
    epoch the failed one completed."""
    bar = tqdm(total=epochs * len(ids), desc=f"{len(ids)} {arch} clients", disable=not progress, mininterval=1.0,
               unit="epoch")
    logger = ClientsLive(live, len(ids))
    summary = []
    try:
        for j, k in enumerate(ids):
            idx = torch.from_numpy(np.asarray(pt.client_indices[k])).to(device)
            diverged: list[int] = []  # the epoch in which each failed attempt diverged (its last: ended too high)
            done = 0  # epochs completed by the failed attempts (one diverging mid-epoch did not complete that one)
            base = mean_image_loss(x_all[idx], batch_size=train.batch_size, reduction=train.reduction)
            t = time.perf_counter()
            while True:
                tail = ("retry", len(diverged)) if diverged else ()
                with seeded_init(derive_seed(seed, "client-init", k, *tail)):
                    model = build_model(arch, spec.shape, spec.num_classes)
                model = model.to(device)
                gen = torch.Generator().manual_seed(derive_seed(seed, "client-data", k, *tail))
                completed = [0]

                def on_epoch(e: int, loss: float, j=j, done=done, completed=completed) -> None:
                    completed[0] = e
                    bar.set_postfix(client=k, loss=f"{loss:.2f}", refresh=False)
                    bar.update(1)
                    logger.epoch(j, done + e, loss)

                try:
                    res = train_cvae(model, x_all[idx], y_all[idx], epochs=epochs, batch_size=train.batch_size,
                                     lr=train.lr, gen=gen, beta=train.beta, reduction=train.reduction,
                                     on_epoch=on_epoch)
                except CVAEDiverged as err:
                    diverged.append(err.epoch)
                    if len(diverged) > retries:
                        raise CVAEDiverged(f"client {k}: {err} (attempt {len(diverged)} of {retries + 1}; raise "
                                           f"the part's retries or lower cvae.lr)", err.epoch) from err
                    why = str(err)
                else:
                    if res.final_loss < base or not restart_above or len(diverged) >= retries:
                        break  # in its regime, not asked to be, or out of retries: kept, and the guard says so
                    diverged.append(epochs)
                    why = f"its last epoch's loss {res.final_loss:.4g} is above its mean image's {base:.2f}"
                done += completed[0]
                bar.total += completed[0]  # the bar's total counts every epoch that ran
                tqdm.write(f"client {k}: {why}; retrying from a fresh draw ({len(diverged)} of {retries})")
            write_decoder_upload(out, k, model.cpu(), arch=arch, input_shape=spec.shape, num_classes=spec.num_classes,
                                 label_histogram=pt.class_counts[k], n_samples=len(idx))
            entry = {"client": k, "n_samples": int(len(idx)), "final_loss": res.final_loss,
                     "mean_image_loss": base, "seconds": time.perf_counter() - t}
            if diverged:
                entry["diverged_in_epochs"] = diverged
            summary.append(entry)
    finally:
        bar.close()
        logger.end()
    return summary


if __name__ == "__main__":
    main()
