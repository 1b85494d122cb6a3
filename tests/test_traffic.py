"""HFLDD's communication-cost model (osfl.cost.traffic, Eqs. 3, 6, 7) prints the paper's six traffic numbers.

The inputs are the paper's: the printed round indices of Tables II/III (T = printed + 1), the parameter counts of the
two models as our registry builds them, the distilled-image sizes from the datasets' shapes, and H (never printed;
inferred by the SPEC §1.8 from the traffic: 16 for MNIST, 23 for CIFAR-10). The published values are read from
papers/hfldd/published/ as printed."""
from pathlib import Path

import pytest

from osfl.cost.traffic import (MIB, fedavg_traffic, fedseq_traffic, hfldd_traffic, model_exchanges,
                               rounds_to_target)
from osfl.models import build_model, count_parameters
from osfl.reporting.published import load_artifacts, load_published_table

PUBLISHED = Path(__file__).resolve().parents[1] / "papers" / "hfldd" / "published"
N, D_G, N_C, PER_MEMBER, SUPERCLIENTS, PER_SUPERCLIENT = 100, 1000, 10, 100, 10, 10
CASES = {  # table id: (model, input shape, H)
    "table2": ("lenet5", (1, 28, 28), 16),
    "table3": ("fedd3_cnn", (3, 32, 32), 23),
}


def printed(table_id):
    table = load_published_table({a.id: a for a in load_artifacts(PUBLISHED)}[table_id], "text")
    row = {label.split(", ")[-1]: label for label in table.index}  # "Accuracy=80%, Ratio": the target joins the key
    rounds = {m: int(str(v).split("/")[0]) for m, v in table.loc[row["rounds/Accuracy"]].items()}
    traffic = {m: float(v) for m, v in table.loc[row["Traffic (MB)"]].items()}
    ratio = {m: float(v) for m, v in table.loc[row["Ratio"]].items()}
    return rounds, traffic, ratio


@pytest.mark.parametrize("table_id", sorted(CASES))
def test_the_papers_six_traffic_numbers(table_id):
    model, shape, headers = CASES[table_id]
    params = count_parameters(build_model(model, shape, N_C))
    image_bytes = shape[0] * shape[1] * shape[2]  # 8 bits per pixel value
    rounds, traffic, ratio = printed(table_id)
    ours = {
        "HFLDD": hfldd_traffic(N, D_G, N_C, (N - headers) * PER_MEMBER, image_bytes, headers, rounds["HFLDD"] + 1,
                               params),
        "FedAvg": fedavg_traffic(N, rounds["FedAvg"] + 1, params),
        "FedSeq": fedseq_traffic(SUPERCLIENTS, PER_SUPERCLIENT, rounds["FedSeq"] + 1, params),
    }
    assert {m: round(t.mib, 2) for m, t in ours.items()} == traffic
    # the ratios are printed relative to HFLDD, from the rounded MiB values (to 2 or 4 decimals)
    assert {m: traffic[m] / traffic["HFLDD"] for m in traffic} == pytest.approx(ratio, rel=2e-4)


def test_the_parts_of_hfldds_traffic():
    t = hfldd_traffic(N, D_G, N_C, 84 * 100, 784, 16, 6, 44_426)
    assert t.parts["soft_labels"] == 100 * 1000 * 10 * 4 and round(t.parts["soft_labels"] / MIB, 3) == 3.815
    assert round(t.parts["distilled"] / MIB, 3) == 6.281 and round(t.parts["model"] / MIB, 3) == 29.827
    assert t.as_dict()["bytes"] == t.bytes == sum(t.parts.values())


def test_rounds_to_target_counts_rounds_run():
    curve = [0.1, 0.5, 0.79, 0.8063, 0.9]
    assert rounds_to_target(curve, 0.80) == 4  # the paper would print round 3 (0-based)
    assert rounds_to_target(curve, 0.95) is None and rounds_to_target([], 0.5) is None
    assert model_exchanges(1) == 1 and model_exchanges(0) == 0  # the first download is a seed


def test_bad_counts_fail_naming_the_argument():
    with pytest.raises(ValueError, match="headers"):
        hfldd_traffic(N, D_G, N_C, 100, 784, -1, 5, 10)
    with pytest.raises(ValueError, match="rounds"):
        fedavg_traffic(N, 2.5, 10)
