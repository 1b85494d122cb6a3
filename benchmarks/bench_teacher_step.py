"""The teacher work of one data-free generator step, four ways: vmap or a loop over the clients, with or without
the BN-statistics term (finding F35 of benchmarks/peers/findings.yaml).

One step here is what DENSE, Co-Boosting and FedHydra do to the teachers per generator step: every client model on
the synthetic batch, the ensemble's cross-entropy (plus the BN-statistics loss when it is on), back-propagated to
the INPUT (no generator, so the teachers' share is measured alone). The four arms run in one process, alternated,
on the same models and batch:

* ``vmap+bn``: ``BatchedEnsemble.forward_with_bn`` (ours in every recorded server run, DENSE at bn = 1);
* ``vmap``: ``BatchedEnsemble.forward`` (ours where the BN weight is 0: Co-Boosting, FedHydra at lambda1 = 0);
* ``loop+bn``: the clients called in turn with BN-statistics hooks (``BatchedEnsemble(batched=False)``);
* ``loop``: the clients called in turn, nothing collected (the official DENSE as it runs: its BN hooks find no
  layer, finding F5).

Prints seconds per step, each arm's speed against ``vmap+bn``, and the largest logit difference between arms. Not a test:
numbers depend on the machine. Usage: ``python benchmarks/bench_teacher_step.py [--arch cnn2] [--clients 5]
[--batch 256] [--repeats 8] [--threads 1]``.
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from osfl.distill import BatchedEnsemble
from osfl.models import build_model
from _bench import write_results  # benchmarks/_bench.py (run as a script: its folder is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="cnn2", help="client model (cnn2 for 1x28x28, cnn3/cnn3_bn for 3x32x32)")
    ap.add_argument("--clients", type=int, default=5)
    ap.add_argument("--batch", type=int, default=256, help="synthetic batch (DENSE's and the peer rows': 256)")
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="benchmarks/out/teacher_step.json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    shape = (3, 32, 32) if args.arch.startswith("cnn3") or args.arch == "resnet18" else (1, 28, 28)
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    models = [build_model(args.arch, shape, 10) for _ in range(args.clients)]
    for m in models:  # running statistics of their own, as trained clients have
        m.train()
        with torch.no_grad():
            m(torch.rand(512, *shape, generator=gen))
        m.eval()
    x0, y = torch.rand(args.batch, *shape, generator=gen), torch.randint(0, 10, (args.batch,), generator=gen)
    ensembles = {True: BatchedEnsemble(models, batched=True), False: BatchedEnsemble(models, batched=False)}
    arms = {"vmap+bn": (True, True), "vmap": (True, False), "loop+bn": (False, True), "loop": (False, False)}

    def step(batched: bool, bn: bool) -> torch.Tensor:
        x = x0.clone().requires_grad_(True)
        ens = ensembles[batched]
        if bn:
            per_client, stats = ens.forward_with_bn(x)
            loss = F.cross_entropy(per_client.mean(0), y) + stats.sum()
        else:
            per_client = ens(x)
            loss = F.cross_entropy(per_client.mean(0), y)
        loss.backward()
        return per_client.detach()

    logits = {name: step(*arm) for name, arm in arms.items()}  # warm-up, and the logits compared below
    seconds = dict.fromkeys(arms, 0.0)
    for _ in range(args.repeats):
        for name, arm in arms.items():
            t0 = time.perf_counter()
            step(*arm)
            seconds[name] += time.perf_counter() - t0
    rows = []
    for name in arms:
        per = seconds[name] / args.repeats
        rows.append({"arm": name, "seconds_per_step": per, "speed_vs_vmap_bn": seconds["vmap+bn"] / seconds[name],
                     "largest_logit_difference": float((logits[name] - logits["vmap+bn"]).abs().max()), **vars(args)})
        print(f"{name:8s} {per:.3f} s/step  {seconds['vmap+bn'] / seconds[name]:.2f}x the speed of vmap+bn")
    print(f"loop (the official codes' path) vs vmap+bn (ours in the recorded runs): ratio "
          f"{seconds['vmap+bn'] / seconds['loop']:.2f}x")
    print(f"({args.clients} x {args.arch}, batch {args.batch}, {args.threads} thread(s), {args.repeats} repeats, "
          f"arms alternated; largest logit difference between arms "
          f"{max(r['largest_logit_difference'] for r in rows):.1e})")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
