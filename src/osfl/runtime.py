"""Run-time plumbing shared by all stages: device choice, seeding, deterministic JSON, checkpoints."""
from __future__ import annotations

import hashlib
import json
import os
import platform
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch


def get_device(name: str | None = None) -> torch.device:
    """``OSFL_DEVICE`` (cpu, cuda, cuda:1, ...) if set, else CUDA when present, else CPU.

    The device is not a DVC parameter: results do not depend on it beyond float noise, and it is recorded
    next to each result (:func:`device_info`).
    """
    name = name or os.environ.get("OSFL_DEVICE", "auto")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(name)
    if dev.type == "cuda" and not torch.cuda.is_available():
        from .errors import ConfigError

        raise ConfigError("OSFL_DEVICE", f"{name!r} asked for but CUDA is not available; allowed: cpu, auto")
    return dev


def device_info(device: torch.device) -> dict[str, Any]:
    info = {"device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    else:
        info["cpu"] = platform.processor() or platform.machine()
    return info


def derive_seed(seed: int, *parts: int | str) -> int:
    """A stable 31-bit seed for a sub-task (a client, a method), independent of Python's hash salt."""
    h = hashlib.sha256(repr((seed,) + parts).encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def write_json(path: str | Path, obj: Any) -> Path:
    """Deterministic JSON (sorted keys, fixed float repr) so identical results give identical bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n")
    return path


def read_json(path: str | Path) -> Any:
    return json.loads(Path(path).read_text())


def _jsonable(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "as_dict"):
        return o.as_dict()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def save_state_dict(state: dict[str, torch.Tensor], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({k: v.detach().cpu().contiguous() for k, v in state.items()}, path)
    return path


def load_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    return torch.load(path, map_location="cpu", weights_only=True)
