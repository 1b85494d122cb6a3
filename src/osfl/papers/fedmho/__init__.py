"""FedMHO (Yao et al., arXiv 2502.08518): which results feed which table, rendered beside the published numbers.

What builds each artifact:

* Table I (local models per method) and Table III (hyper-parameters per dataset) from the settings in force: the
  params file's ``parts`` / ``columns`` and the code's defaults merged with ``per_dataset`` (a changed default shows);
* Table II (FLOPs at batch size 1) from the models (stage ``flops``);
* Table IV from the runs ``results/<dataset>-<split>-s<seed>/runs/<column>.json``: the last epoch's accuracy, mean ±
  std over the seeds that ran, beside the paper's mean ± std, and claim verdicts (SPEC §5.2, §6; the spread rule of
  :mod:`osfl.reporting.spread`: same seeds only, decided beyond the spread, degenerate inputs not judged);
* Tables V, VI, VIII, IX from the ablation variants and sweeps (``variants``, ``sweeps.variants``); Table VII from
  the runs with N clients (``sweeps.clients``, stages ``nclients_*``); Table X from the ``table10`` sweep variants
  on the diverse-classifier parts (``x_*``), one column per split;
* Table XI from stage ``fid`` (FID of each ``sweeps.fid`` part's generated data, with the Gaussian-noise and
  real-split references; the caption names the features) and the ``table11`` sweep variants (MD / SD per part);
* Figs. 2, 5, 6, 7, 8 (bars and curves from the runs; Fig. 7 on sweep-only VGG-9 parts) and Fig. 9 (decoded images
  per class, stage ``samples``); Figs. 1, 3, 4 are schematics.

An artifact with no run yet is listed as such, with the paper's numbers in ``published/``.
"""
from __future__ import annotations

# the package's modules, in layers (each imports only from those before it): tables, claims, figures, report
from .claims import claims, cleaning_claims, parts_note, table04_sides
from .report import render

__all__ = ["claims", "cleaning_claims", "parts_note", "render", "table04_sides"]
