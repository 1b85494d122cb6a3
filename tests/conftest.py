import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.chdir(ROOT)  # tests read params.yaml and dvc.yaml from the repository root
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("OSFL_DEVICE", "cpu")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
