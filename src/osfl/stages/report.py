"""Stage `report`: the main experiment's table (LaTeX + Markdown), bar chart and curves under reports/<exp>/."""
from __future__ import annotations

import pandas as pd

from ..live import read_curve
from ..methods import METHODS
from ..partition import PARTITIONS
from ..reporting import bar_chart, curves, write_table
from ..runconfig import load_run
from ..runtime import read_json, staged_dir, write_json
from .common import parser, require_input, run_stage


def main(argv=None) -> None:
    run_stage(_run, parser(__doc__), argv)


def computed_on(metrics) -> str:
    """``<cpu or gpu>, <n> thread(s), torch <v>`` of the server runs (each distinct setting once)."""
    seen = []
    for m in metrics:
        rt = m.get("runtime") or {}
        where = rt.get("gpu") or rt.get("cpu") or rt.get("device", "?")
        text = f"{where}, {rt.get('threads', '?')} thread(s), torch {rt.get('torch', '?')}"
        if text not in seen:
            seen.append(text)
    return "; ".join(seen) or "an unrecorded machine"


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    methods = cfg.methods
    metrics = {m: read_json(require_input(paths.results / "runs" / f"{m}.json", f"evaluate@{m}")) for m in methods}
    clients = read_json(require_input(paths.results / "clients.json", "train_clients"))
    spec, profile = cfg.dataset, cfg.profile
    scheme_params = PARTITIONS.get(cfg.partition).params
    setting = (f"{spec.name}, {cfg.partition}"
               + (f" (alpha={cfg.alpha})" if "alpha" in scheme_params else "")
               + (f" ({cfg.classes_per_client} classes per client, {cfg.assignment})"
                  if "classes_per_client" in scheme_params else "")
               + f", {cfg.clients} clients, model {cfg.model}, profile {profile.name}, seed {cfg.seed}")
    df = pd.DataFrame(
        {"Final acc. (%)": [metrics[m]["acc_final"] for m in methods],
         "Best acc. (%)": [metrics[m]["acc_best"] for m in methods],
         "Server epochs": [str(metrics[m]["epochs"]) if metrics[m]["epochs"] else "—" for m in methods]},
        index=pd.Index(methods, name="Method"))
    with staged_dir(paths.report) as out:  # replaces reports/main only when every file is written
        notes = (f"Mean local (client) test accuracy {clients['local_acc_mean']:.2f}%. "
                 "Best = best over server epochs (test-set selection, as DENSE/Co-Boosting report); Final = last epoch. "
                 f"Computed on {computed_on(metrics.values())}.")
        written = write_table(df, out / "accuracy", caption=f"Top-1 test accuracy: {setting}.",
                              label="tab:main-accuracy", notes=notes, highlight_max=True)
        written += bar_chart({m: metrics[m]["acc_final"] for m in methods}, out / "accuracy_bar",
                             title=setting)
        trained = [m for m in methods if METHODS.get(m).trains_global]
        series = {m: read_curve(paths.results / "live" / m) for m in trained}  # the files dvclive wrote
        hlines = {m: metrics[m]["acc_final"] for m in methods if m not in trained}
        written += curves(series, out / "curves", title=setting, hlines=hlines)
        write_json(out / "metrics.json", {
            "setting": setting, "methods": {m: {k: metrics[m][k] for k in ("acc_final", "acc_best", "best_epoch", "epochs")}
                                            for m in methods},
            "choices": {m: metrics[m]["choices"] for m in methods}, "clients": clients,
            "runtime": {m: metrics[m].get("runtime", {}) for m in methods},
            "settings": {"profile": profile.name, "seed": cfg.seed, "dataset": spec.name, "partition": cfg.partition,
                         "alpha": cfg.alpha, "classes_per_client": cfg.classes_per_client,
                         "assignment": cfg.assignment, "clients": cfg.clients, "model": cfg.model,
                         "client_models": list(cfg.client_models), "methods": list(methods),
                         "local": cfg.local.as_dict()},  # validated; epochs are the paper's, the profile scales them
        })
    print("report:", ", ".join(str(paths.report / p.name) for p in written))


if __name__ == "__main__":
    main()
