"""bf16 autocast against fp32 on this CPU: accuracy (mean ± std over seeds) and time, on the same runs.

In a scratch folder with the root params.yaml (Fashion-MNIST from Debian's dataset-fashion-mnist, the ``--profile``),
our stages run as ``dvc repro`` would: per seed of ``--clients-seeds`` a partition and cohort of clients, trained in
fp32 and again in bf16 (``runtime.precision``; paired: only the precision differs); then every server method of
``--methods`` in fp32 and in bf16 on the first seed's fp32 clients, once per server seed of ``--seeds`` (paired too). Prints
each arm's mean ± std and the bf16/fp32 time ratio (same process, same machine), and writes a JSON record. The
clients are kept in the scratch folder and reused by a later call. Not a test: numbers depend on the machine.
Usage: ``python -m benchmarks.bench_precision [--seeds 0 1 2] [--clients-seeds 0 1 2] [--methods dense coboost
fedhydra] [--profile demo]``.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from benchmarks.peers.clients import (FMNIST_DEBIAN, REPO, our_workspace, stage_runner, summary,
                                      write_record)


def train_clients(work: Path, clients_seed: int, args) -> dict:
    """The partition and the clients, trained in fp32 and again in bf16 on it (seed ``clients_seed``); kept in
    ``work`` and reused by a later call (a precision whose runtime record exists is not trained again)."""
    stage = our_workspace(work, {"profile": args.profile, "seed": clients_seed, "dataset": "fmnist",
                                 "clients": args.clients, "data": {"mirror": str(FMNIST_DEBIAN)},
                                 "methods": args.methods, "runtime": {"threads": args.threads, "precision": "fp32"}})
    if not (work / "data" / "partitions" / "fp32" / "partition.json").exists():
        stage("osfl.stages.prepare", "--experiment", "fmnist")
        stage("osfl.stages.partition", "--experiment", "fp32")
    out: dict[str, dict] = {}
    for precision in ("fp32", "bf16"):
        results = work / "results" / precision
        if not (results / "runtime" / "clients.json").exists():
            stage("osfl.stages.train_clients", "--experiment", precision, "--partition-of", "fp32",
                  "--set", f"runtime.precision={precision}")
        out[f"clients/{precision}"] = {
            "client_acc_mean": json.loads((results / "clients.json").read_text())["local_acc_mean"],
            "local_seconds": json.loads((results / "runtime" / "clients.json").read_text())["seconds"]}
    return out


def run_servers(work: Path, seed: int, args) -> dict:
    """Every server of ``--methods`` in fp32 and in bf16 on the fp32 clients, with the server seed ``seed``."""
    stage = stage_runner(work)
    out: dict[str, dict] = {}
    for method in args.methods:
        for precision in ("fp32", "bf16"):
            tag = f"{precision}-s{seed}"
            argv = ["--experiment", "fp32", "--method", method, f"--tag={tag}",
                    "--set", f"runtime.precision={precision}", f"seed={seed}"]
            record = work / "results" / "fp32" / "runs" / f"{method}-{tag}.json"
            if not record.exists():  # evaluate writes it last: a run that finished is not repeated
                stage("osfl.stages.server", *argv)
                stage("osfl.stages.evaluate", *argv)
            run = json.loads(record.read_text())
            out[f"{method}/{precision}"] = {"final": run["acc_final"], "best": run["acc_best"],
                                            "server_seconds": run["server_seconds"]}
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="the servers' seeds")
    p.add_argument("--clients-seeds", type=int, nargs="+", default=[0],
                   help="the partitions' and the clients' seeds (a cohort each; the servers use the first's)")
    p.add_argument("--methods", nargs="+", default=["dense", "coboost", "fedhydra"])
    p.add_argument("--profile", default="demo", help="the profile of every stage (default demo: minutes per seed)")
    p.add_argument("--clients", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--scratch", type=Path, default=Path("/tmp/osfl-precision"))
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "records" / "precision.json")
    args = p.parse_args(argv)
    cohorts: dict[str, list[dict]] = {}
    for cseed in args.clients_seeds:
        t = time.perf_counter()
        for arm, values in train_clients(args.scratch / f"clients-s{cseed}", cseed, args).items():
            cohorts.setdefault(arm, []).append(values)
        print(f"clients (seed {cseed}) ready ({time.perf_counter() - t:.0f} s)", flush=True)
    work = args.scratch / f"clients-s{args.clients_seeds[0]}"
    rows: dict[str, list[dict]] = {}
    for seed in args.seeds:
        t = time.perf_counter()
        for arm, values in run_servers(work, seed, args).items():
            rows.setdefault(arm, []).append(values)
        print(f"server seed {seed} done ({time.perf_counter() - t:.0f} s)", flush=True)
    arms = {arm: {k: summary([r[k] for r in rs]) for k in rs[0]} for arm, rs in {**cohorts, **rows}.items()}
    print(f"{'arm':<22} {'accuracy (final)':>20} {'best':>20} {'seconds':>12}")
    for arm, m in arms.items():
        acc = m.get("final", m.get("client_acc_mean"))
        best = m.get("best")
        secs = m.get("server_seconds", m.get("local_seconds"))
        print(f"{arm:<22} {acc['mean']:>12.2f} ± {acc['std'] or 0:5.2f} "
              f"{'' if best is None else format(best['mean'], '>12.2f') + ' ± ' + format(best['std'] or 0, '5.2f'):>20} "
              f"{secs['mean']:>12.1f}")
    for what in ["clients"] + args.methods:
        key = "local_seconds" if what == "clients" else "server_seconds"
        fp32, bf16 = arms[f"{what}/fp32"][key]["mean"], arms[f"{what}/bf16"][key]["mean"]
        print(f"{what}: bf16 {fp32 / bf16:.2f}x as fast as fp32 ({fp32:.1f} s vs {bf16:.1f} s, mean over seeds)")
    write_record(args.out, {
        "harness": "benchmarks/bench_precision.py", "seeds": args.seeds, "clients_seeds": args.clients_seeds,
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "settings": {"profile": args.profile, "dataset": "fmnist (Debian dataset-fashion-mnist)",
                     "clients": args.clients, "threads": args.threads, "methods": args.methods,
                     "pairing": "per seed of clients_seeds, the clients trained in each precision on the same "
                                "partition (paired); every server in each precision on the first seed's fp32 "
                                "clients, with the server seeds of `seeds` (paired)"},
        "arms": arms})


if __name__ == "__main__":
    main()
