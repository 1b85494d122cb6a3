"""A training stage's runtime record: its wall-clock seconds and the host it ran on.

``results/<experiment>/runtime/<clients or run name>.json``, a cached output of its own beside the models: the
models' folders then hold only what was computed, so a second run gives the same hash and DVC's run-cache serves the
stages downstream. ``evaluate@`` copies a server's record into the run's record. Apart from stages/common.py, which
every stage imports, so that only the stages that write or read a record depend on this file.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..runtime import device_info, write_json


def runtime_record(paths, name: str) -> Path:
    """Where the record of ``name`` (``clients``, or a server run's name) of the experiment at ``paths`` lives."""
    return paths.results / "runtime" / f"{name}.json"


def write_runtime_record(path: Path, seconds: float, device: torch.device, accel, **extra) -> Path:
    """Write a runtime record: seconds, device, CPU model, kernels' ISA, threads, torch version and the runtime
    switches in force, plus ``extra`` (e.g. per-client seconds)."""
    return write_json(path, {"seconds": round(seconds, 3), "runtime": {**device_info(device), **accel.in_force(device)},
                             **extra})
