"""Whether a pipeline's committed runs were computed from one another: a check of its dvc.lock alone.

A report compares runs recorded in one dvc.lock. Three things make such a comparison mix runs that should not be
compared, and all three can be read from the lock, with no data and no re-run:

* **upstream**: a stage's dependency is another stage's output, and the hash the stage recorded for it differs from
  the hash that output has now (the upstream stage re-ran after it: e.g. a server distilled from clients that were
  re-trained since; its number is not a number on the committed clients);
* **params**: a params key that several stages list holds different values in their entries (they ran under
  different settings of one params file: e.g. some under ``profile: quick``, some under ``profile: cpu``);
* **unlisted**: a top-level params key that other stages of the same family (``<family>@<item>``) list is missing
  from a stage's entry: it ran before its definition read that key (e.g. an input preparation added later). Dotted
  keys are left out of this rule: a family lists them per item (``server.<method>``, ``per_dataset.<dataset>``).

Keys in :data:`EXECUTION` (the thread count and device settings) are left out: they change a result's last bits, not
the experiment. ``dvc status`` says a stage is stale; this says which committed results disagree with each other,
which is what a verdict comparing them needs to know. The compiled report prints it per paper (osfl.reporting.book).
:func:`locked_stages` is the one reader of a project's dvc.lock for the provenance and campaign tools.

    python -m osfl.provenance.lineage papers/ofeded papers/hfldd     # exit 1 when a lock mixes runs
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = ["AGREE", "Mismatch", "check", "check_lock", "locked_stages"]

_SHOWN = 3  # stage names shown per group
#: params keys that say how a stage ran, not what it computes (threads change the bits, not the experiment)
EXECUTION = ("runtime",)
#: what a lock without a mismatch says
AGREE = ("every committed stage read the outputs its upstream stages committed, and every params key has one value "
         "across the stages that list it")


@dataclass(frozen=True)
class Mismatch:
    """One disagreement: ``kind`` "upstream" (``stages`` consumed ``what``, an output of ``source``, at another hash
    than the committed one), "params" (the key ``what`` holds several values; ``groups``: (value, stages) pairs,
    the most common value first) or "unlisted" (``stages`` do not record the key ``what`` that the rest of their
    family ``source`` records)."""
    kind: str
    what: str
    stages: tuple[str, ...] = ()
    source: str = ""
    groups: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def text(self) -> str:
        if self.kind == "upstream":
            return (f"{_names(self.stages)} ran on another {self.what} than the one {self.source} committed "
                    f"(it re-ran after them)")
        if self.kind == "unlisted":
            return (f"{_names(self.stages)} ran before params '{self.what}' was one of their inputs (other stages "
                    f"of their families record it: {self.source})")
        parts = [f"{_short(v)} in {_names(s)}" for v, s in self.groups]
        return f"params '{self.what}' differ: " + "; ".join(parts)


def _names(stages) -> str:
    stages = list(stages)
    shown = ", ".join(stages[:_SHOWN])
    return f"{len(stages)} stage(s) ({shown}{', ...' if len(stages) > _SHOWN else ''})"


def _short(value: str, width: int = 60) -> str:
    return value if len(value) <= width else value[:width - 3] + "..."


def _hash(entry: dict) -> str | None:
    return entry.get("md5") or entry.get("hash")


def _differing(values: list) -> list[str]:
    """The values as JSON; where all are mappings, only the entries in which they differ (``{"epochs": 1}`` rather
    than the whole ``local`` block)."""
    if all(isinstance(v, dict) for v in values):
        keys = sorted({k for v in values for k in v if len({json.dumps(w.get(k), sort_keys=True) for w in values}) > 1})
        values = [{k: v.get(k) for k in keys} for v in values]
    return [json.dumps(v, sort_keys=True) for v in values]


def check_lock(stages: dict) -> list[Mismatch]:
    """The mismatches of a dvc.lock's ``stages`` mapping (module docstring): upstream ones first (one per consumed
    output and producer), then params keys (in the lock's order)."""
    produced = {o["path"]: (name, _hash(o)) for name, st in stages.items() for o in st.get("outs") or []}
    upstream: dict[tuple[str, str], list[str]] = defaultdict(list)
    values: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    listed: dict[str, dict[str, set]] = defaultdict(dict)  # family -> stage -> the params keys its entry records
    for name, st in stages.items():
        for d in st.get("deps") or []:
            src = produced.get(d["path"])
            if src is not None and src[0] != name and src[1] != _hash(d):
                upstream[(d["path"], src[0])].append(name)
        keys = listed[name.split("@")[0]].setdefault(name, set())
        for pfile, params in (st.get("params") or {}).items():
            for key, value in (params or {}).items():
                if key in EXECUTION:
                    continue
                keys.add((pfile, key))
                values[f"{pfile}:{key}"][json.dumps(value, sort_keys=True)].append(name)
    out = [Mismatch("upstream", path, tuple(names), source) for (path, source), names in upstream.items()]
    for key, by_value in values.items():
        if len(by_value) > 1:
            groups = sorted(by_value.items(), key=lambda kv: -len(kv[1]))
            shown = _differing([json.loads(v) for v, _ in groups])
            out.append(Mismatch("params", key.split(":", 1)[1],
                                groups=tuple((v, tuple(s)) for v, (_, s) in zip(shown, groups))))
    absent: dict[str, list[str]] = defaultdict(list)  # key -> the stages whose family lists it but they do not
    families: dict[str, list[str]] = defaultdict(list)
    for family, keys in listed.items():
        for pfile, key in sorted(set().union(*keys.values())):
            missing = [n for n, k in keys.items() if (pfile, key) not in k]
            if missing and "." not in key:
                absent[key] += missing
                families[key].append(family)
    out += [Mismatch("unlisted", key, tuple(names), ", ".join(families[key])) for key, names in absent.items()]
    return out


def locked_stages(project: Path) -> dict:
    """The ``stages`` mapping of ``project``/dvc.lock (stage name -> its entry); {} where there is no lock."""
    lock = Path(project) / "dvc.lock"
    if not lock.is_file():
        return {}
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: a lock of 1 MB in a fraction of a second
    return (yaml.load(lock.read_text(encoding="utf-8"), Loader=loader) or {}).get("stages") or {}


def check(project: Path) -> list[Mismatch]:
    """:func:`check_lock` of ``project``/dvc.lock (no lock: nothing committed, no mismatch)."""
    return check_lock(locked_stages(project))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("projects", nargs="+", type=Path, help="DVC project folders (papers/<paper>)")
    args = ap.parse_args(argv)
    bad = 0
    for project in args.projects:
        if not (project / "dvc.yaml").is_file():
            sys.exit(f"lineage: {project}: no dvc.yaml there; allowed: a DVC project folder such as papers/hfldd")
        found = check(project)
        bad += len(found)
        print(f"{project}: " + (AGREE if not found else f"{len(found)} mismatch(es)"))
        for m in found:
            print(f"  - {m.text()}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
