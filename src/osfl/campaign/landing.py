"""``land``: an archive's finished stages recorded in this checkout, each checked against its dependencies."""
from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from pathlib import Path

from .projects import _dvc, _lock_entry
from .steps import MANIFEST


def _deps(entry: dict) -> dict[str, str]:
    return {d["path"]: d.get("md5", "") for d in entry.get("deps", [])}


def land(root: Path, archive: Path, progress=print) -> list[tuple[str, str]]:
    """Land the finished stages of an archive in this checkout: (stage key, landed | why not) per step."""
    root = Path(root).resolve()
    report = []
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        manifest = json.loads((Path(tmp) / MANIFEST).read_text())
        for entry in manifest["steps"]:
            key = f"{entry['project']}:{entry['stage']}"
            if entry["state"] != "finished":
                report.append((key, f"not landed: {entry['state']} on the lent machine ({entry['detail']})"))
            elif entry["left_behind"]:
                report.append((key, "not landed: cached outputs stayed on the lent machine: "
                                    + ", ".join(entry["left_behind"])))
            else:
                report.append((key, _land_one(root, Path(tmp) / "files", entry)))
            progress(f"[campaign] {report[-1][0]}: {report[-1][1]}")
    return report


def _land_one(root: Path, files: Path, entry: dict) -> str:
    project = root / entry["project"]
    lock = project / "dvc.lock"
    before = lock.read_bytes() if lock.is_file() else None
    for f in entry["files"]:
        dst = root / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(files / f, dst)
    done = _dvc(project, "commit", "-f", entry["stage"])
    here = _lock_entry(project, entry["stage"])
    differ = sorted(p for p, md5 in _deps(entry["lock"]).items() if _deps(here).get(p) != md5)
    if done.returncode == 0 and not differ and here.get("cmd") == entry["lock"].get("cmd"):
        return "landed"
    if before is None:  # put dvc.lock back as it was; the unpacked outputs stay for a look
        lock.unlink(missing_ok=True)
    else:
        lock.write_bytes(before)
    if done.returncode != 0:
        return "not landed: dvc commit: " + (done.stderr.strip().splitlines() or ["?"])[-1]
    if differ:
        return "not landed: dependencies differ from the lent machine's: " + ", ".join(differ)
    return "not landed: its command differs from the lent machine's"
