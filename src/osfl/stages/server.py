"""Stage `server@<method>`: run one server method on the client uploads; write the global model and, as each
server epoch ends, its test accuracy and losses (dvclive, under results/<exp>/live/<method>/)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import torch

from ..clients.upload import read_uploads
from ..config import RunConfig
from ..cost.counter import spent
from ..data import DATASETS, get_spec, is_stand_in, load_prepared, prepare_dataset
from ..distill.ensemble import uploads_ensemble, voting_predictor
from ..errors import ConfigError
from ..live import LiveRun
from ..protocols.one_shot import build_context, make_method, run_method
from ..runconfig import load_run
from ..runtime import derive_seed, save_state_dict, write_json
from .common import (check_upload_name, load_data, parser, require_input, run_name, run_stage,
                     stand_in_sizes, subset, test_tensors)
from .records import runtime_record, write_runtime_record


def main(argv=None) -> None:
    p = parser(__doc__)
    p.add_argument("--method", required=True, help="server method (registry name)")
    p.add_argument("--tag", default="", help="name a variant (its settings come with --set): written as <method>-<tag>")
    p.add_argument("--parts", default="", metavar="A,B",
                   help="read the uploads of these parts of the setting (models/<exp>/clients/<part>/, stage "
                        "train_part) instead of models/<exp>/clients/")
    p.add_argument("--distilled", default="distilled", metavar="NAME",
                   help="the clients' second upload a method that reads distilled sets uses: models/<experiment>/NAME/ "
                        "(stage condense; default: distilled)")
    p.add_argument("--track-teacher", action="store_true",
                   help="also record the teacher's (the clients' ensemble's) test accuracy each server epoch "
                        "(curve field teacher_acc; methods that declare tracks_teacher: coboost, dense, ofeded)")
    p.add_argument("--count-flops", action="store_true",
                   help="count the run's FLOPs (torch's FlopCounterMode; its test evaluations left out) into the "
                        "model's manifest and the run's record (server_flops)")
    run_stage(_run, p, argv)


def read_cohort(clients: Path, parts: str) -> tuple[list, str | list[str]]:
    """The uploads a server run sees and where they are: the setting's clients folder, or the listed parts of it
    (each a folder of uploads; a client id may appear in one part only)."""
    if not parts:
        return read_uploads(require_input(clients, "train_clients")), str(clients)
    folders = [clients / name.strip() for name in parts.split(",") if name.strip()]
    uploads = [u for f in folders for u in read_uploads(require_input(f / "index.json", "train_part").parent)]
    ids = [u.client_id for u in uploads]
    if len(set(ids)) != len(ids):
        raise ConfigError("--parts", f"{parts!r} lists client ids twice ({sorted(ids)}); give parts of disjoint clients")
    return sorted(uploads, key=lambda u: u.client_id), [str(f) for f in folders]


def result_predictor(result, uploads, device: torch.device):
    """What a method's result predicts with: its global model, the ensemble of uploads or the prototypes' vote."""
    if result.kind == "classifier":
        return result.model
    if result.kind == "voting":
        return voting_predictor(list(result.prototypes.values()))
    return uploads_ensemble(uploads, result.members, result.weights, device)


def aux_images(name: str, paths, cfg: RunConfig, device: torch.device) -> torch.Tensor:
    """Training images of another dataset (labels dropped), prepared on first use into data/aux/<name>.

    Capped like the main training set under the profile (a seeded subset). Stand-in arrays left there by a smoke
    run are prepared again (from the real dataset) under a profile that does not allow them.
    """
    key = "server.feddf.aux_data"
    DATASETS.get(name, key=key)
    folder = Path(paths.data_root).parent / "aux" / name  # not a DVC output: it may share a name with one
    allow_stand_in = cfg.profile.stand_in_data
    if not (folder / "meta.json").exists() or (is_stand_in(folder) and not allow_stand_in):
        try:
            prepare_dataset(name, folder, mirror=cfg.mirror, stand_in=stand_in_sizes(get_spec(name), cfg.profile))
        except ConfigError as e:  # includes DataUnavailableError
            raise ConfigError(key, f"{name} cannot be loaded ({e}); pick another dataset or 'generator'") from None
    data = cfg.inputs.resize(load_prepared(folder, allow_stand_in=allow_stand_in))  # inputs.size, as the clients'
    idx = subset(len(data.x_train), cfg.profile.max_train, derive_seed(cfg.seed, "aux", name))
    return torch.from_numpy(np.ascontiguousarray(data.x_train[idx])).to(device)


def aux_loader(paths, cfg: RunConfig, device: torch.device):
    """FedDF's auxiliary-data loader for :func:`osfl.protocols.one_shot.build_context`."""
    return lambda name: aux_images(name, paths, cfg, device)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    method = make_method(cfg, args.method)
    track = getattr(args, "track_teacher", False)
    if track and not method.tracks_teacher:
        from ..methods import METHODS

        able = [n for n in METHODS.names() if METHODS.get(n).tracks_teacher]
        raise ConfigError("--track-teacher", f"{args.method} does not record its teacher; allowed with: {', '.join(able)}")
    spec, profile, seed = cfg.dataset, cfg.profile, cfg.seed
    device = cfg.device
    data = load_data(paths, cfg)
    uploads, clients_dir = read_cohort(paths.clients, getattr(args, "parts", ""))
    # a two-transmission round: the clients' second upload (OFedED's distilled sets, stage condense)
    distilled_dir = paths.uploads(check_upload_name(getattr(args, "distilled", "distilled")))
    distilled = read_uploads(require_input(distilled_dir, "condense")) if method.reads_distilled else []
    x_test, y_test = test_tensors(data, profile, derive_seed(seed, "test-subset"), device)
    name = run_name(args)
    live = LiveRun(paths.results / "live" / name, name)
    ctx = build_context(cfg, uploads, x_test, y_test, device, progress=not args.no_progress,
                        aux_loader=aux_loader(paths, cfg, device), on_epoch=live.epoch, distilled=distilled,
                        track_teacher=track)
    accel = cfg.runtime
    count = getattr(args, "count_flops", False)
    ctx.count_eval_flops = count
    with spent(count) as cost:
        result, seconds = run_method(method, ctx, cfg)
    if result.curve:  # the last epoch was evaluated (and logged) already; evaluate@ checks the saved model
        final = result.curve[-1]["test_acc"]
    else:
        final = ctx.evaluate(result_predictor(result, uploads, device))
    live.end(final)
    epochs = result.curve[-1]["epoch"] if result.curve else 0  # server epochs (the curve starts at epoch 0)

    out = paths.global_model(name)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    manifest = {
        "method": args.method, "tag": args.tag, "kind": result.kind, "arch": cfg.model,
        "input_shape": list(spec.shape),
        "num_classes": spec.num_classes, "dataset": spec.name, "profile": profile.name,
        "choices": {**method.resolved(profile), **result.choices},
        "epochs": epochs, "members": result.members, "weights": result.weights, "extras": result.extras,
        "clients_dir": clients_dir, "runtime": accel.in_force(device),  # seconds and host: the runtime record
    }
    manifest.update(cfg.inputs.entry())  # resized or normalised inputs (osfl.data.inputs); absent: pixels as prepared
    if distilled:
        manifest["distilled_dir"] = str(distilled_dir)
    if count:  # FLOPs spent by the method (its test evaluations, counted apart, left out)
        manifest["flops"] = {"server": cost.flops - ctx.eval_flops, "evaluation": ctx.eval_flops,
                             "counter": f"torch {torch.__version__} FlopCounterMode"}
    if result.kind == "classifier":
        save_state_dict(result.model.state_dict(), out / "model.pt")
        manifest["files"] = {"state_dict": "model.pt"}
    elif result.kind == "voting":
        manifest["files"] = {}
        for arch, model in result.prototypes.items():
            save_state_dict(model.state_dict(), out / f"model_{arch}.pt")
            manifest["files"][arch] = f"model_{arch}.pt"
        manifest["prototypes"] = list(result.prototypes)
    elif result.kind != "ensemble":
        raise ValueError(f"method {args.method} returned unknown result kind {result.kind!r}")
    write_json(out / "manifest.json", manifest)
    write_runtime_record(runtime_record(paths, name), seconds, device, accel)
    print(f"{name}: final {final:.2f}%, best {live.best if live.best is not None else final:.2f}% over {epochs} server epochs")
    print(f"{name}: {result.kind} written to {out} in {seconds:.1f} s")


if __name__ == "__main__":
    main()
