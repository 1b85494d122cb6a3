"""HFLDD's client clustering (osfl.clustering): Eq. 4's KL matrix, K-Means homogeneous clusters, Algorithm 1's
heterogeneous clusters and headers (SPEC §1.4, §7's clustering sanity checks)."""
import numpy as np
import pytest
import torch
from scipy.special import rel_entr

from osfl.clustering import cluster_clients, cluster_sampling, kl_matrix, predict_soft_labels


def one_class_soft_labels(clients=100, samples=50, classes=10, seed=0):
    """Client i knows only class i mod 10 (SPEC §3.3's C = 1 split): its soft labels lean to that class."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(clients, samples, classes))
    logits[np.arange(clients), :, np.arange(clients) % classes] += 6.0
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_kl_matrix_is_eq_4():
    soft = one_class_soft_labels(clients=6, samples=7)
    m = kl_matrix(soft)
    direct = np.array([[rel_entr(soft[i], soft[j]).sum() / soft.shape[1] for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(m, direct, rtol=1e-10, atol=1e-12)
    assert np.all(np.diag(m) == 0) and not np.allclose(m, m.T)  # KL is asymmetric
    hard = np.zeros((2, 3, 4))
    hard[0, :, 0] = hard[1, :, 1] = 1.0  # one-hot outputs: finite thanks to the clamp
    assert np.isfinite(kl_matrix(hard)).all() and kl_matrix(hard)[0, 1] > 20


def test_cluster_sampling_is_algorithm_1():
    groups = [[0, 1, 2, 3], [4, 5], [6], [7, 8, 9]]
    clusters = cluster_sampling(groups, np.random.default_rng(0))
    assert len(clusters) == 4  # H = the largest homogeneous cluster
    assert sorted(c for cl in clusters for c in cl) == list(range(10))  # everyone exactly once
    assert [len(c) for c in clusters] == [4, 3, 2, 1]  # non-increasing: cluster h takes one from each group >= h
    assert all(len({next(g for g, grp in enumerate(groups) if c in grp) for c in cl}) == len(cl) for cl in clusters)
    assert groups == [[0, 1, 2, 3], [4, 5], [6], [7, 8, 9]]  # the input is not consumed
    assert cluster_sampling(groups, np.random.default_rng(0)) == clusters
    assert any(cluster_sampling(groups, np.random.default_rng(s)) != clusters for s in range(1, 5))


def test_one_class_clients_form_ten_pure_groups_and_ten_full_clusters():
    """SPEC §7: C = 1, N = 100, K = 10 gives ~10 pure homogeneous clusters, so H = 10 clusters of 10, one client of
    every class each (Fig. 5(d))."""
    clustering, m = cluster_clients(one_class_soft_labels(), k=10, seed=0, rng=np.random.default_rng(0))
    assert m.shape == (100, 100)
    assert sorted(sorted({c % 10 for c in g}) for g in clustering.homogeneous) == [[c] for c in range(10)]
    assert len(clustering.heterogeneous) == 10
    assert all(sorted(c % 10 for c in cl) == list(range(10)) for cl in clustering.heterogeneous)
    assert all(a in cl for a, cl in zip(clustering.headers, clustering.heterogeneous))
    assert len(clustering.members) == 90 and set(clustering.members.values()) == set(clustering.headers)
    assert clustering.as_dict()["H"] == 10
    again, _ = cluster_clients(one_class_soft_labels(), k=10, seed=0, rng=np.random.default_rng(0))
    assert again == clustering


def test_soft_labels_are_the_models_softmax():
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3))
    model.train()
    x = torch.randn(7, 1, 2, 2)
    s = predict_soft_labels(model, x, batch_size=3)
    assert s.shape == (7, 3) and torch.allclose(s.sum(1), torch.ones(7))
    assert torch.allclose(s, torch.softmax(model(x), 1)) and model.training


def test_who_trains_together():
    """HFLDD's headers hold their own data plus their members' distilled sets; FedSeq's chains and CL's one group
    hold everyone once (osfl.protocols.hybrid)."""
    from osfl.clustering import Clustering
    from osfl.protocols.hybrid import (central_group, client_groups, client_participants, header_groups,
                                       superclient_groups)

    x = torch.arange(12, dtype=torch.uint8).reshape(12, 1, 1, 1)
    y = torch.arange(12) % 3
    parts = client_participants([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]], x, y)
    clustering = Clustering([[0, 1], [2, 3]], [[0, 2], [1, 3]], headers=[2, 1])
    distilled = {0: (torch.full((2, 1, 1, 1), 200, dtype=torch.uint8), torch.tensor([0, 0])),
                 3: (torch.full((1, 1, 1, 1), 201, dtype=torch.uint8), torch.tensor([2]))}
    groups = header_groups(clustering, parts, distilled)
    assert [g[0].name for g in groups] == ["header_2", "header_1"]
    assert groups[0][0].x.flatten().tolist() == [6, 7, 8, 200, 200] and groups[0][0].y.tolist() == [0, 1, 2, 0, 0]
    assert groups[1][0].x.flatten().tolist() == [3, 4, 5, 201]
    with pytest.raises(ValueError, match=r"\[3\]"):
        header_groups(clustering, parts, {0: distilled[0]})
    assert [len(g) for g in client_groups(parts)] == [1, 1, 1, 1]
    chains = superclient_groups(parts, 3, np.random.default_rng(0))
    assert sorted(len(c) for c in chains) == [1, 1, 2]
    assert sorted(p.name for c in chains for p in c) == sorted(p.name for p in parts)
    (everyone,), = central_group(parts)
    assert everyone.n == 12 and torch.equal(everyone.x, x)
