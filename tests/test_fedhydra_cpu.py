"""FedHydra's Tables 1-2 Fashion-MNIST cells at the cpu profile, read from the cross-paper benchmark's runs
(src/osfl/papers/fedhydra/cpu.py) on a made-up benchmark folder: the cells beside the paper's, runs that failed a
guard left out, the counts within 3 and 10 points, the claim by the spread rule, the README and compiled report."""
import json
from pathlib import Path

import yaml

from helpers import paper_params
from osfl.papers.fedhydra import cpu
from osfl.reporting.published import load_artifacts

ROOT = Path(__file__).resolve().parents[1]
ARTS = load_artifacts(ROOT / "papers" / "fedhydra" / "published")


def _bench(tmp_path: Path, accs: dict, failed=(), dataset: str = "fmnist") -> Path:
    """A benchmark folder: the real params on dir0.5 and 2cc at seeds 0, 1, 2 of ``dataset``, and a record per
    (split, id, seed)."""
    bench = tmp_path / "benchmark"
    params = paper_params("benchmark")
    params.update(splits=["dir0.5", "2cc"], seeds=[0, 1, 2], datasets=[dataset])
    params["columns"] = params["columns"] + [{"id": "fedhydra-x", "method": "fedhydra", "tag": "x", "paper": "", "set": ""}]
    (bench).mkdir(parents=True)
    (bench / "params.yaml").write_text(yaml.safe_dump(params))
    for (split, cid, seed), acc in accs.items():
        f = bench / "results" / f"{dataset}-{split}-s{seed}" / "runs" / f"{cid}.json"
        f.parent.mkdir(parents=True, exist_ok=True)
        rec = {"acc_final": acc}
        if (split, cid, seed) in failed:
            rec["guards"] = {"server_gain_min": {"floor": 15.0, "value": acc, "passed": False}}
        f.write_text(json.dumps(rec))
    return bench


def test_cells_beside_the_paper_with_counts_and_the_claim(tmp_path):
    accs = {("dir0.5", "fedhydra", 0): 60.0, ("dir0.5", "fedhydra", 1): 62.0, ("dir0.5", "fedhydra", 2): 61.0,
            ("dir0.5", "fedavg", 0): 75.0, ("dir0.5", "fedavg", 1): 76.0, ("dir0.5", "fedavg", 2): 75.5,
            ("dir0.5", "fedhydra-x", 0): 99.0,  # a tagged variant: not FedHydra's cell
            ("2cc", "fedhydra", 0): 40.0, ("2cc", "fedhydra", 1): 11.0, ("2cc", "dense", 0): 20.0}
    bench = _bench(tmp_path, accs, failed={("2cc", "fedhydra", 1)})
    files, state, claims, metrics, beside = cpu.cpu_table(bench, ARTS, tmp_path / "reports")
    md = (tmp_path / "reports" / "table01_cpu.md").read_text()
    row = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if line.startswith("| ")}
    # FedHydra at Dir(0.5): mean 61 of seeds 0-2 against the paper's 77.20; α = 0.3 did not run
    assert "61.00 ± 1.00 (n=3) / 77.20 (-16.20)" in row["FedHydra (ours)"] and "— / 76.39" in row["FedHydra (ours)"]
    assert "75.50 ± 0.50 (n=3) / 75.76 (-0.26)" in row["FedAvg"]
    # seed 1 of FedHydra at 2c/c failed its guard: left out and named
    assert "40.00 / 39.06 (+0.94) [failed its regime guard: s1 11.00]" in row["FedHydra (ours)"]
    assert state.startswith("4 of 30 Fashion-MNIST cells") and "3 within 3 points of the paper, 3 within 10" in state
    # gaps -16.20, -0.26, +0.94, -2.31: mean -4.4575
    assert metrics == {"cells": 4, "mean_gap": -4.4575, "within_3": 3, "within_10": 3, "beside_paper": 4}
    # the cells the report's first figure draws: ours (mean, std, n) beside the paper's
    fh = next(c for c in beside if c["row"] == "FedHydra (ours)" and c["column"] == "T1 α=0.5")
    assert (fh["ours"], fh["std"], fh["n"], fh["paper"], fh["dataset"]) == (61.0, 1.0, 3, 77.2, "fmnist")
    assert len(beside) == 4
    (claim,) = claims
    # Dir(0.5): 61.00 vs 75.50 with spread 1.00 on three seeds -> does not hold; the claim does not hold as a whole
    assert claim["artifact"] == "table01_cpu" and claim["verdict"] == "does not hold"
    assert "T1 α=0.5: does not hold" in claim["evidence"] and "T2 2c/c: not judged" in claim["evidence"]


def test_mnist_cells_sit_beside_the_papers_mnist_columns(tmp_path):
    """MNIST runs of the benchmark fill table01_cpu_mnist beside the paper's MNIST columns (FedAvg 81.89 at
    α = 0.5, 20.50 at 2c/c); no Fashion-MNIST table is written from them, and FedHydra not having run leaves its
    claim "not run" and names it in the state."""
    accs = {("dir0.5", "fedavg", s): v for s, v in enumerate((80.0, 82.0, 81.0))}
    accs[("2cc", "fedavg", 0)] = 30.0
    bench = _bench(tmp_path, accs, dataset="mnist")
    assert cpu.cpu_table(bench, ARTS, tmp_path / "reports") == ([], "", [], {}, [])  # Fashion-MNIST: none
    files, state, claims, metrics, beside = cpu.cpu_table(bench, ARTS, tmp_path / "reports", "mnist")
    md = (tmp_path / "reports" / "table01_cpu_mnist.md").read_text()
    row = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if line.startswith("| ")}
    assert "81.00 ± 1.00 (n=3) / 81.89 (-0.89)" in row["FedAvg"] and "30.00 / 20.50 (+9.50)" in row["FedAvg"]
    assert state.startswith("2 of 30 MNIST cells") and "not run yet: OT, FedDF" in state
    assert metrics["cells"] == 2 and metrics["within_3"] == 1 and metrics["within_10"] == 2
    assert {c["dataset"] for c in beside} == {"mnist"}
    (claim,) = claims
    assert claim["artifact"] == "table01_cpu_mnist" and claim["verdict"] == "not run"


def test_nothing_is_written_without_benchmark_runs(tmp_path):
    assert cpu.cpu_table(tmp_path / "nowhere", ARTS, tmp_path / "reports") == ([], "", [], {}, [])
    assert cpu.cpu_table(_bench(tmp_path, {}), ARTS, tmp_path / "reports") == ([], "", [], {}, [])
    assert not (tmp_path / "reports").exists()


def test_the_committed_report_carries_the_benchmark_cells():
    """The committed FedHydra report lists table01_cpu with the state its render gives from the committed benchmark."""
    status = json.loads((ROOT / "papers" / "fedhydra" / "reports" / "status.json").read_text())
    _, runs = cpu.benchmark_runs(ROOT / "papers" / "benchmark")
    _, numbers = cpu.cells(runs, ARTS)
    assert status[cpu.STEM].startswith(f"{len(numbers)} of 30 Fashion-MNIST cells") and len(numbers) >= 18


def test_client_number_rows_and_the_two_checks(tmp_path):
    """Tables 4/7 on Fashion-MNIST from the benchmark's runs <run>-n<K> (K = 5: the main grid's run): a row per K,
    FedHydra best per row and FedAvg falling with K judged by the spread rule; a failed run left out and named."""
    accs = {("dir0.5", "fedhydra", 0): 70.0, ("dir0.5", "fedhydra", 1): 72.0, ("dir0.5", "fedhydra", 2): 71.0,
            ("dir0.5", "fedavg", 0): 75.0, ("dir0.5", "fedavg", 1): 76.0, ("dir0.5", "fedavg", 2): 75.5}
    bench = _bench(tmp_path, accs)
    for (k, m, seed), acc, failed in ((10, "fedhydra", 0), 66.0, False), ((10, "fedhydra", 1), 68.0, False), \
            ((10, "fedhydra", 2), 67.0, False), ((10, "fedavg", 0), 50.0, False), ((10, "fedavg", 1), 52.0, False), \
            ((10, "fedavg", 2), 51.0, False), ((10, "dense", 0), 12.0, True), \
            ((20, "fedavg", 0), 60.0, False), ((20, "fedavg", 1), 61.0, False), ((20, "fedavg", 2), 59.0, False):
        f = bench / "results" / f"fmnist-dir0.5-s{seed}-n{k}" / "runs" / f"{m}.json"
        f.parent.mkdir(parents=True, exist_ok=True)
        rec = {"acc_final": acc}
        if failed:
            rec["guards"] = {"server_gain_min": {"floor": 15.0, "value": acc, "passed": False}}
        f.write_text(json.dumps(rec))
    (bench / "results" / "fmnist-dir0.3-s0-n40").mkdir(parents=True)  # another split: not the sweep's
    files, state, claims = cpu.k_table(bench, tmp_path / "reports")
    md = (tmp_path / "reports" / "table04_cpu.md").read_text()
    row = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if line.startswith("| ")}
    assert set(row) >= {"5", "10", "20"} and "40" not in row
    assert "71.00 ± 1.00 (n=3)" in row["5"] and "51.00 ± 1.00 (n=3)" in row["10"]
    assert "— [failed its regime guard: s0 12.00]" in row["10"]
    assert state.startswith("5 cells at K = 5, 10, 20") and "seeds 0, 1, 2" in state
    best, falls = claims
    # K = 5: FedHydra 71 below FedAvg 75.5 beyond the spread; K = 10: 67 above 51
    assert best["verdict"] == "does not hold" and "K=10: holds" in best["evidence"]
    # FedAvg falls from K = 5 to 10 (75.5 -> 51) but rises from 10 to 20 (51 -> 60): every step must fall
    assert falls["verdict"] == "does not hold" and "falls at every step" in falls["claim"]
    assert "K=5->10: holds" in falls["evidence"] and "K=10->20: does not hold" in falls["evidence"]


def test_no_client_number_table_without_sweep_runs(tmp_path):
    bench = _bench(tmp_path, {("dir0.5", "fedhydra", 0): 70.0})
    assert cpu.k_table(bench, tmp_path / "reports") == ([], "", [])
