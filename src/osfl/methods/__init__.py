"""Server methods registry. One file per method; each defines a :class:`ServerMethod` subclass and registers it.

See :mod:`osfl.methods.base` for the interface a method implements.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..registry import Registry, import_submodules

if TYPE_CHECKING:
    from .base import ServerMethod

# The interface lives in .base (import ServerContext, ServerMethod, ServerResult from there): this file only
# registers, so that a stage that merely validates method names and hyper-parameters depends on no method code.
METHODS: Registry[type[ServerMethod]] = Registry("method", key="methods")


def register(cls: type[ServerMethod]) -> type[ServerMethod]:
    METHODS.register(cls.name, cls)
    return cls


import_submodules(__name__, __path__)
