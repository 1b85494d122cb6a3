"""How far FedHydra's released server loop runs (issue 71): Jun-B0518/ICDE2025-FL-SA, on our trained clients.

The release is partial (ANCHORS.md §1b): a DENSE fork whose ``fed-main.py --type kd_train`` builds ``SASynthesizer``
(model stratification, MS: one "interview" generator per client and class, the spread of its CE losses as the
client-class weight) and then runs the stratified-aggregation loop (HASA: ``Ensemble_E`` as the teacher of the
generator and of ``sa_kd_train``). This harness drives it as its ``__main__`` does, on the clients our DENSE peer
run trained (``benchmarks.peers.servers --peer DENSE``: cnn2 = the release's CNNMnist, 5 clients, Dirichlet, the
same scratch folders), and records per seed what ran: the MS weights it computed and its seconds, and where the
loop stopped, with the exception. Nothing inside the official code is changed; the shims are listed in the record.

    python -m benchmarks.peers.fedhydra_release --seeds 0 1 2   # -> records/fedhydra-release.json

With ``--loop column`` the two parts of the release that cannot run on these clients are replaced by listed shims
(:data:`LOOP_SHIMS`: the SA teacher reads the release's table by (client, class) and keeps its graph; the pool
loader crops at the images' size), the loop runs to the end, the student is tested after every epoch, and our
FedHydra server (``reading: authors``) runs on the same clients with the same settings: a server row with final and
best accuracy, curves and seconds (records/server-fedhydra-a<alpha>.json).

    python -m benchmarks.peers.fedhydra_release --loop column --seeds 0 1 2 --epochs 20 --g-steps 10 --batch 64
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import time
import traceback
from pathlib import Path

import torch
import yaml

from .clients import stage_runner, summary, torchvision_root, write_record
from .official import (CPU_DEVICE_NOTE, ICDE_HELPERS, KORNIA, KORNIA_SITE_NOTE, OFFICIAL, cpu_device,
                       official_modules, peers_root, real_kornia)
from .servers import _plain_tqdm, accuracy, client_models, fresh_student, live_curve, no_workers, official_test, \
    parse_variant, silent_logger

REPO = Path(__file__).resolve().parents[2]
PEER = "ICDE2025-FL-SA"
SHIMS = [
    CPU_DEVICE_NOTE, KORNIA_SITE_NOTE,
    "fed-main.py imported as a module (its __main__ block not run); its global model_list (read by "
    "EnsemblePro.select_client) set to the client models",
    "clients: our cnn2 clients of the DENSE peer run (benchmarks.peers.servers --peer DENSE, the same seed and "
    "Dirichlet draw), in place of its pretrain step",
    "args: the argparse defaults of fed-main.py with --epochs, --g_steps and the batches below; a silent flogger; "
    "timestr 'peer' (its ./lw weight file and run/ pool in a scratch folder per seed)",
    "helpers.utils.test_pro_e: a placeholder that raises if called (helpers/synthesizers.py:14 imports it; the "
    "release defines it nowhere and calls it nowhere)",
    "tqdm: the plain iterator; torch.utils.data.DataLoader on the main process (num_workers 0)",
]


LOOP_SHIMS = [
    "Ensemble_E (the SA teacher): its set_batch_targets and forward replaced, its __init__ and compute_bn_loss kept. "
    "The replacement reads the release's one table u (SASynthesizer.label_logit_weights, clients x classes, raw, "
    "as MS wrote it) by (client, label): P_i = sum_k u[k][y_i] * P_k(x_i), in torch, so the generator gets its "
    "gradient. As released, set_batch_targets indexes the client rows by a class label (IndexError, or ValueError "
    "from np.vstack of an empty array) and forward returns, as a new tensor without a graph, the numpy product of "
    "one table row and the last client's logits (helpers/synthesizers.py:56-89; finding F33)",
    "SASynthesizer.transform (the pool loader's view): RandomCrop(28, padding 4) + horizontal flip + ToTensor in place "
    "of RandomCrop(32, padding 4): the release's 32 turns 28x28 images into 32x32 ones its own 28x28 CNN cannot take "
    "(helpers/synthesizers.py:156-161; finding F32)",
    "test: after every epoch, the student on all 10,000 Fashion-MNIST test images (ToTensor, as the release's "
    "loader); the release's test() and checkpoint writing are not called",
    "optimizer and criterion as fed-main.py builds them (SGD lr 0.01, momentum 0.9; KLCom(T 1, alpha1 0, alpha2 1, "
    "reduction 'mean'), its argparse defaults); the generator losses' weights adv = bn = oh = 1 (the paper's "
    "lambda1 = lambda2 = 1; the argparse defaults 0 switch them off, finding F34)",
]


def column_teacher(synth):
    """The release's ``Ensemble_E`` with :data:`LOOP_SHIMS`' first shim (a subclass: only the two methods that cannot
    run are replaced)."""

    class ColumnSA(synth.Ensemble_E):
        def set_batch_targets(self, targets):
            u = torch.as_tensor(self.label_logit_weights, dtype=torch.float32)  # (clients, classes)
            self.w = u[:, torch.as_tensor(targets).long().cpu()].T  # (batch, clients)

        def forward(self, x):
            per_client = torch.stack([model(x) for model in self.models])  # (clients, batch, classes)
            return torch.einsum("bk,kbc->bc", self.w, per_client)

    return ColumnSA


def average_teacher(synth):
    """The release's ``Ensemble_E`` with the release's own averaging forward (``Ensemble_A.forward``, the mean of the
    clients' logits) and no per-sample weights: the HASA loop with the SA teacher taken out."""

    class AverageTeacher(synth.Ensemble_E):
        def set_batch_targets(self, targets):
            self.targets = targets

        forward = synth.Ensemble_A.forward

    return AverageTeacher


def _missing(name: str):
    def missing(*a, **k):
        raise NotImplementedError(f"{name} is not in the release (the harness's placeholder was called)")
    return missing


def load_fed_main(root: Path):
    spec = importlib.util.spec_from_file_location("fed_main", root / "fed-main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_seed(work: Path, seed: int, args, teacher: str = "") -> dict:
    """One run of the release on ``work``'s clients: as released (``teacher`` empty: where it stops), or to the end
    with :data:`LOOP_SHIMS` and the SA teacher ``column`` (:func:`column_teacher`) or ``average`` (the release's own
    averaging ensemble, ``Ensemble_A.forward``, in the teacher's place: the loop without stratified aggregation)."""
    scratch = work / "fedhydra-release"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(scratch)
    out: dict = {"seed": seed}
    stage = "import (helpers, fed-main.py)"
    try:
        with real_kornia(), official_modules(PEER, "helpers.utils", drop=(KORNIA,)) as (utils,), cpu_device(), \
                no_workers():
            utils.test_pro_e = _missing("test_pro_e")  # imported by helpers/synthesizers.py, defined nowhere
            import helpers.synthesizers as synth
            import models.generator as gen

            synth.tqdm = _plain_tqdm
            fed_main = load_fed_main(OFFICIAL[PEER].require())
            fed_main.tqdm = _plain_tqdm
            utils.setup_seed(seed)
            fed_main.print = lambda *a, **k: None  # EnsemblePro.select_client prints the client id
            utils.print = lambda *a, **k: None  # KLCom.forward prints its two terms on every step
            members = client_models(work)
            fed_main.model_list = members
            student = fresh_student(work)
            a = argparse.Namespace(timestr="peer", flogger=silent_logger(), epochs=args.epochs, g_steps=args.g_steps,
                                   T=1.0, kl_alpha1=0.0, kl_alpha2=1.0)
            generator = gen.Generator(nz=256, ngf=args.ngf, img_size=28, nc=1)
            stage = "SASynthesizer.__init__ (model stratification: access_teacher_models -> interview)"
            t0 = time.perf_counter()
            synthesizer = synth.SASynthesizer(
                fed_main.EnsemblePro(members), members, student, generator, nz=256, num_classes=10,
                img_size=(1, 28, 28), iterations=args.g_steps, lr_g=1e-3, synthesis_batch_size=args.batch,
                sample_batch_size=args.batch, adv=1.0, bn=1.0, oh=1.0, save_dir=str(scratch / "run"),
                dataset="fmnist", test_dataloader=None, args=a)
            out["ms_seconds"] = round(time.perf_counter() - t0, 3)
            out["ms_weights"] = [[round(float(v), 6) for v in row] for row in synthesizer.label_logit_weights]
            if teacher:
                import torchvision.transforms as T

                synthesizer.en_teacher = (column_teacher(synth) if teacher == "column" else average_teacher(synth))(
                    members, synthesizer.label_logit_weights, synthesizer.model_logit_weights)
                synthesizer.transform = T.Compose([T.RandomCrop(28, padding=4), T.RandomHorizontalFlip(),
                                                   T.ToTensor()])
                x_test, y_test = official_test(T.Compose([T.ToTensor()]), torchvision_root(args.scratch / "fmnist-tv"))
            optimizer = torch.optim.SGD(student.parameters(), lr=0.01, momentum=0.9)
            criterion = utils.KLCom(T=1.0, alpha1=0.0, alpha2=1.0, reduction="mean")
            epochs_done, curve = 0, []
            for epoch in range(args.epochs):
                stage = f"epoch {epoch + 1}: synthesizer.gen_data (HASA synthesis with Ensemble_E)"
                synthesizer.gen_data(epoch)
                stage = f"epoch {epoch + 1}: sa_kd_train"
                fed_main.sa_kd_train(synthesizer, [student, synthesizer.en_teacher], criterion, optimizer, args=a)
                epochs_done += 1
                if teacher:
                    curve.append(round(accuracy(student, x_test, y_test), 4))
                    student.train()
            if curve:
                out.update(final=curve[-1], best=max(curve), curve=curve,
                           server_seconds=round(time.perf_counter() - t0, 3))
            out["stopped"] = None
    except Exception as exc:  # where the release stops is the measurement
        root = OFFICIAL[PEER].require()
        frames = traceback.extract_tb(exc.__traceback__)
        frame = next((f for f in reversed(frames) if Path(f.filename).is_relative_to(root)), frames[-1])
        where = Path(frame.filename)
        where = where.relative_to(root) if where.is_relative_to(root) else where
        out["stopped"] = {"stage": stage, "exception": f"{type(exc).__name__}: {exc}"[:300],
                          "at": f"{where}:{frame.lineno}", "line": (frame.line or "").strip()}
        out.setdefault("epochs_done", 0)
    finally:
        os.chdir(cwd)
        shutil.rmtree(scratch, ignore_errors=True)
    out.setdefault("epochs_done", args.epochs)
    return out


OUR_TAG = "release-peer"


def our_sets(args) -> list[str]:
    """Our FedHydra server's settings for the row: the release run's (harness flags and fed-main.py's values)."""
    values = {"epochs": args.epochs, "g_steps": args.g_steps, "ms_steps": args.g_steps, "ngf": args.ngf,
              "synthesis_batch": args.batch, "ms_batch": args.batch, "lr_g": 0.001, "nz": 256, "lr": 0.01,
              "momentum": 0.9, "T": 1.0, "lambda1": 1.0, "lambda2": 1.0}
    return [f"server.fedhydra.{k}={v}" for k, v in values.items()]


def our_fedhydra(work: Path, args, arm: str = "ours", extra: tuple[str, ...] = ()) -> dict:
    """Our FedHydra server stage (reading authors, the rest our defaults; ``extra``: more ``--set`` values, an arm
    ``ours_<name>``) and its evaluation on the clients in ``work``; FedHydra is added to the scratch project's
    methods first."""
    params_file = work / "params.yaml"
    params = yaml.safe_load(params_file.read_text())
    if "fedhydra" not in params["methods"]:
        params["methods"].append("fedhydra")
        params.setdefault("server", {})["fedhydra"] = {}
        params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    stage, tag = stage_runner(work), OUR_TAG + arm.removeprefix("ours").replace("_", "-")
    stage("osfl.stages.server", "--experiment", "peer", "--method", "fedhydra", f"--tag={tag}", "--set",
          *our_sets(args), *extra)
    stage("osfl.stages.evaluate", "--experiment", "peer", "--method", "fedhydra", f"--tag={tag}")
    name = f"fedhydra-{tag}"
    run = json.loads((work / "results" / "peer" / "runs" / f"{name}.json").read_text())
    return {"final": run["acc_final"], "best": run["acc_best"], "server_seconds": run["server_seconds"],
            "curve": live_curve(work / "results" / "peer" / "live" / name)}


def dense_clients(args, seed: int) -> Path:
    """The scratch folder of the DENSE row's run of ``seed`` (its clients are the ones used here)."""
    work = args.scratch / f"server-dense-a{args.alpha:g}-s{seed}"
    if not (work / "models" / "peer" / "clients").is_dir():
        raise SystemExit(f"{work}: no clients; run `python -m benchmarks.peers.servers --peer DENSE --alpha "
                         f"{args.alpha:g} --seeds {seed}` first (the same --scratch)")
    return work


def row_record(args, per_seed: dict[str, list[dict]], seeds: list[int],
               variants: dict[str, tuple[str, ...]] | None = None) -> dict:
    """The server row (``--loop column``): per arm (``official``: the release with the column teacher;
    ``official_average``: with its averaging ensemble as the teacher; ``ours``; ``ours_<name>``: a ``--variant``,
    its ``--set`` values in ``variants``) the per-seed runs, and their summaries as the other server rows keep them."""
    named = {a: list(v) for a, v in (variants or {}).items() if a not in ("ours", "ours_ae")}
    return {
        "harness": "benchmarks/peers/fedhydra_release.py", "peer": PEER, "method": "FedHydra",
        "layer": f"server: the release's MS + HASA loop (two parts shimmed) and ours on the same clients, "
                 f"Dir({args.alpha:g})",
        "official": OFFICIAL[PEER].as_dict(), "official_checked_out": OFFICIAL[PEER].checked_out(),
        "shims": SHIMS + LOOP_SHIMS + [ICDE_HELPERS.note], "torch": torch.__version__, "seeds": seeds,
        "settings": {
            "clients": f"5 cnn2 clients of server-dense-a{args.alpha:g} (the DENSE row's: dirichlet, 10 local epochs)",
            "server": {"epochs": args.epochs, "g_steps": args.g_steps, "ms_steps": args.g_steps, "ngf": args.ngf,
                       "batch": args.batch},
            "threads": args.threads,
            "arms": {"official": "SASynthesizer + sa_kd_train as fed-main.py's kd_train branch builds them, with "
                                 "the shims (the SA teacher reads u by (client, label))",
                     "official_average": "the same loop with the release's averaging ensemble (Ensemble_A.forward) "
                                         "as the teacher of the generator and the student: no stratified aggregation",
                     "ours": "osfl.stages.server --method fedhydra (reading authors) --set " + " ".join(our_sets(args)),
                     "ours_ae": "ours with server.fedhydra.aggregation=ae: the averaging ensemble in SA's place (no "
                                "MS), the arm to set beside official_average"},
            "differences kept": "ours: Ū_r/Ū_c-normalised SA (Eqs. 8-11, F33), no MS view on grey images (F32), "
                                "KD loss KL (batch mean) + CE (Eq. 19; the release: KL averaged over batch x "
                                "classes, no CE), its pool in memory (the release: PNG files)",
            "server_seconds": "official arms: MS (in SASynthesizer's constructor), then the epoch loop with one test "
                              "evaluation per epoch; ours: the server stage's method time (MS, the epochs, a test "
                              "evaluation per epoch and one before training)",
        },
        "per_seed": per_seed,
        "arms": {a: {k: summary([r[k] for r in rs]) for k in ("final", "best", "server_seconds")}
                 for a, rs in per_seed.items()},
        "curves": {a: [r["curve"] for r in rs] for a, rs in per_seed.items()},
        "rerun": f"python -m benchmarks.peers.fedhydra_release --loop column"
                 f"{' --average' if 'official_average' in per_seed else ''}"
                 f"{' --ours-ae' if 'ours_ae' in per_seed else ''} --seeds {' '.join(map(str, seeds))} "
                 f"--alpha {args.alpha:g} --epochs {args.epochs} --g-steps {args.g_steps} --ngf {args.ngf} "
                 f"--batch {args.batch}"
                 + "".join(f" --variant {a.removeprefix('ours_')}:{','.join(x.split('.', 2)[2] for x in v)}"
                           for a, v in named.items()),
        "variants": named,
    }


def column_row(args, out: Path) -> None:
    """``--loop column``: per seed the shimmed release (and, with ``--average``, its averaging-teacher arm), then
    ours (and, with ``--ours-ae``, ours with the averaging ensemble); ``--merge`` adds the seeds to the record at
    ``out`` (the same settings and arms, other seeds); ``--add`` runs only the arms the record at ``out`` lacks, on
    its seeds, and adds them."""
    arms = ["official"] + (["official_average"] if args.average else [])
    variants = {"ours": (), **({"ours_ae": ("server.fedhydra.aggregation=ae",)} if args.ours_ae else {}),
                **dict(parse_variant(v, "fedhydra") for v in args.variant)}
    ours = list(variants)
    seeds = list(args.seeds)
    old = json.loads(out.read_text()) if (args.add or args.merge) and out.exists() else None
    if args.add and old is None:
        raise SystemExit(f"--add: no record at {out}")
    if old is not None:  # refused before anything runs: the settings do not depend on the runs
        if row_record(args, {}, seeds)["settings"] != old["settings"]:
            raise SystemExit(f"--{'add' if args.add else 'merge'}: the record's settings differ from this run's; "
                             "write another --out")
        if args.add:
            seeds = old["seeds"]
            arms, ours = [a for a in arms if a not in old["per_seed"]], [a for a in ours if a not in old["per_seed"]]
        else:
            if set(old["per_seed"]) != {*arms, *ours}:
                raise SystemExit("--merge: the record's arms differ from this run's; write another --out")
            if set(old["seeds"]) & set(seeds):
                raise SystemExit(f"--merge: seeds {sorted(set(old['seeds']) & set(seeds))} are in the record already")
    per_seed: dict[str, list[dict]] = {a: [] for a in [*arms, *ours]}
    for seed in seeds:
        work = dense_clients(args, seed)
        for arm in arms:
            r = run_seed(work, seed, args, teacher="column" if arm == "official" else "average")
            if r["stopped"]:
                raise SystemExit(f"seed {seed}: the shimmed release ({arm}) stopped at {r['stopped']['at']}: "
                                 f"{r['stopped']['exception']}")
            per_seed[arm].append({k: r[k] for k in ("seed", "final", "best", "server_seconds", "curve")})
        for arm in ours:
            per_seed[arm].append({"seed": seed, **our_fedhydra(work, args, arm, variants[arm])})
        print(f"seed {seed}: " + "; ".join(f"{a} final {rs[-1]['final']:.2f} best {rs[-1]['best']:.2f} "
                                         f"({rs[-1]['server_seconds']:.0f} s)" for a, rs in per_seed.items()),
              flush=True)
    if args.add:
        per_seed = {**old["per_seed"], **per_seed}
        variants = {**old.get("variants", {}), **variants}
    elif old is not None:
        seeds = old["seeds"] + seeds
        per_seed = {a: old["per_seed"][a] + rs for a, rs in per_seed.items()}
    write_record(out, row_record(args, per_seed, seeds, variants))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--alpha", type=float, default=0.5, help="the DENSE peer run whose clients are used")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--g-steps", type=int, default=30, help="generator steps (MS reuses them per client and class)")
    p.add_argument("--ngf", type=int, default=16, help="generator width (release 64), as the DENSE peer run")
    p.add_argument("--batch", type=int, default=256, help="synthesis and KD batch (release 256)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--loop", choices=("as-released", "column"), default="as-released",
                   help="as-released: record where the loop stops; column: run it with LOOP_SHIMS beside ours")
    p.add_argument("--average", action="store_true",
                   help="column: also the release's loop with its averaging ensemble as the teacher")
    p.add_argument("--ours-ae", action="store_true",
                   help="column: also ours with the averaging ensemble in SA's place (aggregation=ae)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME:key=value[,key=value]",
                   help="column: one more arm of ours, ours_NAME, with these server.fedhydra settings on top")
    p.add_argument("--merge", action="store_true", help="column: add these seeds to the record at --out")
    p.add_argument("--add", action="store_true",
                   help="column: run only the arms (--average, --ours-ae) the record at --out lacks, on its seeds")
    p.add_argument("--scratch", type=Path, default=peers_root() / "work")
    p.add_argument("--out", type=Path, default=None, help="default records/fedhydra-release.json (as-released), "
                                                            "records/server-fedhydra-a<alpha>.json (column)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    records = REPO / "benchmarks/peers/records"
    out = args.out or (records / "fedhydra-release.json" if args.loop == "as-released"
                       else records / f"server-fedhydra-a{args.alpha:g}.json")
    if args.loop == "column":
        return column_row(args, out)
    runs = []
    for seed in args.seeds:
        work = dense_clients(args, seed)
        runs.append(run_seed(work, seed, args))
        r = runs[-1]
        print(f"seed {seed}: MS {r.get('ms_seconds', '-')} s; stopped: "
              f"{(r['stopped'] or {}).get('at', 'no')} {(r['stopped'] or {}).get('exception', '')}", flush=True)
    record = {
        "harness": "benchmarks/peers/fedhydra_release.py", "peer": PEER, "method": "FedHydra (release)",
        "layer": f"server: how far the released loop runs on our clients, Dir({args.alpha:g})",
        "official": OFFICIAL[PEER].as_dict(), "official_checked_out": OFFICIAL[PEER].checked_out(),
        "shims": SHIMS + [ICDE_HELPERS.note], "torch": torch.__version__, "seeds": args.seeds,
        "settings": {"epochs": args.epochs, "g_steps": args.g_steps, "ngf": args.ngf, "batch": args.batch,
                     "threads": args.threads, "clients": "5 cnn2 clients of server-dense-a"
                                                          f"{args.alpha:g} (10 local epochs)"},
        "runs": runs, "arms": {},
        "ms_seconds": summary([r["ms_seconds"] for r in runs if "ms_seconds" in r]) if any(
            "ms_seconds" in r for r in runs) else None,
        "rerun": f"python -m benchmarks.peers.fedhydra_release --seeds {' '.join(map(str, args.seeds))} "
                 f"--alpha {args.alpha:g} --epochs {args.epochs} --g-steps {args.g_steps} --ngf {args.ngf} --batch {args.batch}",
    }
    write_record(out, record)


if __name__ == "__main__":
    main()
