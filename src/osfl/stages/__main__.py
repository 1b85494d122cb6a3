"""``osfl <stage> [args]``: run one stage by name (the same as ``python -m osfl.stages.<stage>``)."""
from __future__ import annotations

import importlib
import sys

STAGES = ("prepare", "partition", "train_clients", "server", "evaluate", "report", "rounds")


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in STAGES:
        print(f"usage: osfl <stage> [options]; stages: {', '.join(STAGES)}", file=sys.stderr)
        sys.exit(2)
    importlib.import_module(f"osfl.stages.{argv[0]}").main(argv[1:])


if __name__ == "__main__":
    main()
