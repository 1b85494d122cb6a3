"""Stage `cluster@<run>`: HFLDD's step 2 on the server (SPEC §1.4): the KL matrix of the clients' soft labels
(Eq. 4), K-Means homogeneous clusters (``clustering.K``, random_state ``derive_seed(seed, "kmeans")``), Algorithm 1's
heterogeneous clusters and a random header each (numpy generator ``derive_seed(seed, "cluster-sampling")``).
Writes results/<run>/clustering.json (H_o, H_e, headers, H, each cluster's class coverage) and
results/<run>/kl_matrix.npy (for Fig. 5's inset).
"""
from __future__ import annotations

import numpy as np

from ..clients.upload import read_uploads
from ..clustering import ClusteringSettings, cluster_clients
from ..runconfig import load_run
from ..runtime import derive_seed, write_json
from .common import parser, require_input, run_stage


def main(argv=None) -> None:
    run_stage(_run, parser(__doc__), argv)


def _run(args) -> None:
    cfg = load_run(args)
    paths = cfg.paths
    seed = cfg.seed
    settings = cfg.settings(ClusteringSettings, "clustering")
    uploads = [u for u in read_uploads(require_input(paths.uploads("soft_labels"), "soft_labels"))
               if u.kind == "soft_labels"]
    soft = np.stack([u.array("soft_labels") for u in uploads])
    clustering, m = cluster_clients(soft, settings.K, derive_seed(seed, "kmeans"),
                                    np.random.default_rng(derive_seed(seed, "cluster-sampling")), settings.eps)
    hist = {u.client_id: np.asarray(u.manifest["label_histogram"]) for u in uploads}
    coverage = [int((sum(hist[c] for c in cluster) > 0).sum()) for cluster in clustering.heterogeneous]
    paths.results.mkdir(parents=True, exist_ok=True)
    np.save(paths.results / "kl_matrix.npy", m)
    write_json(paths.results / "clustering.json", {**clustering.as_dict(), "settings": settings.as_dict(),
                                                   "classes_covered": coverage})
    print(f"{len(uploads)} clients -> {len(clustering.homogeneous)} homogeneous clusters -> H = "
          f"{len(clustering.heterogeneous)} heterogeneous clusters (sizes "
          f"{', '.join(str(len(c)) for c in clustering.heterogeneous)}; classes covered "
          f"{', '.join(map(str, coverage))})")


if __name__ == "__main__":
    main()
