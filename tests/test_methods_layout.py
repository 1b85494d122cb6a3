"""Each server@<method> stage depends on src/osfl/methods/<method>.py, base.py and the shared library folders it
imports (dvc.yaml), so adding or editing one method never re-runs another. These checks keep that list true."""
import ast
import inspect
from pathlib import Path

import pytest
import yaml

from osfl.methods import METHODS

METHODS_DIR = Path("src/osfl/methods")


@pytest.mark.parametrize("name", METHODS.names())
def test_method_lives_in_its_own_file(name):
    assert Path(inspect.getfile(METHODS.get(name))).resolve() == (METHODS_DIR / f"{name}.py").resolve()


@pytest.mark.parametrize("path", sorted(METHODS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_methods_import_no_other_method(path):
    tree = ast.parse(path.read_text())
    allowed = {"base", None}  # `from .base import ...` or `from . import register`
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            assert node.module in allowed, f"{path.name} imports .{node.module}: put shared code in base.py"


def test_server_stage_deps_are_per_method():
    stage = yaml.safe_load(Path("dvc.yaml").read_text())["stages"]["server"]
    deps = stage["deps"]
    assert "src/osfl/methods/${item.method}.py" in deps and "src/osfl/methods/base.py" in deps
    assert "src/osfl/methods" not in deps


def test_every_method_has_its_params_entry():
    params = yaml.safe_load(Path("params.yaml").read_text())
    for name in METHODS.names():
        assert name in params["server"], f"params.yaml needs server.{name} for `dvc exp run -S methods=[..., {name}]`"
        METHODS.get(name)(**params["server"][name])  # the entry holds valid hyper-parameters


def _stages(dvc_yaml: str) -> dict:
    return yaml.safe_load(Path(dvc_yaml).read_text())["stages"]


@pytest.mark.parametrize("dvc_yaml", ["dvc.yaml", "papers/fedhydra/dvc.yaml"])
def test_stages_running_the_server_round_depend_on_it(dvc_yaml):
    """stages/server.py hands the method, its context and its seeded run to protocols/one_shot.py: every stage
    that runs server code must list that file (or the whole protocols folder) among its deps."""
    for name, stage in _stages(dvc_yaml).items():
        deps = [d.removeprefix("../../") for d in stage.get("deps") or []]  # papers/<paper>/ is a DVC project
        if "src/osfl/stages/server.py" in deps:
            assert {"src/osfl/protocols/one_shot.py", "src/osfl/protocols"} & set(deps), \
                f"{dvc_yaml}: stage {name} runs server code; add src/osfl/protocols/one_shot.py to its deps"


# The library layers a method file may import (README "Adding a method"): the shared loops and models below the
# method layer, never the layers above it (config, papers, stages, protocols, reporting, campaign, provenance), so that
# a method is one file whose stage depends on the library and on nothing that lists or runs the papers.
METHOD_LAYERS = {"augment", "distill", "errors", "evaluation", "generative", "models", "runtime"}
BASE_LAYERS = METHOD_LAYERS | {"clients", "cost", "profiles", "registry"}  # base.py and the registry's __init__


def _library_imports(path: Path) -> set[str]:
    """Top-level osfl packages a file imports, inside functions included (``from ..x.y import`` -> x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("osfl."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("osfl.")}
    return found


@pytest.mark.parametrize("path", sorted(METHODS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_methods_import_only_the_library_layers(path):
    allowed = BASE_LAYERS if path.name in ("base.py", "__init__.py") else METHOD_LAYERS
    extra = _library_imports(path) - allowed
    assert not extra, f"{path.name} imports osfl.{sorted(extra)}: a method may import only {sorted(allowed)} " \
                      "(README, 'Adding a method')"


def test_the_import_rule_catches_an_upper_layer(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from ..config import load_run\n    from ..distill import Synthesis\n")
    assert _library_imports(bad) - METHOD_LAYERS == {"config"}
