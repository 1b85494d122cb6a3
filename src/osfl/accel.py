"""Execution switches (``runtime:`` in params.yaml): how a run is computed, not what it computes.

None of these is a hyper-parameter of a paper, but all of them are DVC params: a run's numbers are reproduced bit
for bit only with the same device, thread count and switches (README, "Reproducibility"), so each is part of the
cache key of the stages that compute with torch.

* ``device``: ``cpu`` | ``cuda`` | ``cuda:<n>``. Where every stage computes (:func:`osfl.runtime.get_device`).
* ``threads``: intra-op CPU threads (``torch.set_num_threads``), applied by every stage with deterministic
  algorithms on (:func:`osfl.runtime.apply_execution`); the reductions of the CPU kernels split their work by
  thread, so another count gives other bits. ``batched_clients`` gives the same numbers as the sequential path
within float tolerance (``tests/test_batched_training.py``); ``precision``, ``channels_last`` and ``compile`` are
CUDA speed switches that are OFF by default until they are measured not to move results beyond noise on a GPU.
The values in force are recorded with every result (client manifests, server manifests).

* ``batched_clients``: ``auto`` | ``true`` | ``false``. Clients of one architecture train as one ``vmap``-batched
  model (:mod:`osfl.clients.batched`). ``auto`` = on for CUDA, off on the CPU (on a 2-core CPU the batched
  path is faster for the 2-layer CNN but slower for the 3-layer CNNs: ``benchmarks/bench_local_training.py``).
* ``batched_teachers``: ``true`` | ``false`` | ``auto``. A server's teacher ensemble (the client models of one
  architecture) runs as one ``vmap``-batched call (``true``, :class:`osfl.distill.ensemble.BatchedEnsemble`) or as
  a loop over the clients (``false``; ``auto`` = batched on CUDA, the loop on the CPU). The two give the same numbers
  within float tolerance, not the same bits. ``true`` is the default because every server run recorded so far
  used it; on a 2-core CPU the loop is faster (``benchmarks/bench_generator.py``; finding F35 of
  benchmarks/peers/findings.yaml). Recorded with results only when it is not ``true``, so that the runs
  recorded before the switch existed stay byte-identical.
* ``precision``: ``fp32`` | ``bf16``. bf16 autocast around forward passes and losses (local training and the server
  methods); the optimiser state stays float32. The autocast's weight-cast cache is off: a server method runs
  inside ONE autocast context across its optimiser steps, and with the cache a parameter's bf16 copy, made at its
  first forward, is reused until the context ends, so every later forward ignores the steps taken since (measured:
  DENSE's student and generator froze and the student ended at 10.00 %).
* ``channels_last``: channels-last memory format for the sequential client path on CUDA.
* ``compile``: ``torch.compile`` the model of the sequential client path.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

import torch

from .errors import ConfigError, unknown_key


@dataclass(frozen=True)
class Accel:
    device: str = "cpu"
    threads: int = 1
    batched_clients: str | bool = "auto"
    batched_teachers: str | bool = True
    precision: str = "fp32"
    channels_last: bool = False
    compile: bool = False

    PRECISIONS = ("fp32", "bf16")

    @classmethod
    def from_params(cls, runtime: Mapping[str, Any] | None) -> "Accel":
        runtime = runtime or {}
        known = [f.name for f in fields(cls)]
        if not isinstance(runtime, Mapping):
            raise ConfigError("runtime", f"must be a mapping ({', '.join(known)})")
        for key in runtime:
            if key not in known:
                raise unknown_key(f"runtime.{key}", known)
        out = cls(**{k: runtime[k] for k in known if k in runtime})
        if not isinstance(out.device, str):
            raise ConfigError("runtime.device", f"must be a device name (cpu, cuda, cuda:<n>), got {out.device!r}")
        if isinstance(out.threads, bool) or not isinstance(out.threads, int) or out.threads < 1:
            raise ConfigError("runtime.threads", f"must be an integer >= 1, got {out.threads!r}")
        if not (out.batched_clients == "auto" or isinstance(out.batched_clients, bool)):
            raise ConfigError("runtime.batched_clients",
                              f"unknown value {out.batched_clients!r}; allowed: auto, true, false")
        if not (out.batched_teachers == "auto" or isinstance(out.batched_teachers, bool)):
            raise ConfigError("runtime.batched_teachers",
                              f"unknown value {out.batched_teachers!r}; allowed: true, false, auto")
        if out.precision not in cls.PRECISIONS:
            raise ConfigError("runtime.precision",
                              f"unknown value {out.precision!r}; allowed: {', '.join(cls.PRECISIONS)}")
        for key in ("channels_last", "compile"):
            if not isinstance(getattr(out, key), bool):
                raise ConfigError(f"runtime.{key}", f"must be true or false, got {getattr(out, key)!r}")
        return out

    def batched(self, device: torch.device) -> bool:
        if self.batched_clients == "auto":
            return device.type == "cuda"
        return bool(self.batched_clients)

    def teachers_batched(self, device: torch.device) -> bool:
        """Whether a server's teacher ensembles run as one vmapped call per architecture on ``device``."""
        if self.batched_teachers == "auto":
            return device.type == "cuda"
        return bool(self.batched_teachers)

    def autocast(self, device: torch.device):
        """A context for forward passes: bf16 autocast when ``precision: bf16``, else a no-op. Without the weight
        cache: optimiser steps taken inside the context reach the next forward (module docstring)."""
        if self.precision == "bf16":
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16, cache_enabled=False)
        return contextlib.nullcontext()

    def in_force(self, device: torch.device) -> dict[str, Any]:
        """What was actually used on ``device`` (recorded with results). ``batched_teachers`` appears only when it is
        not the default ``true`` (with what it gave on ``device``): the records written before it existed stay as
        they are."""
        out = {**asdict(self), "batched_clients_in_force": self.batched(device),
               "channels_last_in_force": self.channels_last and device.type == "cuda"}
        del out["batched_teachers"]
        if self.batched_teachers is not True:
            out.update(batched_teachers=self.batched_teachers, batched_teachers_in_force=self.teachers_batched(device))
        return out
