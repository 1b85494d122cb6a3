"""OFedED's Tables 4-5: computation (FLOPs counted in the runs) and communication (the uploads' bytes)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...reporting.published import load_published_table
from ...reporting.runs import run_name
from ...reporting.tables import MARKDOWN_NA
from .tables import FIG2_RUNS, _panel_title, _run_model
from ...reporting.grid import Grid

def _model_bytes(name: str, dataset: str, inputs: Any = None) -> int:
    """Bytes of a model's upload: every tensor of its state dict (parameters and buffers) as stored, at the runs'
    input size (the params' ``inputs``)."""
    import torch

    from ...data import get_spec
    from ...data.inputs import InputPrep
    from ...models import build_model

    spec = get_spec(dataset)
    spec = InputPrep.from_params(inputs, dataset, spec.shape[0]).spec(spec)
    torch.manual_seed(0)  # the weights do not change a size
    model = build_model(name, spec.shape, spec.num_classes)
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def cost_numbers(grid: Grid, results_root: Path) -> dict:
    """Per (dataset, split): the counted costs, mean over the seeds that ran (None where a count is missing):
    local (all clients' local training FLOPs, one round), dm (all clients' matching FLOPs), s_bytes (the distilled
    sets' upload), model_bytes / res_bytes (K uploads of our model / of ResNet-18 for the dataset), and sc per
    method (server FLOPs, its test evaluations left out)."""
    cost = grid.block("cost")
    k = (grid.clients or 10)
    out = {}
    for ds in grid.datasets:
        for split in grid.splits:
            local, dm, s_bytes, sc = [], [], [], {m: [] for m in FIG2_RUNS.values()}
            for seed in grid.seeds:
                run = Path(results_root) / run_name(ds, split, seed)
                clients = run / "clients.json"
                if clients.is_file() and "train_flops" in (c := json.loads(clients.read_text())):
                    local.append(c["train_flops"])
                dist = run / "distilled.json"
                if dist.is_file():
                    d = json.loads(dist.read_text())["clients"]
                    if all("flops" in x for x in d):
                        dm.append(sum(x["flops"] for x in d))
                    if all("upload_bytes" in x for x in d):
                        s_bytes.append(sum(x["upload_bytes"] for x in d))
                for method in sc:
                    f = run / "runs" / f"{method}.json"
                    if f.is_file() and "server_flops" in (r := json.loads(f.read_text())):
                        sc[method].append(r["server_flops"]["server"])
            if not (local or dm or any(sc.values())):
                continue
            mean = (lambda v: float(np.mean(v)) if v else None)
            out[(ds, split)] = {"local": mean(local), "dm": mean(dm), "s_bytes": mean(s_bytes),
                                "model_bytes": k * _model_bytes(_run_model(grid), ds, grid.value("inputs")),
                                "res_bytes": k * _model_bytes(cost.get("resnet", "resnet18"), ds,
                                                              grid.value("inputs")),
                                "sc": {m: mean(v) for m, v in sc.items()},
                                "rounds": int(cost.get("fedavg_rounds", 10)), "seeds": len(local)}
    return out


def _g(flops) -> float:
    return float("nan") if flops is None else flops / 1e9


def _mb(n) -> float:
    return float("nan") if n is None else n / 1e6


def _plus(a, b):
    return None if a is None or b is None else a + b


def _fmt(v: float) -> str:
    return MARKDOWN_NA if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4g}"


def cost_tables(grid: Grid, results_root: Path, arts: dict) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """Tables 4 and 5: the paper's rows as printed, then ours per dataset and split we ran."""
    counted = cost_numbers(grid, results_root)
    if not counted:
        return None, None
    t4, t5 = (load_published_table(arts[i]) for i in ("table4", "table5"))
    rows4 = {f"{m} (paper)": {c: _fmt(t4.loc[m, c]) for c in t4.columns} for m in t4.index}
    rows5 = {f"{m} (paper)": {c: _fmt(t5.loc[m, c]) for c in t5.columns} for m in t5.index}
    for (ds, split), n in counted.items():
        where = f"ours: {_panel_title(ds, split)}"
        ofeded_tcc, up = _plus(n["local"], n["dm"]), n["s_bytes"]
        fedavg_tcc = None if n["local"] is None else n["rounds"] * n["local"]
        rows4[f"FedAvg ({where}; {n['rounds']} rounds)"] = {
            "TCC (GFLOPs)": _fmt(_g(fedavg_tcc)), "US-CNN (MB)": _fmt(_mb(n["rounds"] * n["model_bytes"])),
            "US-Res (MB)": _fmt(_mb(n["rounds"] * n["res_bytes"]))}
        rows4[f"OFedED ({where})"] = {
            "TCC (GFLOPs)": _fmt(_g(ofeded_tcc)), "US-CNN (MB)": _fmt(_mb(_plus(n["model_bytes"], up))),
            "US-Res (MB)": _fmt(_mb(_plus(n["res_bytes"], up)))}
        sc_o = n["sc"][FIG2_RUNS["OFedED"]]
        for label, method in FIG2_RUNS.items():
            own = label == "OFedED"
            sc = n["sc"][method]
            red = (None if own or sc in (None, 0) or sc_o is None else 100.0 * (sc - sc_o) / sc)
            rows5[f"{label} ({where})"] = {
                "TCC (GFLOPs)": _fmt(_g(ofeded_tcc if own else n["local"])),
                "US-CNN (MB)": _fmt(_mb(_plus(n["model_bytes"], up) if own else n["model_bytes"])),
                "US-Res (MB)": _fmt(_mb(_plus(n["res_bytes"], up) if own else n["res_bytes"])),
                "SC (GFLOPs)": _fmt(_g(sc)), "Red. (%)": _fmt(red)}
    frames = []
    for rows, name in ((rows4, t4.index.name), (rows5, t5.index.name)):
        df = pd.DataFrame.from_dict(rows, orient="index", dtype=object)
        df.index.name = name
        frames.append(df)
    return frames[0], frames[1]


COST_NOTE = ("Ours are counted in the runs by torch's FlopCounterMode (2 FLOPs per multiply-accumulate of every "
             "matrix product and convolution, forward and backward; element-wise work not counted): TCC = all "
             "clients' local training (one round) + their distribution matching; SC = the server method's run, its "
             "per-epoch test evaluations left out. US = K model uploads (the state dict of our model, and of "
             "ResNet-18, built for the dataset) + the distilled sets as uploaded (float32 images, int64 labels); "
             "MB = 10^6 bytes. FedAvg's row multiplies one round by the paper's round count (it reaches OFedED's "
             "accuracy in 10 rounds, the paper says; not run here). Mean over the seeds that ran; a profile below "
             "the paper's scales every count down. ")
