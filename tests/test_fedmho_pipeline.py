"""papers/fedmho/: the flops stage counts what params.yaml names, the render stage puts it beside Table II, and the
committed report is what the committed counts render to."""
import json
import shutil
from pathlib import Path

import pytest

from osfl.errors import ConfigError
from osfl.papers import fedmho
from osfl.stages.flops import table_macs

PAPER = Path(__file__).resolve().parents[1] / "papers" / "fedmho"


def test_table_macs_follows_the_params():
    spec = {"columns": {"MNIST & Fashion": "fmnist", "EMNIST": "emnist"},
            "rows": {"CNN": {"fmnist": "cnn_mnist", "emnist": "cnn_emnist"}, "CVAE-small": "cvae_small"}}
    out = table_macs(spec)
    assert out["CNN"]["MNIST & Fashion"]["model"] == "cnn_mnist"
    assert out["CNN"]["MNIST & Fashion"]["macs"] == 144_000 + 320_000 + 3_200  # conv1 + conv2 + FC, by hand
    small = out["CVAE-small"]["EMNIST"]
    assert small["classes"] == 47 and small["macs"] > small["macs_performed"]  # stride-2 transposed convolutions


def test_table_macs_refuses_bad_params():
    with pytest.raises(ConfigError, match="^flops: must be a mapping"):
        table_macs({"rows": {}})
    with pytest.raises(ConfigError, match="^flops.rows.CNN: names no model for dataset 'svhn'"):
        table_macs({"columns": {"SVHN": "svhn"}, "rows": {"CNN": {"fmnist": "cnn_mnist"}}})
    with pytest.raises(ConfigError, match="^flops.transposed:"):
        table_macs({"columns": {}, "rows": {}, "transposed": "input"})


def test_committed_report_is_what_the_committed_counts_render_to(tmp_path):
    shutil.copy(PAPER / "results" / "flops.json", tmp_path / "flops.json")
    written = fedmho.render({}, tmp_path, tmp_path, tmp_path / "reports", published_root=str(PAPER / "published"),
                            summary=tmp_path / "summary.json")
    for path in written:
        assert path.read_text() == (PAPER / "reports" / path.name).read_text(), path.name
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads((PAPER / "summary.json").read_text())


def test_every_table2_cell_within_one_percent():
    summary = json.loads((PAPER / "summary.json").read_text())
    assert summary["table02"]["within_tolerance"] == summary["table02"]["cells"] == 12
