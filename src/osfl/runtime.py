"""Run-time plumbing shared by all stages: device and threads, seeding, deterministic JSON, checkpoints."""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Any

import numpy as np
import torch


def get_device(name: str = "cpu") -> torch.device:
    """The device named by ``runtime.device`` (``cpu``, ``cuda``, ``cuda:1``, ...).

    The device is a DVC parameter (part of ``runtime``): a CPU and a GPU run of the same seed differ by float
    noise and by the code path (batched clients on CUDA), so DVC's cache must not treat them as one run.
    """
    from .errors import ConfigError

    if os.environ.get("OSFL_DEVICE"):
        raise ConfigError("OSFL_DEVICE", "is no longer read; choose the device with runtime.device "
                                         "(dvc exp run -S runtime.device=cuda), so that it is part of the cache key")
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError):
        raise ConfigError("runtime.device", f"unknown device {name!r}; allowed: cpu, cuda, cuda:<n>") from None
    if dev.type not in ("cpu", "cuda"):
        raise ConfigError("runtime.device", f"unknown device {name!r}; allowed: cpu, cuda, cuda:<n>")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("runtime.device", f"{name!r} asked for but CUDA is not available here; allowed: cpu")
    return dev


def set_deterministic() -> None:
    """``torch.use_deterministic_algorithms(True, warn_only=True)`` without its cost: that function also imports
    ``torch._inductor.config`` to set inductor's own flag, 1.2 s of every stage process's start-up on this CPU
    (measured), for ``torch.compile``, which no stage uses. Where inductor is already loaded, or torch lacks the
    switch this calls, it calls the public function. Checked: ``torch.are_deterministic_algorithms_enabled()``."""
    import sys

    switch = getattr(torch._C, "_set_deterministic_algorithms", None)
    if switch is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        switch(True, warn_only=True)
    if not (torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()):
        raise RuntimeError("deterministic algorithms could not be switched on")


def apply_execution(threads: int, device_name: str) -> torch.device:
    """Pin how this process computes: ``threads`` intra-op threads, one inter-op thread, deterministic
    algorithms (``warn_only``: an op without a deterministic CUDA kernel warns instead of failing), no cuDNN
    auto-tuning. Called by every stage before any work (:func:`osfl.runconfig.load_run`); returns the
    device. What was in force is recorded with every result (:func:`device_info`)."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # cuBLAS' deterministic workspace
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process (tests call stages in-process)
        pass
    set_deterministic()
    torch.backends.cudnn.benchmark = False
    return get_device(device_name)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what :mod:`platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info(device: torch.device) -> dict[str, Any]:
    """Where and how a result was computed: device, CPU model and the CPU kernels' instruction set (the two
    facts that decide bit-for-bit agreement on the CPU), threads, torch version, deterministic algorithms."""
    info = {"device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "deterministic": torch.are_deterministic_algorithms_enabled()}
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


@contextlib.contextmanager
def seeded_init(seed: int):
    """Draw a model's initial weights from a generator seeded with ``seed``, whatever the caller drew before.

    ``torch.nn`` initialisers read torch's CPU default generator (they take no ``generator``), so it is forked
    (saved and restored around the block) and seeded: nothing outside the block reads or changes its state.
    Build the model on the CPU inside the block and move it to the device after, so every device gets the same
    weights.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@contextlib.contextmanager
def seeded_default_generators(seed: int, device: torch.device):
    """Within the block torch's default generators (the CPU's and, on CUDA, ``device``'s) start from ``seed``; outside
    it their state is as before. For what torch draws by itself with no ``generator`` argument: dropout's masks."""
    device = torch.device(device)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.random.default_generator.manual_seed(seed)
        if device.type == "cuda":
            torch.cuda.manual_seed(seed)
        yield


def derive_seed(seed: int, *parts: int | str) -> int:
    """A stable 31-bit seed for a sub-task (a client, a method), independent of Python's hash salt."""
    h = hashlib.sha256(repr((seed,) + parts).encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


def write_json(path: str | Path, obj: Any) -> Path:
    """Deterministic JSON (sorted keys, fixed float repr) so identical results give identical bytes; written
    atomically (:func:`write_text`)."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n")


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``: a failure leaves the
    previous file whole (stage outputs are ``persist``ed, so DVC does not delete them before a run)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


@contextlib.contextmanager
def staged_dir(path: str | Path):
    """Yield an empty folder beside ``path``; when the block succeeds it replaces ``path`` (the previous folder is
    removed only then), when it fails it is deleted and ``path`` is left as it was."""
    import shutil
    import tempfile

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent))
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    old = path.with_name(f".{path.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        os.replace(path, old)
    os.replace(stage, path)
    shutil.rmtree(old, ignore_errors=True)


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
