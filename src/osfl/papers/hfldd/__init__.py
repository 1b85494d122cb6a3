"""HFLDD (arXiv:2409.17517 v1): which results feed which table and figure, rendered beside the published numbers.

A run is ``results/<dataset>-c<C>-s<seed>/`` (N clients holding C classes each). What builds each artifact:

* Tables II and III (traffic to reach a target accuracy, IID = C 10): the rounds each method's curve needed to
  first reach ``cost.target[dataset]`` (``rounds/<method>.json``), fed to the cost model of Eqs. 3, 6, 7
  (:mod:`osfl.cost.traffic`) with our model's parameter count, our H (``clustering.json``), the soft labels and
  distilled images actually uploaded (``soft_labels.json``, ``kip.json``); the paper's rows as printed, and the
  paper's printed rounds through the same code (H = 16 / 23, inferred in artifacts.yaml) beside them. Table II is
  the 28x28 grey-scale datasets' (MNIST; Fashion-MNIST runs land there, marked), Table III CIFAR-10's;
* Table IV (impact of K): HFLDD's last-round accuracy per dataset and C at K = ``clustering.K`` (the main run) and
  at each K of the sweep (``ksweep/k<K>.json``, stage ksweep@: the run's clients clustered again), and the verdict
  on §V-D's "robust to K at C = 2 and 10";
* Fig. 3: test accuracy per round of HFLDD, FedAvg, FedSeq and CL (CL: per epoch), one panel per dataset and C;
* Fig. 5: the clustering's topology (server, headers, members; colour = homogeneous cluster) per dataset and C,
  drawn with networkx (:mod:`osfl.reporting.topology`);
* Fig. 6: traffic to reach each of ``cost.curve_targets`` at C = 2, log scale;
* Fig. 7: the C = 2 clustering again, heterogeneous clusters of one or two clients ringed (the paper's Fig. 7 is a
  schematic of that effect);
* README: each artifact's state and the command that builds it, and a verdict on every check of SPEC §7
  (:class:`osfl.reporting.spread.Verdict`: comparisons of our runs over the same seeds, decided only beyond the
  spread; the clustering, HFLDD and its traffic not judged where the pre-trained clients (``clients.json``) score at
  chance or all alike, since the soft labels, the clustering and the distillation all come from them).
"""
from __future__ import annotations

# the package's modules, in layers (each imports only from those before it): tables, figures, claims, report
from .report import render

__all__ = ["render"]
