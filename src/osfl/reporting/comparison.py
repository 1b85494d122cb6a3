"""Our numbers beside a paper's published table (any paper): :func:`render_comparison`.

:func:`render_comparison` lays our numbers over a published table with the same rows and
columns. ``ours`` maps ``(row label, column label)`` to our number; a key that is absent, or a
value that is None/NaN, means "not run". Each cell is the reports' one cell format,
:func:`osfl.reporting.tables.vs_paper`: ``ours / paper (±d)`` with d = ours − paper; where ours is missing the
cell still shows the paper's number, ``— / paper``, and where the paper printed no number it is
``ours / —``. A value may also be a list of numbers, one per seed: with more than one, ours
reads ``mean ± std (n=k)`` (sample std, :func:`osfl.reporting.spread.format_spread`) and Δ is
taken from the mean. ``extra_rows`` appends rows of our own below the paper's (variants the
paper did not run): their paper part is ``—``. A key naming a row or column that the table
does not have raises :class:`osfl.errors.ConfigError` with the allowed labels. The comparison
is written as ``<id>.tex`` (booktabs, via :func:`osfl.reporting.tables.latex_table`) and
``<id>.md`` (:func:`osfl.reporting.tables.markdown_table`); the caption is ``"<Table n> (paper)
vs ours: <paper's caption>"`` followed by the caller's note (e.g. the data and profile used).
"""

from __future__ import annotations

import math
import numbers
import re
from pathlib import Path

import pandas as pd

from osfl.errors import ConfigError
from osfl.reporting.published import Artifact, _shorten, _suggest, load_published_table
from osfl.reporting.tables import MARKDOWN_NA, escape_latex, latex_table, markdown_table, vs_paper

__all__ = ["render_comparison"]

#: Greek letters that appear in the paper's captions, and their LaTeX math names.
_GREEK = {
    "α": "alpha",
    "β": "beta",
    "γ": "gamma",
    "δ": "delta",
    "ε": "epsilon",
    "λ": "lambda",
    "μ": "mu",
    "σ": "sigma",
    "τ": "tau",
}
# a Greek letter, optionally with a subscript: "λ_1", "λ_{12}"
_GREEK_RE = re.compile("([" + "".join(_GREEK) + r"])(?:_(\{[^}]*\}|\w))?")


def _is_missing(value) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, numbers.Real) and math.isnan(float(value))


def _ours_values(artifact: Artifact, paper: pd.DataFrame, ours: dict) -> dict[tuple, list[float]]:
    """``{(row, col): our numbers there}`` (one per seed; a single number as a list of one), checked against the
    paper's labels; cells with no number are left out."""
    out: dict = {}
    rows, cols = set(paper.index), set(paper.columns)
    for key, value in ours.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise ConfigError(f"{artifact.id}.ours", f"keys must be (row label, column label) pairs, got {key!r}")
        row, col = key
        if row not in rows:
            raise ConfigError(
                f"{artifact.id}.row",
                f"{artifact.label} has no row {row!r}{_suggest(row, paper.index)}; "
                f"allowed: {_shorten(paper.index)}",
            )
        if col not in cols:
            raise ConfigError(
                f"{artifact.id}.column",
                f"{artifact.label} has no column {col!r}{_suggest(col, paper.columns)}; "
                f"allowed: {_shorten(paper.columns)}",
            )
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if not _is_missing(v) and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
                raise ConfigError(f"{artifact.id}.ours", f"value for ({row!r}, {col!r}) is not a number: {value!r}")
        values = [float(v) for v in values if not _is_missing(v)]
        if values:
            out[(row, col)] = values
    return out


def _latex_text(text: str) -> str:
    """Escape ``text`` for LaTeX, with Greek letters (``α``, ``λ_1``) as math."""
    out, pos = [], 0
    for m in _GREEK_RE.finditer(text):
        out.append(escape_latex(text[pos : m.start()]))
        sub = m.group(2)
        math_text = "\\" + _GREEK[m.group(1)]
        if sub:
            math_text += "_" + (sub if sub.startswith("{") else "{" + sub + "}")
        out.append(f"${math_text}$")
        pos = m.end()
    out.append(escape_latex(text[pos:]))
    return "".join(out)


def render_comparison(
    artifact: Artifact,
    ours: dict[tuple[str, str], float | list[float]],
    out_dir: Path,
    note: str = "",
    *,
    precision: int = 2,
    extra_rows: tuple[str, ...] | list[str] = (),
) -> list[Path]:
    """Write ``<out_dir>/<id>.tex`` and ``<out_dir>/<id>.md``: our numbers next to the paper's.

    Args:
        artifact: a table artifact from :func:`load_artifacts`.
        ours: ``{(row label, column label): our number}``; labels exactly as in
            :func:`load_published_table`. Absent keys and None/NaN values are "not run". A list
            of numbers (one per seed) is shown as ``mean ± std (n=k)`` when it has more than one.
        out_dir: created if needed.
        note: appended to the caption, e.g. ``"Stand-in data at smoke profile."``.
        precision: decimals shown for every number and difference.
        extra_rows: row labels of our own, appended below the paper's rows (no paper number).

    Returns:
        ``[tex_path, md_path]``.

    Raises:
        ConfigError: a key names a row or column that the table lacks, or a value is not a number.
    """
    paper = load_published_table(artifact)
    extra = [r for r in dict.fromkeys(extra_rows) if r not in set(paper.index)]
    if extra:
        blank = pd.DataFrame(float("nan"), index=pd.Index(extra, dtype=object), columns=paper.columns.copy())
        paper = pd.concat([paper, blank]).rename_axis(paper.index.name)
    values = _ours_values(artifact, paper, ours)
    cells = pd.DataFrame([[vs_paper(values.get((r, c), []), paper.at[r, c], precision=precision)
                           for c in paper.columns] for r in paper.index],
                         index=paper.index.copy(), columns=paper.columns.copy(), dtype=object)

    caption = f"{artifact.label} (paper) vs ours: {artifact.caption}".strip()
    if note and note.strip():
        caption += " " + note.strip()
    legend = (
        "Each cell: ours / paper (\u0394 = ours \u2212 paper); "
        f"{MARKDOWN_NA} = not run or not reported."
    )
    if any(len(v) > 1 for v in values.values()):
        legend += (" Ours as mean \u00b1 std (n=k): the mean and sample standard deviation (ddof = 1) over k seeds;"
                   " \u0394 from the mean.")
    column_format = "l" + "r" * cells.shape[1]
    tex = latex_table(
        cells,
        _latex_text(caption),
        f"tab:{artifact.id}-vs-paper",
        precision=precision,
        column_format=column_format,
        notes=_latex_text(legend),
        escape_text=False,
        fit_width=True,
    )
    md = markdown_table(cells, precision=precision, caption=caption, notes=legend)

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tex_path = out_dir / f"{artifact.id}.tex"
    md_path = out_dir / f"{artifact.id}.md"
    tex_path.write_text(tex, encoding="utf-8", newline="\n")
    md_path.write_text(md, encoding="utf-8", newline="\n")
    return [tex_path, md_path]
