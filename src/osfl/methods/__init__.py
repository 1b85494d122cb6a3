"""Server methods registry. One file per method; each defines a :class:`ServerMethod` subclass and registers it.

See :mod:`osfl.methods.base` for the interface a method implements.
"""
from __future__ import annotations

from ..registry import Registry, import_submodules
from .base import ServerContext, ServerMethod, ServerResult  # noqa: F401

METHODS: Registry[type[ServerMethod]] = Registry("method", key="methods")


def register(cls: type[ServerMethod]) -> type[ServerMethod]:
    METHODS.register(cls.name, cls)
    return cls


import_submodules(__name__, __path__)
