"""Does a refactor change what any stage is configured with? Old code against new, on every stage of every pipeline.

``python -m benchmarks.equivalence --base REV`` runs each stage command of the root project and of every
``papers/<paper>/`` project (as DVC expands its matrices) in-process, up to the moment its run configuration is
loaded, once with the code of ``REV`` (``git archive REV src``) and once with the working tree's, and compares the
two configurations: the resolved parameters (split, ``--set`` overrides, per-dataset values, the cpu profile), every
validated setting, the device and threads in force, and the experiment's paths. Nothing is trained or read beyond
the params files. It prints how many stages agree and each one that does not, and exits 1 when any differs.

It is the check that issue 37 asks for before a behaviour-preserving edit of a module every stage depends on is
recorded with ``dvc commit`` instead of re-running hundreds of stages: the commit that records it names this
command and its result. With ``--dump FILE`` (used internally) it writes one side's configurations as JSON.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOADERS = ("load_config", "load_run")  # the loader's name in a stage module, before and after the typed config


class _Loaded(Exception):
    def __init__(self, value):
        self.value = value


#: fields added to a configuration dataclass after runs were recorded, with the value that computes what those runs
#: computed: a field at that value is left out of the comparison, so the code before it and after it agree
YOUNG_FIELDS = {"Accel": {"batched_teachers": True}}  # runtime.batched_teachers (finding F35): true = the vmap path


def canon(value):
    """A JSON-able form that is the same for equal configurations whatever container the code returned them in."""
    import torch

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        young = YOUNG_FIELDS.get(type(value).__name__, {})
        return {"__type__": type(value).__name__,
                **{f.name: canon(getattr(value, f.name)) for f in dataclasses.fields(value)
                   if not (f.name in young and getattr(value, f.name) is young[f.name])}}
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    if isinstance(value, (Path, torch.device)):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if callable(value) and hasattr(value, "__qualname__"):  # a dataset's loader: its name, not its address
        return f"{value.__module__}.{value.__qualname__}"
    return repr(value)


def configuration(loaded) -> dict:
    """``(params, cfg, paths)`` (the loader before the typed config) or a typed run configuration, as one dict."""
    if isinstance(loaded, tuple):
        params, cfg, paths = loaded
        settings = dict(cfg)
    else:
        params, paths = loaded.params, loaded.paths
        settings = {f.name: getattr(loaded, f.name) for f in dataclasses.fields(loaded)
                    if f.name not in ("params", "paths")}
    return {"params": canon(params), "settings": canon(settings), "paths": canon(paths)}


def stage_commands(project: Path) -> list[tuple[str, list[list[str]]]]:
    """(stage name, the argv of each ``python -m osfl.stages.<x>`` in its command) for every stage of ``project``."""
    from dvc.repo import Repo

    out = []
    with Repo(str(project)) as repo:
        for stage in repo.index.stages:
            if not getattr(stage, "cmd", None):
                continue
            cmds = stage.cmd if isinstance(stage.cmd, list) else [stage.cmd]
            parts = [shlex.split(part) for c in cmds for part in c.split("&&")]
            out.append((stage.addressing, [p for p in parts if p]))
    return out


def resolve_stage(argv: list[str]):
    """Run one stage command until its loader returns; the configuration, or why there is none."""
    if argv[:2] != ["python", "-m"] or not argv[2].startswith("osfl.stages."):
        return {"not a run stage": " ".join(argv[:3])}
    try:
        module = importlib.import_module(argv[2])
    except ModuleNotFoundError:  # a stage this revision's code does not have yet (it differs: a new stage)
        return {"no such stage module in this code": argv[2]}
    names = [n for n in LOADERS if hasattr(module, n)]
    if not names:
        return {"no loader": argv[2]}
    original = getattr(module, names[0])

    def intercept(*a, **k):
        raise _Loaded(original(*a, **k))

    setattr(module, names[0], intercept)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            module.main(argv[3:])
    except _Loaded as loaded:
        return configuration(loaded.value)
    except SystemExit as e:  # a ConfigError: its one line
        return {"exit": f"{e.code}: {err.getvalue().strip()}"}
    except Exception as e:  # the same failure on both sides is still agreement
        return {"error": f"{type(e).__name__}: {e}"}
    finally:
        setattr(module, names[0], original)
    return {"finished without loading": argv[2]}


def projects() -> list[Path]:
    return [ROOT] + sorted(p.parent for p in (ROOT / "papers").glob("*/dvc.yaml"))


def dump(path: Path) -> None:
    from tqdm import tqdm

    result = {}
    for project in projects():
        os.chdir(project)
        for name, cmds in tqdm(stage_commands(project), desc=project.name, leave=False, disable=None):
            result[f"{project.relative_to(ROOT)}:{name}"] = [resolve_stage(c) for c in cmds]
    os.chdir(ROOT)
    import osfl

    path.write_text(json.dumps({"code": str(Path(osfl.__file__).parent), "stages": result}, sort_keys=True))


def side(src: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-m", "benchmarks.equivalence", "--dump", str(out)], cwd=ROOT, env=env, check=True)
    dumped = json.loads(out.read_text())
    print(f"code from {dumped['code']}")
    return dumped["stages"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", help="the git revision whose code is compared with the working tree's")
    p.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.dump:
        dump(args.dump)
        return 0
    if not args.base:
        p.error("--base REV is required")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        archive = subprocess.run(["git", "archive", args.base, "src"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        old = side(tmp / "src", tmp / "old.json")
        new = side(ROOT / "src", tmp / "new.json")
    differ = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    loaded = sum(1 for k in old if any("params" in c for c in old[k]))
    print(f"{len(old)} stages at {args.base}, {len(new)} now; {loaded} load a run configuration; "
          f"{sum(1 for k in old if k in new and old[k] == new[k])} agree, {len(differ)} differ")
    for k in differ[:20]:
        print(f"  differs: {k}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
