"""Stage `flops` of a paper pipeline: multiply-accumulates of one forward pass at batch size 1 for each model of
the paper's FLOPs table, written to a JSON file the render stage reads (FedMHO Table II).

The params file's ``flops`` key maps the table's rows and columns to our models and datasets::

    flops:
      transposed: output        # thop's rule for transposed convolutions, as the paper's counts (osfl.cost.flops)
      columns: {MNIST & Fashion: fmnist, SVHN: svhn, EMNIST: emnist}   # column label -> dataset (shape, classes)
      rows: {VGG-9: vgg9, CNN: {fmnist: cnn_mnist, svhn: cnn_svhn, emnist: cnn_emnist}}  # row -> model(s)

Nothing is trained and no data is read: the datasets give only their input shape and class count.
"""
from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch

from ..config import load_params
from ..cost.flops import TRANSPOSED, macs_at_batch_one
from ..data import get_spec
from ..errors import ConfigError
from ..models import build_model
from .common import run_stage


def table_macs(spec: dict) -> dict:
    """``{row: {column: {model, dataset, shape, classes, macs, macs_performed}}}`` for the ``flops`` params."""
    if not isinstance(spec, dict) or not isinstance(spec.get("columns"), dict) or not isinstance(spec.get("rows"), dict):
        raise ConfigError("flops", "must be a mapping with `columns` (label -> dataset) and `rows` (label -> model "
                                   "or dataset -> model)")
    transposed = spec.get("transposed", "output")
    if transposed not in TRANSPOSED:
        raise ConfigError("flops.transposed", f"{transposed!r} is not one of {', '.join(TRANSPOSED)}")
    out: dict = {}
    for row, models in spec["rows"].items():
        out[row] = {}
        for column, dataset in spec["columns"].items():
            name = models.get(dataset) if isinstance(models, dict) else models
            if name is None:
                raise ConfigError(f"flops.rows.{row}", f"names no model for dataset {dataset!r} (column {column!r})")
            ds = get_spec(dataset)
            torch.manual_seed(0)  # weights do not change a count; seeded only so that nothing varies run to run
            model = build_model(name, ds.shape, ds.num_classes)
            out[row][column] = {
                "model": name, "dataset": dataset, "shape": list(ds.shape), "classes": ds.num_classes,
                "macs": macs_at_batch_one(model, ds.shape, transposed),
                "macs_performed": macs_at_batch_one(model, ds.shape, "true"),
            }
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="flops.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--params", default="params.yaml", help="the paper's params file (default: params.yaml)")
    p.add_argument("--out", default="results/flops.json", help="where to write the counts")
    run_stage(_run, p, argv)


def _run(args) -> None:
    params = load_params(args.params)
    table = table_macs(params.get("flops"))
    record = {"transposed": (params.get("flops") or {}).get("transposed", "output"), "rows": table,
              "torch": torch.__version__, "python": platform.python_version()}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"flops: {sum(len(c) for c in table.values())} counts -> {out}")


if __name__ == "__main__":
    main()
