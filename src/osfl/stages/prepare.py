"""Stage `prepare`: download (or read from a mirror) one dataset and store it as uint8 arrays."""
from __future__ import annotations

from ..data import prepare_dataset
from ..runconfig import load_run
from .common import parser, run_stage, stand_in_sizes


def main(argv=None) -> None:
    p = parser(__doc__)
    run_stage(_run, p, argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    out = prepare_dataset(cfg.dataset.name, paths.prepared, mirror=cfg.mirror,
                          stand_in=stand_in_sizes(cfg.dataset, cfg.profile))
    print(f"prepared {cfg.dataset.name} -> {out}")


if __name__ == "__main__":
    main()
