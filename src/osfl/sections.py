"""Reading a params section into a settings dataclass (``condense``, ``kip``, ``hybrid``, ...): the checks every such
section shares."""
from __future__ import annotations

from typing import Any, Callable, Mapping

from .errors import ConfigError, unknown_key


def section_reader(cls, section: Mapping[str, Any] | None, key: str) -> Callable[[str], Any]:
    """``get(name)``: the section's value for ``name``, else ``cls``'s default. Fails naming ``key`` when the section
    is not a mapping, or naming ``key.name`` for a name not in ``cls.KEYS``."""
    section = section or {}
    if not isinstance(section, Mapping):
        raise ConfigError(key, f"must be a mapping of {', '.join(cls.KEYS)}")
    for k in section:
        if k not in cls.KEYS:
            raise unknown_key(f"{key}.{k}", cls.KEYS)
    defaults = cls()
    return lambda name: section.get(name, getattr(defaults, name))
