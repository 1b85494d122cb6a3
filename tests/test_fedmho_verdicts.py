"""FedMHO's Table IV claim verdicts (the rule: osfl.reporting.spread, tests/test_spread_verdicts.py) on made-up
sides and run folders: seed for seed, decided beyond the spread, not judged where a classifier part's clients are at
chance or the decoders' samples are constant."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from osfl.papers import fedmho
from osfl.reporting.spread import Side

PAPER = Path(__file__).resolve().parents[1] / "papers" / "fedmho"
METHODS = ["FedAvg", "FedDF", "DENSE", "Co-Boosting", "FEDCVAE", "FedMHO", "FedMHO-MD", "FedMHO-SD"]
ROW = "Fashion, 0.5"


def sides(means: dict[str, float], std: float = 0.5) -> dict[tuple[str, str], Side]:
    """Two seeds per column, mean ± ``std``·√2 apart (sample std ``std``)."""
    d = std / 2 ** 0.5
    return {(ROW, m): Side(m, {0: v - d, 1: v + d}) for m, v in means.items()}


def test_table4_claims():
    base = {"FedAvg": 40.0, "FedDF": 45.0, "DENSE": 50.0, "Co-Boosting": 52.0, "FEDCVAE": 55.0, "FedMHO": 58.0,
            "FedMHO-MD": 62.0, "FedMHO-SD": 61.0}
    v = dict(fedmho.claims(sides(base)))
    assert v["MD and SD are the two best methods in every row (§5.2)"].verdict == "holds"
    assert v["the KD terms help: MD and SD at least plain FedMHO (§5.3.1)"].verdict == "holds"
    gain = next(x for k, x in v.items() if k.startswith("FedMHO / MD / SD beat the best baseline"))
    assert gain.verdict == "holds" and gain.evidence.startswith("ours over 1 rows: best baseline FEDCVAE; gains +3.00")
    close = dict(fedmho.claims(sides({**base, "FedMHO-SD": 58.4})))  # SD 0.4 above FedMHO, stds 0.5
    assert close["the KD terms help: MD and SD at least plain FedMHO (§5.3.1)"].verdict == "within spread"
    assert close["MD and SD are the two best methods in every row (§5.2)"].verdict == "within spread"
    worse = dict(fedmho.claims(sides({**base, "FedMHO-SD": 50.0})))
    assert worse["MD and SD are the two best methods in every row (§5.2)"].verdict == "does not hold"
    assert fedmho.claims(sides({"FedAvg": 1.0}))[0][1].verdict == "not run"


def test_table4_sides_read_curves_clients_and_samples(tmp_path):
    params = yaml.safe_load((PAPER / "params.yaml").read_text())
    run = tmp_path / "fmnist-dir0.5-s0"
    live = run / "live" / "fedmho-md" / "plots" / "metrics"
    live.mkdir(parents=True)
    live.joinpath("test_acc.tsv").write_text("step\ttest_acc\n0\t10\n1\t50\n2\t60\n3\t58\n4\t60\n")
    numbers = {(ROW, "FedMHO-MD"): {"values": {0: 60.0}, "run": ("fmnist", "dir0.5"), "id": "fedmho-md"}}
    (side,) = fedmho.table04_sides(params, tmp_path, numbers).values()
    assert side.values == {0: 60.0} and side.swings == {0: 2.0} and side.degenerate == {0: None}
    # the VGG-9 part of the cohort at chance; the CVAE clients' decoded samples all one image
    (run / "clients-vgg9.json").write_text(json.dumps({"local_acc_mean": 10.4}))
    (side,) = fedmho.table04_sides(params, tmp_path, numbers).values()
    assert side.degenerate[0] == "clients at chance (mean local accuracy 10.40 %, chance 10.00 %)"
    (run / "clients-vgg9.json").unlink()
    (run / "samples").mkdir()
    np.savez(run / "samples" / "samples.npz", images=np.zeros((10, 4, 1, 28, 28), dtype=np.uint8))
    (side,) = fedmho.table04_sides(params, tmp_path, numbers).values()
    assert side.degenerate[0] == "generator samples constant (40 samples, all the same image)"
