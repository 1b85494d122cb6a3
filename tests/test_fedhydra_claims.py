"""FedHydra's claim verdicts on made-up runs: each verdict (holds / does not hold / not run) is reached on purpose.

The smoke DAG (tests/test_fedhydra_pipeline.py) checks that the verdicts are written from real runs; the logic
that decides them is tested here, where the numbers are chosen so that each branch must be taken.
"""
from __future__ import annotations

import numpy as np

from osfl.papers import fedhydra as fh

LAMBDAS = [{"tag": "l0.5-1", "l1": 0.5, "l2": 1.0}, {"tag": "l1-0", "l1": 1.0, "l2": 0.0}]


def run(name: str, accs: dict[str, float], best: dict[str, float] | None = None) -> fh.Run:
    dataset, _, split = name.partition("-")
    best = best or {}
    metrics = {m: {"acc_final": a, "acc_best": best.get(m, a), "best_epoch": 3, "stand_in_data": False}
               for m, a in accs.items()}
    return fh.Run(name, dataset, split, metrics=metrics)


def verdicts(runs, U_r=None, lambdas=LAMBDAS) -> dict[tuple[str, str], tuple[str, str]]:
    out = fh.claims(runs, ["dir0.5", "2cc"], U_r, "made-up", lambdas)
    return {(c["artifact"], c["claim"][:24]): (c["verdict"], c["evidence"]) for c in out}


TABLE1 = ("table01", "FedHydra has the best ac")
OT_WORST = ("table02", "OT performs the worst ac")
SA_AE = ("figure07", "SA consistently outperfo")
MS = ("figure05", "each client model has MS")
LAM = ("table06", "(λ1, λ2) = (1, 1) gives ")
COLLAPSE_FMNIST = ("figure03", "all models collapse late")


def test_nothing_run_is_not_run():
    v = verdicts({})
    assert {v[k][0] for k in (TABLE1, OT_WORST, SA_AE, MS, LAM, COLLAPSE_FMNIST)} == {"not run"}


def test_best_in_column_holds_and_a_tie_counts_as_best():
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "dense": 70.0, "fedhydra": 70.0})}
    assert verdicts(runs)[TABLE1][0] == "holds"


def test_best_in_column_fails_and_names_the_winner():
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 60.0, "coboost": 71.5, "fedhydra": 70.0}),
            "mnist-dir0.5": run("mnist-dir0.5", {"fedavg": 60.0, "fedhydra": 90.0})}
    verdict, evidence = verdicts(runs)[TABLE1]
    assert verdict == "does not hold"
    assert "2 column(s) run" in evidence and "Co-Boosting 71.50 vs FedHydra 70.00" in evidence


def test_ot_worst_on_2cc():
    worst_ot = {"fmnist-2cc": run("fmnist-2cc", {"ot": 10.0, "fedavg": 30.0, "fedhydra": 40.0})}
    assert verdicts(worst_ot)[OT_WORST][0] == "holds"
    worst_avg = {"fmnist-2cc": run("fmnist-2cc", {"ot": 30.0, "fedavg": 20.0, "fedhydra": 40.0})}
    verdict, evidence = verdicts(worst_avg)[OT_WORST]
    assert verdict == "does not hold" and "worst is FedAvg (20.00)" in evidence


def test_sa_beats_ae_must_hold_on_every_split():
    both = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 70.0, "fedhydra-ae": 60.0}),
            "fmnist-2cc": run("fmnist-2cc", {"fedhydra": 40.0, "fedhydra-ae": 30.0})}
    assert verdicts(both)[SA_AE][0] == "holds"
    both["fmnist-2cc"] = run("fmnist-2cc", {"fedhydra": 40.0, "fedhydra-ae": 40.0})  # equal is not "outperforms"
    verdict, evidence = verdicts(both)[SA_AE]
    assert verdict == "does not hold" and evidence.startswith("SA better in 1/2")


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
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 70.0, "fedhydra-l0.5-1": 65.0, "fedhydra-l1-0": 69.9})}
    assert verdicts(runs)[LAM][0] == "holds"
    runs["fmnist-dir0.5"].metrics["fedhydra-l1-0"]["acc_final"] = 72.0
    verdict, evidence = verdicts(runs)[LAM]
    assert verdict == "does not hold" and "l1-0 72.00 > (1,1) 70.00" in evidence


def test_claims_compare_fedhydra_results_of_one_reading_only():
    """A λ row or an AE bar made on another reading than the (1, 1) / SA run is left out of the comparison."""
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 60.0, "fedhydra-l0.5-1": 65.0, "fedhydra-l1-0": 50.0,
                                                   "fedhydra-ae": 66.0})}
    for key in ("fedhydra", "fedhydra-l1-0", "fedhydra-ae"):
        runs["fmnist-dir0.5"].metrics[key]["choices"] = {"reading": "authors"}
    runs["fmnist-dir0.5"].metrics["fedhydra-l0.5-1"]["choices"] = {}  # made before the readings: literal
    verdict, evidence = verdicts(runs)[LAM]
    assert verdict == "holds" and "not compared: fmnist: l0.5-1 ran on another reading than (1,1) (authors)" in evidence
    assert verdicts(runs)[SA_AE][0] == "does not hold"  # same reading: compared
    runs["fmnist-dir0.5"].metrics["fedhydra-ae"]["choices"] = {"reading": "literal"}
    verdict, evidence = verdicts(runs)[SA_AE]
    assert verdict == "not run" and "not compared, SA and AE ran on different readings" in evidence


def test_collapse_needs_a_drop_of_more_than_ten_points():
    flat = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 70.0}, best={"fedhydra": 75.0})}
    assert verdicts(flat)[COLLAPSE_FMNIST][0] == "does not hold"
    drop = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 10.0}, best={"fedhydra": 56.0})}
    verdict, evidence = verdicts(drop)[COLLAPSE_FMNIST]
    assert verdict == "holds" and "best 56.00 (epoch 3), final 10.00" in evidence


def test_local_curve_claim():
    r = run("cifar10-dir0.1", {})
    r.local_curve = {"epoch": [20.0, 40.0, 200.0, 400.0], "fedavg": [50.0, 60.0, 40.0, 30.0]}
    (c,) = fh.local_curve_claims({"cifar10-dir0.1": r})
    assert c["verdict"] == "holds" and "best 60.00 at E=40 of 400" in c["evidence"]
    r.local_curve["fedavg"] = [30.0, 40.0, 50.0, 60.0]  # best at the end
    assert fh.local_curve_claims({"cifar10-dir0.1": r})[0]["verdict"] == "does not hold"
    assert fh.local_curve_claims({})[0]["verdict"] == "not run"


def test_paper_profile_claim():
    good = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 70.0, "fedhydra": 77.0})}
    bad = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 70.0, "fedhydra": 10.0}, best={"fedhydra": 11.9})}
    assert fh.paper_profile_claims(good)[0]["verdict"] == "holds"
    (c,) = fh.paper_profile_claims(bad)
    assert c["verdict"] == "does not hold" and "best FedAvg 70.00 vs FedHydra 10.00 (best epoch 11.90)" in c["evidence"]
