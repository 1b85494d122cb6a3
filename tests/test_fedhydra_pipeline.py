"""The FedHydra paper pipeline (papers/fedhydra/, a DVC project of its own) at smoke profile, in a temporary copy of the repository.

Paid once per run of the suite: ONE representative slice of the DAG runs for real (the real Fashion-MNIST runs are
the committed quick-profile ones, checked by tests/test_fedhydra_golden.py), on the CIFAR-10 stand-in with the
2-layer CNN (a 28x28-sized model where the test checks wiring, not a model): the Dir(0.5) split, FedAvg, DENSE
and FedHydra, the AE variant, one λ-ablation row, and each other experiment family once
(heterogeneous clients, K = 10, two global rounds, one timed run, the local-epoch curve). The render stage must
write all 18 tables and the 11 result figures from it, mark stand-in data, fill the cells of every family, and a
second `dvc repro` must do nothing. The FULL paper grid (every dataset, split, method and family as the paper runs
it) is checked structurally: `dvc dag` resolves every stage and builds the graph. The claim logic is tested on made-up runs
(tests/test_fedhydra_claims.py).
"""
from __future__ import annotations

import json
import shutil
from collections import Counter

import pytest
from helpers import compile_latex, dag, host_facts, repo_copy, sh

from osfl.reporting.runs import NOT_DRAWN

pytestmark = pytest.mark.slow
SUB = "papers/fedhydra"  # a DVC project of its own: its commands run there
FIGURES = ("figure03", "figure04", "figure05", "figure06", "figure07", "figure08", "figure09", "figure10",
           "figure11", "figure12", "figure13")


@pytest.fixture(scope="module")
def fedhydra_repo(tmp_path_factory, repo_root):
    work = tmp_path_factory.mktemp("fedhydra") / "repo"
    with repo_copy(repo_root, work, "papers/fedhydra") as params:
        params.update(profile="smoke", datasets=["cifar10"], splits=["dir0.5"],
                      methods=["fedavg", "dense", "fedhydra"], lambdas=params["lambdas"][:1])
        # the 2-layer CNN (BN, so the BN-statistics losses run) instead of the 3-layer CNN with 128 channels: wiring,
        # not a model, is under test (the paper's choice stays in papers/fedhydra/params.yaml)
        params["model"]["cifar10"] = "cnn2"
        # every other experiment family once, on the CIFAR-10 stand-in; heterogeneous clients of two small
        # architectures (grouped by architecture as M1..M5 are) and a 2-layer CNN server
        params["hetero"].update(datasets=["cifar10"], splits=["dir0.5"], methods=["fedhydra"],
                                client_models="cnn2,lenet5_avg,cnn2,lenet5_avg,cnn2", server_model="cnn2")
        params["ksweep"].update(datasets=["cifar10"], clients=[10], methods=["fedavg"])
        # DENSE's multi-round run: tests/test_multi_round.py
        params["multiround"].update(datasets=["cifar10"], splits=["dir0.5"], methods=["fedavg"])
        params["rounds"] = {"T": 2, "local_epochs": 50}
        params["timing"].update(datasets=["cifar10"], runs=[1])
        params["localcurve"].update(datasets=["cifar10"], split="dir0.5", epochs=200, every=100)
        params["paper_columns"] = {"datasets": [], "splits": [], "methods": []}  # GPU-sized: never in CI
        # no second seed: its stages are Table 1's with seed=1 (their grid: test_full_paper_grid_resolves), and
        # the mean ± std cells over seeds are rendered from made-up runs in test_fedhydra_spread.py
        params["spread"] = {"splits": ["dir0.5"], "seeds": []}
        params["variants"] = {"fedhydra_literal": ["dir0.5"], "dense_code": ["dir0.5"]}
        # the committed paper-profile column (GPU-made, a frozen stage's git-tracked results) feeds the render stage
        shutil.copytree(repo_root / SUB / "results" / "paper", work / SUB / "results" / "paper")
    out = sh("dvc", "repro", cwd=work / SUB)
    return work, out


def test_render_writes_every_table_and_figure(fedhydra_repo):
    work, out = fedhydra_repo
    rep = work / SUB / "reports"
    for i in range(1, 19):
        for ext in ("tex", "md"):
            assert (rep / f"table{i:02d}.{ext}").stat().st_size > 0, (i, ext)
    # a figure is drawn where a run feeds it, else not written and its state says so (issue 74: no empty panels)
    status = json.loads((rep / "status.json").read_text())
    drawn = [fig for fig in FIGURES if (rep / f"{fig}.png").exists()]
    assert len(drawn) >= 5, drawn  # the smoke grid feeds six of them
    for fig in FIGURES:
        if fig in drawn:
            assert all((rep / f"{fig}.{ext}").stat().st_size > 0 for ext in ("png", "pdf")), fig
        else:
            assert status[fig].startswith(NOT_DRAWN) and not (rep / f"{fig}.pdf").exists(), (fig, status[fig])
    readme = (rep / "README.md").read_text()
    # the committed paper-profile results are on disk, but no `paper_columns` here: not current, so not rendered
    assert not (rep / "table01_paper_profile.md").exists()
    assert "## Not rendered" in readme and "paper/fmnist-dir0.5" in readme
    assert all(f"table{i:02d}" in readme for i in range(1, 19)) and all(f in readme for f in FIGURES)


def md_cells(path) -> dict[str, dict[str, str]]:
    """row label -> column label -> cell text of the first Markdown table in ``path``."""
    lines = [ln for ln in path.read_text().splitlines() if ln.startswith("|")]
    split = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]
    header, rows = split[0], split[2:]
    return {r[0]: dict(zip(header[1:], r[1:])) for r in rows}


def metric(work, run: str, name: str, which: str = "acc_final") -> float:
    return json.loads((work / SUB / "results" / run / "runs" / f"{name}.json").read_text())[which]


def ours(cell: str) -> str:
    """Our number of a cell "ours / paper (Δ)"."""
    return cell.split(" / ")[0]


def test_tables_show_ours_beside_the_paper(fedhydra_repo):
    work, _ = fedhydra_repo
    rep = work / SUB / "reports"
    t1 = md_cells(rep / "table01.md")
    cell = t1["FedHydra (ours)"]["CIFAR10 alpha=0.5"]
    assert ours(cell) == f"{metric(work, 'cifar10-dir0.5', 'fedhydra'):.2f}"  # one seed: the final accuracy, as run
    assert " / 63.15 (" in cell  # the paper's number beside ours
    assert ours(t1["DENSE"]["CIFAR10 alpha=0.5"]) == f"{metric(work, 'cifar10-dir0.5', 'dense'):.2f}"
    # the variants: rows of their own, no paper number
    assert ours(t1["FedHydra (literal Alg. 1)"]["CIFAR10 alpha=0.5"]) == \
        f"{metric(work, 'cifar10-dir0.5', 'fedhydra-literal'):.2f}"
    assert ours(t1["DENSE (official code, bn = 0)"]["CIFAR10 alpha=0.5"]) == \
        f"{metric(work, 'cifar10-dir0.5', 'dense-bn0'):.2f}"
    assert t1["OT"]["CIFAR10 alpha=0.5"].startswith("—")  # not in this grid's methods
    assert t1["FedHydra (ours)"]["FashionMNIST alpha=0.5"] == "— / 77.20"  # not in this grid
    assert t1["FedHydra (ours)"]["MNIST alpha=0.5"] == "— / 88.75"  # we did not run MNIST
    md = (rep / "table01.md").read_text()
    assert "STAND-IN DATA" in md and "cifar10" in md  # CIFAR-10 cannot be obtained offline
    assert json.loads((work / SUB / "results" / "cifar10-dir0.5" / "runs" / "fedhydra.json").read_text()
                      )["stand_in_data"] is True
    assert md_cells(rep / "table02.md")["FedHydra (ours)"]["CIFAR10"].startswith("—")  # 2c/c not in this slice
    t3 = md_cells(rep / "table03.md")["alpha=0.5"]  # heterogeneous: per-client and server cells
    hetero_clients = json.loads((work / SUB / "results" / "cifar10-dir0.5-hetero" / "clients.json").read_text())
    assert not t3["Client M1"].startswith("—") and len(hetero_clients["per_client"]) == 5
    assert ours(t3["Server(ResNet18) FedHydra"]) == f"{metric(work, 'cifar10-dir0.5-hetero', 'fedhydra'):.2f}"
    assert t3["Server(ResNet18) FedDF"].startswith("—")  # not in hetero.methods of this grid
    t7 = md_cells(rep / "table07.md")
    assert ours(t7["10"]["FedAvg"]) == f"{metric(work, 'cifar10-dir0.5-k10', 'fedavg'):.2f}"
    assert t7["10"]["DENSE"].startswith("—")  # not in ksweep.methods
    assert ours(t7["5"]["DENSE"]) == f"{metric(work, 'cifar10-dir0.5', 'dense'):.2f}"  # K = 5: Table 1's seed-0 run
    t12 = md_cells(rep / "table12.md")  # CIFAR-10 Dir(0.5), rounds T=1, 2
    rounds = json.loads((work / SUB / "results" / "cifar10-dir0.5" / "rounds" / "fedavg.json").read_text())
    assert ours(t12["T=2"]["FedAvg"]) == f"{rounds['rounds'][1]['test_acc']:.2f}"
    assert t12["T=3"]["FedAvg"].startswith("—")
    t6 = md_cells(rep / "table06.md")  # (1, 1) is the main run, (0.5, 1) the one ablation row in the grid
    assert ours(t6["1.0, 1.0"]["CIFAR10"]) == f"{metric(work, 'cifar10-dir0.5', 'fedhydra'):.2f}"  # seed-0 run
    assert ours(t6["0.5, 1.0"]["CIFAR10"]) == f"{metric(work, 'cifar10-dir0.5', 'fedhydra-l0.5-1'):.2f}"
    assert t6["0.0, 0.0"]["CIFAR10"].startswith("—")


def test_claims_follow_the_runs(fedhydra_repo):
    """The verdicts written by the render stage are the ones the runs imply (the logic: test_fedhydra_claims.py)."""
    work, _ = fedhydra_repo
    claims = json.loads((work / SUB / "reports" / "claims.json").read_text())

    def by(artifact: str, claim: str) -> str:
        (v,) = [c["verdict"] for c in claims if c["artifact"] == artifact and c["claim"].startswith(claim)]
        return v

    # one seed: a verdict never contradicts the numbers' direction, and is "within spread" or "not judged" when the
    # difference does not exceed the curves' swing (osfl.reporting.spread; the rules: test_spread_verdicts.py)
    def follows(verdict: str, holds: bool) -> bool:
        return verdict in ("holds" if holds else "does not hold", "within spread") or verdict.startswith("not judged")

    sa_wins = metric(work, "cifar10-dir0.5", "fedhydra") > metric(work, "cifar10-dir0.5", "fedhydra-ae")
    assert follows(by("figure07", "SA consistently outp"), sa_wins)
    best = metric(work, "cifar10-dir0.5", "fedhydra") >= max(metric(work, "cifar10-dir0.5", m) for m in ("fedavg", "dense"))
    assert follows(by("table01", "FedHydra has the best"), best)
    assert by("figure10", "all models collapse ") == "not run"  # MNIST not in the grid
    curve = (work / SUB / "results" / "cifar10-dir0.5" / "local_curve.csv").read_text().splitlines()
    assert curve[0].startswith("epoch,fedavg,client_1") and len(curve) == 3  # E = 200 x 0.01 = 2, every 1
    timing = sorted(p.name for p in (work / SUB / "results" / "cifar10-dir0.5" / "timing").iterdir())
    assert timing == ["dense-t1.json", "fedhydra-t1.json"]
    extras = json.loads((work / SUB / "results" / "cifar10-dir0.5" / "runs" / "fedhydra.json").read_text())
    U_r = extras["extras"]["U_r"]
    assert len(U_r) == 10 and all(abs(sum(row) - 1) < 1e-4 for row in U_r)


def test_second_repro_does_nothing(fedhydra_repo):
    work, _ = fedhydra_repo
    out = sh("dvc", "repro", cwd=work / SUB)
    assert "Running stage" not in out.stdout, out.stdout
    assert json.loads(sh("dvc", "status", "--json", cwd=work / SUB).stdout or "{}") == {}


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="pdflatex not installed: apt-get install texlive-latex-base texlive-latex-recommended")
def test_paper_tables_compile(fedhydra_repo, tmp_path):
    work, _ = fedhydra_repo
    compile_latex([(work / SUB / "reports" / f"table{i:02d}.tex").read_text() for i in (1, 2, 6)], tmp_path)


def test_full_paper_grid_resolves(repo_root, tmp_path):
    """The paper's whole grid (every dataset, split, method and family) is a valid DAG: DVC resolves every stage
    of it and builds the graph (`dvc dag`: no cycle, no output written by two stages)."""
    work = tmp_path / "repo"
    with repo_copy(repo_root, work, "papers/fedhydra") as params:
        params["datasets"] = ["mnist", "fmnist", "svhn", "cifar10"]
        params["hetero"]["datasets"] = ["cifar10", "svhn"]
        params["ksweep"]["datasets"] = ["svhn", "cifar10"]
        params["multiround"].update(datasets=["cifar10", "svhn"], splits=list(params["splits"]))  # the paper's five
        params["localcurve"]["datasets"] = ["cifar10"]
        params["timing"]["datasets"] = ["cifar10"]
        params["paper_columns"] = {"datasets": [], "splits": [], "methods": []}
    ran, dot = dag(work / SUB)
    assert '"train@cifar10-dir0.5" -> "server@cifar10-dir0.5-fedhydra"' in dot
    n_ds, n_sp, n_m, n_lam = 4, len(params["splits"]), len(params["methods"]), len(params["lambdas"])
    h, k, r = params["hetero"], params["ksweep"], params["multiround"]
    expected = {
        "prepare": n_ds, "partition": n_ds * n_sp, "train": n_ds * n_sp, "server": n_ds * n_sp * n_m,
        "evaluate": n_ds * n_sp * n_m, "ae": n_ds * n_sp, "lambdas": n_ds * n_lam,
        "hetero_train": 2 * len(h["splits"]), "hetero_server": 2 * len(h["splits"]) * len(h["methods"]),
        "ksweep_train": 2 * len(k["clients"]), "ksweep_server": 2 * len(k["clients"]) * len(k["methods"]),
        "rounds": 2 * len(r["splits"]) * len(r["methods"]), "local_curve": 1, "timing": 2 * len(params["timing"]["runs"]),
        "render": 1, "paper_train": 0, "paper_server": 0,
        "literal": n_ds * len(params["variants"]["fedhydra_literal"]),
        "dense_code": n_ds * len(params["variants"]["dense_code"]),
        "spread_clients": n_ds * len(params["spread"]["splits"]) * len(params["spread"]["seeds"]),
        "spread_server": n_ds * len(params["spread"]["splits"]) * len(params["spread"]["seeds"]) * n_m,
    }
    counts = Counter(name.split("@")[0] for name in ran)
    assert counts == {k: v for k, v in expected.items() if v}
    assert "server@cifar10-dir0.01-fedhydra" in ran and "rounds@svhn-2cc-coboost" in ran


def test_seconds_and_host_stay_out_of_what_was_computed(fedhydra_repo):
    """Issue 37: uploads, server models, multi-round and local-curve records hold what was computed; seconds and the
    host go to runtime/."""
    work, _ = fedhydra_repo
    assert host_facts(work / SUB, ("*/rounds/*.json", "*/local_curve.json", "*/clients.json")) == []
    assert json.loads((work / SUB / "results" / "cifar10-dir0.5" / "runtime" / "rounds-fedavg.json").read_text())["per_round"]
