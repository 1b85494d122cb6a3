"""FedMHO's Table IV claim verdicts (the rule: osfl.reporting.spread, tests/test_spread_verdicts.py) on made-up
sides and run folders: seed for seed, decided beyond the spread on three seeds (on fewer: not judged (n = k)), not
judged where a classifier part's clients are at chance or the decoders' samples are constant."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from osfl.papers import fedmho
from osfl.reporting.spread import Side
from osfl.reporting.grid import Grid

PAPER = Path(__file__).resolve().parents[1] / "papers" / "fedmho"
METHODS = ["FedAvg", "FedDF", "DENSE", "Co-Boosting", "FEDCVAE", "FedMHO", "FedMHO-MD", "FedMHO-SD"]
ROW = "Fashion, 0.5"


def sides(means: dict[str, float], std: float = 0.5, n: int = 3) -> dict[tuple[str, str], Side]:
    """Three seeds per column, mean - ``std``, mean, mean + ``std`` (sample std ``std``); ``n = 2``: the first and
    the last of them only (the same mean)."""
    keep = (0, 1, 2) if n == 3 else (0, 2)
    return {(ROW, m): Side(m, {s: (v - std, v, v + std)[s] for s in keep}) for m, v in means.items()}


def test_table4_claims():
    base = {"FedAvg": 40.0, "FedDF": 45.0, "DENSE": 50.0, "Co-Boosting": 52.0, "FEDCVAE": 55.0, "FedMHO": 58.0,
            "FedMHO-MD": 62.0, "FedMHO-SD": 61.0}
    v = dict(fedmho.claims(sides(base)))
    assert v["MD and SD are the two best methods in every row (§5.2)"].verdict == "holds"
    assert v["the KD terms help: MD and SD at least plain FedMHO (§5.3.1)"].verdict == "holds"
    gain = next(x for k, x in v.items() if k.startswith("FedMHO / MD / SD beat the best baseline"))
    assert gain.verdict == "holds" and gain.evidence.startswith("ours over 1 rows: best baseline FEDCVAE; gains +3.00")
    # the same columns on two seeds: every claim waits for a third, its parts' numbers still given
    two = dict(fedmho.claims(sides(base, n=2)))
    assert {x.label for x in two.values()} == {"not judged (n = 2)"}
    kd = two["the KD terms help: MD and SD at least plain FedMHO (§5.3.1)"]
    assert "seeds 0, 2 (n = 2): difference +4.00, spread 0.71 (larger sample std)" in kd.evidence
    close = dict(fedmho.claims(sides({**base, "FedMHO-SD": 58.4})))  # SD 0.4 above FedMHO, stds 0.5
    assert close["the KD terms help: MD and SD at least plain FedMHO (§5.3.1)"].verdict == "within spread"
    assert close["MD and SD are the two best methods in every row (§5.2)"].verdict == "within spread"
    worse = dict(fedmho.claims(sides({**base, "FedMHO-SD": 50.0})))
    assert worse["MD and SD are the two best methods in every row (§5.2)"].verdict == "does not hold"
    assert [v.verdict for _, v in fedmho.claims(sides({"FedAvg": 1.0}))] == ["not run"] * 3
    # a row without FEDCVAE and Co-Boosting: judged on the columns that ran, and the claim says which did not
    part = dict(fedmho.claims(sides({k: x for k, x in base.items() if k not in ("FEDCVAE", "Co-Boosting")})))
    assert part["MD and SD are the two best methods in every row (§5.2) (judged without Co-Boosting (every row), "
                "FEDCVAE (every row): not run, or failed a guard)"].verdict == "holds"
    gain = next(x for k, x in part.items() if k.startswith("FedMHO / MD / SD beat") and k.endswith(
        "(judged without Co-Boosting (every row), FEDCVAE (every row): not run, or failed a guard)"))
    assert gain.evidence.startswith("ours over 1 rows: best baseline DENSE; gains +8.00 / +12.00 / +11.00")
    # a column missing in one row only is named with that row
    two = {**sides(base), **{("Fashion, 2, 0.3", m): Side(m, {0: x - 0.3, 1: x, 2: x + 0.3}) for m, x in base.items()
                            if m != "FedAvg"}}
    key = next(k for k in dict(fedmho.claims(two)) if k.startswith("MD and SD are the two best"))
    assert key.endswith("(judged without FedAvg (Fashion, 2, 0.3): not run, or failed a guard)")


def test_table6_claim_compares_each_run_with_itself_without_cleaning():
    cleaned = sides({"FedMHO-MD": 62.0, "FedMHO-SD": 61.0})
    claim = "k-means cleaning helps: MD and SD above themselves without it in every row (Table VI vs IV, §5.3.2)"
    v = dict(fedmho.cleaning_claims(cleaned, sides({"FedMHO-MD": 58.0, "FedMHO-SD": 60.8})))[claim]
    assert v.verdict == "within spread"  # SD 0.2 above itself without cleaning, stds 0.5
    assert "FedMHO-MD (cleaned) 62.00 ± 0.50 (n=3) vs FedMHO-MD (no cleaning) 58.00 ± 0.50 (n=3)" in v.evidence
    assert dict(fedmho.cleaning_claims(cleaned, sides({"FedMHO-MD": 64.0})))[claim].verdict == "does not hold"
    assert dict(fedmho.cleaning_claims(cleaned, {}))[claim].verdict == "not run"


def test_table4_sides_read_curves_clients_and_samples(tmp_path):
    params = yaml.safe_load((PAPER / "params.yaml").read_text())
    run = tmp_path / "fmnist-dir0.5-s0"
    live = run / "live" / "fedmho-md" / "plots" / "metrics"
    live.mkdir(parents=True)
    live.joinpath("test_acc.tsv").write_text("step\ttest_acc\n0\t10\n1\t50\n2\t60\n3\t58\n4\t60\n")
    numbers = {(ROW, "FedMHO-MD"): {"values": {0: 60.0}, "run": ("fmnist", "dir0.5"), "id": "fedmho-md"}}
    (side,) = fedmho.table04_sides(Grid.of(params), tmp_path, numbers).values()
    assert side.values == {0: 60.0} and side.swings == {0: 2.0} and side.degenerate == {0: None}
    # the VGG-9 part of the cohort at chance; the CVAE clients' decoded samples all one image
    (run / "clients-vgg9.json").write_text(json.dumps({"local_acc_mean": 10.4}))
    (side,) = fedmho.table04_sides(Grid.of(params), tmp_path, numbers).values()
    assert side.degenerate[0] == "clients at chance (mean local accuracy 10.40 %, chance 10.00 %)"
    (run / "clients-vgg9.json").unlink()
    (run / "samples").mkdir()
    np.savez(run / "samples" / "samples.npz", images=np.zeros((10, 4, 1, 28, 28), dtype=np.uint8))
    (side,) = fedmho.table04_sides(Grid.of(params), tmp_path, numbers).values()
    assert side.degenerate[0] == "generator samples constant (40 samples, all the same image)"


def test_table4_caption_names_the_clients_behind_its_runs(tmp_path):
    params = yaml.safe_load((PAPER / "params.yaml").read_text())
    params.update(datasets=["fmnist"], splits=["dir0.5", "dir0.1"], seeds=[0])
    assert fedmho.parts_note(Grid.of(params), tmp_path) == ""
    for split, acc in (("dir0.5", 58.19), ("dir0.1", 28.07)):
        run = tmp_path / f"fmnist-{split}-s0"
        run.mkdir()
        (run / "clients-vgg9.json").write_text(json.dumps({"local_acc_mean": acc, "epochs_run": 20}))
    (tmp_path / "fmnist-dir0.5-s0" / "clients-cvae_small.json").write_text(json.dumps({"per_client": [
        {"client": 5, "final_loss": 282.3, "mean_image_loss": 392.8},
        {"client": 6, "final_loss": 842.9, "mean_image_loss": 382.3, "diverged_in_epochs": [16, 40]}]}))
    assert fedmho.parts_note(Grid.of(params), tmp_path) == (
        "Clients: vgg9 mean local accuracy dir0.5 s0 58.19 %, dir0.1 s0 28.07 % (20 local epochs); cvae_small "
        "clients ending below their data's mean-image loss dir0.5 s0 1/2; restarted from a fresh draw: dir0.5 s0 "
        "client 6 after failed attempts ending in epochs 16, 40.")
