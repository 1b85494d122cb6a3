"""osfl.farm's plan (no Ray): stale stages as DVC sees them, where each runs, what it waits for and asks for.

The launcher itself runs the smoke pipeline on a local Ray instance in tests/test_pipeline.py (test_farm_*)."""
import pytest
import yaml
from helpers import sh

from osfl.config import check_keys
from osfl.errors import ConfigError
from osfl.farm import DEFAULT_RESOURCES, Resources, make_plan, stage_resources

PIPELINE = {"stages": {
    "prep": {"cmd": "python -c \"open('a.txt','w').write(open('in.txt').read())\"", "deps": ["in.txt"],
             "outs": ["a.txt"]},
    "split": {"cmd": "python -c \"open('s.json','w').write('{}')\"", "deps": ["a.txt"],
              "outs": [{"s.json": {"cache": False}}]},
    "server": {"foreach": ["x", "y"], "do": {
        "cmd": "python -c \"open('m${item}.txt','w').write(open('a.txt').read()+open('s.json').read())\"",
        "deps": ["a.txt", "s.json"], "outs": ["m${item}.txt"]}},
    "report": {"cmd": "python -c \"open('r.json','w').write(open('mx.txt').read())\"", "deps": ["mx.txt", "my.txt"],
               "outs": [{"r.json": {"cache": False}}]},
    "rounds": {"cmd": "python -c \"import os; os.makedirs('ck', exist_ok=True); open('ck/t','a').write('.')\"",
               "deps": ["s.json"], "outs": [{"ck": {"persist": True}}]},
}}


@pytest.fixture
def project(tmp_path):
    sh("git", "init", "-q", cwd=tmp_path)
    sh("dvc", "init", "-q", cwd=tmp_path)
    (tmp_path / "in.txt").write_text("hi")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(PIPELINE, sort_keys=False))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"farm": {"resources": {"server": {"gpus": 0.5}}}}))
    return tmp_path


def test_plan_puts_every_stage_on_workers_and_says_how_its_results_come_back(project):
    plan = make_plan(project / "dvc.yaml")
    assert plan.selected[0] == "prep" and plan.selected[-1] == "report" and plan.up_to_date == []
    assert {s.name for s in plan.workers} == set(plan.selected) and plan.local == []
    via = {s.name: s.via for s in plan.stale}  # git-tracked outputs through the run-cache; a persistent one carried
    assert via == {"prep": "run-cache", "split": "run-cache", "server@x": "run-cache", "server@y": "run-cache",
                   "report": "run-cache", "rounds": "carried"}
    assert next(s for s in plan.stale if s.name == "server@x").upstream == ["prep", "split"]
    after = {s.name: s.after for s in plan.stale}
    assert after["server@x"] == ["prep", "split"] and after["split"] == ["prep"] and after["rounds"] == ["split"]
    assert sorted(after["report"]) == ["server@x", "server@y"]
    assert next(s for s in plan.stale if s.name == "server@y").resources == Resources(1, 0.5, 4.0)
    only = make_plan(project / "dvc.yaml", ["server@y"])  # a selector brings what it needs
    assert [s.name for s in only.stale] == ["prep", "split", "server@y"]
    sh("dvc", "repro", "prep", cwd=project)
    (project / "in.txt").write_text("hi")  # unchanged input: prep is up to date, the rest still stale
    plan = make_plan(project / "dvc.yaml")
    assert "prep" in plan.up_to_date and [s.name for s in plan.workers] == ["split", "rounds", "server@x",
                                                                          "server@y", "report"]
    assert next(s for s in plan.workers if s.name == "server@x").after == ["split"]
    (project / "in.txt").write_text("changed")  # a changed input makes everything downstream stale
    assert [s.name for s in make_plan(project / "dvc.yaml").workers][:2] == ["prep", "split"]
    with pytest.raises(ConfigError, match=r"^stage: 'srv\*' matches no stage of dvc.yaml; stages: prep, "):
        make_plan(project / "dvc.yaml", ["srv*"])


def test_resources_default_per_family_and_bad_keys_name_the_key():
    for params_file in (None, "papers/fedhydra/params.yaml"):  # every pipeline's stages accept the farm's section
        check_keys({"farm": {"resources": {"server": {"gpus": 0.5}}}}, params_file)
        with pytest.raises(ConfigError, match=r"^farm\.resource: unknown key"):
            check_keys({"farm": {"resource": {}}}, params_file)
    res = stage_resources(None)
    assert res["server"] == Resources(1, 0.25, 4.0) and res["default"] == Resources(1, 0.0, 2.0)
    assert set(DEFAULT_RESOURCES) <= set(res)
    res = stage_resources({"farm": {"resources": {"fid": {"memory_gb": 8}, "server": {"gpus": 1}}}})
    assert res["fid"] == Resources(1, 0.0, 8.0) and res["server"] == Resources(1, 1, 4.0)
    for bad, key in (({"farm": {"resource": {}}}, "farm.resource"),
                     ({"farm": {"resources": {"server": {"gpu": 1}}}}, "farm.resources.server.gpu"),
                     ({"farm": {"resources": {"server": {"gpus": -1}}}}, "farm.resources.server.gpus"),
                     ({"farm": {"resources": {"server": 1}}}, "farm.resources.server")):
        with pytest.raises(ConfigError, match=rf"^{key}: "):
            stage_resources(bad)


@pytest.mark.slow  # a DVC project run, pushed and pulled into a fresh clone (about 12 s)
def test_git_tracked_outputs_travel_through_the_run_cache_and_persistent_ones_are_carried(project, tmp_path_factory):
    """DVC alone saves no run-cache entry for a stage with a plain ``cache: false`` output, and ``dvc push
    --run-cache`` leaves out such outputs' objects: after osfl.farm.runcache, a fresh clone with only the remote
    restores every stage (git-tracked files included, the same bytes) and runs none. A stage with a persistent
    output (no run-cache entry at all) is carried: osfl.farm.carry sends it and lands it in the clone."""
    remote = tmp_path_factory.mktemp("remote")
    sh("git", "add", "-A", cwd=project)
    sh("git", "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "toy", cwd=project)
    sh("dvc", "remote", "add", "-d", "--local", "r", str(remote), cwd=project)
    sh("dvc", "repro", "prep", "split", "server@x", "server@y", "report", cwd=project)
    sh("dvc", "push", "--run-cache", cwd=project)
    runs = sorted(p.parent.name for p in (remote / "runs").rglob("*") if p.is_file())
    assert len(runs) == 3  # prep and both servers; not split or report (their outputs are plain cache: false)
    for stage in ("prep", "split", "server@x", "server@y", "report"):
        out = sh("python", "-m", "osfl.farm.runcache", stage, "--remote", "r", cwd=project).stdout
        assert out.startswith(f"[runcache] {stage}: pushed "), out
    clone = tmp_path_factory.mktemp("clone") / "c"
    sh("git", "clone", "-q", str(project), str(clone), cwd=clone.parent)
    sh("dvc", "remote", "add", "-d", "--local", "r", str(remote), cwd=clone)
    text = sh("dvc", "repro", "--pull", "prep", "split", "server@x", "server@y", "report", cwd=clone).stdout
    assert "Running stage" not in text and text.count("is cached - skipping run") == 5, text
    for f in ("s.json", "r.json", "mx.txt"):
        assert (clone / f).read_bytes() == (project / f).read_bytes(), f
    bad = sh("python", "-m", "osfl.farm.runcache", "rounds", "--remote", "r", cwd=project, check=False)
    assert bad.returncode != 0 and "persistent output" in bad.stderr
    # the persistent one is carried: its lock entry travels, its outputs land from the remote, DVC commits it
    sh("dvc", "repro", "rounds", cwd=project)
    entry = clone.parent / "entry.json"
    sh("python", "-m", "osfl.farm.carry", "send", "rounds", "--remote", "r", "--entry", str(entry), cwd=project)
    (clone / "ck").mkdir()
    (clone / "ck" / "t").write_text("an earlier run's")  # what a persistent output held here is replaced
    sh("python", "-m", "osfl.farm.carry", "land", "rounds", "--remote", "r", "--entry", str(entry), cwd=clone)
    assert (clone / "ck" / "t").read_bytes() == (project / "ck" / "t").read_bytes()
    assert "Running stage" not in sh("dvc", "repro", "rounds", cwd=clone).stdout
    (clone / "s.json").write_text("{\"other\": 1}")  # other inputs here: refused, naming the dependency
    bad = sh("python", "-m", "osfl.farm.carry", "land", "rounds", "--remote", "r", "--entry", str(entry), cwd=clone,
             check=False)
    assert bad.returncode != 0 and "rounds: dependency s.json differs from the worker's" in bad.stderr
