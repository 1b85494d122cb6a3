"""A paper pipeline's settings as its reports read them, typed (issues 74, 75): the datasets, splits, seeds and
columns its params.yaml lists, read once by :meth:`Grid.of` (the render stage: :func:`osfl.stages.render.load_grid`,
the file checked as every stage checks it) and handed to every report function in place of the raw params mapping.
A pipeline's own blocks (``sweeps``, ``variants``, ``cost``, ...) are read through :meth:`Grid.block`,
:meth:`Grid.items` and :meth:`Grid.value`, each a copy, so no report function can change what another reads."""
from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ConfigError

__all__ = ["Grid"]


@dataclass(frozen=True)
class Grid:
    """What the reports read of a pipeline's params: every run is ``<dataset>-<split>-s<seed>`` over the product of
    ``datasets`` x ``splits`` x ``seeds``; ``columns`` are the server methods of its tables (``id``, ``method``, ...);
    ``seeds`` is ``(seed,)`` where the params list none; ``own`` the file's mapping, read only through the
    accessors below."""
    datasets: tuple[str, ...] = ()
    splits: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    seed: int = 0
    columns: tuple[dict, ...] = ()
    profile: str | None = None
    clients: int | None = None
    model: str | dict | None = None
    own: Mapping = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, params: Mapping) -> Grid:
        seed = params.get("seed", 0)
        clients = params.get("clients")
        return cls(datasets=tuple(params.get("datasets") or ()), splits=tuple(params.get("splits") or ()),
                   seeds=tuple(params.get("seeds") or (seed,)), seed=seed, columns=tuple(params.get("columns") or ()),
                   profile=params.get("profile"), clients=int(clients) if clients is not None else None,
                   model=params.get("model"), own=copy.deepcopy(dict(params)))

    def block(self, key: str) -> dict:
        """The pipeline's mapping ``key`` (``cost``, ``sweeps``, ``clustering``, ...): a copy, empty when absent."""
        value = self.own.get(key) or {}
        if not isinstance(value, Mapping):
            raise ConfigError(key, "must be a mapping")
        return copy.deepcopy(dict(value))

    def items(self, key: str) -> list:
        """The pipeline's list ``key`` (``s_columns``, ``variants``, ``parts``, ``lambdas``, ...): a copy, empty
        when absent."""
        value = self.own.get(key) or []
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
            raise ConfigError(key, "must be a list")
        return copy.deepcopy(list(value))

    def value(self, key: str, default: Any = None) -> Any:
        """The pipeline's single value ``key`` (``figure_split``, ``partition``, ...), ``default`` when absent."""
        return copy.deepcopy(self.own.get(key, default))

    def raw(self) -> dict:
        """The whole mapping (a copy), for the loaders that resolve a run's view of it (the cpu profile, the
        per-dataset values): :func:`osfl.cpu_profile.apply`, :func:`osfl.config.merge_per_dataset`."""
        return copy.deepcopy(dict(self.own))

    def narrowed(self, splits) -> Grid:
        """This grid with ``splits`` in place of its own (a figure that reads one split)."""
        return replace(self, splits=tuple(splits), own={**self.own, "splits": list(splits)})

    @property
    def first_split(self) -> str | None:
        return self.splits[0] if self.splits else None

    @property
    def first_dataset(self) -> str | None:
        return self.datasets[0] if self.datasets else None

    def runs(self, datasets=None, splits=None) -> Iterator[tuple[str, str, int]]:
        """(dataset, split, seed) of every run of the grid (``datasets``, ``splits``: only these, or these instead
        of the params' own), datasets outermost."""
        for ds in self.datasets if datasets is None else datasets:
            for split in self.splits if splits is None else splits:
                for seed in self.seeds:
                    yield ds, split, seed
