"""Clients trained one by one in the stage's process against the same clients in worker processes
(``OSFL_CLIENT_PROCESSES``, osfl.clients.parallel), in one run of this script on the same data.

``--clients`` clients (default 4) of ``--samples`` images each (random, 1x28x28), ``--arch`` (default cnn2), one
thread per process (the pipelines' default). Prints both wall times, the ratio and whether the trained weights are
the same bits, and writes them as JSON. Not a test: the ratio depends on the machine's free cores (and, on a GPU, on
how much one client leaves of the card). Usage: ``python benchmarks/bench_client_processes.py [--processes 2]``.
"""
from __future__ import annotations

import argparse
import os
import time

import torch

from osfl.clients.batched import train_clients
from osfl.clients.parallel import ENV
from osfl.models import build_model
from _bench import device_name, sync, write_results  # benchmarks/_bench.py (run as a script: its folder is on sys.path)


def run(processes: int, args, device) -> tuple[float, list[dict]]:
    os.environ[ENV] = str(processes)
    g = torch.Generator().manual_seed(0)
    data = [(torch.randint(0, 256, (args.samples, 1, 28, 28), dtype=torch.uint8, generator=g).to(device),
             torch.randint(0, 10, (args.samples,), generator=g).to(device)) for _ in range(args.clients)]
    torch.manual_seed(0)
    models = [build_model(args.arch, (1, 28, 28), 10).to(device) for _ in range(args.clients)]
    gens = [torch.Generator().manual_seed(k) for k in range(args.clients)]
    sync(device)
    t = time.perf_counter()
    train_clients(models, data, gens, batched=False, epochs=args.epochs, batch_size=64, lr=0.01, momentum=0.9,
                  weight_decay=0.0, augment="none")
    sync(device)
    return time.perf_counter() - t, [{k: v.cpu() for k, v in m.state_dict().items()} for m in models]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--samples", type=int, default=3000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--arch", default="cnn2")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", default="results/bench/client_processes.json")
    args = p.parse_args()
    torch.set_num_threads(1)
    device = torch.device(args.device)
    t_one, a = run(1, args, device)
    t_many, b = run(args.processes, args, device)
    same = all(x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x) for x, y in zip(a, b))
    row = {"device": device_name(device), "arch": args.arch, "clients": args.clients, "samples": args.samples,
           "epochs": args.epochs, "processes": args.processes, "one_process_s": round(t_one, 2),
           "processes_s": round(t_many, 2), "ratio": round(t_one / t_many, 3), "same_bits": same,
           "cpu_count": os.cpu_count()}
    print(f"{args.clients} {args.arch} clients on {row['device']}: one process {t_one:.1f} s, {args.processes} "
          f"processes {t_many:.1f} s: ratio {t_one / t_many:.2f}x; same bits: {same}")
    write_results(args.out, [row])


if __name__ == "__main__":
    main()
