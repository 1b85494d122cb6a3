"""The farm (osfl.farm) against a sequential `dvc repro`: the same grid, the same commit, wall time and ratio.

Two clones of this repository's HEAD at ``--profile`` with ``--methods`` (committed in each clone, since workers
check out a commit), each with an empty local DVC remote: one runs `dvc repro`, the other `python -m osfl.farm
dvc.yaml` on a local Ray instance with ``--cpus`` CPUs (so that many worker stages at once). Every stage keeps the
params' thread count (``--threads``), so both give the same bits; the benchmark checks that both report the same
numbers and hold the same model weights. With a GPU cluster, pass ``--address`` to time a cluster instead of the
local instance.

    python benchmarks/bench_farm.py [--profile smoke] [--cpus 2] [--out results/bench/farm.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from osfl.farm.worker import dvc_env

ROOT = Path(__file__).resolve().parents[1]


def sh(*args: str, cwd: Path) -> str:
    p = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=dvc_env())
    if p.returncode:
        raise SystemExit(f"{' '.join(args)} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def clone(base: Path, name: str, params: dict, threads: int) -> Path:
    work = base / name
    sh("git", "clone", "-q", str(ROOT), str(work), cwd=base)
    pf = work / "params.yaml"
    merged = {**yaml.safe_load(pf.read_text()), **params}
    merged["runtime"]["threads"] = threads
    pf.write_text(yaml.safe_dump(merged, sort_keys=False, allow_unicode=True))
    sh("git", "-c", "user.email=b@example.com", "-c", "user.name=bench", "commit", "-q", "-am", "bench", cwd=work)
    (base / f"{name}-remote").mkdir()
    sh(sys.executable, "-m", "dvc", "remote", "add", "-f", "-d", "--local", "bench", str(base / f"{name}-remote"),
       cwd=work)
    return work


def same_results(a: Path, b: Path) -> bool:
    """The two runs' reported numbers and every model's weights agree (the output folders' hashes do not: their
    manifests record wall-clock seconds)."""
    import torch

    metrics = [json.loads((w / "reports" / "main" / "metrics.json").read_text())["methods"] for w in (a, b)]
    files = [sorted(p.relative_to(w) for p in (w / "models" / "main").rglob("*.pt")) for w in (a, b)]
    if metrics[0] != metrics[1] or files[0] != files[1] or not files[0]:
        return False
    for f in files[0]:
        x, y = (torch.load(w / f, weights_only=True) for w in (a, b))
        if x.keys() != y.keys() or not all(torch.equal(v, y[k]) for k, v in x.items()):
            return False
    return True


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="smoke")
    p.add_argument("--methods", default="fedavg,ensemble,ot,feddf,dense,coboost,fedhydra")
    p.add_argument("--threads", type=int, default=1, help="runtime.threads of every stage")
    p.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray instance")
    p.add_argument("--address", default=None, help="an existing Ray cluster instead of a local instance")
    p.add_argument("--out", default="results/bench/farm.json")
    args = p.parse_args()
    params = {"profile": args.profile, "methods": args.methods.split(",")}
    with tempfile.TemporaryDirectory(prefix="bench-farm-") as tmp:
        base = Path(tmp)
        seq, farm = (clone(base, name, params, args.threads) for name in ("sequential", "farm"))
        t = time.perf_counter()
        ran = sh(sys.executable, "-m", "dvc", "repro", cwd=seq).count("Running stage")
        t_seq = time.perf_counter() - t
        cmd = [sys.executable, "-m", "osfl.farm", "dvc.yaml", "--workdir", str(base / "workers"),
               "--record", str(base / "farm.json")]
        cmd += ["--address", args.address] if args.address else ["--cpus", str(args.cpus)]
        t = time.perf_counter()
        log = sh(*cmd, cwd=farm)
        t_farm = time.perf_counter() - t
        same = same_results(seq, farm)
        tasks = [t for t in json.loads((base / "farm.json").read_text())["tasks"].values() if t["computed"]]
    print(log[log.find("[farm] summary"):])
    # the farm's overhead per task: a task's seconds less its stage command's own (checkout, landing, DVC, push)
    over = [t["seconds"] - t["command_s"] for t in tasks]
    phases = {k: round(sum(t[k] for t in tasks) / max(1, len(tasks)), 2)
              for k in ("checkout_s", "land_s", "repro_s", "push_s", "command_s")}
    row = {"grid": f"main pipeline, profile {args.profile}, methods {args.methods}", "stages": ran,
           "threads": args.threads, "ray_cpus": args.cpus, "address": args.address, "sequential_s": round(t_seq, 1),
           "farm_s": round(t_farm, 1), "ratio": round(t_seq / t_farm, 3), "same_outputs": same,
           "cpu_count": os.cpu_count(), "worker_tasks": len(tasks),
           "overhead_per_task_s": round(sum(over) / max(1, len(over)), 2), "task_phases_mean_s": phases}
    print(f"sequential dvc repro {t_seq:.1f} s, farm {t_farm:.1f} s ({ran} stages, {args.cpus} Ray CPUs, "
          f"threads {args.threads}): ratio {t_seq / t_farm:.2f}x; same outputs: {same}")
    print(f"farm overhead per worker task: {row['overhead_per_task_s']:.1f} s over {len(tasks)} tasks (mean "
          f"seconds: {phases})")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"results": [row]}, indent=2))
    if not same:
        raise SystemExit("the farm's outputs differ from the sequential run's")


if __name__ == "__main__":
    main()
