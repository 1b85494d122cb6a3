"""Typed settings all the way down (issue 75): the reports read a pipeline's params through :class:`Grid`, the
stages through :class:`RunConfig`; no function of the render side or of a stage takes the raw params mapping."""
import ast
from pathlib import Path

import pytest

from osfl.errors import ConfigError
from osfl.reporting.grid import Grid
from osfl.stages.render import load_grid

SRC = Path(__file__).resolve().parents[1] / "src" / "osfl"
#: the loaders: the one place a raw params mapping is turned into typed settings
LOADERS = {("reporting/grid.py", "of")}


def _functions(folder: str):
    for path in sorted((SRC / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.relative_to(SRC).as_posix(), node


@pytest.mark.parametrize("folder", ["papers", "reporting", "stages"])
def test_no_report_or_stage_function_takes_the_raw_params(folder):
    takes = [f"{rel}:{fn.lineno} {fn.name}" for rel, fn in _functions(folder)
             if "params" in {a.arg for a in fn.args.args + fn.args.kwonlyargs} and (rel, fn.name) not in LOADERS]
    assert takes == []


def test_no_stage_reads_cfg_params():
    reads = [f"{p.name}:{n.lineno}" for p in sorted((SRC / "stages").glob("*.py"))
             for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(n, ast.Attribute) and n.attr == "params" and isinstance(n.value, ast.Name)
             and n.value.id == "cfg"]
    assert reads == []


def test_the_grid_hands_out_copies_and_names_a_bad_block():
    g = Grid.of({"cost": {"target": {"mnist": 80}}, "s_columns": [{"id": "a"}], "figure_split": "dir0.3",
                 "splits": ["dir0.5", "dir0.1"], "seeds": [0, 1]})
    g.block("cost")["target"]["mnist"] = 1
    g.items("s_columns").append({"id": "b"})
    assert g.block("cost") == {"target": {"mnist": 80}} and g.items("s_columns") == [{"id": "a"}]
    assert g.block("absent") == {} and g.items("absent") == [] and g.value("absent", 3) == 3
    assert g.value("figure_split") == "dir0.3" and g.value("seeds") == [0, 1]
    one = g.narrowed(["dir0.1"])
    assert one.splits == ("dir0.1",) and list(one.runs(["x"])) == [("x", "dir0.1", 0), ("x", "dir0.1", 1)]
    assert g.splits == ("dir0.5", "dir0.1")
    with pytest.raises(ConfigError, match="^figure_split: must be a mapping"):
        g.block("figure_split")
    with pytest.raises(ConfigError, match="^cost: must be a list"):
        g.items("cost")


def test_the_render_refuses_an_unknown_key_in_one_line(tmp_path):
    (tmp_path / "params.yaml").write_text("seed: 0\nalpah: 0.1\n")
    with pytest.raises(ConfigError, match="alpah.*did you mean alpha"):
        load_grid(tmp_path / "params.yaml")
    (tmp_path / "keys.yaml").write_text("datasets: null\nsplits: null\n")  # the keys this pipeline adds
    (tmp_path / "params.yaml").write_text("seed: 3\ndatasets: [mnist]\nsplits: [dir0.5]\n")
    assert list(load_grid(tmp_path / "params.yaml").runs()) == [("mnist", "dir0.5", 3)]
