"""The one claim/verdict type of every paper report (osfl.reporting.spread): each rule of its docstring, on numbers
chosen so that breaking the rule changes the verdict.

1. same seeds only; 2. holds / does not hold only beyond the spread (n >= 2: the larger sample std; one seed: the
caller's swing, else not judged); 3. degenerate inputs not judged; 4. the evidence keeps the numbers.
"""
from __future__ import annotations

import numpy as np
import pytest

from osfl.reporting.spread import (
    DOES_NOT_HOLD,
    HOLDS,
    NOT_JUDGED,
    NOT_RUN,
    WITHIN,
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
    swing,
)


def seeds(*values: float, start: int = 0) -> dict[int, float]:
    return {start + k: v for k, v in enumerate(values)}


# ---------------------------------------------------------------------------------------------- rule 1: same seeds


def test_only_the_common_seeds_count():
    # seed 0 of A and seed 2 of B are alone: with them the means would be 60 vs 75 (does not hold); on seed 1 alone
    # A is 10 points above B
    a = Side("A", {0: 50.0, 1: 70.0}, swings={1: 1.0})
    b = Side("B", {1: 60.0, 2: 90.0}, swings={1: 1.0})
    v = compare(a, b)
    assert v.verdict == HOLDS
    assert v.evidence == "A 70.00 vs B 60.00"
    assert v.basis == "seed 1 (n = 1): difference +10.00, spread 1.00 (epoch-to-epoch swing)"


def test_three_seeds_against_one_uses_seed_0_only():
    """FedHydra Table 6 on main: the 3-seed mean 54.90 of (1, 1) set against seed 0 of (1, 0.5); seed 0 vs seed 0."""
    one_one = Side("(1,1)", {0: 61.24, 1: 53.69, 2: 49.77}, swings={0: 5.26, 1: 6.0, 2: 7.0})
    half = Side("(1,0.5)", {0: 62.53}, swings={0: 4.0})
    v = compare(one_one, half)
    assert v.verdict == WITHIN and "(1,1) 61.24 vs (1,0.5) 62.53" in v.evidence
    assert "seed 0 (n = 1): difference -1.29, spread 5.26" in v.basis


def test_no_common_seed_is_not_judged():
    v = compare(Side("A", {0: 70.0, 1: 71.0}), Side("B", {2: 10.0}))
    assert (v.verdict, v.reason, v.label) == (NOT_JUDGED, "no common seed", "not judged: no common seed")
    assert v.evidence == "A: seeds 0, 1; B: seed 2"


def test_missing_values_are_no_seed():
    v = compare(Side("A", {0: None, 1: float("nan")}), Side("B", {0: 1.0, 1: 2.0}))
    assert v.label == "not judged: no common seed"


# ------------------------------------------------------------------------------------------------- rule 2: spread


def test_several_seeds_within_the_larger_sample_std():
    a = Side("A", seeds(69.0, 70.0, 71.0))  # mean 70, std 1
    assert compare(a, Side("B", seeds(67.0, 67.0, 67.0))).verdict == HOLDS  # 3 > 1
    assert compare(a, Side("B", seeds(73.0, 73.0, 73.0))).verdict == DOES_NOT_HOLD
    assert compare(a, Side("B", seeds(70.5, 70.5, 70.5))).verdict == WITHIN  # 0.5 <= 1
    # B's std (2) is the larger: 3 points exceed it, 2 points do not
    v = compare(a, Side("B", seeds(65.0, 67.0, 69.0)))
    assert v.verdict == HOLDS and v.basis == "seeds 0, 1, 2 (n = 3): difference +3.00, spread 2.00 (larger sample std)"
    assert v.evidence == "A 70.00 ± 1.00 (n=3) vs B 67.00 ± 2.00 (n=3)"
    assert compare(a, Side("B", seeds(66.0, 68.0, 70.0))).verdict == WITHIN
    # a tie is always within the spread, even with no spread at all
    assert compare(Side("A", seeds(5.0, 5.0)), Side("B", seeds(5.0, 5.0))).verdict == WITHIN


def test_the_std_is_taken_over_the_common_seeds():
    a = Side("A", {0: 69.0, 1: 70.0, 2: 71.0, 3: 200.0})  # seed 3 has no partner: its std would be ~65
    v = compare(a, Side("B", seeds(66.0, 66.0, 66.0)))
    assert v.verdict == HOLDS and "spread 1.00" in v.basis and "n = 3" in v.basis


def test_one_seed_needs_a_swing():
    a, b = Side("A", {0: 70.0}), Side("B", {0: 60.0})
    v = compare(a, b)
    assert v.label == "not judged: one seed, no spread" and v.evidence == "A 70.00 vs B 60.00"
    assert compare(Side("A", {0: 70.0}, swings={0: 9.0}), b).verdict == HOLDS  # one side's swing suffices
    assert compare(Side("A", {0: 70.0}, swings={0: 11.0}), b).verdict == WITHIN
    both = compare(Side("A", {0: 70.0}, swings={0: 4.0}), Side("B", {0: 60.0}, swings={0: 10.0}))
    assert both.verdict == WITHIN and "spread 10.00 (larger epoch-to-epoch swing)" in both.basis  # the larger
    assert compare(Side("A", {0: 60.0}, swings={0: 2.0}), Side("B", {0: 70.0})).verdict == DOES_NOT_HOLD


def test_a_difference_equal_to_the_spread_does_not_exceed_it():
    assert compare(Side("A", {0: 63.0}, swings={0: 3.0}), Side("B", {0: 60.0})).verdict == WITHIN


def test_swing_and_late_half():
    assert swing([1.0, 3.0, 2.0]) == pytest.approx(1.5)
    assert swing([5.0]) is None and swing(None) is None
    curve = list(range(21))  # epochs 0..20: the last half is epochs 10..20
    assert late_half(curve) == list(range(10, 21))
    # FedHydra's fmnist Dir(0.5) seed-0 curve: a 2.98-point drop from its peak inside a 5.26-point swing
    fh = [9.95, 21.03, 25.17, 24.24, 28.83, 18.48, 26.56, 22.7, 42.65, 36.39, 42.13, 42.11, 60.62, 64.22, 58.38,
          59.43, 64.08, 59.85, 53.18, 61.18, 61.24]
    assert swing(late_half(fh)) == pytest.approx(5.263)
    peak = Side("best", {0: max(fh)}, swings={0: swing(late_half(fh))})
    assert compare(peak, Side("final", {0: fh[-1]})).verdict == WITHIN


# -------------------------------------------------------------------------------------------- rule 3: degenerate


def test_clients_at_chance_or_all_equal():
    at_chance = {"local_acc_mean": 10.0, "per_client": [{"local_test_acc": 10.0}] * 100}
    assert clients_at_chance(at_chance, 10) == ("clients at chance (mean local accuracy 10.00 %, chance 10.00 %; all "
                                                "100 exactly 10.00 %)")
    assert clients_at_chance({"local_acc_mean": 9.0}, 10).startswith("clients at chance")  # within 1 point
    assert clients_at_chance({"local_acc_mean": 11.1}, 10) is None
    assert clients_at_chance({"local_acc_mean": 3.5}, 47) is None  # EMNIST: chance 2.13
    assert clients_at_chance({"local_acc_mean": 3.0}, 47)
    assert clients_at_chance({"per_client": [{"local_test_acc": 10.5}, {"local_test_acc": 9.6}]}, 10)  # mean only
    same = {"local_acc_mean": 55.0, "per_client": [{"local_test_acc": 55.0}] * 3}
    assert clients_at_chance(same, 10) == "clients all equal (all 3 exactly 55.00 %)"
    assert clients_at_chance({"local_acc_mean": 55.0, "per_client": [{"local_test_acc": 55.0}]}, 10) is None
    assert clients_at_chance(None, 10) is None


def test_flat_curve_at_chance():
    assert flat_at_chance([9.95, 10.0, 10.9, 9.1], 10) == ("server curve flat at chance (4 epochs, 9.10-10.90 %, "
                                                           "chance 10.00 %)")
    assert flat_at_chance([9.95, 11.88, 10.0], 10) is None  # one epoch above chance + 1
    assert flat_at_chance([], 10) is None


def test_constant_samples():
    assert constant_samples(np.zeros((20, 1, 4, 4), dtype=np.uint8)).startswith("generator samples constant")
    same = np.repeat(np.arange(16).reshape(1, 1, 4, 4), 5, axis=0)
    assert constant_samples(same) == "generator samples constant (5 samples, all the same image)"
    varied = same.copy()
    varied[3, 0, 0, 0] = 99
    assert constant_samples(varied) is None


def test_degenerate_inputs_are_not_judged_at_a_common_seed_only():
    reason = "clients at chance (mean local accuracy 10.00 %, chance 10.00 %)"
    a = Side("A", {0: 80.0, 1: 81.0}, swings={0: 1.0, 1: 1.0}, degenerate={0: reason, 1: None})
    v = compare(a, Side("B", {0: 60.0}, swings={0: 1.0}))
    assert v.label == f"not judged: {reason}" and v.evidence == "A 80.00 vs B 60.00"
    assert compare(a, Side("B", {1: 60.0})).verdict == HOLDS  # seed 0 is not compared


# ------------------------------------------------------------------------------------ several parts, evidence


def test_every_part_must_hold():
    h = Verdict(HOLDS, "x")
    f = Verdict(DOES_NOT_HOLD, "y")
    w = Verdict(WITHIN, "z")
    n = Verdict(NOT_JUDGED, "u", reason="one seed, no spread")
    r = Verdict(NOT_RUN, "not compared")
    assert every([("a", h), ("b", h)]).verdict == HOLDS
    assert every([("a", h), ("b", w), ("c", f), ("d", n)]).verdict == DOES_NOT_HOLD  # one counter-example
    assert every([("a", h), ("b", w), ("c", n)]).verdict == WITHIN
    v = every([("a", h), ("c", n), ("d", r)])
    assert v.label == "not judged: one seed, no spread"
    assert v.evidence == "a: holds (x); c: not judged: one seed, no spread (u); d: not run (not compared)"
    assert every([("d", r)]).verdict == NOT_RUN and every([]).verdict == NOT_RUN


def test_above_all_names_what_decided_it():
    best = Side("A", {0: 70.0}, swings={0: 1.0})
    rivals = [Side("B", {0: 60.0}), Side("C", {0: 68.0}), Side("D", {0: 69.5})]
    v = above_all(best, rivals)
    assert v.verdict == WITHIN  # D is 0.5 below, inside the swing
    assert v.evidence == ("above 2 of 3 beyond the spread; A 70.00 vs D 69.50 (seed 0 (n = 1): difference +0.50, "
                          "spread 1.00 (epoch-to-epoch swing))")
    v = above_all(best, rivals[:2])
    assert v.verdict == HOLDS and "A 70.00 vs C 68.00" in v.evidence and "vs B" not in v.evidence  # the nearest
    v = above_all(best, rivals + [Side("E", {0: 72.0})])
    assert v.verdict == DOES_NOT_HOLD and "A 70.00 vs E 72.00" in v.evidence and "vs D" not in v.evidence
    worst = above_all(Side("W", {0: 10.0}, swings={0: 1.0}), rivals, below=True)
    assert worst.verdict == HOLDS and worst.evidence.startswith("below 3 of 3")
    assert "B 60.00 vs W 10.00" in worst.evidence
    assert above_all(best, []).verdict == NOT_RUN


def test_verdict_text_record_and_counts():
    v = compare(Side("OFedED", seeds(60.0, 58.0)), Side("Co-Boosting", seeds(50.0, 54.0)))
    assert v.text() == ("holds (OFedED 59.00 ± 1.41 (n=2) vs Co-Boosting 52.00 ± 2.83 (n=2)); seeds 0, 1 (n = 2): "
                        "difference +7.00, spread 2.83 (larger sample std)")
    n = compare(Side("A", {0: 1.0}), Side("B", {0: 2.0}))
    assert n.record(artifact="t", claim="c") == {"artifact": "t", "claim": "c", "verdict": "not judged",
                                                 "evidence": "A 1.00 vs B 2.00; seed 0 (n = 1)",
                                                 "reason": "one seed, no spread"}
    assert count_verdicts([v, n, "within spread"]) == {"holds": 1, "does_not_hold": 0, "within_spread": 1,
                                                       "not_judged": 1, "not_run": 0, "not_testable_here": 0}
    with pytest.raises(ValueError):
        Verdict("fails")


def test_one_class_clients_cannot_beat_chance_so_their_accuracy_judges_nothing():
    from osfl.reporting.spread import clients_at_chance

    ten = {"per_client": [{"local_test_acc": 10.0}] * 5, "local_acc_mean": 10.0}
    assert clients_at_chance(ten, 10, classes_held=1) is None  # a perfect one-class client scores 10 %
    assert "clients at chance" in clients_at_chance(ten, 10, classes_held=2)
    assert "clients at chance" in clients_at_chance(ten, 10)
