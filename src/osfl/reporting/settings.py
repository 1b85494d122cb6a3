"""A paper's settings as one table (issue 74): the profile, its reductions from the paper's settings with their
reasons, the regime guards, the input preparation, the precision, the grid of runs and the machines that computed
them, read from the pipeline's params and its run records. The render writes them to ``reports/settings.json``
(:func:`write`) and the README's "Settings" section; the compiled report sets each paper's as a table in its
appendix, so that captions need not repeat them."""
from __future__ import annotations

import json
from pathlib import Path

from ..data.inputs import describe as inputs_note
from .grid import Grid
from .machines import machines

__all__ = ["rows", "write", "read", "markdown", "pointer"]

GUARD_TEXT = {"client_acc_mean_min": "clients' mean local accuracy ≥ {:g} %",
              "server_gain_min": "server best and final ≥ chance + {:g} points",
              "cvae_below_mean_image_min": "CVAE clients ending below their data's mean-image loss ≥ {:g} %"}


def _machines(results_root: Path) -> str:
    """Each machine (CPU model, kernels, threads; or the GPU) with how many run records under ``results_root`` it
    computed, most first (:func:`.machines.machines` counts them)."""
    def records():
        for f in sorted(Path(results_root).glob("*/**/*.json")):
            if "live" in f.parts or f.parent.name == "runtime":  # curves; the runtime records repeat the run records
                continue
            try:
                rec = json.loads(f.read_text(encoding="utf-8"))
            except ValueError:
                continue
            if isinstance(rec, dict):
                yield rec

    return "; ".join(f"{m}: {n} run record{'s' if n != 1 else ''}"
                     for m, n in machines(records()).most_common()) or "no run record yet"


def pointer(grid: Grid) -> str:
    """What a table's note says of the settings in place of repeating them: the profile, and where its reductions,
    guards, input preparation and precision are (this module's table, in the README and the report's appendix)."""
    profile = str(grid.profile or "?")
    what = "reductions from the paper's settings, " if profile == "cpu" else ""
    return (f"Profile {profile}; its {what}regime guards, input preparation and precision: the settings table "
            "(README, \"Settings\"; the report's appendix).")


def rows(grid: Grid, results_root: Path | None = None) -> list[tuple[str, str]]:
    """(setting, value) rows of a pipeline's params (and, with ``results_root``, the machines of its run records)."""
    block = grid.block("cpu")
    profile = str(grid.profile or "?")
    out = [("profile", profile)]
    if profile == "cpu":
        red = [f"{m['from']} → {m['to']} ({m['reason']})" for m in block.get("models") or []]
        red += [f"{s['set']} ({s['reason']})" for s in block.get("set") or []]
        out.append(("reductions from the paper's settings", "; ".join(red) or "none"))
        if block.get("budget"):
            out.append(("budget", str(block["budget"])))
    floors = dict(block.get("guards") or {})  # cpu.guards, read as RunConfig.guard_floors reads them
    guards = [GUARD_TEXT.get(k, k + " ≥ {:g}").format(v) for k, v in floors.items()]
    out.append(("regime guards", ", ".join(guards) + " (checked at the best and the final epoch; a run failing one "
                                                   "feeds no verdict)" if guards else "none"))
    out.append(("input preparation", inputs_note(grid.value("inputs"))))
    out.append(("precision", str(grid.block("runtime").get("precision") or "fp32") + " (runtime.precision)"))
    grid_text = [f"datasets {', '.join(grid.datasets)}" if grid.datasets else "",
                 f"splits {', '.join(map(str, grid.splits))}" if grid.splits else "",
                 f"classes per client {', '.join(map(str, grid.items('classes')))}" if grid.value("classes") else "",
                 f"seeds {', '.join(map(str, grid.seeds))}"]
    out.append(("runs (params)", "; ".join(t for t in grid_text if t)))
    if results_root is not None:
        out.append(("machines", _machines(results_root)))
    return out


def write(out: Path, settings: list[tuple[str, str]]) -> Path:
    """``out``/settings.json: the rows as ``[[setting, value], ...]``."""
    path = Path(out) / "settings.json"
    path.write_text(json.dumps([list(r) for r in settings], indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read(reports: Path) -> list[tuple[str, str]]:
    """The rows :func:`write` wrote under ``reports`` ([] where the render wrote none)."""
    path = Path(reports) / "settings.json"
    return [tuple(r) for r in json.loads(path.read_text(encoding="utf-8"))] if path.is_file() else []


def markdown(settings: list[tuple[str, str]]) -> list[str]:
    """The README's "Settings" section."""
    if not settings:
        return []
    return ["## Settings", "", "| setting | value |", "|---|---|",
            *[f"| {k} | {v.replace('|', '/')} |" for k, v in settings]]
