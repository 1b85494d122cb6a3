"""The import graph of src/osfl's packages (every import at any scope, read from the source by
osfl.provenance.imports): no cycle between packages (issue 75).

Broken on 2026-12-06: clients -> evaluation -> distill -> clients (the ensemble predictors moved to distill.ensemble,
the server side; augmentation to osfl.augment, a neutral module), so client training imports no distillation file.
Broken on 2026-12-07: config <-> cpu_profile <-> generative <-> methods <-> papers. osfl.config is now a leaf
(settings, key checks, overrides); resolving and validating a run against the registries is osfl.runconfig, above
them; each paper's extra params keys are data (papers/<paper>/keys.yaml), so config imports no paper module.
"""
from __future__ import annotations

import itertools

import networkx as nx

from osfl.provenance.imports import Sources

#: modules osfl.config may import: it sits below every registry, paper and profile module
CONFIG_IMPORTS = {"osfl.errors", "osfl.profiles"}


def _package(module: str) -> str:
    """``osfl.distill.adversarial`` -> ``osfl.distill``; a top-level module (``osfl.config``) is its own package."""
    return ".".join(module.split(".")[:2])


def package_graph(sources: Sources | None = None) -> nx.DiGraph:
    sources = sources or Sources()
    graph = nx.DiGraph()
    for f in (sources.src / "osfl").rglob("*.py"):
        parts = list(f.relative_to(sources.src).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph.add_node(_package(module))
        for dep in sources.direct_imports(module):
            if dep.startswith("osfl.") and _package(dep) != _package(module):
                graph.add_edge(_package(module), _package(dep))
    return graph


def cyclic_pairs(graph: nx.DiGraph) -> set[tuple[str, str]]:
    return {tuple(sorted(pair)) for scc in nx.strongly_connected_components(graph) if len(scc) > 1
            for pair in itertools.combinations(sorted(scc), 2)}


def test_no_cycle_between_packages():
    pairs = sorted(cyclic_pairs(package_graph()))
    assert not pairs, f"packages that import each other: {pairs}; break the cycle (issue 75)"


def test_config_is_a_leaf_below_the_registries_and_the_papers():
    imported = {m for m in Sources().direct_imports("osfl.config") if m.startswith("osfl.")}
    assert imported <= CONFIG_IMPORTS, f"osfl.config imports {sorted(imported - CONFIG_IMPORTS)}: move what needs them " \
                                       "to osfl.runconfig"


def test_the_check_sees_a_cycle():
    graph = nx.DiGraph([("osfl.a", "osfl.b"), ("osfl.b", "osfl.c"), ("osfl.c", "osfl.a"), ("osfl.c", "osfl.d")])
    assert cyclic_pairs(graph) == {("osfl.a", "osfl.b"), ("osfl.a", "osfl.c"), ("osfl.b", "osfl.c")}


def test_client_training_stages_depend_on_no_distillation_file():
    """Issue 75: editing a distillation loss leaves every client-training stage current. Their code deps come from
    their imports (osfl.provenance.deps), so none may list src/osfl/distill (nor the server-side methods)."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    training = ("osfl.stages.train_clients", "osfl.stages.train_part")
    checked, offending = 0, []
    for pipeline in [root / "dvc.yaml", *sorted((root / "papers").glob("*/dvc.yaml"))]:
        for name, stage in (yaml.safe_load(pipeline.read_text()).get("stages") or {}).items():
            body = stage.get("do", stage)
            if not any(t in str(body.get("cmd", "")) for t in training):
                continue
            checked += 1
            offending += [f"{pipeline.parent.name}:{name}: {d}" for d in body.get("deps") or []
                          if "src/osfl/distill" in d or "src/osfl/methods/" in d.replace("methods/__init__.py", "")]
    assert checked >= 5, checked
    assert not offending, "client-training stages that depend on server-side code:\n" + "\n".join(offending)
