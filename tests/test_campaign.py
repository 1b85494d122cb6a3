"""osfl.campaign end to end on the CPU: a copy of the repository stands in for the lent machine, the campaign runs
its queue there to a deadline, and the archive it packs lands back here as dvc.lock entries written by dvc commit."""
import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import sh

from osfl.campaign import Step, is_done, land, load_queue, plan, run, stale_queue, write_queue
from osfl.campaign.__main__ import main
from osfl.errors import ConfigError

# a DVC subproject as the papers are (dvc init --subdir): a frozen paper-profile stage with a cached model and a
# git-tracked record, a stage too slow for the deadline, one whose cached output is over the archive's cap
PIPELINE = {"stages": {
    "column": {"frozen": True, "deps": ["in.txt"],
               "cmd": "python -c \"open('model.bin','w').write(open('in.txt').read()*3); "
                      "open('record.json','w').write('{\\\"acc\\\": 71.02}')\"",
               "outs": ["model.bin", {"record.json": {"cache": False}}]},
    "slow": {"cmd": "sleep 60 && echo late > slow.txt", "outs": ["slow.txt"]},
    "big": {"cmd": "python -c \"open('big.bin','wb').write(bytes(2 * 2**20))\"", "outs": ["big.bin"]},
    "never": {"cmd": "echo x > n.txt", "outs": ["n.txt"]},
}}
QUEUE = {"steps": [{"project": "proj", "stage": "column", "minutes": 0.01},
                   {"project": "proj", "stage": "slow", "minutes": 0.02},
                   {"project": "proj", "stage": "big", "minutes": 0.01},
                   {"project": "proj", "stage": "never", "minutes": 60}]}


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "home"
    (root / "proj").mkdir(parents=True)
    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", "--subdir", cwd=root / "proj")
    (root / "proj" / "in.txt").write_text("weights")
    (root / "proj" / "dvc.yaml").write_text(yaml.safe_dump(PIPELINE, sort_keys=False))
    (root / "queue.yaml").write_text(yaml.safe_dump(QUEUE, sort_keys=False))
    return root


def test_a_slot_runs_what_fits_and_lands_what_finished(repo, tmp_path):
    lent = tmp_path / "lent"  # the lent machine's copy of the working tree
    shutil.copytree(repo, lent)
    queue = load_queue(repo / "queue.yaml")
    assert [w for _, w in plan(repo, queue, 1.0)][:3] == ["runs (0-0.01 min)", "runs (0.01-0.03 min)",
                                                          "runs (0.03-0.04 min)"]
    assert plan(repo, queue, 1.0)[3][1] == "does not fit (60 min, 0.96 left)"
    assert [w for _, w in plan(repo, queue, 1.0, pack=2)][:3] == ["runs (0-0.01 min)", "runs (0-0.02 min)",
                                                                  "runs (0.01-0.02 min)"]
    out = tmp_path / "out"
    got = {o.step.stage: o for o in run(lent, queue, 0.12, out, pack=2, max_mib=1.0, progress=lambda _: None)}
    assert got["column"].state == "finished" and got["column"].files == ["proj/model.bin", "proj/record.json"]
    assert got["slow"].state == "stopped" and got["never"].state == "skipped"
    assert got["big"].state == "finished" and got["big"].left_behind == ["proj/big.bin"]
    manifest = json.loads((out / "campaign.json").read_text())
    remote_lock = next(s["lock"] for s in manifest["steps"] if s["stage"] == "column")
    assert not (repo / "proj" / "dvc.lock").exists()

    report = dict(land(repo, out / "campaign.tar.gz", progress=lambda _: None))
    assert report["proj:column"] == "landed"
    assert report["proj:slow"].startswith("not landed: stopped") and "big.bin" in report["proj:big"]
    here = yaml.safe_load((repo / "proj" / "dvc.lock").read_text())["stages"]
    assert list(here) == ["column"] and here["column"]["outs"] == remote_lock["outs"]
    assert (repo / "proj" / "record.json").read_text() == '{"acc": 71.02}'
    # a later lending resumes: the landed stage is done (frozen, yet its deps are compared) and is not run again
    assert is_done(repo, queue[0]) and plan(repo, queue, 1.0)[0][1] == "done"
    (repo / "proj" / "in.txt").write_text("changed")
    assert not is_done(repo, queue[0])


def test_a_rerun_step_runs_again_when_its_lock_is_current_but_its_outputs_are_nowhere(repo, tmp_path):
    sh("dvc", "repro", "-q", "never", cwd=repo / "proj")
    (repo / "proj" / "n.txt").unlink()
    shutil.rmtree(repo / "proj" / ".dvc" / "cache")
    (repo / "queue.yaml").write_text("steps: [{project: proj, stage: never, minutes: 1},"
                                     " {project: proj, stage: never, minutes: 1, rerun: true}]")
    with pytest.raises(ConfigError, match="listed twice"):
        load_queue(repo / "queue.yaml")
    kept, rerun = (Step("proj", "never", 0.1), Step("proj", "never", 0.1, rerun=True))
    assert is_done(repo, kept) and not is_done(repo, rerun)
    got = run(repo, [rerun], 1.0, tmp_path / "out", progress=lambda _: None)
    assert got[0].state == "finished" and (repo / "proj" / "n.txt").read_text() == "x\n" and is_done(repo, rerun)
    (repo / "queue.yaml").write_text("steps: [{project: proj, stage: never, minutes: 1, rerun: 1}]")
    with pytest.raises(ConfigError, match=r"^steps\[0\]\.rerun: 1 is not true or false"):
        load_queue(repo / "queue.yaml")


def test_plan_follows_the_queue_s_dependencies(tmp_path):
    """A step that reads the outputs of one that does not fit is skipped, as `run` skips it."""
    root = tmp_path / "home"
    (root / "proj").mkdir(parents=True)
    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", "--subdir", cwd=root / "proj")
    stages = {"clients": {"cmd": "echo c > c.txt", "outs": ["c.txt"]},
              "server": {"cmd": "cat c.txt > s.txt", "deps": ["c.txt"], "outs": ["s.txt"]},
              "other": {"cmd": "echo o > o.txt", "outs": ["o.txt"]}}
    (root / "proj" / "dvc.yaml").write_text(yaml.safe_dump({"stages": stages}, sort_keys=False))
    queue = [Step("proj", "clients", 5.0), Step("proj", "server", 1.0), Step("proj", "other", 1.0)]
    assert [w for _, w in plan(root, queue, 3.0)] == [
        "does not fit (5 min, 3 left)", "skipped (reads proj:clients, which does not run)", "runs (0-1 min)"]
    assert [w for _, w in plan(root, queue, 9.0, pack=2)] == ["runs (0-5 min)", "runs (5-6 min)", "runs (0-1 min)"]


def test_a_stage_whose_dependencies_differ_here_is_not_landed(repo, tmp_path):
    lent = tmp_path / "lent"
    shutil.copytree(repo, lent)
    queue = load_queue(repo / "queue.yaml")[:1]
    run(lent, queue, 0.5, tmp_path / "out", progress=lambda _: None)
    (repo / "proj" / "in.txt").write_text("edited after the slot")
    report = land(repo, tmp_path / "out" / "campaign.tar.gz", progress=lambda _: None)
    assert report == [("proj:column", "not landed: dependencies differ from the lent machine's: in.txt")]
    assert not (repo / "proj" / "dvc.lock").exists()  # the lock stays as it was


def test_bad_queues_fail_in_one_line(repo, tmp_path):
    bad = tmp_path / "q.yaml"
    for text, match in (("steps: []", r"^steps: .* needs a non-empty list"),
                        ("steps: [{project: proj, stage: column}]", r"^steps\[0\]: needs the keys project, stage, minutes"),
                        ("steps: [{project: proj, stage: column, minutes: -1}]", r"^steps\[0\]\.minutes: -1 is not"),
                        ("steps: [{project: proj, stage: nope, minutes: 1}]", r"^stage: 'nope' is not a stage of")):
        bad.write_text(text)
        with pytest.raises(ConfigError, match=match):
            plan(repo, load_queue(bad), 1.0)
    assert main(["plan", str(bad), "--minutes", "0", "--root", str(repo)]) == 2


def test_a_step_waits_for_the_steps_whose_outputs_it_reads(repo, tmp_path):
    """Packed steps keep the pipeline's order: the servers start once the clients' stage finished (its seconds before
    theirs), and a step whose upstream was stopped at the deadline is skipped, not run on missing inputs."""
    chain = {"stages": {
        "clients": {"frozen": True, "deps": ["in.txt"], "outs": ["clients"],
                    "cmd": "sleep 2 && mkdir -p clients && cp in.txt clients/w.txt && date +%s.%N > t_clients"},
        "server": {"frozen": True, "deps": ["clients"], "outs": ["server.txt"],
                   "cmd": "date +%s.%N > t_server && cat clients/w.txt > server.txt"},
        "slow": {"cmd": "sleep 60 && echo late > slow.txt", "outs": ["slow.txt"]},
        "after_slow": {"deps": ["slow.txt"], "cmd": "cp slow.txt again.txt", "outs": ["again.txt"]},
    }}
    (repo / "proj" / "dvc.yaml").write_text(yaml.safe_dump(chain, sort_keys=False))
    queue = [Step("proj", "server", 0.01), Step("proj", "clients", 0.01), Step("proj", "slow", 0.01),
             Step("proj", "after_slow", 0.01)]
    got = {o.step.stage: o for o in run(repo, queue, 0.1, tmp_path / "out", pack=3, progress=lambda _: None)}
    assert got["clients"].state == got["server"].state == "finished", got
    assert float((repo / "proj" / "t_server").read_text()) >= float((repo / "proj" / "t_clients").read_text())
    assert got["slow"].state == "stopped"
    assert got["after_slow"].state == "skipped" and "proj:slow" in got["after_slow"].detail


def test_a_cached_output_git_tracks_fails_before_anything_runs(repo, tmp_path):
    """DVC refuses to commit a cached output that git tracks, after the stage ran: the campaign says so first."""
    (repo / "proj" / "model.bin").write_text("an older stage's file, tracked by git")
    sh("git", "add", "-f", "proj/model.bin", cwd=repo)
    with pytest.raises(ConfigError, match=r"^outs: proj/model.bin is tracked by git.*git rm -r --cached proj/model"):
        run(repo, load_queue(repo / "queue.yaml")[:1], 1.0, tmp_path / "out", progress=lambda _: None)
    assert not (repo / "proj" / "record.json").exists()  # nothing ran


def test_a_step_that_would_resume_from_its_recorded_checkpoint_fails_before_anything_runs(repo, tmp_path):
    """A rounds stage resumes from its persistent checkpoint; restored by ``dvc checkout`` it is the recorded end, so
    a "run" would redo nothing and be committed as one. A partial checkpoint (a killed run's) still resumes."""
    pipeline = yaml.safe_load((repo / "proj" / "dvc.yaml").read_text())
    pipeline["stages"]["rounds"] = {  # appends a round to the checkpoint; its record says how many it ran
        "deps": ["in.txt"], "outs": [{"ckpt.txt": {"persist": True}}, {"ran.txt": {"cache": False}}],
        "cmd": "python -c \"import os; old = open('ckpt.txt').read() if os.path.exists('ckpt.txt') else ''; "
               "open('ckpt.txt', 'w').write(old + 'r'); open('ran.txt', 'w').write(str(len(old)))\""}
    (repo / "proj" / "dvc.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    sh("dvc", "repro", "-q", "rounds", cwd=repo / "proj")
    (repo / "proj" / "in.txt").write_text("new weights")  # the stage is stale; its checkpoint is the recorded one
    step = Step("proj", "rounds", 0.1)
    with pytest.raises(ConfigError, match=r"^outs: proj/ckpt.txt holds the checkpoint dvc.lock records for "
                                          r"proj:rounds.*rm -r proj/ckpt.txt"):
        run(repo, [step], 1.0, tmp_path / "out", progress=lambda _: None)
    assert (repo / "proj" / "ran.txt").read_text() == "0"  # nothing ran
    (repo / "proj" / "ckpt.txt").write_text("a killed run's")  # not the recorded one: it resumes
    assert run(repo, [step], 1.0, tmp_path / "out", progress=lambda _: None)[0].state == "finished"
    (repo / "proj" / "ckpt.txt").unlink()
    assert run(repo, [step], 1.0, tmp_path / "out2", progress=lambda _: None)[0].state == "done"


def test_a_step_whose_input_is_neither_here_nor_made_by_the_queue_fails_before_anything_runs(repo, tmp_path):
    """A current upstream stage whose outputs were never checked out: its readers would fail minutes in, taking their
    own readers along. The campaign names the missing input and the stage that makes it, before anything runs."""
    pipeline = yaml.safe_load((repo / "proj" / "dvc.yaml").read_text())
    pipeline["stages"]["reads"] = {"deps": ["n.txt"], "outs": ["m.txt"], "cmd": "cp n.txt m.txt"}
    (repo / "proj" / "dvc.yaml").write_text(yaml.safe_dump(pipeline, sort_keys=False))
    sh("dvc", "repro", "-q", "never", cwd=repo / "proj")  # recorded, then its output gone from the workspace
    (repo / "proj" / "n.txt").unlink()
    with pytest.raises(ConfigError, match=r"^deps: proj/n.txt, read by proj:reads, is not here and no step of the "
                                          r"queue writes it: `dvc checkout never`"):
        run(repo, [Step("proj", "reads", 0.1)], 1.0, tmp_path / "out", progress=lambda _: None)
    # `queue --with-inputs` adds the stage that writes it, as a rerun step (its lock entry is current)
    assert [s.stage for s, _ in stale_queue(repo, "proj", patterns=["reads"])] == ["reads"]
    queued = stale_queue(repo, "proj", patterns=["reads"], with_inputs=True)
    write_queue(tmp_path / "q.yaml", queued, "with inputs")
    assert [(s.stage, s.rerun) for s in load_queue(tmp_path / "q.yaml")] == [("never", True), ("reads", False)]
    got = run(repo, [Step("proj", "never", 0.1, rerun=True), Step("proj", "reads", 0.1)], 1.0, tmp_path / "out2",
              progress=lambda _: None)
    assert [o.state for o in got] == ["finished", "finished"] and (repo / "proj" / "m.txt").read_text() == "x\n"


def test_a_dvc_command_waits_while_another_dvc_process_holds_the_lock(monkeypatch, tmp_path):
    import subprocess

    import osfl.campaign as campaign

    answers = [subprocess.CompletedProcess([], 1, "", "ERROR: Unable to acquire lock. Most likely another DVC ..."),
               subprocess.CompletedProcess([], 0, "", "")]
    calls = []
    monkeypatch.setattr(campaign.subprocess, "run", lambda *a, **k: calls.append(a) or answers.pop(0))
    monkeypatch.setattr(campaign.time, "sleep", lambda s: None)
    assert campaign._dvc(tmp_path, "commit", "-f", "x").returncode == 0 and len(calls) == 2
    other = subprocess.CompletedProcess([], 1, "", "ERROR: stage 'x' does not exist")
    monkeypatch.setattr(campaign.subprocess, "run", lambda *a, **k: calls.append(a) or other)
    assert campaign._dvc(tmp_path, "commit", "-f", "x").returncode == 1 and len(calls) == 3  # no retry


def test_a_failed_step_says_what_its_command_said_last(repo, tmp_path):
    """'exit code 1' alone sent a person to the logs (a campaign started outside the project's environment: every step
    failed with "No module named 'osfl'"); the outcome carries the log's last line and the log's path."""
    (repo / "proj" / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"broken": {
        "cmd": "echo working && python -c \"import sys; sys.exit('ModuleNotFoundError: no module named osfl')\"",
        "outs": ["never.txt"]}}}, sort_keys=False))
    got = run(repo, [Step("proj", "broken", 0.01)], 0.5, tmp_path / "out", progress=lambda _: None)[0]
    assert got.state == "failed"
    assert got.detail.startswith("exit code 1: ModuleNotFoundError: no module named osfl (")
    assert got.detail.endswith("broken.log)")


def test_a_project_is_read_while_no_other_dvc_process_holds_its_lock(repo):
    """A second campaign started while the first committed a stage read half a dvc.lock and stopped; the stages are
    now read under DVC's project lock, waiting while another process holds it."""
    import threading
    import time

    from dvc.repo import Repo

    from osfl.campaign import _load_project

    holder = Repo(str(repo / "proj"))
    holder.lock.lock()
    threading.Timer(3.0, holder.lock.unlock).start()
    t0 = time.monotonic()
    _, stages, locks = _load_project(Repo, repo / "proj", wait_s=30)
    assert time.monotonic() - t0 >= 2.5 and "column" in stages and locks == {}
    holder.close()
    with pytest.raises(Exception, match="lock"):
        holder.lock.lock()
        try:
            _load_project(Repo, repo / "proj", wait_s=0)
        finally:
            holder.lock.unlock()


def test_queue_lists_what_is_not_current_upstream_first_with_recorded_estimates(repo, tmp_path):
    """`queue PROJECT` for a re-record or a new grid item: the stages without a current lock entry, a stage after the
    one whose outputs it reads, minutes from the committed runtime records (scaled), a stage never run estimated from
    its recorded siblings; frozen stages only when asked."""
    from osfl.campaign import stale_queue

    record = "import json, sys; json.dump({'seconds': float(sys.argv[2])}, open(f'runtime/{sys.argv[1]}.json', 'w'))"
    (repo / "proj" / "rec.py").write_text(record)
    (repo / "proj" / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "server": {"foreach": ["a", "b"], "do": {
            "cmd": "python rec.py server-${item} 30 && cp trained-${item}.txt served-${item}.txt",
            "deps": ["trained-${item}.txt"], "outs": ["served-${item}.txt", {"runtime/server-${item}.json": {"cache": False}}]}},
        "train": {"foreach": ["a", "b"], "do": {
            "cmd": "mkdir -p runtime && python rec.py train-${item} 120 && echo ${item} > trained-${item}.txt",
            "deps": ["in.txt"], "outs": ["trained-${item}.txt", {"runtime/train-${item}.json": {"cache": False}}]}},
        "paper": {"frozen": True, "cmd": "echo p > p.txt", "outs": ["p.txt"]},
    }}, sort_keys=False))
    sh("dvc", "repro", "-q", "train@a", cwd=repo / "proj")
    got = stale_queue(repo, "proj", scale=2.0, default_minutes=7.0)
    # server@a reads train@a's output, which is current: ready at once, first in dvc.yaml's order
    assert [(s.stage, s.minutes) for s, _ in got] == [("server@a", 7.0), ("train@b", 4.0), ("server@b", 7.0)]
    assert got[1][1] == "median of 1 recorded train@* (240 s as scaled)"
    sh("dvc", "repro", "-q", "train@b", "server@a", cwd=repo / "proj")
    (repo / "proj" / "in.txt").write_text("changed")  # every train is stale now, and what reads it
    got = stale_queue(repo, "proj", patterns=["train@*", "server@b", "paper"], frozen=True)
    assert [(s.stage, s.minutes) for s, _ in got] == [("train@a", 2.0), ("train@b", 2.0), ("server@b", 0.5),
                                                      ("paper", 2.0)]
    assert got[0][1] == "120 s x 1 (runtime/train-a.json)"
    # a record that names the kernels of the machine the queue is for is not scaled; others are, and their siblings'
    rec = repo / "proj" / "runtime" / "train-a.json"
    rec.write_text(json.dumps({"seconds": 120.0, "runtime": {"cpu_capability": "AVX2"}}))
    got = dict((s.stage, (s.minutes, why)) for s, why in stale_queue(repo, "proj", scale=2.0, kernels="AVX2"))
    assert got["train@a"] == (2.0, "120 s x 1 (runtime/train-a.json, AVX2)") and got["train@b"][0] == 4.0
    got = dict((s.stage, s.minutes) for s, _ in stale_queue(repo, "proj", scale=2.0, kernels="AVX512"))
    assert got["train@a"] == 4.0
    out = tmp_path / "q.yaml"
    assert main(["queue", "proj", "-o", str(out), "--root", str(repo), "--scale", "2"]) == 0
    assert [s.stage for s in load_queue(out)][:2] == ["train@a", "train@b"]


def test_a_missing_runtime_record_falls_back_to_the_run_record_beside_it(tmp_path, monkeypatch):
    """FedHydra's committed runs predate runtime records apart: a declared ``<run>/runtime/<x>.json`` that is not there
    is estimated from ``<run>/runs/<x>.json``'s ``server_seconds``; a run record is never read for a stage whose
    runtime record is there, nor as a record of its own."""
    from osfl.campaign import _recorded_seconds

    monkeypatch.chdir(tmp_path)
    (tmp_path / "r" / "runs").mkdir(parents=True)
    (tmp_path / "r" / "runs" / "m.json").write_text(json.dumps(
        {"server_seconds": 300.5, "runtime": {"cpu_capability": "AVX512"}}))
    got = _recorded_seconds(["r/global/m", "r/runtime/m.json"])
    assert got == (300.5, Path("r/runs/m.json"), "AVX512")
    assert _recorded_seconds(["r/runs/m.json"]) == (None, None, "")  # an evaluate stage's own output
    (tmp_path / "r" / "runtime").mkdir()
    (tmp_path / "r" / "runtime" / "m.json").write_text(json.dumps({"seconds": 12.0}))
    assert _recorded_seconds(["r/runtime/m.json"])[:1] == (12.0,)
