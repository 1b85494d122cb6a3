"""The suite's warm interpreter (tests/zygote.py): what it runs, what it leaves to a fresh interpreter, exit codes."""
from __future__ import annotations

import pytest
from helpers import sh, zygote_env, zygote_served


@pytest.fixture
def warm():
    if not zygote_env():
        pytest.skip("the suite runs with OSFL_NO_ZYGOTE=1")


def test_a_stage_runs_warm_with_its_exit_code_and_output(warm, tmp_path):
    before = len(zygote_served())
    p = sh("python", "-m", "osfl.stages.server", "--method", "fedavg", "--no-such-flag", cwd=tmp_path,
           check=False)
    assert p.returncode == 2 and "unrecognized arguments: --no-such-flag" in p.stderr
    assert "usage: server.py" in p.stderr  # argv[0] is the module's file, as under `python -m`
    served = zygote_served()[before:]
    assert [r["argv"] for r in served] == [["-m", "osfl.stages.server", "--method", "fedavg", "--no-such-flag"]]


def test_other_commands_and_fresh_requests_run_the_real_interpreter(warm, tmp_path):
    before = len(zygote_served())
    assert sh("python", "-c", "import sys; sys.exit(5)", cwd=tmp_path, check=False).returncode == 5
    p = sh("python", "-m", "osfl.stages.server", "--method", "fedavg", "--no-such-flag", cwd=tmp_path, check=False,
           env_extra={"OSFL_ZYGOTE": ""})
    assert p.returncode == 2 and "unrecognized arguments" in p.stderr
    p = sh("python", "-m", "osfl.stages.server", "--help", cwd=tmp_path, check=False, env_extra={"OMP_NUM_THREADS": "2"})
    assert p.returncode == 0  # other thread settings than the server's: fresh
    assert len(zygote_served()) == before


def test_a_crash_in_the_module_is_a_failed_command(warm, tmp_path):
    p = sh("python", "-m", "osfl.no_such_module", cwd=tmp_path, check=False)
    assert p.returncode == 1 and "No module named osfl.no_such_module" in p.stderr
