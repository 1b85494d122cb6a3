"""FedMHO's published tables (papers/fedmho/published/): copied unchanged, and read by the paper-agnostic loader
(Roman table numbers, mean/std column pairs, FLOPs with SI multipliers, text tables read as text)."""
from pathlib import Path

import pytest

from osfl.errors import ConfigError
from osfl.reporting.published import load_artifacts, load_published_table

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "papers" / "fedmho" / "published"
SHARED = ROOT.parent / "shared" / "papers" / "fedmho"


@pytest.fixture(scope="module")
def tables():
    return {a.id: a for a in load_artifacts(PUBLISHED, numbering="roman") if a.kind == "table"}


def test_the_copies_are_unchanged():
    csvs = sorted(p.name for p in PUBLISHED.glob("*.csv"))
    assert len(csvs) == 11
    if SHARED.is_dir():
        assert (PUBLISHED / "artifacts.yaml").read_bytes() == (SHARED / "artifacts.yaml").read_bytes()
        for name in csvs:
            assert (PUBLISHED / name).read_bytes() == (SHARED / "tables" / name).read_bytes(), name


def test_eleven_tables_with_roman_labels(tables):
    assert sorted(tables) == [f"table{n:02d}" for n in range(1, 12)]
    assert tables["table04"].label == "Table IV" and tables["table11"].label == "Table XI"


def test_table_iv_mean_and_std(tables):
    acc, std = load_published_table(tables["table04"]), load_published_table(tables["table04"], which="std")
    assert "FedMHO-SD" in acc.columns and "FedMHO-SD_acc" not in acc.columns
    assert acc.loc["Fashion, 1, 0.5", "FedMHO-SD"] == 77.73 and std.loc["Fashion, 1, 0.5", "FedMHO-SD"] == 0.59
    assert acc.loc["MNIST, 1, 0.5", "FedAvg"] == 85.91 and std.loc["MNIST, 1, 0.5", "FedAvg"] == 0.57
    assert not acc.isna().any().any() and not std.isna().any().any()


def test_table_ii_flops_with_multipliers(tables):
    flops = load_published_table(tables["table02"])
    assert flops.loc["VGG-9", "MNIST & Fashion"] == pytest.approx(126.47e6)
    assert flops.loc["CNN", "MNIST & Fashion"] == pytest.approx(467.23e3)


def test_text_tables_read_as_text_and_fail_as_numbers(tables):
    with pytest.raises(ConfigError, match="'VGG-9' is not a number"):
        load_published_table(tables["table01"])
    text = load_published_table(tables["table01"], which="text")
    assert text.loc["Small", "FEDCVAE"] == "CVAE-small"
    assert load_published_table(tables["table03"], which="text").loc["Batch Size", "Fashion"] == "64"
