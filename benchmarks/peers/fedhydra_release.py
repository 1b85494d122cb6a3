"""How far FedHydra's released server loop runs (issue 71): Jun-B0518/ICDE2025-FL-SA, on our trained clients.

The release is partial (ANCHORS.md §1b): a DENSE fork whose ``fed-main.py --type kd_train`` builds ``SASynthesizer``
(model stratification, MS: one "interview" generator per client and class, the spread of its CE losses as the
client-class weight) and then runs the stratified-aggregation loop (HASA: ``Ensemble_E`` as the teacher of the
generator and of ``sa_kd_train``). This harness drives it as its ``__main__`` does, on the clients our DENSE peer
run trained (``benchmarks.peers.servers --peer DENSE``: cnn2 = the release's CNNMnist, 5 clients, Dirichlet, the
same scratch folders), and records per seed what ran: the MS weights it computed and its seconds, and where the
loop stopped, with the exception. Nothing inside the official code is changed; the shims are listed in the record.

    python -m benchmarks.peers.fedhydra_release --seeds 0 1 2   # -> records/fedhydra-release.json
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import time
import traceback
from pathlib import Path

import torch

from .clients import summary, write_record
from .official import (CPU_DEVICE_NOTE, ICDE_HELPERS, KORNIA, KORNIA_SITE_NOTE, OFFICIAL, cpu_device,
                       official_modules, peers_root, real_kornia)
from .servers import _plain_tqdm, client_models, fresh_student, no_workers, silent_logger

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


def _missing(name: str):
    def missing(*a, **k):
        raise NotImplementedError(f"{name} is not in the release (the harness's placeholder was called)")
    return missing


def load_fed_main(root: Path):
    spec = importlib.util.spec_from_file_location("fed_main", root / "fed-main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_seed(work: Path, seed: int, args) -> dict:
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
            optimizer = torch.optim.SGD(student.parameters(), lr=0.01, momentum=0.9)
            criterion = utils.KLCom(T=1.0, alpha1=0.0, alpha2=1.0, reduction="mean")
            epochs_done = 0
            for epoch in range(args.epochs):
                stage = f"epoch {epoch + 1}: synthesizer.gen_data (HASA synthesis with Ensemble_E)"
                synthesizer.gen_data(epoch)
                stage = f"epoch {epoch + 1}: sa_kd_train"
                fed_main.sa_kd_train(synthesizer, [student, synthesizer.en_teacher], criterion, optimizer, args=a)
                epochs_done += 1
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


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--alpha", type=float, default=0.5, help="the DENSE peer run whose clients are used")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--g-steps", type=int, default=30, help="generator steps (MS reuses them per client and class)")
    p.add_argument("--ngf", type=int, default=16, help="generator width (release 64), as the DENSE peer run")
    p.add_argument("--batch", type=int, default=256, help="synthesis and KD batch (release 256)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--scratch", type=Path, default=peers_root() / "work")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks/peers/records/fedhydra-release.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    runs = []
    for seed in args.seeds:
        work = args.scratch / f"server-dense-a{args.alpha:g}-s{seed}"
        if not (work / "models" / "peer" / "clients").is_dir():
            raise SystemExit(f"{work}: no clients; run `python -m benchmarks.peers.servers --peer DENSE --alpha "
                             f"{args.alpha:g} --seeds {seed}` first (the same --scratch)")
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
    write_record(args.out, record)


if __name__ == "__main__":
    main()
