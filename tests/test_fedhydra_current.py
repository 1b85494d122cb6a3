"""FedHydra's render stage renders only the results the current params produce.

``expected_results`` (which results each run folder of ``papers/fedhydra/results/`` gets from ``papers/fedhydra/dvc.yaml``
for given params) is checked against DVC's own resolution of that dvc.yaml, for the committed params and for grids
that use every experiment family, so that it cannot drift from the pipeline. Then a made-up results tree with a
split and a λ tag that the params no longer list: render must leave them out of the tables and ``runs.md`` and list
them in README.md's "Not rendered" section and in one stderr line.
"""
from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from osfl.papers import fedhydra as fh
from osfl.reporting.runs import run_folders
from osfl.reporting.grid import Grid

PIPE = Path("papers") / "fedhydra"
SECTION = "## Not rendered: results on disk that the current params do not produce"


def committed_params(repo_root: Path) -> dict:
    return yaml.safe_load((repo_root / PIPE / "params.yaml").read_text())


def every_family(p: dict) -> dict:
    """Two datasets and every experiment family on one of them, on every split (most families' dataset lists are empty
    when committed)."""
    p["datasets"] = ["fmnist", "mnist"]
    p["hetero"]["datasets"] = ["fmnist"]
    p["ksweep"]["datasets"] = ["fmnist"]
    p["multiround"].update(datasets=["fmnist"], splits=list(p["splits"]))  # committed: one split
    p["localcurve"]["datasets"] = ["fmnist"]
    p["timing"]["datasets"] = ["fmnist"]
    return p


def corners(p: dict) -> dict:
    """Folders that only some families write: no dir0.5 in `splits` (Table 6 and timing still write <ds>-dir0.5),
    the local curve and the rounds on splits not in `splits`, a family with an empty method list, two paper columns,
    a variant on a split not in `splits` and none of the other, extra seeds on a split not in `splits`."""
    p["splits"] = ["2cc"]
    p["methods"] = ["fedavg", "fedhydra"]
    p["lambdas"] = p["lambdas"][:1]
    p["hetero"].update(datasets=["fmnist"], splits=["dir0.1"], methods=[])
    p["ksweep"].update(datasets=["fmnist"], clients=[10], methods=["dense"])
    p["multiround"].update(datasets=["fmnist"], splits=["dir0.01"], methods=["fedavg"])
    p["localcurve"].update(datasets=["fmnist"], split="dir0.3")
    p["timing"].update(datasets=["fmnist"], runs=[2])
    p["paper_columns"] = {"datasets": ["fmnist", "mnist"], "splits": ["dir0.5", "2cc"], "methods": ["fedavg", "dense"]}
    p["variants"] = {"fedhydra_literal": ["dir0.01"], "dense_code": []}
    p["spread"] = {"splits": ["dir0.1"], "seeds": [3]}
    return p


def dvc_outputs(repo_root: Path, params: dict, tmp: Path) -> list[str]:
    """Every output path (outs, metrics, plots) of every stage DVC resolves from papers/fedhydra/dvc.yaml with
    ``params``, relative to papers/fedhydra/ (the stages' wdir, a DVC project of its own)."""
    from dvc.repo import Repo

    (tmp / PIPE).mkdir(parents=True)
    shutil.copy(repo_root / PIPE / "dvc.yaml", tmp / PIPE / "dvc.yaml")
    (tmp / PIPE / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    Repo.init(str(tmp / PIPE), no_scm=True)  # its own project, as papers/fedhydra/ is
    with Repo(str(tmp / PIPE)) as repo:
        stages = list(repo.index.stages)
        assert stages, "DVC resolved no stage"
        return [out.def_path for stage in stages for out in stage.outs]


def materialise(paths: list[str], results: Path) -> None:
    """Create the result outputs under ``results`` as the stages would (a folder output: partition/summary.json)."""
    for rel in paths:
        p = results / rel
        if p.suffix in (".json", ".csv"):
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("{}\n")
        elif p.name == "plots":  # a server's live curves (dvclive)
            (p / "metrics").mkdir(parents=True, exist_ok=True)
            (p / "metrics" / "test_acc.tsv").write_text("step\ttest_acc\n0\t50.0\n")
        elif p.name == "clients" and p.parent.name == "live":  # local training's losses (dvclive), not rendered
            (p / "plots" / "metrics" / "train" / "client0").mkdir(parents=True, exist_ok=True)
            (p / "plots" / "metrics" / "train" / "client0" / "loss.tsv").write_text("step\tloss\n1\t2.0\n")
        else:
            assert p.name == "partition", f"a folder output render does not know: {rel}"
            p.mkdir(parents=True, exist_ok=True)
            (p / "summary.json").write_text("{}\n")


@pytest.mark.parametrize("variant", ["committed", "every_family", "corners"])
def test_expected_results_match_dvc_yaml(repo_root, tmp_path, variant):
    """expected_results(Grid.of(params)) is exactly what DVC's resolution of dvc.yaml writes under results/fedhydra/ (each
    output read back with render's own file reader), and expected_paper_runs the paper_train/paper_server stages' folders."""
    params = committed_params(repo_root)
    params = {"committed": lambda p: p, "every_family": every_family, "corners": corners}[variant](params)
    outs = dvc_outputs(repo_root, copy.deepcopy(params), tmp_path / "repo")
    prefix, paper_prefix = "results/", "results/paper/"
    materialise([o[len(prefix):] for o in outs if o.startswith(prefix) and not o.startswith(paper_prefix)],
                tmp_path / "results")
    run_dirs = run_folders(tmp_path / "results")
    on_disk = {d.name: {key for key, _, _ in fh._result_files(d)} for d in run_dirs}
    # every result output DVC declares is read by render (the twins of a file it reads aside) ...
    read = {f.relative_to(tmp_path) for d in run_dirs for _, _, f in fh._result_files(d)}
    for o in outs:
        twin = (o.endswith("/local_curve.json") or ("/rounds/" in o and o.endswith(".csv"))
                or ("/live/" in o and o.endswith("/metrics.json"))  # the live summary: the curve is read
                or o.endswith("/live/clients")  # the clients' training losses: no artifact plots them
                or "/runtime/" in o)  # seconds and host: evaluate@ copies the server's into the run record render reads
        if o.startswith(prefix) and not o.startswith(paper_prefix) and not twin:
            read_as = (Path(o), Path(o) / "summary.json", Path(o) / "metrics" / "test_acc.tsv")
            assert any(r in read for r in read_as), f"an output render does not read: {o}"
    # ... and the keys render finds from them are exactly the expected ones
    expected = fh.expected_results(Grid.of(params))
    assert on_disk == expected
    paper = {o[len(paper_prefix):].split("/")[0] for o in outs if o.startswith(paper_prefix)}
    assert paper == fh.expected_paper_runs(Grid.of(params))
    if variant == "committed":
        assert expected["fmnist-dir0.5"] >= {"fedavg", "fedhydra", "fedhydra-ae", "fedhydra-l0.5-1", "clients",
                                             "partition"}
        spread = {f"fmnist-{s}-s{k}" for s in params["spread"]["splits"] for k in params["spread"]["seeds"]}
        assert spread and set(expected) == {f"fmnist-{s}" for s in params["splits"]} | spread
        for run in spread:  # an extra seed is a whole run of every Table 1 method
            assert expected[run] == {"partition", "clients", *params["methods"]}
        for s in params["variants"]["fedhydra_literal"]:
            assert "fedhydra-literal" in expected[f"fmnist-{s}"]
        for s in params["variants"]["dense_code"]:
            assert "dense-bn0" in expected[f"fmnist-{s}"]
        assert paper == {"fmnist-dir0.5"}
    if variant == "every_family":
        assert expected["fmnist-dir0.5-hetero"] == {"clients", *params["hetero"]["methods"]}
        assert "timing/dense-t1" in expected["fmnist-dir0.5"] and "rounds/fedhydra" in expected["fmnist-2cc"]
        assert "local_curve" in expected["fmnist-dir0.1"] and "mnist-dir0.5-k10" not in expected
        assert "fedhydra-literal" in expected["mnist-2cc"] and "mnist-dir0.5-s2" in expected
    if variant == "corners":
        assert expected["fmnist-dir0.5"] == {"fedhydra-l0.5-1", "timing/dense-t2", "timing/fedhydra-t2"}
        assert expected["fmnist-dir0.3"] == {"local_curve"} and expected["fmnist-dir0.1-hetero"] == {"clients"}
        assert expected["fmnist-dir0.01"] == {"rounds/fedavg", "fedhydra-literal"}
        assert expected["fmnist-dir0.1-s3"] == {"partition", "clients", "fedavg", "fedhydra"}
        assert paper == {"fmnist-dir0.5", "fmnist-2cc", "mnist-dir0.5", "mnist-2cc"}  # datasets x splits


def test_committed_results_are_all_current(repo_root):
    """Every result committed under results/fedhydra/ and results/fedhydra-paper/ is one the committed params
    produce (so the committed README has no "Not rendered" section)."""
    params = committed_params(repo_root)
    exp, paper = fh.expected_results(Grid.of(params)), fh.expected_paper_runs(Grid.of(params))
    assert fh.not_current(repo_root / PIPE / "results", lambda r, k: r in exp and (k is None or k in exp[r])) == []
    assert fh.not_current(repo_root / PIPE / "results" / "paper", lambda r, k: r in paper) == []


# --------------------------------------------------------------------------------------------------------------
# render on a made-up results tree with stale results


def write_run(root: Path, run: str, accs: dict[str, float], reading: str | None = "authors") -> None:
    """A run folder as the pipeline writes it: ``runs/<key>.json`` and a dvclive curve from epoch 0 for each result,
    ``partition/summary.json`` and ``clients.json``. ``reading`` is FedHydra's recorded reading of Alg. 1 (None: a
    record without one)."""
    d = root / run
    (d / "runs").mkdir(parents=True, exist_ok=True)
    for key, acc in accs.items():
        method, _, tag = key.partition("-")
        choices = {"reading": reading} if method == "fedhydra" and reading else {}
        if key == "fedhydra-literal":
            choices = {"reading": "literal"}
        if method == "dense":
            choices = {"bn": 0.0 if tag == "bn0" else 1.0}
        rec = {"acc_best": acc + 1.0, "acc_final": acc, "best_epoch": 2, "choices": choices, "epochs": 2,
               "method": method, "server_seconds": 1.5, "stand_in_data": False, "tag": tag, "test_samples": 10000,
               "extras": {}}
        (d / "runs" / f"{key}.json").write_text(json.dumps(rec, indent=2) + "\n")
        live = d / "live" / key / "plots" / "metrics"
        live.mkdir(parents=True, exist_ok=True)
        rows = "0\t%.4f\n" % acc if method in fh.ONE_SHOT else "0\t10.0000\n1\t%.4f\n2\t%.4f\n" % (acc + 1.0, acc)
        (live / "test_acc.tsv").write_text("step\ttest_acc\n" + rows)
    (d / "partition").mkdir(exist_ok=True)
    counts = [[100 if c // 2 == k else 0 for c in range(10)] for k in range(5)]
    (d / "partition" / "summary.json").write_text(json.dumps({"class_counts": counts, "num_clients": 5}) + "\n")
    (d / "clients.json").write_text(json.dumps({"local_acc_max": 50.0, "local_acc_mean": 40.0,
                                                "local_acc_min": 30.0}) + "\n")


def test_render_leaves_out_and_lists_stale_results(repo_root, tmp_path, capsys):
    params = committed_params(repo_root)
    params.update(splits=["dir0.5", "2cc"], methods=["fedavg", "dense", "fedhydra"],
                  lambdas=[lam for lam in params["lambdas"] if lam["tag"] == "l0.5-1"])
    params["paper_columns"] = {"datasets": [], "splits": [], "methods": []}
    results = tmp_path / "fedhydra"
    # current: the Dir(0.5) run (fmnist-2cc is expected but missing: shown as not run)
    write_run(results, "fmnist-dir0.5", {"fedavg": 61.0, "dense": 55.0, "fedhydra": 57.0, "fedhydra-ae": 52.0,
                                          "fedhydra-l0.5-1": 54.0,
                                          "fedhydra-l0-0": 99.5})  # stale: a λ row no longer in `lambdas`
    write_run(results, "fmnist-dir0.3", {"fedavg": 77.7, "fedhydra": 88.8})  # stale: a split no longer in `splits`
    out = tmp_path / "out"
    fh.render(Grid.of(params), results, tmp_path / "no-prepared-data", out, paper_results_root=tmp_path / "no-paper-results",
              published_root=str(repo_root / PIPE / "published"))

    readme = (out / "README.md").read_text()
    assert SECTION in readme
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    stale = ["fedhydra/fmnist-dir0.3/fedavg", "fedhydra/fmnist-dir0.3/fedhydra", "fedhydra/fmnist-dir0.3/clients",
             "fedhydra/fmnist-dir0.3/partition", "fedhydra/fmnist-dir0.5/fedhydra-l0-0"]
    for item in stale:
        assert f"- `{item}`" in section
    assert "fmnist-dir0.5/fedavg`" not in section and "fmnist-dir0.5/fedhydra-l0.5-1" not in section
    err = capsys.readouterr().err.strip().splitlines()
    assert len([ln for ln in err if "not rendered" in ln]) == 1
    assert all(item in err[-1] for item in stale)

    runs_md = (out / "runs.md").read_text()
    assert "| fmnist-dir0.5 | fedhydra-l0.5-1 | 54.00 |" in runs_md and "| fmnist-dir0.5 | fedavg | 61.00 |" in runs_md
    assert "fmnist-dir0.3" not in runs_md and "fedhydra-l0-0" not in runs_md and "99.50" not in runs_md
    table01 = (out / "table01.md").read_text()
    assert "61.00 /" in table01  # FashionMNIST α = 0.5
    assert "77.70" not in table01 and "88.80" not in table01  # the stale α = 0.3 column is not rendered
    claims = {c["artifact"] + c["claim"]: c for c in json.loads((out / "claims.json").read_text())}
    t1 = next(c for k, c in claims.items() if k.startswith("table01FedHydra has the best"))
    assert t1["evidence"].startswith("1 column(s) run")
    assert "99.50" not in (out / "table06.md").read_text() and "54.00 /" in (out / "table06.md").read_text()


def test_no_section_when_everything_is_current(repo_root, tmp_path, capsys):
    params = committed_params(repo_root)
    params.update(splits=["dir0.5"], methods=["fedavg"], lambdas=[])
    results = tmp_path / "fedhydra"
    write_run(results, "fmnist-dir0.5", {"fedavg": 61.0})
    fh.render(Grid.of(params), results, tmp_path / "no-prepared-data", tmp_path / "out",
              published_root=str(repo_root / PIPE / "published"))
    assert "Not rendered" not in (tmp_path / "out" / "README.md").read_text()
    assert "not rendered" not in capsys.readouterr().err
