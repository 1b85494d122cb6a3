"""Peer run of the data-free servers (issue 71): the official generator + distillation loops of Co-Boosting and DENSE
against ours, on the same trained clients, with the same synthetic-data budget and seeds.

Per seed, OUR stages (``prepare``, ``partition``, ``train_clients``) train the clients once in a scratch project;
then the two servers distil a student from them:

* ``ours``: our ``server`` stage (``--method coboost`` or ``--method dense``), as ``dvc repro`` runs it, with the
  server settings below passed as ``--set server.<method>.<key>=<value>``; its per-epoch test accuracy comes from its
  dvclive curve, its seconds from its run record (the method's time: a test evaluation per epoch and one before
  training); the speed ratio is on ``server_epoch_tests_seconds``, ours less that extra test (timed inside the stage
  by eval_timer.py), as the official loops test only once per epoch.
* ``official``: the official loop, imported from the scratch checkout (README of this folder) and driven as its
  script drives it, epoch by epoch, on the same client models:
  - Co-Boosting (``rong-dai/Co-Boosting``, ``datafree_kd.py --method co_boosting``): ``COBOOSTSynthesizer.synthesize``
    (hard-sample generator, ensemble re-weighting, its PNG image pool) then ``cb_kd_train`` (ODS, KD at T = 4, clip
    10), SGD with weight decay 1e-4 and the cosine schedule of its ``main_worker``; its ``Normalizer`` and transform
    (Resize 32, ToTensor, Normalize 0.5/0.5) as its registry gives them for ``fmnist``.
  - DENSE (``zj-jayzhang/DENSE``, ``loop_df_fl.py --type kd_train``): ``AdvSynthesizer.gen_data`` (BN + CE +
    masked adversarial loss on kornia views, its PNG image pool) then ``kd_train`` (KL at ``--T``), SGD momentum 0.9.
  The student is our model, drawn by torch's global generator after the official ``setup_seed(seed)`` (the official
  scripts draw theirs so); each epoch ends with a test evaluation of the student as the official loops do.

Both sides use our client models and our student architecture. The input preparation is the peer's: Co-Boosting
trains and distils at 32 x 32, normalised with mean = std = 0.5 (our ``inputs`` block; the official side feeds the
normalised tensors its loaders produce to the same models through a view that maps them back to pixels, which our
models normalise again: the same function); DENSE at 28 x 28, pixels in [0, 1]. Every shim is listed in the record.

Writes one record per peer (``--out``): settings, per arm and seed the final and best test accuracy and the server
seconds, the per-epoch curves, and the paired differences (ours - official) per seed. Run from the repository root::

    python -m benchmarks.peers.servers --peer Co-Boosting --alpha 0.5 --seeds 0 1 2
    python -m benchmarks.peers.servers --peer Co-Boosting --alpha 0.1 --seeds 0 1 2
    python -m benchmarks.peers.servers --peer DENSE --alpha 0.5 --seeds 0 1 2
"""
from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import statistics
import time
from pathlib import Path

import torch

from .clients import (EVAL_TIMER, FMNIST_DEBIAN, LOOP_DF_FL_STUBS, fresh_dir, our_clients, stage_runner, summary,
                      torchvision_root, write_record)
from .official import CPU_DEVICE_NOTE, KORNIA, KORNIA_SITE_NOTE, OFFICIAL, cpu_device, official_modules, peers_root, real_kornia

REPO = Path(__file__).resolve().parents[2]

# Per peer: our method, model, partition, clients, input preparation, and the server settings both sides share
# (official names -> our keys): the official scripts' values; --epochs, --g-steps and --ngf scale the work to the CPU
# on both sides.
PEERS = {
    "Co-Boosting": {
        "method": "coboost", "model": "lenet5", "partition": "inner_dirichlet", "clients": 10,
        "inputs": {"size": 32, "mean": 0.5, "std": 0.5}, "grad_clip": 10.0,
        "server": {"synthesis_batch": 128, "kd_batch": 128, "lr_g": 1e-3, "nz": 256, "lr": 0.01,
                   "adv": 1.0, "bn": 0.0, "oh": 1.0, "hs": 1.0, "mu": 0.01, "wdc": 0.99, "wa_steps": 1,
                   "odseta": 8.0, "kd_T": 4.0},
        "command": "datafree_kd.py --method co_boosting --dataset fmnist --batch_size 128 --kd_lr 0.01 --lr_g 1e-3 "
                   "(co_boosting.sh's flags, fmnist in place of cifar10; --epochs and --g_steps as below)",
        "tag": "coboost",
    },
    "DENSE": {
        "method": "dense", "model": "cnn2", "partition": "dirichlet", "clients": 5, "inputs": {}, "grad_clip": 0.0,
        "server": {"synthesis_batch": 256, "kd_batch": 256, "lr_g": 1e-3, "nz": 256, "lr": 0.005,
                   "adv": 1.0, "bn": 1.0, "oh": 1.0, "T": 20.0},
        "command": "loop_df_fl.py --type kd_train --dataset fmnist --model fmnist_cnn --lr 0.005 --batch_size 256 "
                   "--synthesis_batch_size 256 --lr_g 1e-3 --bn 1.0 --oh 1.0 --T 20 --adv 1 (the README's command, "
                   "fmnist in place of cifar10; --epochs and --g_steps as below)",
        "tag": "dense",
    },
}

COMMON_SHIMS = [
    CPU_DEVICE_NOTE,
    "partition and clients: our partition and train_clients stages (the same client models on both sides)",
    "student: our model of the same architecture as the clients, drawn by torch's global generator after the "
    "official setup_seed(seed)",
    "torch.utils.data.DataLoader while the official loop runs: num_workers 0 and pin_memory False (the official "
    "loaders ask for 4 workers; the images and their order are the same)",
    "test: after every epoch, the student on all 10,000 Fashion-MNIST test images prepared once by the official "
    "test transform (the official loop evaluates every epoch as well)",
    "image pool: the official PNG pool in a fresh scratch folder per seed",
]
COBOOST_SHIMS = [
    "client models: ours (lenet5, inputs 32x32 normalised inside the model) behind a view x -> model(0.5 x + 0.5) "
    "that takes the official normalised tensors; with return_features=True it returns (logits, logits) (WEnsemble "
    "asks for features in cb_kd_train and discards them)",
    "args of main_worker set by hand: the co_boosting method's switches (weighted, hast, ods), odseta/255, a silent "
    "logger, print_freq beyond the last step, his = not batchonly",
]
DENSE_SHIMS = [
    "client models: ours (cnn2 = DENSE's CNNMnist layers) called directly (28x28, pixels in [0, 1], as DENSE's "
    "fmnist transforms give them)",
    "loop_df_fl.tqdm and helpers.synthesizers.tqdm: the plain iterator; vutils.save_image of '1.png' into the "
    "scratch folder",
    *(stub.note for stub in LOOP_DF_FL_STUBS),
    KORNIA_SITE_NOTE,
]


class NormalisedView(torch.nn.Module):
    """Our model fed the official normalised tensors: ``model(x * std + mean)`` (our model normalises again)."""

    def __init__(self, model: torch.nn.Module, mean: float = 0.5, std: float = 0.5):
        super().__init__()
        self.model, self.mean, self.std = model, mean, std

    def forward(self, x, return_features=False):
        if not isinstance(return_features, bool):  # WEnsemble(images, labels): fails as the official models do
            raise RuntimeError("return_features must be a bool")
        out = self.model(x * self.std + self.mean)
        return (out, out) if return_features else out


@contextlib.contextmanager
def no_workers():
    """The official loaders on the main process (:data:`COMMON_SHIMS`)."""
    real = torch.utils.data.DataLoader

    class Loader(real):
        def __init__(self, *a, **k):
            k["num_workers"] = 0
            k["pin_memory"] = False
            super().__init__(*a, **k)

    torch.utils.data.DataLoader = Loader
    try:
        yield
    finally:
        torch.utils.data.DataLoader = real


def silent_logger() -> logging.Logger:
    log = logging.getLogger("osfl.peers.official")
    log.handlers[:] = [logging.NullHandler()]
    log.propagate = False
    return log


# ---------------------------------------------------------------------------------------------------- ours
def server_sets(peer: str, args) -> list[str]:
    spec = PEERS[peer]
    values = {**spec["server"], "epochs": args.epochs, "g_steps": args.g_steps, "ngf": args.ngf}
    return [f"server.{spec['method']}.{k}={v}" for k, v in values.items()]


def our_side(work: Path, seed: int, args, server: bool = True) -> dict:
    """Our clients (once per seed), then our server stage; returns the arm's numbers and curve. ``server=False``
    (no ``ours`` arm, e.g. a same-work record of the official arm and one variant): the clients only."""
    spec = PEERS[args.peer]
    stage = our_clients(work, {
        "profile": "paper", "seed": seed, "dataset": "fmnist", "partition": spec["partition"], "alpha": args.alpha,
        "clients": spec["clients"], "model": spec["model"], "methods": [spec["method"]],
        "data": {"mirror": str(FMNIST_DEBIAN)}, "inputs": spec["inputs"],
        "local": {"epochs": args.local_epochs, "batch_size": 128, "lr": 0.01, "momentum": 0.9,
                  "grad_clip": spec["grad_clip"], "augment": "none"},
        "runtime": {"threads": args.threads}, "server": {spec["method"]: {}},
    })
    return our_server(work, stage, args) if server else {"client_acc_mean": client_acc_mean(work)}


def client_acc_mean(work: Path) -> float:
    """The mean test accuracy of the clients our train_clients stage trained in ``work``."""
    return json.loads((work / "results" / "peer" / "clients.json").read_text())["local_acc_mean"]


def our_server(work: Path, stage, args, tag: str = "", extra: tuple[str, ...] = ()) -> dict:
    """Our server and evaluate stages on the clients in ``work`` (``extra``: more ``--set`` values, a variant). The
    server runs under eval_timer.py, so the record also has ours' seconds on the official loop's tests alone
    (``server_epoch_tests_seconds``, :data:`EPOCH_TESTS`)."""
    spec = PEERS[args.peer]
    name = f"{spec['method']}-{tag}" if tag else spec["method"]
    timed = work / f"eval-seconds-{name}.json"
    stage(EVAL_TIMER, str(timed), "osfl.stages.server", "--experiment", "peer", "--method", spec["method"],
          f"--tag={tag}", "--set", *server_sets(args.peer, args), *extra)
    stage("osfl.stages.evaluate", "--experiment", "peer", "--method", spec["method"], f"--tag={tag}")
    run = json.loads((work / "results" / "peer" / "runs" / f"{name}.json").read_text())
    curve = live_curve(work / "results" / "peer" / "live" / name)
    spent = json.loads(timed.read_text())
    return {"final": run["acc_final"], "best": run["acc_best"], "server_seconds": run["server_seconds"],
            EPOCH_TESTS: epoch_tests_seconds(run["server_seconds"], spent["calls"], args.epochs),
            "evaluations": spent["evaluations"], "eval_seconds": spent["eval_seconds"],
            "curve": curve, "client_acc_mean": client_acc_mean(work), "test_samples": run["test_samples"]}


#: the timer both sides share (findings.yaml F35): the official loops test the student after every epoch and nothing
#: else; ours also tests the student before training (and the teacher, under --track-teacher). Ours' method seconds
#: less those calls (the evaluations before the last ``epochs``, timed inside the stage by eval_timer.py); the
#: official seconds as they are
EPOCH_TESTS = "server_epoch_tests_seconds"


#: what a record summarises per arm (the official arm has no evaluation counts)
TIMED = ("final", "best", "server_seconds", EPOCH_TESTS, "evaluations", "eval_seconds")


def epoch_tests_seconds(server_seconds: float, calls: list[float], epochs: int) -> float:
    """``server_seconds`` less the evaluation calls made before the last ``epochs`` of them (ours' extra tests), each
    taken out at no more than the median epoch test (the first call also pays the process's warm-up: not ours to
    take out, the official loop pays it in its first test)."""
    if len(calls) < epochs or not epochs:
        raise RuntimeError(f"{len(calls)} evaluations timed for {epochs} epochs' tests")
    extra, tests = calls[:len(calls) - epochs], calls[len(calls) - epochs:]
    typical = statistics.median(tests)
    return round(server_seconds - sum(min(c, typical) for c in extra), 3)


def parse_variant(text: str, method: str) -> tuple[str, tuple[str, ...]]:
    """``NAME:key=value,key=value`` -> (``ours_NAME``, the ``--set`` values on server.<method>; a key that starts
    with ``runtime.`` is an execution switch and passes as it is, e.g. ``loop:runtime.batched_teachers=false``)."""
    name, _, sets = text.partition(":")
    if not name or not sets or not all("=" in kv for kv in sets.split(",")):
        raise SystemExit(f"--variant {text!r}: expected NAME:key=value[,key=value...]")
    return f"ours_{name}", tuple(kv if kv.startswith("runtime.") else f"server.{method}.{kv}"
                                 for kv in sets.split(","))


def live_curve(live: Path) -> list[float]:
    """Test accuracy per server epoch 1..E from a run's dvclive folder (epoch 0, before training, left out)."""
    rows = (live / "plots" / "metrics" / "test_acc.tsv").read_text().splitlines()[1:]
    points = sorted((int(r.split("\t")[0]), float(r.split("\t")[-1])) for r in rows if r.strip())
    return [round(acc, 4) for step, acc in points if step > 0]


def client_models(work: Path) -> list[torch.nn.Module]:
    from osfl.clients.upload import read_uploads

    return [u.build_model() for u in sorted(read_uploads(work / "models" / "peer" / "clients"),
                                            key=lambda u: u.client_id)]


def fresh_student(work: Path) -> torch.nn.Module:
    """Our model of the clients' architecture, as the official scripts draw theirs (global generator, after
    setup_seed), with the clients' input preparation."""
    from osfl.clients.upload import read_uploads
    from osfl.models import build_model

    m = read_uploads(work / "models" / "peer" / "clients")[0].manifest
    return build_model(m["arch"], tuple(m["input_shape"]), m["num_classes"], m.get("inputs"))


def accuracy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 1000):
            correct += int((model(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum())
    return 100.0 * correct / len(x)


def official_test(transform, data_root: Path) -> tuple[torch.Tensor, torch.Tensor]:
    """The 10,000 test images through the official test transform, once."""
    import torchvision

    ds = torchvision.datasets.FashionMNIST(str(data_root), train=False, download=False, transform=transform)
    xs, ys = zip(*(ds[i] for i in range(len(ds))))
    return torch.stack(xs), torch.tensor(ys)


# ---------------------------------------------------------------------------------------------------- official
def coboost_official(work: Path, seed: int, args, data_root: Path) -> dict:
    scratch = work / "official-pool"
    shutil.rmtree(scratch, ignore_errors=True)
    with official_modules("Co-Boosting", "registry", "datafree", "utils_fl", "datafree_kd") as mods, \
            cpu_device(), no_workers():
        registry, datafree, utils_fl, kd = mods
        utils_fl.setup_seed(seed)
        members = [NormalisedView(m) for m in client_models(work)]
        student_model = fresh_student(work)
        student = NormalisedView(student_model)
        _, train_dst, val_dst = registry.get_dataset(name="fmnist", data_root=str(data_root))
        x_test, y_test = official_test(val_dst.transform, data_root)
        s = PEERS["Co-Boosting"]["server"]
        a = argparse.Namespace(
            hs=s["hs"], weighted=True, hast=True, ods=True, wa_steps=s["wa_steps"], mu=s["mu"], wdc=s["wdc"],
            batchonly=False, batchused=False, his=True, print_freq=10 ** 9, logger=silent_logger(),
            odseta=s["odseta"] / 255, kd_T=s["kd_T"], current_epoch=0, epochs=args.epochs)
        m = len(members)
        ww = torch.full((m, 1), 1.0 / m)
        teacher = utils_fl.WEnsemble(members, ww)
        generator = datafree.models.generator.Generator(nz=s["nz"], ngf=args.ngf, img_size=32, nc=1)
        synthesizer = datafree.synthesis.COBOOSTSynthesizer(
            teacher=teacher, mdl_list=members, student=student, generator=generator, nz=s["nz"], num_classes=10,
            img_size=(1, 32, 32), iterations=args.g_steps, lr_g=s["lr_g"], synthesis_batch_size=s["synthesis_batch"],
            sample_batch_size=s["kd_batch"], adv=s["adv"], bn=s["bn"], oh=s["oh"],
            criterion=datafree.criterions.KLDiv(T=1), transform=train_dst.transform, save_dir=str(scratch),
            normalizer=datafree.utils.Normalizer(**registry.NORMALIZE_DICT["fmnist"]), args=a)
        optimizer = torch.optim.SGD(student.parameters(), s["lr"], weight_decay=1e-4, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
        curve, t0 = [], time.perf_counter()
        for epoch in range(args.epochs):
            a.current_epoch = epoch
            synthesizer.synthesize(cur_ep=epoch)
            teacher = synthesizer.teacher
            kd.cb_kd_train(synthesizer, [student, teacher], datafree.criterions.KLDiv(T=s["kd_T"]), optimizer, a)
            curve.append(round(accuracy(student, x_test, y_test), 4))
            scheduler.step()
        seconds = time.perf_counter() - t0
        weights = [round(float(v), 6) for v in synthesizer.teacher.mdl_w_list.flatten()]
    shutil.rmtree(scratch, ignore_errors=True)
    return {"final": curve[-1], "best": max(curve), "server_seconds": round(seconds, 3), "curve": curve,
            "final_client_weights": weights}


def dense_official(work: Path, seed: int, args, data_root: Path) -> dict:
    scratch = work / "official-pool"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(scratch)  # vutils.save_image('1.png') lands in the scratch folder
    try:
        with real_kornia(), official_modules("DENSE", "loop_df_fl", "helpers.utils", "helpers.synthesizers",
                                             "models.generator", extra_stubs=LOOP_DF_FL_STUBS,
                                             drop=(KORNIA,)) as mods, cpu_device(), no_workers():
            loop, utils, synth, gen = mods
            loop.tqdm = synth.tqdm = _plain_tqdm
            utils.setup_seed(seed)
            members = client_models(work)
            student = fresh_student(work)
            import torchvision.transforms as T

            x_test, y_test = official_test(T.Compose([T.ToTensor()]), data_root)
            s = PEERS["DENSE"]["server"]
            teacher = loop.Ensemble(members)
            generator = gen.Generator(nz=s["nz"], ngf=args.ngf, img_size=28, nc=1)
            synthesizer = synth.AdvSynthesizer(teacher, members, student, generator, nz=s["nz"], num_classes=10,
                                               img_size=(1, 28, 28), iterations=args.g_steps, lr_g=s["lr_g"],
                                               synthesis_batch_size=s["synthesis_batch"],
                                               sample_batch_size=s["kd_batch"], adv=s["adv"], bn=s["bn"], oh=s["oh"],
                                               save_dir=str(scratch / "pool"), dataset="fmnist")
            criterion = utils.KLDiv(T=s["T"])
            optimizer = torch.optim.SGD(student.parameters(), lr=s["lr"], momentum=0.9)
            student.train()
            curve, t0 = [], time.perf_counter()
            for epoch in range(args.epochs):
                synthesizer.gen_data(epoch)
                loop.kd_train(synthesizer, [student, teacher], criterion, optimizer)
                curve.append(round(accuracy(student, x_test, y_test), 4))
                student.train()
            seconds = time.perf_counter() - t0
    finally:
        os.chdir(cwd)
    shutil.rmtree(scratch, ignore_errors=True)
    return {"final": curve[-1], "best": max(curve), "server_seconds": round(seconds, 3), "curve": curve}


class _plain_tqdm:
    """tqdm stand-in: iterates, ignores descriptions."""

    def __init__(self, iterable=None, total=None, **kwargs):
        self.iterable = iterable if iterable is not None else range(total or 0)

    def __iter__(self):
        return iter(self.iterable)

    def __len__(self):
        return len(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def set_description(self, *a, **k):
        pass

    def update(self, *a, **k):
        pass


OFFICIAL_RUN = {"Co-Boosting": coboost_official, "DENSE": dense_official}


# ---------------------------------------------------------------------------------------------------- record
def settings(args) -> dict:
    spec = PEERS[args.peer]
    return {
        "dataset": "fmnist (Debian dataset-fashion-mnist); test on all 10,000 test images after every epoch",
        "clients": f"{spec['clients']} clients, {spec['model']}, {spec['partition']} alpha {args.alpha} (our "
                   f"partition stage), {args.local_epochs} local epochs (SGD 0.01, momentum 0.9, batch 128, clip "
                   f"{spec['grad_clip'] or 'none'}); inputs {json.dumps(spec['inputs']) if spec['inputs'] else '28x28, [0, 1]'}",
        "server": {**spec["server"], "epochs": args.epochs, "g_steps": args.g_steps, "ngf": args.ngf,
                   "official_epochs": 200, "official_g_steps": 30, "official_ngf": 64},
        "official": spec["command"],
        "ours": f"osfl.stages.server --method {spec['method']} --set " + " ".join(server_sets(args.peer, args)),
        "student_steps": f"{sum(-(-e * spec['server']['synthesis_batch'] // spec['server']['kd_batch']) for e in range(1, args.epochs + 1))} "
                         f"KD steps over {args.epochs} epochs (official 200 epochs: 20,100; finding F24)",
        "threads": args.threads,
        "server_seconds": "official: the epoch loop (synthesis, KD, one test evaluation per epoch); ours: the "
                          "server stage's method time (the same parts, one test evaluation per epoch and one before "
                          "training)",
        EPOCH_TESTS: "the record's timer (F35): official as server_seconds; ours: server_seconds less the "
                     "evaluations before the epochs' tests (the student's before training), each at no more than the "
                     "median epoch test, timed inside the stage by benchmarks/peers/eval_timer.py",
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--peer", choices=list(PEERS), default="Co-Boosting")
    p.add_argument("--alpha", type=float, default=0.5, help="Dirichlet concentration of the partition")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--local-epochs", type=int, default=10, help="clients' local epochs (official 100)")
    p.add_argument("--epochs", type=int, default=30, help="server epochs on both sides (official 200)")
    p.add_argument("--g-steps", type=int, default=30, help="generator steps per epoch (official 30)")
    p.add_argument("--ngf", type=int, default=16,
                   help="the generator's width on both sides (official 64: about 1.5 s per generator step on one "
                        "CPU thread, 16x the convolutions' work of 16)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--arms", nargs="+", choices=("official", "ours"), default=["official", "ours"])
    p.add_argument("--variant", action="append", default=[], metavar="NAME:key=value[,key=value]",
                   help="one more arm of ours, ours_NAME, with these server settings on top (repeatable)")
    p.add_argument("--add-variants", action="store_true",
                   help="run only the --variant arms, on the clients an earlier run left in --scratch, and add them "
                        "to its record (--out)")
    p.add_argument("--merge", action="store_true",
                   help="add this run's seeds to the record at --out (the same settings, other seeds)")
    p.add_argument("--scratch", type=Path, default=peers_root() / "work")
    p.add_argument("--out", type=Path, default=None,
                   help="default benchmarks/peers/records/server-<peer>-a<alpha>.json")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    tag = PEERS[args.peer]["tag"]
    out = args.out or REPO / "benchmarks/peers/records" / f"server-{tag}-a{args.alpha:g}.json"
    variants = dict(parse_variant(v, PEERS[args.peer]["method"]) for v in args.variant)
    if args.add_variants:
        return add_variants(out, variants, args)
    OFFICIAL[args.peer].require()
    data_root = torchvision_root(args.scratch / "fmnist-tv")
    arms: dict[str, list[dict]] = {a: [] for a in [*args.arms, *variants]}
    clients = []
    for seed in args.seeds:
        work = fresh_dir(args.scratch / f"server-{tag}-a{args.alpha:g}-s{seed}")
        t = time.perf_counter()
        ours = our_side(work, seed, args, server="ours" in arms)
        clients.append(ours["client_acc_mean"])
        if "ours" in arms:
            arms["ours"].append(ours)
        if "official" in arms:
            official = OFFICIAL_RUN[args.peer](work, seed, args, data_root)
            arms["official"].append({**official, EPOCH_TESTS: official["server_seconds"]})  # it tests per epoch only
        for arm, sets in variants.items():
            arms[arm].append(our_server(work, stage_runner(work), args, arm.replace("_", "-"), sets))
        print(f"seed {seed}: clients {ours['client_acc_mean']:.2f}; " + "; ".join(
            f"{a} final {rs[-1]['final']:.2f} best {rs[-1]['best']:.2f} ({rs[-1]['server_seconds']:.0f} s)"
            for a, rs in arms.items()) + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    record = {
        "harness": "benchmarks/peers/servers.py", "peer": args.peer, "method": args.peer,
        "layer": f"server: the generator + distillation loop on the same clients, Dir({args.alpha:g})",
        "official": OFFICIAL[args.peer].as_dict(), "official_checked_out": OFFICIAL[args.peer].checked_out(),
        "shims": COMMON_SHIMS + (COBOOST_SHIMS if args.peer == "Co-Boosting" else DENSE_SHIMS)
        + [n for n in OFFICIAL[args.peer].stub_notes() if n != KORNIA.note],
        "torch": torch.__version__, "settings": settings(args), "seeds": args.seeds,
        "arms": {a: {k: summary([r[k] for r in rs]) for k in TIMED if k in rs[0]} for a, rs in arms.items()},
        "timer": EPOCH_TESTS,
        "curves": {a: [r["curve"] for r in rs] for a, rs in arms.items()},
        "clients": {"client_acc_mean": summary(clients)},
        "variants": {a: list(v) for a, v in variants.items()},
        "rerun": (f"python -m benchmarks.peers.servers --peer {args.peer} --alpha {args.alpha:g} --seeds "
                  f"{' '.join(map(str, args.seeds))} --epochs {args.epochs} --g-steps {args.g_steps} "
                  f"--local-epochs {args.local_epochs} --ngf {args.ngf}"),
    }
    if "final_client_weights" in (arms.get("official") or [{}])[0]:
        record["official_client_weights"] = [r["final_client_weights"] for r in arms["official"]]
    if args.merge and out.exists():
        record = merged(json.loads(out.read_text()), record)
    write_record(out, record)


def merged(old: dict, new: dict) -> dict:
    """``--merge``: the seeds of ``new`` added to ``old`` (the same command on other seeds, e.g. run in parallel);
    refuses records whose settings differ or whose seeds overlap."""
    if old["settings"] != new["settings"] or set(old["arms"]) != set(new["arms"]):
        raise SystemExit("--merge: the record's settings or arms differ from this run's; write another --out")
    if set(old["seeds"]) & set(new["seeds"]):
        raise SystemExit(f"--merge: seeds {sorted(set(old['seeds']) & set(new['seeds']))} are in the record already")
    seeds = old["seeds"] + new["seeds"]
    out = {**old, "seeds": seeds}
    for arm in old["arms"]:
        out["arms"][arm] = {k: summary(old["arms"][arm][k]["values"] + new["arms"][arm][k]["values"])
                            for k in old["arms"][arm]}
        out["curves"][arm] = old["curves"][arm] + new["curves"][arm]
    out["clients"] = {"client_acc_mean": summary(old["clients"]["client_acc_mean"]["values"]
                                                 + new["clients"]["client_acc_mean"]["values"])}
    if "official_client_weights" in old:
        out["official_client_weights"] = old["official_client_weights"] + new.get("official_client_weights", [])
    out["rerun"] = old["rerun"].split(" --seeds ")[0] + " --seeds " + " ".join(map(str, seeds)) + " --epochs" + \
        old["rerun"].split(" --epochs", 1)[1]
    return out


def add_variants(out: Path, variants: dict[str, tuple[str, ...]], args) -> None:
    """The ``--add-variants`` run: each variant on the record's seeds, on the clients its run trained (kept in
    ``--scratch``), added to the record."""
    if not variants:
        raise SystemExit("--add-variants needs at least one --variant")
    record = json.loads(out.read_text())
    for key in ("epochs", "g_steps", "ngf"):
        if record["settings"]["server"][key] != getattr(args, key):
            raise SystemExit(f"--{key.replace('_', '-')} {getattr(args, key)} differs from the record's "
                             f"{record['settings']['server'][key]} ({out})")
    tag = PEERS[args.peer]["tag"]
    runs: dict[str, list[dict]] = {a: [] for a in variants}
    for seed in record["seeds"]:
        work = args.scratch / f"server-{tag}-a{args.alpha:g}-s{seed}"
        if not (work / "models" / "peer" / "clients").is_dir():
            raise SystemExit(f"{work}: no clients of seed {seed} (run the record's command first, with this --scratch)")
        for arm, sets in variants.items():
            runs[arm].append(our_server(work, stage_runner(work), args, arm.replace("_", "-"), sets))
            print(f"seed {seed}: {arm} final {runs[arm][-1]['final']:.2f} best {runs[arm][-1]['best']:.2f} "
                  f"({runs[arm][-1]['server_seconds']:.0f} s)", flush=True)
    for arm, rs in runs.items():
        record["arms"][arm] = {k: summary([r[k] for r in rs]) for k in TIMED if k in rs[0]}
        record["curves"][arm] = [r["curve"] for r in rs]
        record.setdefault("variants", {})[arm] = list(variants[arm])
    write_record(out, record)


if __name__ == "__main__":
    main()
