"""The compiled report (osfl.reporting.book, `make report`): one PDF of every paper's committed reports."""
from __future__ import annotations

import re
import shutil

import pytest
from helpers import sh

from osfl import discover
from osfl.reporting import book

needs_pdflatex = pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed: apt-get "
                                    "install texlive-latex-base texlive-latex-recommended")

TABLE = r"""\begin{table}
\caption{made up}
\begin{tabular}{lrrr}
\toprule
 & MNIST & Fashion & SVHN \\
Method &  &  &  \\
\midrule
FedAvg & --- / 81.89 ($\Delta$---) & 69.79 / 75.76 ($\Delta$-5.97) & --- / 65.50 ($\Delta$---) \\
Ours (variant) & --- & 10.00 / --- & --- \\
\bottomrule
\end{tabular}
\par\smallskip
{\footnotesize notes\par}
\end{table}
"""


def test_columns_without_a_number_of_ours_are_left_out_and_named():
    out = book.drop_unrun_columns(TABLE)
    assert r"\begin{tabular}{lr}" in out
    assert "FedAvg & 69.79 / 75.76 ($\\Delta$-5.97) \\\\" in out and "Ours (variant) & 10.00 / --- \\\\" in out
    assert " & Fashion \\\\" in out and "MNIST &" not in out
    assert "columns without a number of ours are left out: MNIST, SVHN." in out
    assert out.index("left out") < out.index("footnotesize notes")  # after the tabular, before the own notes
    # a table with no number of ours at all is not drawn (its state is listed instead)
    assert book.drop_unrun_columns(TABLE.replace("69.79 / 75.76", "--- / 75.76").replace("10.00 /", "--- /")) is None
    # rows of unequal length (a multicolumn, say) are left as they are
    odd = TABLE.replace("Ours (variant) & --- & 10.00 / --- & --- \\\\", "Ours (variant) & --- \\\\")
    assert book.drop_unrun_columns(odd) == odd


def test_claims_not_run_are_counted_not_listed(tmp_path):
    claims = [{"artifact": "table01", "claim": "A is best", "verdict": "holds", "evidence": "-"},
              {"artifact": "table03", "claim": "B is best", "verdict": "not run", "evidence": "-"},
              {"artifact": "", "claim": "C", "verdict": "not judged", "evidence": "-", "reason": "one seed, no spread"}]
    paper = book.Paper("fedhydra", tmp_path, "FedHydra: x", claims=claims)
    text = "\n".join(book.summary_section([paper]))
    assert "FedHydra & 1 & 0 & 0 & 1 & 1 & 0 & 0 & 0 & 3" in text
    assert "A is best [table01]" in text and "B is best" not in text and "1 claim(s) not run (table03)" in text


def test_a_paper_not_rendered_fails_naming_the_command(tmp_path):
    (tmp_path / "fedmho" / "reports").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=r"status.json: not rendered; run `make fedmho`"):
        book.load_paper(tmp_path / "fedmho")


@pytest.mark.slow  # the whole report compiled by pdflatex (10-20 s)
@needs_pdflatex
def test_the_committed_reports_compile_into_one_pdf(tmp_path, repo_root):
    pdf = book.build_pdf(tmp_path / "r.pdf", repo_root / "papers", keep_tex=True)
    assert pdf.read_bytes().startswith(b"%PDF")
    tex = (tmp_path / "r.tex").read_text(encoding="utf-8")
    for key in discover.papers(repo_root / "papers"):
        name = discover.display_name(repo_root / "papers" / key)
        assert re.search(r"\\section\{" + re.escape(name), tex), name
    assert tex.count(r"\begin{table}[H]") >= 10 and tex.count(r"\includegraphics") >= 10
    assert book.build_pdf(tmp_path / "again.pdf", repo_root / "papers").read_bytes() == pdf.read_bytes()


@pytest.mark.slow  # a fresh clone, and the whole report compiled there by `dvc repro` (about 10 s)
@needs_pdflatex
def test_make_report_on_a_fresh_clone_runs_only_the_book(tmp_path, repo_root):
    """`make report` is `dvc repro` in report/: on a fresh clone of the committed tree it runs the book stage alone
    (every input is git-tracked) and writes the PDF whose hash dvc.lock records."""
    clone = tmp_path / "clone"
    sh("git", "clone", "-q", str(repo_root), str(clone), cwd=tmp_path)
    out = sh("dvc", "repro", cwd=clone / "report").stdout
    assert re.findall(r"Running stage '([^']+)'", out) == ["book"], out
    assert (clone / "report" / "osfl-report.pdf").read_bytes().startswith(b"%PDF")
    assert sh("git", "status", "--porcelain", cwd=clone).stdout.strip() == ""  # the same bytes as the lock says


def test_the_benchmark_section_shows_its_table_or_says_it_has_not_run(tmp_path):
    bench = tmp_path / "benchmark"
    assert "No run of papers/benchmark/ yet" in "\n".join(book.benchmark_section(bench, tmp_path))
    (bench / "reports").mkdir(parents=True)
    (bench / "reports" / "table.tex").write_text(TABLE)
    (bench / "reports" / "discussion.txt").write_text("Dir(0.5): ours a > b.\n")
    text = "\n".join(book.benchmark_section(bench, tmp_path))
    assert r"\begin{tabular}{lr}" in text and r"\item Dir(0.5): ours a > b." in text
    assert text.count(r"\begin{tabular}") == 1
    (bench / "reports" / "nclients.tex").write_text(TABLE)  # the client-number sweep's table, when it ran
    assert "\n".join(book.benchmark_section(bench, tmp_path)).count(r"\begin{tabular}") == 2


def test_the_first_section_draws_each_papers_cells_against_the_paper(tmp_path):
    """Issue 74: the report opens with ours against the paper's, one panel per paper with cells (cells.json); a
    paper with none gets no empty panel but is named in the caption."""
    import json

    papers = []
    for key, cells in (("hfldd", [{"artifact": "table4", "dataset": "mnist", "row": "C = 10", "column": "K = 5",
                                   "profile": "cpu", "ours": 96.5, "std": None, "n": 1, "paper": 98.5},
                                  {"artifact": "table4", "dataset": "mnist", "row": "C = 2", "column": "K = 5",
                                   "profile": "cpu", "ours": 80.0, "std": 2.0, "n": 3, "paper": 98.3}]),
                       ("ofeded", [])):
        folder = tmp_path / key
        (folder / "reports").mkdir(parents=True)
        (folder / "reports" / "cells.json").write_text(json.dumps(cells))
        papers.append(book.Paper(key, folder, {"hfldd": "HFLDD", "ofeded": "OFedED"}[key]))
    build = tmp_path / "build"
    build.mkdir()
    lines = book.closeness_section(papers, build)
    text = "\n".join(lines)
    assert (build / "closeness.png").is_file() and "closeness-fig.pdf" in text
    assert "No cell beside a paper number: OFedED." in text
    doc = book.document(papers, build)
    assert doc.index("How close we are") < doc.index("Summary of claim verdicts")


def test_each_summary_line_says_n_the_difference_and_the_spread():
    """Issue 72: the PDF's verdict lines say on how many seeds, with what difference and spread, a verdict rests."""
    one = "A 70.00 ± 1.00 (n=3) vs B 60.00 ± 1.00 (n=3); seeds 0, 1, 2 (n = 3): difference +10.00, spread 1.00 (larger"
    assert book.basis_of(one) == "n = 3, difference +10.00, spread 1.00"
    several = ("a: holds (x; seeds 0, 1, 2 (n = 3): difference +10.00, spread 1.00); b: within spread (y; seeds 0, 1, 2 "
               "(n = 3): difference +0.50, spread 1.00); c: not judged (n = 1) (z; seed 0 (n = 1): difference -2.00, "
               "no spread)")
    assert book.basis_of(several) == "n = 1-3, difference +0.50, spread 1.00 (closest of several)"
    assert book.basis_of("all three to two decimals") == ""
    paper = book.Paper("hfldd", None, "HFLDD", claims=[{"artifact": "", "claim": "C", "verdict": "holds",
                                                         "evidence": one}])
    assert book.basis_parts(several) == ("1-3", "+0.50", "1.00", True)
    # a decided claim rests on its comparisons on n >= 3 seeds: the others are not judged and change nothing
    assert book.basis_parts(several, decided=True) == ("3", "+0.50", "1.00", True)
    # the summary is one table per paper: claim, verdict, n, difference, spread
    assert "C & \\textbf{holds} & 3 & +10.00 & 1.00 \\\\" in "\n".join(book.summary_section([paper]))


def test_the_opening_pages_carry_the_peer_summary(tmp_path, repo_root):
    """Issue 74: the PDF's opening pages: ours against the paper, the verdicts, then ours against the authors' code
    (one row per peer record, with the finding and the speed)."""
    from osfl.reporting.closeness import peers_section

    peers = repo_root / "benchmarks" / "peers"
    lines = peers_section(peers / "records", peers / "findings.yaml")
    text = "\n".join(lines)
    assert "Ours against the authors' code" in text and "longtable" in text
    assert "OT fusion (ot)" in text and "F36" in text  # a row and the finding that explains it
    assert peers_section(tmp_path / "none", tmp_path / "none.yaml") == []
