"""OFedED (Li et al., CIKM 2025): which results feed which table, rendered beside the published numbers.

What builds each artifact (issue 17, being built):

* Table 1 from the runs ``results/<dataset>-<split>-s<seed>/runs/<id>.json`` of ``columns`` and ``s_columns`` that
  name a paper column: the last server epoch's accuracy, mean ± std over the seeds that ran, beside the paper's;
  the paper's rows (MNIST, CIFAR-10, CIFAR-100, SVHN) stay, with "—" for ours where we did not run them, and our
  datasets' rows follow;
* Table 3 (ablation) from the same runs: row 1 (no part) is Co-Boosting's run, row 8 (every part) OFedED's, rows
  2–7 the ``s_columns`` whose ``parts`` name them; one column per dataset and split we ran beside the paper's
  CIFAR-10 and SVHN (α = 0.3);
* Tables 4 and 5 (computation and communication) from what the runs counted: local training's and the matching's
  FLOPs (``train@``/``condense@ --count-flops``: ``clients.json`` ``train_flops``, ``distilled.json`` per client
  ``flops`` and ``upload_bytes``), the server's (``--count-flops`` columns: the record's ``server_flops``), the
  model uploads from the state dicts of the run's model and of ResNet-18 built for the dataset (MB = 10^6 bytes, as
  the paper's 447 MB for ten ResNet-18s); FedAvg's rounds "under the same performance" are the paper's count
  (``cost.fedavg_rounds``), not a run;
* Fig. 2(a) from the teacher curves the ``--track-teacher`` columns logged (``train/teacher_acc.tsv``), Fig. 2(c)
  from the columns with a ``student`` beside the clients' own architecture, both at ``figure_split``;
* Table 2 from the runs ``results/<run>-<resnet.model>/runs/<method>.json`` (ResNet-18 clients and server on the
  run's partition; Local = the uniform ensemble): the paper's CIFAR-10 rows, then ours per dataset and split (Δ only
  where our dataset is the paper's);
* Figs. 2(b) and 3 from the ``variants`` (``results/<run>/runs/ofeded-<id>.json``) at ``figure_split``: accuracy
  against IPC (the main OFedED run is the point at ``condense.ipc``), and against σ per noise series (images,
  gradients, both), the main run drawn as the no-noise reference; Fig. 1 is a schematic.

Every claim verdict follows the spread rule of :mod:`osfl.reporting.spread`: each side over the seeds that ran,
compared on the seeds both have, decided only beyond the spread (n >= 2: the larger sample std; one seed: the larger
epoch-to-epoch swing of the last half of the runs' logged curves), and not judged where the run's clients
(``clients.json``) are at chance or all alike or its curve is flat at chance.
"""
from __future__ import annotations

# the package's modules, in layers (each imports only from those before it): tables, claims, figures, costs, report
from .claims import ablation_claims, claims, teacher_claims
from .figures import dp_panels, ipc_panels, teacher_sides
from .report import render, run_table
from .tables import _entries, ablation_entries, row_label, table1, table3_sides

__all__ = ["_entries", "ablation_claims", "ablation_entries", "claims", "dp_panels", "ipc_panels", "render",
           "row_label", "run_table", "table1", "table3_sides", "teacher_claims", "teacher_sides"]
