"""The ``cpu`` profile: a paper's own reductions, named with their reasons, and the regime guards its runs check.

A paper's params file defines what ``profile: cpu`` means for it in a ``cpu`` block::

    cpu:
      budget: "the Fashion-MNIST grid, one seed: about 150 min on a 2-core CPU"
      set:                    # dotted overrides, as `--set` takes them, each with its reason
        - {set: local.epochs=20, reason: "VGG-9 clients reach the guard's floor by epoch 20"}
      models:                 # an architecture replaced wherever a `model` key names it
        - {from: vgg9, to: vgg9_cpu, reason: "a 50 s local epoch on one thread; 6.8 s"}
      guards: {client_acc_mean_min: 40.0, server_gain_min: 5.0}

Under any other profile the block is inert, except ``guards``, which every run checks and records whatever the
profile: ``client_acc_mean_min`` is the floor (%) of the mean local test accuracy of a
part's (or cohort's) classifier clients, ``server_gain_min``
how many points above chance (100 / classes) a server's best accuracy must reach, ``cvae_below_mean_image_min``
the share (%) of a part's CVAE clients whose last epoch's loss must lie below the loss of their data's mean image
(a decoder that ignores z and y). A run that fails a guard keeps its
results and says so in its record (``guards``); the reports show it and draw no verdict from it.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

from .config import apply_overrides
from .errors import ConfigError, unknown_key

CPU_KEYS = ("budget", "set", "models", "guards")
GUARD_KEYS = ("client_acc_mean_min", "server_gain_min", "cvae_below_mean_image_min")


def _entries(block: Mapping, key: str, fields: tuple[str, ...]) -> list[dict]:
    items = block.get(key) or []
    if not isinstance(items, list):
        raise ConfigError(f"cpu.{key}", f"must be a list of mappings with {', '.join(fields)}")
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or set(item) != set(fields):
            raise ConfigError(f"cpu.{key}[{i}]", f"must be a mapping with exactly {', '.join(fields)}, got {item!r}")
        if not str(item["reason"]).strip():
            raise ConfigError(f"cpu.{key}[{i}].reason", "must say why the reduction is made")
    return list(items)


def validate(block: Any) -> dict:
    """The ``cpu`` block, checked: known keys, each reduction with its reason, numeric guards."""
    if block is None:
        return {}
    if not isinstance(block, Mapping):
        raise ConfigError("cpu", f"must be a mapping of {', '.join(CPU_KEYS)}")
    for k in block:
        if k not in CPU_KEYS:
            raise unknown_key(f"cpu.{k}", CPU_KEYS)
    for i, item in enumerate(_entries(block, "set", ("set", "reason"))):
        key, sep, _ = str(item["set"]).partition("=")
        if not sep or not key:
            raise ConfigError(f"cpu.set[{i}].set", f"expected KEY=VALUE, got {item['set']!r}")
    _entries(block, "models", ("from", "to", "reason"))
    guards = block.get("guards") or {}
    if not isinstance(guards, Mapping):
        raise ConfigError("cpu.guards", f"must be a mapping of {', '.join(GUARD_KEYS)}")
    for k, v in guards.items():
        if k not in GUARD_KEYS:
            raise unknown_key(f"cpu.guards.{k}", GUARD_KEYS)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 100:
            raise ConfigError(f"cpu.guards.{k}", f"must be a number of percentage points in [0, 100], got {v!r}")
    return dict(block)


def _substitute(node: Any, old: str, new: str, under_model: bool = False) -> Any:
    """``node`` with every string ``old`` under a key named ``model`` replaced by ``new``."""
    if isinstance(node, dict):
        return {k: _substitute(v, old, new, under_model or k == "model") for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, old, new, under_model) for v in node]
    return new if under_model and node == old else node


def apply(params: dict, overrides: list[str] | None = None) -> dict:
    """``params`` under its profile: for ``cpu``, the block's model replacements and ``set`` overrides, then the
    command line's ``overrides`` again (they win); other profiles unchanged. ``profile: cpu`` without a block
    fails: the profile means nothing but a paper's reductions."""
    block = validate(params.get("cpu"))
    if params.get("profile") != "cpu":
        return params
    if "cpu" not in params:
        raise ConfigError("profile", "cpu is defined by the params file's `cpu` block (its reductions and guards), "
                                     "which this file lacks; allowed here: paper, quick, demo, smoke")
    out = copy.deepcopy(params)
    for item in block.get("models") or []:
        out = _substitute(out, item["from"], item["to"])
    out = apply_overrides(out, [str(item["set"]) for item in block.get("set") or []])
    return apply_overrides(out, list(overrides or []))


def client_guard(floors: Mapping[str, float], accs: list[float]) -> dict | None:
    """The clients' guard record (None when ``floors``, a run's ``cpu.guards`` (:attr:`osfl.config.RunConfig.
    guard_floors`), set no ``client_acc_mean_min``)."""
    floor = floors.get("client_acc_mean_min")
    if floor is None or not accs:
        return None
    mean = sum(float(a) for a in accs) / len(accs)
    return {"client_acc_mean_min": {"floor": float(floor), "value": mean, "passed": mean >= floor}}


def server_guard(floors: Mapping[str, float], best: float, num_classes: int) -> dict | None:
    """The server's guard record: best accuracy at least ``server_gain_min`` points above chance."""
    gain = floors.get("server_gain_min")
    if gain is None:
        return None
    floor = 100.0 / num_classes + float(gain)
    return {"server_gain_min": {"floor": floor, "value": float(best), "passed": float(best) >= floor}}


def cvae_guard(floors: Mapping[str, float], final: list[float], mean_image: list[float]) -> dict | None:
    """A CVAE part's guard record: the share (%) of its clients whose last epoch's loss (``final``) lies below their
    data's mean image's (``mean_image``), against ``cvae_below_mean_image_min``."""
    floor = floors.get("cvae_below_mean_image_min")
    if floor is None or not final:
        return None
    share = 100.0 * sum(f < m for f, m in zip(final, mean_image)) / len(final)
    return {"cvae_below_mean_image_min": {"floor": float(floor), "value": share, "passed": share >= floor}}


def passed(record: Mapping) -> bool:
    """Whether a run record's guards (if any) all passed."""
    return all(g.get("passed", True) for g in (record.get("guards") or {}).values())


def describe(params: Mapping) -> str:
    """Sentences for captions: the profile, its reductions with reasons, the guards, the input preparation and the
    precision."""
    profile = params.get("profile")
    block = params.get("cpu") or {}
    parts = [f"Profile {profile}"]
    if profile == "cpu":
        red = [f"{m['from']} → {m['to']} ({m['reason']})" for m in block.get("models") or []]
        red += [f"{s['set']} ({s['reason']})" for s in block.get("set") or []]
        parts.append("reductions from the paper's settings: " + ("; ".join(red) if red else "none"))
        if block.get("budget"):
            parts.append(f"budget: {block['budget']}")
    g = dict(block.get("guards") or {})
    if g:
        txt = []
        if "client_acc_mean_min" in g:
            txt.append(f"clients' mean local accuracy ≥ {g['client_acc_mean_min']:g} %")
        if "server_gain_min" in g:
            txt.append(f"server best ≥ chance + {g['server_gain_min']:g} points")
        if "cvae_below_mean_image_min" in g:
            txt.append(f"CVAE clients ending below their data's mean-image loss ≥ {g['cvae_below_mean_image_min']:g} %")
        parts.append("regime guards: " + ", ".join(txt) + " (a run failing one feeds no verdict)")
    from .data.inputs import describe as inputs_note

    precision = ((params.get("runtime") or {}).get("precision") or "fp32")
    parts.append(f"{inputs_note(params.get('inputs'))}; precision {precision} (runtime.precision)")
    return ". ".join(parts) + "."


def warn_failed(what: str, guards: Mapping) -> None:
    """One line on stderr for each failed guard (the run's results are kept, marked)."""
    import sys

    for name, g in guards.items():
        if not g["passed"]:
            print(f"{what}: regime guard {name} failed ({g['value']:.2f} < {g['floor']:.2f}); the run is kept, "
                  "marked, and feeds no verdict", file=sys.stderr)
