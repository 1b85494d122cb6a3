"""The import graph of src/osfl's packages (every import at any scope, read from the source by
osfl.provenance.imports): no new cycle between packages.

Issue 75 asks for none at all. On 2026-12-06 clients -> evaluation -> distill -> clients was broken (the ensemble
predictors moved to distill.ensemble, the server side; augmentation to osfl.augment, a neutral module), so client
training imports no distillation file. One group is still tangled: config <-> cpu_profile <-> generative <->
methods <-> papers (config's late imports of the registries and of papers' PIPELINE_KEYS). It is listed here as
the debt it is: a pair that leaves the list must be removed from it (the test fails on a listed pair that is no
longer cyclic), and any other pair fails.
"""
from __future__ import annotations

import itertools

import networkx as nx

from osfl.provenance.imports import Sources

#: package pairs that import each other (directly or not) today; this set may only shrink
KNOWN_CYCLIC_PAIRS = {
    ("osfl.config", "osfl.cpu_profile"), ("osfl.config", "osfl.generative"), ("osfl.config", "osfl.methods"),
    ("osfl.config", "osfl.papers"), ("osfl.cpu_profile", "osfl.generative"), ("osfl.cpu_profile", "osfl.methods"),
    ("osfl.cpu_profile", "osfl.papers"), ("osfl.generative", "osfl.methods"), ("osfl.generative", "osfl.papers"),
    ("osfl.methods", "osfl.papers"),
}


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


def test_no_new_cycle_between_packages():
    pairs = cyclic_pairs(package_graph())
    new = sorted(pairs - KNOWN_CYCLIC_PAIRS)
    assert not new, f"packages that now import each other: {new}; break the cycle (issue 75)"


def test_the_known_cycles_list_only_shrinks():
    gone = sorted(KNOWN_CYCLIC_PAIRS - cyclic_pairs(package_graph()))
    assert not gone, f"no longer cyclic, remove them from KNOWN_CYCLIC_PAIRS: {gone}"


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
