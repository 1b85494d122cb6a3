"""Every stage's code deps are exactly the modules its command runs: generated from the imports, never hand-copied.

``python -m osfl.provenance.deps --write`` writes them (osfl/provenance/deps.py says how: module files, a folder
where all its modules run, one list per matrix template); these tests fail when any of the five dvc.yaml files and
the import closure differ in either direction, and show on a copy of the repository that a deliberately added or
removed import is caught and that ``--write`` mends it without touching the other deps.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from osfl.provenance import deps as provenance
from osfl.provenance.imports import Sources

ROOT = Path(__file__).resolve().parents[1]
SOURCES = Sources(ROOT / "src")


@pytest.mark.slow  # the import closure of every stage of every pipeline (about 50 s of worker time)
@pytest.mark.parametrize("pipeline", provenance.pipelines(ROOT))
def test_every_stage_lists_exactly_the_modules_it_imports(pipeline):
    problems = provenance.check(ROOT, [pipeline])
    assert not problems, "run `make deps` (python -m osfl.provenance.deps --write):\n" + "\n".join(problems)


def _root_copy(tmp_path: Path) -> Path:
    """The main pipeline with its params and the library sources, as a git + DVC repository."""
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("dvc.yaml", "params.yaml", ".dvcignore"):
        shutil.copy(ROOT / name, work / name)
    (work / ".dvc").mkdir()
    (work / ".dvc" / "config").write_text("[core]\n    analytics = false\n")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    return work


def _deps(work: Path, stage: str) -> list[str]:
    return yaml.safe_load((work / "dvc.yaml").read_text())["stages"][stage]["deps"]


def test_an_added_or_removed_import_fails_the_check_and_write_mends_it(tmp_path):
    work = _root_copy(tmp_path)
    assert provenance.check(work, ["dvc.yaml"]) == []
    before = _deps(work, "prepare")
    assert "src/osfl/live.py" not in before
    # an extra import: prepare now runs osfl.live, which its deps do not name
    prepare = work / "src/osfl/stages/prepare.py"
    prepare.write_text(prepare.read_text().replace("from ..data import", "from .. import live  # noqa: F401\n"
                                                   "from ..data import", 1))
    [line] = provenance.check(work, ["dvc.yaml"])
    assert "stage prepare: imported but not in deps: src/osfl/live.py" in line
    assert provenance.write("dvc.yaml", work) == ["prepare"]
    assert provenance.check(work, ["dvc.yaml"]) == []
    after = _deps(work, "prepare")
    assert sorted(after) == sorted(before + ["src/osfl/live.py"])  # data deps kept, one code dep added
    # a removed import: the report stage no longer imports osfl.live, which its deps still name
    report = work / "src/osfl/stages/report.py"
    report.write_text(report.read_text().replace("from ..live import read_curve\n", "read_curve = None\n", 1))
    [line] = provenance.check(work, ["dvc.yaml"])
    assert "stage report: imported but not in deps: -; in deps but not imported: src/osfl/live.py" in line
    provenance.write("dvc.yaml", work)
    assert provenance.check(work, ["dvc.yaml"]) == []
    assert "src/osfl/live.py" not in _deps(work, "report")


def test_a_folder_is_listed_only_when_every_module_in_it_runs(tmp_path):
    src = ROOT / "src" / "osfl"
    data = {p for p in (src / "data").rglob("*.py")}
    assert sorted(provenance.collapse(data | {src / "live.py"}, src)) == [src / "data", src / "live.py"]
    some = set(sorted(data)[:-1])
    assert provenance.collapse(some, src) == sorted(some)


def test_the_command_exits_non_zero_on_a_mismatch(tmp_path):
    work = _root_copy(tmp_path)
    text = (work / "dvc.yaml").read_text().replace("      - src/osfl/stages/prepare.py\n", "", 1)
    (work / "dvc.yaml").write_text(text)
    assert provenance.main(["--root", str(work), "dvc.yaml"]) == 1
    assert provenance.main(["--root", str(work), "--write", "dvc.yaml"]) == 0
    assert "src/osfl/stages/prepare.py" in _deps(work, "prepare")


def test_every_registered_model_is_found_in_its_file():
    from osfl.models import MODELS

    found = sorted(n for names in SOURCES.registered_models().values() for n in names)
    assert found == sorted(MODELS.names())


def test_model_modules_follow_the_pipeline_params():
    fedhydra = SOURCES.model_modules(provenance.tokens(yaml.safe_load((ROOT / "papers/fedhydra/params.yaml").read_text())))
    assert {"osfl.models.cnn", "osfl.models.googlenet", "osfl.models.lenet"} <= set(fedhydra)
    main = provenance.tokens(yaml.safe_load((ROOT / "params.yaml").read_text()))
    assert SOURCES.model_modules(main) == ["osfl.models.cnn"]  # model: auto -> the default_for file only
    assert "osfl.models.lenet" in SOURCES.model_modules(main | {"lenet5"})


def test_import_closure_sees_function_level_and_registry_imports():
    server = SOURCES.closure(["osfl.stages.server", "osfl.methods.dense"])
    assert "osfl.data.stand_in" in server  # imported inside a function of osfl.data
    assert "osfl.data.cifar" in server  # registered through import_submodules
    assert "osfl.methods.fedhydra" not in server  # another method's file: exempt by design
    assert "osfl.distill.synthesis" in server and "osfl" in server
    assert SOURCES.stage_roots("python -m osfl.stages.server --method dense", ROOT) == ["osfl.stages.server",
                                                                                     "osfl.methods.dense"]
