"""reports/peers.md: our methods against their authors' code (issue 38), rendered from the committed records of
``benchmarks/peers/`` (the harness that runs the official code from a scratch checkout; its README says how).

Three parts, each from its own files under ``benchmarks/peers/records/``:

* equations (``equations.json``): one row per check, the official function and ours called on the same tensors, the
  largest difference and its verdict;
* runs (``clients-*.json`` and every other run record): per arm (the official code as released, variants of it, ours)
  the mean ± std over seeds of each metric, and ours against the official one under the spread rule of
  :mod:`osfl.reporting.spread` (same seeds only; "within spread" means the two agree), with the time ratio;
* findings (``benchmarks/peers/findings.yaml``): every difference found, where it is on each side, and what was done.

Nothing here is measured: a record that is missing renders as "not run", with the command that makes it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from .tables import markdown_table
from .spread import DOES_NOT_HOLD, HOLDS, WITHIN, Side, compare, format_spread

METRICS = {"client_acc_mean": "clients (mean test acc.)", "fedavg": "FedAvg (uniform)",
           "fedavg_samples": "FedAvg (n_k/n)", "ensemble": "ensemble", "final": "final acc.", "best": "best acc."}
AGREEMENT = {WITHIN: "agree (within spread)", HOLDS: "ours higher", DOES_NOT_HOLD: "ours lower"}
RERUN = {"equations.json": "python -m benchmarks.peers.equations",
         "clients-coboost-shared-init.json": "python -m benchmarks.peers.clients --epochs 10 --seeds 0 1 2 --init shared",
         "clients-coboost-own-init.json": "python -m benchmarks.peers.clients --epochs 10 --seeds 0 1 2 --init own",
         "clients-dense-shared-init.json": "python -m benchmarks.peers.clients --peer DENSE --epochs 10 --seeds 0 1 2",
         "clients-coboost-inputs.json": "python -m benchmarks.peers.clients --epochs 10 --seeds 0 1 2 --init shared "
                                        "--arms official_norm28 official_resize32 --out "
                                        "benchmarks/peers/records/clients-coboost-inputs.json",
         "ot.json": "python -m benchmarks.peers.ot --seeds 0 1 2",
         "fedcvae.json": "python -m benchmarks.peers.fedcvae --seeds 0 1 2",
         "fedmho-md.json": "python -m benchmarks.peers.fedmho_server --seeds 0 1 2",
         "feddf.json": "python -m benchmarks.peers.fedmho_server --seeds 0 1 2",
         "dm.json": "python -m benchmarks.peers.dm --seeds 0 1 2"}


def _table(header: list[str], rows: list[list]) -> list[str]:
    """The project's Markdown table (:func:`osfl.reporting.tables.markdown_table`) of ``rows`` under ``header``, the
    first column as its index, as lines."""
    df = pd.DataFrame([[str(c) for c in row] for row in rows], columns=header).set_index(header[0])
    return markdown_table(df).rstrip("\n").splitlines()


def _official(o: dict) -> str:
    return f"`{o.get('repo', '?')}@{str(o.get('commit', '?'))[:7]}`" + (f" `{o['where']}`" if o.get("where") else "")


def _rounded(value):
    return [_rounded(v) for v in value] if isinstance(value, list) else round(value, 2)


def _checks_table(checks: list[dict]) -> list[str]:
    """One row per equation-level check: the official function and ours on the same tensors."""
    rows = []
    for c in checks:
        diff = c.get("max_abs_diff")
        grad = c.get("grad_max_abs_diff")
        note = c.get("note", "")
        if diff is None and c.get("per_seed") is not None:  # a measurement, not a difference: show its values
            note = "; ".join(x for x in (note, "per seed: " + json.dumps(_rounded(c["per_seed"]))) if x)
        rows.append([c["method"], c["what"], _official(c["official"]), f"`{c['ours']}`",
                     "—" if diff is None else f"{diff:.1e}", "—" if grad is None else f"{grad:.1e}",
                     c.get("verdict", "measured"), note])
    return _table(["method", "check", "official", "ours", "max |Δ|", "max |Δ grad|", "verdict", "note"], rows)


def equations_section(record: dict | None) -> list[str]:
    lines = ["## Equations: the official function and ours on the same tensors", ""]
    if record is None:
        return lines + [f"Not run: `{RERUN['equations.json']}` (with the official checkouts, README of "
                        "benchmarks/peers) writes benchmarks/peers/records/equations.json.", ""]
    lines += _checks_table(record["checks"])
    shims = record.get("shims") or {}
    if shims:
        lines += ["", "Shims (our changes around the official code, nothing inside it): " + "; ".join(
            f"{repo}: " + ", ".join(changes) for repo, changes in sorted(shims.items()) if changes) + "."]
    return lines + ["", f"torch {record.get('torch', '?')}; re-run: `{RERUN['equations.json']}`.", ""]


def _side(name: str, arm: dict, key: str, seeds: list) -> Side:
    values = arm.get(key, {}).get("values") or []
    return Side(name, dict(zip(seeds, values)))


def _phase(key: str) -> str:
    """The phase a timing key names: ``local_seconds`` -> ``local training``."""
    phase = key[: -len("_seconds")]
    return {"local": "local training", "condense": "condensation",
            "server_one_test": "server, one test on each side",
            "server_epoch_tests": "server, a test per epoch on each side"}.get(phase, phase.replace("_", " "))


def _pairs(arms: dict) -> list[tuple[str, str]]:
    """The comparisons of a record: ``ours`` against every official arm, and each variant of ours (``ours_<name>``)
    against ``official``."""
    pairs = [("ours", a) for a in arms if a != "ours" and not a.startswith("ours_")] if "ours" in arms else []
    return pairs + ([(a, "official") for a in arms if a.startswith("ours_")] if "official" in arms else [])


def reach_section(name: str, record: dict) -> list[str]:
    """A record of how far an official loop runs (``runs``: per seed its seconds and where it stopped)."""
    lines = [f"### {record.get('peer', name)}: {record.get('layer', '')} ({name})", "",
             f"Official code: {_official(record.get('official', {}))}; harness `{record.get('harness', '?')}`; "
             "settings: " + "; ".join(f"{k} {v}" for k, v in record.get("settings", {}).items()), ""]
    rows = []
    for r in record["runs"]:
        stop = r.get("stopped") or {}
        rows.append([r["seed"], "—" if r.get("ms_seconds") is None else f"{r['ms_seconds']:.1f}",
                     r.get("epochs_done", 0), stop.get("stage", "ran to the end"),
                     f"`{stop['at']}`: {stop['exception']}" if stop else "—"])
    lines += _table(["seed", "model stratification s", "epochs done", "stopped in", "where, and the exception"],
                    rows)
    shims = record.get("shims") or []
    if shims:
        lines += ["", "Shim: " + "; ".join(shims) + "."]
    return lines + (["", f"Re-run: `{record['rerun']}`."] if record.get("rerun") else []) + [""]


def run_section(name: str, record: dict) -> list[str]:
    if not record.get("arms") and record.get("runs"):
        return reach_section(name, record)
    arms, seeds = record["arms"], record["seeds"]
    official = record.get("official", {})
    lines = [f"### {record.get('peer', name)}: {record.get('layer', 'clients')} ({name})", "",
             f"Official code: {_official(official)}; harness `{record.get('harness', '?')}`; seeds "
             f"{', '.join(map(str, seeds))}. Settings: " + "; ".join(
                 f"{k} {json.dumps(v) if isinstance(v, dict) else v}" for k, v in record.get("settings", {}).items()),
             ""]
    metrics = [m for m in METRICS if any(m in a for a in arms.values())]
    timers = sorted({k for a in arms.values() for k in a if k.endswith("_seconds")})  # one column per timed phase
    rows = [[arm] + [format_spread(a[m]["values"]) if m in a else "—" for m in metrics]
            + [format_spread(a[t]["values"], 1) if t in a else "—" for t in timers]
            for arm, a in arms.items()]
    lines += _table(["arm"] + [METRICS[m] for m in metrics] + [_phase(t) + " s" for t in timers], rows)
    for mine, other in _pairs(arms):
        lines += ["", f"`{mine}` against `{other}` (same seeds; spread = the larger sample std):", ""]
        rows = []
        for m in metrics:
            if m in arms[mine] and m in arms[other]:
                v = compare(_side(mine, arms[mine], m, seeds), _side(other, arms[other], m, seeds))
                rows.append([METRICS[m], AGREEMENT.get(v.verdict, v.label),
                             "; ".join(x for x in (v.evidence, v.reason, v.basis) if x)])
        for t in timers:
            t_ours = arms[mine].get(t, {}).get("mean")
            t_off = arms[other].get(t, {}).get("mean")
            if t_ours and t_off:
                rows.append([f"{_phase(t)} time", f"ours {t_off / t_ours:.2f}× as fast",
                             f"{other} {t_off:.1f} s, ours {t_ours:.1f} s (mean over seeds, "
                             f"{record.get('settings', {}).get('threads', '?')} thread(s), this CPU)"])
        lines += _table(["metric", "result", "evidence"], rows)
    lines += curves_section(record)
    if record.get("checks"):
        lines += ["", "Checks on the same runs' models (the official function and ours on the same tensors):", ""]
        lines += _checks_table(record["checks"])
    shims = record.get("shims") or []
    if shims:
        lines += ["", "Shim: " + "; ".join(shims) + "."]
    rerun = record.get("rerun") or RERUN.get(name + ".json")
    return lines + (["", f"Re-run: `{rerun}`."] if rerun else []) + [""]


def curves_section(record: dict) -> list[str]:
    """A record's per-epoch test accuracy (``curves``: arm -> one list per seed), mean over seeds at a few epochs,
    and the paired differences of the final accuracy (ours - official, per seed)."""
    curves = record.get("curves") or {}
    if not curves or not all(curves.values()):
        return []
    n = min(len(c) for runs in curves.values() for c in runs)
    marks = sorted({1, *(max(1, round(n * f)) for f in (0.1, 0.25, 0.5, 0.75)), n})
    rows = [[arm] + [format_spread([c[e - 1] for c in runs]) for e in marks] for arm, runs in curves.items()]
    lines = ["", "Test accuracy per server epoch (mean ± std over the seeds):", ""]
    lines += _table(["arm"] + [f"epoch {e}" for e in marks], rows)
    arms = record["arms"]
    if "ours" in arms and "official" in arms:
        ours, off = arms["ours"]["final"]["values"], arms["official"]["final"]["values"]
        diffs = [o - f for o, f in zip(ours, off)]
        lines += ["", "Paired differences of the final accuracy, ours - official, per seed ("
                  + ", ".join(f"seed {s}: {d:+.2f}" for s, d in zip(record["seeds"], diffs)) + f"); mean "
                  f"{sum(diffs) / len(diffs):+.2f}."]
    return lines


HEADLINE = ("final", "ensemble", "client_acc_mean")  # a record's headline metric: the first that both sides have


SUMMARY_HEADER = ["record", "metric", "official", "ours", "difference", "result", "finding",
                  "ours as fast as official", "official code"]


#: a record ``<name>-samework`` times the official code against the arm of ours that does the same work (``ours_<x>``,
#: e.g. DENSE at ``bn`` 0, whose official BN loss is identically 0, F5/F35), back to back in one process: its ratio is
#: set beside ``<name>``'s in the summary (it has no ``ours`` arm, so no row of its own)
SAME_WORK = "-samework"


def _time_ratio(ours: dict, off: dict, timer: str | None = None) -> str | None:
    """``"R× (phase)"``, official seconds / ours, on ``timer`` where both arms have it (the timer a record names: the
    same work on both sides, F13), else on the first timing both have in name order; None where ours has no mean."""
    timer = timer if timer in ours and timer in off else next(
        (t for t in sorted(ours) if t.endswith("_seconds") and t in off), None)
    return f"{off[timer]['mean'] / ours[timer]['mean']:.2f}× ({_phase(timer)})" if timer and ours[timer].get("mean") \
        else None


def _same_work_ratio(record: dict | None) -> str | None:
    """``"same work, ours_<x>: R× (phase)"`` of a same-work record (the official arm against its one variant of ours,
    :func:`_time_ratio` on the timer the record names), None where there is none."""
    arms = (record or {}).get("arms") or {}
    variants = [a for a in arms if a.startswith("ours_")]
    if "official" not in arms or len(variants) != 1:
        return None
    ratio = _time_ratio(arms[variants[0]], arms["official"], record.get("timer"))
    return f"same work, {variants[0]}: {ratio}" if ratio else None


def summary_rows(records: dict[str, dict], explained: dict[str, list[str]] | None = None) -> list[list[str]]:
    """One row per record (:data:`SUMMARY_HEADER`): ours against the official code as released (the arm
    ``official``) on the record's headline metric, the difference and the spread verdict, the findings that explain
    it (``explained``: record name -> finding ids, from the findings' ``explains`` lists), and the first timed
    phase's ratio (and, where a ``<name>-samework`` record exists, the ratio on the same work: :data:`SAME_WORK`)."""
    rows = []
    for name, record in records.items():
        arms = record["arms"]
        if "ours" not in arms or "official" not in arms:
            continue
        ours, off = arms["ours"], arms["official"]
        metric = next((m for m in HEADLINE if m in ours and m in off), None)
        if metric is None:
            continue
        v = compare(_side("ours", ours, metric, record["seeds"]), _side("official", off, metric, record["seeds"]))
        # a record may name the timer that compares the same work on both sides (F13: ours less its extra tests)
        ratio = _time_ratio(ours, off, record.get("timer")) or "—"
        if same := _same_work_ratio(records.get(f"{name}{SAME_WORK}")):
            ratio += f"; {same} ({name}{SAME_WORK})"
        beyond = v.verdict in (HOLDS, DOES_NOT_HOLD)
        named = ", ".join((explained or {}).get(name, []))
        finding = named or ("none named yet" if beyond else "—")
        rows.append([f"{record.get('method', record.get('peer', name))} ({name})", METRICS[metric],
                     format_spread(off[metric]["values"]), format_spread(ours[metric]["values"]),
                     f"{v.difference:+.2f}" if v.difference is not None else "—",
                     AGREEMENT.get(v.verdict, v.label), finding, ratio, _official(record.get("official", {}))])
    return rows


def summary_section(records: dict[str, dict], explained: dict[str, list[str]] | None = None) -> list[str]:
    """The summary table (:func:`summary_rows`) as Markdown, with its lead line."""
    rows = summary_rows(records, explained)
    if not rows:
        return []
    return (["Ours against the official code as released, one row per record (details and the other arms below; "
             "time ratio = official seconds / ours):", ""] + _table(SUMMARY_HEADER, rows) + [""])


def load(records: Path, findings: Path) -> tuple[dict[str, dict], list[dict] | None, dict[str, list[str]]]:
    """(the run records by name, the findings, record name -> the ids of the findings that explain it)."""
    runs = sorted(p for p in Path(records).glob("*.json") if p.name != "equations.json")
    found = yaml.safe_load(Path(findings).read_text()) if Path(findings).exists() else None
    explained: dict[str, list[str]] = {}
    for f in found or []:
        for rec in f.get("explains") or []:
            explained.setdefault(rec, []).append(f["id"])
    return {path.stem: json.loads(path.read_text()) for path in runs}, found, explained


def findings_section(findings: list[dict] | None) -> list[str]:
    lines = ["## Differences found and what was done", ""]
    if not findings:
        return lines + ["None recorded yet (benchmarks/peers/findings.yaml).", ""]
    rows = [[f.get("id", ""), f.get("method", ""), f.get("what", ""), f.get("official", ""), f.get("ours", ""),
             f.get("effect", ""), f.get("resolution", "")] for f in findings]
    return lines + _table(["id", "method", "difference", "official", "ours", "effect (measured)", "resolution"],
                          rows) + [""]


def render(records: Path, findings: Path) -> str:
    """The whole report (module docstring) from the folder of records and the findings file."""
    eq = records / "equations.json"
    runs = sorted(p for p in records.glob("*.json") if p.name != "equations.json")
    out = ["# Our methods against their authors' code", "",
           "Each row calls or runs the authors' released code, unmodified (a shim around it, listed, adapts the "
           "device, the data root and the partition), beside ours on the same inputs. The official code is fetched "
           "into a scratch folder by whoever runs the harness and is never committed (benchmarks/peers/README.md). "
           "Generated by `python -m osfl.stages.peers` from benchmarks/peers/records/ and "
           "benchmarks/peers/findings.yaml; edit those, not this file.", ""]
    out += equations_section(json.loads(eq.read_text()) if eq.exists() else None)
    out += ["## Runs: the same partition, models and steps", ""]
    if not runs:
        out += ["Not run: " + "; ".join(f"`{cmd}`" for n, cmd in RERUN.items() if n != "equations.json") + ".", ""]
    records, found, explained = load(records, findings)
    out += summary_section(records, explained)
    for name, record in records.items():
        out += run_section(name, record)
    out += findings_section(found)
    return "\n".join(out).rstrip("\n") + "\n"
