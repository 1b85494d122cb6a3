"""One PDF of every paper's report (``make report``): a title page, the summary of claim verdicts, the cross-paper
benchmark (papers/benchmark/), then each paper's tables and figures beside the published numbers, as its ``render``
stage wrote them.

It reads only what the papers' render stages committed under ``papers/<paper>/reports/`` (the LaTeX tables, the
figure PDFs, ``status.json``, ``claims.json``), their ``published/artifacts.yaml`` and each pipeline's ``dvc.lock``
(the provenance section: which committed runs were not computed from one another, osfl.provenance.lineage), so a
fresh clone builds it without computing a run. The tables' captions already state profile, precision, seeds and
guards; an artifact that has not run is listed with its state. Compiled with plain ``pdflatex`` (twice, for the
contents); the PDF's dates come from ``SOURCE_DATE_EPOCH`` (0 unless set), so the same reports give the same bytes.

    python -m osfl.stages.book --out report/osfl-report.pdf [--papers papers] [--keep-tex]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..discover import display_name, papers as discovered_papers
from ..provenance.lineage import AGREE, check as lineage
from .published import load_artifacts
from .runs import NOT_DRAWN
from .settings import read as read_settings
from .layout import Notes, drop_unrun_columns, drop_unrun_rows, figure_width, fit_table, short_caption
from .spread import DOES_NOT_HOLD, HOLDS, MIN_SEEDS, NOT_RUN, NOT_TESTABLE, VERDICTS, WITHIN, count_verdicts, verdict_label
from .tables import escape_latex

PREAMBLE = r"""\documentclass[10pt,a4paper]{article}
\usepackage[utf8]{inputenc}
\usepackage[T1]{fontenc}
\usepackage[margin=18mm]{geometry}
\usepackage{booktabs}
\usepackage{longtable}
\usepackage{array}
\usepackage{graphicx}
\usepackage{float}
\usepackage[hidelinks]{hyperref}
\setcounter{tocdepth}{1}
\newsavebox{\fitbox}
% a tabular wider than the line is scaled down to it, never below 0.7 (7-pt type: osfl.reporting.layout splits a
% wider one into column groups first); a narrower one stays as it is
\newcommand{\fitwidth}[1]{\sbox{\fitbox}{#1}\ifdim0.7\wd\fitbox>\linewidth\makebox[\linewidth]{\scalebox{0.7}{\usebox{\fitbox}}}%
\else\ifdim\wd\fitbox>\linewidth\resizebox{\linewidth}{!}{\usebox{\fitbox}}\else\usebox{\fitbox}\fi\fi}
"""


@dataclass
class Paper:
    """What the report shows of one paper: its title, artifacts (in the paper's order), their state and the claim
    verdicts (claims.json records, :meth:`osfl.reporting.spread.Verdict.record`)."""
    key: str
    folder: Path
    title: str
    artifacts: list = field(default_factory=list)
    status: dict = field(default_factory=dict)
    claims: list = field(default_factory=list)

    @property
    def name(self) -> str:
        """The paper's short name: its title's part before ":" (:func:`_title` puts it there), else its key."""
        return self.title.split(":", 1)[0].strip() or self.key


def _title(folder: Path) -> str:
    """``<name>: <the paper's title>`` (the title as artifacts.yaml gives it)."""
    meta = yaml.safe_load((folder / "published" / "artifacts.yaml").read_text(encoding="utf-8")).get("paper")
    title = str((meta.get("title") or meta.get("name")) if isinstance(meta, dict) else meta or "").strip()
    name = display_name(folder)
    return title if title.startswith(name) else f"{name}: {title}" if title else name


def _json(path: Path, default):
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else default


def load_paper(folder: Path) -> Paper:
    """A paper's rendered reports; a paper whose render has not written ``status.json`` fails naming the command."""
    reports = folder / "reports"
    if not (reports / "status.json").is_file():
        raise FileNotFoundError(f"{reports / 'status.json'}: not rendered; run `make {folder.name}` (or "
                                f"`cd {folder} && dvc repro -s render`)")
    return Paper(folder.name, folder, _title(folder), load_artifacts(folder / "published"),
                 _json(reports / "status.json", {}), _json(reports / "claims.json", []))


def _table(tex: str, notes: Notes | None = None, user: str = "") -> str | None:
    """A rendered table as the report places it: columns and rows without a number of ours left out
    (:func:`.layout.drop_unrun_columns`, :func:`.layout.drop_unrun_rows`; None: nothing of ours), set at 7 pt or
    more with a caption of at most three lines (:func:`.layout.fit_table`), kept where it stands; with ``notes``, its long settings note moved to the section's
    end under ``user`` (:class:`.layout.Notes`)."""
    body = drop_unrun_columns(tex)
    body = drop_unrun_rows(body) if body is not None else None
    if body is None:
        return None
    body = fit_table(body).replace(r"\begin{table}", r"\begin{table}[H]")
    return notes.move(body, user) if notes is not None else body


def _figure(pdf: Path, local: Path, caption: str, height: str) -> list[str]:
    """``pdf`` copied into the build folder as ``local`` and placed where it stands, at most ``height`` of the text
    height, with ``caption`` (plain text)."""
    shutil.copyfile(pdf, local)
    lead, rest = short_caption(escape_latex(caption))
    return [r"\begin{figure}[H]", r"\centering",
            rf"\includegraphics[width={figure_width(local)},height={height}\textheight,keepaspectratio]"
            rf"{{{local.name}}}",
            r"\caption{" + lead + "}"] + ([r"{\footnotesize " + rest + r"\par}"] if rest else []) + [r"\end{figure}"]


def closeness_section(papers: list[Paper], build: Path) -> list[str]:
    """The first question, first: how close we are to each paper, and where. One panel per paper with a cell of
    ours beside a paper number (``reports/cells.json``), ours against the paper's; the papers with none are named."""
    from .closeness import ours_vs_paper

    cells = {p.name: _json(p.folder / "reports" / "cells.json", []) for p in papers}
    drawn = {k: v for k, v in cells.items() if v}
    lines = [r"\section*{How close we are to each paper}", r"\addcontentsline{toc}{section}{How close we are}"]
    if not drawn:
        return lines + [escape_latex("No cell of ours sits beside a paper number yet.")]
    ours_vs_paper(drawn, build / "closeness")
    none = [k for k, v in cells.items() if not v]
    caption = ("Every cell of ours beside the paper's number: x the paper's, y ours (mean; bar: the seeds' std), "
               "the diagonal and a ±3-point band; colour = our dataset, marker = profile."
               + (f" No cell beside a paper number: {', '.join(none)}." if none else ""))
    return lines + _figure(build / "closeness.pdf", build / "closeness-fig.pdf", caption, "0.5")


_BASIS = re.compile(r"\(n = (\d+)\)(?:: difference ([+-]\d+(?:\.\d+)?), (spread \d+(?:\.\d+)?|no spread))?")


def basis_parts(evidence: str, decided: bool = False) -> tuple[str, str, str, bool]:
    """(n, difference, spread, of several) from a claim's evidence (its comparisons' bases,
    :meth:`osfl.reporting.spread.Verdict.text`): ``("3", "+2.00", "1.00", False)``; several comparisons: the range of
    n ("1-3") and the one closest to the decision (the smallest |difference| - spread), ``True``. Empty strings where
    the evidence names no seed count (or no difference). ``decided`` (a claim that holds, does not hold or is within
    spread): only the comparisons on n >= 3 seeds, the ones that decided it (a claim over several columns is decided
    by those; the columns with fewer seeds are not judged and its evidence still lists them)."""
    found = _BASIS.findall(evidence or "")
    if decided:
        found = [f for f in found if int(f[0]) >= MIN_SEEDS] or found
    if not found:
        return "", "", "", False
    ns = sorted({int(n) for n, _, _ in found})
    n_text = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    judged = [(abs(float(d)) - (float(s.split()[1]) if s.startswith("spread") else 0.0), d, s)
              for _, d, s in found if d]
    if not judged:
        return n_text, "", "", False
    _, d, s = min(judged)
    return n_text, d, s.removeprefix("spread "), len(judged) > 1


def basis_of(evidence: str) -> str:
    """``"n = 3, difference +2.00, spread 1.00"`` from a claim's evidence (:func:`basis_parts`; several comparisons:
    "(closest of several)" after it). "" when the evidence names no seed count."""
    n, d, s, several = basis_parts(evidence)
    if not n:
        return ""
    if not d:
        return f"n = {n}"
    return f"n = {n}, difference {d}, " + (s if s == "no spread" else f"spread {s}") + (
        " (closest of several)" if several else "")


def summary_section(papers: list[Paper]) -> list[str]:
    """The claim verdicts per paper (counts), then each claim with its verdict."""
    lines = [r"\section*{Summary of claim verdicts}", r"\addcontentsline{toc}{section}{Summary of claim verdicts}",
             "Each paper's claims, judged on our runs by the rule of its report: a comparison is decided only on "
             "n >= 3 seeds, by a difference beyond the larger of the two sides' sample std; with fewer seeds it is "
             "not judged (n = k); runs with degenerate inputs (at chance after epoch 0 or at the final epoch) or "
             "failed regime guards are not judged. Each row gives the seeds n, the difference and the spread of "
             "the comparisons it rests on.", "", r"\begin{center}\small",
             r"\fitwidth{\begin{tabular}{l" + "r" * (len(VERDICTS) + 1) + "}", r"\toprule",
             "Paper & " + " & ".join(v for v in VERDICTS) + r" & claims \\", r"\midrule"]
    for p in papers:
        c = count_verdicts(x["verdict"] for x in p.claims)
        counts = " & ".join(str(c[v.replace(" ", "_")]) for v in VERDICTS)
        lines.append(escape_latex(p.name) + f" & {counts} & {len(p.claims)}" + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}}", r"\end{center}"]
    lines.append(escape_latex("In the tables below, n is the number of common seeds, the difference is of the means "
                              "and the spread the larger sample std (or, for one seed, the epoch-to-epoch swing); * "
                              "marks the comparison closest to the decision among several."))
    for p in papers:
        lines += [r"\subsection*{" + escape_latex(p.title) + "}"]
        aside = [c for c in p.claims if c["verdict"] in (NOT_RUN, NOT_TESTABLE)]
        rows = []
        for c in (c for c in p.claims if c not in aside):
            where = f" [{c['artifact']}]" if c.get("artifact") else ""
            n, d, spread, several = basis_parts(c.get("evidence", ""), c["verdict"] in (HOLDS, DOES_NOT_HOLD, WITHIN))
            rows.append(" & ".join([escape_latex(f"{c['claim']}{where}"),
                                    r"\textbf{" + escape_latex(verdict_label(c["verdict"], c.get("reason"))) + "}",
                                    n, escape_latex(d + ("*" if several else "")), escape_latex(spread)]) + r" \\")
        if rows:
            lines += [r"{\small\begin{longtable}{>{\raggedright\arraybackslash}p{8.2cm}>{\raggedright\arraybackslash}p{3.2cm}lrr}", r"\toprule",
                      r"claim [artifact] & verdict & n & difference & spread \\", r"\midrule", r"\endhead",
                      *rows, r"\bottomrule", r"\end{longtable}}"]
        left = [escape_latex(f"{len(x)} claim(s) {kind} (" + ", ".join(
            sorted({c.get("artifact") or "the text" for c in x})) + ").")
            for kind in (NOT_RUN, NOT_TESTABLE) if (x := [c for c in aside if c["verdict"] == kind])]
        lines += left + ([] if p.claims else [escape_latex("No claim judged yet.")])
    return lines


def lineage_section(folders: list[Path]) -> list[str]:
    """Per pipeline, whether its committed runs were computed from one another (osfl.provenance.lineage, from its
    dvc.lock): the runs a verdict should not compare are named here."""
    lines = [r"\section*{Provenance of the committed runs}",
             r"\addcontentsline{toc}{section}{Provenance of the committed runs}",
             escape_latex("Read from each pipeline's dvc.lock (python -m osfl.provenance.lineage papers/<paper>): a "
                          "stage that ran on an upstream output other than the one committed now (the upstream stage "
                          "re-ran after it), params keys whose values differ between stages, and stages that ran "
                          "before a params key was one of their inputs. A verdict comparing such runs with the others "
                          "mixes settings: read it with this list."), r"\begin{itemize}"]
    for folder in folders:
        name = (display_name(folder) if (folder / "published" / "artifacts.yaml").is_file()
                else "cross-paper benchmark" if folder.name == "benchmark" else folder.name)
        found = lineage(folder)
        lines.append(r"\item \textbf{" + escape_latex(name) + "}: "
                     + escape_latex(f"{len(found)} mismatch(es)" if found else AGREE))
        if found:
            lines += [r"\begin{itemize}"] + [r"\item " + escape_latex(m.text()) for m in found] + [r"\end{itemize}"]
    return lines + [r"\end{itemize}"]


def _our_setting(reports: Path) -> str:
    """``"; profile cpu, datasets fmnist, mnist"``: our profile and datasets from the paper's settings table
    (:func:`.settings.read`), so that a figure's caption names ours before the paper's; "" where it has none."""
    rows = dict(read_settings(reports))
    datasets = next((part for part in rows.get("runs (params)", "").split("; ") if part.startswith("datasets ")), "")
    text = ", ".join(x for x in (f"profile {rows['profile']}" if rows.get("profile") else "", datasets) if x)
    return f"; {text}" if text else ""


def paper_section(p: Paper, build: Path) -> list[str]:
    """One paper: the state of every artifact, then its rendered tables and figures in the paper's order."""
    lines = [r"\clearpage", r"\section{" + escape_latex(p.title) + "}",
             escape_latex(f"Rendered from papers/{p.key}/reports/ (the render stage of papers/{p.key}/, from the "
                          "committed runs). State of each artifact of the paper:"), "",
             r"\begin{center}\small", r"\fitwidth{\begin{tabular}{llp{12cm}}", r"\toprule",
             r"artifact & paper & state \\", r"\midrule"]
    reports = p.folder / "reports"
    ids = {a.id for a in p.artifacts}
    # tables of ours with no artifact of their own (another profile or source, e.g. FedHydra's table01_cpu): their
    # state after the paper's artifacts, the tables after the paper's
    extra = [k for k in p.status if k not in ids and (reports / f"{k}.tex").is_file()]
    for a in p.artifacts:
        state = p.status.get(a.id, "not rendered (a schematic, or no rendering of ours)")
        lines.append(f"{escape_latex(a.id)} & {escape_latex(a.label)} & {escape_latex(state)}" + r" \\")
    lines += [f"{escape_latex(k)} & ours & {escape_latex(p.status[k])}" + r" \\" for k in extra]
    lines += [r"\bottomrule", r"\end{tabular}}", r"\end{center}"]
    notes = Notes()  # the tables' long settings notes, once each, at the section's end
    ours = _our_setting(reports)  # read once: every figure's caption names it
    for a in p.artifacts:
        tex, pdf = reports / f"{a.id}.tex", reports / f"{a.id}.pdf"
        if a.kind == "table" and tex.is_file():
            body = _table(tex.read_text(encoding="utf-8"), notes, escape_latex(a.id))
            if body is not None:
                lines.append(body)
        elif a.kind == "figure" and pdf.is_file() and not p.status.get(a.id, "not run").startswith(NOT_DRAWN):
            lines += _figure(pdf, build / f"{p.key}-{a.id}.pdf",
                             f"{a.label}, ours ({a.id}.pdf{ours}): {p.status[a.id]}. The paper's "
                             f"own setting, which ours may not share: {a.caption}", "0.6")
    for k in extra:
        body = _table((reports / f"{k}.tex").read_text(encoding="utf-8"), notes, escape_latex(k))
        if body is not None:
            lines.append(body)
    return lines + notes.section(escape_latex(f"Settings, seeds and machines of {p.name}'s tables"))


def benchmark_section(folder: Path, build: Path) -> list[str]:
    """The cross-paper benchmark (papers/benchmark/reports/): its table, its figure and the orderings beside the
    papers'; where it has not run, one line saying so."""
    reports = folder / "reports"
    status = _json(reports / "status.json", {})
    lines = [r"\section{Cross-paper benchmark}"]
    if not (reports / "table.tex").is_file():
        return lines + [escape_latex("No run of papers/benchmark/ yet (`cd papers/benchmark && dvc repro`): every "
                                     "one-shot method on the same partitions will come here.")]
    # one table and figure per dataset (table.tex, then table_<dataset>.tex), the client-number sweep, the figures
    tables = [reports / "table.tex"] + sorted(reports.glob("table_*.tex")) + [reports / "nclients.tex"]
    notes = Notes()
    lines += [_table(t.read_text(encoding="utf-8"), notes, escape_latex(t.stem)) or "" for t in tables if t.is_file()]
    for fig in [reports / "figure.pdf"] + sorted(reports.glob("figure_*.pdf")):
        if fig.is_file():
            lines += _figure(fig, build / f"benchmark-{fig.name}",
                             f"Accuracy against the server's seconds. {status.get(fig.stem, '')}", "0.45")
    order = [line for line in (reports / "discussion.txt").read_text(encoding="utf-8").splitlines() if line.strip()] \
        if (reports / "discussion.txt").is_file() else []
    if order:
        lines += [r"\paragraph{Orderings beside the papers'.} " + escape_latex(
            "The papers ran other client counts, models and epochs: their orders, not their numbers, are compared."),
            r"\begin{itemize}"] + [r"\item " + escape_latex(line.strip()) for line in order] + [r"\end{itemize}"]
    return lines + notes.section("Settings, seeds and machines of the benchmark's tables")


def settings_appendix(papers: list[Paper]) -> list[str]:
    """One table per paper of the settings behind its runs (profile, reductions with reasons, guards, input
    preparation, precision, the grid, the machines: ``reports/settings.json``, :mod:`.settings`)."""
    lines = [r"\clearpage", r"\section*{Appendix: the settings of each paper's runs}",
             r"\addcontentsline{toc}{section}{Appendix: the settings of each paper's runs}"]
    for p in papers:
        found = read_settings(p.folder / "reports")
        if not found:
            continue
        lines += [r"\subsection*{" + escape_latex(p.name) + "}", r"{\small", r"\begin{longtable}{p{3.6cm}p{13cm}}",
                  r"\toprule", r"setting & value \\", r"\midrule"]
        lines += [f"{escape_latex(k)} & {escape_latex(v)}" + r" \\" for k, v in found]
        lines += [r"\bottomrule", r"\end{longtable}}"]
    return lines


def document(papers: list[Paper], build: Path, benchmark: Path | None = None) -> str:
    folders = [p.folder for p in papers] + ([benchmark] if benchmark is not None else [])
    lines = [PREAMBLE, r"\title{osfl-repro: four one-shot federated learning papers, reproduced}",
             r"\author{Generated by \texttt{make report} from the committed runs}", r"\date{}",
             r"\begin{document}", r"\maketitle", r"\thispagestyle{empty}",
             escape_latex("Each paper's tables show our numbers beside the published ones (ours / paper (difference)); "
                          "the settings behind them (profile, its reductions and regime guards, input preparation, "
                          "precision, seeds, machines) are in one table per paper in the appendix, and long table "
                          "notes at the end of each section. Numbers come from the "
                          "runs committed with their dvc.lock entries; nothing here was computed for the report.")]
    # the first page answers the first question: how close we are to each paper (then the contents)
    lines += closeness_section(papers, build) + [r"\clearpage", r"\tableofcontents", r"\clearpage"]
    lines += summary_section(papers)
    root = folders[0].parent.parent if folders else None
    if root is not None and (root / "benchmarks" / "peers" / "records").is_dir():
        from .closeness import peers_section

        lines += peers_section(root / "benchmarks" / "peers" / "records", root / "benchmarks" / "peers" / "findings.yaml")
    lines += lineage_section(folders)
    if benchmark is not None:
        lines += [r"\clearpage"] + benchmark_section(benchmark, build)
    for p in papers:
        lines += paper_section(p, build)
    lines += settings_appendix(papers)
    lines.append(r"\end{document}")
    return "\n".join(lines) + "\n"


def build_pdf(out: Path, papers_root: Path, keep_tex: bool = False) -> Path:
    """Write the report's LaTeX into a scratch folder, compile it twice with pdflatex and move the PDF to ``out``."""
    if shutil.which("pdflatex") is None:
        raise RuntimeError("pdflatex is not installed: apt-get install texlive-latex-base texlive-latex-recommended")
    papers = [load_paper(papers_root / k) for k in discovered_papers(papers_root)]
    env = {**os.environ, "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH", "0"), "FORCE_SOURCE_DATE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        build = Path(tmp)
        bench = papers_root / "benchmark"
        (build / "report.tex").write_text(document(papers, build, bench if bench.is_dir() else None),
                                          encoding="utf-8")
        for _ in range(2):  # the second pass fills the contents
            proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report.tex"], cwd=build,
                                  capture_output=True, text=True, errors="replace", env=env, timeout=300)
            if proc.returncode != 0:
                raise RuntimeError("pdflatex failed on the report:\n" + proc.stdout[-3000:])
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(build / "report.pdf", out)
        if keep_tex:
            shutil.copyfile(build / "report.tex", out.with_suffix(".tex"))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the PDF to write")
    ap.add_argument("--papers", type=Path, default=Path("papers"), help="the folder holding papers/<paper>/")
    ap.add_argument("--keep-tex", action="store_true", help="also write the LaTeX source beside the PDF")
    args = ap.parse_args(argv)
    try:
        out = build_pdf(args.out, args.papers, args.keep_tex)
    except (FileNotFoundError, RuntimeError) as err:
        sys.exit(f"report: {err}")
    print(f"report: {out} ({out.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
