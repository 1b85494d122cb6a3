"""Tests of the partition schemes (osfl.partition) and their reports."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from osfl.errors import ConfigError
from osfl.partition import (
    PARTITIONS,
    Partition,
    load_partition,
    make_partition,
    save_partition,
    validate_params,
)
from osfl.partition.dirichlet_grouped import group_layout
from osfl.partition.report import partition_summary, plot_partition

K = 10
PER_CLASS = 600


def _labels(per_class=PER_CLASS, k=K, seed=123):
    """10 classes x 600 samples, in a shuffled order (so index order carries no label information)."""
    y = np.repeat(np.arange(k), per_class)
    return np.random.default_rng(seed).permutation(y)


LABELS = _labels()

# scheme, params, num_clients, whether every sample must be assigned
CASES = [
    ("iid", {}, 10, True),
    ("dirichlet", {"alpha": 0.5}, 10, True),
    ("dirichlet", {"alpha": 0.1}, 20, True),
    ("dirichlet_grouped", {"alpha": 0.5}, 20, True),
    ("dirichlet_feddf", {"alpha": 0.1}, 10, True),
    ("classes_per_client", {"classes_per_client": 2}, 100, True),
    ("classes_per_client", {"classes_per_client": 2, "assignment": "disjoint"}, 5, True),
    ("classes_per_client", {"classes_per_client": 3, "assignment": "random"}, 10, False),
    ("size_skew", {"alpha": 0.5}, 10, True),
    ("inner_dirichlet", {"alpha": 0.3}, 10, True),
    ("inner_dirichlet", {"alpha": 0.3}, 7, False),  # 6000 % 7 = 1 sample stays unassigned (reference behaviour)
]


def _ids(case):
    s, p, m, _ = case
    return f"{s}-{'-'.join(f'{k}={v}' for k, v in p.items())}-m{m}"


def test_registry_has_all_schemes():
    assert set(PARTITIONS.names()) == {
        "iid", "dirichlet", "dirichlet_grouped", "dirichlet_feddf", "classes_per_client", "size_skew",
        "inner_dirichlet",
    }
    for name in PARTITIONS:
        spec = PARTITIONS.get(name)
        assert spec.name == name and spec.citation and spec.fn.__doc__
        assert set(spec.defaults) <= set(spec.params)


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_scheme_invariants(case):
    scheme, params, m, covers_all = case
    p = make_partition(LABELS, scheme, m, seed=3, **params)
    assert p.num_clients == m and p.num_samples == LABELS.size and p.num_classes == K
    for ix in p.client_indices:
        assert ix.dtype == np.int64
        assert np.all(np.diff(ix) > 0)  # sorted, no duplicates within a client
        assert ix.size > 0
    allidx = np.concatenate(p.client_indices)
    assert np.unique(allidx).size == allidx.size, "clients share samples"
    assert allidx.min() >= 0 and allidx.max() < LABELS.size
    if covers_all:
        assert allidx.size == LABELS.size
    elif scheme == "inner_dirichlet":
        assert allidx.size == (LABELS.size // m) * m
    # class histogram agrees with the labels
    for i, ix in enumerate(p.client_indices):
        assert np.array_equal(p.class_counts[i], np.bincount(LABELS[ix], minlength=K))
    assert p.class_counts.dtype == np.int64 and p.class_counts.shape == (m, K)
    assert np.array_equal(p.sizes, p.class_counts.sum(axis=1))
    # params recorded: only the ones the scheme takes, defaults filled in
    assert set(p.params) == set(PARTITIONS.get(scheme).params)
    p.verify(LABELS)


def test_iid_sizes_and_classes():
    p = make_partition(LABELS, "iid", 7, seed=0)
    assert p.sizes.max() - p.sizes.min() <= 1
    assert p.sizes.sum() == LABELS.size
    assert np.all(p.class_counts > 0)


def test_unused_params_are_ignored_and_not_recorded():
    p = make_partition(LABELS, "iid", 5, seed=0, alpha=0.5, classes_per_client=2)
    q = make_partition(LABELS, "iid", 5, seed=0)
    assert p.params == {}
    assert all(np.array_equal(a, b) for a, b in zip(p.client_indices, q.client_indices))
    d = make_partition(LABELS, "dirichlet", 5, seed=0, alpha=0.5, classes_per_client=2, assignment="disjoint")
    assert d.params == {"alpha": 0.5, "min_size": 10}
    c = make_partition(LABELS, "classes_per_client", 5, seed=0, alpha=0.5, classes_per_client=2)
    assert c.params == {"classes_per_client": 2, "assignment": "cyclic"}
    # null in a params file means "default"
    n = make_partition(LABELS, "dirichlet", 5, seed=0, alpha=0.5, min_size=None)
    assert n.params["min_size"] == 10


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_same_seed_same_bytes_other_seed_differs(case, tmp_path):
    scheme, params, m, _ = case
    a = make_partition(LABELS, scheme, m, seed=11, **params)
    b = make_partition(LABELS, scheme, m, seed=11, **params)
    save_partition(a, tmp_path / "a.json")
    save_partition(b, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    c = make_partition(LABELS, scheme, m, seed=12, **params)
    save_partition(c, tmp_path / "c.json")
    assert (tmp_path / "c.json").read_bytes() != (tmp_path / "a.json").read_bytes()  # the seed is recorded
    changed = any(not np.array_equal(x, y) for x, y in zip(a.client_indices, c.client_indices))
    # FedHydra's 2c/c gives client k all samples of two fixed classes: nothing random is left
    assert changed == (params.get("assignment") != "disjoint")


def test_schemes_do_not_touch_global_rng():
    np.random.seed(5)
    before = np.random.random(3)
    np.random.seed(5)
    for scheme, params, m, _ in CASES:
        make_partition(LABELS, scheme, m, seed=1, **params)
    assert np.array_equal(np.random.random(3), before)


def test_save_load_roundtrip(tmp_path):
    p = make_partition(LABELS, "dirichlet", 10, seed=4, alpha=0.3)
    path = tmp_path / "sub" / "partition.json"
    save_partition(p, path)
    doc = json.loads(path.read_text())
    assert list(doc) == sorted(doc)
    assert {"scheme", "params", "seed", "num_classes", "class_counts", "client_indices"} <= set(doc)
    q = load_partition(path)
    assert (q.scheme, q.params, q.seed, q.num_classes, q.num_samples) == (p.scheme, p.params, p.seed, p.num_classes, p.num_samples)
    assert np.array_equal(q.class_counts, p.class_counts)
    assert all(np.array_equal(x, y) and y.dtype == np.int64 for x, y in zip(p.client_indices, q.client_indices))
    save_partition(q, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    q.verify(LABELS)
    with pytest.raises(ConfigError, match="^partition: "):
        q.verify(_labels(seed=999))


def test_load_rejects_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="^partition: "):
        load_partition(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        load_partition(tmp_path / "missing.json")
    p = make_partition(LABELS, "iid", 3, seed=0)
    path = tmp_path / "p.json"
    save_partition(p, path)
    doc = json.loads(path.read_text())
    doc["client_indices"][1][0] = doc["client_indices"][0][0]  # two clients share a sample
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="shared"):
        load_partition(path)


# ----------------------------------------------------------------------------------------- dirichlet


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("alpha,m", [(0.01, 10), (0.1, 20), (0.5, 50)])
def test_dirichlet_min_size_and_balance_mask(alpha, m, seed):
    p = make_partition(LABELS, "dirichlet", m, seed=seed, alpha=alpha)
    assert p.sizes.min() >= 10
    # A client only receives a class while it holds < N/m, so it ends with < N/m + (largest class).
    assert p.sizes.max() < LABELS.size / m + PER_CLASS


def test_dirichlet_min_size_param():
    p = make_partition(LABELS, "dirichlet", 10, seed=0, alpha=0.05, min_size=200)
    assert p.sizes.min() >= 200 and p.params["min_size"] == 200


def test_dirichlet_alpha_controls_skew():
    def mean_classes(alpha):
        return np.mean([
            (make_partition(LABELS, "dirichlet", 10, seed=s, alpha=alpha).class_counts > 0).sum(axis=1).mean()
            for s in range(3)
        ])

    low, high = mean_classes(0.01), mean_classes(100.0)
    assert high == pytest.approx(10.0)
    assert low < 3.0
    # at alpha=100 each client holds close to 1/m of every class
    p = make_partition(LABELS, "dirichlet", 10, seed=0, alpha=100.0)
    assert np.all(np.abs(p.class_counts - PER_CLASS / 10) < 40)


def test_dirichlet_gives_up_with_clear_error():
    with pytest.raises(ConfigError) as e:
        make_partition(LABELS, "dirichlet", 100, seed=0, alpha=0.001, min_size=50)
    msg = str(e.value)
    assert msg.startswith("alpha: ") and "\n" not in msg and ">= 50 samples" in msg


def test_dirichlet_without_mask_would_break_balance_bound():
    """Guard that the balance-mask test above can fail: an unmasked labeldir split violates the bound."""
    rng = np.random.default_rng(0)
    violated = False
    for _ in range(20):
        p = rng.dirichlet(np.full(10, 0.01), size=K)  # one unmasked draw per class
        sizes = (p * PER_CLASS).sum(axis=0)
        violated |= bool(sizes.max() >= LABELS.size / 10 + PER_CLASS)
    assert violated


# ----------------------------------------------------------------------------------------- grouped


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("m", [10, 20, 25])
def test_dirichlet_grouped_min_size_per_group(m, seed):
    p = make_partition(LABELS, "dirichlet_grouped", m, seed=seed, alpha=0.1)
    layout = group_layout(m, LABELS.size)
    assert len(layout) == math.ceil(m / 10)
    assert layout[-1][3] == LABELS.size
    for first, n_g, start, end in layout:
        size = end - start
        group = slice(first, first + n_g)
        assert p.sizes[group].sum() == size  # the group holds exactly its chunk
        assert p.sizes[group].min() >= int(0.5 * size / n_g)
        # the mask caps a client at < chunk/n_g + one class of the chunk
        assert p.sizes[group].max() < size / n_g + PER_CLASS


def test_dirichlet_grouped_layout():
    assert group_layout(10, 6000) == [(0, 10, 0, 6000)]
    assert group_layout(20, 6000) == [(0, 10, 0, 3000), (10, 10, 3000, 6000)]
    assert group_layout(25, 6000) == [(0, 10, 0, 2400), (10, 10, 2400, 4800), (20, 5, 4800, 6000)]
    assert group_layout(5, 6000) == [(0, 5, 0, 6000)]


# ------------------------------------------------------------------------------------ classes per client


def test_cyclic_c2_m100():
    p = make_partition(LABELS, "classes_per_client", 100, seed=0, classes_per_client=2)
    held = p.class_counts > 0
    assert np.all(held.sum(axis=1) == 2)
    assert np.all(held.sum(axis=0) == 20)
    for i in range(100):
        assert set(np.flatnonzero(held[i])) == {i % 10, (i + 1) % 10}
    # equal shards: 600 / 20 = 30 per (client, class)
    assert set(p.class_counts[held].tolist()) == {30}
    assert p.sizes.sum() == LABELS.size


def test_cyclic_c1_and_c10():
    p1 = make_partition(LABELS, "classes_per_client", 100, seed=0, classes_per_client=1)
    assert np.all((p1.class_counts > 0).sum(axis=0) == 10)
    assert np.all((p1.class_counts > 0).sum(axis=1) == 1)
    p10 = make_partition(LABELS, "classes_per_client", 100, seed=0, classes_per_client=10)
    assert np.all(p10.class_counts == 6)


def test_cyclic_last_shard_takes_remainder():
    y = np.repeat(np.arange(2), [10, 7])
    p = make_partition(y, "classes_per_client", 3, seed=0, classes_per_client=1)
    # class 0 held by clients 0 and 2 (10 -> 5 + 5), class 1 by client 1
    assert p.class_counts.tolist() == [[5, 0], [0, 7], [5, 0]]
    y = np.repeat(np.arange(2), [11, 7])
    p = make_partition(y, "classes_per_client", 3, seed=0, classes_per_client=1)
    assert p.class_counts.tolist() == [[5, 0], [0, 7], [6, 0]]


def test_disjoint_m5_c2():
    p = make_partition(LABELS, "classes_per_client", 5, seed=0, classes_per_client=2, assignment="disjoint")
    for k in range(5):
        assert set(np.flatnonzero(p.class_counts[k])) == {2 * k, 2 * k + 1}
        assert np.array_equal(p.client_indices[k], np.flatnonzero(np.isin(LABELS, [2 * k, 2 * k + 1])))


def test_random_assignment():
    p = make_partition(LABELS, "classes_per_client", 10, seed=0, classes_per_client=3, assignment="random")
    held = p.class_counts > 0
    assert np.all(held.sum(axis=1) == 3)
    for i in range(10):
        assert held[i, i % 10]
    for k in range(K):  # each class is split equally among its holders
        c = p.class_counts[held[:, k], k]
        assert c.sum() == PER_CLASS and c.max() - c.min() <= 1


def test_classes_per_client_every_client_needs_data():
    y = np.repeat(np.arange(10), [1] + [10] * 9)  # class 0 has one sample but two holders (clients 0 and 10)
    with pytest.raises(ConfigError) as e:
        make_partition(y, "classes_per_client", 20, seed=0, classes_per_client=1)
    assert str(e.value).startswith("classes_per_client: ") and "\n" not in str(e.value)


# ------------------------------------------------------------------------------------------ size skew


def test_size_skew_labels_iid_sizes_skewed():
    p = make_partition(LABELS, "size_skew", 10, seed=0, alpha=0.5)
    assert p.sizes.min() >= 10 and p.sizes.sum() == LABELS.size
    assert p.sizes.max() > 2 * p.sizes.min()
    big = np.argmax(p.sizes)
    frac = p.class_counts[big] / p.sizes[big]
    assert np.all(np.abs(frac - 0.1) < 0.05)
    even = make_partition(LABELS, "size_skew", 10, seed=0, alpha=1e4)
    assert even.sizes.max() - even.sizes.min() < 100


# ------------------------------------------------------------------------------------ inner dirichlet


def test_inner_dirichlet_quota_and_skew():
    p = make_partition(LABELS, "inner_dirichlet", 10, seed=42, alpha=0.05)
    assert np.all(p.sizes == 600)
    q = make_partition(LABELS, "inner_dirichlet", 10, seed=42, alpha=1000.0)
    assert (p.class_counts > 0).sum(axis=1).mean() < (q.class_counts > 0).sum(axis=1).mean()
    assert np.all(np.abs(q.class_counts - 60) < 30)


def test_inner_dirichlet_sigma_and_speed():
    import time

    y = np.random.default_rng(0).integers(0, 10, 50_000)
    t = time.perf_counter()
    p = make_partition(y, "inner_dirichlet", 10, seed=0, alpha=0.1)
    assert time.perf_counter() - t < 2.0
    assert np.all(p.sizes == 5000)
    s = make_partition(y, "inner_dirichlet", 10, seed=0, alpha=0.1, sigma=0.5)
    assert s.params == {"alpha": 0.1, "sigma": 0.5}
    assert s.sizes.max() > s.sizes.min() + 100 and s.sizes.sum() <= y.size


# ------------------------------------------------------------------------------------------ validation


def _one_line(e: pytest.ExceptionInfo, key: str):
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{key}: "), msg
    assert e.value.key == key


@pytest.mark.parametrize(
    "kwargs,key",
    [
        (dict(scheme="dirichlet", num_clients=10, alpha=0.0), "alpha"),
        (dict(scheme="dirichlet", num_clients=10, alpha=-1), "alpha"),
        (dict(scheme="size_skew", num_clients=10, alpha=float("nan")), "alpha"),
        (dict(scheme="dirichlet", num_clients=10), "alpha"),  # required, missing
        (dict(scheme="iid", num_clients=0), "clients"),
        (dict(scheme="iid", num_clients=-3), "clients"),
        (dict(scheme="iid", num_clients=500), "clients"),
        (dict(scheme="dirichlet", num_clients=40, alpha=0.5), "clients"),  # 40 x 10 > 300
        (dict(scheme="no_such_scheme", num_clients=10), "partition"),
        (dict(scheme="classes_per_client", num_clients=10, classes_per_client=11), "classes_per_client"),
        (dict(scheme="classes_per_client", num_clients=10, classes_per_client=0), "classes_per_client"),
        (dict(scheme="classes_per_client", num_clients=10, classes_per_client=2.5), "classes_per_client"),
        (dict(scheme="classes_per_client", num_clients=6, classes_per_client=2, assignment="disjoint"), "classes_per_client"),
        (dict(scheme="classes_per_client", num_clients=6, classes_per_client=2, assignment="zigzag"), "assignment"),
        (dict(scheme="dirichlet", num_clients=10, alpha=0.5, min_size=-1), "min_size"),
        (dict(scheme="inner_dirichlet", num_clients=10, alpha=0.5, sigma=-1.0), "sigma"),
    ],
)
def test_validate_errors(kwargs, key):
    kwargs = dict(kwargs)
    scheme, m = kwargs.pop("scheme"), kwargs.pop("num_clients")
    with pytest.raises(ConfigError) as e:
        validate_params(scheme, m, 300, 10, **kwargs)
    _one_line(e, key)
    # make_partition runs the same checks before doing any work
    y = np.repeat(np.arange(10), 30)
    with pytest.raises(ConfigError) as e2:
        make_partition(y, scheme, m, seed=0, **kwargs)
    _one_line(e2, key)


def test_validate_messages():
    with pytest.raises(ConfigError, match=r"^clients: 500 clients but only 300 training samples"):
        validate_params("iid", 500, 300, 10)
    with pytest.raises(ConfigError, match=r"^partition: unknown partition scheme 'nope'; allowed: classes_per_client, "):
        validate_params("nope", 5, 300, 10)
    validate_params("dirichlet", 10, 300, 10, alpha=0.5, classes_per_client=99)  # unused params are not checked
    validate_params("classes_per_client", 5, 300, 10, classes_per_client=2, assignment="disjoint")


def test_bad_labels_and_seed():
    with pytest.raises(ConfigError, match="^num_classes: "):
        make_partition(LABELS, "iid", 5, seed=0, num_classes=5)
    with pytest.raises(ConfigError, match="^seed: "):
        make_partition(LABELS, "iid", 5, seed=-1)
    with pytest.raises(ValueError):
        make_partition(LABELS.astype(float) + 0.5, "iid", 5, seed=0)


def test_absent_classes_are_allowed():
    y = np.repeat(np.array([0, 2, 5]), 100)
    for scheme, params in [("dirichlet", {"alpha": 0.5}), ("inner_dirichlet", {"alpha": 0.5}), ("dirichlet_grouped", {"alpha": 0.5})]:
        p = make_partition(y, scheme, 5, seed=0, num_classes=8, **params)
        assert p.class_counts.shape == (5, 8)
        assert p.class_counts[:, [1, 3, 4, 6, 7]].sum() == 0
        assert p.sizes.sum() == y.size


# ----------------------------------------------------------------------------------------------- report


def test_plot_partition_writes_files(tmp_path):
    p = make_partition(LABELS, "dirichlet", 10, seed=0, alpha=0.1)
    paths = plot_partition(p.class_counts, tmp_path / "plots" / "bubble", title="MNIST, alpha=0.1")
    assert [x.name for x in paths] == ["bubble.png", "bubble.pdf"]
    for x in paths:
        assert x.exists() and x.stat().st_size > 1000
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert paths[1].read_bytes()[:5] == b"%PDF-"
    again = plot_partition(p.class_counts, tmp_path / "again", title="MNIST, alpha=0.1")
    assert again[0].read_bytes() == paths[0].read_bytes()
    assert again[1].read_bytes() == paths[1].read_bytes()
    names = [f"c{i}" for i in range(K)]
    big = make_partition(LABELS, "classes_per_client", 100, seed=0, classes_per_client=2)
    assert all(x.stat().st_size > 0 for x in plot_partition(big.class_counts, tmp_path / "big", class_names=names))


def test_partition_summary():
    p = make_partition(LABELS, "classes_per_client", 100, seed=0, classes_per_client=2)
    s = partition_summary(p)
    json.dumps(s)  # JSON-ready
    assert s["num_clients"] == 100 and s["assigned_samples"] == LABELS.size and s["unassigned_samples"] == 0
    assert s["classes_per_client_stats"] == {"min": 2, "max": 2, "mean": 2.0, "std": 0.0}
    assert s["size_stats"]["min"] == s["size_stats"]["max"] == 60
    assert s["clients_per_class"] == [20] * 10
    assert s["mean_label_entropy_bits"] == pytest.approx(1.0)
    assert isinstance(p, Partition)


@pytest.mark.parametrize("alpha", [0.5, 0.1])
def test_dirichlet_feddf_every_client_holds_half_its_fair_share(alpha):
    """FedMHO's partitioner (FedDF's code): redrawn until each client holds >= 0.5 N/m samples; NIID-Bench's
    labeldir guarantees only 10 samples; min_share is the knob."""
    m, n = 10, len(LABELS)
    p = make_partition(LABELS, "dirichlet_feddf", m, seed=3, alpha=alpha)
    sizes = [len(i) for i in p.client_indices]
    assert min(sizes) >= 0.5 * n / m
    assert sum(sizes) == n
    strict = make_partition(LABELS, "dirichlet_feddf", m, seed=3, alpha=alpha, min_share=0.7)
    assert min(len(i) for i in strict.client_indices) >= 0.7 * n / m


def test_dirichlet_feddf_min_share_is_checked():
    with pytest.raises(ConfigError, match="min_share"):
        validate_params("dirichlet_feddf", 10, 6000, 10, alpha=0.5, min_share=1.5)
