"""The models and data behind every committed result of the main pipeline ship with the repository.

``dvc-store/`` is a content-addressed DVC remote (the default remote, ``shipped`` in .dvc/config) kept in git, so a
fresh clone can ``dvc pull`` offline and find ``dvc status`` clean. Only artifacts under the stated size cap go
there (README, "Reproducibility"); pushes of your own experiments belong in your own remote
(``dvc remote add -d --local mine <url>``).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "dvc-store"
CAP_BYTES = 20 * 2**20  # README: the shipped store stays under 20 MiB


def _object(md5: str) -> Path:
    return STORE / "files" / "md5" / md5[:2] / md5[2:]


def _lock_outs(lock: Path):
    data = yaml.safe_load(lock.read_text())
    for name, stage in data["stages"].items():
        for out in stage.get("outs", []):
            yield name, out


def test_every_cached_output_of_the_main_pipeline_is_in_the_shipped_store():
    dvc_yaml = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    uncached = {next(iter(o)) for st in dvc_yaml["stages"].values()
                for kind in ("outs", "metrics", "plots") for o in st.get(kind, [])
                if isinstance(o, dict) and next(iter(o.values())).get("cache") is False}
    missing, checked = [], 0
    for name, out in _lock_outs(ROOT / "dvc.lock"):
        if any(out["path"].startswith(u.split("${")[0]) and "${" in u or out["path"] == u for u in uncached):
            continue
        checked += 1
        obj = _object(out["md5"])
        if not obj.is_file():
            missing.append(f"{name}: {out['path']}")
            continue
        if out["md5"].endswith(".dir"):  # a folder: its listing names every file's object
            import json

            for entry in json.loads(obj.read_text()):
                if not _object(entry["md5"]).is_file():
                    missing.append(f"{name}: {out['path']}/{entry['relpath']}")
    assert checked >= 10, checked
    assert not missing, "not in dvc-store (run `dvc push dvc.yaml` and commit dvc-store/): " + ", ".join(missing)


def test_shipped_store_is_tracked_by_git_and_under_its_cap():
    tracked = subprocess.run(["git", "ls-files", "dvc-store"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    files = [f for f in STORE.rglob("*") if f.is_file()]
    assert files and len(tracked) == len(files), "every file of dvc-store/ must be committed"
    assert sum(f.stat().st_size for f in files) <= CAP_BYTES
    config = (ROOT / ".dvc" / "config").read_text()
    assert "remote = shipped" in config and "url = ../dvc-store" in config
