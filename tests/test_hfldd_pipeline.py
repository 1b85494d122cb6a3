"""papers/hfldd/: the DAG (pre-training → soft labels → clustering → KIP → hybrid rounds, and the baselines) at smoke,
and its resume contract through DVC: a larger T continues the finished run (issue 18)."""
import json
from pathlib import Path

import pytest
import torch
import yaml

from helpers import host_facts, repo_copy, sh, stage_families

PAPER = Path(__file__).resolve().parents[1] / "papers" / "hfldd"
SUB = "papers/hfldd"
RUN = "fmnist-c2-s0"


def test_the_full_grid_resolves():
    params = yaml.safe_load((PAPER / "params.yaml").read_text())
    runs = len(params["datasets"]) * len(params["classes"]) * len(params["seeds"])
    families = stage_families(PAPER)
    counts = {fam: families.get(fam, 0) for fam in ("train", "soft_labels", "cluster", "kip", "hfldd", "baseline",
                                                    "kip_headers", "ksweep")}
    assert counts == {"train": runs, "soft_labels": runs, "cluster": runs, "kip": runs, "hfldd": runs,
                      "baseline": runs * len(params["baselines"]), "kip_headers": runs, "ksweep": runs * 6}
    # Table IV's K = 5..11: the sweep's points (dvc.yaml's vars) and the main run's K
    swept = yaml.safe_load((PAPER / "dvc.yaml").read_text())["vars"][-1]["ksweep_K"]
    assert sorted([*swept, params["clustering"]["K"]]) == list(range(5, 12))
    assert set(params["public"]) == set(params["datasets"])  # every dataset names its public set D_g


@pytest.fixture(scope="module")
def hfldd_repo(tmp_path_factory, repo_root):
    """`dvc repro` of papers/hfldd/ at smoke on the Fashion-MNIST stand-in: C = 2, one seed, 10 clients, 10 KIP steps:
    wiring, not a model, is under test (KIP: test_kip.py; the rounds: test_rounds_resume.py)."""
    work = tmp_path_factory.mktemp("hfldd") / "repo"
    with repo_copy(repo_root, work, SUB) as params:
        params.update(profile="smoke", classes=[2], seeds=[0], clients=10, kip={"steps": 100, "n_images": 10},
                      clustering={"K": 5, "public_size": 200}, hybrid={"T": 300, "superclients": 5},
                      cost={**params["cost"], "curve_targets": [0, 1]})  # Fig. 6's targets: reached by a smoke run
        params["cpu"]["guards"] = {}  # smoke runs sit at chance by design (the guards: test_cpu_profile.py)
        dvc_yaml = work / SUB / "dvc.yaml"  # K = 5 is the main run's, which the sweep must reproduce
        dvc_yaml.write_text(dvc_yaml.read_text().replace("- ksweep_K: [5, 6, 7, 8, 9, 11]", "- ksweep_K: [3, 5]"))
    out = sh("dvc", "repro", cwd=work / SUB)
    return work, params, out


@pytest.mark.slow
def test_smoke_pipeline_clusters_distils_and_trains(hfldd_repo):
    work, params, _ = hfldd_repo
    res = work / SUB / "results" / RUN
    clustering = json.loads((res / "clustering.json").read_text())
    members = sorted(c for cl in clustering["heterogeneous"] for c in cl)
    assert members == list(range(10)) and clustering["H"] == len(clustering["headers"])
    kip = json.loads((res / "kip.json").read_text())
    assert sorted(k["client"] for k in kip["clients"]) == sorted(set(members) - set(clustering["headers"]))
    assert all(k["steps_run"] == 10 for k in kip["clients"])  # 100 steps x0.1 at smoke
    curves = {m: json.loads((res / "rounds" / f"{m}.json").read_text()) for m in ["hfldd", *params["baselines"]]}
    for method, rec in curves.items():
        assert [p["round"] for p in rec["curve"]] == [1, 2, 3], method  # T = 300 x0.01 at smoke
        assert 0 <= rec["acc_final"] <= 100
    assert len(curves["hfldd"]["groups"]) == clustering["H"]
    assert sum(map(sum, curves["fedavg"]["groups"])) == sum(map(sum, curves["cl"]["groups"]))
    assert len(curves["fedseq"]["groups"]) == 5
    # FedD3's normalisation (the params' inputs), inside the clients and every hybrid run's model, recorded with each
    norm = {"size": None, "mean": [0.5], "std": [0.5]}
    assert all(rec["inputs"] == norm for rec in curves.values())
    assert json.loads((res / "clients.json").read_text())["inputs"] == norm
    assert "up to date" in sh("dvc", "status", cwd=work / SUB).stdout  # a second look finds nothing to run


@pytest.mark.slow
def test_the_k_sweep_reclusters_and_reproduces_the_main_run_at_its_k(hfldd_repo):
    work, _, _ = hfldd_repo
    res = work / SUB / "results" / RUN
    clustering = json.loads((res / "clustering.json").read_text())
    distilled = json.loads((res / "kip_headers.json").read_text())
    assert sorted(k["client"] for k in distilled["clients"]) == sorted(clustering["headers"])
    assert all(k["header"] == k["client"] for k in distilled["clients"])
    main = json.loads((res / "rounds" / "hfldd.json").read_text())
    same = json.loads((res / "ksweep" / "k5.json").read_text())
    assert same["clustering"]["headers"] == clustering["headers"] and same["curve"] == main["curve"]
    other = json.loads((res / "ksweep" / "k3.json").read_text())
    assert other["K"] == other["clustering"]["K"] == 3 and len(other["groups"]) == other["clustering"]["H"]
    assert sorted(c for cl in other["clustering"]["heterogeneous"] for c in cl) == list(range(10))


@pytest.mark.slow
def test_a_larger_t_continues_the_finished_run(hfldd_repo):
    work, _, _ = hfldd_repo
    rec = work / SUB / "results" / RUN / "rounds" / "fedavg.json"
    before = json.loads(rec.read_text())["curve"]
    sh("dvc", "exp", "run", "-S", "hybrid.T=500", "-s", "baseline@fmnist-2-0-fedavg", cwd=work / SUB)
    after = json.loads(rec.read_text())
    assert after["resumed_from"] == 3 and len(after["curve"]) == 5  # 500 x0.01 rounds: two new ones
    assert after["curve"][:3] == before


@pytest.mark.slow
def test_smoke_pipeline_renders_every_table_and_figure(hfldd_repo):
    work, _, _ = hfldd_repo
    reports = work / SUB / "reports"
    for stem in ("table2", "table3", "table4"):
        assert (reports / f"{stem}.md").stat().st_size > 0 and (reports / f"{stem}.tex").stat().st_size > 0, stem
    for stem in ("fig3", "fig5", "fig6", "fig7"):
        assert (reports / f"{stem}.png").stat().st_size > 0, stem
    acc = json.loads((work / SUB / "results" / RUN / "rounds" / "hfldd.json").read_text())["acc_final"]
    row = next(x for x in (reports / "table4.md").read_text().splitlines() if x.startswith("| Fashion-MNIST (C = 2)"))
    assert f"{acc:.2f} / —" in row  # K = 5 here: ours under the paper's K = 5 column, no paper number for Fashion
    k3 = json.loads((work / SUB / "results" / RUN / "ksweep" / "k3.json").read_text())["acc_final"]
    assert row.rstrip(" |").endswith(f"{k3:.2f} / —")  # K = 3, outside the paper's 5..11: after its columns
    readme = (reports / "README.md").read_text()
    assert "consistent (all three to two decimals; arithmetic, no run)" in readme and "§7 HFLDD ≥ the baselines, Fashion-MNIST C = 2" in readme
    summary = json.loads((work / SUB / "summary.json").read_text())
    assert summary["table2"]["paper_traffic_reproduced"] and summary["claims"]["checked"] >= 5


def test_seconds_and_host_stay_out_of_what_was_computed(hfldd_repo):
    """Issue 37: KIP's images, the soft labels, the curves and the rounds' checkpoints hold what was computed; seconds
    and the host go to runtime/ (the checkpoint's curve too: it is a cached output)."""
    work, params, _ = hfldd_repo
    assert host_facts(work / SUB, ("*/kip.json", "*/kip_headers.json", "*/soft_labels.json", "*/rounds/*.json",
                                   "*/ksweep/*.json", "*/clients.json")) == []
    for ck in (work / SUB / "models" / RUN / "rounds").rglob("checkpoint.pt"):
        assert all(set(p) == {"round", "test_acc"} for p in torch.load(ck, weights_only=True)["curve"]), ck
    runtime = json.loads((work / SUB / "results" / RUN / "runtime" / "rounds-hfldd.json").read_text())
    assert runtime["seconds"] > 0 and len(runtime["round_seconds"]) == runtime["rounds_timed"][1] - runtime["rounds_timed"][0] + 1
