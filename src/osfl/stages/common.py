"""What the stage scripts share: argument parsing, error handling, paths of an experiment, data loading."""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from ..config import Profile, load_params, validate_main
from ..errors import ConfigError


@dataclass(frozen=True)
class ExperimentPaths:
    """Where an experiment's artifacts live. ``name`` is ``main`` for the main experiment."""

    name: str
    dataset: str

    @property
    def prepared(self) -> Path:
        return Path("data/prepared") / self.dataset

    @property
    def partition(self) -> Path:
        return Path("data/partitions") / self.name

    @property
    def clients(self) -> Path:
        return Path("models") / self.name / "clients"

    def global_model(self, method: str) -> Path:
        return Path("models") / self.name / "global" / method

    @property
    def results(self) -> Path:
        return Path("results") / self.name

    @property
    def report(self) -> Path:
        return Path("reports") / self.name


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--params", default="params.yaml", help="parameters file (default: params.yaml)")
    p.add_argument("--experiment", default="main", help="experiment name: artifacts go under <kind>/<name>/")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p


def run_stage(fn: Callable[[argparse.Namespace], Any], p: argparse.ArgumentParser, argv=None) -> None:
    """Parse args, run ``fn``; a ConfigError becomes one line on stderr and exit code 2."""
    args = p.parse_args(argv)
    try:
        t0 = time.perf_counter()
        fn(args)
        print(f"[{p.prog}] done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def load_config(args: argparse.Namespace) -> tuple[dict, dict, ExperimentPaths]:
    params = load_params(args.params)
    cfg = validate_main(params)
    return params, cfg, ExperimentPaths(args.experiment, cfg["dataset"].name)


def require_input(path: Path, stage: str) -> Path:
    if not path.exists():
        raise ConfigError("input", f"{path} is missing; run the '{stage}' stage first (dvc repro)")
    return path


def subset(n: int, cap: int | None, seed: int) -> np.ndarray:
    """A seeded random subset of range(n) of size ``cap`` (sorted), or everything when ``cap`` is None."""
    if cap is None or cap >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=cap, replace=False))


def test_tensors(data, profile: Profile, seed: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The test split on ``device`` (capped under the smoke profile, the same subset for every stage)."""
    idx = subset(len(data.y_test), profile.max_test, seed)
    x = torch.from_numpy(np.ascontiguousarray(data.x_test[idx])).to(device)
    y = torch.from_numpy(np.ascontiguousarray(data.y_test[idx])).long().to(device)
    return x, y
