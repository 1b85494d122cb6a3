"""FedMHO's tables (I-XI): FLOPs, settings, Table IV and its ablations, each cell beside the paper's."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ...cost.flops import format_count
from ...reporting.published import load_published_table
from ...reporting.runs import compare_rows, read_runs, vs_paper
from ...reporting.tables import MARKDOWN_NA
from ...reporting.grid import Grid

#: our dataset names -> the paper's row labels (Tables III, IV)
DATASET_LABELS = {"mnist": "MNIST", "fmnist": "Fashion", "svhn": "SVHN", "emnist": "EMNIST"}
#: our architecture names -> the paper's (Tables I, II)
MODEL_LABELS = {"vgg9": "VGG-9", "cnn_mnist": "CNN", "cnn_svhn": "CNN", "cnn_emnist": "CNN",
                "cvae_small": "CVAE-small", "cvae_large": "CVAE-large"}

TOLERANCE_PCT = 1.0  # issue 16: every Table II count within 1% of the paper's, or the report explains the gap
#: ablation tables: artifact -> the row Table IV's MD / SD runs fill (None: no such row)
ABLATIONS = {"table05": "1, 1", "table06": None, "table08": None, "table09": ""}
#: ablation tables whose rows are Table IV's (dataset, partition) and whose variants run on every Table IV run
BY_DATASET = ("table06", "table09")


def flops_table(record: dict, paper: pd.DataFrame) -> tuple[pd.DataFrame, list[float]]:
    """Cells ``ours / paper (Δ%)`` on the paper's rows and columns, and every cell's relative gap in %."""
    cells = pd.DataFrame(MARKDOWN_NA, index=paper.index.copy(), columns=paper.columns.copy(), dtype=object)
    gaps = []
    for row in paper.index:
        for col in paper.columns:
            ours = (record["rows"].get(row) or {}).get(col)
            p = paper.loc[row, col]
            if ours is None:
                cells.loc[row, col] = f"{MARKDOWN_NA} / {format_count(p)}"
                continue
            gap = 100.0 * (ours["macs"] - p) / p
            gaps.append(gap)
            cells.loc[row, col] = f"{format_count(ours['macs'])} / {format_count(p)} ({gap:+.2f}%)"
    return cells, gaps



def _part_models(grid: Grid, dataset: str) -> dict[str, str]:
    """part name -> the architecture it trains for ``dataset``."""
    out = {}
    for part in grid.items("parts"):
        m = part.get("model")
        out[part["name"]] = m.get(dataset, MARKDOWN_NA) if isinstance(m, dict) else m
    return out


def table01(grid: Grid, paper: pd.DataFrame, dataset: str) -> tuple[pd.DataFrame, int]:
    """Large / small local model of each column group: ours (a column's ``first`` / ``second`` part and the
    parts' models) / the paper's."""
    models = _part_models(grid, dataset)
    by_paper = {c.get("paper"): c for c in grid.columns}
    cells = pd.DataFrame(MARKDOWN_NA, index=paper.index.copy(), columns=paper.columns.copy(), dtype=object)
    differ = 0
    for group in paper.columns:
        first = next((by_paper[m] for m in (n.strip() for n in str(group).replace("FedMHOs", "FedMHO").split(","))
                      if m in by_paper), None)
        for row in paper.index:
            want = paper.loc[row, group]
            if first is None:
                cells.loc[row, group] = f"{MARKDOWN_NA} / {want}"
                continue
            half = "first" if str(row).lower().startswith("large") else "second"
            part = first.get(half) or None
            ours = MODEL_LABELS.get(models.get(part), models.get(part) or MARKDOWN_NA)
            differ += ours != want
            cells.loc[row, group] = f"{ours} / {want}" + ("" if ours == want else " (differs)")
    return cells, differ


def settings_for(grid: Grid, dataset: str) -> dict:
    """The settings in force for ``dataset``: params merged with ``per_dataset`` and the methods' defaults."""
    from ...methods import METHODS
    from ...config import merge_per_dataset

    merged = merge_per_dataset({**grid.raw(), "dataset": dataset})
    from ...config import CVAETraining, LocalTraining

    server = merged.get("server") or {}
    return {"local": LocalTraining.from_params(merged.get("local")),
            "cvae": CVAETraining.from_params(merged.get("cvae")),
            "fedmho": {**METHODS.get("fedmho").defaults, **(server.get("fedmho") or {})}}


def _lr(v: float) -> str:
    mant, exp = f"{v:.0e}".split("e")
    return f"{mant}e{int(exp)}"


def table03(grid: Grid, paper: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Table III from the settings in force (ours / paper), every dataset of the paper."""
    ours_of = {
        "Batch Size": lambda s: str(s["local"].batch_size),
        "Local Epoch (VGG-9 & CNN)": lambda s: str(s["local"].epochs),
        "Local Epoch (CVAE)": lambda s: str(s["cvae"].epochs),
        "Local Optimizer (VGG-9)": lambda s: "SGD",  # osfl.clients.training: SGD, the only local optimiser
        "Local LR (VGG-9)": lambda s: _lr(s["local"].lr),
        "Momentum (VGG-9)": lambda s: f"{s['local'].momentum:g}",
        "Local optimizer (CVAE)": lambda s: "Adam",  # osfl.generative.cvae.train_cvae
        "Local LR (CVAE)": lambda s: _lr(s["cvae"].lr),
        "Global Epoch": lambda s: str(s["fedmho"]["epochs"]),
        "Global Optimizer": lambda s: "Adam",  # osfl.generative.fusion.epoch_step
        "Global LR": lambda s: _lr(s["fedmho"]["lr"]),
        "Number of Synthetic Data": lambda s: f"{int(s['fedmho']['samples']):,}",
    }
    label_to_ds = {v: k for k, v in DATASET_LABELS.items()}
    cells = pd.DataFrame(MARKDOWN_NA, index=paper.index.copy(), columns=paper.columns.copy(), dtype=object)
    differ = 0
    for col in paper.columns:
        s = settings_for(grid, label_to_ds[col])
        for row in paper.index:
            want = str(paper.loc[row, col])
            ours = ours_of[row](s) if row in ours_of else MARKDOWN_NA
            same = ours == want or _same_number(ours, want)
            differ += not same
            cells.loc[row, col] = ours if same else f"{ours} (paper {want})"
    return cells, differ


def _same_number(a: str, b: str) -> bool:
    try:
        return math.isclose(float(a.replace(",", "")), float(b.replace(",", "")))
    except ValueError:
        return False


def table04(grid: Grid, runs: dict, paper: pd.DataFrame, paper_std: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Table IV: every column on every dataset and split run."""
    return compare_rows(runs, paper, paper_std, [c for c in grid.columns if c.get("paper")],
                        lambda ds, entry: DATASET_LABELS.get(ds, ds))


def _md_sd_defaults(grid: Grid, row: str) -> list[dict]:
    """Table IV's FedMHO-MD / -SD columns as the default row (``row``) of an ablation table."""
    return [{**c, "row": row} for c in grid.columns if c.get("paper") in ("FedMHO-MD", "FedMHO-SD")]


def ablation(grid: Grid, results_root: Path, art, default_row: str | None) -> tuple[pd.DataFrame, dict]:
    """Tables V, VI, VIII, IX: the variants of ``art`` (plus Table IV's MD/SD as ``default_row``) beside the paper."""
    table06 = art.id in BY_DATASET
    pool = grid.value("variants") if table06 else grid.block("sweeps").get("variants")
    entries = [v for v in pool or [] if v.get("artifact") == art.id]
    if default_row is not None:
        entries = _md_sd_defaults(grid, default_row) + entries
    datasets = None if table06 else grid.block("sweeps").get("datasets") or []
    runs = read_runs(results_root, grid, entries, datasets)
    # Tables V and VIII are EMNIST's: another dataset's rows are named after it and have no paper number
    prefix = ((lambda ds, e: DATASET_LABELS.get(ds, ds)) if table06 else
              (lambda ds, e: e["row"] if ds == "emnist" else f"{DATASET_LABELS.get(ds, ds)}: {e['row']}"))
    return compare_rows(runs, load_published_table(art), load_published_table(art, "std"), entries, prefix)


def _method_rows(art, entries: list[dict], columns_of) -> tuple[pd.DataFrame, int]:
    """A table whose rows are methods (Tables VII, X): each entry's ``paper`` name, per sweep dataset (EMNIST's rows
    carry the paper's numbers; another dataset's are named after it), and ``columns_of[ds]`` = [(our column label,
    the paper's column, {entry id: run records})]; each cell mean ± std over seeds beside the paper's. Returns
    (cells, cells run)."""
    paper, paper_std = load_published_table(art), load_published_table(art, "std")
    cells, labels, done = {}, [], 0
    for ds, cols in columns_of.items():
        lead = "" if ds == "emnist" else f"{DATASET_LABELS.get(ds, ds)}: "
        for entry in entries:
            name = entry.get("paper", entry["id"])
            label = name if not lead and name in paper.index else None
            row = cells.setdefault(f"{lead}{name}", {})
            for ours, theirs, by_id in cols:
                vals = [r["acc_final"] for r in by_id.get(entry["id"], [])]
                known = label is not None and theirs in paper.columns
                row[ours] = vs_paper(vals, paper.loc[label, theirs] if known else float("nan"),
                                     paper_std.loc[label, theirs] if known else float("nan"))
                labels += [ours] if ours not in labels else []
                done += bool(vals)
    df = pd.DataFrame.from_dict(cells, orient="index", columns=labels, dtype=object)
    df.index.name = paper.index.name
    return df, done


def table07(grid: Grid, results_root: Path, art) -> tuple[pd.DataFrame, int]:
    """Table VII: each ``sweeps.clients_columns`` column on each sweep dataset's first split with N clients
    (``sweeps.clients``; runs ``<run>-n<N>``), mean ± std over seeds beside the paper's. Returns (cells, cells run)."""
    sweeps = grid.block("sweeps")
    split = (grid.first_split or "dir0.5")
    cols = sweeps.get("clients_columns") or []
    return _method_rows(art, cols, {
        ds: [(f"N = {n}", f"N{n}", read_runs(results_root, grid, cols, [ds], suffix=f"-n{n}").get((ds, split), {}))
             for n in sweeps.get("clients") or []]
        for ds in sweeps.get("datasets") or []})


def table10(grid: Grid, results_root: Path, art) -> tuple[pd.DataFrame, int]:
    """Table X: the ``table10`` sweep variants (every method on the diverse classifiers) on each sweep dataset, one
    column per split (the paper's P1..P3 in ``splits`` order), mean ± std over seeds beside the paper's."""
    sweeps = grid.block("sweeps")
    entries = [v for v in sweeps.get("variants") or [] if v.get("artifact") == art.id]
    columns_of = {}
    for ds in sweeps.get("datasets") or []:
        runs = read_runs(results_root, grid, entries, [ds])
        columns_of[ds] = [(f"P{i} ({split})", f"P{i}", runs.get((ds, split), {}))
                          for i, split in enumerate(grid.splits, start=1)]
    return _method_rows(art, entries, columns_of)


def table10_setting(grid: Grid) -> str:
    """Table X's setting as params.yaml has it: each part its variants read (clients, models, optimiser) and the
    global models their ``--set`` chooses."""
    sweeps = grid.block("sweeps")
    entries = [v for v in sweeps.get("variants") or [] if v.get("artifact") == "table10"]
    parts = {q["name"]: q for q in grid.items("parts") + (sweeps.get("parts") or [])}
    ds = (sweeps.get("datasets") or grid.datasets or ("fmnist",))[0]
    described = []
    for name in dict.fromkeys(e[k] for e in entries for k in ("first", "second") if e.get(k)):
        part = parts.get(name, {})
        span = part.get("clients") or part.get("half")
        n = span[1] - span[0] if isinstance(span, list) else (grid.clients or 10) // 2
        models = part.get("model") if isinstance(part.get("model"), list) else [part.get("model")] * n
        models = [m.get(ds, MARKDOWN_NA) if isinstance(m, dict) else str(m) for m in models]
        ids = f"clients {span[0]}-{span[1] - 1}" if isinstance(span, list) else f"the {span} half"
        opt = (part.get("local") or {}).get("optimizer")
        described.append(f"{name} ({ids}): " + ", ".join(f"{models.count(m)} × {m}" for m in dict.fromkeys(models))
                         + (f", {opt} at {part['local'].get('lr', grid.block('local').get('lr'))}"
                            if opt else ""))
    globals_ = {t.split("=", 1)[1] for e in entries for t in str(e.get("set", "")).split() if t.startswith("model=")}
    return (("Parts: " + "; ".join(described) + ". ") if described else "") + (
        f"Global model: {', '.join(sorted(globals_)) or grid.value('model')} (FedAvg, FedDF: the vote of one model "
        "per architecture); the FedMHOs start from the classifiers' ensemble distilled into it (init: distill, the "
        "SPEC's proposal).")


def _part_epochs(grid: Grid, ds: str, part: str, key: str = "cvae") -> int:
    """Local epochs of ``part`` on ``ds`` (``key``: ``cvae`` for CVAEs, ``local`` for classifiers): the part's own
    ``<key>.epochs``, else ``<key>`` merged with ``per_dataset``."""
    own = next((q for q in grid.items("parts") + (grid.block("sweeps").get("parts") or [])
                if q.get("name") == part), {})
    base = {**(grid.value(key) or {}), **((grid.block("per_dataset").get(ds) or {}).get(key) or {})}
    return int({**base, **(own.get(key) or {})}.get("epochs", 0))


def table11(grid: Grid, results_root: Path, art) -> tuple[pd.DataFrame, int, str]:
    """Table XI on each sweep dataset's first split: FID of each ``sweeps.fid`` part's generated data (stage
    ``fid``) with FedMHO-MD / -SD trained on that part (``table11`` variants; Table IV's runs for its own part), and
    the Gaussian-noise and real-split references. Returns (cells, FIDs computed, the features that produced them)."""
    paper = load_published_table(art)
    sweeps = grid.block("sweeps")
    split = (grid.first_split or "dir0.5")
    seeds = grid.seeds
    parts = sweeps.get("fid") or []
    entries = _md_sd_defaults(grid, "") + [v for v in sweeps.get("variants") or [] if v.get("artifact") == "table11"]
    features: set[str] = set()  # what produced the FIDs, as each record says
    cells, done = {}, 0

    def cell(vals, label, col):  # the paper prints no std here
        return vs_paper(vals, paper.loc[label, col] if label in paper.index else float("nan"))

    for ds in sweeps.get("datasets") or []:
        runs = read_runs(results_root, grid, entries, [ds]).get((ds, split), {})
        by_part = read_runs(results_root, grid, [{"id": p} for p in parts], [ds], folder="fid").get((ds, split), {})
        fids = {part: by_part.get(part, []) for part in parts}
        done += sum(map(len, fids.values()))
        features |= {r.get("features", r.get("extractor", "?")) for recs in fids.values() for r in recs}
        anyrec = [r for recs in fids.values() for r in recs][: len(seeds)]
        lead = "" if ds == "emnist" else f"{DATASET_LABELS.get(ds, ds)}: "
        na = {c: "N/A" for c in ("FedMHO-MD", "FedMHO-SD")}
        cells[f"{lead}Gaussian Noise"] = {"FID": cell([r["noise_fid"] for r in anyrec], "Gaussian Noise", "FID"), **na}
        for part, recs in fids.items():
            e = _part_epochs(grid, ds, part)
            label = next((i for i in paper.index if paper.loc[i, "E_inferred"] == e), None) if not lead else None
            row = {"FID": cell([r["fid"] for r in recs], label, "FID")}
            for col in ("FedMHO-MD", "FedMHO-SD"):
                ids = [v["id"] for v in entries if v.get("paper") == col and v.get("second") == part]
                vals = [r["acc_final"] for i in ids for r in runs.get(i, [])]
                row[col] = cell(vals, label, col)
            cells[f"{lead}E={e}" if lead or label is None else label] = row
        cells[f"{lead}Real Data"] = {"FID": cell([r["real_split_fid"] for r in anyrec], "Real Data", "FID"), **na}
    df = pd.DataFrame.from_dict(cells, orient="index", columns=["FID", "FedMHO-MD", "FedMHO-SD"], dtype=object)
    df.index.name = paper.index.name
    return df, done, "; ".join(sorted(features))
