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
