"""A stage's run configuration: the params file resolved, every key validated, one typed object.

:func:`load_run` is the only way a stage gets its configuration. In this order it reads the params file, applies the
``--split`` shorthand and the ``--set`` overrides, merges the paper's ``per_dataset`` values for the run's dataset
(then the overrides again, so that they win), picks a per-dataset ``model``, applies the ``cpu`` profile's named
reductions (:mod:`osfl.cpu_profile`, the overrides winning once more), validates every key, pins threads and device,
and returns a frozen :class:`osfl.config.RunConfig`: the resolved params (for the keys a stage checks itself) beside
the validated settings, the device and the experiment's paths.

This module sits above the registries (methods, models, datasets, partitions) and the cpu profile, which it asks to
check their parts; :mod:`osfl.config` below them holds the settings' types and the checks that need none of them,
so that every package may import it without a cycle (tests/test_import_graph.py). The paper's hyper-parameters are
written in ``params.yaml`` unchanged; reduced scale comes only from the ``profile`` key. Every bad value fails before
any work, with one line that names the key and what is allowed (:class:`osfl.errors.ConfigError`).
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping

import yaml

from . import cpu_profile
from .config import (DATA_KEYS, ExperimentPaths, LocalTraining, RunConfig, apply_overrides, check_int, check_keys,
                     for_dataset, get_profile, load_params, merge_per_dataset, require, split_params)
from .errors import ConfigError, unknown_key


def client_architectures(value: Any, clients: int, model: str, shape) -> list[str]:
    """Each client's architecture. ``client_models`` empty (or absent): every client uses ``model``, the server's
    architecture (homogeneous). A list (or comma-separated string) of ``clients`` registry names: client k uses entry k (heterogeneous
    clients, FedHydra Tables 3, 9, 10: M1..M5); ``model`` stays the server's."""
    from .models import resolve_model_name

    if value in (None, "", []):
        return [model] * clients
    if isinstance(value, str):  # "a,b,c": how a DVC command passes a list
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, list):
        raise ConfigError("client_models", f"must be a list of {clients} model names or empty, got {value!r}")
    if len(value) != clients:
        raise ConfigError("client_models", f"lists {len(value)} architectures for clients={clients}; give one per client")
    return [resolve_model_name(v, shape, key="client_models") for v in value]


def check_server(params: Mapping[str, Any]) -> None:
    """Every ``server.<method>`` mapping names a method and only that method's hyper-parameters, with valid values
    (each method's constructor checks them), whether or not the method is in ``methods``."""
    from .methods import METHODS

    server = params.get("server") or {}
    if not isinstance(server, Mapping):
        raise ConfigError("server", "must be a mapping of method name -> hyper-parameters")
    for name, own in server.items():
        if name not in METHODS:
            raise unknown_key(f"server.{name}", METHODS.names())
        if own is not None and not isinstance(own, Mapping):
            raise ConfigError(f"server.{name}", "must be a mapping of hyper-parameters")
        METHODS.get(name)(**(own or {}))


def validate(params: Mapping[str, Any], params_file: str | Path | None = None) -> "RunConfig":
    """Check every key of resolved ``params`` before any work; the settings as a :class:`RunConfig` (no device
    pinned, no paths: :func:`load_run` adds them). ``params_file`` (``papers/<paper>/params.yaml``) admits the
    keys that paper's pipeline adds."""
    # late imports: importing this module loads no registry (nor torch); validating a run does
    from .data import get_spec
    from .methods import METHODS
    from .models import resolve_model_name
    from .partition import validate_params as validate_partition

    check_keys(params, params_file)
    profile = get_profile(require(params, "profile"))
    seed = check_int("seed", require(params, "seed"), minimum=0)
    from .data.inputs import InputPrep

    spec = get_spec(require(params, "dataset"))
    inputs = InputPrep.from_params(params.get("inputs"), spec.name, spec.shape[0])
    spec = inputs.spec(spec)  # the models' input shape (resized when inputs.size is set)
    clients = check_int("clients", require(params, "clients"), minimum=1)
    scheme = require(params, "partition")
    alpha = require(params, "alpha")
    cpc = require(params, "classes_per_client")
    assignment = params.get("assignment", "cyclic")
    n_train = spec.n_train if profile.max_train is None else min(spec.n_train, profile.max_train)
    validate_partition(scheme, clients, n_train, spec.num_classes, alpha=alpha, classes_per_client=cpc,
                       assignment=assignment)
    model = resolve_model_name(require(params, "model"), spec.shape, key="model")
    client_models = client_architectures(params.get("client_models"), clients, model, spec.shape)
    methods = require(params, "methods")
    if isinstance(methods, str):
        methods = [methods]
    if not isinstance(methods, list) or not methods:
        raise ConfigError("methods", f"must be a non-empty list; allowed: {', '.join(METHODS.names())}")
    for m in methods:
        if not isinstance(m, str):
            raise ConfigError("methods", f"entry {m!r} is not a method name; allowed: {', '.join(METHODS.names())}")
        METHODS.get(m, key="methods")
    if len(set(methods)) != len(methods):
        raise ConfigError("methods", f"lists a method twice: {methods}")
    check_server(params)
    local = LocalTraining.from_params(params.get("local"))
    mirror = (params.get("data") or {}).get("mirror") or None
    from .accel import Accel

    runtime = Accel.from_params(params.get("runtime"))
    return RunConfig(params=params, profile=profile, seed=seed, dataset=spec, clients=clients, partition=scheme,
                     alpha=alpha, classes_per_client=cpc, assignment=assignment, model=model,
                     client_models=client_models, methods=methods, local=local,
                     mirror=Path(mirror) if mirror else None, runtime=runtime, inputs=inputs)


def resolve_params(params: dict, split: str | None = None, overrides: list[str] = ()) -> dict:
    """A params file's mapping as one run reads it: the split shorthand, the overrides, the paper's per-dataset
    values (the overrides again), the per-dataset ``model``, then the cpu profile's reductions (the overrides again)."""

    overrides = list(overrides)
    if split:
        params = {**params, **split_params(split)}
    params = apply_overrides(params, overrides)  # --set dataset=... picks the per_dataset entry
    if "per_dataset" in params:
        params = apply_overrides(merge_per_dataset(params), overrides)
    if isinstance(params.get("model"), dict):  # a paper's per-dataset architecture: this run's
        params = {**params, "model": for_dataset(params["model"], params.get("dataset"), "model")}
    return cpu_profile.apply(params, overrides)


def load_run(args) -> RunConfig:
    """A stage's configuration from its command line (``osfl.stages.common.parser``'s namespace): the params file
    resolved (:func:`resolve_params`), validated (:func:`validate`), threads, deterministic kernels and device
    pinned before any work (``runtime.threads`` / ``runtime.device``), and the experiment's paths."""
    from .runtime import apply_execution

    params = resolve_params(load_params(args.params), getattr(args, "split", None), getattr(args, "overrides", []))
    cfg = validate(params, params_file=args.params)
    paths = ExperimentPaths(args.experiment, cfg.dataset.name, getattr(args, "data_root", "data/prepared"),
                            getattr(args, "partition_of", None), getattr(args, "clients_of", None))
    return cfg.replace(device=apply_execution(cfg.runtime.threads, cfg.runtime.device), paths=paths)


def all_defaults() -> dict[str, Any]:
    """Every key a params file may leave out, with its default (the papers' values; see params.yaml)."""
    from .accel import Accel
    from .methods import METHODS

    return {"data": {k: "" for k in DATA_KEYS}, "local": asdict(LocalTraining()), "runtime": asdict(Accel()),
            "server": {name: dict(METHODS.get(name).defaults) for name in METHODS.names()}}


if __name__ == "__main__":  # python -m osfl.runconfig: print them (YAML)
    print(yaml.safe_dump(all_defaults(), sort_keys=False, width=120), end="")
