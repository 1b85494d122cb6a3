"""OFedED's claims on Table 1 and Fig. 2, by the spread rule of osfl.reporting.spread."""
from __future__ import annotations

from pathlib import Path

from ...reporting.spread import Side, Verdict, above_all, compare
from .tables import _panel_title, run_side

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
