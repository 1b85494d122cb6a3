"""Peer run of two server methods as FedMHO's code runs them, on clients trained once: FedMHO-MD and FedDF.

FedMHO's official code (``YXShi2000/FedMHO``, FedDF's MPI master/worker code base) is not run as a program: its
aggregators are imported from the scratch checkout and called directly, as its master calls them after the one
communication round, with a ``conf`` made by its own ``parameters.get_args()`` (the README's flags, our values) and
the post-processing of its ``main.py`` (``fl_aggregate`` parsed by its ``dict_parser``, ``random_state``, the client
architectures by its ``create_model.determine_arch``), and the client models WE trained, packed into its
``TensorBuffer`` as its workers send them:

* FedMHO-MD: ``pcode/aggregation/semi_supervised.py::aggregate`` (``--is_md True``): the decoders of the CVAE clients
  generate M labelled images (class-balanced, split over decoders by squared class counts), k-means cleaning keeps
  80 % per class (``clean_rate=0.8``), the global model starts from the uniform FedAvg of the classifier clients
  (its ``fedavg._fedavg``) and trains 20 epochs (its hard-coded Fashion-MNIST value) with Adam 5e-4, batch 64, on
  CE + KLDivLoss() to the classifiers' mean output; tested once at the end. Ours: ``server@fedmho`` with
  ``server.fedmho.kd=md`` on the parts ``cnn,cvae_small``, as papers/fedmho/dvc.yaml's ``server`` stage runs a column.
  A second ours arm, ``ours_cleaning_none`` (``server.fedmho.cleaning=none``: ⌊0.8·M⌋ generated, all kept), is what
  the official cleaning computes in effect: its ``data_clean`` ranks the samples in a shuffled loader's order and
  applies the ranks to the unshuffled dataset, so its kept 80 % is a random subset (``official_cleaning`` in the
  record: the fraction of the kept samples that are among the 80 % nearest the centre; 1.0 when cleaning works).
* FedDF: ``pcode/aggregation/noise_knowledge_transfer.py::aggregate`` with the README's FedDF flags
  (``update_student_scheme=avg_logits``, random_sampling of the whole unlabeled set, Adam 2e-4 with cosine
  annealing over the server batches, T = 1, the loader's batch = ``--batch_size 64``), the student from the uniform
  FedAvg of the classifier clients, the teachers = those clients. Ours: ``server@feddf_vote`` on the part ``cnn``
  (one architecture: one prototype, i.e. FedDF), ``aux_data: digits``, batch 64.

The cohort is FedMHO's Table I (clients 1-5 classifiers, 6-10 CVAE-small, FedDF's partitioner, alpha 0.5, 10
clients) at a CPU scale (``--local-epochs``, ``--cvae-epochs``: the reductions are recorded in ``settings``): the
classifier is FedMHO's small CNN (``CNN_MNIST`` = our ``cnn_mnist``, softmax output as in the official code) in place
of VGG-9 (69 M parameters), trained by our ``train_part`` stage once per seed with Adam 5e-4 (the pipeline's Table X
setting for its small CNNs; Table III's SGD 5e-3 leaves the softmax-output CNN near chance after a few epochs); both
sides read the same trained clients (our weights loaded into the official classes). Unlabeled data for FedDF:
FedMHO distils on MNIST, which is not available offline here; both sides distil on our embedded ``digits`` (1,437 UCI
8x8 digits upsampled to 28x28). Test: all 10,000 Fashion-MNIST test images on both sides.

Matched settings and their limits: the official FedDF selects the model by a validation split and stops early;
here its validation loader is the test loader (its ``validate`` is observed, not changed, to read the test accuracy
at every evaluation) and early stopping is set beyond the last batch, so its ``final`` is the accuracy after the last
batch and its ``best`` the best evaluation (every ``--feddf-steps`` batches, the initial model left out), as ours
reports them (one evaluation per server epoch of ``--feddf-steps`` batches). The official FedMHO tests once: its
record has ``final`` only. Run from the repository root::

    python -m benchmarks.peers.fedmho_server --seeds 0 1 2   # -> records/fedmho-md.json, records/feddf.json
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import re
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch
import yaml
from torch.utils.data import DataLoader, TensorDataset

from .clients import EVAL_TIMER, FMNIST_DEBIAN, REPO, fresh_dir, stage_runner, summary, torchvision_root, write_record
from .official import CPU_DEVICE_NOTE, OFFICIAL, cpu_device, official_modules

PEER = "FedMHO"
PARAMS = "papers/fedmho/params.yaml"  # the pipeline's params file (its path admits the keys that pipeline adds)
PARTS = [{"name": "cnn", "half": "first", "model": "cnn_mnist"},
         {"name": "cvae_small", "half": "second", "model": "cvae_small"}]
# our cnn_mnist / cvae_small layer names -> the official CNN_MNIST / CVAE_MNIST decoder's
CNN_NAMES = {"features.0": "conv1", "features.3": "conv2", "fc": "fc"}
DECODER_NAMES = {"body.0": "MLP.L0", "body.2": "MLP.L1"}

COMMON_SHIMS = [
    CPU_DEVICE_NOTE,
    "conf: the official parameters.get_args() on the README's flags with our values (sys.argv set for the call), "
    "then main.py's post-processing: fl_aggregate by its param_parser.dict_parser, arch_info, random_state = "
    "RandomState(seed), conf.graph = (on_cuda False, rank 0, comm_round 1) in place of the MPI topology, "
    "conf.clientid2arch by its create_model.determine_arch, conf.logger a silent log",
    "clients: our trained weights (train_part stage) loaded into the official classes (create_model.define_model: "
    "CNN_MNIST conv1/conv2/fc = our features.0/features.3/fc; CVAE_MNIST's decoder MLP.L0/L1 = our body.0/body.2, its "
    "encoder left as drawn: the server never uses it; checked: the same outputs as ours on random inputs) and packed "
    "by its TensorBuffer as its workers send them",
    "FedAvg of each architecture: its pcode.aggregation.fedavg._fedavg (uniform), as Master._avg_over_archs calls it",
    "test data: its prepare_data.get_dataset('fashionmnist', split='test') (ToTensor, --pn_normalize False) read "
    "from Debian's dataset-fashion-mnist files (download=False); batch 64, not shuffled",
    "stdout of the official code captured (its prints), the figures data_clean writes go to a scratch folder",
]
MD_SHIMS = [
    "partition: pcode.datasets.partition_data.shared_targets_of_partitions (the label histograms its partitioner "
    "records) set from our partition stage's class counts, client k = official client k + 1",
    "data_clean observed, not changed: the harness compares the indices it keeps with the 80 % nearest the mean of "
    "the same images (official_cleaning); the time of that check is subtracted from server_seconds",
]
FEDDF_SHIMS = [
    "distillation data: our prepared digits training images (uint8 / 255, dummy labels) in place of MNIST, sampled "
    "by its partition_data.DataSampler (random_sampling, data_percentage 1.0, conf.random_state) and loaded as its "
    "Aggregator._define_aggregation_data loads them (batch conf.batch_size, shuffle True, drop_last False)",
    "validation: the test loader passed as val_data_loader (no validation split: our clients train on their whole "
    "partition), early_stopping_server_batches beyond the last batch (no early stop); master_utils.validate "
    "observed (each evaluation's top-1 recorded: final = after the last batch, best = max after batch 0)",
]


@contextlib.contextmanager
def quiet():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        yield buf


# ---------------------------------------------------------------------------------------------------- ours
def our_params(seed: int, args) -> dict:
    params = yaml.safe_load((REPO / PARAMS).read_text())  # FedMHO's pipeline, then ours
    params.update({
        "profile": "paper", "seed": seed, "dataset": "fmnist", "datasets": ["fmnist"], "partition": "dirichlet_feddf",
        "alpha": args.alpha,
        "clients": 10, "model": "cnn_mnist", "methods": ["fedmho", "feddf_vote"],
        "data": {"mirror": str(FMNIST_DEBIAN)}, "parts": PARTS,
        # the classifiers: Adam 5e-4 (the pipeline's Table X setting for its small CNNs, part x_cnn) in place of
        # Table III's SGD 5e-3 x 200 epochs: the softmax-output CNN learns too slowly with SGD in a few epochs;
        # the CVAEs: Table III's values with fewer epochs (--local-epochs, --cvae-epochs)
        "local": {"epochs": args.local_epochs, "batch_size": 64, "optimizer": "adam", "lr": 5e-4, "momentum": 0.9,
                  "weight_decay": 0.0, "augment": "none", "init": "shared"},
        "cvae": {"epochs": args.cvae_epochs, "batch_size": 64, "lr": 5e-2, "beta": 1.0, "reduction": "batch_mean"},
        "runtime": {"threads": args.threads},
        "server": {"fedmho": {"kd": "md", "samples": args.samples},
                   "feddf_vote": {"aux_data": "digits", "epochs": args.feddf_epochs,
                                  "steps_per_epoch": args.feddf_steps, "batch_size": args.batch_size}},
    })
    return params


def our_run(work: Path, seed: int, args) -> dict:
    """Our stages in ``work`` (a scratch folder with its own params.yaml), as papers/fedmho/dvc.yaml runs them."""
    (work / PARAMS).parent.mkdir(parents=True, exist_ok=True)
    (work / PARAMS).write_text(yaml.safe_dump(our_params(seed, args), sort_keys=False))
    exp = ["--experiment", "peer"]
    stage = stage_runner(work, "--params", PARAMS)

    def column(method: str, tag: str, parts: str, *sets: str) -> dict:
        extra = ["--set", *sets] if sets else []
        name = f"{method}-{tag}" if tag else method
        timed = work / f"eval-seconds-{name}.json"  # the server's evaluations, timed inside it (eval_timer.py)
        stage(EVAL_TIMER, str(timed), "osfl.stages.server", *exp, "--method", method, f"--tag={tag}", "--parts", parts,
              *extra)
        stage("osfl.stages.evaluate", *exp, "--method", method, f"--tag={tag}", *extra)
        run = json.loads((work / "results" / "peer" / "runs" / f"{name}.json").read_text())
        spent = json.loads(timed.read_text())
        # the same work as an official loop that tests once: all but one of our evaluations taken out (F13)
        extra_evals = spent["eval_seconds"] * (spent["evaluations"] - 1) / max(1, spent["evaluations"])
        return {"final": run["acc_final"], "best": run["acc_best"], "server_seconds": run["server_seconds"],
                "evaluations": spent["evaluations"], "eval_seconds": spent["eval_seconds"],
                "server_one_test_seconds": run["server_seconds"] - extra_evals}

    stage("osfl.stages.prepare", "--experiment", "fmnist")
    stage("osfl.stages.partition", *exp)
    t = {}
    for part in PARTS:
        stage("osfl.stages.train_part", *exp, "--part", part["name"])
        t[part["name"]] = json.loads((work / "results" / "peer" / "runtime" / f"clients-{part['name']}.json")
                                     .read_text())["seconds"]
    clients = json.loads((work / "results" / "peer" / "clients-cnn.json").read_text())
    out = {"clients": {"client_acc_mean": clients["local_acc_mean"], "local_seconds": t["cnn"],
                       "cvae_seconds": t["cvae_small"]}}
    if "md" in args.rows:
        out["md"] = column("fedmho", "md", "cnn,cvae_small")
        if args.noclean_arm:
            out["md_noclean"] = column("fedmho", "md-noclean", "cnn,cvae_small", "server.fedmho.cleaning=none")
    if "feddf" in args.rows:
        out["feddf"] = column("feddf_vote", "", "cnn")
    return out


def our_clients(work: Path) -> tuple[dict, dict, dict]:
    """Our trained clients: {id: classifier state}, {id: decoder state}, {id: class counts} (ids from 0; the
    counts are the partition's, as the decoder uploads carry them)."""
    from osfl.clients.upload import read_uploads
    from osfl.partition import load_partition

    clients = work / "models" / "peer" / "clients"
    cls = {u.client_id: u.state_dict() for u in read_uploads(clients / "cnn")}
    dec = {u.client_id: u.state_dict() for u in read_uploads(clients / "cvae_small")}
    pt = load_partition(work / "data" / "partitions" / "peer" / "partition.json")
    return cls, dec, {k: np.asarray(pt.class_counts[k]) for k in range(len(pt.client_indices))}


def digits_images(work: Path) -> torch.Tensor:
    """The digits training images our feddf_vote distilled on (prepared by its server stage), float in [0, 1]."""
    from osfl.data import load_prepared

    x = load_prepared(work / "data" / "aux" / "digits").x_train
    return torch.from_numpy(np.ascontiguousarray(x)).float().div_(255.0)


def renamed(state: dict, names: dict) -> dict:
    return {names[k.rsplit(".", 1)[0]] + "." + k.rsplit(".", 1)[1]: v for k, v in state.items()}


# ---------------------------------------------------------------------------------------------------- official
def official_conf(mods, argv: list[str], seed: int, n_clients: int):
    """The official ``conf``: its parameters.get_args() on ``argv``, then what its main.py sets before the run."""
    parameters, param_parser, create_model = mods
    saved = sys.argv
    sys.argv = ["main.py", *argv]
    try:
        conf = parameters.get_args()
    finally:
        sys.argv = saved
    conf.graph = types.SimpleNamespace(on_cuda=False, rank=0, comm_round=1, primary_device="cpu")
    conf.manual_seed = seed
    conf.random_state = np.random.RandomState(conf.manual_seed)
    conf.arch_info = param_parser.dict_parser(conf.complex_arch)
    conf.arch_info["worker"] = conf.arch_info["worker"].split(":")
    conf._fl_aggregate = conf.fl_aggregate
    conf.fl_aggregate = param_parser.dict_parser(conf.fl_aggregate)
    conf.logger = types.SimpleNamespace(log=lambda *a, **k: None)
    conf.clientid2arch = {cid: create_model.determine_arch(conf, client_id=cid, use_complex_arch=True)
                          for cid in range(1, 1 + n_clients)}
    return conf


def common_argv(args, seed: int) -> list[str]:
    """The README's flags that both runs share, with our values (data, model, seed, CPU)."""
    return ["--arch", "cnn", "--data", "fashionmnist", "--batch_size", str(args.batch_size), "--pn_normalize", "False",
            "--partition_data", "non_iid_dirichlet", "--non_iid_alpha", str(args.alpha), "--participation_ratio", "1",
            "--n_comm_rounds", "1", "--on_cuda", "False", "--manual_seed", str(seed), "--same_seed_process", "True",
            "--use_hog_feature", "False", "--pin_memory", "False", "--num_workers", "0"]


def md_argv(args, seed: int) -> list[str]:
    return common_argv(args, seed) + [
        "--complex_arch", "master=cnn,worker=cnn:cvae,num_clients_per_model=5", "--n_clients", "10",
        "--val_data_ratio", "0", "--fl_aggregate", "scheme=semi_supervised,clean_rate=0.8", "--latent_size", "2",
        "--num_synthesis_sample", str(args.samples), "--is_md", "True"]


def feddf_scheme(args) -> str:
    total = args.feddf_epochs * args.feddf_steps
    return ("scheme=noise_knowledge_transfer,update_student_scheme=avg_logits,data_source=other,data_type=train,"
            f"data_scheme=random_sampling,data_name=digits,data_percentage=1.0,total_n_server_pseudo_batches={total},"
            f"eval_batches_freq={args.feddf_steps},early_stopping_server_batches={total + 1}")


def feddf_argv(args, seed: int) -> list[str]:
    return common_argv(args, seed) + [
        "--complex_arch", "master=cnn,worker=cnn,num_clients_per_model=5", "--n_clients", "5",
        "--val_data_ratio", "0", "--fl_aggregate", feddf_scheme(args)]


def official_cohort(conf, create_model, fedavg, tensor_buffer, cls: dict, dec: dict):
    """The master's client_models (one per architecture), the flattened client models as received, and the uniform
    FedAvg per architecture (Master._avg_over_archs)."""
    client_models = dict(create_model.define_model(conf, to_consistent_model=False, arch=arch)
                         for arch in sorted(set(conf.clientid2arch.values())))
    flat = {}
    for cid, arch in conf.clientid2arch.items():
        model = copy.deepcopy(client_models[arch])
        if arch == "cnn":
            model.load_state_dict(renamed(cls[cid - 1], CNN_NAMES))
        else:
            model.decoder.load_state_dict(renamed(dec[cid - 1], DECODER_NAMES))
        same_outputs(model, arch, cls[cid - 1] if arch == "cnn" else dec[cid - 1])
        flat[cid] = tensor_buffer.TensorBuffer(list(model.state_dict().values()))
    fedavg_models = {}
    for arch in sorted(set(conf.clientid2arch.values())):
        mine = {cid: f for cid, f in flat.items() if conf.clientid2arch[cid] == arch}
        fedavg_models[arch] = fedavg._fedavg(conf.clientid2arch, len(mine), mine, client_models)
    return client_models, flat, fedavg_models


@torch.no_grad()
def same_outputs(official: torch.nn.Module, arch: str, state: dict) -> None:
    """The official model with our weights computes what ours computes (random inputs, a private generator)."""
    from osfl.models import build_model

    g = torch.Generator().manual_seed(0)
    if arch == "cnn":
        ours = build_model("cnn_mnist", (1, 28, 28), 10)
        ours.load_state_dict(state)
        x = torch.rand(16, 1, 28, 28, generator=g)
        a, b = official.eval()(x), ours.eval()(x)
    else:
        ours = build_model("cvae_small", (1, 28, 28), 10).decoder
        ours.load_state_dict(state)
        z, y = torch.randn(16, official.latent_size, generator=g), torch.arange(16) % 10
        a, b = official.inference(z, c=y.view(-1, 1)), ours(z, y).reshape(16, -1)
    if not torch.allclose(a, b, atol=1e-6):
        raise RuntimeError(f"official {arch} with our weights differs from ours by {(a - b).abs().max():.2e}")


def test_loader(prepare_data, conf, data_root: Path) -> DataLoader:
    test = prepare_data.get_dataset(conf, "fashionmnist", datasets_path=str(data_root), split="test", download=False)
    return DataLoader(test, batch_size=64, shuffle=False, num_workers=0)


@torch.no_grad()
def accuracy(model, loader) -> float:
    model.eval()
    correct = total = 0
    for x, y in loader:
        correct += int((model(x).argmax(1) == y).sum())
        total += len(y)
    return 100.0 * correct / total


MODULES = ("parameters", "pcode.utils.param_parser", "pcode.create_model", "pcode.aggregation.fedavg",
           "pcode.utils.tensor_buffer", "pcode.datasets.prepare_data")


def official_md(work: Path, seed: int, args, data_root: Path, cls, dec, hist) -> dict:
    """FedMHO-MD: semi_supervised.aggregate on our clients (see the module doc)."""
    import matplotlib

    matplotlib.use("Agg")
    torch.set_num_threads(args.threads)
    figures = work / "official-figures"
    figures.mkdir(exist_ok=True)
    with official_modules(PEER, *MODULES, "pcode.aggregation.semi_supervised", "pcode.datasets.partition_data") as (
            parameters, param_parser, create_model, fedavg, tensor_buffer, prepare_data, ss, pdata), cpu_device(), \
            quiet() as out:
        conf = official_conf((parameters, param_parser, create_model), md_argv(args, seed), seed, 10)
        torch.manual_seed(seed)
        np.random.seed(seed)
        client_models, flat, fedavg_models = official_cohort(conf, create_model, fedavg, tensor_buffer, cls, dec)
        pdata.shared_targets_of_partitions = {k: [(c, int(n)) for c, n in enumerate(h) if n > 0]
                                              for k, h in sorted(hist.items())}.items()
        loader = test_loader(prepare_data, conf, data_root)
        fedavg_acc = accuracy(fedavg_models["cnn"], loader)

        real_clean, kept_nearest, check_seconds = ss.data_clean, [], [0.0]

        def observed_clean(dataset, device, category, threshold, **kw):
            kept = real_clean(dataset=dataset, device=device, category=category, threshold=threshold, **kw)
            t = time.perf_counter()
            feats = torch.stack([dataset[i][0].reshape(-1) for i in range(len(dataset))]).double()
            dist = torch.norm(feats - feats.mean(0), dim=1)
            nearest = set(torch.argsort(dist, stable=True)[: int(threshold * len(dataset))].tolist())
            idx = [int(i) for i in kept.indices]
            kept_nearest.append(sum(i in nearest for i in idx) / max(1, len(idx)))
            check_seconds[0] += time.perf_counter() - t
            return kept

        ss.data_clean = observed_clean
        cwd = os.getcwd()
        os.chdir(figures)
        torch.manual_seed(seed)
        np.random.seed(seed)
        t0 = time.perf_counter()
        try:
            result = ss.aggregate(conf, fedavg_models, client_models, criterion=None, metrics=None,
                                  flatten_local_models=flat, test_data_loader=loader,
                                  total_semi_supervised_data=[[] for _ in range(10)], train_global_model=True)
        finally:
            os.chdir(cwd)
        seconds = time.perf_counter() - t0 - check_seconds[0]
        final = accuracy(result[0]["cnn"], loader)
    printed = re.findall(r"test accuracy: ([0-9.]+) %", out.getvalue())
    if not printed or abs(float(printed[-1]) - final) > 1e-3:
        raise RuntimeError(f"official FedMHO printed {printed} but its returned model tests {final:.3f}")
    return {"final": final, "server_seconds": seconds, "fedavg_start": fedavg_acc,
            "official_cleaning": float(np.mean(kept_nearest))}


def official_feddf(work: Path, seed: int, args, data_root: Path, cls) -> dict:
    """FedDF: noise_knowledge_transfer.aggregate on our classifier clients (see the module doc)."""
    torch.set_num_threads(args.threads)
    x_digits = digits_images(work)
    with official_modules(PEER, *MODULES, "pcode.aggregation.noise_knowledge_transfer", "pcode.datasets.partition_data",
                          "pcode.utils.cross_entropy", "pcode.create_metrics") as (
            parameters, param_parser, create_model, fedavg, tensor_buffer, prepare_data, nkt, pdata, ce,
            create_metrics), cpu_device(), quiet():
        conf = official_conf((parameters, param_parser, create_model), feddf_argv(args, seed), seed, 5)
        torch.manual_seed(seed)
        np.random.seed(seed)
        client_models, flat, fedavg_models = official_cohort(conf, create_model, fedavg, tensor_buffer, cls, {})
        loader = test_loader(prepare_data, conf, data_root)
        fedavg_acc = accuracy(fedavg_models["cnn"], loader)
        criterion = ce.CrossEntropyLoss(reduction="mean")
        metrics = create_metrics.Metrics(client_models["cnn"], task="classification")
        sampler = pdata.DataSampler(conf, data=TensorDataset(x_digits, torch.zeros(len(x_digits), dtype=torch.long)),
                                    data_scheme=conf.fl_aggregate["data_scheme"],
                                    data_percentage=conf.fl_aggregate["data_percentage"])
        sampler.sample_indices()
        distill = DataLoader(sampler.use_indices(), batch_size=conf.batch_size, shuffle=True, num_workers=0,
                             pin_memory=False, drop_last=False)
        real_validate, accs = nkt.master_utils.validate, []

        def observed_validate(*a, **k):
            perf = real_validate(*a, **k)
            accs.append(float(perf["top1"]))
            return perf

        nkt.master_utils.validate = observed_validate
        torch.manual_seed(seed)
        np.random.seed(seed)
        t0 = time.perf_counter()
        result = nkt.aggregate(conf, fedavg_models, client_models, criterion, metrics, flat, fa_val_perf=None,
                               distillation_sampler=sampler, hog_distillation_sampler=None,
                               distillation_data_loader=distill, hog_distillation_data_loader=None,
                               val_data_loader=loader, hog_val_data_loader=None, test_data_loader=loader,
                               logits_remain=10)
        seconds = time.perf_counter() - t0
        returned = accuracy(result[0]["cnn"], loader)
    expected = 1 + args.feddf_epochs
    if len(accs) != expected:
        raise RuntimeError(f"official FedDF evaluated {len(accs)} times, expected {expected} (early stop?)")
    return {"final": accs[-1], "best": max(accs[1:]), "server_seconds": seconds, "returned": returned,
            "fedavg_start": fedavg_acc}


# ---------------------------------------------------------------------------------------------------- main
def settings(args, row: str) -> dict:
    base = {
        "dataset": "fmnist (Debian dataset-fashion-mnist); test on all 10,000 test images",
        "cohort": "FedMHO Table I at CPU scale: clients 1-5 cnn_mnist (= official CNN_MNIST, softmax output) in "
                  "place of VGG-9, clients 6-10 cvae_small (= official CVAE_MNIST, latent 2); trained once per seed "
                  "by our train_part stage, both arms read the same weights",
        "partition": f"dirichlet_feddf (FedDF's partitioner), alpha {args.alpha}, 10 clients (our partition stage)",
        "local": {"epochs": args.local_epochs, "batch_size": 64, "optimizer": "Adam", "lr": 5e-4,
                  "paper": "SGD lr 5e-3 momentum 0.9, 200 epochs (Table III; the official worker's hard-coded SGD "
                           "0.005 for arch cnn); Adam 5e-4 is the pipeline's Table X setting for its small CNNs, used "
                           "here so that the softmax-output CNN reaches its working regime in a few epochs"},
        "cvae": {"epochs": args.cvae_epochs, "official_fmnist_epochs": 40, "batch_size": 64, "optimizer": "Adam",
                 "lr": 5e-2},
        "threads": args.threads,
        "server_seconds": "official: the aggregate call (FedMHO: tests once at the end; FedDF: evaluates the "
                          "initial model and after every eval_every batches on the test loader); ours: the server "
                          "stage's method time, which evaluates on the test set before training and after every "
                          "server epoch (FedMHO: 21 evaluations, FedDF: epochs + 1)",
        "server_one_test_seconds": "FedMHO-MD's timer for the speed ratio (the same work on both sides, F13): "
                                   "official, its server_seconds (it tests once); ours, server_seconds less all but "
                                   "one of its evaluations, each timed inside the run by benchmarks/peers/"
                                   "eval_timer.py (evaluations, eval_seconds)",
    }
    if row == "md":
        base["server"] = {"samples": args.samples, "paper_samples": 6000, "clean_rate": 0.8, "epochs": 20,
                          "batch_size": 64, "lr": 5e-4,
                          "optimizer": "Adam", "kd": "md (KLDivLoss() 'mean' to softmax(mean classifier output))",
                          "init": "uniform FedAvg of the 5 classifiers",
                          "official": f"semi_supervised.aggregate, flags: {' '.join(md_argv(args, 0))} "
                                      "(seed = run seed)",
                          "ours": "osfl.stages.server --method fedmho --tag md --parts cnn,cvae_small "
                                  "--set server.fedmho.kd=md",
                          "ours_cleaning_none": "the same with server.fedmho.cleaning=none (the official cleaning's "
                                                "effect, a random 80 %)" if args.noclean_arm else "not run"}
    else:
        total = args.feddf_epochs * args.feddf_steps
        base["server"] = {"teachers": "the 5 classifier clients (the CVAE clients take no part in FedDF)",
                          "unlabeled": "digits (1,437 training images, 8x8 upsampled to 28x28): MNIST, FedMHO's "
                                       "choice, is not available offline",
                          "batches": total, "paper_batches": 6000, "eval_every": args.feddf_steps,
                          "batch_size": args.batch_size, "lr": 2e-4, "cosine": True, "T": 1,
                          "early_stopping": "none (official: 400 batches on a 10 % validation split)",
                          "official": f"noise_knowledge_transfer.aggregate, --fl_aggregate {feddf_scheme(args)}",
                          "ours": f"osfl.stages.server --method feddf_vote --parts cnn (server.feddf_vote: aux_data "
                                  f"digits, epochs {args.feddf_epochs}, steps_per_epoch {args.feddf_steps}, batch_size "
                                  f"{args.batch_size})"}
    return base


def row_record(row: str, args, rows: dict, clients: list[dict]) -> dict:
    layer = {"md": "server: FedMHO-MD on the same trained clients (CNN + CVAE-small)",
             "feddf": "server: FedDF (FedMHO's code base) on the same trained classifier clients"}[row]
    shims = COMMON_SHIMS + (MD_SHIMS if row == "md" else FEDDF_SHIMS) + OFFICIAL[PEER].stub_notes()
    arms = {arm: {k: summary([r[k] for r in rs]) for k in rs[0]} for arm, rs in rows.items()}
    record = {
        "harness": "benchmarks/peers/fedmho_server.py", "peer": PEER, "layer": layer,
        "method": {"md": "FedMHO-MD", "feddf": "FedDF"}[row],
        "official": OFFICIAL[PEER].as_dict(), "shims": shims, "torch": torch.__version__,
        "settings": settings(args, row), "seeds": args.seeds, "arms": arms,
        **({"timer": "server_one_test_seconds"} if row == "md" else {}),
        "clients": {k: summary([c[k] for c in clients]) for k in clients[0]},
    }
    return record


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--rows", nargs="+", choices=("md", "feddf"), default=["md", "feddf"])
    p.add_argument("--local-epochs", type=int, default=5, help="classifier clients' local epochs (paper 200)")
    p.add_argument("--cvae-epochs", type=int, default=10, help="CVAE clients' epochs (official Fashion-MNIST 40)")
    p.add_argument("--samples", type=int, default=2000, help="FedMHO's M, --num_synthesis_sample (official default "
                                                             "and ours for Fashion-MNIST 6000; Fig. 8's smallest 2000)")
    p.add_argument("--feddf-epochs", type=int, default=5, help="our FedDF server epochs = official evaluations")
    p.add_argument("--feddf-steps", type=int, default=100,
                   help="batches per epoch = official eval_batches_freq (README 200); total = epochs x steps "
                        "(README 6000)")
    p.add_argument("--batch-size", type=int, default=64, help="the README's --batch_size (FedDF's loader batch)")
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--noclean-arm", action=argparse.BooleanOptionalAction, default=True,
                   help="also run ours with server.fedmho.cleaning=none (the official cleaning's effect)")
    p.add_argument("--scratch", type=Path, default=Path(os.environ.get("OSFL_PEERS", "/tmp/peers")) / "work")
    p.add_argument("--out-dir", type=Path, default=REPO / "benchmarks/peers/records")
    args = p.parse_args(argv)
    if "md" in args.rows and args.samples < 1000:
        p.error("--samples must be at least 1000: the official data_clean plots the first 64 kept samples of each "
                "class (pcode/utils/data_clean.py:19-21) and fails on a class with fewer")
    torch.set_num_threads(args.threads)
    data_root = args.scratch / "fedmho-data"
    torchvision_root(data_root / "fashionmnist")
    rows = {"md": {"official": [], "ours": []}, "feddf": {"official": [], "ours": []}}
    if args.noclean_arm:
        rows["md"]["ours_cleaning_none"] = []
    clients = []
    for seed in args.seeds:
        work = fresh_dir(args.scratch / f"fedmho-server-s{seed}")
        t = time.perf_counter()
        ours = our_run(work, seed, args)
        clients.append(ours["clients"])
        cls, dec, hist = our_clients(work)
        line = [f"seed {seed}: clients {ours['clients']['client_acc_mean']:.2f}"]
        if "md" in args.rows:
            off = official_md(work, seed, args, data_root, cls, dec, hist)
            # the official aggregate tests once: its seconds are already those of one test (F13)
            rows["md"]["official"].append({"final": off["final"], "server_seconds": off["server_seconds"],
                                           "server_one_test_seconds": off["server_seconds"]})
            timed = ("final", "server_seconds", "server_one_test_seconds", "evaluations", "eval_seconds")
            rows["md"]["ours"].append({k: ours["md"][k] for k in timed})
            if args.noclean_arm:
                rows["md"]["ours_cleaning_none"].append({k: ours["md_noclean"][k] for k in timed})
            rows["md"].setdefault("_diag", []).append({"fedavg_start": off["fedavg_start"],
                                                       "official_cleaning": off["official_cleaning"]})
            line.append(f"FedMHO-MD official {off['final']:.2f} ({off['server_seconds']:.1f} s), ours "
                        f"{ours['md']['final']:.2f} ({ours['md']['server_seconds']:.1f} s, "
                        f"{ours['md']['server_one_test_seconds']:.1f} s with one test)"
                        + (f", ours cleaning=none {ours['md_noclean']['final']:.2f}" if args.noclean_arm else "")
                        + f" [start {off['fedavg_start']:.2f}, official kept-nearest {off['official_cleaning']:.2f}]")
        if "feddf" in args.rows:
            off = official_feddf(work, seed, args, data_root, cls)
            rows["feddf"]["official"].append({k: off[k] for k in ("final", "best", "server_seconds")})
            rows["feddf"]["ours"].append({k: ours["feddf"][k] for k in ("final", "best", "server_seconds")})
            rows["feddf"].setdefault("_diag", []).append({"fedavg_start": off["fedavg_start"],
                                                          "official_returned": off["returned"]})
            line.append(f"FedDF official {off['final']:.2f}/{off['best']:.2f} ({off['server_seconds']:.0f} s), ours "
                        f"{ours['feddf']['final']:.2f}/{ours['feddf']['best']:.2f} "
                        f"({ours['feddf']['server_seconds']:.0f} s) [final/best]")
        print("; ".join(line) + f" ({time.perf_counter() - t:.0f} s)", flush=True)
    for row in args.rows:
        diag = rows[row].pop("_diag")
        name = {"md": "fedmho-md.json", "feddf": "feddf.json"}[row]
        record = row_record(row, args, rows[row], clients)
        record["diagnostics"] = {k: summary([d[k] for d in diag]) for k in diag[0]}
        write_record(args.out_dir / name, record)


if __name__ == "__main__":
    main()
