"""Seeds, spread and the claim verdicts of every paper report.

Seeds. A pipeline that repeats a run with other seeds names each repeat ``<run>-s<seed>`` beside the base run
``<run>`` (whose seed is the params' ``seed``). :func:`seed_runs` finds the runs of one name that exist,
:func:`seed_values` reads one value from each; a report then shows the mean, the SAMPLE standard deviation (ddof = 1)
and n (:func:`mean_std`, :func:`format_spread`).

Verdicts. Each claim of a paper that our runs can test gets one :class:`Verdict`: ``holds``, ``does not hold``,
``within spread``, ``not judged`` (with its reason), ``not run`` or ``not testable here``, with the numbers it was
decided from (its evidence). A comparison "A is above B" (:func:`compare`) follows these rules:

1. Same seeds only. Each side is a mapping seed -> value (:class:`Side`); only the seeds both sides have count, and
   the evidence names them and their number n. No common seed: ``not judged: no common seed``.
2. Three seeds. Decided only on n >= :data:`MIN_SEEDS` (3) common seeds; with fewer, ``not judged (n = k)``, whose
   basis still gives the difference and the spread the runs offer (std for n = 2, swing for n = 1, :func:`swing`).
3. Spread. d = mean(A) - mean(B) decides only beyond the larger of the two sides' sample stds: d > spread ``holds``,
   d < -spread ``does not hold``, otherwise ``within spread`` (a tie always is).
4. Degenerate inputs, at every profile: clients at chance (:func:`clients_at_chance`), a server curve at chance
   after epoch 0 or at its final epoch (:func:`curve_at_chance`), a failed guard or a final accuracy below its floor
   (:func:`regime_failure`), constant generator samples (:func:`constant_samples`): ``not judged: <reason>``.
5. Evidence. Every verdict keeps its numbers: each side (mean ± std (n)), the seeds, the difference, the spread.

A claim made of several comparisons (every column, every rival) combines them with :func:`every`: ``does not hold``
when any part does not hold (one counter-example is enough), ``holds`` when every part holds, ``within spread``
when every part is judged and one is within spread, else ``not judged`` (a part on fewer than three seeds leaves the
claim undecided); parts that did not run are left out (and named); none ran: ``not run``. :func:`above_all` is "A
above every rival" (the claimed best; ``below=True``: the claimed worst). Claims that are not comparisons of our runs
keep their own test and take ``not judged`` from degenerate inputs; the paper's own arithmetic reads ``consistent``
or ``inconsistent``, never ``holds``. The spread describes seed and epoch noise; it is not a significance test.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .naming import seed_run

__all__ = ["CHANCE_MARGIN", "CONSISTENT", "DOES_NOT_HOLD", "INCONSISTENT", "HOLDS", "MIN_SEEDS", "NOT_JUDGED",
           "NOT_RUN", "NOT_TESTABLE", "VERDICTS", "WITHIN", "Side", "Verdict", "above_all", "clients_at_chance",
           "compare", "constant_samples", "count_verdicts", "curve_at_chance", "every", "format_spread", "late_half",
           "mean_std", "on_seeds", "regime_failure", "seed_runs", "seed_values", "swing", "values_of", "verdict_label"]


def seed_runs(runs: Mapping[str, Any], name: str, seeds: Iterable = (), base_seed: Any = 0) -> dict[Any, Any]:
    """``{seed: run}`` of the runs of ``name`` that exist in ``runs``: the base run ``name`` (seed ``base_seed``)
    and ``<name>-s<seed>`` for each of ``seeds``, in that order (:func:`.naming.seed_run`: FedHydra's layout, whose
    base seed's runs carry no ``-s<seed>``)."""
    out: dict[Any, Any] = {}
    for s in (base_seed, *(s for s in seeds if s != base_seed)):
        if (folder := seed_run(name, s, base_seed)) in runs:
            out[s] = runs[folder]
    return out


def seed_values(runs: Mapping[str, Any], name: str, get: Callable[[Any], float | None], seeds: Iterable = (),
                base_seed: Any = 0, same: Callable[[Any], Any] | None = None,
                left_out: list | None = None) -> list[float]:
    """``get(run)`` over the seed runs of ``name`` (:func:`seed_runs`), leaving out the runs where it is None.

    With ``same``, only the runs for which ``same(run)`` equals that of the first run with a value count (seeds of
    one configuration; e.g. the reading a run recorded); the seeds of the others are appended to ``left_out``."""
    out: list[float] = []
    ref = None
    for seed, run in seed_runs(runs, name, seeds, base_seed).items():
        v = get(run)
        if v is None:
            continue
        if same is not None:
            if not out:
                ref = same(run)
            elif same(run) != ref:
                if left_out is not None:
                    left_out.append(seed)
                continue
        out.append(float(v))
    return out


def values_of(value) -> list[float]:
    """A number, or a sequence of numbers (one per seed), as a list; None and NaN are left out."""
    if value is None:
        return []
    seq = list(value) if isinstance(value, (list, tuple)) else [value]
    return [float(v) for v in seq if v is not None and not math.isnan(float(v))]


def mean_std(values) -> tuple[float, float, int]:
    """(mean, sample std with ddof = 1, n) of ``values`` (:func:`values_of`); std NaN for n < 2, mean NaN for n = 0."""
    v = values_of(values)
    if not v:
        return math.nan, math.nan, 0
    return statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else math.nan, len(v)


def format_spread(values, precision: int = 2) -> str:
    """``"58.65 ± 1.20 (n=3)"`` for more than one value, the plain number for one, ``"—"`` for none."""
    mean, std, n = mean_std(values)
    if n <= 1:
        return f"{mean:.{precision}f}" if n else "\u2014"
    return f"{mean:.{precision}f} \u00b1 {std:.{precision}f} (n={n})"


HOLDS, DOES_NOT_HOLD, WITHIN, NOT_JUDGED = "holds", "does not hold", "within spread", "not judged"
NOT_RUN, NOT_TESTABLE = "not run", "not testable here"
CONSISTENT, INCONSISTENT = "consistent", "inconsistent"  # the paper's own numbers checked: arithmetic, no run
VERDICTS = (HOLDS, DOES_NOT_HOLD, WITHIN, NOT_JUDGED, NOT_RUN, NOT_TESTABLE, CONSISTENT, INCONSISTENT)
CHANCE_MARGIN = 1.0  # points of accuracy around 100 / classes that count as chance
MIN_SEEDS = 3  # common seeds a comparison needs before it is decided
_EPS = 1e-9  # a difference "exceeds" the spread by more than float noise

#: the rule as the reports' README.md files state it
VERDICT_RULE = (
    "Each verdict compares runs of the same seeds only (the evidence names them and their number n; no common seed: "
    "\"not judged: no common seed\"), and is decided only on n >= 3 seeds: with fewer it reads \"not judged (n = k)\", "
    "with the difference and the spread it would have been held against (the sample std for two seeds, the runs' "
    "epoch-to-epoch swing over the last half of their curves for one). On n >= 3 seeds it says \"holds\" or \"does "
    "not hold\" only when the difference of the means exceeds the larger of the two sides' sample standard deviations "
    "(ddof = 1), else \"within spread\". Runs with degenerate inputs are \"not judged\" with the reason, at every "
    "profile: clients at chance (mean local accuracy within 1 point of 100 / classes, or all clients exactly equal), a "
    "server curve that never leaves chance after epoch 0 (the model before server training never counts) or whose "
    "final epoch is back at chance, a failed regime guard or a final accuracy below its floor, a generator whose "
    "samples are constant. A claim over several comparisons does not hold when one of them does not, holds when all "
    "do, and is else within spread (or not judged). A check of the paper's own arithmetic (its formulas, its counts) "
    "rests on no run: \"consistent\" or \"inconsistent\", never \"holds\". Code: src/osfl/reporting/spread.py.")


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict (one of :data:`VERDICTS`), the numbers behind it (``evidence``), why it was not judged or
    cannot be tested (``reason``), and for a comparison its ``basis``: the seeds, n, the difference and the spread.
    ``difference`` is the comparison's d (None for anything else), used to pick the nearest rival."""
    verdict: str
    evidence: str = ""
    reason: str = ""
    basis: str = ""
    difference: float | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")

    @property
    def label(self) -> str:
        """``"not judged: no common seed"``, ``"not judged (n = 2)"``: the category, with the reason when there is
        one (a seed count in brackets)."""
        return verdict_label(self.verdict, self.reason)

    @property
    def full_evidence(self) -> str:
        """The evidence and the basis, ``"; "``-joined."""
        return "; ".join(x for x in (self.evidence, self.basis) if x)

    def text(self) -> str:
        """``"holds (A 59.00 vs B 52.00); seeds 0, 1 (n = 2): difference +7.00, spread 2.83 (larger sample std)"``."""
        out = self.label + (f" ({self.evidence})" if self.evidence else "")
        return out + (f"; {self.basis}" if self.basis else "")

    def record(self, **keys: Any) -> dict:
        """A claims.json entry: ``keys`` (artifact, claim), the verdict, the evidence (with the basis) and the reason
        when there is one."""
        rec = {**keys, "verdict": self.verdict, "evidence": self.full_evidence or "-"}
        if self.reason:
            rec["reason"] = self.reason
        return rec


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its name in the evidence, ``values`` (seed -> number), ``swings`` (seed -> the
    epoch-to-epoch swing of that seed's curve over the claim's window, where it has one) and ``degenerate`` (seed
    -> why that seed's run cannot be judged; None or absent: it can)."""
    name: str
    values: Mapping[Any, float | None]
    swings: Mapping[Any, float | None] = field(default_factory=dict)
    degenerate: Mapping[Any, str | None] = field(default_factory=dict)


def _numbers(values: Mapping[Any, float | None]) -> dict[Any, float]:
    return {s: float(v) for s, v in values.items() if v is not None and not math.isnan(float(v))}


def _seeds(seeds: Sequence) -> str:
    return f"seed{'s' if len(seeds) != 1 else ''} {', '.join(map(str, seeds)) or 'none'}"


def compare(a: Side, b: Side, precision: int = 2) -> Verdict:
    """The claim "``a`` is above ``b``" under rules 1-4 of the module docstring."""
    va, vb = _numbers(a.values), _numbers(b.values)
    common = [s for s in va if s in vb]
    if not common:
        return Verdict(NOT_JUDGED, f"{a.name}: {_seeds(list(va))}; {b.name}: {_seeds(list(vb))}",
                       reason="no common seed")
    xa, xb = [va[s] for s in common], [vb[s] for s in common]
    evidence = f"{a.name} {format_spread(xa, precision)} vs {b.name} {format_spread(xb, precision)}"
    seeds = f"{_seeds(common)} (n = {len(common)})"
    bad = [r for s in common for r in (a.degenerate.get(s), b.degenerate.get(s)) if r]
    if bad:
        return Verdict(NOT_JUDGED, evidence, reason="; ".join(dict.fromkeys(bad)), basis=seeds)
    diff = statistics.fmean(xa) - statistics.fmean(xb)
    spread, what = None, ""
    if len(common) >= 2:
        spread, what = max(statistics.stdev(xa), statistics.stdev(xb)), "larger sample std"
    else:
        swings = [float(x) for x in (a.swings.get(common[0]), b.swings.get(common[0]))
                  if x is not None and not math.isnan(float(x))]
        if swings:
            spread = max(swings)
            what = "larger epoch-to-epoch swing" if len(set(swings)) == 2 else "epoch-to-epoch swing"
    against = f"spread {spread:.{precision}f} ({what})" if spread is not None else "no spread"
    basis = f"{seeds}: difference {diff:+.{precision}f}, {against}"
    if len(common) < MIN_SEEDS:
        return Verdict(NOT_JUDGED, evidence, reason=f"n = {len(common)}", basis=basis, difference=diff)
    verdict = HOLDS if diff > spread + _EPS else DOES_NOT_HOLD if diff < -spread - _EPS else WITHIN
    return Verdict(verdict, evidence, basis=basis, difference=diff)


def on_seeds(verdict: Verdict, seeds: Iterable) -> Verdict:
    """A claim decided by a test of its own (not :func:`compare`: a run's clustering, a gap to the paper) kept only
    when it rests on at least :data:`MIN_SEEDS` seeds; else ``not judged (n = k)``, with what it would have said in
    its basis. A verdict that is not ``holds``, ``does not hold`` or ``within spread`` passes as it is."""
    seeds = sorted(set(seeds), key=str)
    if verdict.verdict not in (HOLDS, DOES_NOT_HOLD, WITHIN):
        return verdict
    basis = f"{_seeds(seeds)} (n = {len(seeds)})" + (f"; {verdict.basis}" if verdict.basis else "")
    if len(seeds) >= MIN_SEEDS:
        return Verdict(verdict.verdict, verdict.evidence, verdict.reason, basis, verdict.difference)
    return Verdict(NOT_JUDGED, verdict.evidence, reason=f"n = {len(seeds)}",
                   basis=f"{basis}; on these seeds it would read \"{verdict.verdict}\"", difference=verdict.difference)


def verdict_label(verdict: str, reason: str | None = "") -> str:
    """A verdict as the reports print it: ``"holds"``, ``"not judged: no common seed"``, ``"not judged (n = 2)"``
    (a claims.json record's ``verdict`` and ``reason`` too)."""
    if not reason:
        return verdict
    return f"{verdict} ({reason})" if _is_count(reason) else f"{verdict}: {reason}"


def _is_count(reason: str) -> bool:  # a not-judged reason that is only a seed count, "n = 2"
    return reason.startswith("n = ") and reason[4:].isdigit()


def _combined(verdicts: Sequence[Verdict]) -> tuple[str, str]:
    """(verdict, reason) of parts: any does not hold; all hold; all judged, one within spread; else not judged."""
    cats = {v.verdict for v in verdicts}
    if DOES_NOT_HOLD in cats:
        return DOES_NOT_HOLD, ""
    if cats == {HOLDS}:
        return HOLDS, ""
    if cats <= {HOLDS, WITHIN}:
        return WITHIN, ""
    reasons = list(dict.fromkeys(v.reason for v in verdicts if v.verdict == NOT_JUDGED and v.reason))
    counts = [r for r in reasons if _is_count(r)]  # the fewest seeds stands for them all, after the other reasons
    fewest = [min(counts, key=lambda r: int(r[4:]))] if counts else []
    return NOT_JUDGED, "; ".join([r for r in reasons if not _is_count(r)] + fewest)


def every(parts: Iterable[tuple[str, Verdict]]) -> Verdict:
    """A claim that must hold in every part (``(label, verdict)`` pairs: columns, rows, panels): the combination of
    the module docstring. Parts that did not run (or cannot be tested) are named in the evidence and left out of the
    decision; none left: ``not run``."""
    parts = list(parts)
    judged = [v for _, v in parts if v.verdict not in (NOT_RUN, NOT_TESTABLE)]
    evidence = "; ".join(f"{k + ': ' if k else ''}{v.label}" + (f" ({v.full_evidence})" if v.full_evidence else "")
                         for k, v in parts) or "-"
    if not judged:
        return Verdict(NOT_RUN, evidence)
    verdict, reason = _combined(judged)
    return Verdict(verdict, evidence, reason=reason)


def _brief(v: Verdict, known: str = "") -> str:
    """A comparison as one item of a list: its evidence, then its reason (unless it is ``known``) and basis in
    brackets."""
    reason = f"not judged: {v.reason}" if v.reason and v.reason != known else ""
    inner = "; ".join(x for x in (reason, v.basis) if x)
    return f"{v.evidence} ({inner})" if inner else v.evidence


def above_all(a: Side, rivals: Iterable[Side], below: bool = False, precision: int = 2) -> Verdict:
    """"``a`` is above every rival" (``below``: below every rival) by :func:`compare` against each, combined as
    :func:`every` does. The evidence names the comparisons that decided it (the ones that do not hold, else those
    within spread, else those not judged; for ``holds`` the nearest rival) and how many rivals were passed beyond
    the spread."""
    pairs = [compare(r, a, precision) if below else compare(a, r, precision) for r in rivals]
    if not pairs:
        return Verdict(NOT_RUN, "no rival ran")
    verdict, reason = _combined(pairs)
    decided = [v for v in pairs if v.verdict == verdict]
    if verdict == HOLDS:
        decided = [min(decided, key=lambda v: v.difference)]
    count = sum(v.verdict == HOLDS for v in pairs)
    lead = f"{'below' if below else 'above'} {count} of {len(pairs)} beyond the spread; " if len(pairs) > 1 else ""
    return Verdict(verdict, lead + "; ".join(_brief(v, reason) for v in decided), reason=reason)


def late_half(values: Sequence[float]) -> list[float]:
    """The last half of a curve (from index len // 2): the epochs a final accuracy and a late collapse are about."""
    return list(values)[len(values) // 2:]


def swing(values: Sequence[float] | None) -> float | None:
    """Mean absolute change between consecutive values (a curve's epoch-to-epoch swing over the window passed);
    None for fewer than two values."""
    v = [float(x) for x in values or []]
    if len(v) < 2:
        return None
    return statistics.fmean(abs(y - x) for x, y in zip(v, v[1:]))


def clients_at_chance(clients: Mapping | None, num_classes: int, classes_held: float | None = None) -> str | None:
    """Why pre-trained clients (a ``clients.json`` record: ``local_acc_mean`` and/or ``per_client``
    ``local_test_acc``) are degenerate, or None: their mean local accuracy is within :data:`CHANCE_MARGIN` of chance
    (100 / ``num_classes``), or every client scores exactly the same. ``classes_held``: the classes a client holds
    (e.g. HFLDD's C); where even a perfect client cannot beat chance on the whole test set (C = 1: it predicts its
    one class, 10 % of a balanced test set), its accuracy tells nothing, and None is returned."""
    if not clients:
        return None
    if classes_held is not None and 100.0 * classes_held / num_classes <= 100.0 / num_classes + CHANCE_MARGIN:
        return None
    accs = [float(c["local_test_acc"]) for c in clients.get("per_client") or [] if "local_test_acc" in c]
    mean = clients.get("local_acc_mean", statistics.fmean(accs) if accs else None)
    same = len(accs) > 1 and len(set(accs)) == 1
    chance = 100.0 / num_classes
    if mean is not None and abs(float(mean) - chance) <= CHANCE_MARGIN:
        return (f"clients at chance (mean local accuracy {float(mean):.2f} %, chance {chance:.2f} %"
                + (f"; all {len(accs)} exactly {accs[0]:.2f} %)" if same else ")"))
    if same:
        return f"clients all equal (all {len(accs)} exactly {accs[0]:.2f} %)"
    return None


def curve_at_chance(accs: Sequence[float] | None, num_classes: int, *, epoch0: bool,
                    floor: float | None = None) -> str | None:
    """Why a server's test-accuracy curve is degenerate, or None: after epoch 0 it never rises above ``floor``
    (default chance + :data:`CHANCE_MARGIN`), or its final epoch is back at or below it.

    ``epoch0``: the curve's first point is epoch 0, the model before any server training (the live curves of the
    one-shot servers); it never counts as leaving chance, and a curve that is only that point (a server without
    epochs: FedAvg, OT, the ensemble) is judged by it, its final model. HFLDD's round curves start at round 1."""
    v = [float(x) for x in accs or []]
    trained = v[1:] if epoch0 and len(v) > 1 else v
    if not trained:
        return None
    chance = 100.0 / num_classes
    floor = chance + CHANCE_MARGIN if floor is None else float(floor)
    where = f"chance {chance:.2f} %" + (f", floor {floor:.2f} %" if abs(floor - chance - CHANCE_MARGIN) > _EPS else "")
    if max(trained) <= floor:
        after = " after epoch 0" if len(trained) < len(v) else ""
        return (f"server curve never left chance{after} ({len(trained)} epochs, {min(trained):.2f}-{max(trained):.2f} "
                f"%, {where})")
    if trained[-1] <= floor:
        return f"server curve ends at chance (final {trained[-1]:.2f} %, best {max(trained):.2f} %, {where})"
    return None


def regime_failure(record: Mapping | None, num_classes: int = 10, who: str = "", chance: bool = True) -> str | None:
    """Why a run record cannot feed a verdict, or None: a regime guard it recorded failed (:mod:`osfl.cpu_profile`:
    the best epoch against its floor), or its final accuracy (``acc_final``) lies below that floor too (the guards
    look at the best epoch only; the final one counts as well); without a recorded server floor, at any profile, a
    final accuracy within :data:`CHANCE_MARGIN` of chance or below it (``chance=False``: the recorded floors alone,
    as a table's cells are kept: a number shown is still a number, and the verdicts apply the chance rule)."""
    if not record:
        return None
    guards = record.get("guards") or {}
    who = f"{who} " if who else ""
    failed = [f"{name} ({g['value']:.2f} < {g['floor']:.2f})" for name, g in guards.items() if not g.get("passed", True)]
    if failed:
        return f"{who}failed the regime guard {', '.join(failed)}"
    final = record.get("acc_final")
    if final is None:
        return None
    gain = guards.get("server_gain_min")
    check_chance, level = chance, 100.0 / num_classes
    if gain is not None and float(final) < float(gain["floor"]):
        return f"{who}final accuracy {float(final):.2f} % below the regime guard's floor {float(gain['floor']):.2f} %"
    if check_chance and gain is None and float(final) <= level + CHANCE_MARGIN:
        return f"{who}final accuracy {float(final):.2f} % at chance ({level:.2f} %)"
    return None


def constant_samples(images) -> str | None:
    """Why a generator's recorded samples are degenerate, or None: every sample is the same image."""
    import numpy as np

    a = np.asarray(images)
    if a.ndim == 0 or a.shape[0] == 0:
        return None
    if bool((a == a[:1]).all()):
        return f"generator samples constant ({a.shape[0]} samples, all the same image)"
    return None


def count_verdicts(verdicts: Iterable[Verdict | str]) -> dict[str, int]:
    """How many verdicts of each category (:data:`VERDICTS`), keyed with ``_`` for spaces (summary.json)."""
    cats = [v.verdict if isinstance(v, Verdict) else v for v in verdicts]
    return {c.replace(" ", "_"): sum(1 for x in cats if x == c) for c in VERDICTS}
