"""FedMHO's figures (Figs. 2, 5-9) from the runs' curves and decoded samples."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...live import read_curve
from ...reporting.figures import curve_panels, grouped_bar_panels, image_rows
from ...reporting.runs import read_runs, run_name
from ...reporting.spread import mean_std
from .tables import DATASET_LABELS, _md_sd_defaults, _part_epochs
from ...reporting.grid import Grid

def _curves_of(results_root: Path, ds: str, split: str, seed, entries: list[dict]) -> dict:
    series = {}
    for e in entries:
        live = Path(results_root) / run_name(ds, split, seed) / "live" / e["id"]
        if (live / "plots").is_dir():
            x, y = read_curve(live)
            if len(x) > 1:
                series[e.get("paper", e["id"])] = (x, y)
    return series


def _run_curves(grid: Grid, results_root: Path, out: Path, stem: str, entries: list[dict],
                suptitle: str) -> tuple[list[Path], str]:
    """Test accuracy per server epoch of ``entries``, one panel per dataset and split (first seed)."""
    seed = grid.seeds[0]
    panels, drawn = {}, 0
    for ds in grid.datasets:
        for split in grid.splits:
            series = _curves_of(results_root, ds, split, seed, entries)
            panels[f"{DATASET_LABELS.get(ds, ds)} {split} (seed {seed})"] = (series, {}) if series else None
            drawn += bool(series)
    files = curve_panels(panels or {"no dataset listed": None}, out / stem, xlabel="Server epoch", suptitle=suptitle)
    return files, f"{drawn} panel(s) from runs" if drawn else "no run yet"


def fig05(grid: Grid, results_root: Path, out: Path) -> tuple[list[Path], str]:
    """Every trained Table IV column during server training."""
    return _run_curves(grid, results_root, out, "figure05", grid.columns,
                       "Fig. 5: global model accuracy during server training")


def fig09(grid: Grid, results_root: Path, out: Path) -> tuple[list[Path], str]:
    """Images decoded per class by each dataset's generative clients (stage ``samples``)."""
    seed = grid.seeds[0]
    splits = grid.splits
    rows, drawn = {}, 0
    for ds in grid.datasets:
        f = Path(results_root) / run_name(ds, splits[0], seed) / "samples" / "samples.npz" if splits else None
        if f is not None and f.is_file():
            data = np.load(f)
            for c, imgs in enumerate(data["images"]):
                rows[f"{DATASET_LABELS.get(ds, ds)} class {c}"] = list(imgs)
            drawn += 1
        else:
            rows[f"{DATASET_LABELS.get(ds, ds)}"] = []
    files = image_rows(rows or {"no dataset listed": []}, out / "figure09",
                       title="Fig. 9: images decoded per class by the generative clients (before k-means cleaning)")
    return files, f"{drawn} dataset(s) from runs" if drawn else "no run yet"


def fig02(grid: Grid, results_root: Path, out: Path) -> tuple[list[Path], str]:
    """All local models (Table IV) vs large models only (sweep variants ``row: large``), per sweep dataset, on the
    first split: mean over seeds."""
    sweeps = grid.block("sweeps")
    large = [v for v in sweeps.get("variants") or [] if v.get("artifact") == "figure02"]
    cols = {c.get("paper"): c for c in grid.columns}
    split = (grid.first_split or "dir0.5")
    panels, drawn = {}, 0
    for ds in sweeps.get("datasets") or []:
        runs = read_runs(results_root, grid, large + list(cols.values()), [ds]).get((ds, split), {})
        groups = {}
        for v in large:
            all_ = [r["acc_final"] for r in runs.get(cols.get(v["paper"], {}).get("id", ""), [])]
            only = [r["acc_final"] for r in runs.get(v["id"], [])]
            groups[v["paper"]] = {"all local models": mean_std(all_)[0], "large models only": mean_std(only)[0]}
        ok = any(not math.isnan(x) for g in groups.values() for x in g.values())
        panels[f"{DATASET_LABELS.get(ds, ds)} {split}"] = groups if ok else None
        drawn += ok
    files = grouped_bar_panels(panels or {"no sweep dataset listed": None}, out / "figure02",
                               suptitle="Fig. 2: aggregating all local models vs the large models only (mean over seeds)")
    return files, f"{drawn} panel(s) from runs" if drawn else "no run yet"


def fig06(grid: Grid, results_root: Path, out: Path) -> tuple[list[Path], str]:
    """FedMHO / -MD / -SD trained for 100 server epochs (variants of ``figure06``)."""
    entries = [v for v in grid.items("variants") if v.get("artifact") == "figure06"]
    return _run_curves(grid, results_root, out, "figure06", entries,
                       "Fig. 6: FedMHO without and with the KD terms over long server training")




def _sweep_curves(grid: Grid, results_root: Path, out: Path, stem: str, entries: list[dict], x_of,
                  xlabel: str, suptitle: str) -> tuple[list[Path], str]:
    """Final accuracy against ``x_of(dataset, entry, record)`` per paper column (mean over seeds), one panel per
    sweep dataset and split."""
    panels, drawn = {}, 0
    for ds in grid.block("sweeps").get("datasets") or []:
        for (d, split), by_id in read_runs(results_root, grid, entries, [ds]).items():
            points: dict[str, dict[int, list[float]]] = {}
            for e in entries:
                for r in by_id.get(e["id"], []):
                    points.setdefault(e["paper"], {}).setdefault(x_of(d, e, r), []).append(r["acc_final"])
            series = {name: (sorted(pts), [mean_std(pts[x])[0] for x in sorted(pts)]) for name, pts in points.items()}
            panels[f"{DATASET_LABELS.get(d, d)} {split}"] = (series, {}) if series else None
            drawn += bool(series)
    files = curve_panels(panels or {"no sweep dataset listed": None}, out / stem, xlabel=xlabel, suptitle=suptitle)
    return files, f"{drawn} panel(s) from runs" if drawn else "no run yet"


def _sweep_entries(grid: Grid, artifact: str, defaults: list[dict]) -> list[dict]:
    return defaults + [v for v in grid.block("sweeps").get("variants") or [] if v.get("artifact") == artifact]


def fig07(grid: Grid, results_root: Path, out: Path) -> tuple[list[Path], str]:
    """Accuracy against the VGG-9 clients' local epochs (the ``first`` part's ``local.epochs``): FedMHO, MD and SD,
    the ``figure07`` variants and Table IV's runs, one panel per sweep dataset and split (mean over seeds)."""
    fedmhos = [{**c, "row": ""} for c in grid.columns if str(c.get("paper", "")).startswith("FedMHO")]
    return _sweep_curves(grid, results_root, out, "figure07", _sweep_entries(grid, "figure07", fedmhos),
                         lambda d, e, r: _part_epochs(grid, d, e["first"], key="local"), "VGG-9 local epochs",
                         "Fig. 7: accuracy against the classifiers' local epochs (mean over seeds)")


def fig08(grid: Grid, results_root: Path, out: Path) -> tuple[list[Path], str]:
    """Accuracy against the number of synthetic samples M (the runs' recorded M): MD and SD, the ``figure08``
    variants and Table IV's runs, one panel per sweep dataset and split (mean over seeds)."""
    def m_of(d, e, r):
        return int(r.get("choices", {}).get("synthetic_generated", r.get("choices", {}).get("samples", 0)))

    return _sweep_curves(grid, results_root, out, "figure08",
                         _sweep_entries(grid, "figure08", _md_sd_defaults(grid, "")), m_of,
                         "Synthetic samples generated (M)",
                         "Fig. 8: accuracy against the number of synthetic samples (mean over seeds)")
