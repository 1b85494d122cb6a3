"""Every bad value fails before any work, with one line naming the key and what is allowed."""
import copy
from dataclasses import asdict
import subprocess
import sys

import pytest
import yaml

from osfl.config import PROFILES, RunConfig, scaled_epochs
from osfl.errors import ConfigError
from osfl.runconfig import validate

with open("params.yaml") as f:
    BASE = yaml.safe_load(f)


def with_(**changes):
    p = copy.deepcopy(BASE)
    for k, v in changes.items():
        node = p
        parts = k.split("__")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = v
    return p


def test_default_params_are_valid():
    cfg = validate(BASE)
    assert isinstance(cfg, RunConfig) and cfg.params is BASE
    assert cfg.dataset.name == "digits" and cfg.profile.name == "demo" and cfg.model == "cnn2"


def test_client_models_give_each_client_its_architecture():
    assert validate(BASE).client_models == ["cnn2"] * 5  # empty: every client uses `model`
    cfg = validate(with_(client_models="cnn2, lenet5,lenet5_avg,cnn_m3,cnn2"))  # DVC passes a string
    assert cfg.client_models == ["cnn2", "lenet5", "lenet5_avg", "cnn_m3", "cnn2"] and cfg.model == "cnn2"


@pytest.mark.parametrize("changes,pattern", [
    ({"dataset": "imagenet"}, r"^dataset: unknown dataset 'imagenet'; allowed: .*digits.*fmnist"),
    ({"methods": ["fedavg", "magic"]}, r"^methods: unknown method 'magic'; allowed: .*ensemble.*fedavg"),
    ({"methods": []}, r"^methods: must be a non-empty list"),
    ({"partition": "zipf"}, r"^partition: .*'zipf'.*allowed: .*dirichlet.*iid"),
    ({"alpha": 0}, r"^alpha: "),
    ({"alpha": -0.5}, r"^alpha: "),
    ({"clients": 0}, r"^clients: "),
    ({"clients": 100000}, r"^clients: "),
    ({"profile": "huge"}, r"^profile: unknown profile 'huge'; allowed: paper, quick, demo, cpu, smoke"),
    ({"local__epochs": -1}, r"^local.epochs: must be >= 0, got -1"),
    ({"local__lr": 0}, r"^local.lr: must be > 0"),
    ({"local__batch_size": 0}, r"^local.batch_size: must be >= 1"),
    ({"local__augment": "mixup"}, r"^local.augment: unknown value 'mixup'; allowed: auto, none, crop_flip, flip"),
    ({"local__init": "random"}, r"^local.init: unknown value 'random'; allowed: shared, independent"),
    ({"model": "cnn3_bn"}, r"^model: 'cnn3_bn' takes inputs"),
    ({"seed": "x"}, r"^seed: must be an integer"),
    ({"client_models": ["cnn2", "lenet5"]}, r"^client_models: lists 2 architectures for clients=5"),
    ({"client_models": "cnn2,cnn2,cnn2,cnn2,resnet99"}, r"^client_models: unknown model 'resnet99'"),
    ({"client_models": 3}, r"^client_models: must be a list of 5 model names or empty"),
])
def test_bad_values_fail_with_one_line(changes, pattern):
    with pytest.raises(ConfigError, match=pattern) as e:
        validate(with_(**changes))
    assert "\n" not in str(e.value)


def test_profiles_scale_epochs_but_keep_paper_values():
    from osfl.config import LocalTraining

    assert "epochs" not in BASE["local"] and LocalTraining.from_params(BASE["local"]).epochs == 200  # FedHydra's E
    assert scaled_epochs(200, PROFILES["paper"]) == 200
    assert scaled_epochs(200, PROFILES["quick"]) == 20
    assert scaled_epochs(200, PROFILES["smoke"]) == 2
    assert scaled_epochs(30, PROFILES["smoke"]) == 1
    assert scaled_epochs(0, PROFILES["smoke"]) == 0


@pytest.mark.parametrize("method,keys", [("dense", ("g_steps",)), ("coboost", ("g_steps",)),
                                         ("fedhydra", ("g_steps", "ms_steps")),
                                         ("feddf", ("steps_per_epoch", "g_steps"))])
def test_profiles_scale_steps_per_server_epoch(method, keys):
    """Steps inside a server epoch: unchanged at paper and quick, halved by demo, x0.1 at smoke (the counts that
    dominated smoke runs); the paper's value stays the method's default."""
    from osfl.methods import METHODS

    m = METHODS.get(method)()
    for k in keys:
        paper = m.defaults[k]
        assert m.resolved(PROFILES["paper"])[k] == paper
        assert m.resolved(PROFILES["quick"])[k] == paper  # the committed quick results keep their step counts
        assert m.resolved(PROFILES["demo"])[k] == round(paper * 0.5)
        assert m.resolved(PROFILES["smoke"])[k] == max(1, round(paper * 0.1)) < paper
        assert m.resolved(PROFILES["demo"])["epochs"] == m.resolved(PROFILES["quick"])["epochs"]


@pytest.mark.parametrize("changes,pattern", [
    ({"alpah": 0.1}, r"^alpah: unknown key; did you mean alpha\? allowed: "),
    ({"local__momentun": 0}, r"^local.momentun: unknown key; did you mean local.momentum\? allowed: "),
    ({"runtime__thread": 1}, r"^runtime.thread: unknown key; did you mean runtime.threads\? allowed: "),
    ({"server__fedhydra__betta": 0.5}, r"^server.fedhydra.betta: unknown key; did you mean server.fedhydra.beta\?"),
    ({"server__fedhidra": {}}, r"^server.fedhidra: unknown key; did you mean server.fedhydra\?"),
    ({"data__mirorr": ""}, r"^data.mirorr: unknown key; did you mean data.mirror\?"),
    ({"splits": ["dir0.5"]}, r"^splits: unknown key; .*allowed: "),  # a FedHydra pipeline key, not a main one
    ({"methods": [["fedavg"]]}, r"^methods: entry \['fedavg'\] is not a method name; allowed: "),
    ({"server__dense__lr": -1}, r"^server.dense.lr: must be > 0"),  # checked even when dense is not run
])
def test_unknown_keys_fail_with_the_nearest_known_one(changes, pattern):
    with pytest.raises(ConfigError, match=pattern) as e:
        validate(with_(**changes))
    assert "\n" not in str(e.value)


def test_paper_params_files_admit_their_own_keys_only():
    with open("papers/fedhydra/params.yaml") as f:
        fh = yaml.safe_load(f)
    fh = {**fh, "model": fh["model"]["fmnist"]}
    validate(fh, params_file="papers/fedhydra/params.yaml")
    with pytest.raises(ConfigError, match=r"^hetero.server_modle: unknown key; did you mean hetero.server_model\?"):
        validate({**fh, "hetero": {**fh["hetero"], "server_modle": "x"}}, params_file="papers/fedhydra/params.yaml")


def test_a_new_paper_s_keys_are_data_in_its_own_folder(tmp_path):
    """A paper adds params keys by listing them in the keys.yaml beside its params.yaml: no module to edit
    (osfl.config.pipeline_keys). Without that file its keys are refused like any typo; a bad file in one line."""
    folder = tmp_path / "papers" / "newpaper"
    folder.mkdir(parents=True)
    params = {**BASE, "widgets": [1, 2], "sweep": {"sizes": [3]}}
    with pytest.raises(ConfigError, match=r"^widgets: unknown key"):
        validate(params, params_file=folder / "params.yaml")
    (folder / "keys.yaml").write_text("widgets: null\nsweep: [sizes]\n")
    validate(params, params_file=folder / "params.yaml")
    with pytest.raises(ConfigError, match=r"^sweep.size: unknown key; did you mean sweep.sizes\?"):
        validate({**params, "sweep": {"size": 3}}, params_file=folder / "params.yaml")
    (folder / "keys.yaml").write_text("widgets: 3\n")
    with pytest.raises(ConfigError, match=r"keys.yaml: must map each key to a list of its sub-keys or to null$"):
        validate(params, params_file=folder / "params.yaml")


def test_params_yaml_writes_only_what_differs_from_the_defaults():
    """params.yaml has one `server.<method>` entry per method (each server stage depends on its own) holding only
    values that differ from the method file's defaults (the paper's values, the SPEC's proposals), so `dvc exp show`
    lists the knobs that differ; `python -m osfl.runconfig` prints every default; `-S ++server.<m>.<key>=v` sets one."""
    from osfl.accel import Accel
    from osfl.config import LocalTraining
    from osfl.runconfig import all_defaults
    from osfl.methods import METHODS

    assert set(BASE["server"]) == set(METHODS.names())
    defaults = all_defaults()
    for name in METHODS.names():
        assert defaults["server"][name] == METHODS.get(name).defaults, name
        for key, value in (BASE["server"][name] or {}).items():
            assert value != defaults["server"][name][key], f"server.{name}.{key} is at its default"
    for section, default in (("local", asdict(LocalTraining())), ("runtime", Accel().__dict__)):
        assert defaults[section] == default
        for key, value in (BASE.get(section) or {}).items():
            assert value != default[key], f"{section}.{key} is at its default"
    # a key added with `++` (as `dvc exp run -S ++server.dense.adv=0.5` writes it) is validated like any other
    assert validate({**BASE, "server": {**BASE["server"], "dense": {"adv": 0.5}}})
    with pytest.raises(ConfigError, match=r"^server.dense.avd: unknown key; did you mean server.dense.adv\?"):
        validate({**BASE, "server": {**BASE["server"], "dense": {"avd": 0.5}}})
    out = subprocess.run([sys.executable, "-m", "osfl.runconfig"], capture_output=True, text=True, check=True).stdout
    assert yaml.safe_load(out) == defaults


def test_runtime_device_and_threads_are_validated():
    with pytest.raises(ConfigError, match=r"^runtime.threads: must be an integer >= 1, got 0"):
        validate(with_(runtime__threads=0))
    from osfl.runtime import get_device

    with pytest.raises(ConfigError, match=r"^runtime.device: unknown device 'tpu'"):
        get_device("tpu")


def test_a_method_is_built_from_the_settings_the_run_configuration_validated():
    """``make_method(cfg, name)``: the method's hyper-parameters come from the validated configuration
    (``RunConfig.method_settings``), the same mapping ``validate`` checked; no stage passes raw params."""
    from osfl.protocols.one_shot import make_method

    cfg = validate({**BASE, "methods": ["fedavg", "dense"], "server": {**BASE["server"], "dense": {"adv": 0.5}}})
    assert cfg.method_settings("dense") == {"adv": 0.5} and cfg.method_settings("feddf") == {}
    dense = make_method(cfg, "dense")
    assert dense.params["adv"] == 0.5 and dense.params["g_steps"] == dense.defaults["g_steps"]
    with pytest.raises(ConfigError, match=r"^methods: 'feddf' is not in methods="):
        make_method(cfg, "feddf")
