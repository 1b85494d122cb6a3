"""The README's commands work as written: every `dvc ...` and `make ...` line of its shell blocks is checked.

* ``make <target>``: ``make -n <target>`` knows the target.
* ``dvc exp run`` / ``dvc repro`` / ``dvc pull`` / ``dvc push`` ... with a pipeline file: the file exists and DVC can
  list its stages (``dvc stage list``, once per file).
* ``-S key=value`` (``-S file:key=value``): applied to the params file exactly as DVC's Hydra overrides do (the
  key must exist unless it is written ``++key``, which adds or replaces it), then the whole file is validated as
  the stages validate it, so a README example that DVC or a stage would refuse fails here.
The pipeline runs themselves are exercised at smoke by tests/test_pipeline.py.
"""
from __future__ import annotations

import copy
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import BIN, sh

from osfl.config import validate_main
from osfl.stages.common import resolve_per_dataset

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """Every `dvc`/`make` line of the README's shell blocks; after a `cd <dir>` line of its block, written as
    ``cd <dir> && <command>`` (a paper pipeline's commands run in its folder, a DVC project of its own)."""
    text = (ROOT / "README.md").read_text()
    cmds = []
    for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, flags=re.S):
        cwd = ""
        for line in block.splitlines():
            line = line.split("  #")[0].split(" # ")[0].strip()
            if line.startswith("cd "):
                cwd = line[3:].strip()
            elif line.startswith(("dvc ", "make ")):
                cmds.append(f"cd {cwd} && {line}" if cwd else line)
    return cmds


COMMANDS = readme_commands()


def set_key(params: dict, key: str, value, add: bool, where: str) -> None:
    node = params
    parts = key.split(".")
    for part in parts[:-1]:
        if part not in node or not isinstance(node[part], dict):
            if not add:
                raise AssertionError(f"{where}: -S {key}: '{part}' is not in the params file (DVC refuses it)")
            node[part] = {}
        node = node[part]
    if parts[-1] not in node and not add:
        raise AssertionError(f"{where}: -S {key}: not in the params file (DVC refuses it; write ++{key})")
    node[parts[-1]] = value


def test_readme_shows_commands():
    assert any(c.startswith("dvc exp run") for c in COMMANDS) and any(c.startswith("make ") for c in COMMANDS)


@pytest.mark.parametrize("cmd", COMMANDS)
def test_readme_command(cmd):
    cwd = ROOT
    if cmd.startswith("cd "):
        folder, _, cmd = cmd[3:].partition(" && ")
        cwd = ROOT / folder
        assert (cwd / "dvc.yaml").is_file() and (cwd / ".dvc").is_dir(), f"{folder} is not a DVC project"
    args = shlex.split(cmd)
    if args[0] == "make":
        p = subprocess.run(["make", "-n", *args[1:]], cwd=ROOT, capture_output=True, text=True)
        assert p.returncode == 0, f"{cmd}: {p.stderr}"
        return
    files = [a for a in args if a.endswith("dvc.yaml")]
    for f in files:
        assert (cwd / f).is_file(), f"{cmd}: {f} does not exist"
    sets = [args[i + 1] for i, a in enumerate(args) if a == "-S"]
    if not sets:
        return
    by_file: dict[str, dict] = {}
    for s in sets:
        target, _, assign = s.rpartition(":") if re.match(r"^[\w/.-]+\.yaml:", s) else ("", "", s)
        target = target or "params.yaml"
        key, _, raw = assign.partition("=")
        add = key.startswith("++")
        target = str((cwd / target).relative_to(ROOT))
        params = by_file.setdefault(target, copy.deepcopy(yaml.safe_load((ROOT / target).read_text())))
        set_key(params, key.lstrip("+"), yaml.safe_load(raw), add, cmd)
    for target, params in by_file.items():
        if isinstance(params.get("model"), dict):  # a paper's per-dataset models: validate its first dataset
            params = resolve_per_dataset({**params, "dataset": params.get("datasets", [params["dataset"]])[0]})
        if params.get("data", {}).get("mirror"):
            params["data"]["mirror"] = ""  # a folder on the user's machine
        validate_main(params, params_file=target if target != "params.yaml" else None)


def test_readme_pipelines_resolve():
    for f in sorted({a for c in COMMANDS for a in shlex.split(c) if a.endswith("dvc.yaml")} | {"dvc.yaml"}):
        sh(str(Path(BIN) / "dvc"), "stage", "list", f, cwd=ROOT)
    for folder in sorted({c[3:].partition(" && ")[0] for c in COMMANDS if c.startswith("cd ")}):
        sh(str(Path(BIN) / "dvc"), "stage", "list", cwd=ROOT / folder)
