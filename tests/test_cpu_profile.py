"""The `cpu` profile: a paper's named reductions applied under it alone, and the regime guards recorded."""
from pathlib import Path

import pytest
import yaml

from osfl import cpu_profile
from osfl.errors import ConfigError
from osfl.models import build_model

ROOT = Path(__file__).resolve().parents[1]

BLOCK = {
    "budget": "one sitting",
    "models": [{"from": "vgg9", "to": "vgg9_cpu", "reason": "slow"}],
    "set": [{"set": "local.epochs=20", "reason": "fewer epochs"}],
    "guards": {"client_acc_mean_min": 25.0, "server_gain_min": 5.0},
}


def params(profile="cpu", **extra):
    return {"profile": profile, "model": "vgg9", "local": {"epochs": 200, "lr": 0.005},
            "parts": [{"name": "a", "model": "vgg9"}, {"name": "b", "model": {"fmnist": "vgg9", "svhn": "cnn"}}],
            "flops": {"rows": {"VGG-9": "vgg9"}}, "cpu": BLOCK, **extra}


def test_cpu_applies_the_named_reductions_and_the_command_line_wins():
    out = cpu_profile.apply(params(), ["local.lr=0.1"])
    assert out["model"] == "vgg9_cpu"
    assert out["parts"][0]["model"] == "vgg9_cpu" and out["parts"][1]["model"] == {"fmnist": "vgg9_cpu", "svhn": "cnn"}
    assert out["flops"]["rows"]["VGG-9"] == "vgg9"  # Table II counts the paper's models: not under a `model` key
    assert out["local"] == {"epochs": 20, "lr": 0.1}
    assert cpu_profile.apply(params(), ["local.epochs=7"])["local"]["epochs"] == 7


@pytest.mark.parametrize("profile", ["paper", "quick", "smoke"])
def test_other_profiles_leave_the_paper_settings(profile):
    p = params(profile)
    assert cpu_profile.apply(p, []) == p


def test_cpu_without_a_block_fails_naming_the_profile():
    p = params()
    del p["cpu"]
    with pytest.raises(ConfigError, match="profile"):
        cpu_profile.apply(p, [])


@pytest.mark.parametrize("block, key", [
    ({"set": [{"set": "local.epochs=20"}]}, r"cpu\.set\[0\]"),
    ({"set": [{"set": "local.epochs=20", "reason": " "}]}, r"cpu\.set\[0\]\.reason"),
    ({"set": [{"set": "local.epochs", "reason": "x"}]}, r"cpu\.set\[0\]\.set"),
    ({"models": [{"from": "vgg9", "reason": "x"}]}, r"cpu\.models\[0\]"),
    ({"guards": {"client_acc": 3}}, r"cpu\.guards\.client_acc"),
    ({"guards": {"server_gain_min": 300}}, r"cpu\.guards\.server_gain_min"),
    ({"budgett": "x"}, r"cpu\.budgett"),
])
def test_a_bad_block_fails_early_naming_the_key(block, key):
    with pytest.raises(ConfigError, match=key):
        cpu_profile.validate(block)


def test_guards_pass_and_fail_on_their_floors():
    p = params("quick")  # guards hold under every profile
    floors = p["cpu"]["guards"]  # what RunConfig.guard_floors gives a stage
    ok = cpu_profile.client_guard(floors, [30.0, 22.0])  # mean 26
    low = cpu_profile.client_guard(floors, [20.0, 22.0])
    assert ok["client_acc_mean_min"]["passed"] and not low["client_acc_mean_min"]["passed"]
    assert cpu_profile.server_guard(floors, 15.0, 10)["server_gain_min"]["passed"]
    bad = cpu_profile.server_guard(floors, 14.9, 10)
    assert not bad["server_gain_min"]["passed"] and bad["server_gain_min"]["floor"] == 15.0
    assert cpu_profile.cvae_guard(floors, [1.0], [2.0]) is None  # not set in this block
    p["cpu"]["guards"]["cvae_below_mean_image_min"] = 100.0
    assert cpu_profile.cvae_guard(floors, [250.0, 300.0], [390.0, 380.0])["cvae_below_mean_image_min"]["passed"]
    one = cpu_profile.cvae_guard(floors, [250.0, 5e27], [390.0, 380.0])["cvae_below_mean_image_min"]
    assert one == {"floor": 100.0, "value": 50.0, "passed": False}
    assert "CVAE clients ending below their data's mean-image loss ≥ 100 %" in cpu_profile.describe(p)
    assert cpu_profile.passed({"guards": ok}) and not cpu_profile.passed({"guards": {**ok, **bad}})
    assert cpu_profile.passed({}) and cpu_profile.client_guard({}, [50.0]) is None


def test_describe_names_every_reduction_with_its_reason():
    text = cpu_profile.describe(params())
    assert "vgg9 → vgg9_cpu (slow)" in text and "local.epochs=20 (fewer epochs)" in text
    assert "chance + 5" in text and "one sitting" in text
    assert "reductions" not in cpu_profile.describe(params("paper"))


def test_vgg9_cpu_is_the_narrow_vgg9():
    counts = {n: sum(p.numel() for p in build_model(n, (1, 28, 28), 10).parameters()) for n in ("vgg9", "vgg9_cpu")}
    assert counts == {"vgg9": 69_166_346, "vgg9_cpu": 3_719_818}


def test_every_paper_cpu_block_is_valid_and_its_stages_list_it():
    for pfile in sorted((ROOT / "papers").glob("*/params.yaml")):
        p = yaml.safe_load(pfile.read_text())
        if "cpu" not in p:
            continue
        cpu_profile.validate(p["cpu"])
        stages = yaml.safe_load((pfile.parent / "dvc.yaml").read_text())["stages"]
        for name, st in stages.items():
            body = st.get("do", st)
            listed = [k for entry in body.get("params") or [] if isinstance(entry, dict) for v in entry.values()
                      for k in v]
            if "profile" in listed:  # a stage that reads the profile reads the cpu block under it
                assert "cpu" in listed, f"{pfile.parent.name}: stage {name} lists profile but not cpu"
            if "cpu" in listed and "inputs" in p:  # every stage validates the input preparation (osfl.runconfig.load_run)
                assert "inputs" in listed, f"{pfile.parent.name}: stage {name} lists cpu but not inputs"


def test_a_run_that_failed_its_guard_is_marked_and_left_out_of_the_cell():
    import pandas as pd

    from osfl.reporting.runs import compare_rows

    paper = pd.DataFrame({"DENSE": [70.0]}, index=pd.Index(["Fashion, 1, 0.5"], name="row"))
    bad = {"server_gain_min": {"floor": 15.0, "value": 10.4, "passed": False}}
    runs = {("fmnist", "dir0.5"): {"dense": [{"acc_final": 60.0, "seed": 0},
                                             {"acc_final": 10.4, "seed": 1, "guards": bad}]}}
    df, numbers = compare_rows(runs, paper, paper * float("nan"), [{"id": "dense", "paper": "DENSE"}],
                               lambda ds, e: "Fashion, 1")
    cell = df.loc["Fashion, 1, 0.5", "DENSE"]
    assert cell.startswith("60.00 / 70.00 (-10.00)") and "[failed its regime guard: s1 10.40]" in cell
    assert numbers[("Fashion, 1, 0.5", "DENSE")]["values"] == {0: 60.0}
    assert df.attrs["failed_guard"] == 1


def test_a_server_carries_the_guards_of_the_parts_it_read(tmp_path):
    import json
    from types import SimpleNamespace

    from osfl.stages.evaluate import cohort_guards

    failed = {"client_acc_mean_min": {"floor": 25.0, "value": 21.5, "passed": False}}
    (tmp_path / "clients-cnn.json").write_text(json.dumps({"guards": failed}))
    (tmp_path / "clients-vgg9.json").write_text(json.dumps({"local_acc_mean": 58.0}))
    paths = SimpleNamespace(results=tmp_path)
    got = cohort_guards(paths, {"clients_dir": ["models/r/clients/vgg9", "models/r/clients/cnn"]})
    assert got == {"clients:cnn.client_acc_mean_min": failed["client_acc_mean_min"]}
    assert not cpu_profile.passed({"guards": got}) and cohort_guards(paths, {"clients_dir": "models/r/clients"}) == {}
