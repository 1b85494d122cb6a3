"""Grouping clients by what they know (HFLDD's heterogeneous client clustering, SPEC §1.3-§1.4).

* ``soft_labels``: a client's softmax outputs on the public set D_g (its label knowledge, the ``soft_labels``
  upload), the KL similarity matrix of Eq. 4, K-Means homogeneous clusters, Algorithm 1's heterogeneous clusters
  and their headers.

Everything random comes from a seed the caller passes (K-Means's ``random_state``) or an explicit
``numpy.random.Generator`` (the sampling of Algorithm 1 and the headers).
"""
from .soft_labels import (Clustering, ClusteringSettings, cluster_clients, cluster_sampling, kl_matrix,
                          predict_soft_labels)

__all__ = ["Clustering", "ClusteringSettings", "cluster_clients", "cluster_sampling", "kl_matrix", "predict_soft_labels"]
