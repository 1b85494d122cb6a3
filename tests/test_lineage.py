"""osfl.provenance.lineage: which committed runs of a dvc.lock were not computed from one another."""
import subprocess
import sys

import yaml

from osfl.provenance import lineage
from osfl.reporting import book


def _stage(deps=(), outs=(), **params):
    return {"cmd": "x", "deps": [{"path": p, "md5": h} for p, h in deps],
            "params": {"params.yaml": params} if params else {}, "outs": [{"path": p, "md5": h} for p, h in outs]}


def _lock(**stages):
    return {"schema": "2.0", "stages": stages}


AGREEING = _lock(**{"train@a": _stage(outs=[("models/a/clients", "c1")], profile="cpu", runtime={"threads": 1}),
                    "server@a-0": _stage(deps=[("models/a/clients", "c1")], profile="cpu", runtime={"threads": 2})})


def test_a_lock_whose_runs_read_each_others_outputs_agrees():
    # the thread count says how a stage ran, not what it computed: no mismatch
    assert lineage.check_lock(AGREEING["stages"]) == []


def test_a_server_on_clients_that_re_ran_after_it_is_named():
    stages = _lock(**{"train@a": _stage(outs=[("models/a/clients", "new")]),
                      "server@a-0": _stage(deps=[("models/a/clients", "old")]),
                      "server@a-1": _stage(deps=[("models/a/clients", "new")])})["stages"]
    (m,) = lineage.check_lock(stages)
    assert (m.kind, m.what, m.stages, m.source) == ("upstream", "models/a/clients", ("server@a-0",), "train@a")
    assert m.text().startswith("1 stage(s) (server@a-0) ran on another models/a/clients than the one train@a committed")


def test_params_that_differ_between_stages_name_the_groups_and_only_the_entries_that_differ():
    local = {"epochs": 10, "lr": 0.01}
    stages = {f"train@{i}": _stage(profile=p, local={**local, "momentum": m})
              for i, (p, m) in enumerate([("cpu", 0.9), ("cpu", 0.9), ("quick", 0.0)])}
    found = {m.what: m for m in lineage.check_lock(stages)}
    assert set(found) == {"profile", "local"}
    assert found["profile"].groups == (('"cpu"', ("train@0", "train@1")), ('"quick"', ("train@2",)))
    assert found["local"].groups == (('{"momentum": 0.9}', ("train@0", "train@1")), ('{"momentum": 0.0}', ("train@2",)))


def test_a_stage_that_ran_before_a_key_was_its_input_is_named_but_per_item_keys_are_not():
    stages = {"train@0": _stage(inputs={"mean": 0.5}, **{"server.a": 1}),
              "train@1": _stage(inputs={"mean": 0.5}, **{"server.b": 1}),
              "train@2": _stage(profile="cpu")}
    found = lineage.check_lock(stages)
    kinds = {(m.kind, m.what): m for m in found}
    assert set(kinds) == {("unlisted", "inputs"), ("unlisted", "profile")}  # server.a / server.b: per item
    assert kinds[("unlisted", "inputs")].stages == ("train@2",)
    assert "ran before params 'inputs' was one of their inputs" in kinds[("unlisted", "inputs")].text()


def test_the_command_exits_1_on_a_mismatch_and_names_a_folder_without_dvc_yaml(tmp_path):
    for name, lock in (("good", AGREEING), ("bad", _lock(**{"t@0": _stage(profile="a"), "t@1": _stage(profile="b")}))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "dvc.yaml").write_text("stages: {}\n")
        (tmp_path / name / "dvc.lock").write_text(yaml.safe_dump(lock))
    run = [sys.executable, "-m", "osfl.provenance.lineage"]
    good = subprocess.run(run + [str(tmp_path / "good")], capture_output=True, text=True)
    assert good.returncode == 0 and lineage.AGREE in good.stdout
    bad = subprocess.run(run + [str(tmp_path / "good"), str(tmp_path / "bad")], capture_output=True, text=True)
    assert bad.returncode == 1 and "params 'profile' differ" in bad.stdout
    nope = subprocess.run(run + [str(tmp_path)], capture_output=True, text=True)
    assert nope.returncode == 1 and nope.stderr.strip().endswith("no dvc.yaml there; allowed: a DVC project folder "
                                                                 "such as papers/hfldd")


def test_the_report_lists_each_pipelines_mismatches(tmp_path):
    (tmp_path / "hfldd" / "published").mkdir(parents=True)
    (tmp_path / "hfldd" / "published" / "artifacts.yaml").write_text("paper: {short: HFLDD}\n")  # its display name
    (tmp_path / "hfldd" / "dvc.lock").write_text(yaml.safe_dump(_lock(**{"t@0": _stage(profile="a"),
                                                                       "t@1": _stage(profile="b")})))
    (tmp_path / "benchmark").mkdir()
    text = "\n".join(book.lineage_section([tmp_path / "hfldd", tmp_path / "benchmark"]))
    assert r"\item \textbf{HFLDD}: 1 mismatch(es)" in text and "params 'profile' differ" in text
    assert r"\textbf{cross-paper benchmark}: " + lineage.AGREE in text
