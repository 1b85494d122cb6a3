"""Tests for osfl.reporting.published: the paper's transcribed tables and our comparisons with them."""

import csv
import math
import shutil
from pathlib import Path

import pytest
from helpers import compile_latex

from osfl.errors import ConfigError
from osfl.reporting.published import (
    Artifact,
    default_label,
    get_artifact,
    load_artifacts,
    load_published_table,
    parse_cell,
)
from osfl.reporting.comparison import render_comparison


PUBLISHED = Path(__file__).resolve().parents[1] / "papers" / "fedhydra" / "published"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "papers" / "fedhydra"


@pytest.fixture(scope="module")
def artifacts() -> list[Artifact]:
    return load_artifacts(PUBLISHED)


@pytest.fixture(scope="module")
def tables(artifacts) -> dict[str, Artifact]:
    return {a.id: a for a in artifacts if a.kind == "table"}


def _csv_rows(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def _md_cell(md: str, row: str, col: str) -> str:
    """The text of cell (row, col) of the pipe table in ``md``."""
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    split = [[c.strip() for c in ln.strip().strip("|").split(" | ")] for ln in lines]
    header = split[0]
    for cells in split[2:]:
        if cells[0] == row:
            return cells[header.index(col)]
    raise AssertionError(f"row {row!r} not in the Markdown table")


# ------------------------------------------------------------------------------ the copied files


def test_published_folder_holds_the_18_csvs_and_the_index():
    csvs = sorted(p.name for p in PUBLISHED.glob("*.csv"))
    assert len(csvs) == 18
    assert (PUBLISHED / "artifacts.yaml").is_file()
    if SHARED.is_dir():  # the copies are unchanged
        assert (PUBLISHED / "artifacts.yaml").read_bytes() == (SHARED / "artifacts.yaml").read_bytes()
        for name in csvs:
            assert (PUBLISHED / name).read_bytes() == (SHARED / "tables" / name).read_bytes(), name


def test_load_artifacts_lists_tables_and_figures(artifacts, tables):
    assert sorted(tables) == [f"table{n:02d}" for n in range(1, 19)]
    figures = [a for a in artifacts if a.kind == "figure"]
    assert len(figures) == 13 and all(f.file is None for f in figures)
    t1 = tables["table01"]
    assert t1.label == "Table 1"
    assert t1.caption.startswith("Top-1 test accuracy achieved by baselines and our FedHydra")
    assert t1.file is not None and t1.file.is_file() and t1.file.name == "table01_accuracy_alpha.csv"
    assert t1.meta["datasets"] == ["MNIST", "FashionMNIST", "SVHN", "CIFAR10"]
    assert tables["table18"].label == "Table 18"


def test_load_artifacts_reports_a_missing_index(tmp_path):
    with pytest.raises(ConfigError, match="artifacts.yaml"):
        load_artifacts(tmp_path)


def test_get_artifact_names_unknown_id():
    assert get_artifact("table06", PUBLISHED).label == "Table 6"
    with pytest.raises(ConfigError, match="'table99'.*allowed: 'table01'"):
        get_artifact("table99", PUBLISHED)


# ------------------------------------------------------------------------------ loading tables


def test_every_table_loads_with_the_csv_shape(tables):
    for aid, artifact in tables.items():
        rows = _csv_rows(artifact.file)
        header, body = rows[0], rows[1:]
        df = load_published_table(artifact)
        n_key = 2 if aid == "table06" else 1  # Table 6 keys rows by (lambda_1, lambda_2)
        assert df.shape == (len(body), len(header) - n_key), aid
        assert list(df.columns) == header[n_key:], aid
        assert list(df.index) == [", ".join(r[:n_key]) for r in body], aid
        assert df.index.is_unique, aid
        assert all(isinstance(x, str) for x in df.index), aid
        assert all(str(dt) == "float64" for dt in df.dtypes), aid
        assert not df.isna().any().any(), aid  # every printed cell is a number


def test_spot_checks_of_transcribed_values(tables):
    t1 = load_published_table(tables["table01"])
    assert t1.index.name == "Method"
    assert t1.loc["FedAvg", "MNIST alpha=0.5"] == 81.89
    assert t1.loc["FedAvg", "CIFAR10 alpha=0.01"] == 14.96
    assert t1.loc["DENSE", "SVHN alpha=0.01"] == 7.75
    t2 = load_published_table(tables["table02"])
    assert t2.loc["OT", "MNIST"] == 8.92
    t4 = load_published_table(tables["table04"])
    assert list(t4.index) == ["5", "10", "20", "50", "100"]
    assert t4.loc["5", "FedAvg"] == 65.50 == t1.loc["FedAvg", "SVHN alpha=0.5"]  # K=5 row is Table 1's
    t6 = load_published_table(tables["table06"])
    assert t6.index.name == "lambda_1, lambda_2"
    assert t6.loc["1.0, 0.5", "CIFAR10"] == 56.92
    assert t6.loc["0.0, 0.0", "MNIST"] == 74.14
    t10 = load_published_table(tables["table10"])
    assert t10.loc["CIFAR10", "Server(ResNet18) FedHydra"] == 38.57


def test_not_reported_cells_become_nan(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("Method,A,B,C,D\nX,1.5,-,,MISSING\nY, 2 ,n/a,3,\u2014\n", encoding="utf-8")
    df = load_published_table(Artifact("tableX", "table", "Table X", "cap", path))
    assert list(df.index) == ["X", "Y"]
    assert df.loc["X", "A"] == 1.5 and df.loc["Y", "A"] == 2.0 and df.loc["Y", "C"] == 3.0
    assert math.isnan(df.loc["X", "B"]) and math.isnan(df.loc["X", "C"]) and math.isnan(df.loc["Y", "B"])
    assert df["D"].isna().all()


@pytest.mark.parametrize("text, value, std", [
    ("126.47M", 126.47e6, None), ("467.23K", 467.23e3, None), ("12,000", 12000.0, None), ("83.5%", 83.5, None),
    ("95.2 \u00b1 0.4", 95.2, 0.4), ("-0.59", -0.59, None), ("1e-3", 1e-3, None), (".5", 0.5, None)])
def test_parse_cell_reads_printed_numbers(text, value, std):
    v, s = parse_cell(text)
    assert v == pytest.approx(value) and (math.isnan(s) if std is None else s == pytest.approx(std))


@pytest.mark.parametrize("text", ["VGG-9", "5/80.63", "\u2713", "1.2.3", "K", "12,00"])
def test_a_cell_that_is_not_a_number_fails_with_its_place(tmp_path, text):
    path = tmp_path / "t.csv"
    path.write_text(f"Model,FLOPs\nCNN,\"{text}\"\n", encoding="utf-8")
    art = Artifact("tableX", "table", "Table X", "cap", path)
    with pytest.raises(ConfigError, match=r"tableX \(t.csv\) row 'CNN' column 'FLOPs'.*not a number"):
        load_published_table(art)
    assert load_published_table(art, which="text").loc["CNN", "FLOPs"] == text  # read as printed on request


def test_acc_std_pairs_are_folded(tmp_path):
    """FedMHO's layout: key columns up to the first <name>_acc, values from _acc, std from _std, Δ dropped."""
    path = tmp_path / "t.csv"
    path.write_text("Dataset,Partition_row,alpha_inferred,FedAvg_acc,FedAvg_std,MD_acc,MD_std,MD_delta\n"
                    "MNIST,1,0.5,85.91,0.57,95.71,0.68,\nFashion,1,0.5,60.24,1.47,77.27,0.48,-0.5\n", encoding="utf-8")
    art = Artifact("table04", "table", "Table IV", "cap", path)
    acc, std = load_published_table(art), load_published_table(art, which="std")
    assert acc.index.name == "Dataset, Partition_row, alpha_inferred"
    assert list(acc.index) == ["MNIST, 1, 0.5", "Fashion, 1, 0.5"] and list(acc.columns) == ["FedAvg", "MD"]
    assert acc.loc["Fashion, 1, 0.5", "MD"] == 77.27 and std.loc["Fashion, 1, 0.5", "MD"] == 0.48
    assert list(std.columns) == ["FedAvg", "MD"] and std.loc["MNIST, 1, 0.5", "FedAvg"] == 0.57


def test_labels_from_ids_in_the_papers_numbering():
    assert default_label("table04") == "Table 4" and default_label("figure09") == "Fig. 9"
    assert default_label("figure05", "roman") == "Fig. 5"  # IEEE style: roman tables, arabic figures
    assert default_label("fig2a") == "Fig. 2(a)" and default_label("fig3") == "Fig. 3"  # OFedED's panel ids
    assert [default_label(f"table{n:02d}", "roman") for n in (1, 4, 9, 11, 14, 40)] == [
        "Table I", "Table IV", "Table IX", "Table XI", "Table XIV", "Table XL"]
    with pytest.raises(ConfigError, match="numbering"):
        default_label("table01", "greek")


def test_load_published_table_rejects_figures(artifacts):
    figure = next(a for a in artifacts if a.kind == "figure")
    with pytest.raises(ConfigError, match=figure.id):
        load_published_table(figure)


# ------------------------------------------------------------------------------ comparisons


def test_render_comparison_cells(tables, tmp_path):
    ours = {
        ("FedAvg", "MNIST alpha=0.5"): 80.00,  # paper 81.89
        ("FedHydra (ours)", "CIFAR10 alpha=0.1"): 45.5,
        ("OT", "SVHN alpha=0.3"): float("nan"),  # counted as not run
    }
    paths = render_comparison(tables["table01"], ours, tmp_path / "out", note="Stand-in data at smoke profile.")
    tex, md = paths
    assert paths == [tmp_path / "out" / "table01.tex", tmp_path / "out" / "table01.md"]
    assert tex.is_file() and md.is_file()

    paper = load_published_table(tables["table01"])
    text = md.read_text(encoding="utf-8")
    assert _md_cell(text, "FedAvg", "MNIST alpha=0.5") == "80.00 / 81.89 (-1.89)"
    expected = paper.loc["FedHydra (ours)", "CIFAR10 alpha=0.1"]
    want = f"45.50 / {expected:.2f} ({45.5 - expected:+.2f})"
    assert _md_cell(text, "FedHydra (ours)", "CIFAR10 alpha=0.1") == want
    # not run: our number and the difference are dashes, the paper's number stays
    assert _md_cell(text, "OT", "SVHN alpha=0.3") == "— / 69.58"
    assert _md_cell(text, "FedAvg", "MNIST alpha=0.3") == "— / 69.89"
    assert "*Table 1 (paper) vs ours: Top-1 test accuracy" in text
    assert "varying α. Stand-in data at smoke profile.*" in text

    latex = tex.read_text(encoding="utf-8")
    assert "\\caption{Table 1 (paper) vs ours: Top-1 test accuracy" in latex
    assert "varying $\\alpha$. Stand-in data at smoke profile.}" in latex
    assert "\\label{tab:table01-vs-paper}" in latex
    assert "80.00 / 81.89 (-1.89)" in latex
    assert "--- / 69.58" in latex
    assert "α" not in latex and "Δ" not in latex and "—" not in latex
    fedavg_row = next(ln for ln in latex.splitlines() if ln.startswith("FedAvg &"))
    assert fedavg_row.split(" & ")[1] == "80.00 / 81.89 (-1.89)"  # first data column


def test_render_comparison_with_composite_row_labels(tables, tmp_path):
    tex, md = render_comparison(tables["table06"], {("1.0, 0.5", "SVHN"): 78.04}, tmp_path)
    assert tex.name == "table06.tex" and md.name == "table06.md"
    text = md.read_text(encoding="utf-8")
    assert _md_cell(text, "1.0, 0.5", "SVHN") == "78.04 / 78.04 (+0.00)"
    assert "$\\lambda_{1}$" in tex.read_text(encoding="utf-8")  # caption's λ_1 typeset as math


def test_render_comparison_unknown_row_or_column(tables, tmp_path):
    t1 = tables["table01"]
    with pytest.raises(ConfigError, match=r"no row 'FedAvgX'.*allowed: 'FedAvg', 'OT'") as err:
        render_comparison(t1, {("FedAvgX", "MNIST alpha=0.5"): 1.0}, tmp_path)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=r"no column 'MNIST a=0.5'.*allowed: 'MNIST alpha=0.5'") as err:
        render_comparison(t1, {("FedAvg", "MNIST a=0.5"): 1.0}, tmp_path)
    message = str(err.value)
    assert "\n" not in message and "(+8 more)" in message  # 16 columns: the list is cut short
    with pytest.raises(ConfigError, match="no row '5'"):  # labels are the printed strings
        render_comparison(tables["table02"], {("5", "MNIST"): 1.0}, tmp_path)
    assert not list(tmp_path.iterdir())  # nothing written when the input is wrong


def test_generated_comparisons_compile_with_pdflatex(tables, tmp_path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed: apt-get install texlive-latex-base texlive-latex-recommended")
    bodies = []
    for aid in ("table01", "table03", "table06", "table10"):
        paper = load_published_table(tables[aid])
        ours = {(paper.index[0], paper.columns[0]): 50.0}
        note = "Stand-in data, smoke profile; 5% & more."
        tex, _ = render_comparison(tables[aid], ours, tmp_path / "out", note=note)
        bodies.append(tex.read_text(encoding="utf-8"))
    compile_latex(bodies, tmp_path)
