"""Tables 5, 8 and 11-18 (T global rounds; the paper: SVHN and CIFAR-10, neither obtainable here) on Fashion-MNIST in
their place: one table ``rounds_fmnist-<split>`` per split that stage ``rounds@`` ran on Fashion-MNIST
(``multiround.datasets: [fmnist]``), ours only (another dataset, so no paper number beside it), and the paper's
check of those tables judged on it: FedHydra the best server method after every round (SPEC, Table 5's checks).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...reporting.tables import write_table
from .claims import best_every_row, round_sides
from .figures import _split_label
from .runs import SHORT, Run

DATASET = "fmnist"
IN_PLACE_OF = "Fashion-MNIST in place of SVHN / CIFAR-10"


def round_cells(run: Run) -> pd.DataFrame:
    """A row per global round T (``T=<t>``, in order), a column per server method: the test accuracy after round T."""
    cells = run.round_cells()
    rows = sorted({r for r, _ in cells}, key=lambda r: int(r[2:]))
    cols = [label for label in SHORT.values() if any(c == label for _, c in cells)]
    df = pd.DataFrame([[cells.get((r, c)) for c in cols] for r in rows], index=rows, columns=cols, dtype=float)
    df.index.name = "Global round"
    return df


def fashion_rounds(runs: dict[str, Run], out: Path, described: str, base_seed=0
                   ) -> tuple[list[Path], dict[str, str], list[dict]]:
    """Write a table per Fashion-MNIST run with multi-round results; returns (files, ``{stem: state}`` for the
    README and status.json, the claim records). Nothing is written where no such run exists."""
    files, status, verdicts = [], {}, []
    fh, others = SHORT["fedhydra"], [v for k, v in SHORT.items() if k != "fedhydra"]
    for name, run in sorted(runs.items()):
        if run.dataset != DATASET or not run.rounds:
            continue
        where = f"({IN_PLACE_OF}, {_split_label(run.split)})"
        epochs = sorted({e for e in run.rounds_epochs.values() if e is not None})
        df = round_cells(run)
        caption = (f"Tables 5, 8 and 11-18 (T global rounds: clients start each round from the global model, train "
                   f"E local epochs and the server runs its method; the paper: SVHN and CIFAR-10) on {IN_PLACE_OF}, "
                   f"{_split_label(run.split)}: ours only (the global model's test accuracy after round T, seed "
                   f"{base_seed}; another dataset, so no paper number beside it). E run per round: "
                   f"{', '.join(map(str, epochs)) or 'not recorded'}.")
        s = f"rounds_{run.name}"
        files += write_table(df, out / s, caption, f"tab:{s}", notes=described)
        status[s] = (f"{int(df.notna().sum().sum())} cells, {len(df.columns)} methods x T = 1..{len(df)} "
                     f"({IN_PLACE_OF}, run {name})")
        verdicts.append(best_every_row(round_sides(run, base_seed), fh, others).record(
            artifact=s, claim=f"FedHydra is the best server method after every global round {where}"))
    return files, status, verdicts
