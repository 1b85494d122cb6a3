"""Errors that the command-line stages turn into one readable line."""


class ConfigError(ValueError):
    """A bad parameter value or missing input, reported as ``<key>: <what is wrong>; allowed: ...``.

    The stages catch it and print exactly one line before any work is done.
    """

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{key}: {message}")


class DataUnavailableError(ConfigError):
    """A dataset file is missing and cannot be downloaded (offline, no mirror)."""


def unknown_key(key: str, known) -> ConfigError:
    """``<key>: unknown key; did you mean <nearest>? allowed: ...`` for a dotted ``key`` whose last part is not in
    ``known`` (the nearest by :func:`difflib.get_close_matches`, when one is close)."""
    import difflib

    prefix, _, last = key.rpartition(".")
    known = sorted(map(str, known))
    near = difflib.get_close_matches(last, known, n=1, cutoff=0.6)
    hint = f"did you mean {prefix + '.' if prefix else ''}{near[0]}? " if near else ""
    return ConfigError(key, f"unknown key; {hint}allowed: {', '.join(known) or 'none'}")
