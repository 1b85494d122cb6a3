"""FedHydra's tables and figures from the runs of ``papers/fedhydra/dvc.yaml``, beside the published numbers.

The pipeline is a DVC project of its own in ``papers/fedhydra/``; paths here are relative to that folder.
A run is a folder ``results/<dataset>-<split>/`` (``split`` = ``dir<α>`` or ``2cc``) written by the pipeline's
partition, train, server and evaluate stages: ``runs/<method>[-<tag>].json`` (final and best accuracy, choices in
force, whether the data was a smoke stand-in, FedHydra's MS weights and a few synthetic images under ``extras``),
``live/<method>[-<tag>]/plots/metrics/test_acc.tsv`` (the accuracy curve dvclive logged during the run),
``partition/summary.json`` and ``clients.json``. A curve starts at epoch 0 (the model before server training);
``acc_best``/``best_epoch`` are over epochs >= 1. Extra seeds of a run (params
``spread``) are run folders of their own, ``results/<dataset>-<split>-s<seed>/``, laid out the same way.

:func:`render` writes ``reports/``: for every table of the paper ``<id>.tex`` + ``<id>.md`` (each cell
"ours / paper (Δ)", "—" where we did not run), for every result figure ``<id>.png`` + ``<id>.pdf`` (panels we did
not run say so), ``runs.md`` (every run: final and best accuracy) and ``README.md`` (each artifact, the command
that regenerates it, and a verdict for each claim of the paper's text that our runs can test). Our number in a
table cell is the FINAL-epoch accuracy of one run (seed in params); ``runs.md`` also gives the best epoch. Where
Table 1/2's run also ran with the seeds of ``spread.seeds``, the cell is ``mean ± std (n=k)`` over the seeds (sample
std, :mod:`osfl.reporting.spread`) and its Δ uses the mean. Each claim's verdict follows the rule of
:mod:`osfl.reporting.spread`: runs of the same seeds only, "holds" / "does not hold" only when the difference of the
means exceeds the spread (n >= 2 seeds: the larger sample std; one seed: the larger epoch-to-epoch swing over the
last half of the curves), else "within spread", and "not judged" (with the reason) for no common seed, one seed
without a curve, or degenerate inputs (clients or a server curve at chance, constant synthetic samples). The
variants of ``variants`` (FedHydra on the literal reading of Alg. 1, DENSE with bn = 0) are rows of their own in
Tables 1-2, below the paper's rows; the paper-profile table's rows name their profile and FedHydra's reading.
"""
from __future__ import annotations

# the package's modules, in layers (each imports only from those before it): runs, tables, figures, claims, report
from .claims import claims, local_curve_claims, paper_profile_claims, row_claims
from .figures import figure_curves
from .report import _write_readme, render
from .runs import (
    ONE_SHOT,
    Run,
    _result_files,
    expected_paper_runs,
    expected_results,
    load_runs,
    not_current,
    over_seeds,
)
from .tables import _ot_note, _seeds_text, paper_profile_table

__all__ = ["ONE_SHOT", "Run", "_ot_note", "_result_files", "_seeds_text", "_write_readme", "claims",
           "expected_paper_runs", "expected_results", "figure_curves", "load_runs", "local_curve_claims",
           "not_current", "over_seeds", "paper_profile_claims", "paper_profile_table", "render", "row_claims"]
