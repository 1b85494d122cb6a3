"""A tiny name -> object registry.

Every pluggable concern (datasets, partition schemes, models, server methods) has one registry. A new entry
is one file in the concern's folder that calls ``REGISTRY.register("name")``; the folder's ``__init__``
imports all its modules (:func:`import_submodules`), so nothing else needs editing.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable, Dict, Generic, Iterator, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, key: str | None = None):
        self.kind = kind  # e.g. "dataset"
        self.key = key or kind  # the params key that selects an entry, used in error messages
        self._entries: Dict[str, T] = {}

    def register(self, name: str, obj: T | None = None) -> Callable[[T], T] | T:
        def _add(o: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} '{name}' is registered twice")
            self._entries[name] = o
            return o

        return _add(obj) if obj is not None else _add

    def get(self, name: str, key: str | None = None) -> T:
        if name not in self._entries:
            raise ConfigError(key or self.key, f"unknown {self.kind} {name!r}; allowed: {', '.join(self.names())}")
        return self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)


def import_submodules(package_name: str, package_path) -> None:
    """Import every module of a package so that their ``register`` calls run."""
    for info in pkgutil.iter_modules(package_path):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
