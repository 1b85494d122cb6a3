"""The benchmark scripts run in CI-sized form (no timing is checked: they print ratios, the numbers are the
machine's). What is checked is that both paths of each benchmark ran and did the same work."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs a benchmark script on real work (seconds to tens of seconds)


def bench(name: str, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / f"{name}.json"
    p = subprocess.run([sys.executable, f"benchmarks/{name}.py", *args, "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert re.search(r"(ratio|speed-up) +\d+\.\d\dx", p.stdout), p.stdout  # the printed ratio (fast path vs reference)
    return json.loads(out.read_text())["results"][0]


def test_local_training_benchmark(tmp_path):
    row = bench("bench_local_training", tmp_path, "--samples", "400", "--epochs", "1", "--batch", "64")
    assert row["ratio"] > 0 and row["batched_ratio"] > 0
    assert sum(row["client_sizes"]) <= 400 + 10 * row["clients"]
    assert row["max_param_diff"] < 1e-3  # one short epoch: batched = one by one up to rounding


def test_generator_benchmark(tmp_path):
    row = bench("bench_generator", tmp_path, "--steps", "1", "--batch", "8", "--ngf", "8", "--nz", "16")
    assert row["first_loss_looped"] == pytest.approx(row["first_loss_batched"], rel=1e-4)


def test_teacher_step_benchmark(tmp_path):
    first = bench("bench_teacher_step", tmp_path, "--batch", "8", "--repeats", "1", "--clients", "3")
    rows = json.loads((tmp_path / "bench_teacher_step.json").read_text())["results"]
    assert rows[0] == first and [r["arm"] for r in rows] == ["vmap+bn", "vmap", "loop+bn", "loop"]
    assert all(r["seconds_per_step"] > 0 for r in rows) and rows[0]["speed_vs_vmap_bn"] == 1.0
    assert all(r["largest_logit_difference"] < 1e-4 for r in rows)


def test_fedhydra_run_benchmark(tmp_path):
    row = bench("bench_fedhydra_run", tmp_path, "--g-steps", "2", "--ms-steps", "2")
    for path in ("reference", "fast"):
        assert row[path]["local_s"] > 0 and row[path]["server_s"] > 0
        assert 0 <= row[path]["final_acc"] <= 100
    assert set(row["speedup"]) == {"local_s", "server_s", "total_s"}


def test_matching_benchmark(tmp_path):
    row = bench("bench_matching", tmp_path, "--arch", "lenet5", "--classes", "3", "--per-class", "8",
                "--members", "2", "--steps", "1")
    assert row["reference_s_per_step"] > 0 and row["fast_s_per_step"] > 0
    assert row["first_loss_fast"] == pytest.approx(row["first_loss_reference"], rel=1e-5)


def test_client_processes_benchmark(tmp_path):
    row = bench("bench_client_processes", tmp_path, "--clients", "2", "--samples", "200", "--epochs", "1")
    assert row["one_process_s"] > 0 and row["processes_s"] > 0 and row["same_bits"] is True
