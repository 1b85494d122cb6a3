"""FedHydra's report over seeds and variants: mean ± std cells, variant rows, readings, the spread rule in the claim
verdicts (the rule itself: tests/test_spread_verdicts.py).

Made-up run folders as the pipeline writes them (runs/ + live/): the seed-0 run, its extra seeds (``<run>-s<k>``) and
the variants, which feed one table cell.
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from helpers import compile_latex
from test_fedhydra_claims import run as made_up_run
from test_fedhydra_current import PIPE, committed_params
from test_fedhydra_current import write_run as write_live_run

from osfl.papers import fedhydra as fh
from osfl.reporting.comparison import render_comparison
from osfl.reporting.published import get_artifact
from osfl.reporting.spread import Side, compare, format_spread, mean_std
from osfl.reporting.grid import Grid

TABLE1 = ("table01", "FedHydra has the best ac")
SA_AE = ("figure07", "SA consistently outperfo")


def spread_params(repo_root: Path) -> dict:
    p = committed_params(repo_root)
    p.update(splits=["dir0.5", "dir0.3"], methods=["fedavg", "dense", "fedhydra"], lambdas=[],
             paper_columns={"datasets": [], "splits": [], "methods": []},
             spread={"splits": ["dir0.5"], "seeds": [1, 2]},
             variants={"fedhydra_literal": ["dir0.5"], "dense_code": ["dir0.5"]})
    return p


@pytest.fixture
def rendered(repo_root, tmp_path):
    """Render three seeds of fmnist-dir0.5 (seed 0's FedHydra record names no reading, which reads as literal, as
    its seeds 1 and 2 record it) and one seed of fmnist-dir0.3 (the authors' reading)."""
    results = tmp_path / "results"
    write_live_run(results, "fmnist-dir0.5", {"fedavg": 61.0, "dense": 57.45, "fedhydra": 50.0, "fedhydra-ae": 45.0},
                   None)
    write_live_run(results, "fmnist-dir0.5", {"fedhydra-literal": 40.0, "dense-bn0": 55.0})
    write_live_run(results, "fmnist-dir0.5-s1", {"fedavg": 62.0, "dense": 58.65, "fedhydra": 52.0}, "literal")
    write_live_run(results, "fmnist-dir0.5-s2", {"fedavg": 63.0, "dense": 59.85, "fedhydra": 54.0}, "literal")
    write_live_run(results, "fmnist-dir0.3", {"fedavg": 63.92, "dense": 50.0, "fedhydra": 49.0, "fedhydra-ae": 40.0},
                   "authors")
    out = tmp_path / "out"
    summary = tmp_path / "summary.json"
    fh.render(Grid.of(spread_params(repo_root)), results, tmp_path / "no-prepared-data", out, summary=summary,
              published_root=str(repo_root / PIPE / "published"))
    return out, summary


# --------------------------------------------------------------------------------------------------------------
# the generic pieces (osfl.reporting.spread, render_comparison)


def test_mean_std_is_the_sample_std():
    mean, std, n = mean_std([57.45, 58.65, 59.85])
    assert n == 3 and math.isclose(mean, 58.65) and math.isclose(std, 1.2)
    assert format_spread([57.45, 58.65, 59.85]) == "58.65 ± 1.20 (n=3)"
    assert format_spread([58.65]) == format_spread(58.65) == "58.65"  # one seed: the plain number
    assert format_spread([]) == "—" and math.isnan(mean_std([1.0])[1])


def test_within_the_spread_uses_the_larger_std():
    a, b = [69.0, 70.0, 71.0], [70.5, 70.5, 70.5]  # stds 1.0 and 0.0, means 70.0 and 70.5

    def side(name, values):
        return Side(name, dict(enumerate(values)))

    v = compare(side("a", a), side("b", b))
    assert v.verdict == "within spread"
    assert v.basis == "seeds 0, 1, 2 (n = 3): difference -0.50, spread 1.00 (larger sample std)"
    assert compare(side("a", a), side("b", [72.5, 72.5, 72.5])).verdict == "does not hold"  # 2.5 points > std 1.0
    # one seed each and no curve: not judged, and no spread to speak of
    one = compare(side("a", [70.0]), side("b", [70.5]))
    assert one.label == "not judged (n = 1)" and one.basis == "seed 0 (n = 1): difference -0.50, no spread"


def test_render_comparison_cells_with_seeds_and_extra_rows(tmp_path):
    art = get_artifact("table01", Path(__file__).resolve().parents[1] / "papers" / "fedhydra" / "published")
    ours = {("DENSE", "FashionMNIST alpha=0.5"): [57.45, 58.65, 59.85],
            ("FedAvg", "FashionMNIST alpha=0.5"): [61.0],
            ("OT", "FashionMNIST alpha=0.5"): 61.0,
            ("Mine", "FashionMNIST alpha=0.5"): 40.0}
    tex, md = render_comparison(art, ours, tmp_path, extra_rows=["Mine"])
    text = md.read_text()
    assert "| 58.65 ± 1.20 (n=3) / 74.20 (-15.55) |" in text  # Δ from the mean
    assert "| 61.00 / 75.76 (-14.76) |" in text and "| 61.00 / 74.88 (-13.88) |" in text
    assert "| Mine | — |" in text and "| 40.00 / — |" in text and text.index("| FedHydra (ours) |") < text.index("| Mine |")
    assert "sample standard deviation (ddof = 1)" in text
    assert "58.65 $\\pm$ 1.20 (n=3) / 74.20 (-15.55)" in tex.read_text()


# --------------------------------------------------------------------------------------------------------------
# the rendered report


def test_table1_cells_over_three_seeds(rendered):
    out, summary = rendered
    md, tex = (out / "table01.md").read_text(), (out / "table01.tex").read_text()
    assert "58.65 ± 1.20 (n=3) / 74.20 (-15.55)" in md  # DENSE, FashionMNIST α = 0.5
    assert "62.00 ± 1.00 (n=3) / 75.76 (-13.76)" in md  # FedAvg
    assert "52.00 ± 2.00 (n=3) / 77.20 (-25.20)" in md  # FedHydra
    assert "58.65 $\\pm$ 1.20 (n=3) / 74.20 (-15.55)" in tex
    assert "3 seeds (0, 1, 2) in FashionMNIST alpha=0.5" in md and "one run (seed 0) in the other columns" in md
    # the summary's gap is the mean's: α = 0.5 (-13.76, -15.55, -25.20) and α = 0.3 (-10.89, -22.79, -27.39)
    gaps = [-13.76, -15.55, -25.20, 63.92 - 74.81, 50.0 - 72.79, 49.0 - 76.39]
    assert json.loads(summary.read_text())["tables"]["table01"]["mean_gap"] == pytest.approx(sum(gaps) / 6, abs=1e-3)


def test_tables_with_seeds_and_variants_compile(rendered, tmp_path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed")
    out, _ = rendered
    folder = tmp_path / "latex"
    folder.mkdir()
    compile_latex([(out / f"{t}.tex").read_text() for t in ("table01", "table02", "table06")], folder)


def test_a_single_seed_cell_is_unchanged(rendered):
    out, _ = rendered
    md = (out / "table01.md").read_text()
    assert "| 63.92 / 74.81 (-10.89) |" in md  # FedAvg, α = 0.3: one run
    assert "63.92 ±" not in md


def test_variants_have_rows_of_their_own(rendered):
    out, _ = rendered
    md = (out / "table01.md").read_text()
    literal = next(ln for ln in md.splitlines() if ln.startswith("| FedHydra (literal Alg. 1) |"))
    dense0 = next(ln for ln in md.splitlines() if ln.startswith("| DENSE (official code, bn = 0) |"))
    assert "40.00 / —" in literal and "55.00 / —" in dense0
    assert "Rows below the paper's are variants of ours" in md
    assert "FedHydra (literal Alg. 1)" in (out / "table01.tex").read_text()
    assert "FedHydra (literal Alg. 1)" not in (out / "table02.md").read_text()  # not run on 2c/c here
    assert "2 variant cell(s)" in (out / "README.md").read_text()


def test_readings_are_reported(rendered):
    out, _ = rendered
    md, readme = (out / "table01.md").read_text(), (out / "README.md").read_text()
    assert ("FedHydra (ours) row: reading = literal (Alg. 1 as written; not recorded by the run, made when it was "
            "the only reading) in FashionMNIST alpha=0.5; authors (the released loop; its crop+flip views on colour images only) in FashionMNIST alpha=0.3.") in md
    assert "## Which reading produced each FedHydra number" in readme
    assert "| fmnist-dir0.3 | `fedhydra`, `fedhydra-ae` | authors (the released loop; its crop+flip views on colour images only) |" in readme
    assert "| fmnist-dir0.5 | `fedhydra`, `fedhydra-ae` | literal (Alg. 1 as written; not recorded" in readme
    assert "| fmnist-dir0.5 | `fedhydra-literal` | literal (Alg. 1 as written) |" in readme
    assert "| fmnist-dir0.5-s1 | `fedhydra` | literal (Alg. 1 as written) |" in readme
    assert "start at epoch 0" in readme
    runs_md = (out / "runs.md").read_text()
    assert "| fmnist-dir0.5-s2 | dense | 59.85 |" in runs_md and "| fmnist-dir0.5-s1 | fedhydra | 52.00 |" in runs_md


def test_seeds_of_another_reading_are_left_out_of_the_mean():
    runs = {"fmnist-dir0.5": made_up_run("fmnist-dir0.5", {"fedhydra": 50.0, "dense": 57.0}),  # no reading: literal
            "fmnist-dir0.5-s1": made_up_run("fmnist-dir0.5-s1", {"fedhydra": 70.0, "dense": 58.0}),
            "fmnist-dir0.5-s2": made_up_run("fmnist-dir0.5-s2", {"fedhydra": 52.0, "dense": 59.0})}
    runs["fmnist-dir0.5-s1"].metrics["fedhydra"]["choices"] = {"reading": "authors"}
    runs["fmnist-dir0.5-s2"].metrics["fedhydra"]["choices"] = {"reading": "literal"}
    runs["fmnist-dir0.5-s2"].metrics["dense"]["choices"] = {"bn": 0.0}
    left: list[str] = []
    assert fh.over_seeds(runs, "fmnist-dir0.5", "fedhydra", [1, 2], left_out=left) == [50.0, 52.0]
    assert fh.over_seeds(runs, "fmnist-dir0.5", "dense", [1, 2], left_out=left) == [57.0, 58.0]
    assert left == ["fmnist-dir0.5-s1/fedhydra", "fmnist-dir0.5-s2/dense"]
    note = fh._seeds_text("table01", runs, [1, 2])
    assert "3 seeds (0, 1, 2) in FashionMNIST alpha=0.5" in note
    assert "left out of the means" in note and "fmnist-dir0.5-s1/fedhydra" in note


def test_expected_results_contain_the_spread_runs_and_variants(repo_root):
    exp = fh.expected_results(Grid.of(spread_params(repo_root)))
    assert exp["fmnist-dir0.5-s1"] == exp["fmnist-dir0.5-s2"] == {"partition", "clients", "fedavg", "dense", "fedhydra"}
    assert "fmnist-dir0.3-s1" not in exp  # spread.splits is dir0.5 only
    assert {"fedhydra-literal", "dense-bn0"} <= exp["fmnist-dir0.5"]
    assert not {"fedhydra-literal", "dense-bn0"} & exp["fmnist-dir0.3"]


# --------------------------------------------------------------------------------------------------------------
# claim verdicts


def test_claim_within_the_spread_is_said():
    runs = {"fmnist-dir0.5": made_up_run("fmnist-dir0.5", {"dense": 70.5, "fedhydra": 68.8}),
            "fmnist-dir0.5-s1": made_up_run("fmnist-dir0.5-s1", {"dense": 70.5, "fedhydra": 70.0}),
            "fmnist-dir0.5-s2": made_up_run("fmnist-dir0.5-s2", {"dense": 70.5, "fedhydra": 71.2})}
    (c,) = [c for c in fh.claims(runs, ["dir0.5"], None, "-", [], seeds=[1, 2]) if c["artifact"] == "table01"]
    # FedHydra 70.00 ± 1.20 below DENSE 70.50, by 0.5 points, within FedHydra's std of 1.2: no longer "does not hold"
    assert c["verdict"] == "within spread" and "spread" not in c
    assert ("FedHydra 70.00 ± 1.20 (n=3) vs DENSE 70.50 ± 0.00 (n=3) (seeds 0, 1, 2 (n = 3): difference -0.50, "
            "spread 1.20 (larger sample std))") in c["evidence"]
    # the same runs without the extra seeds: one run each, not judged (and no curve, so no spread either)
    (c1,) = [c for c in fh.claims(runs, ["dir0.5"], None, "-", []) if c["artifact"] == "table01"]
    assert (c1["verdict"], c1["reason"]) == ("not judged", "n = 1")
    assert "FedHydra 68.80 vs DENSE 70.50 (seed 0 (n = 1): difference -1.70, no spread)" in c1["evidence"]


def test_claim_outside_the_spread_holds():
    runs = {"fmnist-dir0.5": made_up_run("fmnist-dir0.5", {"dense": 60.0, "fedhydra": 69.0}),
            "fmnist-dir0.5-s1": made_up_run("fmnist-dir0.5-s1", {"dense": 61.0, "fedhydra": 70.0}),
            "fmnist-dir0.5-s2": made_up_run("fmnist-dir0.5-s2", {"dense": 62.0, "fedhydra": 71.0})}
    v = {(c["artifact"], c["claim"][:24]): c for c in fh.claims(runs, ["dir0.5"], None, "-", [], seeds=[1, 2])}
    assert v[TABLE1]["verdict"] == "holds"  # 9 points apart, stds 1.0
    assert "difference +9.00, spread 1.00 (larger sample std)" in v[TABLE1]["evidence"]


def test_sa_ae_claim_with_seeds_and_the_readme(repo_root, tmp_path):
    """SA ran with seeds 0 and 1, AE with seed 0 only: SA is compared on seed 0 (69.0 vs 69.5), not by its two-seed
    mean (70.0, which "held" before), and one seed is not judged (its spread, the curves' swing, where they have
    one, in the evidence). With three common seeds it is decided, on those seeds only."""
    runs = {"fmnist-dir0.5": made_up_run("fmnist-dir0.5", {"fedhydra": 69.0, "fedhydra-ae": 69.5}),
            "fmnist-dir0.5-s1": made_up_run("fmnist-dir0.5-s1", {"fedhydra": 71.0})}
    v = {(c["artifact"], c["claim"][:24]): c for c in fh.claims(runs, ["dir0.5"], None, "-", [], seeds=[1])}
    c = v[SA_AE]
    assert (c["verdict"], c["reason"]) == ("not judged", "n = 1")
    assert "SA 69.00 vs AE 69.50; seed 0 (n = 1): difference -0.50, no spread" in c["evidence"]
    assert "71.00" not in c["evidence"]
    curves = {"fmnist-dir0.5": made_up_run("fmnist-dir0.5", {"fedhydra": 69.0, "fedhydra-ae": 69.5}, swing=1.0),
              "fmnist-dir0.5-s1": made_up_run("fmnist-dir0.5-s1", {"fedhydra": 71.0}, swing=1.0)}
    (n1,) = [x for x in fh.claims(curves, ["dir0.5"], None, "-", [], seeds=[1]) if x["artifact"] == "figure07"]
    assert (n1["verdict"], n1["reason"]) == ("not judged", "n = 1")
    assert "difference -0.50, spread 1.00 (epoch-to-epoch swing)" in n1["evidence"]
    # SA on seeds 0-3, AE on seeds 0-2: compared on seeds 0-2 (SA's seed 3, 80.0, would lift its mean to 72.0)
    three = {"fmnist-dir0.5": made_up_run("fmnist-dir0.5", {"fedhydra": 69.0, "fedhydra-ae": 69.5}),
             "fmnist-dir0.5-s1": made_up_run("fmnist-dir0.5-s1", {"fedhydra": 70.0, "fedhydra-ae": 70.5}),
             "fmnist-dir0.5-s2": made_up_run("fmnist-dir0.5-s2", {"fedhydra": 68.0, "fedhydra-ae": 68.5}),
             "fmnist-dir0.5-s3": made_up_run("fmnist-dir0.5-s3", {"fedhydra": 80.0})}
    (w,) = [x for x in fh.claims(three, ["dir0.5"], None, "-", [], seeds=[1, 2, 3]) if x["artifact"] == "figure07"]
    assert w["verdict"] == "within spread"
    assert ("SA 69.00 ± 1.00 (n=3) vs AE 69.50 ± 1.00 (n=3); seeds 0, 1, 2 (n = 3): difference -0.50, spread 1.00"
            in w["evidence"])
    readme = fh._write_readme([], {}, [c, w], runs, tmp_path, "quick", seeds=[1])
    text = readme.read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("- figure07: SA consistently outperforms AE (§4.2.2):"))
    assert ": **not judged" in row and "n = 1" in row.split("**")[1]
    assert ": **within spread** (" in text
    assert "larger of the two sides' sample standard deviations" in text and "same seeds only" in text
    assert 'decided only on n >= 3 seeds: with fewer it reads "not judged (n = k)"' in text
