"""The per-run numbers the README quotes are the committed runs' own: OFedED's Table 1 line (README, "### OFedED")
names the columns in params' order and gives, per α, each column's seed-0 final accuracy as its run record has it,
"failed guard" for a run that failed a regime guard and "—" for a run not made. A re-run that changes a number
fails here until the README says the new one."""
import json
import re
from pathlib import Path

from helpers import paper_params
from osfl.cpu_profile import passed
from osfl.reporting.runs import run_name

ROOT = Path(__file__).resolve().parents[1]
OFEDED = ROOT / "papers" / "ofeded"


def _ofeded_line() -> str:
    text = (ROOT / "papers" / "ofeded" / "README.md").read_text()  # the paper's README holds its numbers (issue 74)
    return next(line for line in text.splitlines() if line.startswith("Table 1 on Fashion-MNIST") and "seed 0: " in line)


def _cell(split: str, col_id: str) -> str:
    rec = OFEDED / "results" / run_name("fmnist", split, 0) / "runs" / f"{col_id}.json"
    if not rec.is_file():
        return "—"
    run = json.loads(rec.read_text())
    return f"{run['acc_final']:.2f}" if passed(run) else "failed guard"


def test_ofeded_table1_line_quotes_the_committed_seed0_runs():
    params = paper_params("ofeded")
    cols = [c for c in list(params["columns"]) + list(params["s_columns"]) if c.get("paper")]
    line = _ofeded_line()
    names = line.split("seed 0: ", 1)[1].split(". α", 1)[0].split(", ")
    assert names == [{"MAEcho": "MA-Echo"}.get(c["paper"], c["paper"]) for c in cols], names
    # each "α = <alpha>: <cells>" runs to the first "(" or sentence end (". "; the numbers' points have no space)
    segments = (seg.split(": ", 1) for seg in line.split("α = ")[1:])
    quoted = {a: re.split(r"\(|\. ", rest)[0] for a, rest in segments if re.fullmatch(r"[0-9.]+", a)}
    assert set(quoted) == {s.removeprefix("dir") for s in params["splits"]}, quoted
    for alpha, cells in quoted.items():
        got = [c.strip() for c in cells.strip().rstrip(".").split(", ")]
        want = [_cell(f"dir{alpha}", c["id"]) for c in cols]
        assert got == want, (alpha, got, want)
