"""The report's first figure (:func:`osfl.reporting.book.closeness_section`): every cell of ours beside a paper's
number, ours against the paper's, one panel per paper."""
from __future__ import annotations

from pathlib import Path

from .figures import PROFILE_MARKERS, _panel_grid, _plain, _small_axes, _style, save_figure

__all__ = ["ours_vs_paper"]


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
