"""FedHydra's tables and figures from the runs of ``papers/fedhydra/dvc.yaml``, beside the published numbers.

The pipeline is a DVC project of its own in ``papers/fedhydra/``; paths here are relative to that folder.
A run is a folder ``results/<dataset>-<split>/`` (``split`` = ``dir<α>`` or ``2cc``) written by the pipeline's
partition, train, server and evaluate stages: ``runs/<method>[-<tag>].json`` (final and best accuracy, choices in
force, whether the data was a smoke stand-in, FedHydra's MS weights and a few synthetic images under ``extras``),
``live/<method>[-<tag>]/plots/metrics/test_acc.tsv`` (the accuracy curve dvclive logged during the run),
``partition/summary.json`` and ``clients.json``. Runs recorded before that layout keep ``metrics/*.json``,
``curves/*.csv`` and ``extras/*.json``, which are read the same way. A curve of the new layout starts at epoch 0 (the
model before server training); ``acc_best``/``best_epoch`` are over epochs >= 1. Extra seeds of a run (params
``spread``) are run folders of their own, ``results/<dataset>-<split>-s<seed>/``, laid out the same way.

:func:`render` writes ``reports/``: for every table of the paper ``<id>.tex`` + ``<id>.md`` (each cell
"ours / paper (Δ)", "—" where we did not run), for every result figure ``<id>.png`` + ``<id>.pdf`` (panels we did
not run say so), ``runs.md`` (every run: final and best accuracy) and ``README.md`` (each artifact, the command
that regenerates it, and a verdict for each claim of the paper's text that our runs can test). Our number in a
table cell is the FINAL-epoch accuracy of one run (seed in params); ``runs.md`` also gives the best epoch. Where
Table 1/2's run also ran with the seeds of ``spread.seeds``, the cell is ``mean ± std (n=k)`` over the seeds (sample
std, :mod:`osfl.reporting.spread`) and its Δ uses the mean. Each claim's verdict follows the rule of
:mod:`osfl.reporting.spread`: runs of the same seeds only, "holds" / "does not hold" only when the difference of the
means exceeds the spread (n >= 2 seeds: the larger sample std; one seed: the larger epoch-to-epoch swing over the
last half of the curves), else "within spread", and "not judged" (with the reason) for no common seed, one seed
without a curve, or degenerate inputs (clients or a server curve at chance, constant synthetic samples). The
variants of ``variants`` (FedHydra on the literal reading of Alg. 1, DENSE with bn = 0) are rows of their own in
Tables 1-2, below the paper's rows; the paper-profile table's rows name their profile and FedHydra's reading.
"""
from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .. import cpu_profile
from ..live import read_curve as read_live_curve
from ..reporting.figures import bubble_panels, curve_panels, grouped_bar_panels, heatmap, image_rows
from ..reporting.published import Artifact, load_artifacts, load_published_table, render_comparison
from ..reporting.runs import write_index
from ..reporting.spread import (
    DOES_NOT_HOLD,
    HOLDS,
    NOT_JUDGED,
    NOT_RUN,
    VERDICT_RULE,
    Side,
    Verdict,
    above_all,
    clients_at_chance,
    compare,
    constant_samples,
    count_verdicts,
    every,
    flat_at_chance,
    late_half,
    mean_std,
    seed_runs,
    seed_values,
    swing,
)

DATASETS = {"mnist": "MNIST", "fmnist": "FashionMNIST", "svhn": "SVHN", "cifar10": "CIFAR10"}
METHODS = {"fedavg": "FedAvg", "ot": "OT", "feddf": "FedDF", "dense": "DENSE", "coboost": "Co-Boosting",
           "fedhydra": "FedHydra (ours)"}
SHORT = {m: label.replace(" (ours)", "") for m, label in METHODS.items()}  # the paper's labels in later tables
NUM_CLASSES = {ds: 10 for ds in DATASETS}  # chance = 100 / classes (spread rule 3: degenerate inputs)
# variants run beside the defaults (params `variants`): result key -> (params key, Table 1/2 row, what it is)
VARIANTS = {
    "fedhydra-literal": ("fedhydra_literal", "FedHydra (literal Alg. 1)",
                         "FedHydra with reading = literal (Alg. 1 as written; run tag literal)"),
    "dense-bn0": ("dense_code", "DENSE (official code, bn = 0)",
                  "DENSE with bn = 0, as its official code runs (its BN hooks find no layer; run tag bn0)"),
}
# FedHydra's readings of Alg. 1 (src/osfl/methods/fedhydra.py READINGS), as the reports name them
READING_LABELS = {"authors": "authors (the released loop; its crop+flip views on colour images only)",
                  "literal": "literal (Alg. 1 as written)"}
# a FedHydra record without `choices.reading` was made before the readings existed, when literal was the only one
UNRECORDED_READING = "literal (Alg. 1 as written; not recorded by the run, made when it was the only reading)"
ALPHAS = ("0.5", "0.3", "0.1", "0.01")
ONE_SHOT = ("fedavg", "ot")  # no server epochs: horizontal lines in the curve figures
COMMAND = "cd papers/fedhydra && dvc repro"

# what a table or figure still needs before our pipeline can produce it
NOT_BUILT = {
    "figure08": "localcurve.datasets: [cifar10] (FedAvg and clients every 20 local epochs to E = 400)",
    "figure13": "timing.datasets: [cifar10] (five timed DENSE and FedHydra runs)",
}
# what a table needs that the params do not list (the stages exist; the datasets are chosen in params.yaml)
NEEDS = {"table03": "hetero.datasets: [cifar10]", "table09": "hetero.datasets: [svhn]",
         "table10": "hetero.datasets: [svhn, cifar10] with 2cc in hetero.splits",
         "table04": "ksweep.datasets: [svhn]", "table07": "ksweep.datasets: [cifar10]"}
# multi-round tables: (dataset, split) of each (Tables 5, 8, 11-18)
ROUND_TABLES = {"table05": ("cifar10", "dir0.1"), "table08": ("svhn", "dir0.1"), "table11": ("svhn", "dir0.5"),
                "table12": ("cifar10", "dir0.5"), "table13": ("svhn", "dir0.3"), "table14": ("cifar10", "dir0.3"),
                "table15": ("svhn", "dir0.01"), "table16": ("cifar10", "dir0.01"), "table17": ("svhn", "2cc"),
                "table18": ("cifar10", "2cc")}
for _t, (_d, _s) in ROUND_TABLES.items():
    NEEDS[_t] = f"multiround.datasets: [{_d}] with {_s} in multiround.splits"
HETERO_TABLES = {"table03": (("cifar10",), ALPHAS), "table09": (("svhn",), ALPHAS), "table10": (("svhn", "cifar10"), ())}
HETERO_METHODS = {m: SHORT[m] for m in ("feddf", "dense", "coboost", "fedhydra")}  # Tables 3, 9, 10 (data-free)


@dataclass
class Run:
    name: str
    dataset: str
    split: str
    root: str = ""
    metrics: dict = field(default_factory=dict)  # method[-tag] -> metrics json
    curves: dict = field(default_factory=dict)  # method[-tag] -> (epochs, accs)
    extras: dict = field(default_factory=dict)
    partition: dict | None = None
    clients: dict | None = None
    rounds: dict = field(default_factory=dict)  # method[-tag] -> {T: test accuracy after round T} (multi-round)
    rounds_stand_in: bool = False
    local_curve: dict | None = None  # Fig. 8: column -> values (epoch, fedavg, client_k)
    timing: dict = field(default_factory=dict)  # <method>-t<r> -> server manifest (seconds, runtime)

    def acc(self, key: str, which: str = "acc_final") -> float | None:
        m = self.metrics.get(key)
        return None if m is None else float(m[which])

    @property
    def stand_in(self) -> bool:
        return self.rounds_stand_in or any(m.get("stand_in_data") for m in self.metrics.values())


def _read_curve(path: Path) -> tuple[list[float], list[float]]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [float(r["epoch"]) for r in rows], [float(r["test_acc"]) for r in rows]


def _result_files(d: Path):
    """(key, kind, path) of every result file :func:`load_runs` reads in the run folder ``d``, in reading order.
    The key names the result as :func:`expected_results` does: ``<method>[-<tag>]`` for the evaluate triple
    (runs/ and live/, or metrics/, curves/, extras/), ``partition`` (partition/summary.json), ``clients`` (clients.json),
    ``local_curve`` (local_curve.csv), ``timing/<method>-t<r>`` and ``rounds/<method>``."""
    for f in sorted(d.glob("runs/*.json")):  # a run's record: its numbers and extras
        yield f.stem, "run", f
    for f in sorted(d.glob("live/*/plots/metrics/test_acc.tsv")):  # its curve, as dvclive logged it
        yield f.parents[2].name, "live", f
    for kind, pattern in (("metrics", "metrics/*.json"), ("curves", "curves/*.csv"), ("extras", "extras/*.json")):
        for f in sorted(d.glob(pattern)):  # the layout before runs/ and live/
            yield f.stem, kind, f
    for key, rel in (("partition", "partition/summary.json"), ("clients", "clients.json"),
                     ("local_curve", "local_curve.csv")):
        if (d / rel).exists():
            yield key, key, d / rel
    for kind in ("timing", "rounds"):
        for f in sorted((d / kind).glob("*.json")):
            yield f"{kind}/{f.stem}", kind, f


def _run_dirs(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).glob("*-*") if p.is_dir())


def load_runs(root: Path, keep: Callable[[str, str | None], bool] | None = None) -> dict[str, Run]:
    """Every run folder under ``root`` (``results``), keyed by ``<dataset>-<split>``. With ``keep``, only
    the results for which ``keep(run, key)`` is true (keys as in :func:`_result_files`), and only the run folders
    for which ``keep(run, None)`` is."""
    runs: dict[str, Run] = {}
    for d in _run_dirs(root):
        if keep is not None and not keep(d.name, None):
            continue
        dataset, _, split = d.name.partition("-")
        run = Run(d.name, dataset, split, str(d))
        rerun = {f.stem for f in d.glob("runs/*.json")}  # a result re-run in the new layout supersedes its old files
        for key, kind, f in _result_files(d):
            if keep is not None and not keep(d.name, key):
                continue
            if kind in ("metrics", "curves", "extras") and key in rerun:
                continue
            if kind == "run":
                rec = json.loads(f.read_text())
                run.extras[key] = rec.pop("extras", None) or {}
                run.metrics[key] = rec
            elif kind == "live":
                run.curves[key] = read_live_curve(f.parents[2])
            elif kind == "metrics":
                run.metrics[key] = json.loads(f.read_text())
            elif kind == "curves":
                run.curves[key] = _read_curve(f)
            elif kind == "extras":
                run.extras[key] = json.loads(f.read_text()).get("extras", {})
            elif kind == "partition":
                run.partition = json.loads(f.read_text())
            elif kind == "clients":
                run.clients = json.loads(f.read_text())
            elif kind == "local_curve":
                with open(f) as fh:
                    rows = list(csv.DictReader(fh))
                run.local_curve = {c: [float(r[c]) for r in rows] for c in rows[0]} if rows else None
            elif kind == "timing":
                run.timing[f.stem] = json.loads(f.read_text())
            elif kind == "rounds":
                rec = json.loads(f.read_text())
                run.rounds[f.stem] = {int(r["round"]): float(r["test_acc"]) for r in rec["rounds"]}
                run.rounds_stand_in = run.rounds_stand_in or bool(rec.get("stand_in_data"))
        runs[d.name] = run
    return runs


def not_current(root: Path, keep: Callable[[str, str | None], bool]) -> list[str]:
    """``<root name>/<run>/<key>`` of every result under ``root`` that ``keep`` (see :func:`load_runs`) leaves out."""
    out: list[str] = []
    for d in _run_dirs(root):
        run_kept = keep(d.name, None)
        for key in dict.fromkeys(k for k, _, _ in _result_files(d)):
            if not (run_kept and keep(d.name, key)):
                out.append(f"{Path(root).name}/{d.name}/{key}")
    return out


# ---------------------------------------------------------------------------------------------------------
# which results the current params produce (papers/fedhydra/dvc.yaml's matrices, mirrored)

TIMED_METHODS = ("dense", "fedhydra")  # stage `timing`'s method axis (written in dvc.yaml, not a param)


def _interp(v) -> str:
    """A value as DVC writes it into ``${...}`` (``true``/``false`` for booleans, else ``str``)."""
    return str(v).lower() if isinstance(v, bool) else str(v)


def _items(value) -> list:
    """The items a DVC ``matrix`` axis / ``foreach`` iterates: a list as is, a dict's values, nothing for None."""
    if value is None:
        return []
    return list(value.values()) if isinstance(value, dict) else list(value)


def expected_results(params: dict) -> dict[str, set[str]]:
    """Run folder under ``results/`` -> the keys of the results (:func:`_result_files`) that the stages of
    ``papers/fedhydra/dvc.yaml`` produce there for ``params`` (each matrix of dvc.yaml mirrored here; the
    structure is checked against DVC's own resolution by tests/test_fedhydra_current.py)."""
    exp: dict[str, set[str]] = {}

    def add(run: str, *keys: str) -> None:
        exp.setdefault(run, set()).update(keys)

    def sub(key: str) -> dict:
        return params.get(key) or {}

    datasets = [_interp(d) for d in _items(params.get("datasets"))]
    methods = [_interp(m) for m in _items(params.get("methods"))]
    variants, spread = sub("variants"), sub("spread")
    for ds in datasets:
        for s in map(_interp, _items(params.get("splits"))):
            # partition, train, evaluate (x methods) and ae
            add(f"{ds}-{s}", "partition", "clients", "fedhydra-ae", *methods)
        for lam in _items(params.get("lambdas")):  # Table 6 rows, always at Dir(0.5)
            add(f"{ds}-dir0.5", f"fedhydra-{_interp(lam['tag'])}")
        for key, (param, _, _) in VARIANTS.items():  # stages literal and dense_code
            for s in map(_interp, _items(variants.get(param))):
                add(f"{ds}-{s}", key)
        for s in map(_interp, _items(spread.get("splits"))):  # stages spread_clients and spread_server
            for seed in map(_interp, _items(spread.get("seeds"))):
                add(f"{ds}-{s}-s{seed}", "partition", "clients", *methods)
    h = sub("hetero")
    for ds in map(_interp, _items(h.get("datasets"))):
        for s in map(_interp, _items(h.get("splits"))):
            add(f"{ds}-{s}-hetero", "clients", *map(_interp, _items(h.get("methods"))))
    k = sub("ksweep")
    for ds in map(_interp, _items(k.get("datasets"))):
        for n in map(_interp, _items(k.get("clients"))):
            add(f"{ds}-dir0.5-k{n}", "partition", "clients", *map(_interp, _items(k.get("methods"))))
    r = sub("multiround")
    for ds in map(_interp, _items(r.get("datasets"))):
        for s in map(_interp, _items(r.get("splits"))):
            for m in map(_interp, _items(r.get("methods"))):
                add(f"{ds}-{s}", f"rounds/{m}")
    lc = sub("localcurve")
    for ds in map(_interp, _items(lc.get("datasets"))):
        add(f"{ds}-{_interp(lc.get('split'))}", "local_curve")
    t = sub("timing")
    for ds in map(_interp, _items(t.get("datasets"))):
        for m in TIMED_METHODS:
            for i in map(_interp, _items(t.get("runs"))):
                add(f"{ds}-dir0.5", f"timing/{m}-t{i}")
    return exp


def expected_paper_runs(params: dict) -> set[str]:
    """Run folders under ``results/paper/`` that stage ``paper_column`` produces (one per entry of
    ``paper_columns``; the whole folder is that stage's output)."""
    return {f"{_interp(c['dataset'])}-{_interp(c['split'])}" for c in _items(params.get("paper_columns"))}


def _lam_label(l1: float, l2: float) -> str:
    return f"{float(l1):.1f}, {float(l2):.1f}"


# ---------------------------------------------------------------------------------------------------------
# tables


def table_columns(art_id: str) -> list[tuple[str, str]]:
    """(column label, run name) of Table 1 (``table01``, the Dirichlet splits) or Table 2 (``table02``, 2c/c)."""
    if art_id == "table01":
        return [(f"{label} alpha={a}", f"{ds}-dir{a}") for ds, label in DATASETS.items() for a in ALPHAS]
    if art_id == "table02":
        return [(label, f"{ds}-2cc") for ds, label in DATASETS.items()]
    return []


def _config(key: str, rec: dict | None):
    """What the seeds of one number must share: FedHydra's reading (none recorded: literal, the only one then) and
    DENSE's bn (none recorded: 1, its default)."""
    choices = (rec or {}).get("choices") or {}
    base = key.split("-")[0]
    if base == "fedhydra":
        return choices.get("reading", "literal")
    return float(choices.get("bn", 1.0)) if base == "dense" else None


def over_seeds(runs: dict[str, Run], name: str, key: str, seeds=(), base_seed=0, which: str = "acc_final",
               left_out: list[str] | None = None) -> list[float]:
    """Result ``key`` (its ``which``) of run ``name`` over the seeds that ran (``name`` = seed ``base_seed`` and
    ``<name>-s<k>`` for ``seeds``: :func:`osfl.reporting.spread.seed_values`), counting only the seeds of the first
    one's configuration (:func:`_config`); ``<run>/<key>`` of each seed run left out for another goes to
    ``left_out``."""
    lo: list = []
    vals = seed_values(runs, name, lambda r: r.acc(key, which), seeds, base_seed,
                       same=lambda r: _config(key, r.metrics.get(key)), left_out=lo)
    if left_out is not None:
        left_out += [f"{name if k == base_seed else f'{name}-s{k}'}/{key}" for k in lo]
    return vals


def _seed_cell(runs: dict[str, Run], name: str, key: str, seeds=(), base_seed=0, which: str = "acc_final"):
    """Our number for result ``key`` of run ``name``: the one value (one seed ran), the list of values over the
    seeds (more than one ran: :func:`over_seeds`), or None (none ran)."""
    vals = over_seeds(runs, name, key, seeds, base_seed, which)
    return None if not vals else (vals[0] if len(vals) == 1 else vals)


def table_cells(art: Artifact, runs: dict[str, Run], lambdas: list[dict], seeds=(),
                base_seed=0) -> dict[tuple[str, str], float | list[float]]:
    """Our final accuracies keyed by (row, column) of the published table ``art`` (empty: nothing run). In Tables 1
    and 2 a cell whose run also ran with other seeds (``<run>-s<seed>`` for ``seeds``; the run itself is seed
    ``base_seed``) holds the list of the values over seeds, and the variants (:data:`VARIANTS`) have rows of their
    own."""
    ours: dict[tuple[str, str], float | list[float]] = {}
    if art.id in ("table01", "table02"):
        rows = {**METHODS, **{key: row for key, (_, row, _) in VARIANTS.items()}}
        for col, name in table_columns(art.id):
            for m, row in rows.items():
                v = _seed_cell(runs, name, m, seeds, base_seed)
                if v is not None:
                    ours[(row, col)] = v
    elif art.id in HETERO_TABLES:
        datasets, alphas = HETERO_TABLES[art.id]
        for ds in datasets:
            for a in alphas or (None,):
                run = runs.get(f"{ds}-dir{a}-hetero" if a else f"{ds}-2cc-hetero")
                if run is None:
                    continue
                row = f"alpha={a}" if a else DATASETS[ds]
                for c in (run.clients or {}).get("per_client", [])[:5]:
                    ours[(row, f"Client M{c['client'] + 1}")] = c["local_test_acc"]
                for m, label in HETERO_METHODS.items():
                    v = run.acc(m)
                    if v is not None:
                        ours[(row, f"Server(ResNet18) {label}")] = v
    elif art.id in ("table04", "table07"):
        ds = "svhn" if art.id == "table04" else "cifar10"
        for name, run in runs.items():
            if name == f"{ds}-dir0.5":
                k = 5
            elif name.startswith(f"{ds}-dir0.5-k"):
                k = int(name.rsplit("-k", 1)[1])
            else:
                continue
            for m, label in SHORT.items():
                v = run.acc(m)
                if v is not None:
                    ours[(str(k), label)] = v
    elif art.id in ROUND_TABLES:
        ds, split = ROUND_TABLES[art.id]
        run = runs.get(f"{ds}-{split}")
        for m, label in SHORT.items():
            for t, v in (run.rounds.get(m, {}) if run else {}).items():
                ours[(f"T={t}", label)] = v
    elif art.id == "table06":
        for ds, label in DATASETS.items():
            run = runs.get(f"{ds}-dir0.5")
            if run is None:
                continue
            variants = [(1.0, 1.0, "fedhydra")] + [(lam["l1"], lam["l2"], f"fedhydra-{lam['tag']}") for lam in lambdas]
            for l1, l2, key in variants:
                v = run.acc(key)
                if v is not None:
                    ours[(_lam_label(l1, l2), label)] = v
    return ours


def _note(runs_used: list[Run], described: str, seeds_text: str = "") -> str:
    """A Table 1/2-style caption: what our numbers are, then ``described`` (the profile, its reductions and guards,
    the inputs and the precision: :func:`osfl.cpu_profile.describe`)."""
    parts = ["Ours: final-epoch accuracy of one run." if not seeds_text else
             f"Ours: final-epoch accuracy, {seeds_text}.", described]
    stand_in = sorted({r.dataset for r in runs_used if r.stand_in})
    if stand_in:
        parts.append("STAND-IN DATA (generated arrays, not the dataset) for: " + ", ".join(stand_in) + ".")
    return " ".join(parts)


def _seeds_text(art_id: str, runs: dict[str, Run], seeds=(), base_seed=0) -> str:
    """Which columns of Table 1/2 are means over seeds, and over which (empty: one run in every column)."""
    groups: dict[tuple, list[str]] = {}
    left_out: list[str] = []
    for col, name in table_columns(art_id):
        found = tuple(seed_runs(runs, name, seeds, base_seed))
        if len(found) > 1:
            groups.setdefault(found, []).append(col)
            for key in (*METHODS, *VARIANTS):
                over_seeds(runs, name, key, seeds, base_seed, left_out=left_out)
    if not groups:
        return ""
    over = "; ".join(f"{len(found)} seeds ({', '.join(map(str, found))}) in {', '.join(cols)}"
                     for found, cols in groups.items())
    text = (f"mean ± sample std (ddof = 1) over {over} (seed {base_seed} is the column's run, seed k its run with "
            f"the suffix -sk; Δ from the mean); one run (seed {base_seed}) in the other columns")
    if left_out:
        text += ("; left out of the means, for another FedHydra reading or DENSE bn than the cell's first seed: "
                 + ", ".join(left_out))
    return text


def _reading(rec: dict) -> str:
    """The reading of Alg. 1 that produced a FedHydra record (``choices.reading``; none recorded: literal)."""
    r = (rec.get("choices") or {}).get("reading")
    return UNRECORDED_READING if r is None else READING_LABELS.get(r, str(r))


def _readings_text(found: list[tuple[str, dict]]) -> str:
    """``"<reading>"`` if every (where, record) pair has the same reading, else ``"<r1> in a, b; <r2> in c"``."""
    groups: dict[str, list[str]] = {}
    for where, rec in found:
        groups.setdefault(_reading(rec), []).append(where)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{r} in {', '.join(dict.fromkeys(w))}" for r, w in groups.items())


def _reading_note(art_id: str, runs: dict[str, Run], lambdas: list[dict], seeds=(), base_seed=0) -> str:
    """Which reading produced the FedHydra numbers of Table 1, 2 (the main row) or 6 (every row)."""
    found: list[tuple[str, dict]] = []
    if art_id in ("table01", "table02"):
        for col, name in table_columns(art_id):  # a cell's seeds share its first seed's reading (over_seeds)
            recs = [r.metrics["fedhydra"] for r in seed_runs(runs, name, seeds, base_seed).values()
                    if "fedhydra" in r.metrics]
            found += [(col, recs[0])] if recs else []
        who = f"{METHODS['fedhydra']} row"
    elif art_id == "table06":
        for ds, label in DATASETS.items():
            run = runs.get(f"{ds}-dir0.5")
            keys = ["fedhydra"] + [f"fedhydra-{lam['tag']}" for lam in lambdas]
            found += [(label, run.metrics[k]) for k in keys if run and k in run.metrics]
        who = "FedHydra rows"
    return f"{who}: reading = {_readings_text(found)}." if found else ""


def _ot_note(art_id: str, runs: dict[str, Run]) -> str:
    """Table 1/2: in how many OT runs the alignment moved no hidden unit (``extras.units_moved_share`` all 0: every
    client kept the shared initial model's neuron order, so OT fusion is FedAvg's average)."""
    if art_id not in ("table01", "table02"):
        return ""
    shares = [(r.extras.get("ot") or {}).get("units_moved_share") for r in runs.values() if "ot" in r.metrics]
    recorded = [s for s in shares if s is not None]
    if not recorded:
        return ""
    still = sum(1 for s in recorded if not any(s.values()))
    return (f"OT: in {still} of {len(recorded)} runs that record it the alignment moved no hidden unit (every client "
            "kept the shared initial model's neuron order), so OT's model there is FedAvg's average.")


def _variants_note(rows: list[str]) -> str:
    what = [f"{row} = {desc}" for _, row, desc in VARIANTS.values() if row in rows]
    return ("Rows below the paper's are variants of ours (no paper number): " + "; ".join(what) + ".") if what else ""


def _variant_rows(art_id: str, params: dict, ours: dict) -> list[str]:
    """Table 1/2 rows of the variants that the params run on one of the table's splits, or that have a number."""
    splits = {name.split("-", 1)[1] for _, name in table_columns(art_id)}
    variants = params.get("variants") or {}
    return [row for _, (param, row, _) in VARIANTS.items()
            if splits & {_interp(s) for s in _items(variants.get(param))} or any(r == row for r, _ in ours)]


# ---------------------------------------------------------------------------------------------------------
# figures


def _curve_panel(run: Run | None, tag_filter=None):
    if run is None or not run.metrics:
        return None
    series, hlines = {}, {}
    for m, label in METHODS.items():
        if m in ONE_SHOT:
            v = run.acc(m)
            if v is not None:
                hlines[label] = v
        elif m in run.curves:
            series[label] = run.curves[m]
    return (series, hlines) if series or hlines else None


def figure_curves(ds: str, runs, out: Path, title: str) -> list[Path]:
    panels = {f"{DATASETS[ds]}, α = {a}": _curve_panel(runs.get(f"{ds}-dir{a}")) for a in ALPHAS}
    return curve_panels(panels, out, suptitle=title, missing="not run")


def figure_2cc(runs, out: Path) -> list[Path]:
    panels = {f"{label}, 2c/c": _curve_panel(runs.get(f"{ds}-2cc")) for ds, label in DATASETS.items()}
    return curve_panels(panels, out, suptitle="Test accuracy vs distillation epoch, 2c/c (Fig. 6)")


def figure_ae_sa(runs, splits: list[str], out: Path) -> list[Path]:
    panels = {}
    for ds, label in DATASETS.items():
        groups = {}
        for s in splits:
            run = runs.get(f"{ds}-{s}")
            if run is None:
                continue
            groups[_split_label(s)] = {"AE": run.acc("fedhydra-ae"), "SA": run.acc("fedhydra")}
        panels[label] = groups or None
    return grouped_bar_panels(panels, out, suptitle="FedHydra with AE vs SA as teacher (Fig. 7; final accuracy)")


def _split_label(split: str) -> str:
    return "2c/c" if split == "2cc" else "α=" + split[3:]


def _first_run(runs, datasets_order, split):
    for ds in datasets_order:
        if f"{ds}-{split}" in runs:
            return runs[f"{ds}-{split}"]
    return None


def figure_ms(runs, out: Path) -> tuple[list[Path], str, np.ndarray | None]:
    """Fig. 5: (a) 2c/c client x class counts, (b) MS weights Ū_r; MNIST in the paper, else the first run."""
    run = _first_run(runs, DATASETS, "2cc")
    written: list[Path] = []
    if run is None or "fedhydra" not in run.extras or "U_r" not in run.extras["fedhydra"]:
        written += image_rows({"not run": []}, out, title="Fig. 5: no 2c/c FedHydra run")
        return written, "", None
    U_r = np.asarray(run.extras["fedhydra"]["U_r"])  # (c, m)
    counts = np.asarray(run.partition["class_counts"]) if run.partition else None
    label = DATASETS.get(run.dataset, run.dataset)
    written += heatmap(U_r, out, xlabels=[f"client {k + 1}" for k in range(U_r.shape[1])],
                       ylabels=[str(c) for c in range(U_r.shape[0])], xlabel="client model",
                       ylabel="class", title=f"Fig. 5b: MS weights Ū_r, {label} 2c/c")
    if counts is not None:
        written += bubble_panels({f"{label}, 2c/c": counts}, out.with_name(out.name + "a"),
                                 suptitle="Fig. 5a: client data by class")
    return written, label, U_r


def figure_partitions(runs, out: Path) -> list[Path]:
    """Fig. 9: client x class bubble plots of the four Dirichlet splits (MNIST in the paper, else the first
    dataset run)."""
    ds = next((d for d in DATASETS if any(f"{d}-dir{a}" in runs for a in ALPHAS)), None)
    panels = {}
    for a in ALPHAS:
        run = runs.get(f"{ds}-dir{a}") if ds else None
        panels[f"α = {a}"] = run.partition["class_counts"] if run and run.partition else None
    label = DATASETS.get(ds, ds) if ds else "no dataset run"
    return bubble_panels(panels, out, suptitle=f"Fig. 9: client data by class, {label}, Dir(α), 5 clients")


def figure_synthetic(runs, prepared_root: Path, out: Path) -> list[Path]:
    """Fig. 12: real test images and FedHydra's synthetic images (last batch of the α=0.5 run)."""
    rows = {}
    for ds in ("fmnist", "cifar10"):
        label = DATASETS[ds]
        real = []
        x_path = Path(prepared_root) / ds / "x_test.npy"
        if x_path.exists():
            x = np.load(x_path, mmap_mode="r")
            y = np.load(Path(prepared_root) / ds / "y_test.npy")
            real = [np.asarray(x[np.flatnonzero(y == c)[0]]) for c in range(10) if (y == c).any()]
        run = runs.get(f"{ds}-dir0.5")
        synth = []
        if run and "synthetic_samples" in run.extras.get("fedhydra", {}):
            s = run.extras["fedhydra"]["synthetic_samples"]
            seen = set()
            for lab, img in zip(s["labels"], s["images_u8"]):
                if lab not in seen:
                    seen.add(lab)
                    synth.append(np.asarray(img, dtype=np.uint8))
        tag = " (stand-in)" if run and run.stand_in else ""
        rows[f"real {label}{tag}"] = real
        rows[f"synthetic {label}{tag}"] = synth
    return image_rows(rows, out, title="Fig. 12: real (rows 1, 3) vs FedHydra synthetic (rows 2, 4), one per class")


def figure_local_curve(runs, out: Path) -> list[Path]:
    """Fig. 8: (a) FedAvg and each client vs local epochs E; (b) the clients with the methods' accuracies as
    horizontal lines (the one-shot runs of the same split, trained for E = 200). The paper: CIFAR10 Dir(0.1)."""
    run = next((r for r in sorted(runs.values(), key=lambda r: (r.split != "dir0.1", r.dataset != "cifar10"))
                if r.local_curve), None)
    if run is None:
        return image_rows({"not run": []}, out, title="Fig. 8: not run (" + NOT_BUILT["figure08"] + ")")
    lc = run.local_curve
    epochs = lc["epoch"]
    clients = {f"client {c.split('_')[1]}": (epochs, lc[c]) for c in lc if c.startswith("client_")}
    hlines = {label: run.acc(m) for m, label in METHODS.items() if run.acc(m) is not None}
    label = DATASETS.get(run.dataset, run.dataset) + (" (STAND-IN DATA)" if run.stand_in else "")
    panels = {f"(a) FedAvg and clients, {label} {_split_label(run.split)}": ({"FedAvg": (epochs, lc["fedavg"]), **clients}, {}),
              "(b) clients vs the methods (E = 200 runs)": (clients, hlines)}
    return curve_panels(panels, out, suptitle="Fig. 8: test accuracy vs local epochs E", xlabel="local epochs E")


def _device_name(manifest: dict) -> str:
    """The device a stage ran on, from its manifest's ``runtime`` block: the GPU's name, else the CPU's."""
    rt = manifest.get("runtime") or {}
    return str(rt.get("gpu") or rt.get("cpu") or rt.get("device") or "?")


def figure_timing(runs, out: Path) -> list[Path]:
    """Fig. 13: DENSE and FedHydra server seconds over the timed runs (stage ``timing``), one panel per dataset,
    the device in the title. Without timed runs: the server seconds of the main runs, marked as such."""
    panels, devices = {}, set()
    for name, run in runs.items():
        if not run.timing:
            continue
        groups: dict = {}
        for key, man in sorted(run.timing.items(), key=lambda kv: int(kv[0].rsplit("-t", 1)[1])):
            method, r = key.rsplit("-t", 1)
            groups.setdefault(f"R={r}", {})[SHORT.get(method, method)] = man.get("seconds")
            devices.add(_device_name(man))
        panels[f"{DATASETS.get(run.dataset, run.dataset)}{' (stand-in)' if run.stand_in else ''}"] = groups
    if panels:
        return grouped_bar_panels(panels, out, ylabel="seconds",
                                  suptitle="Fig. 13: DENSE vs FedHydra server time, five runs; device: "
                                           + ", ".join(sorted(devices)))
    groups = {}
    for name, run in runs.items():
        if "dense" in run.metrics and "fedhydra" in run.metrics:
            groups[name] = {"DENSE": run.metrics["dense"].get("server_seconds"),
                            "FedHydra": run.metrics["fedhydra"].get("server_seconds")}
    return grouped_bar_panels({"server seconds of the main runs (no timed runs: timing.datasets is empty)":
                               groups or None}, out, ylabel="seconds",
                              suptitle="Fig. 13 (partial): DENSE vs FedHydra server time")


# ---------------------------------------------------------------------------------------------------------
# claims


def _degenerate(run: Run, key: str | None) -> str | None:
    """Why result ``key`` of ``run`` (None: the run's clients alone) cannot be judged, or None (spread rule 3,
    :mod:`osfl.reporting.spread`): its clients at chance or all equal (``clients.json``), its server curve flat at
    chance, or its recorded synthetic samples all the same image."""
    classes = NUM_CLASSES.get(run.dataset, 10)
    reasons = [clients_at_chance(run.clients, classes), _failed_guards("clients", run.clients)]
    if key is not None:
        reasons.append(_failed_guards("server", run.metrics.get(key)))
        curve = run.curves.get(key)
        reasons.append(flat_at_chance(curve[1], classes) if curve else None)
        samples = (run.extras.get(key) or {}).get("synthetic_samples") or {}
        reasons.append(constant_samples(samples["images_u8"]) if samples.get("images_u8") else None)
    return "; ".join(r for r in reasons if r) or None


def _failed_guards(who: str, record: dict | None) -> str | None:
    """``"<who> failed the regime guard <name> (value < floor)"`` for each guard ``record`` failed, or None
    (:mod:`osfl.cpu_profile`: a run that fails one feeds no verdict)."""
    failed = [f"{name} ({g['value']:.2f} < {g['floor']:.2f})"
              for name, g in ((record or {}).get("guards") or {}).items() if not g.get("passed", True)]
    return f"{who} failed the regime guard {', '.join(failed)}" if failed else None


def _swing(accs) -> float | None:
    """The epoch-to-epoch swing of a curve over its last half (:func:`osfl.reporting.spread.swing`)."""
    return swing(late_half(accs)) if accs else None


def _side(runs: dict[str, Run], name: str, key: str, seeds=(), base_seed=0, label: str | None = None,
          value: Callable[[Run], float | None] | None = None) -> Side:
    """Result ``key`` of run ``name`` as one side of a comparison: seed -> ``value(run)`` (default its final
    accuracy) over the seeds that ran, counting only the first one's configuration (as :func:`over_seeds`), with
    each seed's swing (the last half of its curve) and degenerate reason (:func:`_degenerate`)."""
    get = value or (lambda r: r.acc(key))
    values, swings, bad = {}, {}, {}
    ref = None
    for seed, run in seed_runs(runs, name, seeds, base_seed).items():
        v = get(run)
        if v is None:
            continue
        cfg = _config(key, run.metrics.get(key))
        if values and cfg != ref:
            continue
        ref = cfg if not values else ref
        values[seed] = float(v)
        swings[seed] = _swing(run.curves[key][1]) if key in run.curves else None
        bad[seed] = _degenerate(run, key)
    return Side(label or SHORT.get(key, key), values, swings, bad)


def _with_lead(v: Verdict, lead: str) -> Verdict:
    return replace(v, evidence=f"{lead}; {v.evidence}" if v.evidence and v.evidence != "-" else lead)


def claims(runs: dict[str, Run], splits: list[str], U_r, ms_label: str, lambdas: list[dict], seeds=(),
           base_seed=0) -> list[dict]:
    """Each testable claim of the paper's text with our verdict (:class:`osfl.reporting.spread.Verdict`: holds /
    does not hold / within spread / not judged / not run), as claims.json entries.

    Every comparison takes each side over the seeds that ran (the run ``<ds>-<split>`` and ``<ds>-<split>-s<k>`` for
    ``seeds``) and uses only the seeds both sides have; it decides only when the difference of the means exceeds the
    spread (n >= 2: the larger sample std; one seed: the larger epoch-to-epoch swing over the last half of the two
    curves), and runs with degenerate inputs are not judged (:mod:`osfl.reporting.spread`)."""
    out = []

    def add(artifact, claim, v: Verdict):
        out.append(v.record(artifact=artifact, claim=claim))

    def side(name: str, key: str, label: str | None = None, value=None) -> Side:
        return _side(runs, name, key, seeds, base_seed, label, value)

    def reading(name: str, key: str) -> str:  # which reading of Alg. 1 produced a FedHydra result (its label)
        return _reading(runs[name].metrics[key])

    def method_sides(name: str) -> dict[str, Side]:
        return {m: sd for m in METHODS if (sd := side(name, m)).values}

    for art, split_list, claim in (("table01", [f"dir{a}" for a in ALPHAS],
                                    "FedHydra has the best accuracy in every column (§4.2.1)"),
                                   ("table02", ["2cc"], "FedHydra has the best accuracy on every dataset (§4.2.2)")):
        parts = []
        for ds in DATASETS:
            for s in split_list:
                v = method_sides(f"{ds}-{s}")
                if "fedhydra" in v:
                    parts.append((f"{ds} {_split_label(s)}",
                                  above_all(v["fedhydra"], [v[m] for m in v if m != "fedhydra"])))
        add(art, claim, _with_lead(every(parts), f"{len(parts)} column(s) run"))

    parts = []
    for ds in DATASETS:
        v = method_sides(f"{ds}-2cc")
        if "ot" in v and len(v) >= 2:
            parts.append((ds, above_all(v["ot"], [v[m] for m in v if m != "ot"], below=True)))
    add("table02", "OT performs the worst across all datasets (§4.2.2; already false in the paper's own table)",
        every(parts))

    parts = []
    for ds in DATASETS:
        for s in splits:
            name = f"{ds}-{s}"
            sa, ae = side(name, "fedhydra", "SA"), side(name, "fedhydra-ae", "AE")
            if not (sa.values and ae.values):
                continue
            if reading(name, "fedhydra") != reading(name, "fedhydra-ae"):
                parts.append((f"{ds} {_split_label(s)}",
                              Verdict(NOT_RUN, "not compared, SA and AE ran on different readings")))
            else:
                parts.append((f"{ds} {_split_label(s)}", compare(sa, ae)))
    compared = [v for _, v in parts if v.verdict != NOT_RUN]
    add("figure07", "SA consistently outperforms AE (§4.2.2)",
        _with_lead(every(parts), f"SA better beyond the spread in {sum(v.verdict == HOLDS for v in compared)}/"
                                 f"{len(compared)}"))

    ms_claim = "each client model has MS weight near 1 on its own two classes (§4.2.2)"
    ms_run = _first_run(runs, DATASETS, "2cc")
    if U_r is None:
        add("figure05", ms_claim, Verdict(NOT_RUN, "-"))
    else:
        owner = np.asarray(U_r).argmax(1)
        expected = np.arange(U_r.shape[0]) // 2
        ok = bool((owner == expected).all()) and float(np.min(np.max(U_r, 1))) > 0.5
        evidence = (f"{ms_label}: argmax client per class {(owner + 1).tolist()}, weights on own classes "
                    f"{[round(float(U_r[c, expected[c]]), 4) for c in range(U_r.shape[0])]} (paper: 0.9594, 0.9797 "
                    "for client 1)")
        bad = _degenerate(ms_run, "fedhydra") if ms_run is not None else None
        add("figure05", ms_claim, Verdict(NOT_JUDGED, evidence, reason=bad) if bad else
            Verdict(HOLDS if ok else DOES_NOT_HOLD, evidence))

    parts, apart = [], []
    for ds in DATASETS:
        name = f"{ds}-dir0.5"
        fh = side(name, "fedhydra", "(1,1)")
        if not fh.values:
            continue
        others = {lam["tag"]: side(name, f"fedhydra-{lam['tag']}", f"({float(lam['l1']):g},{float(lam['l2']):g})")
                  for lam in lambdas}
        others = {k: v for k, v in others.items() if v.values}
        base = reading(name, "fedhydra")
        other_reading = {k: reading(name, f"fedhydra-{k}") for k in others}
        if any(r != base for r in other_reading.values()):  # a λ row of another reading is not comparable
            apart.append(f"{ds}: " + ", ".join(sorted(k for k, r in other_reading.items() if r != base))
                         + f" ran on another reading than (1,1) ({base.split(' (')[0]})")
            others = {k: v for k, v in others.items() if other_reading[k] == base}
        if others:
            parts.append((ds, above_all(fh, list(others.values()))))
    v = every(parts)
    if apart:
        v = replace(v, evidence="; ".join([v.evidence] * (v.evidence != "-") + [f"not compared: {a}" for a in apart]))
    add("table06", "(λ1, λ2) = (1, 1) gives the best accuracy (§4.2.5)", v)

    for ds, fig in (("fmnist", "figure03"), ("cifar10", "figure04"), ("mnist", "figure10"), ("svhn", "figure11")):
        parts = []
        for a in ALPHAS:
            name = f"{ds}-dir{a}"
            best = side(name, "fedhydra", "FedHydra best", value=lambda r: r.acc("fedhydra", "acc_best"))
            if not best.values:
                continue
            epochs = [str(r.metrics["fedhydra"]["best_epoch"])
                      for k, r in seed_runs(runs, name, seeds, base_seed).items() if k in best.values]
            parts.append((f"α={a} (best epoch {', '.join(epochs)})", compare(best, side(name, "fedhydra", "final"))))
        add(fig, "all models collapse late in distillation (V000 §4.2.1 on Fig. 3; FedHydra peaks then drops)",
            every(parts))
    return out


# ---------------------------------------------------------------------------------------------------------


def _same_reading(quick: Run | None, key: str, rec: dict) -> float:
    """The quick-profile final accuracy of result ``key`` run with the same configuration as ``rec`` (FedHydra: its
    reading, where plain FedHydra's literal reading is the quick run's ``fedhydra-literal``; DENSE: its bn); NaN
    where the quick runs have none."""
    if quick is None:
        return float("nan")
    for q in [key] + (["fedhydra-literal"] if key == "fedhydra" else []):
        if q in quick.metrics and _config(q, quick.metrics[q]) == _config(key, rec):
            return quick.acc(q)
    return float("nan")


def paper_profile_table(paper_runs: dict[str, Run], quick_runs: dict[str, Run], arts, out_stem: Path,
                        quick_profile: str = "quick") -> list[Path]:
    """Table 1 column(s) run at the PAPER profile beside the quick-profile run of the same configuration and the
    paper's number, plus the FedHydra variants run there (one SPEC choice changed each), with the device and seconds
    of each server. Every row label names its profile and, for FedHydra, the reading of Alg. 1 that produced it."""
    import pandas as pd

    from ..reporting.tables import write_table

    table1 = load_published_table(next(a for a in arts if a.id == "table01"))
    quick_col = f"{quick_profile} profile final (same reading)"
    rows, devices = [], set()
    for name, run in paper_runs.items():
        col = f"{DATASETS.get(run.dataset, run.dataset)} alpha={run.split[3:]}"
        dev = {}
        if (Path(run.root) / "device.json").exists():
            dev = json.loads((Path(run.root) / "device.json").read_text())
            devices |= {_device_name(v) for v in [dev.get("train", {})] + list(dev.get("servers", {}).values())}
        quick = quick_runs.get(name)
        for key in sorted(run.metrics, key=lambda k: (list(METHODS).index(k.split("-")[0]), k)):
            m = run.metrics[key]
            base = key.split("-")[0]
            label = SHORT[base] + (f" [{key.split('-', 1)[1]}]" if "-" in key else "")
            label += f" ({_reading_short(m)}; paper profile)" if base == "fedhydra" else " (paper profile)"
            paper = table1.at[METHODS[base], col] if key == base and col in table1.columns else float("nan")
            rows.append({"run": name, "method": label, "paper profile final": m["acc_final"],
                         "paper profile best": m["acc_best"], quick_col: _same_reading(quick, key, m),
                         "paper (Table 1)": paper,
                         "server s": dev.get("servers", {}).get(key, {}).get("seconds", float("nan"))})
    df = pd.DataFrame(rows).set_index(["run", "method"])
    caption = ("Table 1 column(s) at the paper profile (the paper's hyper-parameters unchanged), beside the "
               f"{quick_profile} profile and the paper. Each row label names the profile of its paper-profile numbers "
               "and, for FedHydra, the reading of Alg. 1 that produced them (`choices.reading` of the run record; "
               "unrecorded = made before the readings existed, when literal was the only one); its "
               f"{quick_profile}-profile number is the {quick_profile} run of the same method, variant and reading "
               "(plain FedHydra on the literal reading: the run tagged literal), — where none ran. Rows in brackets "
               "are variants with one choice changed: literal = FedHydra's "
               "literal reading (Alg. 1 as written), bn0 = DENSE as its official code runs, ae = averaging "
               "teacher (Fig. 7), saxc = SA logits x c (AMBIG-6), reset-epoch = generator re-initialised every "
               "epoch (AMBIG-5), pool = DENSE-style pool distillation (AMBIG-4), admask = disagreement mask "
               "(AMBIG-9), l1-0 = lambda2 = 0. Device: " + ", ".join(sorted(devices)) + "; server seconds were "
               "measured with several runs sharing the GPU (gpu_slot.sh), so they are not a timing comparison.")
    return write_table(df, out_stem, caption, "tab:fedhydra-paper-profile", precision=2)


def render(params: dict, results_root: Path, prepared_root: Path, out: Path,
           published_root: str = "published", paper_results_root: Path | None = None,
           summary: Path | None = None) -> list[Path]:
    """Every table, figure, runs.md, README.md and claims.json under ``out``; with ``summary``, the pipeline's
    summary metrics there (:func:`summary_metrics`, the one file `dvc exp show` reads in papers/fedhydra/)."""
    # only what the current params produce: results left on disk by a larger grid are listed, not rendered
    expected = expected_results(params)
    paper_expected = expected_paper_runs(params)

    def keep(run: str, key: str | None) -> bool:
        return run in expected and (key is None or key in expected[run])

    def keep_paper(run: str, key: str | None) -> bool:
        return run in paper_expected

    runs = load_runs(results_root, keep)
    stale = not_current(results_root, keep)
    if paper_results_root:
        stale += not_current(paper_results_root, keep_paper)
    if stale:
        print(f"render: not rendered, {len(stale)} result(s) on disk that the current params do not produce "
              "(see README.md): " + ", ".join(stale), file=sys.stderr)
    lambdas = list(params.get("lambdas") or [])
    splits = list(params.get("splits") or [])
    profile = params.get("profile", "?")
    described = cpu_profile.describe(params)
    seeds, base_seed = list((params.get("spread") or {}).get("seeds") or []), params.get("seed", 0)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    arts = load_artifacts(published_root)
    status: dict[str, str] = {}
    gaps: dict[str, list[float]] = {}
    for art in arts:
        if art.kind != "table":
            continue
        ours = table_cells(art, runs, lambdas, seeds, base_seed)
        paper = load_published_table(art)
        gaps[art.id] = table_gaps(paper, ours)
        used = [r for r in runs.values() if r.metrics]
        need = NEEDS.get(art.id, "its datasets in `datasets`")
        extra = _variant_rows(art.id, params, ours)
        note = (_note(used, described, _seeds_text(art.id, runs, seeds, base_seed)) if ours
                else f"Not run: needs {need} in papers/fedhydra/params.yaml.")
        if ours and art.id in HETERO_TABLES:
            archs = sorted({", ".join(c["arch"] for c in (r.clients or {}).get("per_client", []))
                            for n, r in runs.items() if n.endswith("-hetero")})
            server = (params.get("hetero") or {}).get("server_model", "?")
            note += f" Clients M1..M5 in force: {'; '.join(archs)}; server: {server} (hetero.server_model)."
        for extra_note in (_reading_note(art.id, runs, lambdas, seeds, base_seed), _ot_note(art.id, runs),
                           _variants_note(extra)):
            note += f" {extra_note}" if extra_note else ""
        written += render_comparison(art, ours, out, note=note, extra_rows=extra)
        total = paper.size
        n_paper = sum(1 for r, _ in ours if r in paper.index)
        n_variant = len(ours) - n_paper
        status[art.id] = (f"{n_paper} of {total} cells run" + (f", {n_variant} variant cell(s)" if n_variant else "")
                          if ours else f"paper only (needs {need})")
    paper_runs = load_runs(paper_results_root, keep_paper) if paper_results_root else {}
    if paper_runs:
        written += paper_profile_table(paper_runs, runs, arts, out / "table01_paper_profile", profile)
        status["table01_paper_profile"] = "paper-profile column(s): " + ", ".join(paper_runs)
    written += figure_curves("fmnist", runs, out / "figure03", "Fig. 3: FashionMNIST, test accuracy vs epoch")
    written += figure_curves("cifar10", runs, out / "figure04", "Fig. 4: CIFAR10, test accuracy vs epoch")
    ms_files, ms_label, U_r = figure_ms(runs, out / "figure05")
    written += ms_files
    written += figure_2cc(runs, out / "figure06")
    written += figure_ae_sa(runs, splits, out / "figure07")
    written += figure_local_curve(runs, out / "figure08")
    written += figure_partitions(runs, out / "figure09")
    written += figure_curves("mnist", runs, out / "figure10", "Fig. 10: MNIST, test accuracy vs epoch")
    written += figure_curves("svhn", runs, out / "figure11", "Fig. 11: SVHN, test accuracy vs epoch")
    written += figure_synthetic(runs, prepared_root, out / "figure12")
    written += figure_timing(runs, out / "figure13")
    for art in arts:  # figures 1 and 2 are schematics
        if art.kind == "figure" and art.id not in ("figure01", "figure02"):
            status[art.id] = _figure_status(art.id, runs) + (
                f" ({ms_label} 2c/c; the paper shows MNIST)" if art.id == "figure05" and ms_label else "")
    verdicts = claims(runs, splits, U_r, ms_label, lambdas, seeds, base_seed)
    verdicts += row_claims(arts, runs, lambdas, base_seed) + local_curve_claims(runs, base_seed)
    if paper_runs:
        verdicts += paper_profile_claims(paper_runs, base_seed)
    written.append(_write_runs(runs, out / "runs.md", profile))
    written.append(_write_readme(arts, status, verdicts, runs, out / "README.md", profile, ms_label, stale,
                                 paper_runs, seeds, base_seed))
    written += write_index(out, status, verdicts)
    if summary is not None:
        summary.write_text(json.dumps(summary_metrics(gaps, verdicts), indent=2, sort_keys=True) + "\n")
        written.append(summary)
    return written


def table_gaps(paper, ours: dict) -> list[float]:
    """ours − paper (percentage points) for every cell of the published table ``paper`` (its
    :func:`load_published_table` frame) that we ran and the paper printed a number for; a cell over several seeds
    counts with its mean. Rows the paper does not have (our variants) have no gap."""
    out = []
    for (row, col), value in ours.items():
        if row not in paper.index:
            continue
        p, v = paper.at[row, col], mean_std(value)[0]
        if not np.isnan(v) and not np.isnan(p):
            out.append(float(v) - float(p))
    return out


def summary_metrics(gaps: dict[str, list[float]], verdicts: list[dict]) -> dict:
    """The handful of numbers to compare across experiments of this pipeline: for each table with cells run, their
    count and mean gap to the paper (ours − paper, points); how many claims of the text fall in each verdict category
    (holds, does not hold, within spread, not judged, not run, not testable here: :mod:`osfl.reporting.spread`)."""
    tables = {t: {"cells": len(g), "mean_gap": round(float(np.mean(g)), 4)} for t, g in gaps.items() if g}
    return {"tables": tables, "claims": count_verdicts(c["verdict"] for c in verdicts)}


def _write_runs(runs: dict[str, Run], path: Path, profile: str) -> Path:
    lines = [f"# FedHydra runs (profile {profile})", "",
             "| run | method | final acc. (%) | best acc. (%) | best epoch | server s | data |",
             "|---|---|---|---|---|---|---|"]
    for name, run in runs.items():
        for key, m in run.metrics.items():
            lines.append(f"| {name} | {key} | {m['acc_final']:.2f} | {m['acc_best']:.2f} | {m['best_epoch']} | "
                         f"{m.get('server_seconds', 0):.1f} | {'stand-in' if m.get('stand_in_data') else 'real'} |")
        if run.clients:
            lines.append(f"| {name} | clients (mean local acc.) | {run.clients['local_acc_mean']:.2f} | | | | |")
    path.write_text("\n".join(lines) + "\n")
    return path


# tables whose text claims FedHydra is best in every row: id -> (FedHydra column, the competing columns)
ROW_CLAIMS = {t: ("Server(ResNet18) FedHydra", [f"Server(ResNet18) {v}" for k, v in HETERO_METHODS.items()
                                               if k != "fedhydra"]) for t in HETERO_TABLES}
ROW_CLAIMS.update({t: (SHORT["fedhydra"], [v for k, v in SHORT.items() if k != "fedhydra"])
                   for t in ("table04", "table07", *ROUND_TABLES)})


def _row_sides(art, runs: dict[str, Run], base_seed=0) -> dict[tuple[str, str], Side]:
    """The server methods' cells of Tables 3-5, 7-18 (as :func:`table_cells` fills them) as one-seed sides, each
    with its swing (the last half of the method's curve, or of its accuracies over rounds) and degenerate reason."""
    out: dict[tuple[str, str], Side] = {}

    def put(row: str, col: str, run: Run, key: str | None, value: float, accs) -> None:
        out[(row, col)] = Side(col, {base_seed: value}, {base_seed: _swing(accs)}, {base_seed: _degenerate(run, key)})

    if art.id in HETERO_TABLES:
        datasets, alphas = HETERO_TABLES[art.id]
        for ds in datasets:
            for a in alphas or (None,):
                run = runs.get(f"{ds}-dir{a}-hetero" if a else f"{ds}-2cc-hetero")
                for m, label in HETERO_METHODS.items():
                    if run is not None and run.acc(m) is not None:
                        put(f"alpha={a}" if a else DATASETS[ds], f"Server(ResNet18) {label}", run, m, run.acc(m),
                            run.curves.get(m, (None, None))[1])
    elif art.id in ("table04", "table07"):
        ds = "svhn" if art.id == "table04" else "cifar10"
        for name, run in runs.items():
            if name != f"{ds}-dir0.5" and not name.startswith(f"{ds}-dir0.5-k"):
                continue
            k = 5 if name == f"{ds}-dir0.5" else int(name.rsplit("-k", 1)[1])
            for m, label in SHORT.items():
                if run.acc(m) is not None:
                    put(str(k), label, run, m, run.acc(m), run.curves.get(m, (None, None))[1])
    elif art.id in ROUND_TABLES:
        ds, split = ROUND_TABLES[art.id]
        run = runs.get(f"{ds}-{split}")
        for m, label in SHORT.items():
            rounds = run.rounds.get(m, {}) if run else {}
            for t, v in rounds.items():
                put(f"T={t}", label, run, None, v, [rounds[r] for r in sorted(rounds) if r <= t])
    return out


def row_claims(arts, runs: dict[str, Run], lambdas: list[dict], base_seed=0) -> list[dict]:
    """"FedHydra is best in every row" (Tables 3-5, 7-18: SPEC §5 checks) on the cells we ran (one seed: each
    comparison's spread is the two curves' epoch-to-epoch swing, :mod:`osfl.reporting.spread`)."""
    out = []
    for art in arts:
        if art.id not in ROW_CLAIMS:
            continue
        cells = _row_sides(art, runs, base_seed)
        fh, others = ROW_CLAIMS[art.id]
        parts = []
        for row in sorted({r for r, _ in cells}):
            rivals = [cells[(row, c)] for c in others if (row, c) in cells]
            if (row, fh) in cells and rivals:
                parts.append((row, above_all(cells[(row, fh)], rivals)))
        out.append(_with_lead(every(parts), f"{len(parts)} row(s) run").record(
            artifact=art.id, claim="FedHydra is the best server method in every row"))
    return out


def local_curve_claims(runs: dict[str, Run], base_seed=0) -> list[dict]:
    """Fig. 8 (§4.2.3): FedAvg peaks early (E = 40 of 400 in the paper) and deteriorates as E grows: its best
    accuracy at a small E (the first quarter of the E range) above its best at the larger E and above its accuracy
    at the last E, each beyond the curve's swing (one run: the mean change between consecutive points of FedAvg's
    curve over the whole E range, which the claim is about)."""
    run = next((r for r in runs.values() if r.local_curve), None)
    claim = "FedAvg is best at a small E (40 of 400) and deteriorates with larger E"
    if run is None:
        return [Verdict(NOT_RUN, "-").record(artifact="figure08", claim=claim)]
    e, f = run.local_curve["epoch"], run.local_curve["fedavg"]
    top = max(range(len(f)), key=f.__getitem__)
    evidence = f"{run.name}: FedAvg best {f[top]:.2f} at E={e[top]:g} of {e[-1]:g}, {f[-1]:.2f} at the end"
    early = [i for i in range(len(e)) if e[i] <= 0.25 * e[-1]]
    late = [i for i in range(len(e)) if i not in early]
    if not early or not late:
        return [Verdict(NOT_JUDGED, evidence, reason="no point on both sides of E/4").record(artifact="figure08",
                                                                                             claim=claim)]
    bad = {base_seed: "; ".join(r for r in (clients_at_chance(run.clients, NUM_CLASSES.get(run.dataset, 10)),
                                             flat_at_chance(f, NUM_CLASSES.get(run.dataset, 10))) if r) or None}
    sw = {base_seed: swing(f)}

    def at(i: int, what: str) -> Side:
        return Side(f"FedAvg {what} (E={e[i]:g})", {base_seed: f[i]}, sw, bad)

    peak, later = max(early, key=f.__getitem__), max(late, key=f.__getitem__)
    v = every([("best at a small E", compare(at(peak, "best at E <= E/4"), at(later, "best at a larger E"))),
               ("deteriorates", compare(at(peak, "best at E <= E/4"), at(len(f) - 1, "at the last E")))])
    return [_with_lead(v, evidence).record(artifact="figure08", claim=claim)]


def _reading_short(rec: dict | None) -> str:
    """``"literal reading"``, ``"authors reading"``; a record without one: ``"literal reading, unrecorded"``."""
    r = ((rec or {}).get("choices") or {}).get("reading")
    return "literal reading, unrecorded" if r is None else f"{r} reading"


def paper_profile_claims(paper_runs: dict[str, Run], base_seed=0) -> list[dict]:
    """Table 1's claim on the paper-profile column(s): one run (seed ``base_seed``) per column, so each comparison's
    spread is the epoch-to-epoch swing of the two curves' last half; the claim names FedHydra's reading."""
    out = []
    for name, run in paper_runs.items():
        if run.acc("fedhydra") is None:
            continue
        one = {name: run}
        rivals = [_side(one, name, m, base_seed=base_seed) for m in METHODS
                  if m != "fedhydra" and run.acc(m) is not None]
        if not rivals:
            continue
        v = above_all(_side(one, name, "fedhydra", base_seed=base_seed), rivals)
        out.append(_with_lead(v, f"FedHydra's best epoch {run.acc('fedhydra', 'acc_best'):.2f}").record(
            artifact="table01_paper_profile",
            claim=f"FedHydra has the best accuracy ({name}, paper profile, {_reading_short(run.metrics['fedhydra'])})"))
    return out


def _figure_status(fig: str, runs: dict[str, Run]) -> str:
    if fig == "figure08":
        done = [n for n, r in runs.items() if r.local_curve]
        return f"rendered from {', '.join(done)}" if done else "not run: needs " + NOT_BUILT[fig]
    if fig == "figure13":
        done = [n for n, r in runs.items() if r.timing]
        return (f"rendered from the timed runs of {', '.join(done)}" if done
                else "partial (the main runs' server seconds): needs " + NOT_BUILT[fig])
    return "rendered from the runs present"


def _readings_section(runs: dict[str, Run], paper_runs: dict[str, Run]) -> list[str]:
    """README lines: for every run, its FedHydra results grouped by the reading of Alg. 1 that produced them."""
    rows = []
    for prefix, group in (("", runs), ("paper/", paper_runs or {})):
        for name, run in group.items():
            by: dict[str, list[str]] = {}
            for key, rec in sorted(run.metrics.items(), key=lambda kv: (kv[0] != "fedhydra", kv[0])):
                if key.split("-")[0] == "fedhydra":
                    by.setdefault(_reading(rec), []).append(f"`{key}`")
            rows += [f"| {prefix}{name} | {', '.join(keys)} | {r} |" for r, keys in by.items()]
    if not rows:
        return []
    return ["## Which reading produced each FedHydra number", "",
            "FedHydra's server loop has two readings (`reading`, src/osfl/methods/fedhydra.py `READINGS`): "
            "**authors**, the first author's released loop (the default), and **literal**, Alg. 1 as written (the "
            "`FedHydra (literal Alg. 1)` rows of Tables 1-2, run tag `literal`). Each run records its reading under "
            "`choices.reading`; a run recorded before the readings existed records none and ran the literal reading, "
            "then the only one. The tables' notes say which reading their FedHydra numbers come from.", "",
            "| run | FedHydra results | reading |", "|---|---|---|", *rows, ""]


def _write_readme(arts, status, verdicts, runs, path: Path, profile: str, ms_label: str,
                  not_rendered: list[str] = (), paper_runs: dict[str, Run] | None = None, seeds=(),
                  base_seed=0) -> Path:
    ran = sorted({r.dataset for r in runs.values() if r.metrics})
    spread_runs = sorted(n for n in runs if any(n.endswith(f"-s{k}") for k in seeds) and runs[n].metrics)
    lines = [
        "# FedHydra: reproduced artifacts", "",
        f"Generated by `{COMMAND}` (render stage) from the runs under `results/` (in papers/fedhydra/). Profile: **{profile}**; "
        f"datasets run: {', '.join(ran) or 'none'}. Each table cell reads ours / paper (Δ); ours is the final-epoch "
        f"accuracy of one run (seed {base_seed}; best-epoch numbers in `runs.md`), or in Tables 1-2, where the run "
        "also ran with the seeds of `spread.seeds` (runs `<dataset>-<split>-s<seed>`), mean ± sample std (ddof = 1) "
        f"over the seeds with their number n, the Δ from the mean (extra-seed runs present: "
        f"{', '.join(spread_runs) or 'none'}). Curves (test accuracy vs epoch) start at epoch 0, the server model "
        "before training (runs of the `runs/` + `live/` layout; the older `curves/*.csv` start at epoch 1); best "
        "accuracy and best epoch are over epochs >= 1. Regenerate everything with the command above; add a "
        "dataset with `dvc exp run -S 'datasets=[mnist,fmnist]'` in papers/fedhydra/.",
        ""]
    if not_rendered:
        lines += ["## Not rendered: results on disk that the current params do not produce", "",
                  f"{len(not_rendered)} result(s) under `results/` that no stage of `papers/fedhydra/dvc.yaml` produces "
                  "with the current `papers/fedhydra/params.yaml` (left from a larger grid: `datasets`, `splits`, "
                  "`methods`, `lambdas`, `hetero`, `ksweep`, `multiround`, `localcurve`, `timing` or `paper_columns` "
                  "since shortened). No table, figure, claim or `runs.md` below uses them; delete them, or list their "
                  "runs in the params again to render them. Each is `<results folder>/<run>/<result>`, a result being a "
                  "method (its `metrics/`, `curves/` and `extras/` files), `partition`, `clients`, `local_curve`, "
                  "`timing/<method>-t<r>` or `rounds/<method>`:", ""]
        lines += [f"- `{x}`" for x in not_rendered] + [""]
    lines += ["## Artifacts", "", "| artifact | paper | files | status |", "|---|---|---|---|"]
    for art in arts:
        if art.kind == "table":
            lines.append(f"| {art.id} | {art.label} | `{art.id}.tex`, `{art.id}.md` | {status.get(art.id, '')} |")
        elif art.id in status:
            lines.append(f"| {art.id} | {art.label} | `{art.id}.png`, `{art.id}.pdf` | {status[art.id]} |")
    if "table01_paper_profile" in status:
        lines.append(f"| table01_paper_profile | Table 1 at the paper profile | `table01_paper_profile.tex`, "
                     f"`table01_paper_profile.md` | {status['table01_paper_profile']} (results/paper/) |")
    lines += ["", "Figures 1 and 2 are schematics (no data).", ""]
    lines += _readings_section(runs, paper_runs or {})
    lines += ["## Claims of the paper's text", "",
              "Numbers that ran with more than one seed are shown as mean ± std (n=k). " + VERDICT_RULE + " Here a "
              "final accuracy's swing is taken over the last half of its curve; \"collapses late\" compares the "
              "best epoch with the final one; a claim that FedHydra is best (or OT worst) compares it with every "
              "rival and names the comparisons that decided it.", "",
              "| artifact | claim | verdict | evidence |", "|---|---|---|---|"]
    for v in verdicts:
        label = f"{v['verdict']}: {v['reason']}" if v.get("reason") else v["verdict"]
        lines.append(f"| {v['artifact']} | {v['claim']} | **{label}** | {v['evidence']} |")
    lines += ["", "SPEC choices in force are recorded per run in `results/<run>/runs/<method>.json` under "
              "`choices`; the ambiguities they resolve are listed in the SPEC (§6)."]
    path.write_text("\n".join(lines) + "\n")
    return path
