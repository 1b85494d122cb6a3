"""Checks of a figure's text before it is saved (osfl.reporting.figures.save_figure, issue 74): texts outside the
saved area, and x tick labels that collide (rotated until they do not)."""
from __future__ import annotations

import matplotlib.text
from matplotlib.figure import Figure

__all__ = ["colliding_ticks", "outside_texts", "untangle_ticks"]


def _renderer(fig: Figure):
    """A renderer for ``fig``'s text extents (an Agg canvas is attached to a bare Figure that has none)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def outside_texts(fig: Figure, bbox=None) -> list[str]:
    """The visible texts of ``fig`` reaching outside ``bbox`` (display units; default the figure) by over a pixel."""
    renderer, area = _renderer(fig), bbox if bbox is not None else fig.bbox
    undrawn = {id(tick.label1) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for tick in axis.get_major_ticks()
               if not min(axis.get_view_interval()) <= tick.get_loc() <= max(axis.get_view_interval())}
    exts = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.findobj(matplotlib.text.Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in undrawn]
    return [s for s, e in exts if e.x0 < area.x0 - 1 or e.y0 < area.y0 - 1 or e.x1 > area.x1 + 1 or e.y1 > area.y1 + 1]


def _collisions(ax, renderer) -> tuple[list, list[str]]:
    """(the visible x tick labels of ``ax``, the texts of those that overlap their left neighbour by over a pixel)."""
    labels = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text().strip()]
    boxes = sorted(((t.get_window_extent(renderer), t.get_text()) for t in labels), key=lambda b: b[0].x0)
    return labels, [b[1] for a, b in zip(boxes, boxes[1:]) if a[0].x1 > b[0].x0 + 1 and a[0].overlaps(b[0])]


def colliding_ticks(fig: Figure) -> list[str]:
    """The x tick labels of ``fig`` that overlap their neighbour on the same axes (by over a pixel)."""
    renderer = _renderer(fig)
    return [text for ax in fig.axes for text in _collisions(ax, renderer)[1]]


def untangle_ticks(fig: Figure) -> None:
    """Rotate the x tick labels of every axes whose labels collide (30°, then 90°) until none do."""
    for angle in (30, 90):
        renderer = _renderer(fig)
        for ax in fig.axes:
            labels, hits = _collisions(ax, renderer)
            if hits:
                for t in labels:
                    t.set_rotation(angle)
                    t.set_horizontalalignment("right" if angle < 90 else "center")
                    t.set_rotation_mode("anchor" if angle < 90 else "default")
        if not colliding_ticks(fig):
            return
