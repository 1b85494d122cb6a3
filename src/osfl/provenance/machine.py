"""Where a committed result was computed, against the machine that recomputes it.

    python -m osfl.provenance.machine results/main/runtime/clients.json [more records ...]

Every stage records its runtime (``osfl.runtime.device_info``): the device, the CPU's model name and the instruction
set torch's CPU kernels use (``cpu_capability``: AVX2, AVX512, ...). Two CPUs that share a model name ("AMD EPYC")
can run other kernels, and other kernels sum floats in another order: outputs then differ in their last bits, so
a byte-for-byte check is only meaningful where all three agree. This module says which of them differ; it never
fails (a different machine is a reason to compare by value, not an error).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KEYS = ("device", "cpu", "cpu_capability")


def this_machine(device: str = "cpu") -> dict[str, str]:
    import torch

    from osfl.runtime import cpu_model

    return {"device": device, "cpu": cpu_model(), "cpu_capability": torch.backends.cpu.get_cpu_capability()}


def runtime_of(record: dict) -> dict:
    """The runtime block of a stage's record (the record itself when it is one)."""
    return record.get("runtime", record) if isinstance(record, dict) else {}


def differences(recorded: dict, here: dict | None = None) -> list[str]:
    """``key: 'recorded' here 'current'`` for each of KEYS the two machines do not share; keys a record lacks (written
    before it recorded them) are not compared."""
    rt = runtime_of(recorded)
    here = here or this_machine(str(rt.get("device", "cpu")).split(":")[0])
    return [f"{k}: recorded {rt[k]!r}, here {here[k]!r}" for k in KEYS
            if k in rt and str(rt[k]).split(":")[0] != str(here[k]).split(":")[0]]


def note(recorded: dict, here: dict | None = None) -> str:
    """One sentence for a report or a warning; empty when the machines agree on every key."""
    diff = differences(recorded, here)
    if not diff:
        return ""
    return ("computed on another machine (" + "; ".join(diff) + "): other CPU kernels sum floats in another order, "
            "so byte identity is not expected")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m osfl.provenance.machine", description=__doc__.split("\n\n")[0])
    p.add_argument("records", nargs="+", type=Path, help="stage records holding a 'runtime' block (JSON)")
    args = p.parse_args(argv)
    here = None
    for path in args.records:
        if not path.is_file():
            print(f"machine: {path}: no such record (run 'dvc pull' first)")
            continue
        here = here or this_machine()
        said = note(json.loads(path.read_text()), here)
        print(f"machine: {path}: " + (said or f"computed on this kind of machine ({here['cpu']}, "
                                                f"{here['cpu_capability']})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
