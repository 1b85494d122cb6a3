"""FLOPs spent by a stage's work, counted while it runs (``--count-flops`` of the train_clients, condense and
server stages; OFedED's Tables 4 and 5), by torch's ``FlopCounterMode``.

Kept apart from :mod:`osfl.cost.flops` (per-model counts for the papers' FLOPs tables), which imports the model
registry: the stages that count their work depend on this file alone.
"""
from __future__ import annotations

import functools
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Spent:
    """FLOPs counted by :func:`spent` (None: not counted)."""
    flops: int | None = None


@contextmanager
def spent(enabled: bool):
    """FLOPs of the work done inside, as ``FlopCounterMode`` counts them: 2 per multiply-accumulate of every matrix
    product and convolution, forward and backward passes alike, vmapped calls included; element-wise work is not
    counted. Yields a :class:`Spent` whose ``flops`` is set on leaving (left None when ``enabled`` is false, and
    then nothing is intercepted). Nested counters each count what runs inside them (the outer one too)."""
    box = Spent()
    if not enabled:
        yield box
        return
    with total_flops_mode()() as counter:
        yield box
    box.flops = int(counter.get_total_flops())


class _NoModules:
    """Stands in for ``FlopCounterMode``'s module tracker: every count goes to the total ("Global") alone."""
    parents = ("Global",)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@functools.cache
def total_flops_mode() -> type:
    """``FlopCounterMode`` counting the total only (a class made on first use: importing torch's flop counter pulls
    in triton, a fifth of a second of every stage's start-up whether it counts or not). Its per-module breakdown
    hooks every module's forward and backward, which makes ``torch.autograd.grad`` on a leaf fail ("A leaf node was
    passed to _will_engine_execute_node", Co-Boosting's ODS step) and costs time; the counting itself is torch's."""
    from torch.utils.flop_counter import FlopCounterMode

    class TotalFlops(FlopCounterMode):
        def __init__(self):
            super().__init__(display=False)
            self.mod_tracker = _NoModules()

    return TotalFlops
