"""The commit-msg check a contributor installs with `make hooks` (.ci/commit-msg): subjects of at most 72 characters,
then a blank line before the body."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[1] / ".ci" / "commit-msg"


def run(tmp_path: Path, message: str) -> subprocess.CompletedProcess:
    f = tmp_path / "COMMIT_EDITMSG"
    f.write_text(message)
    return subprocess.run(["bash", str(HOOK), str(f)], capture_output=True, text=True)


@pytest.mark.parametrize("message", [
    "MNIST ships in dvc-store\n",
    "x" * 72 + "\n\nA body line that is far longer than seventy-two characters is fine: only the subject counts.\n",
    "Subject\n\nbody\n# a comment line git drops, of any length " + "y" * 80 + "\n",
])
def test_accepted(tmp_path, message):
    assert run(tmp_path, message).returncode == 0


@pytest.mark.parametrize("message, says", [
    ("x" * 73 + "\n", "73 characters, at most 72"),
    ("Subject\nbody right below it\n", "second line must be blank"),
    ("\n\nbody\n", "subject (first line) is empty"),
])
def test_refused_with_one_line(tmp_path, message, says):
    done = run(tmp_path, message)
    assert done.returncode == 1 and says in done.stderr and done.stderr.count("\n") == 1
