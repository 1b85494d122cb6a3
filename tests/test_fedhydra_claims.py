"""FedHydra's claim verdicts on made-up runs: each verdict (holds / does not hold / within spread / not judged / not
run) is reached on purpose.

The smoke DAG (tests/test_fedhydra_pipeline.py) checks that the verdicts are written from real runs; the logic
that decides them is tested here, where the numbers are chosen so that each branch must be taken. The rule itself
(osfl.reporting.spread: same seeds, three of them, the spread, degenerate inputs) is tested in
tests/test_spread_verdicts.py. A claim is decided on three seeds (``seeded``: each value one ``std`` below and above
on seeds 1 and 2, so the sample std is ``std``); on fewer it is not judged (n = k) and keeps the difference and the
spread it would face: for one seed, the swing of a run made here with ``swing``, whose curves' last half moves by
exactly that much per epoch.
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


def seeded(name: str, accs: dict[str, float], best: dict[str, float] | None = None, swing: float | None = None,
           std: float = 1.0, n: int = 3) -> dict[str, fh.Run]:
    """``n`` seeds of :func:`run`: ``name`` (seed 0) with ``accs`` and ``best`` as given, ``name-s1`` with every value
    ``std`` lower, ``name-s2`` with every value ``std`` higher (over three seeds: the same means, sample std ``std``)."""
    out = {}
    for seed, d in ((0, 0.0), (1, -std), (2, std))[:n]:
        out[name if seed == 0 else f"{name}-s{seed}"] = run(
            name, {m: a + d for m, a in accs.items()}, best and {m: b + d for m, b in best.items()}, swing)
    return out


def every_seed(runs: dict[str, fh.Run], name: str) -> list[fh.Run]:
    """The runs of ``name``, its seed runs included."""
    return [r for k, r in runs.items() if k == name or k.startswith(f"{name}-s")]


def verdicts(runs, U_r=None, lambdas=LAMBDAS, seeds=(1, 2)) -> dict[tuple[str, str], tuple[str, str]]:
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


def test_best_in_column_holds_beyond_the_spread_and_a_tie_is_within_spread():
    runs = seeded("fmnist-dir0.5", {"fedavg": 60.0, "dense": 68.0, "fedhydra": 70.0})
    assert verdicts(runs)[TABLE1][0] == "holds"
    # a tie used to count as best; now it is within the spread, as is a 0.5-point lead inside a std of 1
    runs = seeded("fmnist-dir0.5", {"fedavg": 60.0, "dense": 70.0, "fedhydra": 70.0})
    assert verdicts(runs)[TABLE1][0] == "within spread"
    runs = seeded("fmnist-dir0.5", {"fedavg": 60.0, "dense": 69.5, "fedhydra": 70.0})
    verdict, evidence = verdicts(runs)[TABLE1]
    assert verdict == "within spread"
    assert ("FedHydra 70.00 ± 1.00 (n=3) vs DENSE 69.50 ± 1.00 (n=3) (seeds 0, 1, 2 (n = 3): difference +0.50, "
            "spread 1.00 (larger sample std))") in evidence


def test_best_in_column_fails_and_names_the_winner():
    runs = {**seeded("fmnist-dir0.5", {"fedavg": 60.0, "coboost": 71.5, "fedhydra": 70.0}),
            **seeded("mnist-dir0.5", {"fedavg": 60.0, "fedhydra": 90.0})}
    verdict, evidence = verdicts(runs)[TABLE1]
    assert verdict == "does not hold"
    assert evidence.startswith("2 column(s) run")
    assert ("FedHydra 70.00 ± 1.00 (n=3) vs Co-Boosting 71.50 ± 1.00 (n=3) (seeds 0, 1, 2 (n = 3): difference -1.50, "
            "spread 1.00") in evidence


def test_fewer_than_three_seeds_are_not_judged():
    """One seed, with or without curves, and two seeds: not judged (n = k), whatever the difference; the evidence
    keeps the difference and the spread it would face (none, the swing, the sample std)."""
    accs = {"fedavg": 60.0, "coboost": 71.5, "fedhydra": 70.0}
    verdict, evidence = verdicts({"fmnist-dir0.5": run("fmnist-dir0.5", accs)})[TABLE1]
    assert verdict == "not judged: n = 1"
    assert "FedHydra 70.00 vs Co-Boosting 71.50 (seed 0 (n = 1): difference -1.50, no spread)" in evidence
    verdict, evidence = verdicts({"fmnist-dir0.5": run("fmnist-dir0.5", accs, swing=1.0)})[TABLE1]
    assert verdict == "not judged: n = 1"
    assert "FedHydra 70.00 vs Co-Boosting 71.50 (seed 0 (n = 1): difference -1.50, spread 1.00" in evidence
    verdict, evidence = verdicts(seeded("fmnist-dir0.5", accs, n=2))[TABLE1]
    assert verdict == "not judged: n = 2"
    assert ("FedHydra 69.50 ± 0.71 (n=2) vs Co-Boosting 71.00 ± 0.71 (n=2) (seeds 0, 1 (n = 2): difference -1.50, "
            "spread 0.71 (larger sample std))") in evidence
    assert verdicts(seeded("fmnist-dir0.5", accs))[TABLE1][0] == "does not hold"  # the third seed decides it


def test_degenerate_clients_are_not_judged():
    runs = seeded("fmnist-dir0.5", {"fedavg": 60.0, "coboost": 40.0, "fedhydra": 70.0}, swing=1.0)
    runs["fmnist-dir0.5"].clients = {"local_acc_mean": 10.2, "per_client": [{"local_test_acc": 10.2}] * 5}
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict == ("not judged: clients at chance (mean local accuracy 10.20 %, chance 10.00 %; all 5 exactly "
                       "10.20 %)")
    runs["fmnist-dir0.5"].clients = {"local_acc_mean": 55.0}
    assert verdicts(runs)[TABLE1][0] == "holds"
    runs["fmnist-dir0.5"].curves["coboost"] = ([0, 1, 2], [32.0, 10.4, 9.6])  # at chance after epoch 0
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict.startswith("not judged: server curve never left chance after epoch 0 (2 epochs, 9.60-10.40 %")
    runs["fmnist-dir0.5"].curves["coboost"] = ([0, 1, 2], [10.0, 30.0, 9.6])  # left chance, ended back at it
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict.startswith("not judged: server curve ends at chance (final 9.60 %, best 30.00 %")


def test_runs_that_failed_a_regime_guard_are_not_judged():
    """A run whose clients or server failed a guard of the params' cpu block (osfl.cpu_profile), or whose server's
    final accuracy fell below the guard's floor, feeds no verdict."""
    runs = seeded("fmnist-dir0.5", {"fedavg": 60.0, "coboost": 40.0, "fedhydra": 70.0}, swing=1.0)
    runs["fmnist-dir0.5"].clients = {"local_acc_mean": 55.0, "guards": {
        "client_acc_mean_min": {"floor": 60.0, "value": 55.0, "passed": False}}}
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict == "not judged: clients failed the regime guard client_acc_mean_min (55.00 < 60.00)"
    runs["fmnist-dir0.5"].clients["guards"]["client_acc_mean_min"].update(floor=50.0, passed=True)
    assert verdicts(runs)[TABLE1][0] == "holds"
    runs["fmnist-dir0.5"].metrics["coboost"]["guards"] = {
        "server_gain_min": {"floor": 15.0, "value": 12.0, "passed": False}}
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict == "not judged: server failed the regime guard server_gain_min (12.00 < 15.00)"
    runs["fmnist-dir0.5"].metrics["coboost"].update(acc_final=12.0, guards={  # best passed, the final fell below
        "server_gain_min": {"floor": 15.0, "value": 40.0, "passed": True}})
    verdict, _ = verdicts(runs)[TABLE1]
    assert verdict == "not judged: server final accuracy 12.00 % below the regime guard's floor 15.00 %"


def test_ot_worst_on_2cc():
    """Over three seeds: the spread is the larger sample std. On one seed FedAvg against OT (both one-shot, no curve)
    is not judged, and has no spread."""
    worst_ot = seeded("fmnist-2cc", {"ot": 21.0, "fedavg": 31.0, "fedhydra": 41.0})
    assert verdicts(worst_ot)[OT_WORST][0] == "holds"
    worst_avg = seeded("fmnist-2cc", {"ot": 31.0, "fedavg": 21.0, "fedhydra": 41.0})
    verdict, evidence = verdicts(worst_avg)[OT_WORST]
    assert verdict == "does not hold" and "FedAvg 21.00 ± 1.00 (n=3) vs OT 31.00 ± 1.00 (n=3)" in evidence
    verdict, evidence = verdicts({"fmnist-2cc": worst_ot["fmnist-2cc"]})[OT_WORST]
    assert verdict == "not judged: n = 1"
    assert "FedAvg 31.00 vs OT 21.00 (seed 0 (n = 1): difference +10.00, no spread)" in evidence


def test_sa_beats_ae_must_hold_on_every_split():
    both = {**seeded("fmnist-dir0.5", {"fedhydra": 70.0, "fedhydra-ae": 60.0}),
            **seeded("fmnist-2cc", {"fedhydra": 40.0, "fedhydra-ae": 30.0})}
    assert verdicts(both)[SA_AE][0] == "holds"
    both.update(seeded("fmnist-2cc", {"fedhydra": 40.0, "fedhydra-ae": 40.0}))  # equal: within
    verdict, evidence = verdicts(both)[SA_AE]
    assert verdict == "within spread" and evidence.startswith("SA better beyond the spread in 1/2")
    both.update(seeded("fmnist-2cc", {"fedhydra": 40.0, "fedhydra-ae": 45.0}))
    assert verdicts(both)[SA_AE][0] == "does not hold"


def test_ms_weights_on_own_classes():
    """The MS weights come from one run: the check is not judged (n = 1), and says what it would have read."""
    U_r = np.full((10, 5), 0.02)
    for c in range(10):
        U_r[c, c // 2] = 0.92
    verdict, evidence = verdicts({}, U_r)[MS]
    assert verdict == "not judged: n = 1" and evidence.endswith('on these seeds it would read "holds"')
    U_r[3, 1], U_r[3, 4] = 0.02, 0.92  # class 3 is strongest on client 5, not its owner client 2
    verdict, evidence = verdicts({}, U_r)[MS]
    assert verdict == "not judged: n = 1" and "[1, 1, 2, 5, 3" in evidence
    assert evidence.endswith('on these seeds it would read "does not hold"')
    flat = np.full((10, 5), 0.2)
    flat[np.arange(10), np.arange(10) // 2] = 0.21  # right owner, but not "near 1"
    assert verdicts({}, flat)[MS][1].endswith('on these seeds it would read "does not hold"')


def test_lambda_ablation():
    accs = {"fedhydra": 70.0, "fedhydra-l0.5-1": 65.0, "fedhydra-l1-0": 68.0}
    assert verdicts(seeded("fmnist-dir0.5", accs))[LAM][0] == "holds"
    # 0.1 below (1, 1): inside the std
    assert verdicts(seeded("fmnist-dir0.5", {**accs, "fedhydra-l1-0": 69.9}))[LAM][0] == "within spread"
    verdict, evidence = verdicts(seeded("fmnist-dir0.5", {**accs, "fedhydra-l1-0": 72.0}))[LAM]
    assert verdict == "does not hold"
    assert "(1,1) 70.00 ± 1.00 (n=3) vs (1,0) 72.00 ± 1.00 (n=3) (seeds 0, 1, 2 (n = 3): difference -2.00" in evidence


def test_lambda_rows_are_compared_seed_for_seed():
    """Issue 37: (1, 1) ran with seeds 0-2 and a λ row with seed 0 only; the row is set against seed 0 of (1, 1)
    (62.53 vs 61.24, -1.29 beside a 5-point swing), not against the three-seed mean 54.90 (which it beats by 7.6),
    and on that one common seed it is not judged."""
    runs = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 61.24, "fedhydra-l1-0": 62.53}, swing=5.0),
            "fmnist-dir0.5-s1": run("fmnist-dir0.5-s1", {"fedhydra": 53.69}, swing=5.0),
            "fmnist-dir0.5-s2": run("fmnist-dir0.5-s2", {"fedhydra": 49.77}, swing=5.0)}
    verdict, evidence = verdicts(runs, seeds=[1, 2])[LAM]
    assert verdict == "not judged: n = 1"
    assert "(1,1) 61.24 vs (1,0) 62.53 (seed 0 (n = 1): difference -1.29, spread 5.00" in evidence


def test_claims_compare_fedhydra_results_of_one_reading_only():
    """A λ row or an AE bar made on another reading than the (1, 1) / SA run is left out of the comparison."""
    runs = seeded("fmnist-dir0.5", {"fedhydra": 60.0, "fedhydra-l0.5-1": 65.0, "fedhydra-l1-0": 50.0,
                                    "fedhydra-ae": 66.0})
    for r in every_seed(runs, "fmnist-dir0.5"):
        for key in ("fedhydra", "fedhydra-l1-0", "fedhydra-ae"):
            r.metrics[key]["choices"] = {"reading": "authors"}
        r.metrics["fedhydra-l0.5-1"]["choices"] = {}  # made before the readings: literal
    verdict, evidence = verdicts(runs)[LAM]
    assert verdict == "holds" and "not compared: fmnist: l0.5-1 ran on another reading than (1,1) (authors)" in evidence
    assert verdicts(runs)[SA_AE][0] == "does not hold"  # same reading: compared
    for r in every_seed(runs, "fmnist-dir0.5"):
        r.metrics["fedhydra-ae"]["choices"] = {"reading": "literal"}
    verdict, evidence = verdicts(runs)[SA_AE]
    assert verdict == "not run" and "not compared, SA and AE ran on different readings" in evidence


def test_collapse_needs_a_drop_beyond_the_spread():
    """A drop from the best epoch to the final one is a collapse only beyond the spread of the seeds (issue 37: a
    3-point drop inside a 5-point swing held before); on one seed it is not judged, the curve's swing in its evidence,
    and a final epoch back at chance is no collapse to judge but a degenerate run."""
    small = seeded("fmnist-dir0.5", {"fedhydra": 72.0}, best={"fedhydra": 75.0}, swing=4.0, std=4.0)
    verdict, evidence = verdicts(small)[COLLAPSE_FMNIST]
    assert verdict == "within spread"
    assert "α=0.5 (best epoch 3, 3, 3): within spread (FedHydra best 75.00 ± 4.00 (n=3) vs final 72.00" in evidence
    drop = seeded("fmnist-dir0.5", {"fedhydra": 20.0}, best={"fedhydra": 56.0}, swing=4.0, std=4.0)
    verdict, evidence = verdicts(drop)[COLLAPSE_FMNIST]
    assert verdict == "holds"
    assert ("FedHydra best 56.00 ± 4.00 (n=3) vs final 20.00 ± 4.00 (n=3); seeds 0, 1, 2 (n = 3): difference "
            "+36.00, spread 4.00") in evidence
    # every panel must collapse ("all models"): a panel whose drop is inside its spread leaves the claim within the
    # spread (the best epoch is never below the final one, so this comparison cannot come out "does not hold")
    drop.update({k.replace("dir0.5", "dir0.3"): r for k, r in small.items()})
    assert verdicts(drop)[COLLAPSE_FMNIST][0] == "within spread"
    one = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 20.0}, best={"fedhydra": 56.0}, swing=4.0)}
    verdict, evidence = verdicts(one)[COLLAPSE_FMNIST]
    assert verdict == "not judged: n = 1" and "seed 0 (n = 1): difference +36.00, spread 4.00" in evidence
    no_curve = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedhydra": 20.0}, best={"fedhydra": 56.0})}
    verdict, evidence = verdicts(no_curve)[COLLAPSE_FMNIST]
    assert verdict == "not judged: n = 1" and "difference +36.00, no spread" in evidence
    at_chance = seeded("fmnist-dir0.5", {"fedhydra": 10.0}, best={"fedhydra": 56.0}, swing=0.5, std=0.5)
    verdict, _ = verdicts(at_chance)[COLLAPSE_FMNIST]
    assert verdict.startswith("not judged: server final accuracy 10.00 % at chance (10.00 %); server curve ends at "
                              "chance (final 10.00 %, best 56.00 %")


def test_local_curve_claim():
    """One run of FedAvg's curve over E: not judged (n = 1); its evidence keeps each comparison's difference and the
    curve's swing (which alone decided it before)."""
    r = run("cifar10-dir0.1", {})
    r.local_curve = {"epoch": [20.0, 40.0, 200.0, 400.0], "fedavg": [50.0, 60.0, 40.0, 30.0]}
    (c,) = fh.local_curve_claims({"cifar10-dir0.1": r})
    assert (c["verdict"], c["reason"]) == ("not judged", "n = 1") and "best 60.00 at E=40 of 400" in c["evidence"]
    assert "difference +20.00, spread 13.33" in c["evidence"] and "difference +30.00, spread 13.33" in c["evidence"]
    r.local_curve["fedavg"] = [30.0, 40.0, 50.0, 60.0]  # best at the end
    (c,) = fh.local_curve_claims({"cifar10-dir0.1": r})
    assert c["verdict"] == "not judged" and "difference -20.00, spread 10.00" in c["evidence"]
    r.local_curve["fedavg"] = [50.0, 60.0, 20.0, 55.0]  # 5 points down at the end, inside a 28-point swing
    (c,) = fh.local_curve_claims({"cifar10-dir0.1": r})
    assert c["verdict"] == "not judged" and "difference +5.00, spread 28.33" in c["evidence"]
    r.local_curve["fedavg"] = [50.0, 60.0, 20.0, 10.5]  # the curve ends at chance
    (c,) = fh.local_curve_claims({"cifar10-dir0.1": r})
    assert c["reason"] == "server curve ends at chance (final 10.50 %, best 60.00 %, chance 10.00 %)"
    assert fh.local_curve_claims({})[0]["verdict"] == "not run"


def test_paper_profile_claim():
    """One paper-profile run per column: not judged (n = 1), with the numbers; a FedHydra run that ends at chance is
    not judged for that reason."""
    good = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 70.0, "fedhydra": 77.0}, swing=1.0)}
    (c,) = fh.paper_profile_claims(good)
    assert (c["verdict"], c["reason"]) == ("not judged", "n = 1")
    assert "FedHydra 77.00 vs FedAvg 70.00 (seed 0 (n = 1): difference +7.00, spread 1.00" in c["evidence"]
    bad = {"fmnist-dir0.5": run("fmnist-dir0.5", {"fedavg": 70.0, "fedhydra": 10.0}, best={"fedhydra": 11.9},
                                swing=1.0)}
    (c,) = fh.paper_profile_claims(bad)
    assert c["verdict"] == "not judged" and c["evidence"].startswith("FedHydra's best epoch 11.90")
    assert c["reason"] == ("server final accuracy 10.00 % at chance (10.00 %); server curve ends at chance (final "
                           "10.00 %, best 11.90 %, chance 10.00 %)")
    assert "FedHydra 10.00 vs FedAvg 70.00 (seed 0 (n = 1))" in c["evidence"]
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
