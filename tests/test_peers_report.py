"""reports/peers.md (issue 38): rendered from the peer harness's records only, the spread rule deciding agreement, and
the committed report equal to what the committed records render to."""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from osfl.reporting.peers import render
from osfl.stages import peers as peers_stage

ROOT = Path(__file__).resolve().parents[1]


def run_record(ours: list[float], official: list[float], seconds=(10.0, 20.0)) -> dict:
    def arm(fedavg, t):
        return {"fedavg": {"values": fedavg, "mean": sum(fedavg) / len(fedavg)},
                "local_seconds": {"values": [t] * len(fedavg), "mean": t}}

    return {"harness": "benchmarks/peers/clients.py", "peer": "Co-Boosting",
            "official": {"repo": "rong-dai/Co-Boosting", "commit": "b95d715ebf04307192094160e49334d3ab7519f0"},
            "shims": ["device: no-op .cuda()"], "seeds": [0, 1, 2], "settings": {"threads": 1},
            "arms": {"official": arm(official, seconds[1]), "ours": arm(ours, seconds[0])}}


def write(folder: Path, name: str, record: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(record))


def test_agreement_follows_the_spread_rule(tmp_path):
    records = tmp_path / "records"
    write(records, "clients-a.json", run_record([70.0, 72.0, 74.0], [71.0, 73.0, 75.0]))  # d = -1, spread 2
    write(records, "clients-b.json", run_record([50.0, 51.0, 52.0], [70.0, 71.0, 72.0]))  # d = -20, spread 1
    text = render(records, tmp_path / "none.yaml")
    a, b = text.split("### ")[1], text.split("### ")[2]
    assert "| FedAvg (uniform) | agree (within spread) |" in a
    assert "| FedAvg (uniform) | ours lower | ours 51.00 ± 1.00 (n=3) vs official 71.00 ± 1.00 (n=3)" in b
    assert "difference -20.00" in b
    assert "ours 2.00× as fast" in a and "72.00 ± 2.00 (n=3)" in a
    assert "`rong-dai/Co-Boosting@b95d715`" in a and "device: no-op .cuda()" in a


def test_equations_and_findings_render_as_tables(tmp_path):
    records = tmp_path / "records"
    write(records, "equations.json", {"torch": "x", "shims": {"DENSE": ["kornia stubbed"]}, "checks": [
        {"id": "dense.kl", "method": "DENSE", "what": "KL with T", "ours": "osfl.distill.losses:kl_div_t",
         "official": {"repo": "zj-jayzhang/DENSE", "commit": "237c5dd" + "0" * 33, "where": "helpers/utils.py:kldiv"},
         "max_abs_diff": 0.0, "grad_max_abs_diff": None, "verdict": "equal", "note": ""}]})
    findings = tmp_path / "findings.yaml"
    findings.write_text(yaml.safe_dump([{"id": "F1", "method": "all", "what": "inputs | scale", "official": "a:1",
                                         "ours": "b:2", "effect": "+5 points", "resolution": "option"}]))
    text = render(records, findings)
    assert "| DENSE | KL with T | `zj-jayzhang/DENSE@237c5dd` `helpers/utils.py:kldiv` |" in text
    assert "| 0.0e+00 | — | equal |" in text and "DENSE: kornia stubbed" in text
    assert "| F1 | all | inputs \\| scale | a:1 | b:2 | +5 points | option |" in text
    assert "Not run:" in text  # no run record yet: the command that makes one


def test_nothing_recorded_says_what_to_run(tmp_path):
    text = render(tmp_path / "empty", tmp_path / "none.yaml")
    assert text.count("Not run:") == 2 and "python -m benchmarks.peers.equations" in text
    assert "None recorded yet" in text


def test_committed_report_is_what_the_committed_records_render_to(tmp_path):
    out = tmp_path / "peers.md"
    peers_stage.main(["--records", str(ROOT / "benchmarks/peers/records"),
                      "--findings", str(ROOT / "benchmarks/peers/findings.yaml"), "--out", str(out)])
    assert out.read_text() == (ROOT / "reports" / "peers.md").read_text()


def test_every_timed_phase_gets_a_column_and_a_ratio(tmp_path):
    record = run_record([70.0, 72.0, 74.0], [71.0, 73.0, 75.0])
    for arm, t in (("ours", 4.0), ("official", 12.0)):
        record["arms"][arm]["server_seconds"] = {"values": [t] * 3, "mean": t}
    write(tmp_path / "records", "fedx.json", record)
    text = render(tmp_path / "records", tmp_path / "none.yaml")
    assert "| local training s | server s |" in text
    assert "| local training time | ours 2.00× as fast |" in text and "| server time | ours 3.00× as fast |" in text


def test_a_run_records_checks_render_beside_its_runs(tmp_path):
    record = run_record([70.0, 72.0, 74.0], [71.0, 73.0, 75.0])
    record["checks"] = [{"method": "OT", "what": "layer-1 map", "ours": "osfl.methods.ot:match_to_anchor",
                         "official": {"repo": "sidak/otfusion", "commit": "eb73ad6" + "0" * 33, "where": "w.py:f"},
                         "max_abs_diff": 6e-7, "verdict": "equal"}]
    write(tmp_path / "records", "ot.json", record)
    text = render(tmp_path / "records", tmp_path / "none.yaml")
    assert "| OT | layer-1 map | `sidak/otfusion@eb73ad6` `w.py:f` | `osfl.methods.ot:match_to_anchor` | 6.0e-07 |" in text


def test_one_summary_row_per_record_against_the_official_code(tmp_path):
    record = run_record([70.0, 72.0, 74.0], [71.0, 73.0, 75.0])
    for arm, vals in (("ours", [60.0, 61.0, 62.0]), ("official", [70.0, 71.0, 72.0])):
        record["arms"][arm]["final"] = {"values": vals, "mean": sum(vals) / 3}
    record["method"] = "FedX"
    write(tmp_path / "records", "fedx.json", record)
    text = render(tmp_path / "records", tmp_path / "none.yaml")
    row = next(line for line in text.splitlines() if line.startswith("| FedX (fedx) |"))
    assert ("| final acc. | 71.00 ± 1.00 (n=3) | 61.00 ± 1.00 (n=3) | -10.00 | ours lower | none named yet | "
            "2.00× (local training) |") in row
    # a finding that lists the record in `explains` is named on its row
    (tmp_path / "findings.yaml").write_text(yaml.safe_dump([{"id": "F9", "method": "FedX", "explains": ["fedx"],
                                                             "what": "w", "resolution": "r"}]))
    text = render(tmp_path / "records", tmp_path / "findings.yaml")
    row = next(line for line in text.splitlines() if line.startswith("| FedX (fedx) |"))
    assert "| ours lower | F9 | 2.00× (local training) |" in row
    # a record that names its timer (the same work on both sides) is timed by it, not by the first in name order
    record["arms"]["ours"]["server_one_test_seconds"] = {"values": [4.0] * 3, "mean": 4.0}
    record["arms"]["official"]["server_one_test_seconds"] = {"values": [5.0] * 3, "mean": 5.0}
    write(tmp_path / "records", "fedx.json", {**record, "timer": "server_one_test_seconds"})
    text = render(tmp_path / "records", tmp_path / "findings.yaml")
    row = next(line for line in text.splitlines() if line.startswith("| FedX (fedx) |"))
    assert "| 1.25× (server, one test on each side) |" in row


def test_server_rows_show_curves_paired_differences_and_variants(tmp_path):
    record = run_record([70.0, 72.0, 74.0], [71.0, 73.0, 75.0])
    record["arms"]["ours_slow"] = {"fedavg": {"values": [50.0, 52.0, 54.0], "mean": 52.0}}
    for arm, vals in (("ours", [60.0, 61.0, 65.0]), ("official", [62.0, 60.0, 66.0])):
        record["arms"][arm]["final"] = {"values": vals, "mean": sum(vals) / 3}
    record["curves"] = {"official": [[10.0, 50.0, 62.0], [10.0, 40.0, 60.0], [11.0, 55.0, 66.0]],
                        "ours": [[10.0, 45.0, 60.0], [12.0, 50.0, 61.0], [10.0, 52.0, 65.0]]}
    write(tmp_path / "records", "server-x.json", record)
    text = render(tmp_path / "records", tmp_path / "none.yaml")
    assert "| arm | epoch 1 | epoch 2 | epoch 3 |" in text
    assert "seed 0: -2.00, seed 1: +1.00, seed 2: -1.00); mean -0.67." in text
    assert "`ours_slow` against `official`" in text and "`ours` against `ours_slow`" not in text


def test_a_record_of_how_far_an_official_loop_runs(tmp_path):
    record = {"peer": "Release", "layer": "server: how far it runs", "harness": "h.py", "seeds": [0, 1], "arms": {},
              "official": {"repo": "a/b", "commit": "0" * 40}, "settings": {"epochs": 3},
              "runs": [{"seed": 0, "ms_seconds": 1.5, "epochs_done": 0,
                        "stopped": {"stage": "epoch 1", "at": "x.py:61", "exception": "ValueError: v"}},
                       {"seed": 1, "ms_seconds": 2.0, "epochs_done": 3, "stopped": None}]}
    write(tmp_path / "records", "release.json", record)
    text = render(tmp_path / "records", tmp_path / "none.yaml")
    assert "| 0 | 1.5 | 0 | epoch 1 | `x.py:61`: ValueError: v |" in text
    assert "| 1 | 2.0 | 3 | ran to the end | — |" in text


def test_a_same_work_record_sets_its_ratio_beside_the_row_it_names(tmp_path):
    """A record ``<name>-samework`` (the official code against the variant of ours that does its work, e.g. DENSE at
    bn 0) has no row of its own; its ratio stands beside ``<name>``'s."""
    record = run_record([70.0, 72.0, 74.0], [71.0, 73.0, 75.0])
    for arm, vals in (("ours", [60.0, 61.0, 62.0]), ("official", [70.0, 71.0, 72.0])):
        record["arms"][arm]["final"] = {"values": vals, "mean": sum(vals) / 3}
    record["method"] = "FedX"
    write(tmp_path / "records", "fedx.json", record)
    same = {**record, "arms": {"official": record["arms"]["official"],
                               "ours_loop": {"local_seconds": {"values": [8.0] * 3, "mean": 8.0}}}}
    write(tmp_path / "records", "fedx-samework.json", same)
    text = render(tmp_path / "records", tmp_path / "none.yaml")
    rows = [line for line in text.splitlines() if line.startswith("| FedX (fedx")]
    assert len(rows) == 1 and "| 2.00× (local training); same work, ours_loop: 2.50× (local training) " \
                              "(fedx-samework) |" in rows[0]
    # a same-work record that names its timer (DENSE's: ours less its extra test, F35) is compared on it
    timer = "server_epoch_tests_seconds"
    timed = {"official": {**record["arms"]["official"], timer: {"values": [9.0] * 3, "mean": 9.0}},
             "ours_loop": {**same["arms"]["ours_loop"], timer: {"values": [10.0] * 3, "mean": 10.0}}}
    write(tmp_path / "records", "fedx-samework.json", {**same, "arms": timed, "timer": timer})
    text = render(tmp_path / "records", tmp_path / "none.yaml")
    rows = [line for line in text.splitlines() if line.startswith("| FedX (fedx")]
    assert "same work, ours_loop: 0.90× (server, a test per epoch on each side) (fedx-samework)" in rows[0]
