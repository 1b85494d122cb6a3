"""Each paper's settings as one table (issue 74): rows from the params and the run records, written by the render
beside the README, set in the compiled report's appendix."""
import json

from osfl.reporting import book
from osfl.reporting.settings import pointer, read, rows, write
from osfl.reporting.grid import Grid


def test_rows_name_profile_reductions_guards_precision_grid_and_machines(tmp_path):
    params = {"profile": "cpu", "datasets": ["fmnist"], "splits": ["dir0.5"], "seeds": [0, 1],
              "cpu": {"models": [{"from": "vgg9", "to": "vgg9_cpu", "reason": "6.8 s an epoch"}],
                      "set": [{"set": "server.epochs=20", "reason": "time"}],
                      "guards": {"server_gain_min": 5.0}},
              "runtime": {"precision": "bf16"}}
    run = tmp_path / "results" / "fmnist-dir0.5-s0"
    (run / "runs").mkdir(parents=True)
    (run / "live" / "x").mkdir(parents=True)
    record = {"acc_final": 50.0, "runtime": {"device": "cpu", "cpu": "AMD EPYC", "cpu_capability": "AVX512",
                                             "threads": 1}}
    (run / "runs" / "fedavg.json").write_text(json.dumps(record))
    (run / "live" / "x" / "metrics.json").write_text(json.dumps(record))  # a curve: not a run record
    got = dict(rows(Grid.of(params), tmp_path / "results"))
    assert got["profile"] == "cpu"
    assert got["reductions from the paper's settings"] == "vgg9 → vgg9_cpu (6.8 s an epoch); server.epochs=20 (time)"
    assert got["regime guards"].startswith("server best and final ≥ chance + 5 points")
    assert got["precision"] == "bf16 (runtime.precision)"
    assert got["runs (params)"] == "datasets fmnist; splits dir0.5; seeds 0, 1"
    assert got["machines"] == "AMD EPYC (AVX512, 1 thread): 1 run record"
    assert dict(rows(Grid.of({"profile": "quick"})))["regime guards"] == "none"
    assert "machines" not in dict(rows(Grid.of({"profile": "quick"})))


def test_a_tables_note_points_to_the_settings_table_instead_of_repeating_it():
    params = {"profile": "cpu", "cpu": {"set": [{"set": "server.epochs=20", "reason": "200 epochs take 3 h"}]}}
    note = pointer(Grid.of(params))
    assert note.startswith("Profile cpu; its reductions from the paper's settings, regime guards")
    assert "settings table" in note and "server.epochs" not in note and "3 h" not in note
    assert "reductions" not in pointer(Grid.of({"profile": "quick"}))


def test_the_book_sets_each_papers_settings_in_its_appendix(tmp_path):
    reports = tmp_path / "papers" / "p" / "reports"
    reports.mkdir(parents=True)
    write(reports, [("profile", "cpu"), ("precision", "fp32 (runtime.precision)")])
    assert read(reports) == [("profile", "cpu"), ("precision", "fp32 (runtime.precision)")]
    paper = book.Paper("p", tmp_path / "papers" / "p", "P: a paper")
    lines = "\n".join(book.settings_appendix([paper, book.Paper("q", tmp_path / "q", "Q: none")]))
    assert r"\subsection*{P}" in lines and "profile & cpu" in lines and "Q" not in lines.split("Appendix")[-1]


def test_a_figure_caption_names_our_profile_and_datasets(tmp_path):
    """Issue 74: a figure's caption names our setting before the paper's (which may differ)."""
    write(tmp_path, [("profile", "cpu"), ("runs (params)", "datasets fmnist, mnist; splits dir0.3; seeds 0, 1, 2")])
    assert book._our_setting(tmp_path) == "; profile cpu, datasets fmnist, mnist"
    assert book._our_setting(tmp_path / "none") == ""
