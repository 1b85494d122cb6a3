"""HFLDD's runs and tables: a run's records, the traffic to reach a target accuracy (Tables II-III) and Table IV."""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from ...cost.traffic import fedavg_traffic, fedseq_traffic, hfldd_traffic, rounds_to_target
from ...reporting.published import load_published_table
from ...reporting.spread import format_spread, mean_std
from ...reporting.tables import MARKDOWN_NA
from ...reporting.grid import Grid
from ...reporting.runs import read_grid

DATASET_LABELS = {"mnist": "MNIST", "cifar10": "CIFAR10", "fmnist": "Fashion-MNIST"}
METHODS = {"hfldd": "HFLDD", "fedavg": "FedAvg", "fedseq": "FedSeq", "cl": "CL"}
COST_METHODS = ("hfldd", "fedavg", "fedseq")  # the methods of Tables II-III and Fig. 6
COST_METHODS_LABELS = tuple(METHODS[m] for m in COST_METHODS)  # their columns in the paper's tables
#: which of our datasets land in which cost table (the paper's dataset first)
COST_TABLE_DATASETS = {"table2": ("mnist", "fmnist"), "table3": ("cifar10",)}
#: the paper's default target accuracy per table (Table II: 80 %, Table III: 70 %)
PAPER_TARGETS = {"table2": 80.0, "table3": 70.0}
#: results that come from the pre-trained clients (soft labels -> clustering -> KIP -> HFLDD): clients at chance
#: make them degenerate (the baselines train from scratch)
FROM_CLIENTS = ("hfldd", "clustering")
#: per artifact, the command that (re)builds it, run in papers/hfldd/
COMMANDS = {
    "table2": "`dvc repro render` (after `dvc repro hfldd baseline` for C = 10)",
    "table3": "`dvc repro render` (after `dvc repro hfldd baseline` for C = 10 on cifar10)",
    "table4": "`dvc repro render` (after `dvc repro hfldd ksweep`)",
    "fig3": "`dvc repro render` (after `dvc repro hfldd baseline`)",
    "fig5": "`dvc repro render` (after `dvc repro cluster`)",
    "fig6": "`dvc repro render` (after `dvc repro hfldd baseline` for C = 2)",
    "fig7": "`dvc repro render` (after `dvc repro cluster` for C = 2)",
}
SCHEMATICS = {"table1": "notation only", "fig1": "schematic", "fig2": "schematic",
              "fig4": "architectures: parameter counts tested (tests/test_models.py) and checked below"}


def _read(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def read_run(root: Path) -> dict | None:
    """A run's records (``root``: its results folder): ``rounds`` (method -> record), ``clustering``,
    ``soft_labels``, ``kip``, ``clients`` (the pre-trained clients' accuracies; None if absent), ``ksweep`` (K ->
    Table IV's HFLDD record at that K, stage ksweep@); None for a run with no rounds, clustering or sweep."""
    rounds = {m: r for m in METHODS if (r := _read(root / "rounds" / f"{m}.json")) is not None}
    ksweep = {int(r["K"]): r for f in sorted((root / "ksweep").glob("k*.json")) if (r := _read(f)) is not None}
    clustering = _read(root / "clustering.json")
    if not (rounds or clustering or ksweep):
        return None
    return {"rounds": rounds, "clustering": clustering, "soft_labels": _read(root / "soft_labels.json"),
            "kip": _read(root / "kip.json"), "clients": _read(root / "clients.json"), "ksweep": ksweep}


def k_records(recs: list[dict], grid: Grid) -> dict[int, dict]:
    """HFLDD's records of the runs ``recs`` (seeds of one dataset and C) per K, in K order: ``{K: {seed: record}}``,
    the sweep's points (stage ksweep@) and the main run (stage hfldd@) at the params' ``clustering.K``."""
    k_main = int(grid.block("clustering").get("K", 10))
    out: dict[int, dict] = {}
    for r in recs:
        main = r["rounds"].get("hfldd")
        for k, rec in {**r.get("ksweep", {}), **({k_main: main} if main else {})}.items():
            out.setdefault(k, {})[r["seed"]] = rec
    return dict(sorted(out.items()))


def runs_by_c(grid: Grid, results_root: Path) -> dict[tuple[str, int], list[dict]]:
    """``{(dataset, C): [run records per seed that has any record]}``: the runs ``<dataset>-c<C>-s<seed>`` of the
    params' ``classes``, read by the reports' one loader (:func:`osfl.reporting.runs.read_grid`)."""
    classes = [int(c) for c in grid.items("classes")]
    found = read_grid(results_root, grid, read_run, splits=[f"c{c}" for c in classes])
    return {(ds, int(split[1:])): [{**r, "C": int(split[1:]), "profile": grid.profile} for r in recs]
            for (ds, split), recs in found.items()}


@functools.cache
def model_params(model: str, dataset: str) -> int:
    """Parameters of ``model`` built for ``dataset`` (the |w| of the cost model)."""
    from ...data import get_spec
    from ...models import build_model

    spec = get_spec(dataset)
    return sum(p.numel() for p in build_model(model, spec.shape, spec.num_classes).parameters())


def accuracies(record: dict) -> list[float]:
    return [p["test_acc"] for p in record.get("curve") or []]


def run_traffic(run: dict, method: str, rounds: int, params_count: int, clients: int) -> float | None:
    """MiB ``method`` sent in ``run`` over ``rounds`` rounds (Eqs. 3, 6, 7 with the run's own H, uploads, groups)."""
    rec = run["rounds"].get(method)
    if rec is None:
        return None
    if method == "fedavg":
        return fedavg_traffic(clients, rounds, params_count).mib
    if method == "fedseq":
        groups = rec.get("groups") or []
        per = max((len(g) for g in groups), default=0)
        return fedseq_traffic(len(groups), per, rounds, params_count).mib
    sl, kip = run["soft_labels"], run["kip"]
    if sl is None or kip is None:
        return None
    images = sum(c["images"] for c in kip["clients"])
    image_bytes = (sum(c["upload_bytes"] for c in kip["clients"]) // images) if images else 0
    num_classes = (sl["upload_bytes"][0] // (4 * sl["public_size"])) if sl["upload_bytes"] else 0
    return hfldd_traffic(sl["clients"], sl["public_size"], num_classes, images, image_bytes, int(rec["H"]),
                         rounds, params_count).mib


def to_target(run: dict, method: str, target: float, params_count: int, clients: int) -> dict | None:
    """Rounds (T, the paper's printed index is T − 1), the accuracy then and the traffic to reach ``target``."""
    rec = run["rounds"].get(method)
    if rec is None:
        return None
    accs = accuracies(rec)
    t = rounds_to_target(accs, target)
    if t is None:
        return {"T": None, "acc": None, "mib": None, "best": max(accs) if accs else None, "rounds_run": len(accs)}
    return {"T": t, "acc": accs[t - 1], "mib": run_traffic(run, method, t, params_count, clients),
            "rounds_run": len(accs)}


def _cell(values, fmt=".2f") -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return MARKDOWN_NA
    return format(vals[0], fmt) if len(vals) == 1 else format_spread(vals)


def paper_cost_rows(art, headers: int, paper_params: int, image_bytes: int) -> tuple[dict, dict]:
    """The paper's three rows as printed, and its printed rounds through our Eqs. 3, 6, 7 (the check of SPEC §1.8)."""
    table = load_published_table(art, "text")  # rows "<target>, <metric>", cells as printed
    by_metric = {label.split(", ")[-1]: label for label in table.index}
    rows = {f"paper: {m}": {c: table.loc[label, c] for c in COST_METHODS_LABELS} for m, label in by_metric.items()}
    printed = {c: int(str(table.loc[by_metric["rounds/Accuracy"], c]).split("/")[0]) + 1 for c in COST_METHODS_LABELS}
    n, d_g, n_c, per_member, o, j = 100, 1000, 10, 100, 10, 10  # the paper's N, |D_g|, classes, |D~_i|, FedSeq's O, J
    traffic = {"HFLDD": hfldd_traffic(n, d_g, n_c, (n - headers) * per_member, image_bytes, headers, printed["HFLDD"],
                                      paper_params),
               "FedAvg": fedavg_traffic(n, printed["FedAvg"], paper_params),
               "FedSeq": fedseq_traffic(o, j, printed["FedSeq"], paper_params)}
    ours = {c: f"{t.mib:.2f}" for c, t in traffic.items()}
    rows[f"paper's rounds through Eqs. 3, 6, 7 (H = {headers}): Traffic (MB)"] = ours
    same = {c: f"{traffic[c].mib:.2f}" == str(table.loc[by_metric["Traffic (MB)"], c]).strip()
            for c in COST_METHODS_LABELS}
    return rows, same


#: the paper's setting behind Tables II/III: its model's parameters, its image bytes, H inferred from its traffic
PAPER_COST = {"table2": ("lenet5", "mnist", "H_MNIST_C10"), "table3": ("fedd3_cnn", "cifar10", "H_CIFAR10_C10")}


def cost_table(grid: Grid, runs: dict, art, fig5_meta: dict) -> tuple[pd.DataFrame, dict, bool]:
    """Table II or III: the paper's rows, its rounds through our cost model, then ours per dataset (C = 10)."""
    model, ds_paper, h_key = PAPER_COST[art.id]
    from ...data import get_spec

    shape = get_spec(ds_paper).shape
    rows, same = paper_cost_rows(art, int(fig5_meta.get("inferred", {}).get(h_key, 0)), model_params(model, ds_paper),
                                 int(np.prod(shape)))
    targets = grid.block("cost").get("target") or {}
    numbers: dict = {}
    for ds in COST_TABLE_DATASETS[art.id]:
        recs = runs.get((ds, 10)) or []
        if not any(r["rounds"] for r in recs):
            continue
        target = float(targets.get(ds, PAPER_TARGETS[art.id]))
        n = model_params((grid.model or "lenet5"), ds)
        got = {m: [to_target(r, m, target, n, (grid.clients or 100)) for r in recs] for m in COST_METHODS}
        got = {m: [g for g in v if g is not None] for m, v in got.items()}
        where = f"ours: {DATASET_LABELS.get(ds, ds)}, C = 10, target {target:g} %"
        rounds_row, traffic_row, ratio_row = {}, {}, {}
        base = [g["mib"] for g in got["hfldd"] if g["mib"] is not None]
        for m, label in zip(COST_METHODS, COST_METHODS_LABELS):
            reached = [g for g in got[m] if g["T"] is not None]
            if not got[m]:
                rounds_row[label] = traffic_row[label] = ratio_row[label] = MARKDOWN_NA
                continue
            if not reached:
                best = max(g["best"] for g in got[m] if g["best"] is not None)
                rounds_row[label] = f"not reached in {got[m][0]['rounds_run']} (best {best:.2f})"
                traffic_row[label] = ratio_row[label] = MARKDOWN_NA
                continue
            rounds_row[label] = f"{_cell([g['T'] - 1 for g in reached], 'g')}/{_cell([g['acc'] for g in reached])}"
            mib = [g["mib"] for g in reached]
            traffic_row[label] = _cell(mib)
            ratio_row[label] = (f"{mean_std(mib)[0] / mean_std(base)[0]:.4g}" if base else MARKDOWN_NA)
            numbers[(ds, label)] = {"T": [g["T"] for g in reached], "mib": mean_std(mib)[0]}
        rows[f"{where}: rounds/Accuracy"] = rounds_row
        rows[f"{where}: Traffic (MB)"] = traffic_row
        rows[f"{where}: Ratio"] = ratio_row
    df = pd.DataFrame.from_dict(rows, orient="index", columns=list(COST_METHODS_LABELS), dtype=object)
    df.index.name = "Rows"
    return df, numbers, all(same.values())


def table4(grid: Grid, runs: dict, art) -> tuple[pd.DataFrame, dict]:
    """The paper's K columns per (dataset, C) row; ours at every K that ran (the sweep's points and the main run at
    ``clustering.K``) beside the paper's there, with Δ. Numbers: ``{(dataset, C, K): {"mean", "paper", "seeds"}}``."""
    paper = load_published_table(art)
    rows, numbers = {}, {}
    for label in paper.index:
        rows[label] = {str(c): f"{MARKDOWN_NA} / {float(paper.loc[label, c]):.1f}" for c in paper.columns}
    for (ds, c), recs in runs.items():
        label = f"{DATASET_LABELS.get(ds, ds)} (C = {c})"
        for k, per_seed in k_records(recs, grid).items():
            vals = [rec["acc_final"] for rec in per_seed.values()]
            # records computed under another profile than the params' (an older grid's) say so
            older = sorted({rec.get("profile") for rec in per_seed.values()} - {None, grid.profile})
            row = rows.setdefault(label, {str(col): MARKDOWN_NA for col in paper.columns})
            p = float(paper.loc[label, str(k)]) if label in paper.index and str(k) in paper.columns else float("nan")
            ours = (format_spread(vals) if len(vals) > 1 else f"{vals[0]:.2f}") + (
                f" (profile {', '.join(older)})" if older else "")
            row[str(k)] = (f"{ours} / {MARKDOWN_NA}" if math.isnan(p) else
                           f"{ours} / {p:.1f} ({mean_std(vals)[0] - p:+.2f})")
            numbers[(ds, c, k)] = {"mean": mean_std(vals)[0], "paper": p, "seeds": sorted(per_seed), "values": vals}
    cols = [str(c) for c in paper.columns]
    df = pd.DataFrame.from_dict(rows, orient="index", dtype=object)
    df = df[cols + [c for c in df.columns if c not in cols]].fillna(MARKDOWN_NA)  # a K outside 5..11 after them
    df.index.name = paper.index.name
    return df, numbers
