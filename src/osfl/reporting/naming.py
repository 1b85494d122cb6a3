"""The one naming scheme of run folders under a pipeline's ``results/`` (every paper and the benchmark).

A run is one partition of one dataset, its clients and every server run on them: ``<dataset>-<split>-s<seed>``
(``split``: ``dir<α>``, ``2cc``, HFLDD's ``c<C>``), followed by a suffix for a run of another kind built on the same
split (``-n<N>`` for N clients, ``-maecho`` for MA-Echo's uploads, ``-hetero``, ...).

One exception, written down here rather than in a paper module: FedHydra's dvc.yaml names the runs of its base seed
(params ``seed``) ``<dataset>-<split>``, without ``-s<seed>``, the layout its committed runs were recorded in; its
extra seeds (params ``spread``) are ``<dataset>-<split>-s<seed>`` as everywhere. A paper module passes that seed as
``bare_seed``. Renaming those folders would stale every committed FedHydra stage (docs/rerecord.md).
"""
from __future__ import annotations

from typing import Any

__all__ = ["run_name", "seed_run"]


def seed_run(name: str, seed: Any, bare_seed: Any = None) -> str:
    """The folder of seed ``seed`` of the run ``name`` (``<dataset>-<split>``): ``name`` itself for ``bare_seed``
    (FedHydra's base seed), else ``<name>-s<seed>``."""
    return name if bare_seed is not None and seed == bare_seed else f"{name}-s{seed}"


def run_name(dataset: str, split: str, seed: Any, *, bare_seed: Any = None) -> str:
    """``<dataset>-<split>-s<seed>`` (``<dataset>-<split>`` for ``bare_seed``: :func:`seed_run`)."""
    return seed_run(f"{dataset}-{split}", seed, bare_seed)
