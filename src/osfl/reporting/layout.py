r"""How the report (:mod:`osfl.reporting.book`) sets a rendered table or figure on its page: a readable size and a
short caption.

Tables. The natural width of a ``tabular`` is estimated from its cells: the visible characters of the widest cell
of each column (LaTeX commands, braces and ``$`` left out) times :data:`CHAR_PT`, the mean width of a character of
the 10-pt Computer Modern the report is set in, plus the column padding (:data:`PAD_PT`). Then:

* it fits the line (:data:`LINE_PT`, A4 with 18-mm margins): set as it is;
* it fits when scaled to :data:`MIN_SCALE` (7 pt of 10): scaled down to the line (``\fitwidth``);
* it is wider: split into column groups that each fit at that scale, the row labels (first column) repeated in
  each group, the groups one under another in the same table (:func:`split_wide`).

``\fitwidth`` (the book's preamble) never scales below :data:`MIN_SCALE`: a table the estimate got wrong overflows
the margin rather than setting its text below 7 pt.

Figures. A figure narrower than the line is set at most :data:`MAX_ENLARGE` times its natural width
(:func:`figure_width`), so a one-panel figure does not fill the page with 13-pt labels.

Captions. At most :data:`CAPTION_CHARS` visible characters, about three lines of the page: the caption's leading
sentences that fit (or its first words, ending in "…"); the rest is not lost, it moves to a note in small type under
the table or figure (:func:`short_caption`).

Notes. A note under a table longer than :data:`NOTE_CHARS` (the settings in force: profile, reductions with their
reasons, guards, precision, machines) is replaced by a pointer, and set once, with the tables that share it, at the
end of the section (:class:`Notes`): the tables stay next to each other instead of between pages of settings.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["CAPTION_CHARS", "CHAR_PT", "LINE_PT", "MAX_ENLARGE", "MIN_SCALE", "NOTE_CHARS", "PAD_PT", "Notes",
           "drop_unrun_columns", "drop_unrun_rows", "figure_width", "fit_table", "natural_width", "short_caption", "split_wide", "visible"]

LINE_PT = 494.0  # A4 (597.5 pt) less two 18-mm margins (51 pt each)
MIN_SCALE = 0.7  # 7-pt text in a 10-pt table: the smallest the report sets
CHAR_PT = 5.0  # mean advance of a 10-pt Computer Modern character (digits are 5.0 pt, lower case 4.4-5.5)
PAD_PT = 12.0  # 2 x \tabcolsep (6 pt)
CAPTION_CHARS = 280  # about three lines of a 10-pt caption on the line width
NOTE_CHARS = 400  # a note under a table longer than this (about four small lines) moves to the section's end
MAX_ENLARGE = 1.4  # a figure narrower than the line is enlarged at most this much (its 8-9-pt labels stay < 13 pt)

_CELL = re.compile(r"(?<!\\)&")
_WRAPPER = re.compile(r"\\[A-Za-z]+\*?(?=\{)")  # \textbf{...}: prints its argument only
_COMMAND = re.compile(r"\\[A-Za-z]+\*?|\\.")
_TABULAR = re.compile(r"\\begin\{tabular\}\{([a-z|]+)\}\n(.*?)\n\\end\{tabular\}", flags=re.S)


def visible(tex: str) -> str:
    """The characters a LaTeX fragment prints, roughly: commands that wrap an argument, braces and math shifts
    left out, other commands (``\\pm``, ``\\%``) counted as one character."""
    return re.sub(r"[{}$]", "", _COMMAND.sub("x", _WRAPPER.sub("", tex.replace(r"\\", ""))))


def _rows(body: list[str]) -> dict[int, list[str]] | None:
    """``{line index: cells}`` of a tabular's rows (rules left out); None when the rows have different counts."""
    rows = {i: [c.strip() for c in _CELL.split(line.rstrip().removesuffix("\\\\"))] for i, line in enumerate(body)
            if not line.lstrip().startswith(("\\toprule", "\\midrule", "\\bottomrule"))}
    return rows if rows and len({len(c) for c in rows.values()}) == 1 else None


def _widths(rows: dict[int, list[str]]) -> list[float]:
    n = len(next(iter(rows.values())))
    return [max(len(visible(cells[j])) for cells in rows.values()) * CHAR_PT + PAD_PT for j in range(n)]


def natural_width(tabular: str) -> float | None:
    """The estimated natural width in pt of the first tabular in ``tabular`` (see the module docstring); None when
    it has none or its rows have different numbers of cells."""
    m = _TABULAR.search(tabular)
    rows = _rows(m.group(2).split("\n")) if m else None
    return sum(_widths(rows)) if rows else None


def _parse(tex: str):
    """(the first tabular's match, its column spec, its body lines, :func:`_rows` of them, the body's ``\\midrule``
    and ``\\bottomrule`` line indices (None where absent)), or None when there is no tabular, its rows have
    different numbers of cells or not as many as the spec has columns."""
    m = _TABULAR.search(tex)
    if not m:
        return None
    spec, body = m.group(1), m.group(2).split("\n")
    rows = _rows(body)
    if rows is None or len(spec) != len(next(iter(rows.values()))):
        return None

    def first(rule: str) -> int | None:
        return next((i for i, line in enumerate(body) if line == rule), None)

    return m, spec, body, rows, first("\\midrule"), first("\\bottomrule")


def drop_unrun_columns(tex: str) -> str | None:
    """A rendered comparison table without its columns where no cell has a number of ours (every body cell starts
    with ``---``, our missing value: a dataset we cannot obtain), and a note naming them; None when that is every
    column (the paper's numbers alone: the report lists the table's state instead). A table whose rows do not all
    have the same number of cells is returned as it is."""
    parsed = _parse(tex)
    if parsed is None or None in parsed[4:]:
        return tex
    m, spec, body, rows, mid, bottom = parsed
    data = [cells for i, cells in rows.items() if mid < i < bottom]
    drop = [j for j in range(1, len(spec)) if data and all(cells[j].startswith("---") for cells in data)]
    if not drop:
        return tex
    if len(drop) == len(spec) - 1:
        return None
    head = rows[min(rows)]
    keep = [j for j in range(len(spec)) if j not in drop]
    lines = [line if i not in rows else " & ".join(rows[i][j] for j in keep) + " \\\\" for i, line in enumerate(body)]
    note = ("{\\footnotesize In this report, columns without a number of ours are left out: "
            + ", ".join(head[j] for j in drop) + ".\\par}")
    table = "\\begin{tabular}{" + "".join(spec[j] for j in keep) + "}\n" + "\n".join(lines) + "\n\\end{tabular}"
    rest = tex[m.end():]
    close = rest.find("\n", rest.find("}") if rest.lstrip().startswith("}") else 0)
    return tex[:m.start()] + table + rest[:close] + "\n\\par\\smallskip\n" + note + rest[close:]


def drop_unrun_rows(tex: str) -> str | None:
    """``tex`` without the body rows in which no cell has a number of ours (every cell after the row label starts
    with ``---``, our missing value: the paper's rows of a dataset we cannot obtain), and a small-type note naming
    them; None when that is every row; as it is when its rows cannot be parsed."""
    parsed = _parse(tex)
    if parsed is None or None in parsed[4:]:
        return tex
    m, _, body, rows, mid, bottom = parsed
    empty = [i for i, cells in rows.items() if mid < i < bottom and all(c.startswith("---") for c in cells[1:])]
    if not empty:
        return tex
    if len(empty) == sum(1 for i in rows if mid < i < bottom):
        return None
    kept = "\n".join(line for i, line in enumerate(body) if i not in empty)
    note = ("\\par\\smallskip\n{\\footnotesize In this report, rows without a number of ours are left out: "
            + "; ".join(rows[i][0] for i in empty) + ".\\par}\n")
    out = tex[:m.start(2)] + kept + tex[m.end(2):]
    end = out.rfind("\\end{table}")
    return out[:end] + note + out[end:] if end >= 0 else out + note


def split_wide(tex: str, limit: float = LINE_PT / MIN_SCALE) -> str:
    """``tex`` with its first tabular split into column groups of at most ``limit`` pt each (the first column
    repeated in every group), set one under another; as it is when it fits or cannot be parsed."""
    parsed = _parse(tex)
    if parsed is None:
        return tex
    m, spec, body, rows = parsed[:4]
    widths = _widths(rows)
    if sum(widths) <= limit:
        return tex
    groups: list[list[int]] = [[]]
    for j in range(1, len(spec)):
        if groups[-1] and widths[0] + sum(widths[k] for k in groups[-1]) + widths[j] > limit:
            groups.append([])
        groups[-1].append(j)
    parts = []
    for group in groups:
        keep = [0, *group]
        lines = [line if i not in rows else " & ".join(rows[i][j] for j in keep) + " \\\\"
                 for i, line in enumerate(body)]
        parts.append("\\begin{tabular}{" + "".join(spec[j] for j in keep) + "}\n" + "\n".join(lines)
                     + "\n\\end{tabular}")
    return tex[:m.start()] + "\n\\par\\medskip\n".join(parts) + tex[m.end():]


def _brace_end(text: str, start: int) -> int:
    """The index of the brace closing the group that opens at ``text[start] == '{'``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{" and text[i - 1] != "\\":
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced braces in a caption")


def _balanced(tex: str) -> bool:
    """No brace group of ``tex`` is left open (a cut there keeps the LaTeX whole)."""
    unescaped = re.sub(r"\\.", "", tex)
    return unescaped.count("{") == unescaped.count("}")


def short_caption(caption: str, limit: int = CAPTION_CHARS) -> tuple[str, str]:
    """(a caption of at most ``limit`` visible characters, the rest): the leading sentences that fit, else the
    first words and "…"; the rest is "" when the whole caption fits. A cut never falls inside a brace group."""
    if len(visible(caption)) <= limit:
        return caption, ""
    ends = [m.end() for m in re.finditer(r"[.;:](?=\s)", caption)
            if len(visible(caption[:m.end()])) <= limit and _balanced(caption[:m.end()])]
    if ends:
        return caption[:ends[-1]].rstrip(), caption[ends[-1]:].strip()
    words = caption.split(" ")
    head: list[str] = []
    while words and (len(visible(" ".join([*head, words[0]]))) <= limit - 1 or not _balanced(" ".join(head))):
        head.append(words.pop(0))
    if not head:  # one unbroken word longer than the limit: keep it whole
        head.append(words.pop(0))
    if not words:
        return caption, ""
    return " ".join(head) + "\u2026", "\u2026" + " ".join(words)


def fit_table(tex: str) -> str:
    r"""A rendered table (one ``table`` environment) as the report sets it: its tabular split into column groups
    where even 7-pt type would not fit the line (:func:`split_wide`), every tabular wrapped in ``\fitwidth``, and a
    caption longer than three lines cut to its lead, the rest in a small-type note under the table."""
    tex = split_wide(tex)
    tex = re.sub(r"(\\begin\{tabular\}.*?\\end\{tabular\})", lambda m: "\\fitwidth{" + m.group(1) + "}", tex,
                 flags=re.S)
    at = tex.find("\\caption{")
    if at < 0:
        return tex
    start = at + len("\\caption")
    end = _brace_end(tex, start)
    lead, rest = short_caption(tex[start + 1:end])
    if not rest:
        return tex
    tex = tex[:start + 1] + lead + tex[end:]
    close = tex.rfind("\\end{table}")
    note = "\\par\\smallskip\n{\\footnotesize " + rest + "\\par}\n"
    return tex[:close] + note + tex[close:] if close >= 0 else tex + note


def figure_width(pdf) -> str:
    r"""The width to set a PDF figure at: ``\linewidth``, or :data:`MAX_ENLARGE` times its natural width (its first
    page's MediaBox) where that is narrower."""
    head = Path(pdf).read_bytes()[:4096].decode("latin-1")
    m = re.search(r"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]", head)
    if not m:
        return r"\linewidth"
    width = (float(m.group(3)) - float(m.group(1))) * MAX_ENLARGE
    return r"\linewidth" if width >= LINE_PT else f"{width:.0f}pt"


_NOTE = re.compile(r"\\par\\smallskip\n\{\\footnotesize (.*?)\\par\}\n?", flags=re.S)


class Notes:
    """The long notes under one section's tables (see the module docstring), each kept once with the tables that
    carry it; ``prefix`` numbers them ("S1", "S2", ...)."""

    def __init__(self, prefix: str = "S"):
        self.prefix = prefix
        self.texts: list[str] = []
        self.users: list[list[str]] = []

    def move(self, tex: str, user: str) -> str:
        """``tex`` with each note longer than :data:`NOTE_CHARS` replaced by a pointer to its number; ``user``
        (LaTeX text, e.g. the table's id) is listed beside the note."""
        def pointer(m: re.Match) -> str:
            text = m.group(1).strip()
            if len(visible(text)) <= NOTE_CHARS:
                return m.group(0)
            if text not in self.texts:
                self.texts.append(text)
                self.users.append([])
            i = self.texts.index(text)
            if user not in self.users[i]:
                self.users[i].append(user)
            return ("\\par\\smallskip\n{\\footnotesize Settings, seeds and machines: note "
                    f"{self.prefix}{i + 1} at the end of this section.\\par}}\n")

        return _NOTE.sub(pointer, tex)

    def section(self, title: str) -> list[str]:
        """The notes as a list under ``title`` (LaTeX lines); none: []."""
        if not self.texts:
            return []
        lines = ["\\subsection*{" + title + "}", "{\\footnotesize", "\\begin{description}"]
        lines += [f"\\item[{self.prefix}{i + 1}] ({', '.join(users)}) {text}"
                  for i, (text, users) in enumerate(zip(self.texts, self.users))]
        return lines + ["\\end{description}", "}"]
