"""OFedED (Li et al., CIKM 2025): which results feed which table, rendered beside the published numbers.

What builds each artifact (issue 17, being built):

* Table 1 from the runs ``results/<dataset>-<split>-s<seed>/runs/<id>.json`` of ``columns`` and ``s_columns`` that
  name a paper column: the last server epoch's accuracy, mean ± std over the seeds that ran, beside the paper's;
  the paper's rows (MNIST, CIFAR-10, CIFAR-100, SVHN) stay, with "—" for ours where we did not run them, and our
  datasets' rows follow;
* Table 3 (ablation) from the same runs: row 1 (no part) is Co-Boosting's run, row 8 (every part) OFedED's, rows
  2–7 the ``s_columns`` whose ``parts`` name them; one column per dataset and split we ran beside the paper's
  CIFAR-10 and SVHN (α = 0.3);
* Tables 4 and 5 (computation and communication) from what the runs counted: local training's and the matching's
  FLOPs (``train@``/``condense@ --count-flops``: ``clients.json`` ``train_flops``, ``distilled.json`` per client
  ``flops`` and ``upload_bytes``), the server's (``--count-flops`` columns: the record's ``server_flops``), the
  model uploads from the state dicts of the run's model and of ResNet-18 built for the dataset (MB = 10^6 bytes, as
  the paper's 447 MB for ten ResNet-18s); FedAvg's rounds "under the same performance" are the paper's count
  (``cost.fedavg_rounds``), not a run;
* Fig. 2(a) from the teacher curves the ``--track-teacher`` columns logged (``train/teacher_acc.tsv``), Fig. 2(c)
  from the columns with a ``student`` beside the clients' own architecture, both at ``figure_split``;
* Table 2 from the runs ``results/<run>-<resnet.model>/runs/<method>.json`` (ResNet-18 clients and server on the
  run's partition; Local = the uniform ensemble): the paper's CIFAR-10 rows, then ours per dataset and split (Δ only
  where our dataset is the paper's);
* Figs. 2(b) and 3 from the ``variants`` (``results/<run>/runs/ofeded-<id>.json``) at ``figure_split``: accuracy
  against IPC (the main OFedED run is the point at ``condense.ipc``), and against σ per noise series (images,
  gradients, both), the main run drawn as the no-noise reference; Fig. 1 is a schematic.

Every claim verdict follows the spread rule of :mod:`osfl.reporting.spread`: each side over the seeds that ran,
compared on the seeds both have, decided only beyond the spread (n >= 2: the larger sample std; one seed: the larger
epoch-to-epoch swing of the last half of the runs' logged curves), and not judged where the run's clients
(``clients.json``) are at chance or all alike or its curve is flat at chance.
"""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import cpu_profile
from ..live import read_curve
from ..reporting.figures import curve_panels, grouped_bar_panels
from ..reporting.published import load_artifacts, load_published_table
from ..reporting.runs import compare_rows, read_runs, run_name, vs_paper, write_status
from ..reporting.spread import (
    Side,
    Verdict,
    above_all,
    clients_at_chance,
    compare,
    flat_at_chance,
    format_spread,
    late_half,
    mean_std,
    swing,
)
from ..reporting.tables import MARKDOWN_NA, write_table

#: our dataset names -> the paper's row labels (Table 1)
DATASET_LABELS = {"mnist": "MNIST", "cifar10": "CIFAR-10", "cifar100": "CIFAR-100", "svhn": "SVHN",
                  "fmnist": "Fashion-MNIST", "digits": "Digits"}
ACC_CELLS = ("Each cell: ours, the last server epoch's top-1 test accuracy, mean ± sample std (n seeds) / the paper's "
             "mean ± std (our mean − the paper's); — where a side has no number. ")


def _entries(params: dict) -> list[dict]:
    return list(params.get("columns") or []) + list(params.get("s_columns") or [])


def table1(params: dict, runs: dict, art) -> tuple[pd.DataFrame, dict]:
    """Every Table 1 column we ran on every dataset and split, below the paper's rows."""
    paper, paper_std = load_published_table(art), load_published_table(art, "std")
    entries = [e for e in _entries(params) if e.get("paper")]
    ours, numbers = compare_rows(runs, paper, paper_std, entries, lambda ds, e: DATASET_LABELS.get(ds, ds))
    rest = {label: {c: vs_paper([], paper.loc[label, c], paper_std.loc[label, c]) for c in paper.columns}
            for label in paper.index if label not in ours.index}
    both = pd.concat([pd.DataFrame.from_dict(rest, orient="index", columns=list(paper.columns), dtype=object), ours])
    both = both.loc[[i for i in paper.index if i in both.index] + [i for i in ours.index if i not in paper.index]]
    both.index.name = paper.index.name
    both.attrs = dict(ours.attrs)
    return both, numbers


def ablation_entries(params: dict) -> dict[str, dict]:
    """Table 3's row label (the paper's check marks, "Loss, Ens, Others") -> the run that is that row."""
    rows = {", , ": next((e for e in params.get("columns") or [] if e.get("id") == FIG2_RUNS["Co-Boosting"]), None)}
    for e in params.get("s_columns") or []:
        if e.get("parts"):
            rows[", ".join(p.strip() for p in str(e["parts"]).split(","))] = e
    return {k: v for k, v in rows.items() if v is not None}


def row_label(label: str) -> str:
    """The paper's check marks ``"✓, , ✓"`` as a row label ``"✓ · – · ✓"`` (– = the part is off)."""
    return " · ".join(p.strip() or "–" for p in label.split(","))


def table3(params: dict, results_root: Path, art) -> tuple[pd.DataFrame, int]:
    """The paper's eight rows: its CIFAR-10 / SVHN cells and ours per dataset and split (mean ± std over seeds)."""
    paper, paper_std = load_published_table(art), load_published_table(art, "std")
    by_row = ablation_entries(params)
    runs = read_runs(results_root, params, list(by_row.values()))
    cells, done = {}, 0
    for label in paper.index:
        row = {f"paper: {c}": vs_paper([], paper.loc[label, c], paper_std.loc[label, c]).split(" / ", 1)[1]
               for c in paper.columns}
        entry = by_row.get(label)
        for (ds, split), by_id in runs.items():
            vals = [r["acc_final"] for r in by_id.get(entry["id"], [])] if entry else []
            row[f"ours: {DATASET_LABELS.get(ds, ds)}, α = {split.removeprefix('dir')}"] = (
                format_spread(vals) if vals else MARKDOWN_NA)
            done += bool(vals)
        cells[row_label(label)] = row
    df = pd.DataFrame.from_dict(cells, orient="index", dtype=object)
    df.index.name = "Loss · Ens · Others"
    return df, done


def _classes(dataset: str) -> int:
    from ..data import get_spec

    return get_spec(dataset).num_classes


def _curve(live: Path, metric: str = "test_acc") -> list[float] | None:
    """A logged curve's values (``live``: a run's live folder), None where it was not logged."""
    return read_curve(live, metric)[1] if (live / "plots" / "metrics" / f"{metric}.tsv").is_file() else None


def _degenerate(clients_file: Path, ds: str, accs: list[float] | None) -> str | None:
    """Why a run's result cannot be judged, or None (spread rule 3): its clients at chance or all alike, its curve
    flat at chance."""
    clients = json.loads(clients_file.read_text()) if clients_file.is_file() else None
    reasons = (clients_at_chance(clients, _classes(ds)), flat_at_chance(accs, _classes(ds)))
    return "; ".join(r for r in reasons if r) or None


def run_side(results_root: Path, ds: str, split: str, entry_id: str, name: str, recs: list[dict],
             clients: str = "") -> Side:
    """One result over seeds as a side of a comparison: ``recs`` (:func:`osfl.reporting.runs.read_runs`' records of
    ``entry_id``, each with its ``seed``) -> seed -> final accuracy, each seed's swing (the last half of its logged
    test-accuracy curve) and degenerate reason (its clients: the run's, or ``<run><clients>``'s)."""
    values, swings, bad = {}, {}, {}
    for r in recs:
        seed = r["seed"]
        run_dir = Path(results_root) / run_name(ds, split, seed)
        accs = _curve(run_dir / "live" / entry_id)
        values[seed] = r["acc_final"]
        swings[seed] = swing(late_half(accs)) if accs else None
        bad[seed] = _degenerate(Path(results_root) / f"{run_name(ds, split, seed)}{clients}" / "clients.json", ds,
                                accs)
    return Side(name, values, swings, bad)


def _mean(side: Side) -> float:
    return mean_std(list(side.values.values()))[0]


def claims(numbers: dict, results_root: Path | None = None) -> list[tuple[str, Verdict]]:
    """Per row we ran: does OFedED beat every other method we ran there (the paper's "consistently outperforms")?
    ``numbers``: :func:`table1`'s (each cell's per-seed values, run and entry id); curves and clients read under
    ``results_root``."""
    out = []
    rows = sorted({row for row, _ in numbers})
    for row in rows:
        cells = {c: v for (r, c), v in numbers.items() if r == row}
        if "OFedED" not in cells or len(cells) < 2:
            continue
        sides = {c: run_side(results_root, *v["run"], v["id"], c,
                             [{"seed": k, "acc_final": x} for k, x in v["values"].items()])
                 if results_root is not None else Side(c, v["values"]) for c, v in cells.items()}
        best = max((c for c in cells if c != "OFedED"), key=lambda c: cells[c]["mean"])
        margin = cells["OFedED"]["mean"] - cells[best]["mean"]
        v = above_all(sides["OFedED"], [sd for c, sd in sides.items() if c != "OFedED"])
        out.append((f"{row}: OFedED above every other method we ran",
                    Verdict(v.verdict, f"{cells['OFedED']['mean']:.2f} vs {best} {cells[best]['mean']:.2f}, "
                                       f"{margin:+.2f}", reason=v.reason, basis=v.evidence)))
    return out


def teacher_claims(sides: dict) -> list[tuple[str, Verdict]]:
    """Fig. 2(a): OFedED's ensemble ends above DENSE's and Co-Boosting's, and rises over the epochs (``sides``:
    :func:`teacher_sides`)."""
    out = []
    for title, by in sides.items():
        if not by or "OFedED" not in by:
            continue
        last, last_whole, first = by["OFedED"]
        others = [sd[0] for k, sd in by.items() if k != "OFedED"]
        if others:
            out.append((f"{title}: OFedED's ensemble ends above DENSE's and Co-Boosting's (Fig. 2(a))",
                        above_all(last, others)))
        out.append((f"{title}: OFedED's ensemble accuracy rises over the epochs (Fig. 2(a))",
                    compare(last_whole, first)))
    return out


def student_claims(numbers: dict) -> list[tuple[str, Verdict]]:
    """Fig. 2(c): per student architecture, OFedED above DENSE and Co-Boosting (``numbers``: :func:`student_bars`'
    sides)."""
    out = []
    for (ds, split), groups in numbers.items():
        for group, sides in groups.items():
            if "OFedED" not in sides or len(sides) < 2:
                continue
            v = above_all(sides["OFedED"], [sd for k, sd in sides.items() if k != "OFedED"])
            out.append((f"{_panel_title(ds, split)}, student {group}: OFedED above DENSE and Co-Boosting (Fig. 2(c))",
                        v))
    return out


def table2(params: dict, results_root: Path, art) -> tuple[pd.DataFrame, int]:
    """Table 2: the paper's rows (CIFAR-10, by α), then ours per dataset and split with ResNet-18 clients."""
    paper, paper_std = load_published_table(art), load_published_table(art, "std")
    resnet = params.get("resnet") or {}
    entries = [{"id": e["method"], "paper": e["paper"]}
               for e in list(resnet.get("columns") or []) + list(resnet.get("s_columns") or [])]
    runs = read_runs(Path(results_root), params, entries, suffix=f"-{resnet.get('model', 'resnet18')}")
    rows = {f"paper: CIFAR-10, α = {a}": {c: vs_paper([], paper.loc[a, c], paper_std.loc[a, c]).split(" / ", 1)[1]
                                           for c in paper.columns} for a in paper.index}
    done = 0
    for (ds, split), by_id in runs.items():
        alpha = split.removeprefix("dir")
        same = ds == "cifar10" and alpha in paper.index
        row = {}
        for e in entries:
            vals = [r["acc_final"] for r in by_id.get(e["id"], [])]
            done += bool(vals)
            if same:
                row[e["paper"]] = vs_paper(vals, paper.loc[alpha, e["paper"]], paper_std.loc[alpha, e["paper"]])
            else:
                row[e["paper"]] = format_spread(vals) if vals else MARKDOWN_NA
        rows[f"ours: {_panel_title(ds, split)}"] = row
    df = pd.DataFrame.from_dict(rows, orient="index", columns=list(paper.columns), dtype=object).fillna(MARKDOWN_NA)
    df.index.name = "Run"
    return df, done


def variant_points(params: dict, results_root: Path, figure: str) -> dict:
    """Per dataset at ``figure_split``: {"series": {series: {x: Side}}} of the ``variants`` drawn in ``figure``
    ("2b" or "3"), each a side over the seeds that ran (:func:`run_side`), and "reference": the main OFedED run's
    side (None where it did not run), and "ipc": the main runs' IPC."""
    split = params.get("figure_split")
    chosen = [v for v in params.get("variants") or [] if str(v.get("figure")) == figure]
    main = next((e for e in params.get("s_columns") or [] if e.get("method") == "ofeded" and not e.get("tag")), None)
    entries = [{"id": f"ofeded-{v['id']}"} for v in chosen] + ([{"id": main["id"]}] if main else [])
    runs = read_runs(Path(results_root), {**params, "splits": [split]}, entries)
    out = {}
    for (ds, _), by_id in runs.items():
        series: dict[str, dict[float, Side]] = {}
        for v in chosen:
            recs = by_id.get(f"ofeded-{v['id']}", [])
            if recs:
                series.setdefault(str(v["series"]), {})[float(v["x"])] = run_side(
                    results_root, ds, split, f"ofeded-{v['id']}", f"{v['series']} {v['x']}", recs,
                    str(v.get("clients") or ""))
        recs = by_id.get(main["id"], []) if main else []
        ipcs = {json.loads(f.read_text())["settings"]["ipc"] for seed in params.get("seeds") or [0]
                if (f := Path(results_root) / run_name(ds, split, seed) / "distilled.json").is_file()}
        out[ds] = {"series": series,
                   "reference": run_side(results_root, ds, split, main["id"], "no noise", recs) if recs else None,
                   "ipc": float(ipcs.pop()) if len(ipcs) == 1 else None}  # the main runs' IPC (as they ran)
    return out


def ipc_panels(params: dict, results_root: Path) -> tuple[dict, list[tuple[str, Verdict]]]:
    """Fig. 2(b): OFedED's accuracy against IPC (the variants, and the main run at the IPC its distilled.json
    records); the claim that IPC = 2 is best (above every other IPC, by the spread rule)."""
    panels, verdicts = {}, []
    for ds, pts in variant_points(params, results_root, "2b").items():
        curve = dict(pts["series"].get("OFedED", {}))
        if pts["reference"] is not None and pts["ipc"] is not None:
            curve[pts["ipc"]] = pts["reference"]
        curve = {x: replace(sd, name=f"IPC {x:g}") for x, sd in curve.items()}
        title = _panel_title(ds, params.get("figure_split"))
        if len(curve) < 2:
            panels[title] = None
            continue
        xs = sorted(curve)
        panels[title] = ({"OFedED": (xs, [_mean(curve[x]) for x in xs])}, {})
        if 2.0 in curve:
            v = above_all(curve[2.0], [curve[x] for x in xs if x != 2.0])
            verdicts.append((f"{title}: IPC = 2 gives OFedED's best accuracy (Fig. 2(b))",
                             replace(v, evidence=f"{len(xs)} IPC values; {v.evidence}")))
    return panels, verdicts


def dp_panels(params: dict, results_root: Path) -> tuple[dict, list[tuple[str, Verdict]]]:
    """Fig. 3: OFedED's accuracy against σ per noise series, the no-noise run as a reference line; the claims that
    every setting degrades and gradient noise (and both together) cost more than image noise, by the spread rule
    (a series over σ: per seed, its mean over the σ values that seed ran at all of)."""
    panels, verdicts = {}, []
    for ds, pts in variant_points(params, results_root, "3").items():
        title = _panel_title(ds, params.get("figure_split"))
        sides = {name: {x: replace(sd, name=f"{name} σ={x:g}") for x, sd in c.items()}
                 for name, c in pts["series"].items()}
        if not sides:
            panels[title] = None
            continue
        series = {name: (sorted(c), [_mean(c[x]) for x in sorted(c)]) for name, c in sides.items()}
        ref = pts["reference"]
        panels[title] = (series, {} if ref is None else {"no noise": _mean(ref)})
        if ref is not None:
            verdicts.append((f"{title}: every noise setting lowers accuracy (Fig. 3)",
                             above_all(ref, [sd for c in sides.values() for sd in c.values()])))
        over = {name: _over_sigma(name, c) for name, c in sides.items()}
        if "images" in over and "gradients" in over:
            verdicts.append((f"{title}: noise on the gradients costs more than noise on the images (Fig. 3)",
                             compare(over["images"], over["gradients"])))
        if "both" in over and len(over) > 1:
            verdicts.append((f"{title}: noise on both gives the largest drop (Fig. 3)",
                             above_all(over["both"], [sd for n, sd in over.items() if n != "both"], below=True)))
    return panels, verdicts


def _over_sigma(name: str, by_x: dict[float, Side]) -> Side:
    """A noise series as one side: per seed that ran every σ, its mean accuracy over σ; the swing the mean of the
    σ runs' swings (where all have one), degenerate where any σ run is."""
    sides = list(by_x.values())
    seeds = [s for s in sides[0].values if all(s in sd.values for sd in sides)]
    values = {s: float(np.mean([sd.values[s] for sd in sides])) for s in seeds}
    swings = {s: float(np.mean([sd.swings[s] for sd in sides])) if all(sd.swings.get(s) is not None for sd in sides)
              else None for s in seeds}
    bad = {s: "; ".join(dict.fromkeys(r for sd in sides if (r := sd.degenerate.get(s)))) or None for s in seeds}
    return Side(f"{name} (mean over σ)", values, swings, bad)


CELL_NOTES = {
    "table2": ACC_CELLS + "Ours: ResNet-18 clients and server on the run's partition; Local = the clients' "
              "uniform ensemble, evaluated directly. The paper's rows are CIFAR-10; Δ only where we ran the same "
              "dataset. ",
    "table3": "Rows: the parts on (✓) as the paper's check marks (rows 2–7's positions reconstructed, SPEC §5); "
              "row 1 is our Co-Boosting run, row 8 our OFedED run. The paper: CIFAR-10 and SVHN at α = 0.3, mean ± "
              "std; ours: mean ± sample std (n seeds) of the last epoch's accuracy. ",
}

DP_NOTE = ("Noise on the images: each client adds N(0, σ²) to its distilled images once before the upload, σ in the "
           "mean = std = 0.5 normalised pixel space (σ/2 in [0, 1] pixels). Noise on the gradients: the clients train "
           "with DP-SGD (per-sample gradients clipped to τ = 1, Gaussian noise with noise multiplier σ, i.e. standard "
           "deviation στ on the summed clipped gradients; SPEC §2.8 [P]); each client's ε at δ = 1e-5 is in "
           "results/<run>-dpg<σ>/clients.json. Both: the DP-SGD clients and the noisy images. ")

SCHEMATICS = {"fig1": "a schematic (the framework): no data"}
#: Fig. 2's series (and Table 5's rows): the paper's method name -> the Table 1 run (the ``columns``/``s_columns``
#: id) that is it; a ``student`` column of that series is named <id>-<student tag> (DENSE: Co-Boosting's code's DENSE)
FIG2_RUNS = {"DENSE": "coboost-dense", "Co-Boosting": "coboost", "OFedED": "ofeded"}


def _series_of(run_id: str) -> str | None:
    """The Fig. 2 series a run belongs to: its own id, or the longest series id it extends (``<id>-<tag>``)."""
    hits = [(len(i), lbl) for lbl, i in FIG2_RUNS.items() if run_id == i or run_id.startswith(i + "-")]
    return max(hits)[1] if hits else None


def _panel_title(ds: str, split: str) -> str:
    return f"{DATASET_LABELS.get(ds, ds)}, α = {split.removeprefix('dir')}"


def _teacher_runs(params: dict, results_root: Path) -> dict:
    """Per dataset at ``figure_split``: {method label: {seed: ensemble test accuracies per server epoch}} of the
    ``--track-teacher`` runs (Fig. 2(a))."""
    split, out = params.get("figure_split"), {}
    for ds in params.get("datasets") or []:
        by: dict[str, dict] = {}
        for label, run_id in FIG2_RUNS.items():
            entry = next((e for e in _entries(params) if e.get("id") == run_id), None)
            for seed in params.get("seeds") or [0]:
                live = Path(results_root) / run_name(ds, split, seed) / "live" / (entry or {}).get("id", "?")
                curve = _curve(live, "train/teacher_acc")
                if curve:
                    by.setdefault(label, {})[seed] = (read_curve(live, "train/teacher_acc")[0], curve)
        out[ds] = by
    return out


def teacher_curves(params: dict, results_root: Path) -> dict:
    """Fig. 2(a): per dataset at ``figure_split``, each method's ensemble (teacher) test accuracy per server epoch,
    the mean over the seeds that logged it (``--track-teacher``); None for a dataset with none."""
    split, panels = params.get("figure_split"), {}
    for ds, by in _teacher_runs(params, results_root).items():
        series = {}
        for label, curves in by.items():
            n = min(len(c[0]) for c in curves.values())
            first = next(iter(curves.values()))
            series[label] = (first[0][:n], [float(np.mean([c[1][i] for c in curves.values()])) for i in range(n)])
        panels[_panel_title(ds, split)] = (series, {}) if series else None
    return panels


def teacher_sides(params: dict, results_root: Path) -> dict:
    """Fig. 2(a)'s claims' inputs: per panel title, {method label: (its last epoch's side with the swing of each
    seed's last half, the same with the swing of the whole curve, its first epoch's side with the whole curve's
    swing)} over the seeds that logged the ensemble (the last epoch is what "ends above" is about, the whole curve
    what "rises" is), degenerate where the run's clients are."""
    split, out = params.get("figure_split"), {}
    for ds, by in _teacher_runs(params, results_root).items():
        sides = {}
        for label, curves in by.items():
            bad = {seed: _degenerate(Path(results_root) / run_name(ds, split, seed) / "clients.json", ds, None)
                   for seed in curves}
            whole = {k: swing(c[1]) for k, c in curves.items()}
            last = Side(f"{label} last epoch", {k: c[1][-1] for k, c in curves.items()},
                        {k: swing(late_half(c[1])) for k, c in curves.items()}, bad)
            first = Side(f"{label} epoch {next(iter(curves.values()))[0][0]}", {k: c[1][0] for k, c in curves.items()},
                         whole, bad)
            sides[label] = (last, replace(last, swings=whole), first)
        out[_panel_title(ds, split)] = sides or None
    return out


def student_bars(params: dict, results_root: Path) -> tuple[dict, dict]:
    """Fig. 2(c): per dataset at ``figure_split``, student architecture -> {method -> mean final accuracy}: the
    clients' own architecture (the Table 1 runs) and each ``student`` of the columns; and the numbers behind it,
    each a side over the seeds that ran (:func:`run_side`)."""
    split = params.get("figure_split")
    entries = [e for e in _entries(params) if e.get("id") in FIG2_RUNS.values()
               or (e.get("student") and _series_of(e.get("id", "")))]
    runs = read_runs(Path(results_root), {**params, "splits": [split]}, entries)
    panels, numbers = {}, {}
    for (ds, _), by_id in runs.items():
        groups: dict[str, dict[str, float]] = {}
        sides: dict[str, dict[str, Side]] = {}
        for e in entries:
            recs = by_id.get(e["id"], [])
            if recs:
                group = e.get("student") or f"{_run_model(params)} (the clients')"
                side = run_side(results_root, ds, split, e["id"], _series_of(e["id"]), recs)
                groups.setdefault(group, {})[side.name] = _mean(side)
                sides.setdefault(group, {})[side.name] = side
        panels[_panel_title(ds, split)] = groups or None
        numbers[(ds, split)] = sides
    return panels, numbers


def _run_model(params: dict) -> str:
    """The clients' architecture as the runs used it (the params under their profile: cpu's replacement)."""
    return cpu_profile.apply(params)["model"]


def _model_bytes(name: str, dataset: str, inputs: Any = None) -> int:
    """Bytes of a model's upload: every tensor of its state dict (parameters and buffers) as stored, at the runs'
    input size (the params' ``inputs``)."""
    import torch

    from ..data import get_spec
    from ..data.inputs import InputPrep
    from ..models import build_model

    spec = get_spec(dataset)
    spec = InputPrep.from_params(inputs, dataset, spec.shape[0]).spec(spec)
    torch.manual_seed(0)  # the weights do not change a size
    model = build_model(name, spec.shape, spec.num_classes)
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def cost_numbers(params: dict, results_root: Path) -> dict:
    """Per (dataset, split): the counted costs, mean over the seeds that ran (None where a count is missing):
    local (all clients' local training FLOPs, one round), dm (all clients' matching FLOPs), s_bytes (the distilled
    sets' upload), model_bytes / res_bytes (K uploads of our model / of ResNet-18 for the dataset), and sc per
    method (server FLOPs, its test evaluations left out)."""
    cost = params.get("cost") or {}
    k = int(params.get("clients") or 10)
    out = {}
    for ds in params.get("datasets") or []:
        for split in params.get("splits") or []:
            local, dm, s_bytes, sc = [], [], [], {m: [] for m in FIG2_RUNS.values()}
            for seed in params.get("seeds") or [0]:
                run = Path(results_root) / run_name(ds, split, seed)
                clients = run / "clients.json"
                if clients.is_file() and "train_flops" in (c := json.loads(clients.read_text())):
                    local.append(c["train_flops"])
                dist = run / "distilled.json"
                if dist.is_file():
                    d = json.loads(dist.read_text())["clients"]
                    if all("flops" in x for x in d):
                        dm.append(sum(x["flops"] for x in d))
                    if all("upload_bytes" in x for x in d):
                        s_bytes.append(sum(x["upload_bytes"] for x in d))
                for method in sc:
                    f = run / "runs" / f"{method}.json"
                    if f.is_file() and "server_flops" in (r := json.loads(f.read_text())):
                        sc[method].append(r["server_flops"]["server"])
            if not (local or dm or any(sc.values())):
                continue
            mean = (lambda v: float(np.mean(v)) if v else None)
            out[(ds, split)] = {"local": mean(local), "dm": mean(dm), "s_bytes": mean(s_bytes),
                                "model_bytes": k * _model_bytes(_run_model(params), ds, params.get("inputs")),
                                "res_bytes": k * _model_bytes(cost.get("resnet", "resnet18"), ds,
                                                              params.get("inputs")),
                                "sc": {m: mean(v) for m, v in sc.items()},
                                "rounds": int(cost.get("fedavg_rounds", 10)), "seeds": len(local)}
    return out


def _g(flops) -> float:
    return float("nan") if flops is None else flops / 1e9


def _mb(n) -> float:
    return float("nan") if n is None else n / 1e6


def _plus(a, b):
    return None if a is None or b is None else a + b


def _fmt(v: float) -> str:
    return MARKDOWN_NA if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4g}"


def cost_tables(params: dict, results_root: Path, arts: dict) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """Tables 4 and 5: the paper's rows as printed, then ours per dataset and split we ran."""
    counted = cost_numbers(params, results_root)
    if not counted:
        return None, None
    t4, t5 = (load_published_table(arts[i]) for i in ("table4", "table5"))
    rows4 = {f"{m} (paper)": {c: _fmt(t4.loc[m, c]) for c in t4.columns} for m in t4.index}
    rows5 = {f"{m} (paper)": {c: _fmt(t5.loc[m, c]) for c in t5.columns} for m in t5.index}
    for (ds, split), n in counted.items():
        where = f"ours: {_panel_title(ds, split)}"
        ofeded_tcc, up = _plus(n["local"], n["dm"]), n["s_bytes"]
        fedavg_tcc = None if n["local"] is None else n["rounds"] * n["local"]
        rows4[f"FedAvg ({where}; {n['rounds']} rounds)"] = {
            "TCC (GFLOPs)": _fmt(_g(fedavg_tcc)), "US-CNN (MB)": _fmt(_mb(n["rounds"] * n["model_bytes"])),
            "US-Res (MB)": _fmt(_mb(n["rounds"] * n["res_bytes"]))}
        rows4[f"OFedED ({where})"] = {
            "TCC (GFLOPs)": _fmt(_g(ofeded_tcc)), "US-CNN (MB)": _fmt(_mb(_plus(n["model_bytes"], up))),
            "US-Res (MB)": _fmt(_mb(_plus(n["res_bytes"], up)))}
        sc_o = n["sc"][FIG2_RUNS["OFedED"]]
        for label, method in FIG2_RUNS.items():
            own = label == "OFedED"
            sc = n["sc"][method]
            red = (None if own or sc in (None, 0) or sc_o is None else 100.0 * (sc - sc_o) / sc)
            rows5[f"{label} ({where})"] = {
                "TCC (GFLOPs)": _fmt(_g(ofeded_tcc if own else n["local"])),
                "US-CNN (MB)": _fmt(_mb(_plus(n["model_bytes"], up) if own else n["model_bytes"])),
                "US-Res (MB)": _fmt(_mb(_plus(n["res_bytes"], up) if own else n["res_bytes"])),
                "SC (GFLOPs)": _fmt(_g(sc)), "Red. (%)": _fmt(red)}
    frames = []
    for rows, name in ((rows4, t4.index.name), (rows5, t5.index.name)):
        df = pd.DataFrame.from_dict(rows, orient="index", dtype=object)
        df.index.name = name
        frames.append(df)
    return frames[0], frames[1]


COST_NOTE = ("Ours are counted in the runs by torch's FlopCounterMode (2 FLOPs per multiply-accumulate of every "
             "matrix product and convolution, forward and backward; element-wise work not counted): TCC = all "
             "clients' local training (one round) + their distribution matching; SC = the server method's run, its "
             "per-epoch test evaluations left out. US = K model uploads (the state dict of our model, and of "
             "ResNet-18, built for the dataset) + the distilled sets as uploaded (float32 images, int64 labels); "
             "MB = 10^6 bytes. FedAvg's row multiplies one round by the paper's round count (it reaches OFedED's "
             "accuracy in 10 rounds, the paper says; not run here). Mean over the seeds that ran; a profile below "
             "the paper's scales every count down. ")


def render(params: dict, results_root: Path, prepared_root: Path, out: Path, published_root: str = "published",
           paper_results_root: Path | None = None, summary: Path | None = None) -> list[Path]:
    """Every built artifact under ``out`` and README.md with each artifact's state and the claim verdicts; with
    ``summary``, the pipeline's summary metrics there."""
    out.mkdir(parents=True, exist_ok=True)
    arts = load_artifacts(published_root)
    written: list[Path] = []
    status: dict[str, str] = {}
    metrics: dict = {}
    verdicts: list[tuple[str, Verdict]] = []
    seeds_note = (f"Seeds {params.get('seeds')}; {params.get('clients')} clients, {params.get('model')}, partition "
                  f"{params.get('partition')}. {cpu_profile.describe(params)}")
    runs = read_runs(Path(results_root), params, _entries(params))
    cost = None
    for art in arts:
        if art.id == "table1":
            cells, numbers = table1(params, runs, art)
            gaps = [v["mean"] - v["paper"] for v in numbers.values() if not math.isnan(v["paper"])]
            failed = int(cells.attrs.get("failed_guard", 0))
            if numbers or failed:
                written += write_table(cells, out / art.id, f"{art.label} (paper) vs ours: {art.caption}",
                                       f"tab:{art.id}-vs-paper", notes=ACC_CELLS + seeds_note)
                status[art.id] = f"{len(numbers)} cells run" + (f"; {failed} failed their regime guards" if failed else "")
                metrics[art.id] = {"cells_run": len(numbers), "cells_failed_guard": failed,
                                   "mean_gap": round(float(np.mean(gaps)), 4) if gaps else None}
                verdicts += claims(numbers, Path(results_root))
            else:
                status[art.id] = "no run yet"
        elif art.id in ("table2", "table3"):
            cells, done = (table2 if art.id == "table2" else table3)(params, Path(results_root), art)
            if done:
                written += write_table(cells, out / art.id, f"{art.label} (paper) vs ours: {art.caption}",
                                       f"tab:{art.id}-vs-paper", notes=CELL_NOTES[art.id] + seeds_note)
                status[art.id], metrics[art.id] = f"{done} cells run", {"cells_run": done}
            else:
                status[art.id] = "no run yet"
        elif art.id in ("table4", "table5"):
            if cost is None:
                cost = cost_tables(params, Path(results_root), {a.id: a for a in arts})
            df = cost[0] if art.id == "table4" else cost[1]
            if df is not None:
                written += write_table(df, out / art.id, f"{art.label} (paper) vs ours: {art.caption}",
                                       f"tab:{art.id}-vs-paper", notes=COST_NOTE + seeds_note)
                ours = [i for i in df.index if "(ours" in i]
                status[art.id] = f"{len(ours)} rows of ours (counted)"
                metrics[art.id] = {"rows_run": len(ours)}
            else:
                status[art.id] = "no run yet"
        elif art.id == "fig2a":
            panels = teacher_curves(params, Path(results_root))
            if any(v is not None for v in panels.values()):
                written += curve_panels(panels, out / art.id, suptitle=f"{art.label}: the ensemble's test accuracy "
                                        "per server epoch (ours; mean over seeds)", xlabel="Server epoch",
                                        ylabel="Ensemble test accuracy (%)")
                status[art.id] = f"{sum(v is not None for v in panels.values())} panels run"
                verdicts += teacher_claims(teacher_sides(params, Path(results_root)))
            else:
                status[art.id] = "no run yet"
        elif art.id == "fig2c":
            panels, numbers = student_bars(params, Path(results_root))
            if any(panels.values()):
                written += grouped_bar_panels(panels, out / art.id, suptitle=f"{art.label}: student architectures "
                                              "(ours; mean final accuracy over seeds)")
                status[art.id] = f"{sum(bool(v) for v in panels.values())} panels run"
                verdicts += student_claims(numbers)
            else:
                status[art.id] = "no run yet"
        elif art.id in ("fig2b", "fig3"):
            if art.id == "fig2b":
                panels, claims_ = ipc_panels(params, Path(results_root))
                title, xlabel, note = "OFedED's accuracy against images per class", "IPC", None
            else:
                panels, claims_ = dp_panels(params, Path(results_root))
                title, xlabel, note = "OFedED's accuracy with Gaussian noise", "Noise level σ", DP_NOTE
            if any(v is not None for v in panels.values()):
                written += curve_panels(panels, out / art.id, suptitle=f"{art.label}: {title} (ours; mean over "
                                        "seeds)", xlabel=xlabel, ylabel="Top-1 test accuracy (%)")
                status[art.id] = f"{sum(v is not None for v in panels.values())} panels run" + (
                    f". {note}" if note else "")
                verdicts += claims_
            else:
                status[art.id] = "no run yet"
        elif art.id in SCHEMATICS:
            status[art.id] = SCHEMATICS[art.id]
        else:
            status[art.id] = "not built yet (issue 17)"
    runs_df = run_table(params, Path(results_root))
    if runs_df is not None:
        written += write_table(runs_df, out / "runs", "Every server run: final and best test accuracy, OFedED's gate and "
                               "fine-tunes, the regime guards", "tab:ofeded-runs", notes=RUNS_NOTE + seeds_note)
    written.append(write_status(out, "OFedED", "papers/ofeded", arts, status, "Table 1", verdicts, metrics, summary))
    return written


RUNS_NOTE = ("Final = the last server epoch (the tables' number); best = the best epoch (what Co-Boosting's and DENSE's "
             "code report, best_acc1), with its epoch. Gate: candidate ensemble weights OFedED's guide kept of those "
             "proposed (Co-Boosting: every proposal is kept); fine-tunes: how often OFedED fine-tuned the ensemble on "
             "the distilled sets. Guards: a failed one is named (the run feeds no verdict). ")


def _num(v, fmt: str) -> str:
    return "—" if v is None else format(v, fmt)


def run_table(params: dict, results_root: Path) -> pd.DataFrame | None:
    """One row per server run that has a record (Table 1's and Table 3's columns, every dataset, split and seed)."""
    rows = {}
    for (ds, split), by_id in read_runs(results_root, params, _entries(params)).items():
        for e in _entries(params):
            for r in by_id.get(e["id"], []):
                ex = r.get("extras") or {}
                upd = ex.get("weight_updates") or {}
                bad = [k for k, g in (r.get("guards") or {}).items() if not g.get("passed", True)]
                rows[f"{DATASET_LABELS.get(ds, ds)}, {split}, s{r['seed']}: {e['id']}"] = {
                    "final (%)": f"{r['acc_final']:.2f}", "best (%)": _num(r.get("acc_best"), ".2f"),
                    "best epoch": str(r.get("best_epoch", "—")), "epochs": str(r.get("epochs", "—")),
                    "server s": _num(r.get("server_seconds"), ".0f"),
                    "gate kept / proposed": f"{upd['kept']} / {upd['proposed']}" if upd else "—",
                    "fine-tunes": str(ex["finetunes"]) if "finetunes" in ex else "—",
                    "guards": "failed: " + ", ".join(bad) if bad else "passed" if r.get("guards") else "—"}
    if not rows:
        return None
    df = pd.DataFrame.from_dict(rows, orient="index", dtype=object)
    df.index.name = "run: column"
    return df
