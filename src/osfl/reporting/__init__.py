"""Tables (LaTeX via pandas Styler, Markdown) and figures (matplotlib) for the replication report."""

from osfl.reporting.figures import bar_chart, curves, save_figure
from osfl.reporting.tables import (
    REQUIRED_LATEX_PACKAGES,
    compare_table,
    escape_latex,
    latex_document,
    latex_table,
    markdown_table,
    write_table,
)

__all__ = [
    "REQUIRED_LATEX_PACKAGES",
    "bar_chart",
    "compare_table",
    "curves",
    "escape_latex",
    "latex_document",
    "latex_table",
    "markdown_table",
    "save_figure",
    "write_table",
]
