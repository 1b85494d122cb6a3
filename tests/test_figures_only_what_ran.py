"""Figures draw only what ran (issue 74): a panel without runs is not drawn but named under the figure, a figure
with nothing to draw is not written (and an earlier render's file is removed), and the state the report reads says
so (src/osfl/reporting/figures.py, runs.write_index)."""
import json

from osfl.reporting import figures
from osfl.reporting.runs import write_index


def test_panels_without_runs_are_named_not_drawn(tmp_path, monkeypatch):
    seen = {}
    real = figures.save_figure

    def spy(fig, out_stem):
        seen["titles"] = [ax.get_title() for ax in fig.axes if ax.get_visible()]
        seen["footer"] = fig._supxlabel.get_text() if fig._supxlabel is not None else ""
        return real(fig, out_stem)

    monkeypatch.setattr(figures, "save_figure", spy)
    panels = {"MNIST": None, "Fashion-MNIST": ({"FedAvg": ([0, 1, 2], [10.0, 40.0, 60.0])}, {}), "SVHN": None}
    written = figures.curve_panels(panels, tmp_path / "fig", suptitle="curves")
    assert [p.name for p in written] == ["fig.png", "fig.pdf"]
    assert seen["titles"] == ["Fashion-MNIST"]  # one axes: no empty panel
    assert seen["footer"] == "not run: MNIST; SVHN"


def test_a_figure_with_nothing_to_draw_is_not_written_and_its_old_file_goes(tmp_path):
    for ext in (".png", ".pdf"):
        (tmp_path / f"fig{ext}").write_bytes(b"an earlier render")
    assert figures.curve_panels({"MNIST": None, "SVHN": None}, tmp_path / "fig") == []
    assert not (tmp_path / "fig.png").exists() and not (tmp_path / "fig.pdf").exists()
    assert figures.image_rows({"DENSE": [], "FedHydra": []}, tmp_path / "rows") == []
    assert not (tmp_path / "rows.png").exists()


def test_the_state_of_a_figure_that_was_not_drawn_says_so(tmp_path):
    (tmp_path / "fig3.png").write_bytes(b"png")
    status = {"fig3": "rendered from the runs present", "fig4": "rendered from the runs present",
              "fig5": "no run yet", "table1": "3 of 12 cells run"}
    (tmp_path / "table1.tex").write_text("\\begin{table}\\end{table}")
    write_index(tmp_path, status, [])
    got = json.loads((tmp_path / "status.json").read_text())
    assert got == {"fig3": "rendered from the runs present", "fig4": "not drawn: rendered from the runs present",
                   "fig5": "no run yet", "table1": "3 of 12 cells run"}


def test_colliding_tick_labels_are_rotated_until_they_do_not(tmp_path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    names = [f"fmnist-dir0.{k}-s{k} long run name" for k in range(6)]
    ax.bar(names, range(6))
    assert figures.colliding_ticks(fig)  # as drawn, the run names overlap
    figures.save_figure(fig, tmp_path / "bars")
    assert figures.colliding_ticks(fig) == []
    assert {t.get_rotation() for t in ax.get_xticklabels()} <= {30.0, 90.0}
    tight = fig.get_tightbbox(fig.canvas.get_renderer()).transformed(fig.dpi_scale_trans)
    assert figures.outside_texts(fig, tight.padded(0.05 * fig.dpi)) == []  # rotated labels inside what is saved
