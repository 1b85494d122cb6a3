"""Which machines computed the runs a table reads, for its caption.

Every server record holds its stage's runtime (``osfl.runtime.device_info``: device, CPU model, the instruction set
of torch's CPU kernels, threads). A table whose runs came from several machines says so: their seconds compare only
within one machine (the same 2-core runs took about 1.65x longer with AVX2 kernels than with AVX512 ones), and the
last bits of a result only within one kernel set.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping


def label(runtime: dict) -> str:
    """``CPU model (kernels, threads)``, or the GPU's name for a run on one."""
    if str(runtime.get("device", "cpu")).startswith("cuda"):
        return f"{runtime.get('gpu') or 'a GPU'} (cuda)"
    threads = runtime.get("threads")
    return (f"{runtime.get('cpu') or 'CPU not recorded'} ({runtime.get('cpu_capability') or 'kernels not recorded'}"
            + (f", {threads} thread{'s' if threads != 1 else ''})" if threads else ")"))


def machines(records: Iterable[dict]) -> Counter:
    """Run records per machine label; records without a runtime are left out."""
    return Counter(label(r["runtime"]) for r in records if isinstance(r.get("runtime"), dict))


def describe(runs: Mapping[str, Mapping[str, Iterable[dict]]]) -> str:
    """One sentence for a caption from a table's runs as the run loaders return them (``{run: {id: [records]}}``):
    each machine with how many of the records it computed; empty for no record."""
    count = machines(r for by_id in runs.values() for records in by_id.values() for r in records)
    if not count:
        return ""
    text = "Computed on " + "; ".join(f"{m}: {n} run{'s' if n != 1 else ''}" for m, n in count.most_common()) + "."
    if len(count) > 1:
        text += " Server seconds compare only within one machine."
    return text
