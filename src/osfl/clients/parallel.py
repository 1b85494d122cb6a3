"""Clients trained one by one, several at a time, each in a process of its own: ``OSFL_CLIENT_PROCESSES=N``.

A client's local training reads only its own model, data and seeded generators, so where it runs changes nothing:
a client trained in a worker process gives the bits of the same client trained in the stage's own process (same
thread count, deterministic algorithms, the generators' states sent along; tested). On a 2-core CPU two clients
train at once; on a GPU several share the card (the one-by-one clients: models with dropout, Adam or DP-SGD, whose
batched path does not apply). Being a question of how fast, not of what, it is an environment variable rather than a
DVC param: a run with 2 processes is the run with 1, and each training stage's runtime record says which ran.

Workers are started with ``spawn`` (safe with CUDA and with torch's thread pools); each pins the parent's thread
count and deterministic algorithms (:func:`osfl.runtime.apply_execution`) before it trains. Progress comes back
through a queue, so the stage's progress bar and live logger stay in the stage's process. A training that needs a
closure that is called (``eval_fn`` with ``eval_every`` > 0: a local test curve) runs in the stage's process.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence

import torch

from ..errors import ConfigError

ENV = "OSFL_CLIENT_PROCESSES"


def client_processes() -> int:
    """The number of client worker processes asked for (``OSFL_CLIENT_PROCESSES``, default 1: none)."""
    raw = os.environ.get(ENV, "1")
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(ENV, f"must be an integer >= 1 (clients trained at once), got {raw!r}")
    return n


def local_curve(hp: dict) -> bool:
    """Whether the training evaluates the clients as it goes (``eval_every`` > 0 with an ``eval_fn``, a closure that
    stays in the stage's process); without it, ``eval_fn`` is never called and the clients may go to workers."""
    return bool(hp.get("eval_every")) and hp.get("eval_fn") is not None


def _train_one(job: dict) -> tuple[int, object, dict, float]:
    """In a worker process: one client's training; returns (index, TrainResult, trained state, seconds)."""
    from ..runtime import apply_execution
    from .training import prepare_model, train_classifier

    apply_execution(job["threads"], job["device"])
    device = torch.device(job["device"])
    gen = torch.Generator()
    gen.set_state(job["gen"])
    extra = {}
    if job["noise"] is not None:
        extra["noise_gen"] = torch.Generator()
        extra["noise_gen"].set_state(job["noise"])
    model = job["model"]
    queue, k = job["queue"], job["k"]
    t0 = time.perf_counter()
    res = train_classifier(prepare_model(model.to(device), job["accel"], device), job["x"].to(device),
                           job["y"].to(device), gen=gen, accel=job["accel"],
                           on_epoch=lambda e, loss: queue.put((k, e, loss)), **extra, **job["hp"])
    state = {name: t.detach().cpu() for name, t in model.state_dict().items()}
    return k, res, state, time.perf_counter() - t0


def train_in_processes(ks: Sequence[int], models, data, gens, noise_gens, *, processes: int, accel, hp: dict,
                       on_epoch: Callable[[int, int, float], None] | None):
    """Train clients ``ks`` (indices into ``models``/``data``/``gens``) in ``processes`` worker processes; each
    model is updated in place with its trained state, as the one-by-one path leaves it. Returns {k: (TrainResult,
    seconds)}."""
    ctx = mp.get_context("spawn")
    manager = ctx.Manager()
    queue = manager.Queue()
    threads = torch.get_num_threads()
    jobs = []
    for k in ks:
        x, y = data[k]
        jobs.append({"k": k, "model": models[k].cpu(), "x": x.cpu(), "y": y.cpu(), "gen": gens[k].get_state(),
                     "noise": None if noise_gens is None else noise_gens[k].get_state(), "hp": hp,
                     "accel": accel, "threads": threads, "device": str(x.device), "queue": queue})
    stop = threading.Event()

    def drain() -> None:  # progress from the workers, reported here
        while not stop.is_set() or not queue.empty():
            try:
                k, e, loss = queue.get(timeout=0.2)
            except Exception:  # queue.Empty through the manager's proxy
                continue
            if on_epoch is not None:
                on_epoch(k, e, loss)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out = {}
    try:
        with ProcessPoolExecutor(max_workers=min(processes, len(jobs)), mp_context=ctx) as pool:
            for k, res, state, seconds in pool.map(_train_one, jobs):
                models[k].load_state_dict(state)
                models[k].to(data[k][0].device).eval()
                out[k] = (res, seconds)
    finally:
        stop.set()
        reader.join()
        manager.shutdown()
    return out
