"""Shared by the pipeline tests: run a command with the venv's tools first on PATH, copy the working tree."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

BIN = str(Path(sys.executable).parent)
ROOT = Path(__file__).resolve().parents[1]
SRC = str(ROOT / "src")  # this checkout's code, also in a git worktree
# one thread per process: stages run under pytest-xdist workers that share the machine's cores
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


_ZYGOTE: dict[str, str] = {}  # this process's warm server: its socket and the folder of its `python` shim


def paper_params(paper: str) -> dict:
    """The committed ``papers/<paper>/params.yaml``."""
    return yaml.safe_load((ROOT / "papers" / paper / "params.yaml").read_text())


def zygote_env() -> dict[str, str]:
    """``OSFL_ZYGOTE`` and the PATH (the shim's folder, the venv's, then this process's) that send ``python -m
    osfl...`` commands to this process's warm server (``tests/zygote.py``), started on first use and stopped when
    the process ends; ``{}`` with ``OSFL_NO_ZYGOTE=1``.
    The first call waits (up to 120 s) for the server to import torch; should it not come up, the shim runs
    every command in a fresh interpreter."""
    if os.environ.get("OSFL_NO_ZYGOTE") == "1":
        return {}
    if not _ZYGOTE:
        import atexit

        import zygote

        folder = tempfile.mkdtemp(prefix="osfl-zygote-")
        zygote.shim(folder, THREADS)
        sock = os.path.join(folder, "socket")
        env = {**os.environ, "PYTHONPATH": SRC, **THREADS}
        proc = subprocess.Popen([sys.executable, str(Path(zygote.__file__)), "serve", sock], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True)
        atexit.register(lambda: (proc.kill(), shutil.rmtree(folder, ignore_errors=True)))
        deadline = time.monotonic() + 120
        while not os.path.exists(sock) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # the server imports torch first (each command started meanwhile would import it too)
        _ZYGOTE.update(socket=sock, bin=folder)
    return {"OSFL_ZYGOTE": _ZYGOTE["socket"],
            "PATH": os.pathsep.join((_ZYGOTE["bin"], BIN, os.environ.get("PATH", "")))}


def zygote_served() -> list[dict]:
    """The commands this process's warm server ran (``argv``, ``cwd``), oldest first; [] when none is running."""
    import zygote

    return zygote.served(_ZYGOTE["bin"]) if _ZYGOTE else []


def sh(*args, cwd, check=True, env_extra=None) -> subprocess.CompletedProcess:
    """Run a command; a ``dvc``/``python -m osfl.stages`` command's wall time and its stages' times (start-up and
    imports, work) go to the suite's time log (``OSFL_SUITE_TIMES``, printed at the end of the run).
    ``python -m osfl...`` commands, the stages' included, run in children of a warm interpreter (``zygote_env``);
    ``env_extra={"OSFL_ZYGOTE": ""}`` runs them in fresh ones."""
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""),
           "DVC_NO_ANALYTICS": "1", "PYTHONPATH": SRC, **THREADS}
    env.update(zygote_env())
    env.update(env_extra or {})
    stage_log = tempfile.NamedTemporaryFile(prefix="stages-", suffix=".jsonl", delete=False)
    stage_log.close()
    env["OSFL_STAGE_TIMES"] = stage_log.name
    t0 = time.perf_counter()
    p = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    log_command(list(args), wall, Path(stage_log.name))
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({p.returncode}):\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p


def log_command(args: list[str], wall: float, stage_log: Path) -> None:
    """One JSON line per command in the suite's time log: the command, its wall time, its stages' records."""
    stages = [json.loads(line) for line in stage_log.read_text().splitlines() if line.strip()]
    stage_log.unlink(missing_ok=True)
    suite_log = os.environ.get("OSFL_SUITE_TIMES")
    if suite_log and (stages or args[:1] == ["dvc"]):
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        with open(suite_log, "a") as f:
            f.write(json.dumps({"cmd": " ".join(args[:3]), "test": test, "wall": wall, "stages": stages}) + "\n")


def copy_worktree(repo_root: Path, work: Path) -> None:
    """The tracked and untracked-not-ignored files of the repository, without pipeline outputs and locks, nor the
    shipped store (dvc-store/, 47 MiB in 2,363 files, 13 times the rest): a copy pushes to and pulls from its own
    remote (:func:`init_repo`), and the store is checked on the repository itself (test_shipped_store.py)."""
    files = sh("git", "ls-files", "-co", "--exclude-standard", cwd=repo_root).stdout.split()
    for rel in files:
        if rel.startswith("dvc-store/"):
            continue
        src = repo_root / rel
        # a paper's pipeline is a DVC project of its own: its outputs lie under papers/<paper>/
        in_project = re.sub(r"^papers/[^/]+/", "", rel)
        if src.is_file() and not in_project.startswith(("results/", "reports/", "models/", "data/")) \
                and not in_project.endswith("dvc.lock") and in_project != "summary.json":  # render's metrics
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, work / rel)
    # each paper project's results/ as an empty folder: a render that reads another project's runs (FedHydra's of the
    # benchmark's) finds none, as on a checkout where that project has not run
    for results in (repo_root / "papers").glob("*/results"):
        (work / results.relative_to(repo_root)).mkdir(parents=True, exist_ok=True)


def dag(project: Path) -> tuple[list[str], str]:
    """Every stage ``dvc dag --dot`` resolves in ``project`` (each a node line of the graph) and the graph itself:
    one DVC call instead of `dvc stage list` and `dvc dag`, each of which resolves the whole grid."""
    dot = sh("dvc", "dag", "--dot", cwd=project).stdout
    return re.findall(r'^"([^"]+)";$', dot, re.M), dot


def stage_families(project: Path) -> dict[str, int]:
    """How many stages of each family (the name before ``@``) DVC resolves in ``project``."""
    from collections import Counter

    return dict(Counter(n.split("@")[0] for n in dag(project)[0]))


def init_repo(work: Path, remote: Path) -> None:
    sh("git", "init", "-q", "-b", "main", cwd=work)
    sh("git", "config", "user.email", "t@example.com", cwd=work)
    sh("git", "config", "user.name", "test", cwd=work)
    sh("dvc", "remote", "add", "-f", "-d", "--local", "testremote", str(remote), cwd=work)
    sh("git", "add", "-A", cwd=work)
    sh("git", "commit", "-q", "-m", "copy", cwd=work)


@contextlib.contextmanager
def repo_copy(repo_root: Path, work: Path, project: str = ".", one_code_dep: bool = True):
    """A copy of the working tree at ``work`` (:func:`copy_worktree`) whose ``<project>/params.yaml`` the caller edits
    inside the block, through the dict it yields; on leaving, the params are written back and the copy becomes a git
    repository with ``work.parent / "remote"`` as its DVC remote (:func:`init_repo`). Its stages run on one thread
    (``runtime.threads``): the suite's xdist workers share the cores, and a project pinning more (the root's 2)
    would oversubscribe them; a caller may set another count inside the block. With ``one_code_dep`` (the default) its
    stages list their code as one folder (:func:`one_code_dep_per_stage`)."""
    copy_worktree(repo_root, work)
    pf = work / project / "params.yaml"
    params = yaml.safe_load(pf.read_text())
    params.setdefault("runtime", {})["threads"] = 1
    yield params
    pf.write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True))
    if one_code_dep:
        one_code_dep_per_stage(work / project / "dvc.yaml", work)
    init_repo(work, work.parent / "remote")


def one_code_dep_per_stage(pipeline: Path, root: Path) -> None:
    """Rewrite ``pipeline`` so that each stage lists the code it runs as one folder, ``src/osfl``, in place of its
    module files (data deps kept, in order). DVC rewrites the whole dvc.lock after every stage and parses it with
    ruamel's round-trip loader (pure Python) each time: with 30-60 module deps per stage a smoke pipeline of a hundred
    short stages spent minutes there (30 trivial stages: 66 s with 40 module deps each, 13 s with one folder). The
    copies test wiring, records and renders; the committed dvc.yaml files' module lists are checked against the
    imports by test_dag_deps.py (and a copy with other params by :func:`real_code_deps`)."""
    from osfl.provenance.deps import _is_code

    data = yaml.safe_load(pipeline.read_text())
    root = root.resolve()
    src_osfl = root / "src" / "osfl"
    for body in (data.get("stages") or {}).values():
        body = body.get("do", body)
        folder = (pipeline.parent / body.get("wdir", ".")).resolve()
        deps, kept, placed = body.get("deps") or [], [], False
        for dep in deps:
            path = dep if isinstance(dep, str) else next(iter(dep))
            if _is_code(path.split("${")[0], folder, root):  # a templated entry by its fixed part
                if not placed:
                    kept.append(os.path.relpath(src_osfl, folder))
                    placed = True
            else:
                kept.append(dep)
        if deps:
            body["deps"] = kept
    pipeline.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1000))


def real_code_deps(repo_root: Path, work: Path, project: str, dest: Path) -> Path:
    """A minimal DVC project at ``dest`` with ``work``'s params of ``project`` (a fixture's copy) and the repository's
    own dvc.yaml, module deps as committed, for :mod:`osfl.provenance.deps` to resolve the copy's stages against
    their imports; returns its root (``dest``)."""
    (dest / project).mkdir(parents=True, exist_ok=True)
    (dest / "src").symlink_to(work / "src", target_is_directory=True)
    shutil.copytree(work / project / ".dvc", dest / project / ".dvc", ignore=shutil.ignore_patterns("tmp", "cache"))
    shutil.copy2(repo_root / project / "dvc.yaml", dest / project / "dvc.yaml")
    shutil.copy2(work / project / "params.yaml", dest / project / "params.yaml")
    sh("git", "init", "-q", cwd=dest)
    return dest


def copied_results(project: Path, dest: Path, run: str, made_up: dict[str, tuple[str, float]]) -> Path:
    """A copy of ``project``/results at ``dest`` where, in ``run``, each made-up run id of ``made_up`` (id -> (the run
    it copies, the final accuracy it is given)) has the copied run's record and curves: artifacts whose stages are
    others' with another --set render from these in-process. Returns ``dest``."""
    shutil.copytree(project / "results", dest)
    folder = dest / run
    for new, (src, acc) in made_up.items():
        rec = json.loads((folder / "runs" / f"{src}.json").read_text())
        (folder / "runs" / f"{new}.json").write_text(json.dumps({**rec, "acc_final": acc}))
        if (folder / "live" / src).is_dir():
            shutil.copytree(folder / "live" / src, folder / "live" / new)
    return dest


def compile_latex(bodies: list[str], folder: Path) -> Path:
    """Compile table bodies in a minimal document with pdflatex (the caller skips when it is missing)."""
    from osfl.reporting import latex_document

    (folder / "doc.tex").write_text(latex_document(bodies), encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"], cwd=folder,
                          capture_output=True, text=True, errors="replace", timeout=60)
    assert proc.returncode == 0, proc.stdout[-3000:]
    pdf = folder / "doc.pdf"
    assert pdf.exists() and pdf.read_bytes().startswith(b"%PDF")
    return pdf


# Keys of a runtime record (osfl.stages.records): wall-clock seconds and the host. None may appear in a cached output
# or in a stage's record of what it computed, so that the same computation gives the same bytes (issue 37).
HOST_KEYS = frozenset({"seconds", "per_client_seconds", "round_seconds", "cpu", "cpu_capability", "gpu"})


def host_facts(project: Path, records: tuple[str, ...] = ()) -> list[str]:
    """``file: key`` for every JSON file under ``project``/models (the cached uploads' manifests and indexes), and
    under ``project``/results matching one of the ``records`` globs, that holds a key of :data:`HOST_KEYS` at any
    depth. The runtime records themselves (``results/<exp>/runtime/``) are where those keys belong."""
    def keys(obj, where=""):
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k in HOST_KEYS:
                    yield f"{where}{k}"
                yield from keys(v, f"{where}{k}.")
        elif isinstance(obj, list):
            for v in obj:
                yield from keys(v, where)

    files = list((project / "models").rglob("*.json"))
    for pattern in records:
        files += [f for f in (project / "results").glob(pattern) if "runtime" not in f.parts]
    assert files, f"no JSON output under {project}"
    return [f"{f.relative_to(project)}: {k}" for f in sorted(set(files)) for k in sorted(set(keys(json.loads(f.read_text()))))]


def lock_weights(repo: Path, lock_text: str, stages) -> dict:
    """Every .pt file the stages' cached output folders hold, as the dvc.lock names them, loaded from the repository's
    DVC cache: {output/file: state dict}. (The folders' own hashes differ between runs: their manifests record
    wall-clock seconds.)"""
    import torch

    lock, out = yaml.safe_load(lock_text)["stages"], {}
    cache = repo / ".dvc" / "cache" / "files" / "md5"
    for stage in stages:
        for o in lock[stage]["outs"]:
            if o["md5"].endswith(".dir"):
                for f in json.loads((cache / o["md5"][:2] / o["md5"][2:]).read_text()):
                    if f["relpath"].endswith(".pt"):
                        out[f"{o['path']}/{f['relpath']}"] = torch.load(cache / f["md5"][:2] / f["md5"][2:],
                                                                        weights_only=True)
    return out
