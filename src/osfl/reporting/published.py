"""A paper's published tables (any paper); :mod:`osfl.reporting.comparison` lays our numbers beside them.

Where the numbers live
    ``papers/<paper>/published/`` holds the paper's tables as CSV files, transcribed exactly as
    printed, and ``artifacts.yaml``, the index of every table and figure (id, caption, settings).
    Both are copied unchanged from the paper notes, so nothing here reads outside the repository.
    The index names each CSV as ``tables/<name>.csv``; the copies lie flat in the folder, and
    :func:`load_artifacts` accepts either layout. Every function takes the paper's published folder;
    nothing defaults to one paper.

Labels
    :func:`load_published_table` keeps every row and column label as the string printed in the CSV
    (``"FedAvg"``, ``"MNIST alpha=0.5"``, ``"T=1"``, ``"5"``): a row is addressed by its printed
    label, never by a parsed number. The first CSV column is the row index. When its labels repeat
    (Table 6 lists ``lambda_1`` and ``lambda_2`` in two columns, and ``lambda_1`` alone is not
    unique), the following columns join the row key until the rows are unique: the label is the
    printed values joined by ``", "`` (``"1.0, 0.5"``) and the index name the headers joined the
    same way (``"lambda_1, lambda_2"``). All other columns are values.

Values
    A cell is read strictly (:func:`parse_cell`): a number, optionally with a thousands separator
    (``12,000``), a trailing ``%``, an SI multiplier (``467.23K``, ``126.47M``, ``1.2G``) or a spread
    (``95.2 ± 0.4``: the mean; :func:`load_published_table` with ``which="std"`` gives the 0.4);
    ``-``, ``–``, ``—``, ``N/A``, ``MISSING`` (any case) and an empty cell mean "not reported" (NaN). Anything else
    (``VGG-9``, ``5/80.63``) raises :class:`osfl.errors.ConfigError` naming the file, row and column,
    unless the caller reads the table as text (``which="text"``, e.g. a table of settings). A table
    printing mean and std in separate ``<name>_acc`` / ``<name>_std`` columns (FedMHO) is
    folded: the key is every column before the first such pair, the values are the ``_acc`` columns
    named ``<name>``, ``which="std"`` gives the ``_std`` ones, and other ``<name>_<suffix>`` columns
    (a printed Δ) are dropped. A table without ``_acc`` columns that prints ``<name>`` / ``<name>_std``
    (OFedED) is folded the same way: the values are the columns without ``_`` in their name (one
    without a ``_std`` partner has no std), other ``<name>_<suffix>`` columns are dropped.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from osfl.errors import ConfigError

__all__ = [
    "Artifact",
    "default_label",
    "get_artifact",
    "load_artifacts",
    "load_published_table",
    "parse_cell",
]

_REPO_ROOT = Path(__file__).resolve().parents[3]

#: How many labels an error message lists before it says how many more there are.
_MAX_LISTED = 8



@dataclass(frozen=True)
class Artifact:
    """One table or figure of the paper, as indexed by ``artifacts.yaml``.

    Attributes:
        id: the index's id, e.g. ``"table01"``; also the stem of the files we write for it.
        kind: ``"table"`` or ``"figure"``.
        label: the paper's own label (first version's numbering), e.g. ``"Table 1"``.
        caption: the paper's caption, as printed.
        file: the transcribed CSV in the published folder, or None (figures).
        meta: the artifact's raw entry from ``artifacts.yaml``.
    """

    id: str
    kind: str
    label: str
    caption: str
    file: Path | None
    meta: dict = field(default_factory=dict, repr=False, compare=False)


def _resolve_root(root) -> Path:
    path = Path(root)
    if path.is_absolute() or path.exists():
        return path
    fallback = _REPO_ROOT / path
    return fallback if fallback.exists() else path


def _resolve_file(root: Path, rel: str) -> Path:
    """The index's ``tables/<name>.csv`` if it exists under ``root``, else the flat ``<name>.csv``."""
    nested = root / rel
    if nested.exists():
        return nested
    return root / Path(rel).name


def _shorten(labels, limit: int = _MAX_LISTED) -> str:
    labels = [repr(str(x)) for x in labels]
    if len(labels) <= limit:
        return ", ".join(labels)
    return ", ".join(labels[:limit]) + f", ... (+{len(labels) - limit} more)"


def _suggest(name: str, allowed) -> str:
    close = difflib.get_close_matches(str(name), [str(a) for a in allowed], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def default_label(artifact_id: str, numbering: str = "arabic") -> str:
    """``table04`` -> ``Table 4`` (``Table IV`` with ``numbering="roman"``), ``figure05`` -> ``Fig. 5`` (figures keep
    arabic numbers under either numbering, as in IEEE-style papers such as FedMHO), ``fig2a`` -> ``Fig. 2(a)``."""
    m = re.fullmatch(r"(table|figure|fig)0*(\d+)([a-z]?)", artifact_id)
    if not m:
        return artifact_id
    if m.group(1) == "fig":  # OFedED's ids: fig2a -> Fig. 2(a)
        return f"Fig. {int(m.group(2))}" + (f"({m.group(3)})" if m.group(3) else "")
    if m.group(3):
        return artifact_id
    n = int(m.group(2))
    if numbering == "roman" and m.group(1) == "table":
        text = ""
        for value, sym in ((100, "C"), (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"),
                           (4, "IV"), (1, "I")):
            count, n = divmod(n, value)
            text += sym * count
        n = text
    elif numbering not in ("arabic", "roman"):
        raise ConfigError("published.numbering", f"unknown numbering {numbering!r}; allowed: 'arabic', 'roman'")
    return f"{'Table' if m.group(1) == 'table' else 'Fig.'} {n}"


def load_artifacts(root, numbering: str = "arabic") -> list[Artifact]:
    """Every table and figure listed in ``<root>/artifacts.yaml``, in the index's order.

    A relative ``root`` is taken from the working directory, or else from the repository root. An
    artifact's label is the index's ``id_v000`` (FedHydra's first version's numbering) where it has one,
    else made from its id in the paper's ``numbering`` (:func:`default_label`).

    Raises:
        ConfigError: no readable ``artifacts.yaml`` under ``root``, or an entry without an id/kind.
    """
    root = _resolve_root(root)
    index = root / "artifacts.yaml"
    if not index.is_file():
        raise ConfigError("published.root", f"no artifacts.yaml in {root}")
    try:
        doc = yaml.safe_load(index.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError("published.root", f"{index} is not valid YAML: {exc}".replace("\n", " ")) from exc
    entries = doc.get("artifacts") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise ConfigError("published.root", f"{index} has no 'artifacts' list")
    artifacts = []
    for pos, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("id") or entry.get("kind") not in ("table", "figure"):
            raise ConfigError("published.artifacts", f"entry {pos} in {index} needs an id and kind table/figure")
        rel = entry.get("file")
        artifacts.append(
            Artifact(
                id=str(entry["id"]),
                kind=str(entry["kind"]),
                label=str(entry.get("id_v000") or default_label(str(entry["id"]), numbering)),
                caption=str(entry.get("caption") or ""),
                file=_resolve_file(root, str(rel)) if rel else None,
                meta=dict(entry),
            )
        )
    return artifacts


def get_artifact(artifact_id: str, root) -> Artifact:
    """The artifact with id ``artifact_id`` (e.g. ``"table01"``).

    Raises:
        ConfigError: no artifact has that id; the message lists the ids.
    """
    artifacts = load_artifacts(root)
    for artifact in artifacts:
        if artifact.id == artifact_id:
            return artifact
    ids = [a.id for a in artifacts]
    raise ConfigError(
        "artifact", f"unknown id {artifact_id!r}{_suggest(artifact_id, ids)}; allowed: {_shorten(ids, 40)}"
    )


NOT_REPORTED = ("", "-", "\u2013", "\u2014", "N/A", "MISSING")
_SI = {"K": 1e3, "M": 1e6, "G": 1e9}
_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?"
_CELL_RE = re.compile(rf"({_NUMBER})\s*([KMG])?\s*%?(?:\s*\u00b1\s*({_NUMBER})\s*%?)?")


def parse_cell(text: str, where: str = "cell") -> tuple[float, float]:
    """(value, std) of a printed cell (see the module docstring); std is NaN unless it reads ``a ± b``.

    Raises:
        ConfigError: the cell is neither a number nor a "not reported" mark; ``where`` names it.
    """
    t = str(text).strip()
    if t.upper() in NOT_REPORTED:
        return float("nan"), float("nan")
    m = _CELL_RE.fullmatch(t)
    if not m or not re.search(r"\d", m.group(1)):
        raise ConfigError("published.cell", f"{where}: {t!r} is not a number (allowed: a number with optional "
                                            "',', '%', K/M/G or '± std'; or one of " + ", ".join(map(repr, NOT_REPORTED)) + ")")
    scale = _SI.get(m.group(2) or "", 1.0)
    std = float(m.group(3).replace(",", "")) * scale if m.group(3) else float("nan")
    return float(m.group(1).replace(",", "")) * scale, std


def _pairs(columns: list[str]) -> int | None:
    """The position of the first ``<name>_acc``/``<name>_std`` column when the table prints such pairs, or of the
    first ``<name>``/``<name>_std`` pair in a table without ``_acc`` columns (OFedED)."""
    names = {c.rsplit("_", 1)[0] for c in columns if c.endswith("_acc")}
    if not names:
        return next((i for i, c in enumerate(columns) if f"{c}_std" in columns), None)
    if not any(f"{n}_std" in columns for n in names):
        return None
    return next(i for i, c in enumerate(columns) if c.rsplit("_", 1)[0] in names and "_" in c)


def load_published_table(artifact: Artifact, which: str = "value") -> pd.DataFrame:
    """The paper's numbers for a table artifact: string row/column labels as printed, float values
    (``which="value"``), the printed standard deviations (``"std"``; NaN where none was printed) or
    the cells as printed (``"text"``, strings).

    See the module docstring for the row-key rule (Table 6), the ``_acc``/``_std`` pairs and how
    cells are read.

    Raises:
        ConfigError: the artifact is not a table, its CSV is missing or has no value column, or a
        cell is not a number (``value``/``std``).
    """
    if which not in ("value", "std", "text"):
        raise ConfigError("published.which", f"unknown {which!r}; allowed: 'value', 'std', 'text'")
    if artifact.kind != "table" or artifact.file is None:
        raise ConfigError("artifact", f"{artifact.id} is a {artifact.kind} without a published CSV")
    if not artifact.file.is_file():
        raise ConfigError("artifact", f"{artifact.id}: published CSV not found: {artifact.file}")
    raw = pd.read_csv(artifact.file, dtype=str, keep_default_na=False, skipinitialspace=False)
    raw.columns = [str(c) for c in raw.columns]
    first_pair = _pairs(list(raw.columns))
    n_key = 1
    while n_key < raw.shape[1] - 1 and raw.iloc[:, :n_key].duplicated().any():
        n_key += 1
    if first_pair is not None and any(c.endswith("_acc") for c in raw.columns):
        n_key = first_pair
    elif first_pair is not None:  # <name> / <name>_std: the fewest leading columns that tell rows apart
        n_key = min(n_key, first_pair)
    if raw.shape[1] <= n_key:
        raise ConfigError("artifact", f"{artifact.id}: {artifact.file.name} has no value column")
    key_cols = list(raw.columns[:n_key])
    labels = raw[key_cols].apply(lambda r: ", ".join(v.strip() for v in r), axis=1)
    cols = list(raw.columns[n_key:])
    if first_pair is not None and any(c.endswith("_acc") for c in cols):  # fold <name>_acc / <name>_std: <name>
        keep = [c for c in cols if c.endswith("_acc")]
        std_of = {c: c[:-4] + "_std" for c in keep}
        names = [c[:-4] for c in keep]
    elif first_pair is not None:  # <name> / <name>_std (a <name> without _std: no std printed)
        keep = [c for c in cols if not c.endswith("_std") and "_" not in c]
        std_of = {c: c + "_std" for c in keep}
        names = keep
    else:
        keep, std_of, names = cols, {}, cols
    if which == "text":
        df = raw[keep].apply(lambda col: col.str.strip())
    else:
        def cell(col: str, i: int) -> float:
            where = f"{artifact.id} ({artifact.file.name}) row {labels.iat[i]!r} column {col!r}"
            value, std = parse_cell(raw[col].iat[i], where)
            if which == "value":
                return value
            if col in std_of:
                return parse_cell(raw[std_of[col]].iat[i], where)[0] if std_of[col] in raw.columns else float("nan")
            return std

        df = pd.DataFrame({c: [cell(c, i) for i in range(len(raw))] for c in keep}, dtype=float)
    df.index = pd.Index(list(labels), name=", ".join(key_cols), dtype=object)
    df.columns = pd.Index(names, dtype=object)
    return df
