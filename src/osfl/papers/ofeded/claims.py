"""OFedED's claims on Table 1 and Fig. 2, by the spread rule of osfl.reporting.spread."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ...reporting.spread import NOT_RUN, Side, Verdict, above_all, compare, every
from .tables import _panel_title, row_label, run_side

def claims(numbers: dict, results_root: Path | None = None) -> list[tuple[str, Verdict]]:
    """Per row we ran: does OFedED beat every other method we ran there (the paper's "consistently outperforms")?
    ``numbers``: :func:`table1`'s (each cell's per-seed values, run and entry id); curves and clients read under
    ``results_root``."""
    out = []
    rows = sorted({row for row, _ in numbers})
    for row in rows:
        cells = {c: v for (r, c), v in numbers.items() if r == row}
        if "OFedED" not in cells or len(cells) < 2:
            continue
        sides = {c: run_side(results_root, *v["run"], v["id"], c,
                             [{"seed": k, "acc_final": x} for k, x in v["values"].items()])
                 if results_root is not None else Side(c, v["values"]) for c, v in cells.items()}
        best = max((c for c in cells if c != "OFedED"), key=lambda c: cells[c]["mean"])
        margin = cells["OFedED"]["mean"] - cells[best]["mean"]
        v = above_all(sides["OFedED"], [sd for c, sd in sides.items() if c != "OFedED"])
        out.append((f"{row}: OFedED above every other method we ran",
                    Verdict(v.verdict, f"{cells['OFedED']['mean']:.2f} vs {best} {cells[best]['mean']:.2f}, "
                                       f"{margin:+.2f}", reason=v.reason, basis=v.evidence)))
    return out


def teacher_claims(sides: dict) -> list[tuple[str, Verdict]]:
    """Fig. 2(a): OFedED's ensemble ends above DENSE's and Co-Boosting's, and rises over the epochs (``sides``:
    :func:`teacher_sides`)."""
    out = []
    for title, by in sides.items():
        if not by or "OFedED" not in by:
            continue
        last, last_whole, first = by["OFedED"]
        others = [sd[0] for k, sd in by.items() if k != "OFedED"]
        if others:
            out.append((f"{title}: OFedED's ensemble ends above DENSE's and Co-Boosting's (Fig. 2(a))",
                        above_all(last, others)))
        out.append((f"{title}: OFedED's ensemble accuracy rises over the epochs (Fig. 2(a))",
                    compare(last_whole, first)))
    return out


def student_claims(numbers: dict) -> list[tuple[str, Verdict]]:
    """Fig. 2(c): per student architecture, OFedED above DENSE and Co-Boosting (``numbers``: :func:`student_bars`'
    sides)."""
    out = []
    for (ds, split), groups in numbers.items():
        for group, sides in groups.items():
            if "OFedED" not in sides or len(sides) < 2:
                continue
            v = above_all(sides["OFedED"], [sd for k, sd in sides.items() if k != "OFedED"])
            out.append((f"{_panel_title(ds, split)}, student {group}: OFedED above DENSE and Co-Boosting (Fig. 2(c))",
                        v))
    return out


#: Table 3's rows by their parts (Loss · Ens · Others): Co-Boosting (none), OFedED (all), and the row without the
#: class-weighted ensemble (its position reconstructed, SPEC §5)
NO_PART, ALL_PARTS, NO_ENS = row_label(", , "), row_label("✓, ✓, ✓"), row_label("✓, , ✓")


TABLE3_ROWS = 8  # the paper's Table 3: Co-Boosting, six rows with one or two parts, OFedED


def _over(rows: dict, verdict: Verdict) -> Verdict:
    """``verdict`` of a claim over all of Table 3's rows, its evidence saying how many of them ran when some did not."""
    if len(rows) >= TABLE3_ROWS:
        return verdict
    return replace(verdict, evidence=f"over the {len(rows)} of Table 3's {TABLE3_ROWS} rows run; {verdict.evidence}")


def ablation_claims(sides: dict) -> list[tuple[str, Verdict]]:
    """Table 3's text (SPEC §5): every variant above Co-Boosting (row 1), all three parts the best row, and removing
    the class-weighted ensemble "a significant drop" (row 8 above row 6, whose check marks are reconstructed);
    ``sides``: :func:`osfl.papers.ofeded.tables.table3_sides`."""
    out = []
    for (ds, split), rows in sorted(sides.items()):
        where = f"{_panel_title(ds, split)}, Table 3"
        variants = {k: v for k, v in rows.items() if k != NO_PART}
        if NO_PART in rows and variants:
            out.append((f"{where}: every variant of OFedED above Co-Boosting (row 1, no part)",
                        _over(rows, every((k, compare(v, rows[NO_PART])) for k, v in variants.items()))))
        if ALL_PARTS in rows and len(rows) > 1:
            out.append((f"{where}: all three parts (row 8) the best row",
                        _over(rows, above_all(rows[ALL_PARTS], [v for k, v in rows.items() if k != ALL_PARTS]))))
        out.append((f"{where}: without the class-weighted ensemble ({NO_ENS}) below all three parts",
                    compare(rows[ALL_PARTS], rows[NO_ENS]) if ALL_PARTS in rows and NO_ENS in rows else
                    Verdict(NOT_RUN, f"rows {ALL_PARTS} and {NO_ENS}: " + ", ".join(
                        f"{k} {'ran' if k in rows else 'not run'}" for k in (ALL_PARTS, NO_ENS)))))
    return out
