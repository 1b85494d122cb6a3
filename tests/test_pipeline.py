"""The whole DVC pipeline at smoke profile, in a temporary copy of the repository.

One session-scoped run feeds several checks: outputs exist, a second `dvc repro` does nothing, experiments with
`-S` change the metrics (on Fashion-MNIST from Debian, offline), and `dvc push` / `dvc pull` into a fresh clone
restores the trained models.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import host_facts, repo_copy, sh, zygote_env, zygote_served

from osfl.live import read_curve

pytestmark = pytest.mark.slow
FMNIST = Path("/usr/share/datasets/fashion-mnist")
ALL_METHODS = ("fedavg", "ensemble", "ot", "feddf", "dense", "coboost", "fedhydra")
TRAINED = ("feddf", "dense", "coboost", "fedhydra")  # methods that train a global model over epochs


@pytest.fixture(scope="session")
def smoke_repo(tmp_path_factory, repo_root):
    """A git+DVC copy of the working tree with profile=smoke, after one full `dvc repro` of dvc.yaml.

    The repository also holds paper pipelines (papers/*/dvc.yaml); commands here name dvc.yaml where DVC
    would otherwise look at every pipeline (status, push, pull).
    """
    work = tmp_path_factory.mktemp("pipeline") / "repo"
    with repo_copy(repo_root, work) as params:
        params["profile"] = "smoke"
    remote = work.parent / "remote"
    out = sh("dvc", "repro", cwd=work)
    sh("git", "add", "-A", cwd=work)
    sh("git", "commit", "-q", "-m", "repro", cwd=work)
    return work, remote, out


def test_repro_writes_report_metrics_and_models(smoke_repo):
    work, _, _ = smoke_repo
    report = work / "reports" / "main"
    for name in ("accuracy.tex", "accuracy.md", "accuracy_bar.png", "accuracy_bar.pdf", "curves.png",
                 "curves.pdf", "metrics.json"):
        assert (report / name).stat().st_size > 0, name
    metrics = json.loads((report / "metrics.json").read_text())
    assert set(metrics["methods"]) == set(ALL_METHODS)
    assert host_facts(work, ("main/clients.json",)) == []  # seconds and the host: results/main/runtime/ only
    for name, m in metrics["methods"].items():
        assert 0.0 <= m["acc_final"] <= 100.0
        epochs, accs = read_curve(work / "results" / "main" / "live" / name)  # the files dvclive wrote
        if name in TRAINED:  # smoke: 200 server epochs x 0.01; the curve's best is the recorded best
            assert m["epochs"] == 2 and epochs == [0, 1, 2], name  # epoch 0: before server training
            assert max(accs[1:]) == pytest.approx(m["acc_best"], abs=1e-4), name
            assert accs[-1] == pytest.approx(m["acc_final"], abs=1e-4), name
        else:  # no server training: one point (epoch 0), and best = final
            assert accs == [pytest.approx(m["acc_final"], abs=1e-4)] and m["acc_best"] == m["acc_final"], name
    md = (report / "accuracy.md").read_text()
    assert all(name in md for name in ALL_METHODS)
    assert len(list((work / "models" / "main" / "clients").glob("client_*/model.pt"))) == 5
    assert (work / "results" / "main" / "partition" / "bubble.png").stat().st_size > 0


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="pdflatex not installed: apt-get install texlive-latex-base texlive-latex-recommended")
def test_generated_latex_table_compiles(smoke_repo, tmp_path):
    from osfl.reporting import latex_document

    work, _, _ = smoke_repo
    (tmp_path / "doc.tex").write_text(latex_document([(work / "reports" / "main" / "accuracy.tex").read_text()]))
    p = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 0


def test_second_repro_does_nothing(smoke_repo):
    work, _, _ = smoke_repo
    out = sh("dvc", "repro", cwd=work)
    assert "Running stage" not in out.stdout, out.stdout
    status = sh("dvc", "status", "--json", "dvc.yaml", cwd=work)
    assert json.loads(status.stdout or "{}") == {}


def exp_rows(show: list) -> list[dict]:
    """Every row of `dvc exp show --json`: the baselines and their experiments."""
    rows = []
    for entry in show:
        rows.append(entry)
        for exp in (entry.get("experiments") or []):
            rows.extend(exp.get("revs", []))
    return rows


def exp_metrics(work: Path) -> dict:
    """experiment name -> (params.yaml, {method: {final, best[, epoch]}}) from `dvc exp show --json`."""
    found = {}
    for rev in exp_rows(json.loads(sh("dvc", "exp", "show", "--json", cwd=work).stdout)):
        data = rev.get("data") or {}
        accs = {}
        for f, v in (data.get("metrics") or {}).items():  # results/main/live/<method>/metrics.json
            if f.startswith("results/main/live/") and not f.startswith("results/main/live/clients/") and "data" in v:
                accs.update(v["data"])
        params = (data.get("params") or {}).get("params.yaml", {}).get("data", {})
        found[rev.get("name") or rev.get("rev")] = (params, accs)
    return found


def exp_columns(show: list) -> set[tuple[str, str, str]]:
    """The params and metrics columns of `dvc exp show` (flattened keys, over every row), as DVC builds them."""
    from dvc.utils.flatten import flatten

    cols = set()
    for rev in exp_rows(show):
        data = rev.get("data") or {}
        for kind in ("params", "metrics"):
            for f, v in (data.get(kind) or {}).items():
                cols.update((kind, f, k) for k in flatten(v.get("data") or {}))
    return cols


def test_experiments_readable_and_comparable(smoke_repo, tmp_path):
    """Two experiments as a user runs them; `dvc exp show` at the root stays under 40 params+metrics columns and
    holds every method's final and best accuracy for both; a method knob set with `++` shows as a column; `dvc
    plots diff` draws each method's curve with one line per experiment. The second experiment changes that knob
    alone: only the method it belongs to runs again, the rest comes from DVC's run cache. Both run on Fashion-MNIST
    from Debian's package where it is installed (as CI installs it): the real data offline, through prepare,
    partition and the clients (the reader itself: tests/test_data.py)."""
    work, _, _ = smoke_repo
    base = json.loads((work / "reports" / "main" / "metrics.json").read_text())["methods"]
    fmnist = FMNIST.exists()
    cheap = ("-S", "methods=[fedavg,ensemble,dense]", "-S", "alpha=1.0",  # dense: a method with server epochs
             *(("-S", "dataset=fmnist") if fmnist else ()))
    sh("dvc", "exp", "run", "--temp", "-n", "alpha1", "-S", "++server.ensemble.weighting=samples", *cheap, cwd=work)
    out = sh("dvc", "exp", "run", "--temp", "-n", "uniform", "-S", "++server.ensemble.weighting=uniform", *cheap,
             cwd=work).stdout
    ran = set(re.findall(r"Running stage '([^']+)'", out))
    # nothing trained twice: the clients and the other servers come from the run cache (stages with uncached outputs,
    # partition, evaluate@ and report, are not in it: they run again, in seconds)
    assert "server@ensemble" in ran and not ran & {"train_clients", "server@fedavg", "server@dense"}, ran
    show = json.loads(sh("dvc", "exp", "show", "--json", cwd=work).stdout)
    cols = exp_columns(show)
    assert len(cols) <= 40, sorted(cols)
    names = {k for _, _, k in cols}
    assert "server.ensemble.weighting" in names  # the knob that differs, and no other method knob
    assert not any(k.startswith("server.") and k != "server.ensemble.weighting" for k in names), sorted(names)
    found = exp_metrics(work)
    assert found["alpha1"][0]["alpha"] == 1.0 and found["uniform"][0]["alpha"] == 1.0, found
    for exp in ("alpha1", "uniform"):
        accs = found[exp][1]
        assert set(accs) == {"fedavg", "ensemble", "dense"}, accs
        for m, a in accs.items():
            assert 0.0 <= a["final"] <= a["best"] <= 100.0, (exp, m, a)
        assert accs["dense"]["epoch"] == 2
        if fmnist:  # real Fashion-MNIST: above chance (10 %) after 2 local epochs on 1,000 samples
            assert found[exp][0]["dataset"] == "fmnist" and accs["fedavg"]["final"] > 12.0, accs
    assert found["alpha1"][0]["server"]["ensemble"]["weighting"] == "samples"
    assert found["uniform"][0]["server"]["ensemble"]["weighting"] == "uniform"
    assert found["uniform"][1]["fedavg"] == found["alpha1"][1]["fedavg"]  # the run cache's result, not a re-run
    assert {m: found["alpha1"][1][m]["final"] for m in ("fedavg", "ensemble")} != \
        {m: base[m]["acc_final"] for m in ("fedavg", "ensemble")}
    # the curves of both experiments, one panel per method (and logged quantity), one line per experiment
    out = sh("dvc", "plots", "diff", "alpha1", "uniform", "--json", cwd=work)
    shown = json.loads(out.stdout)
    # the top-level plot names every default method; those these experiments did not run have no file
    bad = [e for e in shown.get("errors") or [] if any(f"/{m}/" in e.get("source", "") for m in ("fedavg", "ensemble", "dense"))]
    assert not bad, bad
    plots = shown["data"]
    acc = {pid: spec for pid, spec in plots.items() if pid.endswith("test_acc.tsv") and "/live/" in pid}
    assert {Path(pid).parts[3] for pid in acc} >= {"fedavg", "ensemble", "dense"}, sorted(plots)
    dense = acc["results/main/live/dense/plots/metrics/test_acc.tsv"][0]
    assert set(dense["revisions"]) == {"alpha1", "uniform"}, dense["revisions"]
    assert "accuracy-vs-epoch" in plots  # the top-level plot: every method in one panel
    html = tmp_path / "plots"
    sh("dvc", "plots", "diff", "alpha1", "uniform", "-o", str(html), cwd=work)
    assert (html / "index.html").stat().st_size > 0
    # the workspace is left as it was
    assert sh("git", "status", "--porcelain", cwd=work).stdout.strip() == ""


def test_push_then_pull_into_fresh_clone(smoke_repo, tmp_path):
    work, remote, _ = smoke_repo
    sh("dvc", "push", "dvc.yaml", cwd=work)
    sh("dvc", "push", "--run-cache", "dvc.yaml", cwd=work)
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", str(work), str(clone), cwd=tmp_path)
    sh("dvc", "remote", "add", "-f", "-d", "--local", "testremote", str(remote), cwd=clone)
    sh("dvc", "pull", "dvc.yaml", cwd=clone)
    for f in sorted((work / "models" / "main").rglob("*.pt")):
        g = clone / f.relative_to(work)
        assert g.read_bytes() == f.read_bytes(), g
    assert (clone / "models" / "main" / "global" / "fedavg" / "model.pt").exists()
    # with everything pulled, nothing needs to run again
    assert json.loads(sh("dvc", "status", "--json", "dvc.yaml", cwd=clone).stdout or "{}") == {}


def _tracked_outputs(work: Path) -> dict[str, bytes]:
    """The bytes of every git-tracked pipeline output (cache: false: DVC cannot restore them)."""
    return {str(f.relative_to(work)): f.read_bytes() for d in ("results/main", "reports/main")
            for f in sorted((work / d).rglob("*")) if f.is_file()}


def test_failed_experiment_loses_nothing(smoke_repo):
    """`dvc exp run -S alpha=0` stops at the partition stage with one line; the outputs DVC cannot restore
    (cache: false, git-tracked) are untouched, and `dvc checkout` brings back the cached ones."""
    work, _, _ = smoke_repo
    before = _tracked_outputs(work)
    p = sh("dvc", "exp", "run", "-S", "alpha=0", cwd=work, check=False)
    assert p.returncode != 0
    assert "error: alpha: " in p.stdout + p.stderr
    assert _tracked_outputs(work) == before
    sh("git", "checkout", "params.yaml", cwd=work)
    sh("dvc", "checkout", "dvc.yaml", cwd=work)
    assert json.loads(sh("dvc", "status", "--json", "dvc.yaml", cwd=work).stdout or "{}") == {}
    assert sh("git", "status", "--porcelain", cwd=work).stdout.strip() == ""


@pytest.mark.parametrize("bad, says", [
    (("-S", "methods=[fedavg,nope]"), "methods"),
    (("-S", "++bogus_top=1"), "bogus_top"),
    ((), "alpah"),  # a typo added to params.yaml by hand: nothing lists it, so only the check stage reads it
])
def test_bad_params_fail_in_the_check_stage_before_any_work(smoke_repo, bad, says):
    """Issue 75: the `check` stage lists the whole params file and runs first, so an unknown method, an unknown
    key given with ++ or typed into params.yaml fails in one line naming it, before DVC reaches any other stage;
    nothing already computed is lost."""
    work, _, _ = smoke_repo
    before = _tracked_outputs(work)
    if not bad:
        with open(work / "params.yaml", "a") as f:
            f.write("alpah: 0.1\n")
    p = sh("dvc", "exp", "run", *bad, cwd=work, check=False)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and f"error: {says}" in out, out[-2000:]
    assert "Running stage 'check'" in out and not re.search(r"Running stage '(?!check')", out), out[-2000:]
    # a methods list that drops methods makes DVC take their stages' outputs out of the workspace; git and the
    # cache give every one back, as they were
    sh("git", "checkout", "--", "params.yaml", "results", cwd=work)
    sh("dvc", "checkout", "dvc.yaml", cwd=work)
    assert _tracked_outputs(work) == before
    assert json.loads(sh("dvc", "status", "--json", "dvc.yaml", cwd=work).stdout or "{}") == {}


def test_stages_pin_record_and_reproduce_bit_for_bit(smoke_repo):
    """The reproducibility promise on one machine: running train_clients and a data-free server again (new
    processes, same params) gives byte-identical models; each records device, CPU, kernel ISA and threads.
    The suite's `dvc repro` ran ``main``'s stages as children of its warm interpreter (tests/zygote.py); ``again``
    runs in fresh interpreters, so this also checks that the warm server changes no output."""
    work, _, _ = smoke_repo
    again = ("--experiment", "again", "--partition-of", "main", "--no-progress")
    fresh = {"OSFL_ZYGOTE": ""}
    if zygote_env():  # unless the suite runs with OSFL_NO_ZYGOTE=1: main's clients were trained warm
        assert any(r["argv"][1] == "osfl.stages.train_clients" and Path(r["cwd"]).resolve() == work.resolve()
                   for r in zygote_served())
    served = len(zygote_served())
    sh("python", "-m", "osfl.stages.train_clients", *again, cwd=work, env_extra=fresh)
    sh("python", "-m", "osfl.stages.server", *again, "--method", "dense", cwd=work, env_extra=fresh)
    assert len(zygote_served()) == served  # and again's in fresh interpreters
    for a in sorted((work / "models" / "main" / "clients").rglob("*.pt")):
        b = work / "models" / "again" / "clients" / a.relative_to(work / "models" / "main" / "clients")
        assert a.read_bytes() == b.read_bytes(), b
    # the outputs' hashes depend only on what was computed: seconds and host facts live in the runtime records
    for a in sorted(p for p in (work / "models" / "main" / "clients").rglob("*") if p.is_file()):
        assert a.read_bytes() == (work / "models" / "again" / "clients" / a.relative_to(work / "models" / "main" / "clients")).read_bytes(), a
    for rec in ("clients", "dense"):
        assert json.loads((work / "results" / "again" / "runtime" / f"{rec}.json").read_text())["seconds"] > 0
    main_dense = work / "models" / "main" / "global" / "dense" / "model.pt"
    assert (work / "models" / "again" / "global" / "dense" / "model.pt").read_bytes() == main_dense.read_bytes()
    rt = json.loads((work / "results" / "main" / "runtime" / "clients.json").read_text())["runtime"]
    assert rt["threads"] == 1 and rt["device"] == "cpu" and rt["deterministic"] is True
    assert rt["cpu"] and rt["cpu_capability"]
    metrics = json.loads((work / "results" / "main" / "runs" / "dense.json").read_text())
    assert metrics["runtime"]["threads"] == 1 and metrics["runtime"]["cpu"] == rt["cpu"]


def test_a_server_whose_global_model_has_dropout_gives_the_same_bytes_twice(smoke_repo):
    """Issue 72: dropout's masks come from torch's default generator, which torch seeds at random in every process;
    the server run seeds it from the run's seed (protocols/one_shot.run_method), so a DENSE student with dropout
    (VGG-9 at cpu width, as FedMHO's global model) trained twice in fresh processes on the same clients is the same
    bytes, and so is its curve."""
    work, _, _ = smoke_repo
    fresh = {"OSFL_ZYGOTE": ""}
    outs = []
    for exp in ("dropout-a", "dropout-b"):
        shutil.copytree(work / "models" / "main" / "clients", work / "models" / exp / "clients")
        sh("python", "-m", "osfl.stages.server", "--experiment", exp, "--partition-of", "main", "--no-progress",
           "--method", "dense", "--set", "model=vgg9_cpu", cwd=work, env_extra=fresh)
        model = work / "models" / exp / "global" / "dense" / "model.pt"
        curve = work / "results" / exp / "live" / "dense" / "plots" / "metrics" / "test_acc.tsv"
        outs.append((model.read_bytes(), curve.read_text()))
    import torch

    state = torch.load(work / "models" / "dropout-a" / "global" / "dense" / "model.pt", weights_only=True)
    assert any("classifier" in k or "fc" in k for k in state)  # the VGG-9 ran (its head holds the dropout)
    assert outs[0][0] == outs[1][0] and outs[0][1] == outs[1][1]


def test_server_logs_each_epoch_before_it_ends(smoke_repo, monkeypatch):
    """Live logging: while a server stage runs, its DVC metrics file and curve already hold every finished epoch
    (what `dvc exp show` and editors read during `dvc exp run`)."""
    from osfl import live
    from osfl.stages import server

    work, _, _ = smoke_repo
    monkeypatch.chdir(work)
    folder = work / "results" / "live-check" / "live" / "dense"
    seen = []
    original = live.LiveRun.epoch

    def epoch_then_read(self, entry):
        original(self, entry)
        on_disk = json.loads((folder / "metrics.json").read_text())["dense"]
        seen.append((entry["epoch"], on_disk["epoch"], on_disk["final"], read_curve(folder)[0]))

    monkeypatch.setattr(live.LiveRun, "epoch", epoch_then_read)
    shutil.copytree(work / "models" / "main" / "clients", work / "models" / "live-check" / "clients")
    server.main(["--experiment", "live-check", "--partition-of", "main", "--no-progress", "--method", "dense",
                 "--set", "server.dense.epochs=300"])  # smoke: x0.01 -> 3 epochs
    assert [(e, d) for e, d, _, _ in seen] == [(0, 0), (1, 1), (2, 2), (3, 3)]  # epoch 0: before training
    assert [c for _, _, _, c in seen] == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3]]
    final = json.loads((folder / "metrics.json").read_text())["dense"]
    assert final["epoch"] == 3 and final["final"] == seen[-1][2]


def test_track_teacher_is_refused_by_a_method_without_a_teacher(smoke_repo, monkeypatch, capsys):
    from osfl.stages import server

    work, _, _ = smoke_repo
    monkeypatch.chdir(work)
    with pytest.raises(SystemExit) as e:
        server.main(["--no-progress", "--method", "fedavg", "--track-teacher"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert e.value.code == 2 and err.startswith("error: --track-teacher: fedavg does not record its teacher")
    assert "coboost" in err and "dense" in err and "ofeded" in err
