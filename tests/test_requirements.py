"""Requirements are pinned: every direct dependency exactly (requirements.txt), every installed package exactly
(requirements.lock, which make install and CI install from), and the two agree."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+\-]+)", line)
        assert m, f"{path.name}: '{line}' is not pinned exactly (name==version)"
        pins[re.sub(r"[-_.]+", "-", m.group(1).lower())] = m.group(2)
    return pins


def test_direct_dependencies_are_pinned_and_locked_at_the_same_versions():
    direct, locked = _pins(ROOT / "requirements.txt"), _pins(ROOT / "requirements.lock")
    assert {"torch", "torchvision", "dvc", "ray"} <= set(direct)
    differ = {n: (v, locked.get(n)) for n, v in direct.items() if locked.get(n) != v}
    assert not differ, f"requirements.txt and requirements.lock disagree (run `make lock`): {differ}"


def test_make_install_installs_from_the_lock():
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements.lock" in makefile and "-r requirements.txt\n" not in makefile.split("lock:")[0]
