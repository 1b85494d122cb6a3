"""FedMHO's claims: Table IV's sides (runs that passed their guards, with their swings), the verdicts, and the
caption of the parts (clients) a run read."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from ...live import read_curve
from ...reporting.runs import mean_side, run_name
from ...reporting.spread import (
    NOT_RUN, Side, Verdict, above_all, clients_at_chance, compare, constant_samples, curve_at_chance, every,
    late_half, mean_std, swing,
)
from .tables import _part_models
from ...reporting.grid import Grid

def _classes(dataset: str) -> int:
    from ...data import get_spec

    return get_spec(dataset).num_classes


def _degenerate(grid: Grid, run_dir: Path, entry: dict, ds: str, accs: list[float] | None) -> str | None:
    """Why a Table IV result cannot be judged, or None (spread rule 3): a classifier part of its cohort at chance
    or all alike (``clients-<part>.json``), its server curve flat at chance, or, for a cohort with CVAE clients, the
    run's decoded samples (``samples/samples.npz``, where the run has them) all the same image."""
    classes = _classes(ds)
    models = _part_models(grid, ds)
    reasons = []
    for part in (entry.get("first"), entry.get("second")):
        f = run_dir / f"clients-{part}.json"
        if part and f.is_file():
            reasons.append(clients_at_chance(json.loads(f.read_text()), classes))
    reasons.append(curve_at_chance(accs, classes, epoch0=True))
    samples = run_dir / "samples" / "samples.npz"
    if samples.is_file() and any(str(models.get(q, "")).startswith("cvae") for q in (entry.get("first"),
                                                                                      entry.get("second")) if q):
        images = np.load(samples)["images"]
        reasons.append(constant_samples(images.reshape(-1, *images.shape[2:])))
    return "; ".join(r for r in reasons if r) or None


def parts_note(grid: Grid, results_root: Path) -> str:
    """A caption sentence on the clients behind Table IV's runs, per part of its columns (``clients-<part>.json``):
    a classifier part's mean local test accuracy and epochs, a CVAE part's clients ending below their data's
    mean-image loss and the clients restarted (``diverged_in_epochs``); one value per run that trained the part."""
    names = list(dict.fromkeys(q for c in grid.columns for q in (c.get("first"), c.get("second")) if q))
    runs = [(ds, sp, sd) for ds in grid.datasets for sp in grid.splits
            for sd in grid.seeds]
    said = []
    for name in names:
        recs = [(f"{sp} s{sd}", json.loads(f.read_text())) for ds, sp, sd in runs
                if (f := Path(results_root) / run_name(ds, sp, sd) / f"clients-{name}.json").is_file()]
        if not recs:
            continue
        if all("local_acc_mean" in r for _, r in recs):
            said.append(f"{name} mean local accuracy " + ", ".join(f"{w} {r['local_acc_mean']:.2f} %" for w, r in recs)
                        + f" ({recs[0][1].get('epochs_run')} local epochs)")
            continue
        below = ", ".join(f"{w} {sum(c['final_loss'] < c['mean_image_loss'] for c in r['per_client'])}"
                          f"/{len(r['per_client'])}" for w, r in recs
                          if all("mean_image_loss" in c for c in r["per_client"]))
        again = "; ".join(f"{w} client {c['client']} after failed attempts ending in epochs "
                          + ", ".join(map(str, c["diverged_in_epochs"])) for w, r in recs for c in r["per_client"]
                          if c.get("diverged_in_epochs"))
        said.append(f"{name} clients ending below their data's mean-image loss {below or 'not recorded'}"
                    + (f"; restarted from a fresh draw: {again}" if again else ""))
    return ("Clients: " + "; ".join(said) + ".") if said else ""


def table04_sides(grid: Grid, results_root: Path, numbers: dict) -> dict[tuple[str, str], Side]:
    """Table IV's cells (:func:`table04`'s numbers; or a Table IV variant's, as Table VI's) as sides of a
    comparison: seed -> final accuracy, each seed's swing (the last half of its logged server curve) and degenerate
    reason."""
    entries = {c["id"]: c for c in list(grid.columns) + grid.items("variants")}
    out = {}
    for (row, col), num in numbers.items():
        ds, split = num["run"]
        swings, bad = {}, {}
        for seed in num["values"]:
            run_dir = Path(results_root) / run_name(ds, split, seed)
            live = run_dir / "live" / num["id"]
            accs = read_curve(live)[1] if (live / "plots").is_dir() else None
            swings[seed] = swing(late_half(accs)) if accs else None
            bad[seed] = _degenerate(grid, run_dir, entries.get(num["id"], {}), ds, accs)
        out[(row, col)] = Side(col, num["values"], swings, bad)
    return out


def claims(sides: dict[tuple[str, str], Side]) -> list[tuple[str, Verdict]]:
    """Verdicts on the paper's Table IV claims (SPEC §5.2, §6) over the rows we ran, each comparison by the spread
    rule of :mod:`osfl.reporting.spread` (``sides``: :func:`table04_sides`). A claim is judged on the rows that have
    the columns it needs; against baselines, on the baselines those rows have a number for, and the claim's text
    then names the columns left out (so "holds" never covers a column without a number)."""
    rows = sorted({r for r, _ in sides})
    base = ["FedAvg", "FedDF", "DENSE", "Co-Boosting", "FEDCVAE"]
    ours = ("FedMHO-MD", "FedMHO-SD")
    others = base + ["FedMHO"]

    def having(cols):
        return [r for r in rows if all((r, m) in sides for m in cols)]

    def missing(cols, among):
        """Which columns the judgement lacks, and in which of the rows ``among``."""
        gone = []
        for m in cols:
            where = [r for r in among if (r, m) not in sides]
            if where:
                gone.append(f"{m} ({'every row' if len(where) == len(among) else '; '.join(where)})")
        return f" (judged without {', '.join(gone)}: not run, or failed a guard)" if gone else ""

    out = []
    claim = "MD and SD are the two best methods in every row (§5.2)"
    full = [r for r in having(ours) if any((r, o) in sides for o in others)]
    if not full:
        out.append((claim, Verdict(NOT_RUN, "no row has MD, SD and another column")))
    else:
        out.append((claim + missing(others, full),
                    every((f"{r}, {m}", above_all(sides[(r, m)], [sides[(r, o)] for o in others if (r, o) in sides]))
                          for r in full for m in ours)))
    kd = "the KD terms help: MD and SD at least plain FedMHO (§5.3.1)"
    avg_rows = having(("FedMHO",) + ours)  # the rows of FedMHO's three columns: the KD claim's and the average's
    out.append((kd, every((f"{r}, {m}", compare(sides[(r, m)], sides[(r, "FedMHO")])) for r in avg_rows for m in ours)
                if avg_rows else Verdict(NOT_RUN, "no row has FedMHO, MD and SD")))
    gain = "FedMHO / MD / SD beat the best baseline on average (abstract: 5.17 / 8.35 / 8.25 over FEDCVAE, 12 cells)"
    ran = [m for m in base if avg_rows and all((r, m) in sides for r in avg_rows)]
    if not ran:
        out.append((gain, Verdict(NOT_RUN, "no row has FedMHO, MD, SD and a baseline")))
        return out
    avg = {m: mean_side([sides[(r, m)] for r in avg_rows], f"{m} (mean of {len(avg_rows)} rows)")
           for m in ran + ["FedMHO", *ours]}
    best = max(ran, key=lambda m: mean_std(list(avg[m].values.values()))[0])
    gains = {m: mean_std(list(avg[m].values.values()))[0] - mean_std(list(avg[best].values.values()))[0]
             for m in ("FedMHO", *ours)}
    v = every((m, compare(avg[m], avg[best])) for m in gains)
    out.append((gain + missing(base, avg_rows),
                replace(v, evidence=f"ours over {len(avg_rows)} rows: best baseline {best}; gains "
                        + " / ".join(f"{g:+.2f}" for g in gains.values()) + f"; {v.evidence}")))
    return out


def cleaning_claims(cleaned: dict[tuple[str, str], Side],
                    raw: dict[tuple[str, str], Side]) -> list[tuple[str, Verdict]]:
    """Table VI (§5.3.2): the unsupervised data optimisation (k-means cleaning) helps: MD and SD as Table IV ran
    them (``cleaned``) above the same runs without cleaning (``raw``), in every row that has both."""
    claim = "k-means cleaning helps: MD and SD above themselves without it in every row (Table VI vs IV, §5.3.2)"
    pairs = sorted(k for k in raw if k in cleaned)
    if not pairs:
        return [(claim, Verdict(NOT_RUN, "no row has MD or SD with and without cleaning"))]
    return [(claim, every((f"{r}, {m}", compare(replace(cleaned[(r, m)], name=f"{m} (cleaned)"),
                                                replace(raw[(r, m)], name=f"{m} (no cleaning)")))
                          for r, m in pairs))]
