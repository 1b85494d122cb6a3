"""What every benchmark here shares: the devices it compares on, their names in the printout, a GPU sync before a
clock is read, and the JSON it writes (``{"torch": version, "results": rows}``)."""
from __future__ import annotations

import json
from pathlib import Path

import torch


def devices() -> list[torch.device]:
    """The CPU, and the GPU when there is one."""
    return [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"


def sync(device: torch.device) -> None:
    """Wait for the GPU's queued work (a no-op on the CPU), so that a timer measures it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def write_results(out: str | Path, rows: list[dict]) -> None:
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({"torch": torch.__version__, "results": rows}, indent=2))
