"""FedHydra's claim verdicts on made-up runs: each verdict (holds / does not hold / within spread / not judged / not
run) is reached on purpose.

The smoke DAG (tests/test_fedhydra_pipeline.py) checks that the verdicts are written from real runs; the logic
that decides them is tested here, where the numbers are chosen so that each branch must be taken. The rule itself
(osfl.reporting.spread: same seeds, the spread, degenerate inputs) is tested in tests/test_spread_verdicts.py; a run
made here with ``swing`` has curves whose last half moves by exactly that much per epoch, so that one-seed
comparisons have a spread.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from osfl.papers import fedhydra as fh
from osfl.reporting.published import load_artifacts

LAMBDAS = [{"tag": "l0.5-1", "l1": 0.5, "l2": 1.0}, {"tag": "l1-0", "l1": 1.0, "l2": 0.0}]
PUBLISHED = Path(__file__).resolve().parents[1] / "papers" / "fedhydra" / "published"


def run(name: str, accs: dict[str, float], best: dict[str, float] | None = None, swing: float | None = None) -> fh.Run:
    """Metrics only (no curve: a one-seed comparison has no spread), or with ``swing`` a curve per server method
    (not the one-shot FedAvg / OT): epochs 0..6 = 10, best, final, final − swing, final, final − swing, final."""
    dataset, _, split = name.partition("-")
    best = best or {}
    metrics = {m: {"acc_final": a, "acc_best": best.get(m, a), "best_epoch": 3, "stand_in_data": False}
               for m, a in accs.items()}
    r = fh.Run(name, dataset, split, metrics=metrics)
    if swing is not None:
        for m, a in accs.items():
            if m.split("-")[0] not in fh.ONE_SHOT:
                b = best.get(m, a)
                r.curves[m] = (list(range(7)), [10.0, b, a, a - swing, a, a - swing, a])
    return r


def verdicts(runs, U_r=None, lambdas=LAMBDAS, seeds=()) -> dict[tuple[str, str], tuple[str, str]]:
    out = fh.claims(runs, ["dir0.5", "2cc"], U_r, "made-up", lambdas, seeds)
    return {(c["artifact"], c["claim"][:24]): (c["verdict"] + (f": {c['reason']}" if c.get("reason") else ""),
                                               c["evidence"]) for c in out}


TABLE1 = ("table01", "FedHydra has the best ac")
OT_WORST = ("table02", "OT performs the worst ac")
SA_AE = ("figure07", "SA consistently outperfo")
MS = ("figure05", "each client model has MS")
LAM = ("table06", "(λ1, λ2) = (1, 1) gives ")
COLLAPSE_FMNIST = ("figure03", "all models collapse late")


def test_nothing_run_is_not_run():
    v = verdicts({})
    assert {v[k][0] for k in (TABLE1, OT_WORST, SA_AE, MS, LAM, COLLAPSE_FMNIST)} == {"not run"}


def test_best_in_column_holds_beyond_the_swing_and_a_tie_is_within_spread():
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "dense": 68.0, "fedhydra": 70.0}, swing=1.0)}
    assert verdicts(runs)[TABLE1][0] == "holds"
    # a tie used to count as best; now it is within the spread (rule 2), as is a 0.5-point lead inside a 1-point swing
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "dense": 70.0, "fedhydra": 70.0}, swing=1.0)}
    assert verdicts(runs)[TABLE1][0] == "within spread"
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "dense": 69.5, "fedhydra": 70.0}, swing=1.0)}
    verdict, evidence = verdicts(runs)[TABLE1]
    assert verdict == "within spread" and "FedHydra 70.00 vs DENSE 69.50 (seed 0 (n = 1): difference +0.50" in evidence


def test_best_in_column_fails_and_names_the_winner():
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "coboost": 71.5, "fedhydra": 70.0}, swing=1.0),
            "mnist-dir0.5": run("mnist-dir0.5", {"fedavg": 60.0, "fedhydra": 90.0}, swing=1.0)}
    verdict, evidence = verdicts(runs)[TABLE1]
    assert verdict == "does not hold"
    assert evidence.startswith("2 column(s) run")
    assert "FedHydra 70.00 vs Co-Boosting 71.50 (seed 0 (n = 1): difference -1.50, spread 1.00" in evidence


def test_one_seed_without_curves_is_not_judged():
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "coboost": 71.5, "fedhydra": 70.0})}
    verdict, evidence = verdicts(runs)[TABLE1]
    assert verdict == "not judged: one seed, no spread" and "FedHydra 70.00 vs Co-Boosting 71.50" in evidence


def test_degenerate_clients_are_not_judged():
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "coboost": 40.0, "fedhydra": 70.0}, swing=1.0)}
    runs["fmnist-dir0.5"].clients = {"local_acc_mean": 10.2, "per_client": [{"local_test_acc": 10.2}] * 5}
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict == ("not judged: clients at chance (mean local accuracy 10.20 %, chance 10.00 %; all 5 exactly "
                       "10.20 %)")
    runs["fmnist-dir0.5"].clients = {"local_acc_mean": 55.0}
    runs["fmnist-dir0.5"].curves["coboost"] = ([0, 1, 2], [10.0, 10.4, 9.6])  # Co-Boosting's curve flat at chance
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict.startswith("not judged: server curve flat at chance (3 epochs")


def test_runs_that_failed_a_regime_guard_are_not_judged():
    """A run whose clients or server failed a guard of the params' cpu block (osfl.cpu_profile) feeds no verdict."""
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "coboost": 40.0, "fedhydra": 70.0}, swing=1.0)}
    runs["fmnist-dir0.5"].clients = {"local_acc_mean": 55.0, "guards": {
        "client_acc_mean_min": {"floor": 60.0, "value": 55.0, "passed": False}}}
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict == "not judged: clients failed the regime guard client_acc_mean_min (55.00 < 60.00)"
    runs["fmnist-dir0.5"].clients["guards"]["client_acc_mean_min"].update(floor=50.0, passed=True)
    runs["fmnist-dir0.5"].metrics["coboost"]["guards"] = {
        "server_gain_min": {"floor": 15.0, "value": 12.0, "passed": False}}
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict == "not judged: server failed the regime guard server_gain_min (12.00 < 15.00)"


def test_ot_worst_on_2cc():
    """Over two seeds: the spread is the larger sample std. On one seed FedAvg against OT (both one-shot, no curve)
    has no spread."""
    worst_ot = {"fmnist-2cc": run("fmnist-2cc", {"ot": 10.0, "fedavg": 30.0, "fedhydra": 40.0}),
                "fmnist-2cc-s1": run("fmnist-2cc-s1", {"ot": 11.0, "fedavg": 31.0, "fedhydra": 41.0})}
    assert verdicts(worst_ot, seeds=[1])[OT_WORST][0] == "holds"
    worst_avg = {"fmnist-2cc": run("fmnist-2cc", {"ot": 30.0, "fedavg": 20.0, "fedhydra": 40.0}),
                 "fmnist-2cc-s1": run("fmnist-2cc-s1", {"ot": 31.0, "fedavg": 21.0, "fedhydra": 41.0})}
    verdict, evidence = verdicts(worst_avg, seeds=[1])[OT_WORST]
    assert verdict == "does not hold" and "FedAvg 20.50 ± 0.71 (n=2) vs OT 30.50 ± 0.71 (n=2)" in evidence
    assert verdicts({"fmnist-2cc": worst_ot["fmnist-2cc"]})[OT_WORST][0] == "not judged: one seed, no spread"


def test_sa_beats_ae_must_hold_on_every_split():
    both = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 70.0, "fedhydra-ae": 60.0}, swing=1.0),
            "fmnist-2cc": run("fmnist-2cc", {"fedhydra": 40.0, "fedhydra-ae": 30.0}, swing=1.0)}
    assert verdicts(both)[SA_AE][0] == "holds"
    both["fmnist-2cc"] = run("fmnist-2cc", {"fedhydra": 40.0, "fedhydra-ae": 40.0}, swing=1.0)  # equal: within
    verdict, evidence = verdicts(both)[SA_AE]
    assert verdict == "within spread" and evidence.startswith("SA better beyond the spread in 1/2")
    both["fmnist-2cc"] = run("fmnist-2cc", {"fedhydra": 40.0, "fedhydra-ae": 45.0}, swing=1.0)
    assert verdicts(both)[SA_AE][0] == "does not hold"


def test_ms_weights_on_own_classes():
    U_r = np.full((10, 5), 0.02)
    for c in range(10):
        U_r[c, c // 2] = 0.92
    assert verdicts({}, U_r)[MS][0] == "holds"
    U_r[3, 1], U_r[3, 4] = 0.02, 0.92  # class 3 is strongest on client 5, not its owner client 2
    verdict, evidence = verdicts({}, U_r)[MS]
    assert verdict == "does not hold" and "[1, 1, 2, 5, 3" in evidence
    flat = np.full((10, 5), 0.2)
    flat[np.arange(10), np.arange(10) // 2] = 0.21  # right owner, but not "near 1"
    assert verdicts({}, flat)[MS][0] == "does not hold"


def test_lambda_ablation():
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 70.0, "fedhydra-l0.5-1": 65.0, "fedhydra-l1-0": 68.0},
                                 swing=1.0)}
    assert verdicts(runs)[LAM][0] == "holds"
    runs["fmnist-dir0.5"].metrics["fedhydra-l1-0"]["acc_final"] = 69.9  # 0.1 below (1, 1): inside the swing
    assert verdicts(runs)[LAM][0] == "within spread"
    runs["fmnist-dir0.5"].metrics["fedhydra-l1-0"]["acc_final"] = 72.0
    verdict, evidence = verdicts(runs)[LAM]
    assert verdict == "does not hold" and "(1,1) 70.00 vs (1,0) 72.00 (seed 0 (n = 1): difference -2.00" in evidence


def test_lambda_rows_are_compared_seed_for_seed():
    """Issue 37: (1, 1) ran with seeds 0-2 and a λ row with seed 0 only; the row is set against seed 0 of (1, 1)
    (62.53 vs 61.24, within a 5-point swing), not against the three-seed mean 54.90 (which it beats by 7.6)."""
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 61.24, "fedhydra-l1-0": 62.53}, swing=5.0),
            "fmnist-dir0.5-s1": run("fmnist-dir0.5-s1", {"fedhydra": 53.69}, swing=5.0),
            "fmnist-dir0.5-s2": run("fmnist-dir0.5-s2", {"fedhydra": 49.77}, swing=5.0)}
    verdict, evidence = verdicts(runs, seeds=[1, 2])[LAM]
    assert verdict == "within spread"
    assert "(1,1) 61.24 vs (1,0) 62.53 (seed 0 (n = 1): difference -1.29, spread 5.00" in evidence


def test_claims_compare_fedhydra_results_of_one_reading_only():
    """A λ row or an AE bar made on another reading than the (1, 1) / SA run is left out of the comparison."""
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 60.0, "fedhydra-l0.5-1": 65.0, "fedhydra-l1-0": 50.0,
                                                   "fedhydra-ae": 66.0}, swing=1.0)}
    for key in ("fedhydra", "fedhydra-l1-0", "fedhydra-ae"):
        runs["fmnist-dir0.5"].metrics[key]["choices"] = {"reading": "authors"}
    runs["fmnist-dir0.5"].metrics["fedhydra-l0.5-1"]["choices"] = {}  # made before the readings: literal
    verdict, evidence = verdicts(runs)[LAM]
    assert verdict == "holds" and "not compared: fmnist: l0.5-1 ran on another reading than (1,1) (authors)" in evidence
    assert verdicts(runs)[SA_AE][0] == "does not hold"  # same reading: compared
    runs["fmnist-dir0.5"].metrics["fedhydra-ae"]["choices"] = {"reading": "literal"}
    verdict, evidence = verdicts(runs)[SA_AE]
    assert verdict == "not run" and "not compared, SA and AE ran on different readings" in evidence


def test_collapse_needs_a_drop_beyond_the_swing():
    """A drop from the best epoch to the final one is a collapse only beyond the curve's own epoch-to-epoch swing
    over its last half (issue 37: a 3-point drop inside a 5-point swing held before)."""
    small = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 72.0}, best={"fedhydra": 75.0}, swing=4.0)}
    verdict, evidence = verdicts(small)[COLLAPSE_FMNIST]
    assert verdict == "within spread"
    assert "α=0.5 (best epoch 3): within spread (FedHydra best 75.00 vs final 72.00" in evidence
    drop = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 10.0}, best={"fedhydra": 56.0}, swing=4.0)}
    verdict, evidence = verdicts(drop)[COLLAPSE_FMNIST]
    assert verdict == "holds" and "FedHydra best 56.00 vs final 10.00; seed 0 (n = 1): difference +46.00" in evidence
    # every panel must collapse ("all models"): a panel whose drop is inside its swing leaves the claim within the
    # spread (the best epoch is never below the final one, so this comparison cannot come out "does not hold")
    drop["fmnist-dir0.3"] = small["fmnist-dir0.5"]
    assert verdicts(drop)[COLLAPSE_FMNIST][0] == "within spread"
    no_curve = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 10.0}, best={"fedhydra": 56.0})}
    assert verdicts(no_curve)[COLLAPSE_FMNIST][0] == "not judged: one seed, no spread"


def test_local_curve_claim():
    r = run("cifar10-dir0.1", {})
    r.local_curve = {"epoch": [20.0, 40.0, 200.0, 400.0], "fedavg": [50.0, 60.0, 40.0, 30.0]}
    (c,) = fh.local_curve_claims({"cifar10-dir0.1": r})
    assert c["verdict"] == "holds" and "best 60.00 at E=40 of 400" in c["evidence"]
    r.local_curve["fedavg"] = [30.0, 40.0, 50.0, 60.0]  # best at the end
    assert fh.local_curve_claims({"cifar10-dir0.1": r})[0]["verdict"] == "does not hold"
    r.local_curve["fedavg"] = [50.0, 60.0, 20.0, 55.0]  # 5 points down at the end, inside a 28-point swing
    assert fh.local_curve_claims({"cifar10-dir0.1": r})[0]["verdict"] == "within spread"
    assert fh.local_curve_claims({})[0]["verdict"] == "not run"


def test_paper_profile_claim():
    good = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 70.0, "fedhydra": 77.0}, swing=1.0)}
    bad = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 70.0, "fedhydra": 10.0}, best={"fedhydra": 11.9},
                                swing=1.0)}
    assert fh.paper_profile_claims(good)[0]["verdict"] == "holds"
    (c,) = fh.paper_profile_claims(bad)
    assert c["verdict"] == "does not hold" and c["evidence"].startswith("FedHydra's best epoch 11.90")
    assert "FedHydra 10.00 vs FedAvg 70.00 (seed 0 (n = 1): difference -60.00" in c["evidence"]
    assert c["claim"] == "FedHydra has the best accuracy (fmnist-dir0.5, paper profile, literal reading, unrecorded)"
    bad["fmnist-dir0.5"].metrics["fedhydra"]["choices"] = {"reading": "authors"}
    assert fh.paper_profile_claims(bad)[0]["claim"].endswith("(fmnist-dir0.5, paper profile, authors reading)")


def test_paper_profile_rows_name_reading_and_profile(tmp_path):
    """Issue 37: the paper-profile table put the literal reading's 10.00 in a row labelled "FedHydra" beside the
    quick profile's authors-reading number. Each row now names its profile and reading, and the quick-profile
    column holds the quick run of the same reading."""
    paper = run("fmnist-dir0.5", {"fedavg": 70.4, "fedhydra": 10.0, "fedhydra-ae": 10.0})  # no reading: literal
    quick = run("fmnist-dir0.5", {"fedavg": 63.48, "fedhydra": 61.24, "fedhydra-ae": 66.35, "fedhydra-literal": 10.5})
    for key in ("fedhydra", "fedhydra-ae"):
        quick.metrics[key]["choices"] = {"reading": "authors"}
    quick.metrics["fedhydra-literal"]["choices"] = {"reading": "literal"}
    paper.root = str(tmp_path)
    _, md = fh.paper_profile_table({"fmnist-dir0.5": paper}, {"fmnist-dir0.5": quick}, load_artifacts(str(PUBLISHED)),
                                   tmp_path / "t")
    lines = md.read_text().splitlines()
    row = next(ln for ln in lines if "/ FedHydra (" in ln)
    assert row.startswith("| fmnist-dir0.5 / FedHydra (literal reading, unrecorded; paper profile) | 10.00 | 10.00 | "
                          "10.50 | 77.20 |")  # the quick literal run, not the authors' 61.24
    ae = next(ln for ln in lines if "FedHydra [ae]" in ln)
    assert "FedHydra [ae] (literal reading, unrecorded; paper profile) | 10.00 | 10.00 | — |" in ae  # no literal AE
    assert "| fmnist-dir0.5 / FedAvg (paper profile) | 70.40 | 70.40 | 63.48 |" in md.read_text()
    assert "quick profile final (same reading)" in lines[2]


def test_the_ot_note_counts_runs_whose_alignment_moved_nothing():
    """OT's record says which share of each client's hidden units its alignment moved; all 0 = OT is FedAvg."""
    a = run("fmnist-dir0.5", {"fedavg": 60.0, "ot": 60.0})
    b = run("fmnist-dir0.1", {"fedavg": 30.0, "ot": 28.0})
    a.extras["ot"] = {"units_moved_share": {"0": 0.0, "1": 0.0}}
    b.extras["ot"] = {"units_moved_share": {"0": 0.0, "1": 0.25}}
    note = fh._ot_note("table01", {"fmnist-dir0.5": a, "fmnist-dir0.1": b})
    assert note.startswith("OT: in 1 of 2 runs that record it the alignment moved no hidden unit")
    assert fh._ot_note("table06", {"fmnist-dir0.5": a}) == ""
    assert fh._ot_note("table01", {"fmnist-dir0.5": run("fmnist-dir0.5", {"ot": 60.0})}) == ""  # not recorded
