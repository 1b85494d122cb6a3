"""Every command the README shows works as written, and its links resolve.

Commands are collected from the README's shell blocks (fenced with ``bash``/``sh``/``shell``/``console`` or with no
language; every line but comments is a command) and from its inline code spans that start with a command word
(``make``, ``dvc``, ``python``, ``pytest``, ``cd``, ``pip``, ...). ``cd <dir>`` applies to the rest of its line
(``cd <dir> && <command>``) or, on a line of its own, to the rest of its block. Each command must be of a kind
checked here; a kind not listed fails ``test_every_command_is_checked``, so a README command is tested or absent.

* ``make <target> [VAR=value]``: ``make -n`` knows the target; a ``VAR=...dvc.yaml`` names an existing file.
* ``dvc ...``: DVC's own argument parser accepts the command (subcommand and options); its targets are existing
  files or stages DVC lists in that project (``dvc stage list``, once per project); ``-r <remote>`` is a remote of
  ``.dvc/config`` or one the README adds; ``-p`` projects exist; ``-S key=value`` (``-S file:key=value``) is
  applied to the params file as DVC's Hydra overrides do (the key must exist unless written ``++key``) and the
  whole file is validated as the stages validate it.
* ``cd <dir>``: the folder exists; under ``papers/`` it is a DVC project of its own.
* ``python -m osfl.<module> ...``: the module exists under src/, ``--help`` exits 0 (once per module), every
  ``--option`` used is in that help, a ``dvc.yaml`` argument exists; the farm's stage patterns match stages.
* ``python benchmarks/<x>.py`` / ``pytest <paths>`` / ``source <file>``: the files exist.
* ``pip install -r <file> ...``: the files exist and pip's install knows every option.
* ``git checkout <paths>``: the paths are tracked by git.
Each paper's own ``papers/<paper>/README.md`` is read the same way, its commands run from its folder (a ``cd``
there is relative to it) and its links resolved from it. Besides: the README is at most 25,000 bytes (a user guide; per-run numbers live in the generated reports it links),
and every relative Markdown link points to an existing path (a ``#fragment`` alone, to one of its headings).
The pipeline runs themselves are exercised at smoke by tests/test_pipeline.py and the papers' pipeline tests.
"""
from __future__ import annotations

import contextlib
import copy
import fnmatch
import functools
import io
import logging
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from helpers import BIN, sh

from osfl.config import for_dataset

from osfl.runconfig import validate

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: every README whose commands and links are checked: the top one, then each paper's (issue 74), run from its folder
READMES = [README] + sorted((ROOT / "papers").glob("*/README.md"))
MAX_BYTES = 25_000  # issue 37: a user guide, not a lab notebook; numbers live in the generated reports

SHELL_LANGS = {"", "bash", "sh", "shell", "console"}
# words that start a command; an inline code span starting with one of them (and having arguments) is a command
COMMAND_WORDS = {"make", "dvc", "python", "python3", "pytest", "cd", "pip", "pip3", "uv", "git", "source", ".",
                 "bash", "sh", "apt-get", "apt", "sudo", "ray", "export", "conda", "docker", "curl", "wget"}


@dataclass(frozen=True)
class Command:
    text: str  # the command as the README writes it (for messages and test ids)
    cwd: str  # the folder it runs in, relative to the repository ('' = the root)
    args: tuple[str, ...]
    inline: bool

    def __str__(self) -> str:
        return self.text

    @property
    def where(self) -> Path:
        return ROOT / self.cwd


def _split(line: str) -> list[list[str]]:
    """A shell line as its ``&&``-separated commands, each a list of words (comments dropped)."""
    words = shlex.split(line, comments=True)
    cmds, cur = [], []
    for w in words:
        if w == "&&":
            cmds.append(cur)
            cur = []
        else:
            cur.append(w)
    return [c for c in cmds + [cur] if c]


def _commands_of(line: str, cwd: str, inline: bool) -> tuple[list[Command], str]:
    """The commands of one line and the folder after it (a ``cd`` changes it for what follows)."""
    out = []
    text = line.split("  #")[0].split(" # ")[0].strip() if not inline else line
    for args in _split(line):
        out.append(Command(text, cwd, tuple(args), inline))
        if args[0] == "cd" and len(args) == 2:
            cwd = str(Path(cwd, args[1])) if cwd else args[1]
    return out, cwd


def readme_commands(text: str | None = None, base: str = "") -> list[Command]:
    """The commands of a README's text (default: the top README's); ``base``: the folder they run from, relative to
    the root (a paper's README: ``papers/<paper>``)."""
    text = README.read_text() if text is None else text
    cmds: list[Command] = []
    fence = re.compile(r"^```([\w-]*)\n(.*?)^```", flags=re.S | re.M)
    for lang, block in fence.findall(text):
        if lang not in SHELL_LANGS:
            continue
        cwd = base
        for line in block.splitlines():
            line = re.sub(r"^\$ ", "", line.strip())
            if line and not line.startswith("#"):
                found, cwd = _commands_of(line, cwd, inline=False)
                cmds += found
    prose = fence.sub("", text)
    for span in re.findall(r"(?<!`)`([^`]+)`(?!`)", prose):
        span = " ".join(span.split())  # a code span may break across lines
        words = span.split()
        if len(words) > 1 and (words[0] in COMMAND_WORDS or words[0].endswith("/python")):
            cmds += _commands_of(span, base, inline=True)[0]
    return cmds


def _base(readme: Path) -> str:
    return "" if readme.parent == ROOT else str(readme.parent.relative_to(ROOT))


COMMANDS = [c for r in READMES for c in readme_commands(r.read_text(), _base(r))]


def kind(cmd: Command) -> str | None:
    a = cmd.args
    if a[0] in ("make", "dvc", "cd", "pytest", "source", "."):
        return {"source": "file", ".": "file"}.get(a[0], a[0])
    if a[0] in ("python", "python3") or a[0].endswith("/python"):
        if a[1:3] == ("-m", "pytest"):
            return "pytest"
        if len(a) > 2 and a[1] == "-m" and (a[2] == "osfl" or a[2].startswith("osfl.")):
            return "osfl"
        if len(a) > 1 and a[1].startswith("benchmarks/") and a[1].endswith(".py"):
            return "benchmark"
        return None
    if a[0] in ("pip", "pip3") and a[1:2] == ("install",):
        return "pip"
    if a[0] == "git" and a[1:2] == ("checkout",):
        return "git"
    return None


def _id(cmd: Command) -> str:
    return ("`" if cmd.inline else "") + (f"cd {cmd.cwd} && " if cmd.cwd else "") + " ".join(cmd.args)


# --------------------------------------------------------------------------------------------------------------
# the README itself


def test_readme_is_a_user_guide_of_at_most_25000_bytes():
    size = README.stat().st_size
    assert size <= MAX_BYTES, f"README.md is {size} bytes, over {MAX_BYTES}: per-run numbers belong in the reports"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_links_every_paper_readme():
    text = README.read_text()
    missing = [str(r.relative_to(ROOT)) for r in READMES[1:] if f"]({r.relative_to(ROOT)})" not in text]
    assert not missing, f"README.md does not link {', '.join(missing)}"


@pytest.mark.parametrize("readme", READMES, ids=lambda r: str(r.relative_to(ROOT)))
def test_readme_links_resolve(readme):
    text = readme.read_text()
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    anchors = {_slug(h) for h in re.findall(r"^#+ (.+)$", prose, flags=re.M)}
    links = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose)
    assert links, "the README links no report"
    bad = []
    for link in links:
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # http:, https:, mailto:
            continue
        path, _, frag = link.partition("#")
        if not path:
            if frag not in anchors:
                bad.append(f"{link}: no such heading")
        elif not (readme.parent / path).exists():
            bad.append(f"{link}: {path} does not exist")
    assert not bad, "README links that point nowhere:\n" + "\n".join(bad)


def test_readme_shows_commands():
    kinds = {kind(c) for c in COMMANDS}
    assert any(c.args[:3] == ("dvc", "exp", "run") for c in COMMANDS)
    assert {"make", "dvc", "osfl"} <= kinds


def test_every_command_is_checked():
    unchecked = sorted({_id(c) for c in COMMANDS if kind(c) is None})
    assert not unchecked, ("README commands of a kind this file does not check (test it here or drop it from the "
                           "README):\n" + "\n".join(unchecked))


# --------------------------------------------------------------------------------------------------------------
# per kind


@functools.lru_cache(maxsize=None)
def project_stages(project: str) -> frozenset[str]:
    """The stage names DVC resolves in a project (the root or a paper's folder)."""
    p = sh(str(Path(BIN) / "dvc"), "stage", "list", "--name-only", cwd=ROOT / project)
    return frozenset(p.stdout.split())


@functools.lru_cache(maxsize=None)
def module_help(module: str) -> str:
    p = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, f"python -m {module} --help failed ({p.returncode}):\n{p.stderr[-2000:]}"
    return p.stdout


def _project_of(path: Path) -> str:
    """The DVC project (root or papers/<paper>) holding a folder."""
    path = path.resolve()
    for p in [path, *path.parents]:
        if (p / ".dvc").is_dir():
            return str(p.relative_to(ROOT)) if p != ROOT else ""
    raise AssertionError(f"{path} is in no DVC project")


def _readme_remotes() -> set[str]:
    names = set(re.findall(r'remote "([^"]+)"', (ROOT / ".dvc" / "config").read_text()))
    for c in COMMANDS:
        if c.args[:3] == ("dvc", "remote", "add"):
            names |= {a for a in c.args[3:] if not a.startswith("-")}
    return names


def check_make(cmd: Command) -> None:
    for a in cmd.args[1:]:
        var, eq, value = a.partition("=")
        if eq and value.endswith("dvc.yaml"):
            assert (cmd.where / value).is_file(), f"{cmd}: {var}={value} does not exist"
    p = subprocess.run(["make", "-n", *cmd.args[1:]], cwd=cmd.where, capture_output=True, text=True)
    assert p.returncode == 0, f"{cmd}: make -n failed: {p.stderr.strip()}"


def _set_key(params: dict, key: str, value, add: bool, where: Command) -> None:
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


def _check_overrides(cmd: Command, sets: list[str]) -> None:
    by_file: dict[str, dict] = {}
    for s in sets:
        target, _, assign = s.rpartition(":") if re.match(r"^[\w/.-]+\.yaml:", s) else ("", "", s)
        target = target or "params.yaml"
        key, _, raw = assign.partition("=")
        add = key.startswith("++")
        target = str((cmd.where / target).relative_to(ROOT))
        params = by_file.setdefault(target, copy.deepcopy(yaml.safe_load((ROOT / target).read_text())))
        _set_key(params, key.lstrip("+"), yaml.safe_load(raw), add, cmd)
    for target, params in by_file.items():
        if isinstance(params.get("model"), dict):  # a paper's per-dataset models: validate its first dataset
            dataset = params.get("datasets", [params.get("dataset")])[0]
            params = {**params, "dataset": dataset, "model": for_dataset(params["model"], dataset, "model")}
        if params.get("data", {}).get("mirror"):
            params["data"]["mirror"] = ""  # a folder on the user's machine
        validate(params, params_file=target if target != "params.yaml" else None)


def _check_target(cmd: Command, target: str, glob: bool) -> None:
    if "<" in target or (cmd.where / target).exists():
        return
    path, _, name = target.rpartition(":")
    folder = (cmd.where / path).parent if path else cmd.where
    if path:
        assert (cmd.where / path).is_file(), f"{cmd}: {path} does not exist"
    stages = project_stages(_project_of(folder))
    # a foreach/matrix stage's name targets all its items (`dvc repro prepare`)
    ok = any(fnmatch.fnmatchcase(s, name) for s in stages) if glob else \
        name in stages or any(s.startswith(name + "@") for s in stages)
    assert ok, f"{cmd}: '{target}' is neither a file nor a stage of {_project_of(folder) or 'the root'}"


TARGET_COMMANDS = {"repro", "status", "commit", "push", "pull", "fetch", "checkout", "run"}


def check_dvc(cmd: Command) -> None:
    from dvc.cli import DvcParserError, parse_args

    assert (cmd.where / ".dvc").is_dir() or cmd.where == ROOT, f"{cmd}: {cmd.cwd} is not a DVC project"
    out = io.StringIO()
    log = logging.StreamHandler(out)  # DVC logs the parser's complaint and prints the usage
    logging.getLogger("dvc").addHandler(log)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            ns = parse_args(list(cmd.args[1:]))
    except (SystemExit, DvcParserError):  # an unknown subcommand or option
        errors = [line for line in out.getvalue().splitlines() if "argument" in line or "unrecognized" in line]
        raise AssertionError(f"{cmd}: DVC does not accept it: {' '.join(errors) or out.getvalue()[-300:]}") from None
    finally:
        logging.getLogger("dvc").removeHandler(log)
    if ns.cmd in TARGET_COMMANDS:
        for t in getattr(ns, "targets", None) or []:
            _check_target(cmd, t, glob=getattr(ns, "glob", False))
    remote = getattr(ns, "remote", None)
    if isinstance(remote, str) and ns.cmd not in ("remote",):
        assert remote in _readme_remotes(), f"{cmd}: no remote '{remote}' in .dvc/config or the README"
    for proj in getattr(ns, "repos", None) or []:  # dvc gc -p
        assert (cmd.where / proj / ".dvc").is_dir(), f"{cmd}: {proj} is not a DVC project"
    sets = [cmd.args[i + 1] for i, a in enumerate(cmd.args) if a in ("-S", "--set-param")]
    if sets:
        _check_overrides(cmd, sets)


def check_cd(cmd: Command) -> None:
    folder = cmd.where / cmd.args[1]
    assert len(cmd.args) == 2 and folder.is_dir(), f"{cmd}: {cmd.args[1]} is not a folder"
    if folder.resolve().parent == (ROOT / "papers").resolve():
        assert (folder / "dvc.yaml").is_file() and (folder / ".dvc").is_dir(), f"{cmd}: not a DVC project"


def check_osfl(cmd: Command) -> None:
    module = cmd.args[2]
    rel = Path("src", *module.split("."))
    assert (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__main__.py").is_file(), \
        f"{cmd}: no module {module} under src/"
    help_text = module_help(module)
    rest = cmd.args[3:]
    for a in rest:
        if a.startswith("--"):
            assert re.search(rf"(?<![\w-]){re.escape(a.split('=')[0])}(?![\w-])", help_text), \
                f"{cmd}: {a} is not an option of {module} (--help)"
    files = [a for a in rest if a.endswith("dvc.yaml")]
    for f in files:
        assert (cmd.where / f).is_file(), f"{cmd}: {f} does not exist"
    if module == "osfl.farm" and files and "<" not in files[0]:
        opts_with_value = set(re.findall(r"(--[\w-]+) [A-Z_]+", help_text))
        i, patterns = rest.index(files[0]) + 1, []
        while i < len(rest):
            if rest[i] in opts_with_value:
                i += 2
                continue
            if not rest[i].startswith("-"):
                patterns.append(rest[i])
            i += 1
        stages = project_stages(_project_of((cmd.where / files[0]).parent))
        for pat in patterns:
            assert any(fnmatch.fnmatchcase(s, pat) for s in stages), f"{cmd}: '{pat}' matches no stage"


def check_file(cmd: Command) -> None:
    path = cmd.where / cmd.args[1]
    if not path.is_file() and cmd.args[1] == ".venv/bin/activate":  # the tests run from another environment
        assert re.search(r"^VENV \?= \.venv$", (ROOT / "Makefile").read_text(), flags=re.M), \
            f"{cmd}: `make install` no longer creates .venv"
        return
    assert path.is_file(), f"{cmd}: {cmd.args[1]} does not exist"


def check_benchmark(cmd: Command) -> None:
    assert (cmd.where / cmd.args[1]).is_file(), f"{cmd}: {cmd.args[1]} does not exist"


def check_pytest(cmd: Command) -> None:
    args = cmd.args[3:] if cmd.args[0] != "pytest" else cmd.args[1:]
    paths = [a.split("::")[0] for a in args if not a.startswith("-")]
    for p in paths:
        assert (cmd.where / p).exists(), f"{cmd}: {p} does not exist"


def check_pip(cmd: Command) -> None:
    args = cmd.args[2:]
    help_text = subprocess.run([sys.executable, "-m", "pip", "install", "--help"], capture_output=True,
                               text=True).stdout
    for i, a in enumerate(args):
        if a.startswith("-"):
            assert re.search(rf"(?<![\w-]){re.escape(a)}(?![\w-])", help_text), f"{cmd}: pip has no {a}"
        if a in ("-r", "--requirement", "-e", "--editable", "-c"):
            assert (cmd.where / args[i + 1]).exists(), f"{cmd}: {args[i + 1]} does not exist"


def check_git(cmd: Command) -> None:
    paths = [a for a in cmd.args[2:] if not a.startswith("-")]
    assert paths, f"{cmd}: only `git checkout <paths>` is checked"
    p = subprocess.run(["git", "ls-files", "--error-unmatch", *paths], cwd=cmd.where, capture_output=True,
                       text=True)
    assert p.returncode == 0, f"{cmd}: not tracked by git: {p.stderr.strip()}"


CHECKS = {"make": check_make, "dvc": check_dvc, "cd": check_cd, "osfl": check_osfl, "file": check_file,
          "benchmark": check_benchmark, "pytest": check_pytest, "pip": check_pip, "git": check_git}


def _unique(cmds: list[Command]) -> list[Command]:
    seen: dict[tuple, Command] = {}
    for c in cmds:
        seen.setdefault((c.cwd, c.args), c)
    return list(seen.values())


@pytest.mark.parametrize("cmd", _unique([c for c in COMMANDS if kind(c)]), ids=_id)
def test_readme_command(cmd):
    CHECKS[kind(cmd)](cmd)


def test_readme_pipelines_resolve():
    """Every pipeline the README runs a command in resolves (DVC lists its stages)."""
    projects = {""} | {_project_of(c.where) for c in COMMANDS if kind(c) == "dvc"}
    for f in {a for c in COMMANDS for a in c.args if a.endswith("dvc.yaml") and "<" not in a}:
        projects.add(_project_of((ROOT / f).parent))
    for project in sorted(projects):
        assert project_stages(project), f"{project or 'the root'}: DVC lists no stage"
