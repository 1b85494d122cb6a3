"""papers/ofeded/: the two-transmission DAG (train → condense → server) at smoke, Tables 1 and 3 beside the paper's,
and the published tables read as printed."""
import fnmatch
import json
from copy import deepcopy
from pathlib import Path

import pytest
import torch
import yaml

from osfl.models import build_model
from osfl.papers import ofeded
from osfl.reporting.published import load_artifacts, load_published_table
from osfl.reporting.grid import Grid

PAPER = Path(__file__).resolve().parents[1] / "papers" / "ofeded"
SUB = "papers/ofeded"


def test_published_tables_read_as_printed():
    arts = {a.id: a for a in load_artifacts(PAPER / "published")}
    t1, t1s = load_published_table(arts["table1"]), load_published_table(arts["table1"], "std")
    assert t1.shape == (12, 9) and t1.loc["CIFAR-10, 0.3", "OFedED"] == 65.28 and t1s.loc["MNIST, 0.3", "FedDF"] == 0.78
    t2, t2s = load_published_table(arts["table2"]), load_published_table(arts["table2"], "std")
    assert list(t2.index) == ["0.05", "0.1", "0.3"] and t2.loc["0.1", "Local"] == 49.27
    assert t2s["Local"].isna().all() and t2s.loc["0.3", "Co-boosting"] == 0.40  # Local printed without a std
    t3 = load_published_table(arts["table3"])
    assert list(t3.columns) == ["CIFAR-10", "SVHN"] and t3.loc[", , ", "CIFAR-10"] == 57.19
    assert t3.loc["✓, ✓, ✓", "SVHN"] == 84.98 == t1.loc["SVHN, 0.3", "OFedED"]  # row 8 is Table 1's OFedED


def test_every_ablation_row_has_a_run_and_the_parts_it_names():
    params = yaml.safe_load((PAPER / "params.yaml").read_text())
    rows = ofeded.ablation_entries(Grid.of(params))
    assert sorted(rows) == sorted(load_published_table(
        {a.id: a for a in load_artifacts(PAPER / "published")}["table3"]).index)
    assert rows[", , "]["method"] == "coboost" and rows["✓, ✓, ✓"]["id"] == "ofeded"
    for label, entry in rows.items():
        if entry["method"] != "ofeded":
            continue
        loss, ens, others = (p.strip() == "✓" for p in label.split(","))
        sets = dict(kv.split("=") for kv in entry["set"].split())
        assert (sets.get("server.ofeded.ccd") != "0") == loss, label
        assert (sets.get("server.ofeded.class_weights") != "false") == ens, label
        assert (sets.get("server.ofeded.guide") != "false") == others, label
    methods = {e["method"] for e in params["columns"] + params["s_columns"]}
    assert methods <= set(params["methods"])


def test_the_full_grid_resolves():
    """Every stage family of the committed params expands (DVC's templating of the columns, variants, Table 2)."""
    params = yaml.safe_load((PAPER / "params.yaml").read_text())
    runs = len(params["datasets"]) * len(params["splits"]) * len(params["seeds"])
    fig = len(params["seeds"])  # Figs. 2(b), 3: Fashion-MNIST only (the matrix in dvc.yaml names it; see train_dp)
    families = stage_families(PAPER)
    counts = {fam: families.get(fam, 0) for fam in (
        "train", "condense", "project", "server", "server_s", "train_dp", "condense_v", "server_v", "train_r",
        "condense_r", "server_r", "server_rs")}
    assert counts == {"train": runs, "condense": runs, "project": runs, "server": runs * len(params["columns"]),
                      "server_s": runs * len(params["s_columns"]), "train_dp": fig * len(params["dp_sigmas"]),
                      "condense_v": fig * len(params["variants"]), "server_v": fig * len(params["variants"]),
                      "train_r": runs, "condense_r": runs, "server_r": runs * len(params["resnet"]["columns"]),
                      "server_rs": runs * len(params["resnet"]["s_columns"])}
    dp = {f"-dpg{s}" for s in params["dp_sigmas"]}
    assert all(v["clients"] in dp | {""} for v in params["variants"])  # a variant's clients are trained somewhere
    assert {v["figure"] for v in params["variants"]} == {"2b", "3"}


def test_table1_keeps_the_papers_rows_and_adds_ours(tmp_path):
    params = yaml.safe_load((PAPER / "params.yaml").read_text())
    params.update(datasets=["fmnist"], splits=["dir0.3"], seeds=[0, 1])
    for seed, (cob, ofe) in enumerate(((50.0, 60.0), (54.0, 58.0))):
        runs = tmp_path / f"fmnist-dir0.3-s{seed}" / "runs"
        runs.mkdir(parents=True)
        (runs / "coboost.json").write_text(json.dumps({"acc_final": cob}))
        (runs / "ofeded.json").write_text(json.dumps({"acc_final": ofe}))
    ofeded.render(Grid.of(params), tmp_path, tmp_path, tmp_path / "reports", published_root=str(PAPER / "published"))
    t1 = (tmp_path / "reports" / "table1.md").read_text().splitlines()
    assert sum(line.startswith("| MNIST, 0.05 |") for line in t1) == 1  # the paper's rows stay
    row = next(line for line in t1 if line.startswith("| Fashion-MNIST, dir0.3"))
    assert "52.00 ± 2.83 (n=2) / —" in row and "59.00 ± 1.41 (n=2) / —" in row
    t3 = (tmp_path / "reports" / "table3.md").read_text()
    assert "52.00 ± 2.83 (n=2)" in next(line for line in t3.splitlines() if line.startswith("| – · – · – |"))
    readme = (tmp_path / "reports" / "README.md").read_text()
    # two seeds (issue 72): not judged, with the numbers it would be decided on
    assert "OFedED above every other method we ran: not judged (n = 2) (59.00 vs Co-Boosting 52.00, +7.00)" in readme


# ---------------------------------------------------------------------------------------------------------
# the pipeline end to end (slow)

from helpers import copied_results, host_facts, lock_weights, repo_copy, sh, stage_families  # noqa: E402


# the smoke run keeps one stage of every kind of column (the full lists: test_every_ablation_row_has_a_run..., and
# test_the_full_grid_resolves): a plain one (FedAvg), one with clients of its own (MAEcho's projections), the
# teacher-tracking and FLOP-counting ones (DENSE and Co-Boosting), OFedED, and one student of Fig. 2(c) (on the
# distilled sets); Fig. 3's noise variant on DP-SGD-trained clients (every mechanism). Another column, ablation row,
# student or IPC variant is the same stage with another --set: those artifacts render from copies of this run's
# records (test_other_rows_and_panels_render_from_copies_of_the_runs)
KEEP = {"fedavg", "maecho", "coboost-dense", "coboost", "ofeded", "ofeded-resnet32"}
KEEP_VARIANTS = {"both1"}
# the copies: run id -> (the kept run it copies, the accuracy it is given)
COPIES = {"ofeded-l": ("ofeded", 41.0), "coboost-resnet32": ("coboost", 42.0), "ofeded-ipc1": ("ofeded", 43.0)}


@pytest.fixture(scope="module")
def ofeded_repo(tmp_path_factory, repo_root):
    """`dvc repro` of papers/ofeded/ at smoke on the Fashion-MNIST stand-in: one split, one seed, a slice of every
    kind of column and variant. LeNet-5 (no BatchNorm, like the paper's 3-layer CNN, so DP-SGD applies) stands in for
    the 3-layer CNN, the 2-layer CNN for Table 2's ResNet-18, and the distribution matching runs 3 steps: wiring, not a
    model, is under test (the matching itself: test_condense.py)."""
    work = tmp_path_factory.mktemp("ofeded") / "repo"
    with repo_copy(repo_root, work, SUB) as params:
        params.update(profile="smoke", datasets=["fmnist"], splits=["dir0.3"], seeds=[0], model="lenet5", dp_sigmas=[1])
        params["condense"] = {**params["condense"], "iterations": [10, 20],  # two layers; x0.1 at smoke
                              "layers": {"lenet5": ["features.2", "features.5"]}}
        params["variants"] = [v for v in params["variants"] if v["id"] in KEEP_VARIANTS]
        params["resnet"] = {**params["resnet"], "model": "cnn2", "condense": "condense.iterations=[10,20]",
                            "columns": [c for c in params["resnet"]["columns"] if c["method"] == "ensemble"]}
        params["server"]["fadi"] = {"inv_steps": 20}  # x0.1 at smoke: 2 inversion steps per batch
        params["cpu"]["guards"] = {}  # smoke runs sit at chance by design (the guards: test_cpu_profile.py)
        params["columns"] = [c for c in params["columns"] if c["id"] in KEEP]
        params["s_columns"] = [c for c in params["s_columns"] if c["id"] in KEEP]
        for col in params["columns"] + params["s_columns"]:  # Fig. 2(c)'s other student: the 2-layer CNN stands in
            col["set"] = col["set"].replace("model=resnet32", "model=cnn2")  # for ResNet-32 (wiring, not a model)
    out = sh("dvc", "repro", cwd=work / SUB)
    return work, params, out


@pytest.mark.slow
def test_smoke_pipeline_renders_tables_1_and_3(ofeded_repo):
    work, params, _ = ofeded_repo
    reports, run = work / SUB / "reports", work / SUB / "results" / "fmnist-dir0.3-s0"

    def acc(run_id):
        return json.loads((run / "runs" / f"{run_id}.json").read_text())["acc_final"]

    t1 = (reports / "table1.md").read_text()
    row = next(line for line in t1.splitlines() if line.startswith("| Fashion-MNIST, dir0.3"))
    for entry in [e for e in params["columns"] + params["s_columns"] if e.get("paper")]:
        assert f"{acc(entry['id']):.2f} / —" in row, entry["id"]
    t3 = (reports / "table3.md").read_text()
    for label, entry in ofeded.ablation_entries(Grid.of(params)).items():
        line = next(x for x in t3.splitlines() if x.startswith(f"| {ofeded.row_label(label)} |"))
        assert line.rstrip(" |").endswith(f"{acc(entry['id']):.2f}"), label
    distilled = json.loads((run / "distilled.json").read_text())
    assert distilled["iterations_run"] == [1, 2] and len(distilled["clients"]) == params["clients"]
    record = json.loads((run / "runs" / "ofeded.json").read_text())
    assert record["choices"]["parts"] == {"loss": True, "ens": True, "others": True}
    assert record["choices"]["synthetic_set"]["images"] == sum(c["images"] for c in distilled["clients"])
    readme = (reports / "README.md").read_text()
    n1 = sum(bool(e.get("paper")) for e in params["columns"] + params["s_columns"])
    assert f"| `table1` | Table 1 | {n1} cells run |" in readme
    assert f"| `table3` | Table 3 | {len(ofeded.ablation_entries(Grid.of(params)))} cells run |" in readme
    runs_md = (reports / "runs.md").read_text()  # every server run's final, best, gate and fine-tunes
    for entry in params["columns"] + params["s_columns"]:
        assert f"| Fashion-MNIST, dir0.3, s0: {entry['id']} | {acc(entry['id']):.2f} |" in runs_md, entry["id"]


@pytest.mark.slow
def test_smoke_pipeline_counts_the_costs_of_tables_4_and_5(ofeded_repo):
    work, params, _ = ofeded_repo
    reports, run = work / SUB / "reports", work / SUB / "results" / "fmnist-dir0.3-s0"
    local = json.loads((run / "clients.json").read_text())["train_flops"]
    clients = json.loads((run / "distilled.json").read_text())["clients"]
    dm, s_bytes = sum(c["flops"] for c in clients), sum(c["upload_bytes"] for c in clients)
    assert local > 0 and dm > 0 and s_bytes == sum(c["images"] * (32 * 32 * 4 + 8) for c in clients)  # resized
    sc = {m: json.loads((run / "runs" / f"{m}.json").read_text())["server_flops"] for m in ("coboost-dense", "coboost", "ofeded")}
    assert all(v["server"] > 0 and v["evaluation"] > 0 for v in sc.values())
    assert "server_flops" not in json.loads((run / "runs" / "fedavg.json").read_text())  # counted where asked only
    t4 = (reports / "table4.md").read_text()
    row = next(x for x in t4.splitlines() if x.startswith("| OFedED (ours"))
    state = build_model("lenet5", (1, 32, 32), 10).state_dict()  # the upload: parameters and buffers as stored
    model_mb = params["clients"] * sum(t.numel() * t.element_size() for t in state.values()) / 1e6
    assert row.split("|")[2].strip() == f"{(local + dm) / 1e9:.4g}"
    assert row.split("|")[3].strip() == f"{model_mb + s_bytes / 1e6:.4g}"
    t5 = (reports / "table5.md").read_text()
    row = next(x for x in t5.splitlines() if x.startswith("| DENSE (ours"))
    red = 100 * (sc["coboost-dense"]["server"] - sc["ofeded"]["server"]) / sc["coboost-dense"]["server"]
    assert row.split("|")[5].strip() == f"{sc['coboost-dense']['server'] / 1e9:.4g}" and row.split("|")[6].strip() == f"{red:.4g}"


@pytest.mark.slow
def test_smoke_pipeline_draws_figure_2_panels_a_and_c(ofeded_repo):
    work, params, _ = ofeded_repo
    reports, run = work / SUB / "reports", work / SUB / "results" / "fmnist-dir0.3-s0"
    for name in ("coboost-dense", "coboost", "ofeded"):
        tsv = (run / "live" / name / "plots" / "metrics" / "train" / "teacher_acc.tsv").read_text().splitlines()
        assert tsv[0].split("\t") == ["step", "teacher_acc"] and len(tsv) > 1
    assert not (run / "live" / "fedavg" / "plots" / "metrics" / "train" / "teacher_acc.tsv").exists()
    for entry in [e for e in params["columns"] + params["s_columns"] if e.get("student")]:  # Fig. 2(c)'s students
        man = json.loads((work / SUB / "models" / "fmnist-dir0.3-s0" / "global" / entry["id"] / "manifest.json")
                         .read_text())
        assert man["arch"] == entry["set"].removeprefix("model=")
    for fig in ("fig2a", "fig2c"):
        assert (reports / f"{fig}.png").stat().st_size > 0 and (reports / f"{fig}.pdf").stat().st_size > 0
    readme = (reports / "README.md").read_text()
    assert "| `fig2a` | Fig. 2(a) | 1 panels run |" in readme and "| `fig2c` | Fig. 2(c) | 1 panels run |" in readme
    assert "student lenet5 (the clients'): OFedED above DENSE and Co-Boosting (Fig. 2(c))" in readme
    assert any(e.get("student") for e in params["s_columns"])  # the other student's claim: from copies, below


@pytest.mark.slow
def test_a_server_change_does_not_rerun_the_clients(ofeded_repo):
    """The distilled sets are an output of their own: changing OFedED's server settings re-runs only server_s@."""
    work, _, _ = ofeded_repo
    pf = work / SUB / "params.yaml"
    params = yaml.safe_load(pf.read_text())
    params["server"]["ofeded"] = {"finetune_epochs": 5}
    pf.write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True))
    status = json.loads(sh("dvc", "status", "--json", cwd=work / SUB).stdout)
    assert not any(k.startswith(("train@", "condense@", "server@", "train_dp@", "condense_v@", "train_r@",
                                 "condense_r@", "server_r@")) for k in status)
    assert sum(k.startswith("server_s@") for k in status) == len(params["s_columns"])


@pytest.mark.slow
def test_smoke_pipeline_renders_table_2_and_figure_3(ofeded_repo):
    """Table 2 from the ResNet-family runs (<run>-<model>), Fig. 3 from a variant whose clients trained with DP-SGD
    and whose images carry noise (Fig. 2(b)'s IPC variants are the same stage: from copies, below)."""
    work, params, _ = ofeded_repo
    sub = work / SUB
    reports, run = sub / "reports", sub / "results" / "fmnist-dir0.3-s0"
    both = json.loads((run / "distilled-both1.json").read_text())
    assert both["settings"]["noise"] == 1 and both["clients_dir"] == "models/fmnist-dir0.3-s0-dpg1/clients"
    assert both["settings"]["ipc"] == json.loads((run / "distilled.json").read_text())["settings"]["ipc"]
    dp = json.loads((sub / "results" / "fmnist-dir0.3-s0-dpg1" / "clients.json").read_text())
    assert dp["dp"]["sigma"] == 1 and dp["dp"]["clip"] == 1 and dp["dp"]["epsilon_max"] > 0
    man = json.loads((sub / "models" / "fmnist-dir0.3-s0" / "global" / "ofeded-both1" / "manifest.json").read_text())
    assert man["clients_dir"] == "models/fmnist-dir0.3-s0-dpg1/clients"
    assert man["distilled_dir"] == "models/fmnist-dir0.3-s0/distilled-both1"
    acc = {i: json.loads((run / "runs" / f"{i}.json").read_text())["acc_final"] for i in ("ofeded", "ofeded-both1")}
    t2 = (reports / "table2.md").read_text()
    assert sum(line.startswith("| paper: CIFAR-10") for line in t2.splitlines()) == 3
    row = next(line for line in t2.splitlines() if line.startswith("| ours: Fashion-MNIST, α = 0.3"))
    rrun = sub / "results" / "fmnist-dir0.3-s0-cnn2" / "runs"
    for method in ("ensemble", "ofeded"):
        assert f"{json.loads((rrun / f'{method}.json').read_text())['acc_final']:.2f}" in row, method
    readme = (reports / "README.md").read_text()
    assert "| `table2` | Table 2 | 2 cells run |" in readme and "| `fig3` | Fig. 3 | 1 panels run." in readme
    lower = acc["ofeded-both1"] < acc["ofeded"]
    assert follows(verdict(readme, "every noise setting lowers accuracy (Fig. 3)"), lower)
    assert (reports / "fig3.png").stat().st_size > 0


def verdict(readme: str, claim: str) -> str:
    """The verdict a report's README writes after ``claim`` (osfl.reporting.spread's categories)."""
    (line,) = [x for x in readme.splitlines() if claim in x]
    return line.split(claim + ": ", 1)[1]


def follows(text: str, holds: bool) -> bool:
    """One seed: a verdict never against the numbers, else undecided by the spread."""
    return text.startswith(("holds" if holds else "does not hold", "within spread", "not judged"))


def test_other_rows_and_panels_render_from_copies_of_the_runs(ofeded_repo, repo_root, tmp_path):
    """Table 3's L-only row, Fig. 2(c)'s Co-Boosting with the ResNet-32 student and Fig. 2(b)'s IPC 1 point from runs
    under their names: copies of the smoke run's records and curves (their stages are the kept columns' and the
    noise variant's with another --set), rendered with those entries in the params."""
    work, params, _ = ofeded_repo
    results = copied_results(work / SUB, tmp_path / "results", "fmnist-dir0.3-s0", COPIES)
    run = results / "fmnist-dir0.3-s0"
    committed = yaml.safe_load((repo_root / SUB / "params.yaml").read_text())
    full = deepcopy(params)
    for key in ("columns", "s_columns"):
        full[key] += [c for c in committed[key] if c["id"] in COPIES]
    full["variants"] += [v for v in committed["variants"] if f"ofeded-{v['id']}" in COPIES]
    reports = tmp_path / "reports"
    ofeded.render(Grid.of(full), results, work / SUB / "data" / "prepared", reports, published_root=str(work / SUB / "published"))
    t3 = (reports / "table3.md").read_text()
    assert next(x for x in t3.splitlines() if x.startswith(f"| {ofeded.row_label('✓, , ')} |")).rstrip(" |") \
        .endswith("41.00")
    readme = (reports / "README.md").read_text()
    assert f"| `table3` | Table 3 | {len(ofeded.ablation_entries(Grid.of(params))) + 1} cells run |" in readme
    assert "| `fig2b` | Fig. 2(b) | 1 panels run |" in readme and (reports / "fig2b.png").stat().st_size > 0
    main = json.loads((run / "runs" / "ofeded.json").read_text())["acc_final"]
    assert follows(verdict(readme, "IPC = 2 gives OFedED's best accuracy (Fig. 2(b))"), main >= 43.0)  # main: IPC 2
    resnet = json.loads((run / "runs" / "ofeded-resnet32.json").read_text())["acc_final"]
    assert follows(verdict(readme, "student ResNet-32: OFedED above DENSE and Co-Boosting (Fig. 2(c))"), resnet > 42.0)


def test_seconds_and_host_stay_out_of_what_was_computed(ofeded_repo):
    """Issue 37: uploads, distilled sets and projections hold what was computed; seconds and the host go to runtime/."""
    work, params, _ = ofeded_repo
    assert host_facts(work / SUB, ("*/distilled*.json", "*/projections.json", "*/clients.json")) == []
    runtime = json.loads((work / SUB / "results" / "fmnist-dir0.3-s0" / "runtime" / "distilled.json").read_text())
    assert runtime["seconds"] > 0 and len(runtime["per_client_seconds"]) == params["clients"]


@pytest.fixture(scope="module")
def ofeded_farmed(ofeded_repo, tmp_path_factory):
    """Issue 41: OFedED's distillation (condense@) and everything upstream of it, through
    the farm on a local Ray instance with two CPUs, from a clone of the commit ofeded_repo's sequential `dvc repro`
    ran, with an empty DVC remote; the first attempt of condense@ loses its worker mid-stage. The reference
    weights are read from the sequential run before any later test changes its copy."""
    from osfl.farm import run_farm

    work, _, _ = ofeded_repo
    selection = ["condense@*"]  # the clients' distillation (the stages after it: the same mechanism, 13 s more)
    lock = yaml.safe_load((work / SUB / "dvc.lock").read_text())["stages"]
    names = sorted(n for n in lock if n.startswith("train@") or fnmatch.fnmatch(n, selection[0]))
    ref = lock_weights(work, (work / SUB / "dvc.lock").read_text(), names)  # the cache is the repository's
    base = tmp_path_factory.mktemp("ofeded-farm")
    user = base / "user"
    sh("git", "clone", "-q", str(work), str(user), cwd=base)
    (base / "remote").mkdir()
    kill = next(n for n in names if n.startswith("condense@"))
    lines: list[str] = []
    res = run_farm(user / SUB / "dvc.yaml", selection, cpus=2, workdir=base / "workers",
                   remote_url=str(base / "remote"), kill_once=(kill, base / "killed"), out=lines.append)
    return user, res, ref, names, kill, lines


@pytest.mark.slow
def test_the_farm_runs_every_stage_of_a_paper_pipeline_on_workers_bit_for_bit(ofeded_farmed):
    """All of the selection's stages ran on workers, git-tracked records included (partition, the clients' and the
    distillation's records); the checkout restored each from the run-cache and runs nothing more; the clients' and
    the distilled sets' tensors equal the sequential run's; condense@ ran twice (its first worker died)."""
    user, res, ref, names, kill, lines = ofeded_farmed
    assert res.ok, (res.failed, res.skipped, "\n".join(lines))
    assert res.plan.local == [] and {"prepare@fmnist"} <= set(res.done) and set(names) <= set(res.done)
    assert any(n.startswith("partition@") for n in res.done)
    assert res.restore_ran == [] and set(res.restored) == set(res.done)
    assert res.attempts[kill] == 2 and all(res.attempts[s] == 1 for s in res.done if s != kill)
    assert "Running stage" not in sh("dvc", "repro", *[f"{n}" for n in names], cwd=user / SUB).stdout
    mine = lock_weights(user, (user / SUB / "dvc.lock").read_text(), names)
    assert sorted(mine) == sorted(ref) and ref, (sorted(mine), sorted(ref))
    for name, state in ref.items():
        assert state.keys() == mine[name].keys() and all(torch.equal(v, mine[name][k]) for k, v in state.items()), name
