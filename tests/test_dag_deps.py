"""Every stage's code dependencies are complete: derived from its imports, never trusted to a hand-copied list.

For each stage of every pipeline (dvc.yaml and papers/*/dvc.yaml, as DVC resolves them), the stage script's
``osfl`` modules are found by reading the ``import`` statements of the script and, transitively, of every module
it imports (function-level imports included, and the ``__init__`` of every package on the way). Each module's
file must lie under one of the stage's ``deps`` (the file itself or a folder holding it); otherwise a change to it
could alter a result while DVC calls the stage up to date.

One exception is by design: ``osfl.methods`` imports every method file to fill its registry, but a
``server@<method>`` stage runs only its own method, so it depends on ``src/osfl/methods/<method>.py`` (found from
``--method`` in its command) and the files that one imports; adding or editing another method re-runs nothing else
(tests/test_methods_layout.py checks that method files import only shared code).

The model registry (``osfl.models``) is exempt in the same way: its ``__init__`` imports every architecture file,
but a stage builds only the architectures its pipeline names. A stage that imports ``osfl.models`` must depend on
the file of every architecture named anywhere in its pipeline's params file or in its command (a token of a value,
so ``client_models: googlenet,resnet18`` names two), and on every file holding a default for ``model: auto``
(``default_for``); adding an architecture for another paper re-runs nothing.
"""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PIPELINES = ["dvc.yaml"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "papers").glob("*/dvc.yaml"))
REGISTRY_EXEMPT = {"osfl.methods", "osfl.models"}  # registries whose submodules a stage does not run (docstring)
METHOD_RUNNERS = {"osfl.stages.server", "osfl.stages.rounds"}  # stage modules that run the --method they are given


def module_file(name: str) -> Path | None:
    """The file of module ``name`` under src/ (a package's ``__init__.py``), or None when it is not ours."""
    base = SRC.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _resolve(current: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = current.split(".")
    base = parts if is_pkg else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _without_type_checking(tree: ast.AST) -> ast.AST:
    """``tree`` without the bodies of ``if TYPE_CHECKING:`` blocks (imports for annotations only; never run)."""
    class Strip(ast.NodeTransformer):
        def visit_If(self, node: ast.If):
            if getattr(node.test, "id", None) == "TYPE_CHECKING":
                return node.orelse or None
            return self.generic_visit(node)

    return Strip().visit(tree)


@lru_cache(maxsize=None)
def direct_imports(name: str) -> frozenset[str]:
    """The ``osfl`` modules module ``name`` imports (any scope), plus every submodule that
    ``import_submodules(__name__, __path__)`` pulls in, unless the package is exempt."""
    path = module_file(name)
    tree = ast.parse(path.read_text(), filename=str(path))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(_without_type_checking(tree)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "osfl")
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(name, is_pkg, node)
            if mod.split(".")[0] != "osfl":
                continue
            found.add(mod)
            for a in node.names:  # `from . import register` or `from .methods import fedavg`: maybe submodules
                if module_file(f"{mod}.{a.name}") is not None:
                    found.add(f"{mod}.{a.name}")
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "import_submodules"
              and is_pkg and name not in REGISTRY_EXEMPT):
            found.update(f"{name}.{p.stem}" for p in path.parent.glob("*.py")
                         if not p.stem.startswith("_"))
    return frozenset(m for m in found if module_file(m) is not None and m != name)


def closure(roots: list[str]) -> set[str]:
    """``roots`` and everything they import, with the ``__init__`` of every package on the way."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        m = todo.pop()
        if m in seen or module_file(m) is None:
            continue
        seen.add(m)
        parts = m.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run their __init__
        todo.extend(direct_imports(m))
    return seen


def stage_roots(cmd: str, wdir: Path) -> list[str]:
    """The stage modules a command runs (``python -m osfl.stages.X``, also inside a bash script it calls), and
    ``osfl.methods.<m>`` for each method it names (``--method m``, or a script's method arguments)."""
    text = cmd
    script = re.search(r"bash\s+(\S+\.sh)", cmd)
    if script:
        text += "\n" + (wdir / script.group(1)).read_text()
    mods = [f"osfl.stages.{m}" for m in re.findall(r"python -m osfl\.stages\.(\w+)", text)]
    if "osfl.stages.render" in mods:  # renders the one paper it is given (osfl.stages.render.PAPERS)
        mods += [f"osfl.papers.{p}" for p in re.findall(r"--paper\s+(\w+)", text)]
    if not set(mods) & METHOD_RUNNERS:  # evaluate@<method> loads a saved model; it does not run the method
        return mods
    methods = re.findall(r"--method\s+(\w+)", cmd)
    if script:
        methods += [w.split("-")[0].split(":")[0] for w in cmd.split()[cmd.split().index(script.group(1)) + 1:]]
    mods += [f"osfl.methods.{m}" for m in methods if module_file(f"osfl.methods.{m}")]
    return mods


def _tokens(value) -> set[str]:
    if isinstance(value, dict):
        return set().union(*map(_tokens, value.values()), *map(_tokens, value.keys())) if value else set()
    if isinstance(value, list):
        return set().union(*map(_tokens, value)) if value else set()
    return set(re.split(r"[\s,:=]+", str(value)))


@lru_cache(maxsize=None)
def _pipeline_tokens(pipeline: str) -> frozenset[str]:
    import yaml

    params = (ROOT / pipeline).parent / "params.yaml"
    return frozenset(_tokens(yaml.safe_load(params.read_text())) if params.is_file() else ())


def model_modules(pipeline: str, cmd: str) -> list[str]:
    """The architecture modules a stage of ``pipeline`` can build: those registering a name that its params file or
    its command names, and those holding a ``model: auto`` default."""
    from osfl.models import MODELS

    names = _pipeline_tokens(pipeline) | _tokens(cmd)
    return sorted({module for module, registered in _registered_models().items() for n in registered
                   if n in names or MODELS.get(n).default_for})


@lru_cache(maxsize=None)
def _registered_models() -> dict[str, list[str]]:
    """``osfl.models.<file>`` -> the names its ``MODELS.register("name", ...)`` calls register."""
    found = {}
    for path in sorted((SRC / "osfl" / "models").glob("*.py")):
        calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)
                 and getattr(n.func, "attr", None) == "register" and getattr(n.func.value, "id", None) == "MODELS"]
        found[f"osfl.models.{path.stem}"] = [c.args[0].value for c in calls]
    return found


def resolved_stages(pipeline: str, root: Path = ROOT):
    """(stage name, cmd, wdir, deps as paths relative to ``root``) for every stage DVC resolves in ``root``'s copy
    of ``pipeline`` (a test's copy with other params resolves stages that the committed lists leave empty)."""
    from dvc.repo import Repo

    folder = (root / pipeline).parent
    project = folder if (folder / ".dvc").is_dir() else root  # papers/<paper>/ is a DVC project of its own
    with Repo(str(project)) as repo:
        for stage in repo.stage.collect(str(root / pipeline)):
            deps = [Path(d.fs_path).resolve().relative_to(root.resolve()) for d in stage.deps]
            yield stage.addressing, stage.cmd, Path(stage.wdir), deps


def missing_deps(pipeline: str, root: Path = ROOT) -> tuple[int, dict[str, list[str]]]:
    """(stages checked, library file -> the stages that import it without listing it in their deps)."""
    missing: dict[str, list[str]] = {}
    checked = 0
    for name, cmd, wdir, deps in resolved_stages(pipeline, root):
        roots = stage_roots(cmd, wdir)
        if not roots:
            continue
        checked += 1
        if "osfl.models" in closure(roots):
            roots = roots + model_modules(pipeline, cmd)
        for mod in sorted(closure(roots)):
            rel = module_file(mod).relative_to(ROOT)
            if not any(rel == d or d in rel.parents for d in deps):
                missing.setdefault(str(rel), []).append(name)
    return checked, missing


def assert_complete(pipeline: str, root: Path = ROOT) -> None:
    checked, missing = missing_deps(pipeline, root)
    assert checked, f"no stage of {pipeline} runs an osfl stage module"
    assert not missing, "imported but not in deps: " + "; ".join(
        f"{f} (stages {', '.join(s[:3])}{', ...' if len(s) > 3 else ''})" for f, s in sorted(missing.items()))


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_every_imported_module_is_a_dependency(pipeline):
    assert_complete(pipeline)


def test_every_registered_model_is_found_in_its_file():
    from osfl.models import MODELS

    found = sorted(n for names in _registered_models().values() for n in names)
    assert found == sorted(MODELS.names())


def test_model_modules_follow_the_pipeline_params():
    fedhydra = model_modules("papers/fedhydra/dvc.yaml", "")
    assert {"osfl.models.cnn", "osfl.models.googlenet", "osfl.models.lenet"} <= set(fedhydra)
    assert model_modules("dvc.yaml", "") == ["osfl.models.cnn"]  # model: auto -> the default_for file only
    assert "osfl.models.lenet" in model_modules("dvc.yaml", "python -m osfl.stages.train_clients --set model=lenet5")


def test_import_closure_sees_function_level_and_registry_imports():
    server = closure(["osfl.stages.server", "osfl.methods.dense"])
    assert "osfl.data.stand_in" in server  # imported inside a function of osfl.data
    assert "osfl.data.cifar" in server  # registered through import_submodules
    assert "osfl.methods.fedhydra" not in server  # another method's file: exempt by design
    assert "osfl.distill.synthesis" in server and "osfl" in server
    assert stage_roots("python -m osfl.stages.server --method dense", ROOT) == ["osfl.stages.server",
                                                                                  "osfl.methods.dense"]
