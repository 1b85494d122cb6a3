"""Result figures with matplotlib, each written as ``<stem>.png`` (150 dpi) and ``<stem>.pdf``.

Drawn on a bare :class:`matplotlib.figure.Figure`, never through ``pyplot`` (no global backend or figure state),
under matplotlib's default style (a user's ``matplotlibrc`` changes nothing), with no timestamps or software tags in
the metadata: the same matplotlib version gives byte-identical files."""
from __future__ import annotations

import contextlib
import math
from pathlib import Path

import matplotlib
import matplotlib.style
from matplotlib.figure import Figure

from .figure_checks import colliding_ticks, outside_texts, untangle_ticks  # noqa: F401 (re-exported)

__all__ = ["PNG_DPI", "bar_chart", "bubble_panels", "curve_panels", "curves", "grouped_bar_panels", "heatmap", "image_rows",
           "colliding_ticks", "drop_figure", "outside_texts", "save_figure"]

PNG_DPI = 150

# Metadata keys set to None are not written, so the files carry no date or version stamp.
_PNG_METADATA = {"Software": None}
_PDF_METADATA = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}


@contextlib.contextmanager
def _style():
    """matplotlib's default style, plus fixed choices that affect the file bytes."""
    with matplotlib.style.context("default"), matplotlib.rc_context({"pdf.fonttype": 42}):
        yield


def save_figure(fig: Figure, out_stem: Path) -> list[Path]:
    """Write ``fig`` as ``<out_stem>.png`` and ``<out_stem>.pdf`` (parent folders created), cut to its tight bounding
    box: every title, label and legend inside, nothing clipped, and x tick labels that would collide rotated
    (issue 74)."""
    untangle_ticks(fig)
    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    png = out_stem.with_name(out_stem.name + ".png")
    pdf = out_stem.with_name(out_stem.name + ".pdf")
    fig.savefig(png, format="png", dpi=PNG_DPI, metadata=_PNG_METADATA, bbox_inches="tight", pad_inches=0.05)
    fig.savefig(pdf, format="pdf", metadata=_PDF_METADATA, bbox_inches="tight", pad_inches=0.05)
    return [png, pdf]


def _plain(text) -> str:
    """``text`` shown literally: a ``$`` would otherwise start matplotlib mathtext."""
    return str(text).replace("$", r"\$")


def _finite(value) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def bar_chart(
    values: dict[str, float],
    out_stem: Path,
    *,
    ylabel: str = "Top-1 test accuracy (%)",
    title: str = "",
    errors: dict[str, float] | None = None,
    reference: dict[str, float] | None = None,
) -> list[Path]:
    """One bar per method (in ``values``' order) with its value written above the bar.

    Args:
        values: method -> number; a missing (NaN/None) value gets no bar and the label ``n/a``.
        errors: method -> error-bar half-width (e.g. the std over seeds); methods left out get none.
        reference: method -> the paper's number. When given, every method gets a second, hollow
            hatched bar ("paper") beside its own ("ours"), with its value written above it; methods
            without a paper number get no second bar. Keys that are not in ``values`` are ignored.

    Returns the PNG and PDF paths.
    """
    if not values:
        raise ValueError("bar_chart: no values to plot")
    keys = list(values)
    names = [_plain(k) for k in keys]
    ours = [float(values[k]) if _finite(values[k]) else None for k in keys]
    errors = errors or {}
    yerr = [float(errors[k]) if k in errors and _finite(errors[k]) else 0.0 for k in keys]
    reference = reference or {}
    paper = [float(reference[k]) if k in reference and _finite(reference[k]) else None for k in keys]
    paired = any(p is not None for p in paper)

    with _style():
        long_names = len(names) > 4 or max(len(n) for n in names) > 10
        width = 0.4 if paired else 0.7
        fig = Figure(figsize=(max(4.0, (1.2 if paired else 0.9) * len(names) + 1.5), 3.8), layout="constrained")
        ax = fig.add_subplot()
        xs = list(range(len(names)))
        x_ours = [x - width / 2 if paired else x for x in xs]
        heights = [v if v is not None else 0.0 for v in ours]
        ax.bar(
            x_ours,
            heights,
            width=width,
            yerr=yerr if any(yerr) else None,
            capsize=3 if any(yerr) else 0,
            color="C0",
            label="ours" if paired else None,
        )
        tops = []
        for x, v, e in zip(x_ours, ours, yerr):
            y = (v or 0.0) + e
            tops.append(y)
            text = f"{v:.2f}" if v is not None else "n/a"
            ax.annotate(text, (x, y), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom", fontsize=7)
        if paired:
            x_paper = [x + width / 2 for x in xs]
            px = [x for x, p in zip(x_paper, paper) if p is not None]
            py = [p for p in paper if p is not None]
            ax.bar(px, py, width=width, facecolor="none", edgecolor="C3", hatch="///", linewidth=1.2, label="paper")
            for x, p in zip(px, py):
                tops.append(p)
                ax.annotate(
                    f"{p:.2f}", (x, p), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=7, color="C3",
                )
            ax.legend(loc="upper left", ncols=2, fontsize=8, frameon=False)
        ax.set_xticks(xs, names, rotation=30 if long_names else 0, ha="right" if long_names else "center",
                      rotation_mode="anchor" if long_names else "default")
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        top = max(tops + [0.0])
        ax.set_ylim(0, top * (1.22 if paired else 1.1) if top > 0 else 1.0)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        return save_figure(fig, out_stem)


def curves(
    series: dict[str, tuple[list[float], list[float]]],
    out_stem: Path,
    *,
    xlabel: str = "Distillation epoch",
    ylabel: str = "Top-1 test accuracy (%)",
    title: str = "",
    hlines: dict[str, float] | None = None,
) -> list[Path]:
    """One line per method from ``(x, y)`` pairs; ``hlines`` adds dashed constant references.

    Args:
        series: method -> (x values, y values) of equal length.
        hlines: name -> constant (e.g. FedAvg, the teacher ensemble), drawn as a dashed horizontal
            line across the axes and named in the legend.

    Returns the PNG and PDF paths.
    """
    if not series and not hlines:
        raise ValueError("curves: nothing to plot")
    with _style():
        fig = Figure(figsize=(5.5, 3.6), layout="constrained")
        ax = fig.add_subplot()
        for i, (name, (x, y)) in enumerate(series.items()):
            x, y = list(x), list(y)
            if len(x) != len(y):
                raise ValueError(f"curves: series {name!r} has {len(x)} x values and {len(y)} y values")
            ax.plot(x, y, color=f"C{i % 10}", marker="o" if len(x) <= 30 else None, markersize=3, label=_plain(name))
        linestyles = ["--", "-.", ":", (0, (5, 2, 1, 2))]
        for j, (name, level) in enumerate((hlines or {}).items()):
            if not _finite(level):
                continue
            ax.axhline(
                float(level),
                color="0.35" if j == 0 else f"C{(len(series) + j) % 10}",
                linestyle=linestyles[j % len(linestyles)],
                linewidth=1.2,
                label=f"{_plain(name)} ({float(level):.2f})",
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        return save_figure(fig, out_stem)


def _panel_grid(n: int):
    """A figure with ``n`` axes in rows of up to 4 (unused cells hidden)."""
    n = max(1, n)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(3.4 * cols, 2.9 * rows + 0.4), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes


def drop_figure(out_stem: Path) -> list[Path]:
    """Nothing to draw: a figure of an earlier render under ``out_stem`` is removed (the report reads a missing file
    as "not run") and nothing is written."""
    for ext in (".png", ".pdf"):
        Path(out_stem).with_name(Path(out_stem).name + ext).unlink(missing_ok=True)
    return []


def _draw_panels(panels: dict, out_stem: Path, draw, *, suptitle: str, missing: str) -> list[Path]:
    """The shared frame of the panel figures: one titled axes per panel with content (rows of up to 4),
    ``draw(ax, content)``; the panels whose content is None are not drawn but named in one line under the figure
    (``missing``: why, e.g. "not run"). No panel with content: nothing is written (:func:`drop_figure`)."""
    ran = {k: v for k, v in panels.items() if v is not None}
    if not ran:
        return drop_figure(out_stem)
    with _style():
        fig, axes = _panel_grid(len(ran))
        for ax, (title, content) in zip(axes, ran.items()):
            ax.set_title(_plain(title), fontsize=9)
            draw(ax, content)
        if suptitle:
            fig.suptitle(_plain(suptitle), fontsize=9)
        if len(ran) < len(panels):
            fig.supxlabel(_plain(f"{missing}: " + "; ".join(k for k in panels if k not in ran)), fontsize=7,
                          color="0.4")
        return save_figure(fig, out_stem)


def _small_axes(ax, xlabel: str, ylabel: str) -> None:
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)


def curve_panels(
    panels: dict[str, tuple[dict[str, tuple[list[float], list[float]]], dict[str, float]] | None],
    out_stem: Path,
    *,
    suptitle: str = "",
    xlabel: str = "Distillation epoch",
    ylabel: str = "Top-1 test accuracy (%)",
    missing: str = "not run",
) -> list[Path]:
    """One axes per panel (a row of up to 4, then wrapping): ``panel title -> (series, hlines)`` as in
    :func:`curves`; a panel that is None shows ``missing`` (e.g. a dataset the pipeline did not run)."""

    def draw(ax, content):
        series, hlines = content
        for i, (name, (x, y)) in enumerate(series.items()):
            ax.plot(list(x), list(y), color=f"C{i % 10}", linewidth=1.2, label=_plain(name))
        styles = ["--", "-.", ":", (0, (5, 2, 1, 2))]
        for j, (name, level) in enumerate((hlines or {}).items()):
            if _finite(level):
                ax.axhline(float(level), color=f"C{(len(series) + j) % 10}", linestyle=styles[j % 4],
                           linewidth=1.0, label=_plain(name))
        _small_axes(ax, xlabel, ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="best")

    return _draw_panels(panels, out_stem, draw, suptitle=suptitle, missing=missing)


def grouped_bar_panels(
    panels: dict[str, dict[str, dict[str, float]] | None],
    out_stem: Path,
    *,
    suptitle: str = "",
    ylabel: str = "Top-1 test accuracy (%)",
    missing: str = "not run",
) -> list[Path]:
    """Per panel, groups on the x axis (``group -> {series -> value}``), one bar per series; NaN bars are
    left out. A panel that is None shows ``missing``."""

    def draw(ax, groups):
        names = list(dict.fromkeys(s for g in groups.values() for s in g))
        width = 0.8 / max(1, len(names))
        for i, s in enumerate(names):
            xs = [gi + (i - (len(names) - 1) / 2) * width for gi, g in enumerate(groups.values())
                  if _finite(g.get(s))]
            ys = [float(g[s]) for g in groups.values() if _finite(g.get(s))]
            ax.bar(xs, ys, width=width, color=f"C{i % 10}", label=_plain(s))
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([_plain(g) for g in groups], fontsize=7)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=6)

    return _draw_panels(panels, out_stem, draw, suptitle=suptitle, missing=missing)


def heatmap(matrix, out_stem: Path, *, xlabels, ylabels, xlabel: str, ylabel: str, title: str = "") -> list[Path]:
    """A matrix as coloured cells with each value written in its cell (2 decimals)."""
    import numpy as np

    m = np.asarray(matrix, dtype=float)
    with _style():
        fig = Figure(figsize=(0.9 * m.shape[1] + 2.2, 0.42 * m.shape[0] + 1.4), layout="constrained")
        ax = fig.add_subplot()
        im = ax.imshow(m, cmap="Blues", vmin=0.0, vmax=max(1.0, float(np.nanmax(m)) if m.size else 1.0),
                       aspect="auto")
        for (i, j), v in np.ndenumerate(m):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if v > 0.6 else "black")
        ax.set_xticks(range(m.shape[1]))
        ax.set_xticklabels([_plain(x) for x in xlabels], fontsize=8)
        ax.set_yticks(range(m.shape[0]))
        ax.set_yticklabels([_plain(y) for y in ylabels], fontsize=8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(_plain(title), fontsize=9)
        fig.colorbar(im, ax=ax, shrink=0.8)
        return save_figure(fig, out_stem)


def image_rows(rows: dict[str, list], out_stem: Path, *, title: str = "", missing: str = "not run") -> list[Path]:
    """One row of images per entry (``label -> list of uint8 arrays (C, H, W)``); an empty row shows ``missing``;
    every row empty: nothing is written (:func:`drop_figure`)."""
    import numpy as np

    if not any(len(v) for v in rows.values()):
        return drop_figure(out_stem)

    ncols = max([len(v) for v in rows.values()] + [1])
    with _style():
        fig = Figure(figsize=(0.9 * ncols + 1.6, 1.0 * len(rows) + 0.5), layout="constrained")
        axes = fig.subplots(len(rows), ncols, squeeze=False)
        for r, (label, images) in enumerate(rows.items()):
            for c in range(ncols):
                ax = axes[r, c]
                ax.set_xticks([])
                ax.set_yticks([])
                if c < len(images):
                    img = np.asarray(images[c], dtype=np.uint8)
                    if img.shape[0] == 1:
                        ax.imshow(img[0], cmap="gray", vmin=0, vmax=255)
                    else:
                        ax.imshow(img.transpose(1, 2, 0))
                else:
                    for side in ax.spines.values():
                        side.set_visible(False)
                    if c == 0 and not images:
                        ax.text(0, 0.5, missing, fontsize=7, color="0.4", transform=ax.transAxes)
            axes[r, 0].set_ylabel(_plain(label), rotation=0, ha="right", va="center", fontsize=8)
        if title:
            fig.suptitle(_plain(title), fontsize=9)
        return save_figure(fig, out_stem)


def bubble_panels(panels: dict, out_stem: Path, *, suptitle: str = "", missing: str = "not run") -> list[Path]:
    """Per panel a client x class bubble plot (FedHydra Fig. 9 style): ``title -> counts (clients, classes)``,
    circle area proportional to the samples, one colour per class; a panel that is None shows ``missing``."""
    import numpy as np

    def draw(ax, counts):
        c = np.asarray(counts, dtype=float)
        m, k = c.shape
        cl, kk = np.nonzero(c > 0)
        area = c[cl, kk] / max(c.max(), 1.0) * 400.0
        ax.scatter(cl + 1, kk, s=area, c=[f"C{i % 10}" for i in kk], alpha=0.7, edgecolors="none")
        ax.set_xlim(0.3, m + 0.7)
        ax.set_ylim(-0.7, k - 0.3)
        ax.set_xticks(range(1, m + 1))
        ax.set_yticks(range(k))
        _small_axes(ax, "client ID", "class label")

    return _draw_panels(panels, out_stem, draw, suptitle=suptitle, missing=missing)


#: marker per profile in :func:`ours_vs_paper` (a profile not listed: "o")
PROFILE_MARKERS = {"cpu": "o", "quick": "s", "paper": "^", "smoke": "x"}
