"""The per-run numbers the README quotes are the committed runs' own: OFedED's Table 1 line (README, "### OFedED")
names the columns in params' order and gives, per α, each column's seed-0 final accuracy as its run record has it,
"failed guard" for a run that failed a regime guard and "—" for a run not made; HFLDD's table of final accuracies
(papers/hfldd/README.md) gives each cell over the seeds that ran. A re-run that changes a number fails here until
the README says the new one."""
import json
import re
from pathlib import Path

from helpers import paper_params
from osfl.cpu_profile import passed
from osfl.reporting.runs import run_name
from osfl.reporting.spread import format_spread

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


HFLDD = ROOT / "papers" / "hfldd"
HFLDD_COLUMNS = ("hfldd", "fedavg", "fedseq", "cl")


def _hfldd_cell(dataset: str, c: int, method: str) -> str:
    """A cell of HFLDD's README table: the final accuracy over the seeds whose record exists, as the reports write it
    (:func:`osfl.reporting.spread.format_spread`: mean ± sample std (n=k) for two or more), "not run yet" for none."""
    vals = [json.loads(f.read_text())["acc_final"]
            for seed in paper_params("hfldd")["seeds"]
            if (f := HFLDD / "results" / f"{dataset}-c{c}-s{seed}" / "rounds" / f"{method}.json").is_file()]
    return format_spread(vals) if vals else "not run yet"


def test_hfldd_readme_table_quotes_the_committed_runs():
    """papers/hfldd/README.md's table of final accuracies (C, dataset, HFLDD, FedAvg, FedSeq, CL, the paper's) is the
    committed rounds records' (it once said "MNIST C = 1 has not run yet" after it had)."""
    rows = [line.split("|")[1:-1] for line in (HFLDD / "README.md").read_text().splitlines()
            if re.match(r"\| \d+ \| (MNIST|Fashion-MNIST) \|", line)]
    assert len(rows) >= 6, rows
    for cells in rows:
        c, dataset = int(cells[0]), {"MNIST": "mnist", "Fashion-MNIST": "fmnist"}[cells[1].strip()]
        got = [x.strip() for x in cells[2:6]]
        assert got == [_hfldd_cell(dataset, c, m) for m in HFLDD_COLUMNS], (c, dataset, got)
