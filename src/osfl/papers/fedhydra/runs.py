"""FedHydra's runs: the names of its datasets, methods and variants, the results under ``results/<run>/`` (one
:class:`Run` each), the results the committed params produce (the grid), and the per-seed values of a cell."""
from __future__ import annotations

import csv
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...live import read_curve as read_live_curve
from ...reporting.naming import run_name, seed_run
from ...reporting.runs import read_found, run_folders
from ...reporting.spread import seed_values
from ...reporting.grid import Grid

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
    rounds_epochs: dict = field(default_factory=dict)  # method[-tag] -> local epochs run in each round
    local_curve: dict | None = None  # Fig. 8: column -> values (epoch, fedavg, client_k)
    timing: dict = field(default_factory=dict)  # <method>-t<r> -> server manifest (seconds, runtime)

    def acc(self, key: str, which: str = "acc_final") -> float | None:
        m = self.metrics.get(key)
        return None if m is None else float(m[which])

    def round_cells(self) -> dict[tuple[str, str], float]:
        """(``"T=<t>"``, method label) -> the test accuracy after global round t (Tables 5, 8, 11-18)."""
        return {(f"T={t}", label): v for m, label in SHORT.items() for t, v in self.rounds.get(m, {}).items()}

    @property
    def stand_in(self) -> bool:
        return self.rounds_stand_in or any(m.get("stand_in_data") for m in self.metrics.values())


def _result_files(d: Path):
    """(key, kind, path) of every result file :func:`load_runs` reads in the run folder ``d``, in reading order.
    The key names the result as :func:`expected_results` does: ``<method>[-<tag>]`` for a server's record and curve
    (runs/ and live/), ``partition`` (partition/summary.json), ``clients`` (clients.json), ``local_curve``
    (local_curve.csv), ``timing/<method>-t<r>`` and ``rounds/<method>``."""
    for f in sorted(d.glob("runs/*.json")):  # a run's record: its numbers and extras
        yield f.stem, "run", f
    for f in sorted(d.glob("live/*/plots/metrics/test_acc.tsv")):  # its curve, as dvclive logged it
        yield f.parents[2].name, "live", f
    for key, rel in (("partition", "partition/summary.json"), ("clients", "clients.json"),
                     ("local_curve", "local_curve.csv")):
        if (d / rel).exists():
            yield key, key, d / rel
    for kind in ("timing", "rounds"):
        for f in sorted((d / kind).glob("*.json")):
            yield f"{kind}/{f.stem}", kind, f


def read_run(d: Path, keep: Callable[[str, str | None], bool] | None = None) -> Run | None:
    """The run folder ``d`` as a :class:`Run` (its dataset and split from the name ``<dataset>-<split>``); with
    ``keep``, only the results for which ``keep(run, key)`` is true (keys as in :func:`_result_files`), and None for a
    folder for which ``keep(run, None)`` is not."""
    if keep is not None and not keep(d.name, None):
        return None
    dataset, _, split = d.name.partition("-")
    run = Run(d.name, dataset, split, str(d))
    for key, kind, f in _result_files(d):
        if keep is not None and not keep(d.name, key):
            continue
        if kind == "run":
            rec = json.loads(f.read_text())
            run.extras[key] = rec.pop("extras", None) or {}
            run.metrics[key] = rec
        elif kind == "live":
            run.curves[key] = read_live_curve(f.parents[2])
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
            run.rounds_epochs[f.stem] = rec.get("local_epochs_run")
    return run


def load_runs(root: Path, keep: Callable[[str, str | None], bool] | None = None) -> dict[str, Run]:
    """Every run folder under ``root`` (``results``), keyed by ``<dataset>-<split>``, read by the reports' one
    loader (:func:`osfl.reporting.runs.read_found`) with :func:`read_run`."""
    return read_found(root, functools.partial(read_run, keep=keep))


def not_current(root: Path, keep: Callable[[str, str | None], bool]) -> list[str]:
    """``<root name>/<run>/<key>`` of every result under ``root`` that ``keep`` (see :func:`load_runs`) leaves out."""
    out: list[str] = []
    for d in run_folders(root):
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


def expected_results(grid: Grid) -> dict[str, set[str]]:
    """Run folder under ``results/`` -> the keys of the results (:func:`_result_files`) that the stages of
    ``papers/fedhydra/dvc.yaml`` produce there for ``grid`` (each matrix of dvc.yaml mirrored here; the
    structure is checked against DVC's own resolution by tests/test_fedhydra_current.py)."""
    exp: dict[str, set[str]] = {}

    def add(run: str, *keys: str) -> None:
        exp.setdefault(run, set()).update(keys)

    def sub(key: str) -> dict:
        return grid.block(key)

    datasets = [_interp(d) for d in _items(grid.value("datasets"))]
    methods = [_interp(m) for m in _items(grid.value("methods"))]
    variants, spread = sub("variants"), sub("spread")
    for ds in datasets:
        for s in map(_interp, _items(grid.value("splits"))):
            # partition, train, evaluate (x methods) and ae
            add(f"{ds}-{s}", "partition", "clients", "fedhydra-ae", *methods)
        for lam in _items(grid.value("lambdas")):  # Table 6 rows, always at Dir(0.5)
            add(f"{ds}-dir0.5", f"fedhydra-{_interp(lam['tag'])}")
        for key, (param, _, _) in VARIANTS.items():  # stages literal and dense_code
            for s in map(_interp, _items(variants.get(param))):
                add(f"{ds}-{s}", key)
        for s in map(_interp, _items(spread.get("splits"))):  # stages spread_clients and spread_server
            for seed in map(_interp, _items(spread.get("seeds"))):
                add(run_name(ds, s, seed), "partition", "clients", *methods)
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


def expected_paper_runs(grid: Grid) -> set[str]:
    """Run folders under ``results/paper/`` that stages ``paper_train``/``paper_server`` produce: one per dataset and
    split of ``paper_columns`` (``{datasets, splits, methods}``)."""
    cols = grid.block("paper_columns")
    return {f"{_interp(d)}-{_interp(s)}" for d in _items(cols.get("datasets")) for s in _items(cols.get("splits"))}


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
        left_out += [f"{seed_run(name, k, base_seed)}/{key}" for k in lo]
    return vals


def _seed_cell(runs: dict[str, Run], name: str, key: str, seeds=(), base_seed=0, which: str = "acc_final"):
    """Our number for result ``key`` of run ``name``: the one value (one seed ran), the list of values over the
    seeds (more than one ran: :func:`over_seeds`), or None (none ran)."""
    vals = over_seeds(runs, name, key, seeds, base_seed, which)
    return None if not vals else (vals[0] if len(vals) == 1 else vals)


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


def _device_name(manifest: dict) -> str:
    """The device a stage ran on, from its manifest's ``runtime`` block: the GPU's name, else the CPU's."""
    rt = manifest.get("runtime") or {}
    return str(rt.get("gpu") or rt.get("cpu") or rt.get("device") or "?")


def _reading_short(rec: dict | None) -> str:
    """``"literal reading"``, ``"authors reading"``; a record without one: ``"literal reading, unrecorded"``."""
    r = ((rec or {}).get("choices") or {}).get("reading")
    return "literal reading, unrecorded" if r is None else f"{r} reading"
