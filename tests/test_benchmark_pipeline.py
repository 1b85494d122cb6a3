"""papers/benchmark/: every method of `columns` (and `xcolumns`, on a second upload) on the same partitions; a method is one params line; the report ranks
them and sets their orders beside the papers'."""
import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import repo_copy, sh, stage_families

from osfl.papers import benchmark
from osfl.reporting.grid import Grid

PAPER = Path(__file__).resolve().parents[1] / "papers" / "benchmark"
SUB = "papers/benchmark"


def test_the_grid_is_splits_times_seeds_times_columns():
    params = yaml.safe_load((PAPER / "params.yaml").read_text())
    runs = len(params["datasets"]) * len(params["splits"]) * len(params["seeds"])
    families = stage_families(PAPER)
    assert {k: families.get(k) for k in ("partition", "train", "server", "project", "server_x")} == {
        "partition": runs, "train": runs, "server": runs * len(params["columns"]), "project": runs,
        "server_x": runs * len(params["xcolumns"])}
    rows = params["columns"] + params["xcolumns"]
    assert {c["method"] for c in rows} <= set(params["methods"])
    assert all(c["id"] == c["method"] + (f"-{c['tag']}" if c["tag"] else "") for c in rows)
    assert len({c["id"] for c in rows}) == len(rows)


def _rec(acc, seed, seconds=1.0, failed=False):
    rec = {"acc_final": acc, "seed": seed, "server_seconds": seconds}
    if failed:
        rec["guards"] = {"server_gain_min": {"floor": 15.0, "value": acc, "passed": False}}
    return rec


def test_ranks_and_average_rank_over_splits_with_failed_runs_left_out():
    params = {"columns": [{"id": "a"}, {"id": "b"}, {"id": "c"}], "splits": ["dir0.5", "2cc"]}
    runs = {("fmnist", "dir0.5"): {"a": [_rec(70, 0), _rec(72, 1)], "b": [_rec(60, 0)], "c": [_rec(70, 0)]},
            ("fmnist", "2cc"): {"a": [_rec(20, 0)], "b": [_rec(30, 0), _rec(11, 1, failed=True)]}}
    df, numbers, failed = benchmark.cells(runs, Grid.of(params).columns)
    assert failed == 1 and numbers[("2cc", "b")]["n"] == 1
    assert df.loc["a", "fmnist Dir(0.5)"] == "71.00 ± 1.41 (n=2) (#1)"
    assert df.loc["c", "fmnist Dir(0.5)"] == "70.00 (#2)" and df.loc["b", "fmnist Dir(0.5)"] == "60.00 (#3)"
    assert df.loc["b", "fmnist 2 classes per client"] == "30.00 [failed its regime guard: s1 11.00] (#1)"
    assert df.loc["c", "fmnist 2 classes per client"] == "—"
    # c ran in one split of two: no average beside rows ranked in both
    assert list(df["average rank"]) == ["1.50", "2.00", "— (1 of 2 splits)"]


def test_orderings_name_the_pairs_in_the_other_order(repo_root):
    """FedHydra's Table 1 at FashionMNIST α = 0.5 prints FedHydra > Co-Boosting > FedAvg > OT > DENSE > FedDF."""
    numbers = {("dir0.5", m): {"mean": v} for m, v in {"fedavg": 70.0, "fedhydra": 60.0, "coboost": 65.0}.items()}
    lines = benchmark.orderings(numbers, Grid.of({"splits": ["dir0.5"]}), repo_root / "papers")
    assert lines[0] == "Dir(0.5): ours fedavg > coboost > fedhydra."
    fedhydra = next(line for line in lines if "FedHydra table01" in line)
    assert "fedhydra > coboost > fedavg" in fedhydra and "Kendall τ = -1.00 over 3 methods" in fedhydra
    assert "in the other order: fedavg/coboost, fedavg/fedhydra, coboost/fedhydra" in fedhydra


def test_the_report_says_when_ot_moved_no_unit(tmp_path):
    """OT fusion whose alignment moved no hidden unit is FedAvg's average: the setting line says in how many runs."""
    params = {"datasets": ["fmnist"], "splits": ["dir0.7"], "seeds": [0, 1], "clients": 5, "model": "cnn2",
              "columns": [{"id": "fedavg", "method": "fedavg"}, {"id": "ot", "method": "ot"}]}
    for seed, moved in ((0, {"0": 0.0, "1": 0.0}), (1, {"0": 0.0, "1": 0.5})):
        runs = tmp_path / "papers" / "benchmark" / "results" / f"fmnist-dir0.7-s{seed}" / "runs"
        runs.mkdir(parents=True)
        for i, extras in (("fedavg", {}), ("ot", {"units_moved_share": moved})):
            (runs / f"{i}.json").write_text(json.dumps({"acc_final": 50.0 + seed, "server_seconds": 0.1,
                                                         "extras": extras}))
    out = tmp_path / "reports"
    benchmark.render(Grid.of(params), tmp_path / "papers" / "benchmark" / "results", tmp_path, out)
    note = "OT: in 1 of 2 runs that record it the alignment moved no hidden unit"
    assert note in (out / "README.md").read_text() and note in (out / "table.md").read_text()


@pytest.fixture(scope="module")
def benchmark_repo(tmp_path_factory, repo_root):
    """`dvc repro` of papers/benchmark/ at smoke on the Fashion-MNIST stand-in, one split and seed, with a made-up
    method added as one line of `columns` (FedAvg with uniform weights)."""
    work = tmp_path_factory.mktemp("benchmark") / "repo"
    with repo_copy(repo_root, work, SUB) as params:
        params.update(profile="smoke", splits=["dir0.5"], seeds=[0])
        params["cpu"]["guards"] = {}  # smoke runs sit at chance by design (the guards: test_cpu_profile.py)
        params["columns"] = [c for c in params["columns"] if c["id"] in ("fedavg", "dense")] + [
            {"id": "fedavg-uniform", "method": "fedavg", "tag": "uniform", "paper": "made up",
             "set": "server.fedavg.weighting=uniform"}]
        dvc_yaml = work / SUB / "dvc.yaml"  # FedHydra's Tables 4/7: one client number N (the stages are per N)
        dvc_yaml.write_text(dvc_yaml.read_text().replace("- nclients: [10, 20]", "- nclients: [3]"))
    out = sh("dvc", "repro", cwd=work / SUB)
    return work, params, out


@pytest.mark.slow
def test_a_method_added_as_one_params_line_gets_its_row(benchmark_repo):
    work, params, _ = benchmark_repo
    reports = work / SUB / "reports"
    table = (reports / "table.md").read_text()
    rows = params["columns"] + params["xcolumns"]  # MA-Echo (xcolumns) on the same clients' second upload
    for c in rows:
        assert f"| {c['id']} |" in table, c["id"]
    rec = json.loads((work / SUB / "results" / "fmnist-dir0.5-s0" / "runs" / "fedavg-uniform.json").read_text())
    assert rec["choices"]["weighting"] == "uniform"
    assert (reports / "figure.png").is_file() and json.loads((reports / "status.json").read_text())["table"].startswith(
        f"{len(rows)} cells run")
    maecho = json.loads((work / SUB / "results" / "fmnist-dir0.5-s0" / "projections.json").read_text())
    assert maecho["out"] == "models/fmnist-dir0.5-s0-maecho/clients" and len(maecho["clients"]) == params["clients"]
    assert "up to date" in sh("dvc", "status", cwd=work / SUB).stdout
    # the client-number sweep: its own partition of 3 clients, whose runs read them
    sweep = work / SUB / "results" / "fmnist-dir0.5-s0-n3"
    assert len(json.loads((sweep / "clients.json").read_text())["per_client"]) == 3
    assert {p.stem for p in (sweep / "runs").glob("*.json")} == {c["id"] for c in params["columns"]}


def test_the_client_number_table_reads_the_sweep_runs(tmp_path):
    """nclients: the runs <run>-n<N> on the first split beside the main grid's (N = clients), ranked per N
    (Dir(0.7): a split no paper prints, so no ordering needs the papers' tables)."""
    params = {"datasets": ["fmnist"], "splits": ["dir0.7", "dir0.1"], "seeds": [0], "clients": 5, "model": "cnn2",
              "columns": [{"id": "fedavg", "method": "fedavg"}, {"id": "dense", "method": "dense"}]}
    results = tmp_path / "papers" / "benchmark" / "results"
    for run, accs in (("fmnist-dir0.7-s0", (70.0, 60.0)), ("fmnist-dir0.7-s0-n20", (40.0, 55.0)),
                      ("fmnist-dir0.1-s0-n10", (1.0, 2.0))):  # another split's sweep run: not read
        (results / run / "runs").mkdir(parents=True)
        for i, acc in zip(("fedavg", "dense"), accs):
            (results / run / "runs" / f"{i}.json").write_text(json.dumps({"acc_final": acc, "server_seconds": 1.0}))
    out = tmp_path / "reports"
    benchmark.render(Grid.of(params), results, tmp_path, out)
    table = (out / "nclients.md").read_text()
    assert "| fedavg | 70.00 (#1) | 40.00 (#2) | 1.50 |" in table and "N=10" not in table
    assert json.loads((out / "status.json").read_text())["nclients"] == "4 cells run"


def test_each_dataset_gets_its_own_table_ranks_and_orderings(tmp_path, repo_root):
    """Fashion-MNIST and MNIST runs: one table each (table.md, table_mnist.md), ranked within the dataset, and the
    MNIST orderings set beside the papers' MNIST columns (FedHydra Table 1 at MNIST α = 0.5 prints FedAvg 81.89 >
    FedDF 78.23 > OT 77.45)."""
    params = {"datasets": ["fmnist", "mnist"], "splits": ["dir0.5"], "seeds": [0], "clients": 5, "model": "cnn2",
              "columns": [{"id": m, "method": m} for m in ("fedavg", "ot", "feddf")]}
    results = tmp_path / "papers" / "benchmark" / "results"
    for paper in ("fedhydra", "fedmho"):  # the papers' published numbers, which the orderings read
        shutil.copytree(repo_root / "papers" / paper / "published", tmp_path / "papers" / paper / "published")
    for run, accs in (("fmnist-dir0.5-s0", (70.0, 60.0, 65.0)), ("mnist-dir0.5-s0", (80.0, 90.0, 85.0))):
        (results / run / "runs").mkdir(parents=True)
        for i, acc in zip(("fedavg", "ot", "feddf"), accs):
            (results / run / "runs" / f"{i}.json").write_text(json.dumps({"acc_final": acc, "server_seconds": 1.0}))
    out = tmp_path / "reports"
    benchmark.render(Grid.of(params), results, tmp_path, out)
    fm, mn = (out / "table.md").read_text(), (out / "table_mnist.md").read_text()
    assert "| fedavg | 70.00 (#1) | 1.00 |" in fm and "| mnist Dir" not in fm and "fmnist Dir" not in mn
    assert "| ot | 90.00 (#1) | 1.00 |" in mn and "| fedavg | 80.00 (#3) | 3.00 |" in mn
    assert (out / "figure_mnist.png").is_file()
    lines = (out / "discussion.txt").read_text().splitlines()
    assert "mnist Dir(0.5): ours ot > feddf > fedavg." in lines
    mnist_fedhydra = next(x for x in lines if "FedHydra table01 (MNIST alpha=0.5)" in x)
    assert "fedavg > feddf > ot" in mnist_fedhydra and "Kendall τ = -1.00" in mnist_fedhydra
    status = json.loads((out / "status.json").read_text())
    assert status["table"] == "3 cells run" and status["table_mnist"] == "3 cells run"
    # the settings as one table (README section, settings.json for the book's appendix), not in every caption
    settings = dict(json.loads((out / "settings.json").read_text()))
    assert settings["runs (params)"] == "datasets fmnist, mnist; splits dir0.5; seeds 0"
    assert "## Settings" in (out / "README.md").read_text() and "the settings table" in fm
