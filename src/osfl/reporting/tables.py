"""Result tables as LaTeX (booktabs, via ``pandas.io.formats.style.Styler.to_latex``) and Markdown.

Conventions shared by every writer here:

* numbers are shown with ``precision`` decimals, integers as they are;
* a missing value (NaN, None, ``pd.NA``) is shown as an em-dash: ``---`` in LaTeX, ``—`` in Markdown;
* every string that reaches LaTeX (index labels, column labels, cells, and by default the caption
  and the notes) is escaped, so method names such as ``Co_Boosting 50% & more`` compile;
* the Unicode signs the reports use (``—``, ``–``, ``±``, ``−``, ``×``, ``≈``, ``→``, ``≥``, ``≤``, ``·``, ``✓``,
  Greek letters, ...: ``_LATEX_UNICODE``) are rewritten to LaTeX so that plain ``pdflatex`` accepts them.

The generated tables need only the packages in :data:`REQUIRED_LATEX_PACKAGES` in the preamble;
:func:`latex_document` wraps table bodies into a minimal compilable document.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import numpy as np
import pandas as pd

from .spread import format_spread, mean_std

__all__ = [
    "LATEX_NA",
    "MARKDOWN_NA",
    "REQUIRED_LATEX_PACKAGES",
    "compare_table",
    "escape_latex",
    "latex_document",
    "latex_table",
    "markdown_table",
    "vs_paper",
    "write_table",
]

#: What a report's preamble needs for the tables that :func:`latex_table` writes. Hierarchical
#: indexes are rendered without ``\multirow`` (``multirow_align="naive"``) so that ``multirow``,
#: which Debian ships only in texlive-latex-extra, is not needed.
REQUIRED_LATEX_PACKAGES: list[str] = ["booktabs", "graphicx"]  # graphicx: \resizebox for fit_width

#: How a missing value is written: an em-dash in LaTeX source and in Unicode.
LATEX_NA = "---"
MARKDOWN_NA = "\u2014"

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}

# Unicode signs that pdflatex (OT1/T1, utf8 input) cannot typeset in text mode, or that we prefer
# as LaTeX ligatures. Applied to strings after escaping.
_LATEX_UNICODE = {
    "\u2014": "---",  # em-dash
    "\u2013": "--",  # en-dash
    "\u0394": r"$\Delta$",
    "\u00b1": r"$\pm$",
    "\u2212": r"$-$",  # minus sign
    "\u00d7": r"$\times$",
    "\u2248": r"$\approx$",
    "\u2192": r"$\rightarrow$",
    "\u2190": r"$\leftarrow$",
    "\u2265": r"$\geq$",
    "\u2264": r"$\leq$",
    "\u2260": r"$\neq$",
    "\u2208": r"$\in$",
    "\u221e": r"$\infty$",
    "\u2016": r"$\|$",
    "\u00b7": r"$\cdot$",
    "\u2713": r"$\surd$",  # check mark (amssymb's \checkmark is not in the required packages)
    "\u00b2": r"$^2$",
    "\u2032": r"$'$",
}
# Greek letters, as math symbols (capitals that look Latin are the Latin letters)
_GREEK = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon "
          "phi chi psi omega").split()
for _i, _name in enumerate(_GREEK):
    _small = chr(0x3B1 + _i + (1 if _i >= 17 else 0))  # U+03C2 (final sigma) sits between rho and sigma
    _LATEX_UNICODE.setdefault(_small, "o" if _name == "omicron" else f"$\\{_name}$")
    _cap = chr(0x391 + _i + (1 if _i >= 17 else 0))
    _tex = _name.capitalize()
    _LATEX_UNICODE.setdefault(_cap, f"$\\{_tex}$" if _tex in ("Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma",
                                                            "Upsilon", "Phi", "Psi", "Omega") else "ABGDEZHTIKLMNXOPPSTYFXYW"[_i])


def escape_latex(text: str) -> str:
    """Escape LaTeX-special characters and rewrite the report's Unicode signs (see module doc)."""
    return _latex_unicode("".join(_LATEX_SPECIALS.get(ch, ch) for ch in str(text)))


def _latex_unicode(text: str) -> str:
    return "".join(_LATEX_UNICODE.get(ch, ch) for ch in text)


def _is_missing(value) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        return math.isnan(float(value))
    return False


def _format_number(value, precision: int) -> str | None:
    """``value`` as text if it is a number, else None. Integers stay integers."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.{precision}f}"
    return None


def _latex_cell_formatter(precision: int):
    """A Styler formatter; Styler has already escaped ``str`` values (``escape='latex'``)."""

    def fmt(value) -> str:
        if isinstance(value, str):
            return _latex_unicode(value)
        number = _format_number(value, precision)
        if number is not None:
            return number
        return escape_latex(str(value))

    return fmt


def _numeric_columns(df: pd.DataFrame) -> list:
    cols = []
    for col in df.columns:
        series = df[col]
        if isinstance(series, pd.DataFrame):  # duplicate column labels: skip, ambiguous
            continue
        if pd.api.types.is_bool_dtype(series.dtype):
            continue
        if pd.api.types.is_numeric_dtype(series.dtype) and series.notna().any():
            cols.append(col)
    return cols


def latex_table(
    df: pd.DataFrame,
    caption: str,
    label: str,
    *,
    precision: int = 2,
    highlight_max: bool = False,
    column_format: str | None = None,
    notes: str | None = None,
    escape_text: bool = True,
    fit_width: bool = False,
) -> str:
    r"""A booktabs ``table`` environment (``\toprule``/``\midrule``/``\bottomrule``), centred.

    Args:
        df: the table; its index becomes the first column(s), its index name(s) a header row.
        caption: the ``\caption`` text; escaped unless ``escape_text`` is False.
        label: the ``\label`` key, written verbatim.
        precision: decimals for floating-point cells and index values.
        highlight_max: bold (``\textbf``) the maximum of every numeric column (NaN ignored, ties
            all bold).
        column_format: the tabular column spec; default ``l`` for index levels, ``r`` for numeric
            columns and ``l`` for the others.
        notes: a ``\footnotesize`` line under the table (parameters in force, the profile, ...);
            escaped unless ``escape_text`` is False.
        escape_text: escape ``caption`` and ``notes``; pass False to put LaTeX markup in them.
        fit_width: scale the tabular down to the text width (``\resizebox``, package graphicx) when wider.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"latex_table expects a pandas DataFrame, got {type(df).__name__}")
    fmt = _latex_cell_formatter(precision)
    df = df.copy()  # the Styler escapes labels but not the axis names: escape them here
    df.index.names = [escape_latex(n) if isinstance(n, str) else n for n in df.index.names]
    df.columns.names = [escape_latex(n) if isinstance(n, str) else n for n in df.columns.names]
    styler = df.style.format(fmt, escape="latex", na_rep=LATEX_NA)
    styler = styler.format_index(fmt, axis=0, escape="latex", na_rep=LATEX_NA)
    styler = styler.format_index(fmt, axis=1, escape="latex", na_rep=LATEX_NA)
    if highlight_max:
        numeric = _numeric_columns(df)
        if numeric:
            styler = styler.highlight_max(subset=numeric, axis=0, props="textbf:--rwrap;")
    cap = escape_latex(caption) if escape_text else caption
    latex = styler.to_latex(
        column_format=column_format,
        position_float="centering",
        hrules=True,
        label=label,
        caption=cap,
        environment="table",
        multirow_align="naive",
        multicol_align="c",
    )
    if fit_width:
        start, end = latex.index("\\begin{tabular}"), latex.index("\\end{tabular}") + len("\\end{tabular}")
        latex = (latex[:start] + "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n"
                 + latex[start:end] + "}" + latex[end:])
    if notes:
        note = escape_latex(notes) if escape_text else notes
        end = "\\end{table}"
        idx = latex.rfind(end)
        block = "\\par\\smallskip\n{\\footnotesize " + note + "\\par}\n"
        latex = latex[:idx] + block + latex[idx:]
    if not latex.endswith("\n"):
        latex += "\n"
    return latex


def latex_document(bodies: list[str]) -> str:
    """A minimal compilable ``article`` that loads :data:`REQUIRED_LATEX_PACKAGES` around ``bodies``."""
    if isinstance(bodies, str):
        bodies = [bodies]
    lines = [
        "\\documentclass{article}",
        "\\usepackage[utf8]{inputenc}",
        "\\usepackage[T1]{fontenc}",
    ]
    lines += [f"\\usepackage{{{pkg}}}" for pkg in REQUIRED_LATEX_PACKAGES]
    lines.append("\\begin{document}")
    for body in bodies:
        lines.append(body.rstrip("\n"))
        lines.append("")
    lines.append("\\end{document}")
    return "\n".join(lines) + "\n"


def _markdown_text(value, precision: int) -> str:
    if _is_missing(value):
        return MARKDOWN_NA
    if isinstance(value, tuple):  # a MultiIndex entry
        return " / ".join(_markdown_text(v, precision) for v in value)
    number = _format_number(value, precision)
    text = number if number is not None else str(value)
    # a pipe would end the cell, a newline the row
    return text.replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def markdown_table(
    df: pd.DataFrame,
    *,
    precision: int = 2,
    caption: str | None = None,
    notes: str | None = None,
) -> str:
    """A GitHub pipe table: header row, separator row, one row per index entry.

    The first column holds the index (headed by the index name(s), empty if none); numeric columns
    are right-aligned. ``caption`` becomes an italic line above the table and ``notes`` a line
    below it. Missing values are shown as ``—``.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"markdown_table expects a pandas DataFrame, got {type(df).__name__}")
    index_head = " / ".join("" if n is None else str(n) for n in df.index.names).strip(" /")
    header = [_markdown_text(index_head, precision) if index_head else ""]
    header += [_markdown_text(c, precision) for c in df.columns]
    numeric = set()
    for pos in range(df.shape[1]):
        dtype = df.iloc[:, pos].dtype
        if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
            numeric.add(pos)
    sep = [":---"] + ["---:" if pos in numeric else ":---" for pos in range(df.shape[1])]
    rows = [header, sep]
    for label, values in zip(df.index, df.itertuples(index=False, name=None)):
        rows.append([_markdown_text(label, precision)] + [_markdown_text(v, precision) for v in values])
    table = "\n".join("| " + " | ".join(cells) + " |" for cells in rows)
    parts = []
    if caption:
        parts.append(f"*{caption}*")
    parts.append(table)
    if notes:
        parts.append(notes)
    return "\n\n".join(parts) + "\n"


def _split_latex_kwargs(kw: dict) -> tuple[dict, dict]:
    latex_keys = {"precision", "highlight_max", "column_format", "notes", "escape_text"}
    md_keys = {"precision", "notes"}
    unknown = set(kw) - latex_keys
    if unknown:
        raise TypeError(f"write_table got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    return {k: v for k, v in kw.items() if k in latex_keys}, {k: v for k, v in kw.items() if k in md_keys}


def write_table(df: pd.DataFrame, out_stem: Path, caption: str, label: str, **kw) -> list[Path]:
    """Write ``<out_stem>.tex`` (:func:`latex_table`) and ``<out_stem>.md`` (:func:`markdown_table`).

    ``kw`` are :func:`latex_table`'s keyword arguments; ``precision`` and ``notes`` also apply to
    the Markdown. Creates parent folders; returns ``[tex_path, md_path]``.
    """
    latex_kw, md_kw = _split_latex_kwargs(kw)
    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    tex = out_stem.with_name(out_stem.name + ".tex")
    md = out_stem.with_name(out_stem.name + ".md")
    tex.write_text(latex_table(df, caption, label, **latex_kw), encoding="utf-8", newline="\n")
    md.write_text(markdown_table(df, caption=caption, **md_kw), encoding="utf-8", newline="\n")
    return [tex, md]


def vs_paper(vals, p: float, ps: float = float("nan"), precision: int = 2) -> str:
    """The one "ours beside the paper" cell of every report: ``ours / paper (Δ)``.

    Ours is ``mean ± std (n=k)`` for several values (:func:`.spread.format_spread`), the number for one; the paper's
    is ``p ± ps`` where it prints a std. Δ = our mean − the paper's, its sign always written (a Δ that rounds to
    zero is ``+0.00``, never ``-0.00``). ``—`` stands for a missing side; a cell with neither side is ``—``, one
    with no paper number has no Δ.
    """
    vals = [float(v) for v in vals if not _is_missing(v)]
    missing_p = _is_missing(p)
    if not vals and missing_p:
        return MARKDOWN_NA
    ptxt = MARKDOWN_NA if missing_p else (f"{p:.{precision}f} \u00b1 {ps:.{precision}f}" if not _is_missing(ps)
                                          else f"{p:.{precision}f}")
    if not vals:
        return f"{MARKDOWN_NA} / {ptxt}"
    if missing_p:
        return f"{format_spread(vals, precision)} / {ptxt}"
    delta = round(mean_std(vals)[0] - float(p), precision) + 0.0  # + 0.0: no "-0.00"
    return f"{format_spread(vals, precision)} / {ptxt} ({delta:+.{precision}f})"


def compare_table(ours: pd.DataFrame, paper: pd.DataFrame, precision: int = 2) -> pd.DataFrame:
    """Cells :func:`vs_paper` of one number each, for two frames of the same labels.

    ``paper`` is aligned to ``ours`` by labels (its row/column order may differ).

    Raises:
        ValueError: the frames differ in shape or in their row/column labels.
    """
    if ours.shape != paper.shape:
        raise ValueError(f"compare_table: shapes differ: ours {ours.shape}, paper {paper.shape}")
    if set(ours.index) != set(paper.index) or set(ours.columns) != set(paper.columns):
        raise ValueError("compare_table: ours and paper must have the same row and column labels")
    paper = paper.reindex(index=ours.index, columns=ours.columns)
    data = [[vs_paper([o], p, precision=precision) for o, p in zip(orow, prow)]
            for orow, prow in zip(ours.itertuples(index=False, name=None), paper.itertuples(index=False, name=None))]
    return pd.DataFrame(data, index=ours.index.copy(), columns=ours.columns.copy(), dtype=object)
