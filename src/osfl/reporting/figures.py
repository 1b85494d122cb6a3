"""Result figures with matplotlib, each written as ``<stem>.png`` (150 dpi) and ``<stem>.pdf``.

The figures are drawn on a bare :class:`matplotlib.figure.Figure` (Agg canvas for the PNG, the PDF
backend for the PDF), never through ``pyplot``, so no global backend or figure state is touched,
and under matplotlib's default style so a user's ``matplotlibrc`` does not change the output.
Timestamps and software tags are left out of the file metadata, which makes re-running with the
same matplotlib version give byte-identical files (checked by the tests).
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import matplotlib
import matplotlib.style
from matplotlib.figure import Figure

__all__ = ["PNG_DPI", "bar_chart", "curves", "save_figure"]

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
    """Write ``fig`` as ``<out_stem>.png`` and ``<out_stem>.pdf``; creates parent folders."""
    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    png = out_stem.with_name(out_stem.name + ".png")
    pdf = out_stem.with_name(out_stem.name + ".pdf")
    fig.savefig(png, format="png", dpi=PNG_DPI, metadata=_PNG_METADATA)
    fig.savefig(pdf, format="pdf", metadata=_PDF_METADATA)
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
