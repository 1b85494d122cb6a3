"""FedHydra's claims: each testable claim of the paper's text with our verdict (osfl.reporting.spread)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ...reporting.spread import (
    DOES_NOT_HOLD, HOLDS, NOT_JUDGED, NOT_RUN, Side, Verdict, above_all, clients_at_chance, compare,
    constant_samples, curve_at_chance, every, late_half, on_seeds, regime_failure, seed_runs, swing,
)
from .runs import (
    ALPHAS, DATASETS, HETERO_METHODS, HETERO_TABLES, METHODS, NUM_CLASSES, ROUND_TABLES, Run, SHORT, _config,
    _reading, _reading_short,
)
from .figures import _first_run, _split_label

# ---------------------------------------------------------------------------------------------------------
# claims


def _degenerate(run: Run, key: str | None) -> str | None:
    """Why result ``key`` of ``run`` (None: the run's clients alone) cannot be judged, or None (spread rule 3,
    :mod:`osfl.reporting.spread`): its clients at chance or all equal (``clients.json``), its server curve flat at
    chance, or its recorded synthetic samples all the same image."""
    classes = NUM_CLASSES.get(run.dataset, 10)
    reasons = [clients_at_chance(run.clients, classes), regime_failure(run.clients, classes, "clients")]
    if key is not None:
        reasons.append(regime_failure(run.metrics.get(key), classes, "server"))
        curve = run.curves.get(key)
        reasons.append(curve_at_chance(curve[1], classes, epoch0=True) if curve else None)
        samples = (run.extras.get(key) or {}).get("synthetic_samples") or {}
        reasons.append(constant_samples(samples["images_u8"]) if samples.get("images_u8") else None)
    return "; ".join(r for r in reasons if r) or None


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
            on_seeds(Verdict(HOLDS if ok else DOES_NOT_HOLD, evidence), [base_seed]))  # U_r: the base seed's run

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
        out.update(round_sides(runs.get(f"{ds}-{split}"), base_seed))
    return out


def round_sides(run: Run | None, base_seed=0) -> dict[tuple[str, str], Side]:
    """The multi-round cells of ``run``: (``"T=<t>"``, method label) -> a one-seed side, the accuracy after round t
    with the clients' degenerate reason and, as its spread, the method's round-to-round swing over the last half of
    all its rounds (the same for every t: the rounds before t alone would leave the first rows without one)."""
    out: dict[tuple[str, str], Side] = {}
    degenerate = _degenerate(run, None) if run else None
    for m, label in SHORT.items():
        rounds = run.rounds.get(m, {}) if run else {}
        spread = _swing([rounds[r] for r in sorted(rounds)])
        for t, v in rounds.items():
            out[(f"T={t}", label)] = Side(label, {base_seed: v}, {base_seed: spread}, {base_seed: degenerate})
    return out


def best_every_row(cells: dict[tuple[str, str], Side], fh: str, others: list[str]) -> Verdict:
    """FedHydra's column ``fh`` above every column of ``others`` in each row of ``cells`` that has both, led by how
    many rows were judged (:func:`osfl.reporting.spread.above_all`, :func:`~osfl.reporting.spread.every`)."""
    parts = []
    for row in sorted({r for r, _ in cells}):
        rivals = [cells[(row, c)] for c in others if (row, c) in cells]
        if (row, fh) in cells and rivals:
            parts.append((row, above_all(cells[(row, fh)], rivals)))
    return _with_lead(every(parts), f"{len(parts)} row(s) run")


def row_claims(arts, runs: dict[str, Run], lambdas: list[dict], base_seed=0) -> list[dict]:
    """"FedHydra is best in every row" (Tables 3-5, 7-18: SPEC §5 checks) on the cells we ran (one seed: each
    comparison's spread is the two curves' epoch-to-epoch swing, :mod:`osfl.reporting.spread`)."""
    out = []
    for art in arts:
        if art.id not in ROW_CLAIMS:
            continue
        fh, others = ROW_CLAIMS[art.id]
        out.append(best_every_row(_row_sides(art, runs, base_seed), fh, others).record(
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
                                             curve_at_chance(f, NUM_CLASSES.get(run.dataset, 10), epoch0=False)) if r) or None}
    sw = {base_seed: swing(f)}

    def at(i: int, what: str) -> Side:
        return Side(f"FedAvg {what} (E={e[i]:g})", {base_seed: f[i]}, sw, bad)

    peak, later = max(early, key=f.__getitem__), max(late, key=f.__getitem__)
    v = every([("best at a small E", compare(at(peak, "best at E <= E/4"), at(later, "best at a larger E"))),
               ("deteriorates", compare(at(peak, "best at E <= E/4"), at(len(f) - 1, "at the last E")))])
    return [_with_lead(v, evidence).record(artifact="figure08", claim=claim)]


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
