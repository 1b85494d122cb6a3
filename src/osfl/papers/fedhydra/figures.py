"""FedHydra's figures (Figs. 3-13 where a run of ours draws them) and each figure's state."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...reporting.figures import bubble_panels, curve_panels, grouped_bar_panels, heatmap, image_rows
from .runs import ALPHAS, DATASETS, METHODS, NOT_BUILT, ONE_SHOT, Run, SHORT, _device_name

# ---------------------------------------------------------------------------------------------------------
# figures


def _curve_panel(run: Run | None, tag_filter=None):
    if run is None or not run.metrics:
        return None
    series, hlines = {}, {}
    for m, label in METHODS.items():
        if m in ONE_SHOT:
            v = run.acc(m)
            if v is not None:
                hlines[label] = v
        elif m in run.curves:
            series[label] = run.curves[m]
    return (series, hlines) if series or hlines else None


def figure_curves(ds: str, runs, out: Path, title: str) -> list[Path]:
    panels = {f"{DATASETS[ds]}, α = {a}": _curve_panel(runs.get(f"{ds}-dir{a}")) for a in ALPHAS}
    return curve_panels(panels, out, suptitle=title, missing="not run")


def figure_2cc(runs, out: Path) -> list[Path]:
    panels = {f"{label}, 2c/c": _curve_panel(runs.get(f"{ds}-2cc")) for ds, label in DATASETS.items()}
    return curve_panels(panels, out, suptitle="Test accuracy vs distillation epoch, 2c/c (Fig. 6)")


def figure_ae_sa(runs, splits: list[str], out: Path) -> list[Path]:
    panels = {}
    for ds, label in DATASETS.items():
        groups = {}
        for s in splits:
            run = runs.get(f"{ds}-{s}")
            if run is None:
                continue
            groups[_split_label(s)] = {"AE": run.acc("fedhydra-ae"), "SA": run.acc("fedhydra")}
        panels[label] = groups or None
    return grouped_bar_panels(panels, out, suptitle="FedHydra with AE vs SA as teacher (Fig. 7; final accuracy)")


def _split_label(split: str) -> str:
    return "2c/c" if split == "2cc" else "α=" + split[3:]


def _first_run(runs, datasets_order, split):
    for ds in datasets_order:
        if f"{ds}-{split}" in runs:
            return runs[f"{ds}-{split}"]
    return None


def figure_ms(runs, out: Path) -> tuple[list[Path], str, np.ndarray | None]:
    """Fig. 5: (a) 2c/c client x class counts, (b) MS weights Ū_r; MNIST in the paper, else the first run."""
    run = _first_run(runs, DATASETS, "2cc")
    written: list[Path] = []
    if run is None or "fedhydra" not in run.extras or "U_r" not in run.extras["fedhydra"]:
        written += image_rows({"not run": []}, out, title="Fig. 5: no 2c/c FedHydra run")
        return written, "", None
    U_r = np.asarray(run.extras["fedhydra"]["U_r"])  # (c, m)
    counts = np.asarray(run.partition["class_counts"]) if run.partition else None
    label = DATASETS.get(run.dataset, run.dataset)
    written += heatmap(U_r, out, xlabels=[f"client {k + 1}" for k in range(U_r.shape[1])],
                       ylabels=[str(c) for c in range(U_r.shape[0])], xlabel="client model",
                       ylabel="class", title=f"Fig. 5b: MS weights Ū_r, {label} 2c/c")
    if counts is not None:
        written += bubble_panels({f"{label}, 2c/c": counts}, out.with_name(out.name + "a"),
                                 suptitle="Fig. 5a: client data by class")
    return written, label, U_r


def figure_partitions(runs, out: Path) -> list[Path]:
    """Fig. 9: client x class bubble plots of the four Dirichlet splits (MNIST in the paper, else the first
    dataset run)."""
    ds = next((d for d in DATASETS if any(f"{d}-dir{a}" in runs for a in ALPHAS)), None)
    panels = {}
    for a in ALPHAS:
        run = runs.get(f"{ds}-dir{a}") if ds else None
        panels[f"α = {a}"] = run.partition["class_counts"] if run and run.partition else None
    label = DATASETS.get(ds, ds) if ds else "no dataset run"
    return bubble_panels(panels, out, suptitle=f"Fig. 9: client data by class, {label}, Dir(α), 5 clients")


def figure_synthetic(runs, prepared_root: Path, out: Path) -> list[Path]:
    """Fig. 12: real test images and FedHydra's synthetic images (last batch of the α=0.5 run)."""
    rows, not_run = {}, []
    for ds in ("fmnist", "cifar10"):
        label = DATASETS[ds]
        real = []
        x_path = Path(prepared_root) / ds / "x_test.npy"
        if x_path.exists():
            x = np.load(x_path, mmap_mode="r")
            y = np.load(Path(prepared_root) / ds / "y_test.npy")
            real = [np.asarray(x[np.flatnonzero(y == c)[0]]) for c in range(10) if (y == c).any()]
        run = runs.get(f"{ds}-dir0.5")
        synth = []
        if run and "synthetic_samples" in run.extras.get("fedhydra", {}):
            s = run.extras["fedhydra"]["synthetic_samples"]
            seen = set()
            for lab, img in zip(s["labels"], s["images_u8"]):
                if lab not in seen:
                    seen.add(lab)
                    synth.append(np.asarray(img, dtype=np.uint8))
        if not synth:  # a dataset without FedHydra's run is named in the title, not drawn as an empty row
            not_run.append(label)
            continue
        tag = " (stand-in)" if run and run.stand_in else ""
        rows[f"real {label}{tag}"] = real
        rows[f"synthetic {label}{tag}"] = synth
    title = "Fig. 12: real vs FedHydra synthetic images, one per class" + (
        f" (not run: {', '.join(not_run)})" if not_run else "")
    return image_rows(rows, out, title=title)


def figure_local_curve(runs, out: Path) -> list[Path]:
    """Fig. 8: (a) FedAvg and each client vs local epochs E; (b) the clients with the methods' accuracies as
    horizontal lines (the one-shot runs of the same split, trained for E = 200). The paper: CIFAR10 Dir(0.1)."""
    run = next((r for r in sorted(runs.values(), key=lambda r: (r.split != "dir0.1", r.dataset != "cifar10"))
                if r.local_curve), None)
    if run is None:
        return image_rows({"not run": []}, out, title="Fig. 8: not run (" + NOT_BUILT["figure08"] + ")")
    lc = run.local_curve
    epochs = lc["epoch"]
    clients = {f"client {c.split('_')[1]}": (epochs, lc[c]) for c in lc if c.startswith("client_")}
    hlines = {label: run.acc(m) for m, label in METHODS.items() if run.acc(m) is not None}
    label = DATASETS.get(run.dataset, run.dataset) + (" (STAND-IN DATA)" if run.stand_in else "")
    panels = {f"(a) FedAvg and clients, {label} {_split_label(run.split)}": ({"FedAvg": (epochs, lc["fedavg"]), **clients}, {}),
              "(b) clients vs the methods (E = 200 runs)": (clients, hlines)}
    return curve_panels(panels, out, suptitle="Fig. 8: test accuracy vs local epochs E", xlabel="local epochs E")


def figure_timing(runs, out: Path) -> list[Path]:
    """Fig. 13: DENSE and FedHydra server seconds over the timed runs (stage ``timing``), one panel per dataset,
    the device in the title. Without timed runs: the server seconds of the main runs, marked as such."""
    panels, devices = {}, set()
    for name, run in runs.items():
        if not run.timing:
            continue
        groups: dict = {}
        for key, man in sorted(run.timing.items(), key=lambda kv: int(kv[0].rsplit("-t", 1)[1])):
            method, r = key.rsplit("-t", 1)
            groups.setdefault(f"R={r}", {})[SHORT.get(method, method)] = man.get("seconds")
            devices.add(_device_name(man))
        panels[f"{DATASETS.get(run.dataset, run.dataset)}{' (stand-in)' if run.stand_in else ''}"] = groups
    if panels:
        return grouped_bar_panels(panels, out, ylabel="seconds",
                                  suptitle="Fig. 13: DENSE vs FedHydra server time, five runs; device: "
                                           + ", ".join(sorted(devices)))
    groups = {}
    for name, run in runs.items():
        if "dense" in run.metrics and "fedhydra" in run.metrics:
            groups[name] = {"DENSE": run.metrics["dense"].get("server_seconds"),
                            "FedHydra": run.metrics["fedhydra"].get("server_seconds")}
    return grouped_bar_panels({"server seconds of the main runs (no timed runs: timing.datasets is empty)":
                               groups or None}, out, ylabel="seconds",
                              suptitle="Fig. 13 (partial): DENSE vs FedHydra server time")


def _figure_status(fig: str, runs: dict[str, Run]) -> str:
    if fig == "figure08":
        done = [n for n, r in runs.items() if r.local_curve]
        return f"rendered from {', '.join(done)}" if done else "not run: needs " + NOT_BUILT[fig]
    if fig == "figure13":
        done = [n for n, r in runs.items() if r.timing]
        return (f"rendered from the timed runs of {', '.join(done)}" if done
                else "partial (the main runs' server seconds): needs " + NOT_BUILT[fig])
    return "rendered from the runs present"
