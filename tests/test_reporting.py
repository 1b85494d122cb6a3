"""Tests for osfl.reporting: LaTeX/Markdown tables (incl. a real pdflatex compile) and figures."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from helpers import compile_latex

from osfl.reporting import (
    REQUIRED_LATEX_PACKAGES,
    bar_chart,
    compare_table,
    curves,
    latex_document,
    latex_table,
    markdown_table,
    write_table,
)

NASTY = "Co_Boosting 50% & more"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def results() -> pd.DataFrame:
    return pd.DataFrame(
        {"MNIST": [97.123, 95.5, np.nan], "CIFAR-10": [55.5, 60.25, 41.0]},
        index=pd.Index([NASTY, "FedAvg", "DENSE"], name="Method"),
    )


# --------------------------------------------------------------------------------------- LaTeX


def test_latex_table_structure_and_escaping(results):
    tex = latex_table(results, "Top-1 accuracy (%) of x_y", "tab:acc_main")
    assert "\\begin{table}" in tex and "\\end{table}" in tex
    assert "\\centering" in tex
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "\\caption{Top-1 accuracy (\\%) of x\\_y}" in tex
    assert "\\label{tab:acc_main}" in tex  # labels are not escaped
    assert "Co\\_Boosting 50\\% \\& more" in tex
    assert NASTY not in tex
    # precision and NaN
    assert "97.12" in tex and "97.123" not in tex
    assert "---" in tex
    assert "nan" not in tex.lower()


def test_latex_table_precision_and_column_format(results):
    tex = latex_table(results, "c", "tab:c", precision=1, column_format="lcc")
    assert "& 97.1 &" in tex and "& 60.2 \\\\" in tex
    assert "\\begin{tabular}{lcc}" in tex


def test_latex_table_highlight_max_and_notes(results):
    tex = latex_table(results, "c", "tab:c", highlight_max=True, notes="profile: smoke; n_clients=10")
    assert "\\textbf{97.12}" in tex  # MNIST max, NaN ignored
    assert "\\textbf{60.25}" in tex  # CIFAR-10 max
    assert "\\textbf{55.50}" not in tex
    assert tex.count("\\textbf") == 2
    assert "\\footnotesize profile: smoke; n\\_clients=10" in tex
    # the note sits inside the table environment, after the tabular
    assert tex.index("\\end{tabular}") < tex.index("\\footnotesize") < tex.index("\\end{table}")


def test_latex_table_raw_caption():
    df = pd.DataFrame({"a": [1.0]}, index=["x"])
    tex = latex_table(df, r"Accuracy at $\alpha=0.5$", "tab:r", escape_text=False)
    assert r"\caption{Accuracy at $\alpha=0.5$}" in tex


def test_latex_document_loads_required_packages():
    doc = latex_document(["BODY-ONE", "BODY-TWO"])
    assert doc.startswith("\\documentclass{article}")
    for pkg in REQUIRED_LATEX_PACKAGES:
        assert f"\\usepackage{{{pkg}}}" in doc
    assert "booktabs" in REQUIRED_LATEX_PACKAGES
    assert doc.index("\\begin{document}") < doc.index("BODY-ONE") < doc.index("BODY-TWO") < doc.index("\\end{document}")


def test_generated_tables_compile_with_pdflatex(results, tmp_path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed: apt-get install texlive-latex-base texlive-latex-recommended")
    paper = pd.DataFrame({"MNIST": [98.0, 95.5, 90.0], "CIFAR-10": [np.nan, 58.0, 43.5]}, index=results.index)
    multi = pd.DataFrame(
        np.arange(8.0).reshape(4, 2),
        index=pd.MultiIndex.from_product([["MNIST", "SVHN"], ["FedAvg", "F_ADI"]], names=["dataset", "method"]),
        columns=pd.MultiIndex.from_product([["accuracy"], ["mean", "std"]]),
    )
    bodies = [
        latex_table(results, "With a missing value", "tab:nan"),
        latex_table(results, "Best in bold", "tab:bold", highlight_max=True, notes="profile=smoke; alpha_dir=0.5, ~5% #1 {x}"),
        latex_table(compare_table(results, paper), "Ours / paper (Δ)", "tab:cmp"),
        latex_table(multi, "Hierarchical labels", "tab:multi"),
    ]
    compile_latex(bodies, tmp_path)


# ------------------------------------------------------------------------------------ Markdown


def test_markdown_table(results):
    md = markdown_table(results, caption="Main results")
    lines = md.strip().splitlines()
    assert lines[0] == "*Main results*"
    table = [ln for ln in lines if ln.startswith("|")]
    assert len(table) == 2 + len(results)  # header, separator, one row per index entry
    header = [c.strip() for c in table[0].strip("|").split("|")]
    assert header == ["Method", "MNIST", "CIFAR-10"]
    sep = [c.strip() for c in table[1].strip("|").split("|")]
    assert all(set(c) <= set(":-") and "---" in c for c in sep)
    assert sep[1].endswith(":")  # numeric columns right-aligned
    assert table[2] == f"| {NASTY} | 97.12 | 55.50 |"
    assert table[4] == "| DENSE | — | 41.00 |"
    assert "nan" not in md.lower()


def test_markdown_table_escapes_pipes_and_precision():
    df = pd.DataFrame({"a|b": [1.23456], "n": [3]}, index=["x|y"])
    md = markdown_table(df, precision=3)
    rows = md.strip().splitlines()
    assert rows[0] == "|  | a\\|b | n |"
    assert rows[2] == "| x\\|y | 1.235 | 3 |"


def test_write_table(results, tmp_path):
    paths = write_table(results, tmp_path / "sub" / "dir" / "acc", "Accuracy", "tab:acc", highlight_max=True, precision=1)
    assert [p.name for p in paths] == ["acc.tex", "acc.md"]
    assert all(p.exists() for p in paths)
    tex, md = (p.read_text(encoding="utf-8") for p in paths)
    assert "\\textbf{97.1}" in tex and "\\label{tab:acc}" in tex
    assert "| 97.1 |" in md and "*Accuracy*" in md
    with pytest.raises(TypeError):
        write_table(results, tmp_path / "x", "c", "l", no_such_option=1)


# ------------------------------------------------------------------------------- compare_table


def test_compare_table_delta_sign():
    idx = pd.Index(["A", "B", "C", "D"], name="Method")
    ours = pd.DataFrame({"MNIST": [90.5, 80.0, np.nan, 70.0], "SVHN": [50.0, 50.001, 1.0, 2.0]}, index=idx)
    paper = pd.DataFrame({"SVHN": [50.0, 50.0, 1.0, np.nan], "MNIST": [88.25, 81.5, 60.0, 70.0]}, index=idx)
    out = compare_table(ours, paper)
    assert list(out.columns) == ["MNIST", "SVHN"] and list(out.index) == list("ABCD")
    assert out.loc["A", "MNIST"] == "90.50 / 88.25 (+2.25)"
    assert out.loc["B", "MNIST"] == "80.00 / 81.50 (-1.50)"
    assert out.loc["C", "MNIST"] == "— / 60.00"  # the paper's number stays visible where ours did not run
    assert out.loc["D", "MNIST"] == "70.00 / 70.00 (+0.00)"
    assert out.loc["A", "SVHN"] == "50.00 / 50.00 (+0.00)"
    assert out.loc["B", "SVHN"] == "50.00 / 50.00 (+0.00)"  # no "-0.00"/rounding sign flip
    assert out.loc["D", "SVHN"] == "2.00 / —"
    assert compare_table(ours, paper, precision=1).loc["B", "MNIST"] == "80.0 / 81.5 (-1.5)"


def test_vs_paper_is_the_one_cell_format():
    """Every report's "ours / paper (Δ)" cell comes from tables.vs_paper: seeds as mean ± std (n), the paper's std
    where it prints one, Δ from our mean, "—" for a missing side and alone where neither side has a number."""
    from osfl.reporting.tables import vs_paper

    assert vs_paper([60.0, 62.0, 64.0], 70.0, 1.5) == "62.00 ± 2.00 (n=3) / 70.00 ± 1.50 (-8.00)"
    assert vs_paper([50.0], 50.004) == "50.00 / 50.00 (+0.00)"  # no "-0.00"
    assert vs_paper([], 70.0) == "— / 70.00" and vs_paper([61.0], float("nan")) == "61.00 / —"
    assert vs_paper([None, float("nan")], float("nan")) == "—"
    assert vs_paper([1.25], 1.0, precision=1) == "1.2 / 1.0 (+0.2)"


def test_compare_table_rejects_mismatched_frames():
    a = pd.DataFrame({"x": [1.0, 2.0]}, index=["m", "n"])
    with pytest.raises(ValueError):
        compare_table(a, pd.DataFrame({"x": [1.0]}, index=["m"]))
    with pytest.raises(ValueError):
        compare_table(a, pd.DataFrame({"y": [1.0, 2.0]}, index=["m", "n"]))


# ------------------------------------------------------------------------------------- figures


def _check_figure_files(paths, stem):
    assert [p.name for p in paths] == [stem.name + ".png", stem.name + ".pdf"]
    png, pdf = paths
    assert png.stat().st_size > 0 and pdf.stat().st_size > 0
    assert png.read_bytes().startswith(PNG_MAGIC)
    assert pdf.read_bytes().startswith(b"%PDF")


def test_bar_chart(tmp_path):
    stem = tmp_path / "figs" / "bars"
    values = {"FedAvg": 52.1, "DENSE": 60.0, NASTY: 63.4, "missing": float("nan")}
    paths = bar_chart(
        values,
        stem,
        title="CIFAR-10, α=0.5",
        errors={"DENSE": 1.2, NASTY: 0.8},
        reference={"DENSE": 61.0, NASTY: 65.2, "not-run": 70.0},
    )
    _check_figure_files(paths, stem)


def test_curves(tmp_path):
    stem = tmp_path / "curves"
    series = {"DENSE": ([1, 2, 3, 4], [10.0, 30.0, 45.0, 50.0]), "Co-Boosting": ([1, 2, 3, 4], [12.0, 35.0, 48.0, 55.0])}
    paths = curves(series, stem, title="MNIST", hlines={"FedAvg": 40.0, "Ensemble": 60.0})
    _check_figure_files(paths, stem)
    with pytest.raises(ValueError):
        curves({"bad": ([1, 2], [1.0])}, tmp_path / "bad")


def test_figures_are_byte_identical_on_rerun(tmp_path):
    values = {"FedAvg": 52.1, "DENSE": 60.0}
    first = [p.read_bytes() for p in bar_chart(values, tmp_path / "a", reference={"DENSE": 61.0})]
    second = [p.read_bytes() for p in bar_chart(values, tmp_path / "b", reference={"DENSE": 61.0})]
    assert first == second
    series = {"DENSE": ([0, 1, 2], [1.0, 2.0, 3.0])}
    first = [p.read_bytes() for p in curves(series, tmp_path / "c", hlines={"FedAvg": 2.5})]
    second = [p.read_bytes() for p in curves(series, tmp_path / "d", hlines={"FedAvg": 2.5})]
    assert first == second


def test_the_reports_unicode_signs_become_latex():
    from osfl.reporting import escape_latex

    assert escape_latex("≥ 25 %, vgg9 → vgg9_cpu, α = 0.5, λ1 · ✓") == (
        r"$\geq$ 25 \%, vgg9 $\rightarrow$ vgg9\_cpu, $\alpha$ = 0.5, $\lambda$1 $\cdot$ $\surd$")
    assert escape_latex("Α Ρ Σ ω") == r"A P $\Sigma$ $\omega$"


@pytest.mark.skipif(shutil.which("pdflatex") is None,
                    reason="pdflatex not installed: apt-get install texlive-latex-base texlive-latex-recommended")
def test_every_committed_table_compiles(tmp_path, repo_root):
    """The LaTeX tables the papers' reports ship compile with plain pdflatex and the required packages (they once
    carried ≥ and → from the cpu profile's captions, which pdflatex refused)."""
    tables = sorted(repo_root.glob("papers/*/reports/*.tex"))
    assert len(tables) >= 20
    compile_latex([t.read_text(encoding="utf-8") + "\n\\clearpage" for t in tables], tmp_path)  # floats flushed


PAPER_LAYER_MAX_LINES = 400  # issue 40: the paper layer reads like the papers' tables of contents


def test_no_module_of_the_paper_layer_is_over_400_lines():
    """src/osfl/papers/ (every paper's tables, figures, claims) and src/osfl/reporting/ (the shared loader, verdicts
    and writers): each module stays small enough to read as one concern."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "src" / "osfl"
    sizes = {str(p.relative_to(src)): len(p.read_text().splitlines())
             for folder in ("papers", "reporting") for p in (src / folder).rglob("*.py")}
    assert len(sizes) > 20, sizes  # the walk found the layer
    assert {m: n for m, n in sizes.items() if n > PAPER_LAYER_MAX_LINES} == {}


def test_one_naming_scheme_for_runs():
    """Every paper's run folders: <dataset>-<split>-s<seed>; FedHydra's base seed alone is bare (its dvc.yaml)."""
    from osfl.reporting.naming import run_name, seed_run
    from osfl.reporting.spread import seed_runs

    assert run_name("fmnist", "dir0.1", 0) == "fmnist-dir0.1-s0"
    assert run_name("fmnist", "c2", 1) == "fmnist-c2-s1"  # HFLDD: C classes per client
    assert run_name("fmnist", "dir0.5", 0, bare_seed=0) == "fmnist-dir0.5"
    assert run_name("fmnist", "dir0.5", 2, bare_seed=0) == "fmnist-dir0.5-s2"
    assert seed_run("fmnist-2cc", 1, bare_seed=1) == "fmnist-2cc" and seed_run("fmnist-2cc", 1) == "fmnist-2cc-s1"
    runs = {"fmnist-dir0.5": "base", "fmnist-dir0.5-s2": "two", "fmnist-dir0.5-s0": "never read"}
    assert seed_runs(runs, "fmnist-dir0.5", seeds=[0, 1, 2], base_seed=0) == {0: "base", 2: "two"}


def test_saved_figures_keep_every_text_inside_their_bounds(tmp_path):
    """A title wider than the figure (the clipped suptitles of issue 74) is inside the saved file: the files are cut
    to the tight bounding box, and no text reaches outside it."""
    from matplotlib.figure import Figure
    from PIL import Image

    from osfl.reporting.figures import outside_texts, save_figure

    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    fig.suptitle("The ensemble's test accuracy per server epoch (ours; mean over seeds), Fashion-MNIST, alpha 0.3")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # an Agg canvas to measure with
    assert outside_texts(fig), "the title must reach outside the 3-inch figure for this test to mean anything"
    png, _ = save_figure(fig, tmp_path / "wide")
    tight = fig.get_tightbbox(fig.canvas.get_renderer()).transformed(fig.dpi_scale_trans)
    assert outside_texts(fig, tight.padded(0.05 * fig.dpi)) == []
    width = Image.open(png).size[0]
    assert width > 3 * 150  # the file grew to hold the title (150 dpi)
