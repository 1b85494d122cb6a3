"""A run's settings and the checks that need nothing above them: the leaf of the configuration layer.

Here: reading a params file, the ``--set`` overrides, the split shorthand, the per-dataset merge, the check of every
top-level key (the main experiment's, plus those a pipeline lists in the ``keys.yaml`` beside its params file), the
one-line value checks, and the typed settings (:class:`LocalTraining`, :class:`CVAETraining`, :class:`RunConfig`,
:class:`ExperimentPaths`). It imports no registry, no paper and no profile logic, so every package may import it
without a cycle (tests/test_import_graph.py). Resolving and validating a whole run, which asks the registries and the
cpu profile, is :func:`osfl.runconfig.load_run`, the only way a stage gets its configuration.

The paper's hyper-parameters are written in ``params.yaml`` unchanged. Reduced scale comes only from the
``profile`` key, which the stages apply when they read a value (:func:`scaled_epochs`); the value in force is
recorded next to every result. Every bad value fails before any work, with one line that names the key and
what is allowed (:class:`osfl.errors.ConfigError`).
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, TypeVar

import yaml

from .errors import ConfigError, unknown_key
from .profiles import PROFILES, Profile, get_profile, scaled, scaled_epochs  # noqa: F401  (re-exported)

S = TypeVar("S")  # a params block's settings type (RunConfig.settings)

if TYPE_CHECKING:  # the settings' types, for readers and checkers; importing them would pull in torch
    import torch

    from .accel import Accel
    from .data import DatasetSpec
    from .data.inputs import InputPrep


def load_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise ConfigError("params", f"{path} not found; run from the repository root or pass --params")
    with open(path) as f:
        params = yaml.safe_load(f) or {}
    if not isinstance(params, dict):
        raise ConfigError("params", f"{path} must hold a mapping of keys")
    return params


# ---------------------------------------------------------------------------------------------------------
# validation helpers: each raises ConfigError(key, one line)


def require(params: Mapping[str, Any], key: str) -> Any:
    node: Any = params
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ConfigError(key, "missing from params.yaml")
        node = node[part]
    return node


def check_int(key: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(key, f"must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigError(key, f"must be <= {maximum}, got {value}")
    return value


def check_float(key: str, value: Any, *, positive: bool = False, minimum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(key, f"must be a number, got {value!r}")
    if positive and value <= 0:
        raise ConfigError(key, f"must be > 0, got {value}")
    if minimum is not None and value < minimum:
        raise ConfigError(key, f"must be >= {minimum}, got {value}")
    return float(value)


def check_delta(key: str, value: Any) -> float:
    """A probability strictly between 0 and 1 (the δ of (ε, δ)-DP)."""
    value = check_float(key, value, positive=True)
    if value >= 1:
        raise ConfigError(key, f"must be < 1, got {value}")
    return value


def check_choice(key: str, value: Any, allowed: list[str]) -> str:
    if value not in allowed:
        raise ConfigError(key, f"unknown value {value!r}; allowed: {', '.join(allowed)}")
    return value


@dataclass(frozen=True)
class LocalTraining:
    """Client-side training hyper-parameters (FedHydra SPEC §1.9: SGD, lr 0.01, B 128, E 200)."""

    epochs: int = 200
    batch_size: int = 128
    lr: float = 0.01
    momentum: float = 0.9  # not stated by FedHydra; DENSE code value (SPEC §1.9 proposal)
    weight_decay: float = 0.0
    augment: str = "auto"  # auto = crop+flip for 32x32 RGB, none for 28x28 grey (DENSE)
    init: str = "shared"  # clients start from one common initial model (FedAvg protocol)
    eval_every: int = 0  # >0: record client test accuracy every N local epochs (FedHydra Fig. 8)
    optimizer: str = "sgd"  # sgd (momentum, weight_decay) or adam (lr, weight_decay; FedMHO Table X: Adam 5e-4)
    grad_clip: float = 0.0  # >0: clip each step's total gradient norm (OFedED SPEC §2.1 [CB]: 10); 0 = off
    dp_sigma: float = 0.0  # >0: DP-SGD with this noise multiplier (OFedED SPEC §2.8 [P], Fig. 3); 0 = off
    dp_clip: float = 1.0  # DP-SGD's per-sample clipping norm τ (SPEC §2.8 [P]: 1)
    dp_delta: float = 1e-5  # δ of the (ε, δ) recorded for DP-SGD clients (privacy accounting only)

    KEYS = ("epochs", "batch_size", "lr", "momentum", "weight_decay", "augment", "init", "eval_every", "optimizer",
            "grad_clip", "dp_sigma", "dp_clip", "dp_delta")
    AUGMENTS = ("auto", "none", "crop_flip", "flip")
    INITS = ("shared", "independent")  # one common initial model (FedAvg protocol), or one draw per client
    OPTIMIZERS = ("sgd", "adam")

    @classmethod
    def from_params(cls, local: Mapping[str, Any] | None) -> "LocalTraining":
        """``local`` of a params file: only what differs from the defaults above (the paper's values)."""
        local = local or {}
        if not isinstance(local, Mapping):
            raise ConfigError("local", f"must be a mapping ({', '.join(cls.KEYS)})")
        default = cls.__dataclass_fields__

        def get(k):
            return local[k] if k in local else default[k].default

        return cls(
            epochs=check_int("local.epochs", get("epochs"), minimum=0),
            batch_size=check_int("local.batch_size", get("batch_size"), minimum=1),
            lr=check_float("local.lr", get("lr"), positive=True),
            momentum=check_float("local.momentum", get("momentum"), minimum=0.0),
            weight_decay=check_float("local.weight_decay", get("weight_decay"), minimum=0.0),
            augment=check_choice("local.augment", get("augment"), list(cls.AUGMENTS)),
            init=check_choice("local.init", get("init"), list(cls.INITS)),
            eval_every=check_int("local.eval_every", get("eval_every"), minimum=0),
            optimizer=check_choice("local.optimizer", get("optimizer"), list(cls.OPTIMIZERS)),
            grad_clip=check_float("local.grad_clip", get("grad_clip"), minimum=0.0),
            dp_sigma=check_float("local.dp_sigma", get("dp_sigma"), minimum=0.0),
            dp_clip=check_float("local.dp_clip", get("dp_clip"), positive=True),
            dp_delta=check_delta("local.dp_delta", get("dp_delta")),
        )

    @property
    def dp(self) -> bool:
        """Whether local training is DP-SGD (``dp_sigma`` > 0)."""
        return self.dp_sigma > 0

    def as_dict(self) -> dict[str, Any]:
        """The settings in force, as recorded with results. Keys younger than the results already recorded appear
        only when they change something, so those results stay byte-identical: ``optimizer`` only when it is not
        SGD (no key = SGD), ``grad_clip`` only when > 0 (no key = no clipping), and ``dp_sigma``, ``dp_clip``,
        ``dp_delta`` only with DP-SGD on (no key = no DP; ``dp_clip`` and ``dp_delta`` are not read without it)."""
        d = asdict(self)
        if d["optimizer"] == "sgd":
            del d["optimizer"]
        if not d["grad_clip"]:
            del d["grad_clip"]
        if not self.dp:
            for k in ("dp_sigma", "dp_clip", "dp_delta"):
                del d[k]
        return d


CVAE_REDUCTIONS = ("batch_mean", "sum")  # the official per-dataset reductions (FedMHO SPEC §1.2)


@dataclass(frozen=True)
class CVAETraining:
    """A generative client's local training (params key ``cvae``): Adam on
    :func:`osfl.generative.cvae.cvae_loss`. Defaults are FedMHO's
    Fashion-MNIST values (Table III: 40 epochs, lr 5e-2, batch 64; β = 1 and the per-dataset reduction from the
    official code, SPEC §1.2); a paper's params file sets the other datasets' under ``per_dataset``."""

    epochs: int = 40
    batch_size: int = 64
    lr: float = 5e-2
    beta: float = 1.0
    reduction: str = "batch_mean"

    KEYS = ("epochs", "batch_size", "lr", "beta", "reduction")

    @classmethod
    def from_params(cls, cvae: Mapping[str, Any] | None, key: str = "cvae") -> "CVAETraining":
        cvae = cvae or {}
        if not isinstance(cvae, Mapping):
            raise ConfigError(key, f"must be a mapping ({', '.join(cls.KEYS)})")
        for k in cvae:
            if k not in cls.KEYS:
                raise unknown_key(f"{key}.{k}", cls.KEYS)
        d = cls.__dataclass_fields__

        def get(k):
            return cvae[k] if k in cvae else d[k].default

        return cls(epochs=check_int(f"{key}.epochs", get("epochs"), minimum=0),
                   batch_size=check_int(f"{key}.batch_size", get("batch_size"), minimum=1),
                   lr=check_float(f"{key}.lr", get("lr"), positive=True),
                   beta=check_float(f"{key}.beta", get("beta"), minimum=0.0),
                   reduction=check_choice(f"{key}.reduction", get("reduction"), list(CVAE_REDUCTIONS)))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)



#: The keys of the main experiment's params file (params.yaml); a paper's params file may add its own, listed in
#: the ``keys.yaml`` beside it (:func:`pipeline_keys`). Nested keys are checked by what reads them (local, runtime,
#: server, data).
MAIN_KEYS = ("profile", "seed", "dataset", "partition", "alpha", "classes_per_client", "assignment", "clients",
             "model", "client_models", "methods", "data", "local", "server", "runtime",
             "rounds", "localcurve",  # read by the multi-round and local-curve stages (checked there)
             "cpu",  # the cpu profile's reductions and the regime guards (osfl.cpu_profile checks them)
             "inputs")  # input preparation: resizing and the models' normalisation (osfl.data.inputs)
DATA_KEYS = ("mirror",)
FARM_KEYS = ("resources",)  # read by `python -m osfl.farm` alone (osfl.farm.plan.stage_resources checks the values)
PIPELINE_KEYS_FILE = "keys.yaml"  # beside a pipeline's params.yaml: the keys that pipeline adds


def pipeline_keys(params_file: str | Path | None) -> dict[str, tuple[str, ...] | None]:
    """The keys a pipeline's params file adds to :data:`MAIN_KEYS`, read from the ``keys.yaml`` beside it (data, so
    that adding a paper edits no module): key -> its allowed sub-keys, or None for a plain value or a free list.
    Nothing for a params file without one (the main experiment's)."""
    if params_file is None:
        return {}
    path = Path(params_file).parent / PIPELINE_KEYS_FILE
    if not path.is_file():
        return {}
    keys = yaml.safe_load(path.read_text()) or {}
    if not isinstance(keys, dict) or not all(v is None or isinstance(v, list) for v in keys.values()):
        raise ConfigError(str(path), "must map each key to a list of its sub-keys or to null")
    return {str(k): None if v is None else tuple(str(x) for x in v) for k, v in keys.items()}


def check_keys(params: Mapping[str, Any], params_file: str | Path | None = None) -> None:
    """Fail on the first key of ``params`` that nothing reads, naming the nearest known key (a typo such as
    ``alpah`` or ``local.momentun`` would otherwise be ignored silently). ``params_file``: the file ``params`` came
    from; the keys its pipeline adds (:func:`pipeline_keys`) are admitted too."""
    known = {**{k: None for k in MAIN_KEYS}, "data": DATA_KEYS, "local": LocalTraining.KEYS, "farm": FARM_KEYS,
             **pipeline_keys(params_file)}
    for key, value in params.items():
        if key not in known:
            raise unknown_key(str(key), known)
        sub = known[key]
        if sub is None or (key == "data" and value is None):  # `data:` left empty: no mirror
            continue
        if not isinstance(value, Mapping):
            raise ConfigError(key, f"must be a mapping of {', '.join(sub)}")
        for k in value:
            if k not in sub:
                raise unknown_key(f"{key}.{k}", sub)


# ---------------------------------------------------------------------------------------------------------
# the run configuration: one loader, one typed object


@dataclass(frozen=True)
class ExperimentPaths:
    """Where an experiment's artifacts live. ``name`` is ``main`` for the main experiment; a paper pipeline
    uses ``<paper>/<run>`` (e.g. ``fedhydra/fmnist-dir0.5``) and its own ``data_root``."""

    name: str
    dataset: str
    data_root: str = "data/prepared"
    partition_of: str | None = None  # another experiment whose partition this one reuses (--partition-of)
    clients_of: str | None = None  # another experiment whose client uploads this one reads (--clients-of)

    @property
    def prepared(self) -> Path:
        return Path(self.data_root) / self.dataset

    @property
    def partition(self) -> Path:
        return Path("data/partitions") / (self.partition_of or self.name)

    @property
    def clients(self) -> Path:
        return Path("models") / (self.clients_of or self.name) / "clients"

    def uploads(self, name: str) -> Path:
        """A second upload's folder of this experiment (models/<name>/<upload>: OFedED's distilled sets)."""
        return Path("models") / self.name / name

    def global_model(self, method: str) -> Path:
        return Path("models") / self.name / "global" / method

    @property
    def results(self) -> Path:
        return Path("results") / self.name

    @property
    def report(self) -> Path:
        return Path("reports") / self.name


@dataclass(frozen=True)
class RunConfig:
    """One run's configuration, validated. ``params`` is the resolved params mapping (split, overrides,
    per-dataset values and the cpu profile applied), which a stage reads for the keys it checks itself (``server``,
    ``cvae``, a paper's own blocks); every other field is a validated setting. :func:`osfl.runconfig.load_run`
    sets ``device`` (threads and device pinned) and ``paths``; :func:`osfl.runconfig.validate` alone leaves them
    None."""

    params: Mapping[str, Any]
    profile: Profile
    seed: int
    dataset: DatasetSpec  # with the models' input shape
    clients: int
    partition: str
    alpha: Any  # the scheme checks it; a scheme without an alpha leaves it as written (often null)
    classes_per_client: Any  # likewise
    assignment: str
    model: str
    client_models: list[str]
    methods: list[str]
    local: LocalTraining
    mirror: Path | None
    runtime: Accel
    inputs: InputPrep
    device: torch.device | None = None
    paths: ExperimentPaths | None = None

    def replace(self, **changes) -> "RunConfig":
        return replace(self, **changes)

    def settings(self, cls: type[S], key: str) -> S:
        """The params block ``key`` as its typed settings, ``cls.from_params(block, key)`` (e.g.
        ``cfg.settings(KIPSettings, "kip")``): defaults filled in, each value checked, errors naming ``key.<k>``."""
        return cls.from_params(self.params.get(key), key)

    def block(self, key: str) -> dict[str, Any]:
        """A paper's params block that has no settings type (``samples``, ``fid``, ``localcurve``, ``public``): a copy,
        empty when absent; its keys were checked against the paper's ``keys.yaml`` (:func:`check_keys`)."""
        value = self.params.get(key) or {}
        if not isinstance(value, Mapping):
            raise ConfigError(key, "must be a mapping")
        return dict(value)

    @property
    def guard_floors(self) -> dict[str, float]:
        """The regime guards' floors (the params' ``cpu.guards``, checked by :mod:`osfl.cpu_profile` when the run was
        resolved): ``client_acc_mean_min``, ``server_gain_min``, ``cvae_below_mean_image_min``, where set."""
        return dict((self.params.get("cpu") or {}).get("guards") or {})

    def method_settings(self, name: str) -> dict[str, Any]:
        """The hyper-parameters the params file gives method ``name`` (``server.<name>``, empty when absent), as
        :func:`osfl.runconfig.validate` checked them against the method: a stage builds its method from these
        (:func:`osfl.protocols.one_shot.make_method`), never from the raw params."""
        own = (self.params.get("server") or {}).get(name) or {}
        if not isinstance(own, Mapping):
            raise ConfigError(f"server.{name}", "must be a mapping of hyper-parameters")
        return dict(own)


def split_params(name: str) -> dict[str, Any]:
    """The partition keys a split shorthand stands for (paper pipelines name their runs with these).

    ``dir0.5`` = Dirichlet label skew α = 0.5; ``2cc`` = 2 disjoint classes per client (FedHydra's 2c/c: client
    k gets all samples of classes 2k-2, 2k-1, SPEC §3.2); ``iid`` = uniform split.
    """
    if name == "iid":
        return {"partition": "iid"}
    m = re.fullmatch(r"dir(\d+(?:\.\d+)?)", name)
    if m:
        return {"partition": "dirichlet", "alpha": float(m.group(1))}
    m = re.fullmatch(r"(\d+)cc", name)
    if m:
        return {"partition": "classes_per_client", "classes_per_client": int(m.group(1)), "assignment": "disjoint"}
    raise ConfigError("split", f"unknown split {name!r}; allowed: dir<alpha> (e.g. dir0.5), <n>cc (e.g. 2cc), iid")


def apply_overrides(params: Mapping[str, Any], overrides: list[str]) -> dict:
    """``KEY=VALUE`` pairs into a copy of ``params`` (dotted keys reach into mappings; VALUE parsed as YAML)."""
    out = copy.deepcopy(dict(params))
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError("--set", f"expected KEY=VALUE, got {item!r}")
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = yaml.safe_load(raw)
    return out


def for_dataset(value, dataset: str, key: str):
    """``value``, or its entry for ``dataset`` when it maps dataset names to values (a paper's per-dataset model)."""
    if not isinstance(value, dict):
        return value
    if dataset not in value:
        raise ConfigError(key, f"no architecture for dataset {dataset!r}; the mapping has {', '.join(value)}")
    return value[dataset]


def merge_per_dataset(params: dict) -> dict:
    """A paper's ``per_dataset.<dataset>`` mapping (its hyper-parameters that differ by dataset, e.g. FedMHO's
    Table III) merged over ``params`` for this run's dataset, key by key; other datasets' entries are dropped.
    :func:`resolve_params` applies ``--set`` overrides again afterwards, so that they win over these too."""
    per = params.get("per_dataset")
    if per is None:
        return params
    if not isinstance(per, dict):
        raise ConfigError("per_dataset", "must map dataset names to the keys that differ for them")
    own = per.get(params.get("dataset")) or {}
    if not isinstance(own, dict):
        raise ConfigError(f"per_dataset.{params.get('dataset')}", "must be a mapping of keys")

    def merge(base, over):
        if isinstance(base, dict) and isinstance(over, dict):
            return {**base, **{k: merge(base.get(k), v) for k, v in over.items()}}
        return over

    out = {k: v for k, v in params.items() if k != "per_dataset"}
    return merge(out, own)


