"""The report's opening pages (osfl.reporting.book, issue 74): the first figure, every cell of ours beside a paper's
number, ours against the paper's, one panel per paper (:func:`ours_vs_paper`); and the summary of our methods
against their authors' code, from benchmarks/peers/ (:func:`peers_section`)."""
from __future__ import annotations

from pathlib import Path

from .peers import SUMMARY_HEADER, load, summary_rows
from .tables import escape_latex
from .figures import PROFILE_MARKERS, _panel_grid, _plain, _small_axes, _style, save_figure

__all__ = ["ours_vs_paper", "peers_section"]


def ours_vs_paper(panels: dict[str, list[dict]], out_stem: Path, *, band: float = 3.0) -> list[Path]:
    """How close we are to each paper: one axes per paper (``panels``: title -> its cells, the ``cells.json``
    records of :func:`osfl.reporting.runs.cell`), x = the paper's number, y = ours (mean, error bar = the seeds'
    sample std where n > 1), the diagonal and a ±``band``-point band drawn, colour = dataset, marker = profile.
    Only papers with at least one cell get a panel."""
    panels = {k: v for k, v in panels.items() if v}
    datasets = sorted({c["dataset"] for cells in panels.values() for c in cells})
    colours = {ds: f"C{i}" for i, ds in enumerate(datasets)}
    with _style():
        fig, axes = _panel_grid(len(panels))
        for ax, (title, cells) in zip(axes, panels.items()):
            values = [v for c in cells for v in (c["paper"], c["ours"])]
            lo, hi = max(0.0, min(values) - 5), min(100.0, max(values) + 5)
            ax.fill_between([lo, hi], [lo - band, hi - band], [lo + band, hi + band], color="0.9", lw=0)
            ax.plot([lo, hi], [lo, hi], color="0.4", lw=0.8)
            seen = set()
            for c in cells:
                key = (c["dataset"], c["profile"])
                ax.errorbar(c["paper"], c["ours"], yerr=c["std"] or 0.0, fmt=PROFILE_MARKERS.get(c["profile"], "o"),
                            ms=4, color=colours[c["dataset"]], elinewidth=0.8, capsize=1.5,
                            label=None if key in seen else f"{c['dataset']}, {c['profile']}")
                seen.add(key)
            within = sum(abs(c["ours"] - c["paper"]) <= band for c in cells)
            ax.set_title(_plain(f"{title}: {within} of {len(cells)} within ±{band:g}"), fontsize=9)
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
            ax.set_aspect("equal")
            _small_axes(ax, "paper (%)", "ours (%)")
            ax.legend(fontsize=6, loc="upper left")
        return save_figure(fig, out_stem)


def peers_section(records: Path, findings: Path) -> list[str]:
    """LaTeX lines: one row per peer record (reports/peers.md's summary table: ours against the official code as
    released, the spread verdict, the finding that explains a difference, and the speed ratio); [] where no record
    exists."""
    runs, _, explained = load(records, findings)
    rows = summary_rows(runs, explained)
    if not rows:
        return []
    keep = [0, 2, 3, 4, 5, 6, 7]  # record, official, ours, difference, result, finding, speed (metric and commit aside)
    head = [SUMMARY_HEADER[i] for i in keep[:-1]] + ["speed (official s / ours)"]
    return [r"\section*{Ours against the authors' code}",
            r"\addcontentsline{toc}{section}{Ours against the authors' code}",
            escape_latex("Each row runs the authors' released code beside ours on the same inputs (3 seeds; details, "
                         "shims and every difference found: reports/peers.md). Speed: official seconds / ours on the "
                         "same work, one thread."),
            r"{\footnotesize\begin{longtable}{>{\raggedright\arraybackslash}p{3.6cm}lllp{1.7cm}l"
            r">{\raggedright\arraybackslash}p{2.3cm}}", r"\toprule",
            " & ".join(escape_latex(h) for h in head) + r" \\", r"\midrule", r"\endhead",
            *[" & ".join(escape_latex(str(r[i])) for i in keep) + r" \\" for r in rows],
            r"\bottomrule", r"\end{longtable}}"]
