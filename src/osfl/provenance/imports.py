"""Which ``osfl`` modules a stage command runs: its stage module and, transitively, everything that imports.

The closure is read from the source (``ast``), never by importing it: every ``import`` statement at any scope
(function-level imports included, ``if TYPE_CHECKING:`` blocks excluded), the ``__init__`` of every package on the
way, and every submodule that a package pulls in with ``import_submodules(__name__, __path__)``.

Two registries are exempt from that last rule, by design:

- ``osfl.methods`` imports every method file to fill its registry, but a stage that runs a method
  (``osfl.stages.server`` or ``osfl.stages.rounds`` with ``--method m``) runs only ``osfl/methods/m.py`` and what
  that imports; adding or editing another method re-runs nothing else (tests/test_methods_layout.py checks that
  method files import only shared code).
- ``osfl.models`` imports every architecture file, but a stage builds only the architectures its pipeline names:
  those registering a name that the pipeline's params file or the command names (a token of a value, so
  ``client_models: googlenet,resnet18`` names two), and those holding a ``model: auto`` default (``default_for``).
"""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]  # src/
REGISTRY_EXEMPT = {"osfl.methods", "osfl.models"}  # registries whose submodules a stage does not run
METHOD_RUNNERS = {"osfl.stages.server", "osfl.stages.rounds"}  # stage modules that run the --method they get


class Sources:
    """The ``osfl`` sources under one ``src/`` folder (the repository's, or a test's copy of it)."""

    def __init__(self, src: Path = SRC):
        self.src = Path(src).resolve()
        self.direct_imports = lru_cache(maxsize=None)(self._direct_imports)
        self._registered: dict[str, list[str]] | None = None  # registered_models, parsed once per instance

    def module_file(self, name: str) -> Path | None:
        """The file of module ``name`` (a package's ``__init__.py``), or None when it is not ours."""
        base = self.src.joinpath(*name.split("."))
        if (base / "__init__.py").is_file():
            return base / "__init__.py"
        if base.with_suffix(".py").is_file():
            return base.with_suffix(".py")
        return None

    def _direct_imports(self, name: str) -> frozenset[str]:
        path = self.module_file(name)
        tree = _without_type_checking(ast.parse(path.read_text(), filename=str(path)))
        is_pkg = path.name == "__init__.py"
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.split(".")[0] == "osfl")
            elif isinstance(node, ast.ImportFrom):
                mod = _resolve(name, is_pkg, node)
                if mod.split(".")[0] != "osfl":
                    continue
                found.add(mod)
                for a in node.names:  # `from . import register` or `from .methods import fedavg`: maybe modules
                    if self.module_file(f"{mod}.{a.name}") is not None:
                        found.add(f"{mod}.{a.name}")
            elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "import_submodules"
                  and is_pkg and name not in REGISTRY_EXEMPT):
                found.update(f"{name}.{p.stem}" for p in path.parent.glob("*.py") if not p.stem.startswith("_"))
        return frozenset(m for m in found if self.module_file(m) is not None and m != name)

    def closure(self, roots: list[str]) -> set[str]:
        """``roots`` and everything they import, with the ``__init__`` of every package on the way."""
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            m = todo.pop()
            if m in seen or self.module_file(m) is None:
                continue
            seen.add(m)
            parts = m.split(".")
            todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run their __init__
            todo.extend(self.direct_imports(m))
        return seen

    def stage_roots(self, cmd: str, wdir: Path) -> list[str]:
        """The stage modules a command runs (``python -m osfl.stages.X``, also inside a bash script it calls), and
        ``osfl.methods.<m>`` for each method it names (``--method m``, or a script's method arguments). ``cmd`` may
        be a list of commands (a stage's ``cmd:`` list)."""
        cmd = "\n".join(cmd) if isinstance(cmd, list) else cmd
        text = cmd
        script = re.search(r"bash\s+(\S+\.sh)", cmd)
        if script:
            text += "\n" + (Path(wdir) / script.group(1)).read_text()
        mods = [f"osfl.stages.{m}" for m in re.findall(r"python -m osfl\.stages\.(\w+)", text)]
        if "osfl.stages.render" in mods:  # renders the one paper it is given (osfl.stages.render.PAPERS)
            mods += [f"osfl.papers.{p}" for p in re.findall(r"--paper\s+(\w+)", text)]
        if not set(mods) & METHOD_RUNNERS:  # evaluate@<method> loads a saved model; it does not run the method
            return mods
        methods = re.findall(r"--method\s+(\w+)", cmd)
        if script:
            methods += [w.split("-")[0].split(":")[0] for w in cmd.split()[cmd.split().index(script.group(1)) + 1:]]
        mods += [f"osfl.methods.{m}" for m in methods if self.module_file(f"osfl.methods.{m}")]
        return mods

    def registered_models(self) -> dict[str, list[str]]:
        """``osfl.models.<file>`` -> the names its ``MODELS.register("name", ...)`` calls register (the files are
        parsed once per instance, as ``direct_imports``: a paper's 200 stages asked again for each, 22 of a check's
        57 s)."""
        if self._registered is not None:
            return self._registered
        found = {}
        for path in sorted((self.src / "osfl" / "models").glob("*.py")):
            calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)
                     and getattr(n.func, "attr", None) == "register" and getattr(n.func.value, "id", None) == "MODELS"]
            found[f"osfl.models.{path.stem}"] = [c.args[0].value for c in calls]
        self._registered = found
        return found

    def model_modules(self, names: set[str]) -> list[str]:
        """The architecture modules a stage can build when its pipeline's params and command name ``names``: those
        registering one of them, and those holding a ``model: auto`` default."""
        from osfl.models import MODELS

        return sorted({module for module, registered in self.registered_models().items() for n in registered
                       if n in names or (n in MODELS and MODELS.get(n).default_for)})

    def stage_modules(self, cmd: str, wdir: Path, names: set[str]) -> set[str]:
        """Every ``osfl`` module the stage command runs, ``names`` being the tokens of its pipeline's params."""
        roots = self.stage_roots(cmd, wdir)
        mods = self.closure(roots)
        if "osfl.models" in mods:
            mods |= self.closure(self.model_modules(names | tokens(cmd)))
        return mods


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


def tokens(value) -> set[str]:
    """Every token of a params value (dict keys and values, list items, words split at blanks , : =)."""
    if isinstance(value, dict):
        return set().union(*map(tokens, value.values()), *map(tokens, value.keys())) if value else set()
    if isinstance(value, list):
        return set().union(*map(tokens, value)) if value else set()
    return {t for t in re.split(r"[\s,:=]+", str(value)) if t}
