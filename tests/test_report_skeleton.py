"""One report skeleton (src/osfl/reporting/skeleton.py, issue 74): a paper's artifacts are data, id -> builder, and
one driver gives each its state, files, metrics, claims and cells; adding an artifact is one entry."""
import pandas as pd

from osfl.reporting import skeleton
from osfl.reporting.published import Artifact
from osfl.reporting.grid import Grid


def _art(i: str, kind: str = "table") -> Artifact:
    return Artifact(id=i, kind=kind, label=i.title(), caption=f"the paper's {i}", file=None)


def test_every_artifact_gets_its_state_from_data(tmp_path):
    calls = []

    def table(ctx, art):
        shared = ctx.once("loaded", lambda: calls.append("load") or {"rows": 2})
        df = pd.DataFrame({"ours / paper": ["1.00 / 2.00"] * shared["rows"]})
        return skeleton.Built("2 cells run", skeleton.table_vs_paper(ctx, art, df, "notes"), {"cells_run": 2},
                              [("claim", "verdict")], [{"cell": 1}])

    arts = [_art("table1"), _art("table2"), _art("fig1", "figure"), _art("fig2", "figure"), _art("table3")]
    ctx = skeleton.Context(Grid.of({}), tmp_path, tmp_path, tmp_path / "reports")
    (tmp_path / "reports").mkdir()
    report = skeleton.build_all(ctx, arts, {"table1": table, "table2": table, "fig2": lambda c, a: None},
                                {"fig1": "a schematic: no data"}, not_built="not built yet (issue 1)")
    assert report.status == {"table1": "2 cells run", "table2": "2 cells run", "fig1": "a schematic: no data",
                             "fig2": skeleton.NO_RUN, "table3": "not built yet (issue 1)"}
    assert calls == ["load"]  # shared work done once
    assert report.metrics == {"table1": {"cells_run": 2}, "table2": {"cells_run": 2}}
    assert len(report.verdicts) == 2 and len(report.cells) == 2
    tex = (tmp_path / "reports" / "table1.tex").read_text()
    assert "Table1 (paper) vs ours: the paper's table1" in tex and "tab:table1-vs-paper" in tex
    assert {p.name for p in report.files} >= {"table1.tex", "table1.md", "table2.tex", "table2.md"}


def test_one_seed_averaging_for_every_paper():
    """FedMHO's mean of rows and OFedED's mean over σ are one helper: per common seed, the mean value and swing,
    degenerate where any side is."""
    from osfl.reporting.runs import mean_side
    from osfl.reporting.spread import Side

    a = Side("a", {0: 10.0, 1: 20.0, 2: 30.0}, {0: 1.0, 1: 2.0, 2: None}, {1: "clients at chance"})
    b = Side("b", {0: 20.0, 1: 40.0}, {0: 3.0, 1: 4.0}, {})
    m = mean_side([a, b], "mean")
    assert m.values == {0: 15.0, 1: 30.0} and m.swings == {0: 2.0, 1: 3.0}
    assert m.degenerate == {0: None, 1: "clients at chance"} and m.name == "mean"


def test_the_grid_is_read_once_typed():
    from osfl.reporting.grid import Grid

    g = Grid.of({"datasets": ["fmnist", "mnist"], "splits": ["dir0.5", "2cc"], "seed": 3, "clients": "5",
                 "columns": [{"id": "fedavg"}], "profile": "cpu"})
    assert g.seeds == (3,) and g.clients == 5 and g.first_split == "dir0.5" and g.first_dataset == "fmnist"
    assert list(g.runs(["mnist"])) == [("mnist", "dir0.5", 3), ("mnist", "2cc", 3)]
    assert len(list(g.runs())) == 4 and g.columns == ({"id": "fedavg"},)
    assert Grid.of({}).runs and list(Grid.of({}).runs()) == [] and Grid.of({}).first_split is None
