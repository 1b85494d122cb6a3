"""The one claim/verdict type of every paper report (osfl.reporting.spread): each rule of its docstring, on numbers
chosen so that breaking the rule changes the verdict.

1. same seeds only; 2. decided only on n >= 3 common seeds, else "not judged (n = k)" with the difference and the
spread it would face; 3. holds / does not hold only beyond the larger sample std; 4. degenerate inputs (at chance
after epoch 0 or at the final epoch, failed guards) not judged; 5. the evidence keeps the numbers.
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
    curve_at_chance,
    late_half,
    on_seeds,
    regime_failure,
    swing,
)


def seeds(*values: float, start: int = 0) -> dict[int, float]:
    return {start + k: v for k, v in enumerate(values)}


# ---------------------------------------------------------------------------------------------- rule 1: same seeds


def test_only_the_common_seeds_count():
    # seed 0 of A and seed 4 of B are alone: with them the means would be 65 vs 75 (does not hold); on seeds 1-3
    # A is 10 points above B
    a = Side("A", {0: 30.0, 1: 70.0, 2: 71.0, 3: 69.0})
    b = Side("B", {1: 60.0, 2: 61.0, 3: 59.0, 4: 200.0})
    v = compare(a, b)
    assert v.verdict == HOLDS
    assert v.evidence == "A 70.00 ± 1.00 (n=3) vs B 60.00 ± 1.00 (n=3)"
    assert v.basis == "seeds 1, 2, 3 (n = 3): difference +10.00, spread 1.00 (larger sample std)"


def test_three_seeds_against_one_is_not_judged_but_keeps_its_numbers():
    """FedHydra Table 6 on main: the 3-seed mean of (1, 1) set against seed 0 of (1, 0.5): one common seed."""
    one_one = Side("(1,1)", {0: 61.24, 1: 53.69, 2: 49.77}, swings={0: 5.26, 1: 6.0, 2: 7.0})
    half = Side("(1,0.5)", {0: 62.53}, swings={0: 4.0})
    v = compare(one_one, half)
    assert (v.verdict, v.label) == (NOT_JUDGED, "not judged (n = 1)") and "(1,1) 61.24 vs (1,0.5) 62.53" in v.evidence
    assert v.basis == "seed 0 (n = 1): difference -1.29, spread 5.26 (larger epoch-to-epoch swing)"


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
    assert compare(Side("A", seeds(5.0, 5.0, 5.0)), Side("B", seeds(5.0, 5.0, 5.0))).verdict == WITHIN


def test_the_std_is_taken_over_the_common_seeds():
    a = Side("A", {0: 69.0, 1: 70.0, 2: 71.0, 3: 200.0})  # seed 3 has no partner: its std would be ~65
    v = compare(a, Side("B", seeds(66.0, 66.0, 66.0)))
    assert v.verdict == HOLDS and "spread 1.00" in v.basis and "n = 3" in v.basis


def test_fewer_than_three_seeds_are_not_judged_with_their_numbers():
    # one seed: far beyond any swing, still not judged; the basis says what it would have faced
    v = compare(Side("A", {0: 90.0}, swings={0: 1.0}), Side("B", {0: 10.0}))
    assert (v.verdict, v.label) == (NOT_JUDGED, "not judged (n = 1)") and v.evidence == "A 90.00 vs B 10.00"
    assert v.basis == "seed 0 (n = 1): difference +80.00, spread 1.00 (epoch-to-epoch swing)"
    assert compare(Side("A", {0: 70.0}), Side("B", {0: 60.0})).basis == "seed 0 (n = 1): difference +10.00, no spread"
    both = compare(Side("A", {0: 70.0}, swings={0: 4.0}), Side("B", {0: 60.0}, swings={0: 10.0}))
    assert "spread 10.00 (larger epoch-to-epoch swing)" in both.basis  # the larger
    # two seeds: the sample std is given, the verdict still waits for a third
    two = compare(Side("A", seeds(80.0, 82.0)), Side("B", seeds(10.0, 12.0)))
    assert two.label == "not judged (n = 2)"
    assert two.basis == "seeds 0, 1 (n = 2): difference +70.00, spread 1.41 (larger sample std)"
    assert compare(Side("A", seeds(80.0, 82.0, 81.0)), Side("B", seeds(10.0, 12.0, 11.0))).verdict == HOLDS


def test_a_difference_equal_to_the_spread_does_not_exceed_it():
    assert compare(Side("A", seeds(62.0, 63.0, 64.0)), Side("B", seeds(61.0, 62.0, 63.0))).verdict == WITHIN


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
    assert "difference +2.98, spread 5.26" in compare(peak, Side("final", {0: fh[-1]})).basis


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


def test_curve_at_chance_after_epoch_0_or_at_the_end():
    # never left chance
    assert curve_at_chance([9.95, 10.0, 10.9, 9.1], 10, epoch0=False) == (
        "server curve never left chance (4 epochs, 9.10-10.90 %, chance 10.00 %)")
    assert curve_at_chance([9.95, 11.88, 12.0], 10, epoch0=False) is None  # above chance + 1, and at the end
    assert curve_at_chance([], 10, epoch0=True) is None and curve_at_chance(None, 10, epoch0=True) is None
    # epoch 0 (the model before server training) never counts as leaving chance: FedDF at Dir(0.01)
    feddf = [32.41] + [10.0] * 20
    assert curve_at_chance(feddf, 10, epoch0=True) == (
        "server curve never left chance after epoch 0 (20 epochs, 10.00-10.00 %, chance 10.00 %)")
    assert curve_at_chance(feddf, 10, epoch0=False) is not None  # it ends at chance all the same
    # a run that left chance and fell back: FedHydra at 2c/c seed 1 ended at 8.31
    assert curve_at_chance([9.9, 25.0, 31.0, 8.31], 10, epoch0=True) == (
        "server curve ends at chance (final 8.31 %, best 31.00 %, chance 10.00 %)")
    # a server without epochs (one point, its final model) is judged by that point
    assert curve_at_chance([10.5], 10, epoch0=True) is not None and curve_at_chance([55.0], 10, epoch0=True) is None
    # a floor of the profile's guard in place of chance + 1
    assert "floor 15.00 %" in curve_at_chance([9.9, 30.0, 14.0], 10, epoch0=True, floor=15.0)


def test_regime_failure_reads_the_guards_and_the_final_epoch():
    ok = {"acc_best": 40.0, "acc_final": 38.0, "guards": {"server_gain_min": {"floor": 15.0, "value": 40.0,
                                                                              "passed": True}}}
    assert regime_failure(ok) is None and regime_failure(None) is None
    failed = {**ok, "guards": {"server_gain_min": {"floor": 15.0, "value": 12.0, "passed": False}}}
    assert regime_failure(failed, who="server") == "server failed the regime guard server_gain_min (12.00 < 15.00)"
    # best passed its guard, the final epoch fell below the same floor: the benchmark's FedHydra, 2c/c, seed 1
    ended = {**ok, "acc_final": 8.31}
    assert regime_failure(ended) == "final accuracy 8.31 % below the regime guard's floor 15.00 %"
    # no guard recorded (quick profile): the final accuracy against chance, at any profile
    assert regime_failure({"acc_final": 10.4}) == "final accuracy 10.40 % at chance (10.00 %)"
    assert regime_failure({"acc_final": 3.5}, num_classes=47) is None  # EMNIST: chance 2.13, 1 point above
    assert regime_failure({"acc_final": 30.0}) is None
    clients = {"local_acc_mean": 20.0, "guards": {"client_acc_mean_min": {"floor": 40.0, "value": 20.0,
                                                                          "passed": False}}}
    assert regime_failure(clients, who="clients").startswith("clients failed the regime guard client_acc_mean_min")


def test_on_seeds_keeps_a_verdict_only_on_three_seeds():
    v = Verdict(HOLDS, "H = 10, 10, 11")
    kept = on_seeds(v, [0, 1, 2])
    assert (kept.verdict, kept.basis) == (HOLDS, "seeds 0, 1, 2 (n = 3)")
    short = on_seeds(Verdict(DOES_NOT_HOLD, "gap -20.00", basis="range 3.00"), {0: 1.0, 2: 2.0})
    assert (short.label, short.evidence) == ("not judged (n = 2)", "gap -20.00")
    assert short.basis == 'seeds 0, 2 (n = 2); range 3.00; on these seeds it would read "does not hold"'
    assert on_seeds(Verdict(NOT_RUN, "-"), []).verdict == NOT_RUN


def test_constant_samples():
    assert constant_samples(np.zeros((20, 1, 4, 4), dtype=np.uint8)).startswith("generator samples constant")
    same = np.repeat(np.arange(16).reshape(1, 1, 4, 4), 5, axis=0)
    assert constant_samples(same) == "generator samples constant (5 samples, all the same image)"
    varied = same.copy()
    varied[3, 0, 0, 0] = 99
    assert constant_samples(varied) is None


def test_degenerate_inputs_are_not_judged_at_a_common_seed_only():
    reason = "clients at chance (mean local accuracy 10.00 %, chance 10.00 %)"
    a = Side("A", {0: 80.0, 1: 81.0, 2: 80.0, 3: 81.0}, degenerate={0: reason})
    v = compare(a, Side("B", seeds(60.0, 61.0, 60.0)))
    assert v.label == f"not judged: {reason}" and v.evidence == "A 80.33 ± 0.58 (n=3) vs B 60.33 ± 0.58 (n=3)"
    assert compare(a, Side("B", {1: 60.0, 2: 61.0, 3: 60.0})).verdict == HOLDS  # seed 0 is not compared


# ------------------------------------------------------------------------------------ several parts, evidence


def test_every_part_must_hold():
    h = Verdict(HOLDS, "x")
    f = Verdict(DOES_NOT_HOLD, "y")
    w = Verdict(WITHIN, "z")
    n = Verdict(NOT_JUDGED, "u", reason="n = 1")
    r = Verdict(NOT_RUN, "not compared")
    assert every([("a", h), ("b", h)]).verdict == HOLDS
    assert every([("a", h), ("b", w), ("c", f), ("d", n)]).verdict == DOES_NOT_HOLD  # one counter-example
    assert every([("a", h), ("b", w)]).verdict == WITHIN
    # a part on fewer seeds leaves the claim undecided, even beside a part within spread
    v = every([("a", h), ("b", w), ("c", n)])
    assert v.verdict == NOT_JUDGED and v.label == "not judged (n = 1)"
    v = every([("a", h), ("c", n), ("d", r)])
    assert v.label == "not judged (n = 1)"
    assert v.evidence == "a: holds (x); c: not judged (n = 1) (u); d: not run (not compared)"
    assert every([("d", r)]).verdict == NOT_RUN and every([]).verdict == NOT_RUN


def test_above_all_names_what_decided_it():
    def three(mean: float) -> dict[int, float]:
        return seeds(mean - 1.0, mean, mean + 1.0)  # std 1

    best = Side("A", three(70.0))
    rivals = [Side("B", three(60.0)), Side("C", three(68.0)), Side("D", three(69.5))]
    v = above_all(best, rivals)
    assert v.verdict == WITHIN  # D is 0.5 below, inside the std
    assert v.evidence == ("above 2 of 3 beyond the spread; A 70.00 ± 1.00 (n=3) vs D 69.50 ± 1.00 (n=3) (seeds 0, 1, "
                          "2 (n = 3): difference +0.50, spread 1.00 (larger sample std))")
    v = above_all(best, rivals[:2])
    assert v.verdict == HOLDS and "A 70.00 ± 1.00 (n=3) vs C 68.00" in v.evidence and "vs B" not in v.evidence
    v = above_all(best, rivals + [Side("E", three(72.0))])
    assert v.verdict == DOES_NOT_HOLD and "vs E 72.00" in v.evidence and "vs D" not in v.evidence
    worst = above_all(Side("W", three(10.0)), rivals, below=True)
    assert worst.verdict == HOLDS and worst.evidence.startswith("below 3 of 3")
    assert "B 60.00 ± 1.00 (n=3) vs W 10.00" in worst.evidence
    assert above_all(best, []).verdict == NOT_RUN
    one = above_all(Side("A", {0: 90.0}), [Side("B", {0: 10.0})])
    assert one.label == "not judged (n = 1)"


def test_verdict_text_record_and_counts():
    v = compare(Side("OFedED", seeds(60.0, 58.0, 59.0)), Side("Co-Boosting", seeds(50.0, 54.0, 52.0)))
    assert v.text() == ("holds (OFedED 59.00 ± 1.00 (n=3) vs Co-Boosting 52.00 ± 2.00 (n=3)); seeds 0, 1, 2 (n = 3): "
                        "difference +7.00, spread 2.00 (larger sample std)")
    n = compare(Side("A", {0: 1.0}), Side("B", {0: 2.0}))
    assert n.text() == "not judged (n = 1) (A 1.00 vs B 2.00); seed 0 (n = 1): difference -1.00, no spread"
    assert n.record(artifact="t", claim="c") == {"artifact": "t", "claim": "c", "verdict": "not judged",
                                                 "evidence": "A 1.00 vs B 2.00; seed 0 (n = 1): difference -1.00, "
                                                             "no spread",
                                                 "reason": "n = 1"}
    assert count_verdicts([v, n, "within spread"]) == {"holds": 1, "does_not_hold": 0, "within_spread": 1,
                                                       "not_judged": 1, "not_run": 0, "not_testable_here": 0,
                                                       "consistent": 0, "inconsistent": 0}
    with pytest.raises(ValueError):
        Verdict("fails")


def test_one_class_clients_cannot_beat_chance_so_their_accuracy_judges_nothing():
    from osfl.reporting.spread import clients_at_chance

    ten = {"per_client": [{"local_test_acc": 10.0}] * 5, "local_acc_mean": 10.0}
    assert clients_at_chance(ten, 10, classes_held=1) is None  # a perfect one-class client scores 10 %
    assert "clients at chance" in clients_at_chance(ten, 10, classes_held=2)
    assert "clients at chance" in clients_at_chance(ten, 10)
