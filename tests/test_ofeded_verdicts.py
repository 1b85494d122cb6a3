"""OFedED's claim verdicts on made-up run records (the rule: osfl.reporting.spread, tests/test_spread_verdicts.py):
Table 1's "OFedED above every other method", Fig. 2(b)'s IPC = 2 and Fig. 3's noise claims, seed for seed, beyond
the spread on three seeds (on fewer: not judged (n = k), with the numbers), not judged on degenerate clients."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from osfl.papers import ofeded
from osfl.reporting.grid import Grid

PAPER = Path(__file__).resolve().parents[1] / "papers" / "ofeded"


def params(**kw) -> dict:
    p = yaml.safe_load((PAPER / "params.yaml").read_text())
    p.update(datasets=["fmnist"], **kw)
    return p


def record(root: Path, run: str, rid: str, acc: float, curve: list[float] | None = None) -> None:
    """results/<run>/runs/<rid>.json, and with ``curve`` its logged test accuracies (live/<rid>/)."""
    (root / run / "runs").mkdir(parents=True, exist_ok=True)
    (root / run / "runs" / f"{rid}.json").write_text(json.dumps({"acc_final": acc}))
    if curve is not None:
        live = root / run / "live" / rid / "plots" / "metrics"
        live.mkdir(parents=True, exist_ok=True)
        rows = "".join(f"{i}\t{a}\n" for i, a in enumerate(curve))
        live.joinpath("test_acc.tsv").write_text("step\ttest_acc\n" + rows)


def wobble(final: float, swing: float) -> list[float]:
    """A curve ending at ``final`` whose last half moves by ``swing`` every epoch."""
    return [10.0, final, final - swing, final, final - swing, final]


SEEDS = (0, 1, 2)
OFFSET = {0: -1.0, 1: 0.0, 2: 1.0}  # per seed around a mean: sample std 1.00 over the three seeds


def table1_numbers(root: Path) -> dict:
    p = params(splits=["dir0.3"], seeds=list(SEEDS))
    from osfl.reporting.published import load_artifacts
    from osfl.reporting.runs import read_runs

    art = next(a for a in load_artifacts(str(PAPER / "published")) if a.id == "table1")
    return ofeded.table1(Grid.of(p), read_runs(root, Grid.of(p), ofeded._entries(Grid.of(p))), art)[1]


def test_table1_claim_uses_the_seeds_both_methods_ran(tmp_path):
    # three seeds each, 7 points apart, stds 1.00 and 2.00: holds
    for seed, (cob, ofe) in enumerate(((50.0, 60.0), (54.0, 58.0), (52.0, 59.0))):
        record(tmp_path, f"fmnist-dir0.3-s{seed}", "coboost", cob)
        record(tmp_path, f"fmnist-dir0.3-s{seed}", "ofeded", ofe)
    ((claim, v),) = ofeded.claims(table1_numbers(tmp_path), tmp_path)
    assert claim == "Fashion-MNIST, dir0.3: OFedED above every other method we ran"
    assert v.text().startswith("holds (59.00 vs Co-Boosting 52.00, +7.00); OFedED 59.00 ± 1.00 (n=3) vs Co-Boosting "
                               "52.00 ± 2.00 (n=3) (seeds 0, 1, 2 (n = 3): difference +7.00, spread 2.00")
    # Co-Boosting without seed 1: compared on seeds 0 and 2 only (OFedED's mean there 59.50, not its 59.00 over
    # three), and two seeds are not judged
    (tmp_path / "fmnist-dir0.3-s1" / "runs" / "coboost.json").unlink()
    ((_, v),) = ofeded.claims(table1_numbers(tmp_path), tmp_path)
    assert v.label == "not judged (n = 2)"
    assert v.basis == ("OFedED 59.50 ± 0.71 (n=2) vs Co-Boosting 51.00 ± 1.41 (n=2) (seeds 0, 2 (n = 2): difference "
                       "+8.50, spread 1.41 (larger sample std))")
    # Co-Boosting's seed 0 alone (no curve): one seed, no spread, whatever the means over other seeds say
    (tmp_path / "fmnist-dir0.3-s2" / "runs" / "coboost.json").unlink()
    numbers = table1_numbers(tmp_path)
    ((_, v),) = ofeded.claims(numbers, tmp_path)
    assert v.label == "not judged (n = 1)"
    assert v.basis == "OFedED 60.00 vs Co-Boosting 50.00 (seed 0 (n = 1): difference +10.00, no spread)"
    # clients at chance on seed 0: not judged, whatever the spread
    (tmp_path / "fmnist-dir0.3-s0" / "clients.json").write_text(json.dumps({"local_acc_mean": 10.3}))
    ((_, v),) = ofeded.claims(numbers, tmp_path)
    assert v.label == "not judged: clients at chance (mean local accuracy 10.30 %, chance 10.00 %)"


def test_ipc_and_noise_claims_beyond_the_spread(tmp_path):
    # three seeds, each result mean - 1, mean, mean + 1 (sample std 1.00); the curves swing by 0.2 only (the
    # spread of one seed, which three seeds do not use)
    p = params(seeds=list(SEEDS))
    runs = [f"fmnist-{p['figure_split']}-s{seed}" for seed in SEEDS]
    for seed, run in zip(SEEDS, runs):
        acc = 60.0 + OFFSET[seed]
        record(tmp_path, run, "ofeded", acc, wobble(acc, 0.2))  # the main run: IPC 2 (its distilled.json)
        (tmp_path / run / "distilled.json").write_text(json.dumps({"settings": {"ipc": 2}}))
        for v, mean in {"ipc1": 55.0, "ipc5": 59.5, "img1": 58.0, "img3": 50.0, "grad1": 45.0, "grad3": 40.0,
                        "both1": 30.0, "both3": 61.5}.items():
            record(tmp_path, run, f"ofeded-{v}", mean + OFFSET[seed], wobble(mean + OFFSET[seed], 0.2))
    _, verdicts = ofeded.ipc_panels(Grid.of(p), tmp_path)
    ((claim, v),) = verdicts
    assert claim == "Fashion-MNIST, α = 0.3: IPC = 2 gives OFedED's best accuracy (Fig. 2(b))"
    assert v.verdict == "within spread"  # IPC 5 is 0.5 below IPC 2, inside the std of 1 (beyond the 0.2 swing)
    assert ("IPC 2 60.00 ± 1.00 (n=3) vs IPC 5 59.50 ± 1.00 (n=3) (seeds 0, 1, 2 (n = 3): difference +0.50, "
            "spread 1.00 (larger sample std)") in v.evidence
    _, verdicts = ofeded.dp_panels(Grid.of(p), tmp_path)
    v = {c.split(": ", 1)[1]: x for c, x in verdicts}
    lower = v["every noise setting lowers accuracy (Fig. 3)"]
    assert lower.verdict == "does not hold" and "no noise 60.00 ± 1.00 (n=3) vs both σ=3 61.50" in lower.evidence
    assert v["noise on the gradients costs more than noise on the images (Fig. 3)"].verdict == "holds"  # 54 vs 42.5
    both = v["noise on both gives the largest drop (Fig. 3)"]  # both: (30 + 61.5) / 2 = 45.75 vs gradients 42.5
    assert both.verdict == "does not hold"
    assert "gradients (mean over σ) 42.50 ± 1.00 (n=3) vs both (mean over σ) 45.75 ± 1.00 (n=3)" in both.evidence
    # the DP-SGD clients of grad1 on seed 0 (results/<run>-dpg1/clients.json) all alike: grad1's comparisons are
    # not judged
    run = runs[0]
    (tmp_path / f"{run}-dpg1").mkdir()
    (tmp_path / f"{run}-dpg1" / "clients.json").write_text(json.dumps(
        {"local_acc_mean": 40.0, "per_client": [{"local_test_acc": 40.0}] * 10}))
    _, verdicts = ofeded.dp_panels(Grid.of(p), tmp_path)
    v = {c.split(": ", 1)[1]: x for c, x in verdicts}
    assert v["noise on the gradients costs more than noise on the images (Fig. 3)"].label == (
        "not judged: clients all equal (all 10 exactly 40.00 %)")


def test_table3_claims_compare_the_rows_beyond_the_spread(tmp_path):
    # three seeds, each row mean - 1, mean, mean + 1 (sample std 1.00); the curves swing by 0.2 only
    p = params(splits=["dir0.3"], seeds=list(SEEDS))
    runs = [f"fmnist-dir0.3-s{seed}" for seed in SEEDS]

    def row(rid: str, mean: float, guards: dict | None = None, seeds=SEEDS) -> None:
        for seed in seeds:
            record(tmp_path, runs[seed], rid, mean + OFFSET[seed], wobble(mean + OFFSET[seed], 0.2))
            if guards is not None:
                (tmp_path / runs[seed] / "runs" / f"{rid}.json").write_text(
                    json.dumps({"acc_final": mean + OFFSET[seed], "guards": guards}))

    rows = {"coboost": 50.0, "ofeded": 60.0, "ofeded-l": 55.0, "ofeded-lo": 58.5}  # rows 1, 8, 2, 6 (✓ · – · ✓)
    for rid, acc in rows.items():
        row(rid, acc)
    v = dict(ofeded.ablation_claims(ofeded.table3_sides(Grid.of(p), tmp_path)))
    where = "Fashion-MNIST, α = 0.3, Table 3"
    assert v[f"{where}: every variant of OFedED above Co-Boosting (row 1, no part)"].verdict == "holds"
    assert v[f"{where}: all three parts (row 8) the best row"].verdict == "holds"
    assert v[f"{where}: all three parts (row 8) the best row"].evidence.startswith(
        "over the 4 of Table 3's 8 rows run; ")
    drop = v[f"{where}: without the class-weighted ensemble (✓ · – · ✓) below all three parts"]
    assert drop.verdict == "holds" and "difference +1.50, spread 1.00 (larger sample std)" in drop.full_evidence
    row("ofeded-eo", 59.5)  # row 7 (– · ✓ · ✓) half a point under row 8
    v = dict(ofeded.ablation_claims(ofeded.table3_sides(Grid.of(p), tmp_path)))
    best = v[f"{where}: all three parts (row 8) the best row"]
    assert best.verdict == "within spread" and "60.00 ± 1.00 (n=3) vs – · ✓ · ✓ 59.50" in best.evidence
    # a run that failed its regime guard feeds no verdict: row 6 without seed 0 is compared on two seeds (not
    # judged); failed on every seed, row 6 is gone and its claim not run
    no_ens = f"{where}: without the class-weighted ensemble (✓ · – · ✓) below all three parts"
    failed = {"server_gain_min": {"passed": False, "floor": 15.0, "value": 12.0}}
    row("ofeded-lo", 58.5, failed, seeds=(0,))
    v = dict(ofeded.ablation_claims(ofeded.table3_sides(Grid.of(p), tmp_path)))
    assert v[no_ens].label == "not judged (n = 2)" and "seeds 1, 2 (n = 2): difference +1.50" in v[no_ens].basis
    row("ofeded-lo", 58.5, failed)
    v = dict(ofeded.ablation_claims(ofeded.table3_sides(Grid.of(p), tmp_path)))
    assert v[no_ens].verdict == "not run"


def test_teacher_claims_per_seed(tmp_path):
    p = params(seeds=list(SEEDS))
    for seed, (ofe, den) in enumerate((([20.0, 40.0, 60.0, 70.0], [20.0, 30.0, 50.0, 55.0]),
                                       ([22.0, 41.0, 62.0, 72.0], [21.0, 33.0, 49.0, 57.0]),
                                       ([21.0, 42.0, 61.0, 71.0], [22.0, 31.0, 51.0, 56.0]))):
        for rid, curve in (("ofeded", ofe), ("coboost-dense", den)):
            live = tmp_path / f"fmnist-{p['figure_split']}-s{seed}" / "live" / rid / "plots" / "metrics" / "train"
            live.mkdir(parents=True)
            live.joinpath("teacher_acc.tsv").write_text(
                "step\tteacher_acc\n" + "".join(f"{i + 1}\t{a}\n" for i, a in enumerate(curve)))
    v = dict(ofeded.teacher_claims(ofeded.teacher_sides(Grid.of(p), tmp_path)))
    ends = v["Fashion-MNIST, α = 0.3: OFedED's ensemble ends above DENSE's and Co-Boosting's (Fig. 2(a))"]
    assert ends.verdict == "holds"
    assert "OFedED last epoch 71.00 ± 1.00 (n=3) vs DENSE last epoch 56.00 ± 1.00" in ends.evidence
    rises = v["Fashion-MNIST, α = 0.3: OFedED's ensemble accuracy rises over the epochs (Fig. 2(a))"]
    assert rises.verdict == "holds" and "vs OFedED epoch 1 21.00 ± 1.00 (n=3)" in rises.evidence


def test_the_runs_table_gives_final_best_gate_and_finetunes(tmp_path):
    p = params(splits=["dir0.3"], seeds=[0])
    run = tmp_path / "fmnist-dir0.3-s0" / "runs"
    run.mkdir(parents=True)
    base = {"acc_best": 62.5, "best_epoch": 7, "epochs": 10, "server_seconds": 301.2}
    run.joinpath("ofeded.json").write_text(json.dumps({
        **base, "acc_final": 61.0, "extras": {"weight_updates": {"kept": 3, "proposed": 9}, "finetunes": 2},
        "guards": {"server_gain_min": {"passed": True}}}))
    run.joinpath("coboost.json").write_text(json.dumps({
        **base, "acc_final": 12.0, "guards": {"clients:clients.client_acc_mean_min": {"passed": False}}}))
    df = ofeded.run_table(Grid.of(p), tmp_path)
    o, c = df.loc["Fashion-MNIST, dir0.3, s0: ofeded"], df.loc["Fashion-MNIST, dir0.3, s0: coboost"]
    assert (o["final (%)"], o["best (%)"], o["best epoch"], o["gate kept / proposed"], o["fine-tunes"], o["guards"]) == (
        "61.00", "62.50", "7", "3 / 9", "2", "passed")
    assert c["gate kept / proposed"] == "—" and c["guards"] == "failed: clients:clients.client_acc_mean_min"
    assert ofeded.run_table(Grid.of(params(splits=["dir0.1"], seeds=[0])), tmp_path) is None
