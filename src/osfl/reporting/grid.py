"""A paper pipeline's grid, typed (issue 74): the datasets, splits, seeds and columns its params.yaml lists, read once
by :meth:`Grid.of` instead of ``params.get(...)`` in every report module."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

__all__ = ["Grid"]


@dataclass(frozen=True)
class Grid:
    """What the reports read of a pipeline's params: every run is ``<dataset>-<split>-s<seed>`` over the product of
    ``datasets`` x ``splits`` x ``seeds``; ``columns`` are the server methods of its tables (``id``, ``method``, ...);
    ``seeds`` is ``(seed,)`` where the params list none."""
    datasets: tuple[str, ...] = ()
    splits: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    seed: int = 0
    columns: tuple[dict, ...] = ()
    profile: str | None = None
    clients: int | None = None
    model: str | None = None
    extra: Mapping = field(default_factory=dict)  # the params as given, for a pipeline's own keys

    @classmethod
    def of(cls, params: Mapping) -> Grid:
        seed = params.get("seed", 0)
        clients = params.get("clients")
        return cls(datasets=tuple(params.get("datasets") or ()), splits=tuple(params.get("splits") or ()),
                   seeds=tuple(params.get("seeds") or (seed,)), seed=seed, columns=tuple(params.get("columns") or ()),
                   profile=params.get("profile"), clients=int(clients) if clients is not None else None,
                   model=params.get("model"), extra=params)

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
