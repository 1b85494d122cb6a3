"""One report skeleton (issue 74): a paper declares its artifacts as data, one driver builds them.

A paper's report module gives

* ``BUILDERS``: artifact id -> a builder ``build(ctx, art) -> Built | None`` (None: no run of ours yet), where
  ``ctx`` is the :class:`Context` of this render and ``art`` the paper's :class:`~.published.Artifact`;
* ``FIXED``: artifact id -> a state that needs no run (a schematic, a conceptual figure);

and :func:`build_all` runs every artifact of the paper in its order: the state of each (``NO_RUN`` where its builder
found nothing, ``NOT_BUILT`` where the paper has no builder for it), the files written, the summary metrics, the claim
verdicts and the cells set beside a paper number (:func:`osfl.reporting.runs.cell`). The paper's ``render`` then
writes README.md, status.json, claims.json and cells.json through :func:`finish`. Adding an artifact is one entry
in ``BUILDERS``. Builders that share work (one run loader, one table that two artifacts read) keep it in
``ctx.shared``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .grid import Grid
from .published import Artifact
from .runs import write_cells, write_status
from .settings import rows
from .tables import write_table

__all__ = ["Built", "Context", "NOT_BUILT", "NO_RUN", "Report", "build_all", "finish", "table_vs_paper"]

NO_RUN = "no run yet"
NOT_BUILT = "not built yet"


@dataclass
class Context:
    """What every builder of one render reads: the paper's settings (its params file as a :class:`.grid.Grid`), its
    folders, and ``shared`` for work that several builders use (computed by the first that needs it)."""
    grid: Grid
    results: Path
    prepared: Path
    out: Path
    shared: dict = field(default_factory=dict)

    def once(self, key: str, compute: Callable[[], object]):
        """``compute()`` the first time ``key`` is asked for in this render, the kept value after."""
        if key not in self.shared:
            self.shared[key] = compute()
        return self.shared[key]


@dataclass
class Built:
    """What a builder made of its artifact: its state (the README's line), the files written, its summary metrics,
    the claims it decided (``(claim, Verdict)`` pairs) and its cells beside the paper's numbers."""
    state: str
    files: list[Path] = field(default_factory=list)
    metrics: dict | None = None
    verdicts: list = field(default_factory=list)
    cells: list = field(default_factory=list)


@dataclass
class Report:
    """Everything :func:`build_all` gathered over a paper's artifacts."""
    files: list[Path] = field(default_factory=list)
    status: dict[str, str] = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    verdicts: list = field(default_factory=list)
    cells: list = field(default_factory=list)


Builder = Callable[[Context, Artifact], "Built | None"]


def table_vs_paper(ctx: Context, art: Artifact, df, notes: str, **kwargs) -> list[Path]:
    """The paper's table with ours beside it, as every paper writes one: ``<id>.tex`` / ``<id>.md`` captioned
    "<label> (paper) vs ours: <the paper's caption>", labelled ``tab:<id>-vs-paper``."""
    return write_table(df, ctx.out / art.id, f"{art.label} (paper) vs ours: {art.caption}", f"tab:{art.id}-vs-paper",
                       notes=notes, **kwargs)


def build_all(ctx: Context, arts: list[Artifact], builders: dict[str, Builder], fixed: dict[str, str],
              not_built: str = NOT_BUILT) -> Report:
    """Every artifact of ``arts`` in order: its fixed state, else its builder's :class:`Built` (``NO_RUN`` for
    None), else ``not_built``."""
    report = Report()
    for art in arts:
        if art.id in fixed:
            report.status[art.id] = fixed[art.id]
            continue
        build = builders.get(art.id)
        built = build(ctx, art) if build is not None else None
        if built is None:
            report.status[art.id] = NO_RUN if build is not None else not_built
            continue
        report.status[art.id] = built.state
        report.files += built.files
        if built.metrics is not None:
            report.metrics[art.id] = built.metrics
        report.verdicts += built.verdicts
        report.cells += built.cells
    return report


def finish(ctx: Context, report: Report, arts: list[Artifact], title: str, paper_dir: str, claims_of: str,
           summary: Path | None, cells: bool = False) -> list[Path]:
    """The paper's README.md (``title``, its folder ``paper_dir``, the claims on ``claims_of``), status.json and
    claims.json (and with ``cells`` its cells.json) from ``report``; returns every file written, the builders'
    included."""
    files = list(report.files)
    if cells:
        files.append(write_cells(ctx.out, report.cells))
    settings = rows(ctx.grid, ctx.results)
    files.append(write_status(ctx.out, title, paper_dir, arts, report.status, claims_of, report.verdicts,
                              report.metrics, summary, settings=settings))
    files.append(ctx.out / "settings.json")
    return files
