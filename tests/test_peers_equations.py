"""The peer harness of benchmarks/peers (official.py, equations.py) without the official checkouts (CI has none):
the registry, the import isolation, the missing-checkout message, run_until, the CPU device shim and the record
writer. The last test runs the whole equation harness when the checkouts are there ($OSFL_PEERS)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
if sys.path[0] != str(ROOT):  # before site-packages: opacus installs a top-level ``benchmarks`` package
    sys.path.insert(0, str(ROOT))
if "benchmarks" in sys.modules and not str(getattr(sys.modules["benchmarks"], "__file__", "")).startswith(str(ROOT)):
    del sys.modules["benchmarks"]

from benchmarks.peers import equations, official  # noqa: E402
from benchmarks.peers.official import (OFFICIAL, MissingCheckout, NotReached, Stub, cpu_device,  # noqa: E402
                                       import_isolated, run_until, statement_line)

FOLDERS = {"DENSE", "Co-Boosting", "FedMHO", "DatasetCondensation", "ICDE2025-FL-SA", "fed_cvae", "otfusion"}


def test_registry_is_complete():
    assert set(OFFICIAL) == FOLDERS
    for key, o in OFFICIAL.items():
        assert o.folder == key == o.repo.split("/")[1]
        assert re.fullmatch(r"[0-9a-f]{40}", o.commit), o
        assert o.url == f"https://github.com/{o.repo}"
        assert o.as_dict() == {"repo": o.repo, "url": o.url, "commit": o.commit, "folder": o.folder}
        for stub in o.stubs:
            assert stub.note and "\n" not in stub.note
    assert set(equations.CHECKS_NEED) <= FOLDERS


def test_missing_checkout_is_one_line_naming_the_clone(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OSFL_PEERS", str(tmp_path / "absent"))
    o = OFFICIAL["Co-Boosting"]
    with pytest.raises(MissingCheckout) as err:
        o.require()
    msg = str(err.value)
    assert "\n" not in msg
    assert f"git clone https://github.com/rong-dai/Co-Boosting {tmp_path / 'absent' / 'Co-Boosting'}" in msg
    assert o.commit in msg
    with pytest.raises(MissingCheckout):
        with official.official_modules("Co-Boosting", "utils_fl"):
            pass
    # the harness stops with that line (the first repository it needs) and exit status 2, writing nothing
    out = tmp_path / "eq.json"
    assert equations.main(["--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "git clone https://github.com/" in lines[0] and not out.exists()


def _fake_checkout(root: Path) -> Path:
    pkg = root / "fakepeer"
    (pkg / "helpers").mkdir(parents=True)
    (pkg / "helpers" / "__init__.py").write_text("from . import utils\n")
    (pkg / "helpers" / "utils.py").write_text("import json\nimport fake_missing_dep\nVALUE = fake_missing_dep.X + 1\n")
    (pkg / "peer_top.py").write_text("import helpers.utils\nTOP = helpers.utils.VALUE\n")
    return pkg


def test_import_isolation_restores_sys_modules_and_path(tmp_path):
    pkg = _fake_checkout(tmp_path)
    sentinel = type(sys)("helpers")  # another checkout's (or the environment's) module of the same name
    sys.modules["helpers"] = sentinel
    try:
        before_path, before_modules = list(sys.path), dict(sys.modules)
        def build(root):
            m = type(sys)("fake_missing_dep")
            m.X = 41
            return {"fake_missing_dep": m}

        stub = Stub(("fake_missing_dep",), build, "fake_missing_dep stub")
        with import_isolated(pkg, "peer_top", "helpers.utils", stubs=(stub,)) as (top, utils):
            assert top.TOP == 42 and utils.VALUE == 42
            assert sys.modules["helpers"] is not sentinel
            assert sys.path[0] == str(pkg)
        assert sys.path == before_path
        assert set(sys.modules) == set(before_modules)
        assert all(sys.modules[k] is v for k, v in before_modules.items())
        assert sys.modules["helpers"] is sentinel and "fake_missing_dep" not in sys.modules
        # the same when the block raises
        with pytest.raises(RuntimeError):
            with import_isolated(pkg, "peer_top", stubs=(stub,)):
                raise RuntimeError("boom")
        assert sys.path == before_path and set(sys.modules) == set(before_modules)
        assert sys.modules["helpers"] is sentinel
    finally:
        sys.modules.pop("helpers", None)


def _traced(n):
    total = 0
    for i in range(n):
        total = total + i * (
            2)
        try:
            total += 0
        except Exception:  # run_until's stop must not be swallowed here
            total = -1
    return total


def test_run_until_stops_after_a_statement_and_returns_its_locals():
    assert statement_line(_traced, "total = total + i") == _traced.__code__.co_firstlineno + 3
    loc = run_until(_traced, "total = total + i", 5)
    assert loc["i"] == 0 and loc["total"] == 0 and loc["n"] == 5
    loc = run_until(_traced, "total = total + i", 5, occurrence=3)
    assert loc["i"] == 2 and loc["total"] == 0 + 2 + 4
    with pytest.raises(NotReached):
        run_until(_traced, "total = total + i", 2, occurrence=3)
    with pytest.raises(ValueError):
        run_until(_traced, "total", 2)  # several statements: ambiguous
    assert sys.gettrace() is None or "coverage" in type(sys.gettrace()).__module__


def test_cpu_device_shim_is_a_no_op_and_is_undone():
    saved = torch.Tensor.cuda, torch.nn.Module.cuda, torch.Tensor.to
    x, m = torch.zeros(2), torch.nn.Linear(1, 1)
    with cpu_device():
        assert x.cuda() is x and m.cuda() is m
        assert x.to("cuda").device.type == "cpu" and x.to(torch.device("cuda:0")) is x
        assert x.to("cuda", torch.float64).dtype == torch.float64
        assert x.to(device="cuda", dtype=torch.float64).device.type == "cpu"
    assert (torch.Tensor.cuda, torch.nn.Module.cuda, torch.Tensor.to) == saved


def test_record_is_deterministic(tmp_path):
    h = equations.Harness()
    h._commits["DENSE"] = OFFICIAL["DENSE"].commit  # no checkout needed
    a = torch.tensor([1.0, 2.0], dtype=torch.float64)
    h.add(id="x", method="DENSE", what="w", peer="DENSE", where="f.py:1", ours="m:f", inputs="i",
          values=[(a, a + 1e-12)], grads=[(a, a)])
    h.add(id="y", method="DENSE", what="w", peer="DENSE", where="f.py:2", ours="m:g", inputs="i",
          values=[(a, a + 1.0)], documented="src/x.py:3")
    rec = h.record()
    assert [c["verdict"] for c in rec["checks"]] == ["equal", "differs (documented choice)"]
    assert rec["checks"][0]["max_abs_diff"] == 1e-12 and rec["checks"][1]["rel_diff"] == 0.5
    assert rec["checks"][1]["note"].endswith("Documented in src/x.py:3.")
    p1, p2 = tmp_path / "a.json", tmp_path / "b.json"
    equations.write_record(rec, p1)
    shuffled = {k: rec[k] for k in reversed(list(rec))}
    equations.write_record(shuffled, p2)
    assert p1.read_bytes() == p2.read_bytes() and p1.read_bytes().endswith(b"\n")
    text = p1.read_text()
    assert json.loads(text) == rec and text.startswith('{\n "checks": [')
    assert "time" not in text and "host" not in text


def test_differences_and_rounding():
    a = torch.tensor([2.0, -4.0])
    assert equations.differences([(a, a)]) == (0.0, 0.0)
    assert equations.differences([(a, a + 0.4)]) == (pytest.approx(0.4), pytest.approx(0.1))
    assert equations.differences([(torch.zeros(2), torch.ones(2))])[1] is None  # relative to 0: not a number
    with pytest.raises(ValueError):
        equations.differences([(a, a[:1])])
    assert equations._sig(1.23456e-7) == 1.23e-7 and equations._sig(float("nan")) is None


def _checkouts_present() -> bool:
    return all(OFFICIAL[p].path().is_dir() for p in equations.CHECKS_NEED)


@pytest.mark.skipif(not _checkouts_present(), reason="official checkouts not under $OSFL_PEERS (see "
                                                      "benchmarks/peers/README.md)")
def test_whole_harness_with_the_checkouts(tmp_path):
    out = tmp_path / "equations.json"
    p = subprocess.run([sys.executable, "-m", "benchmarks.peers.equations", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    rec = json.loads(out.read_text())
    allowed = {"equal", "differs", "differs (documented choice)", "not callable"}
    assert rec["checks"] and all(c["verdict"] in allowed for c in rec["checks"])
    for c in rec["checks"]:
        assert re.fullmatch(r"[0-9a-f]{40}", c["official"]["commit"]), c["id"]
        assert c["verdict"] != "differs", (c["id"], c["note"])  # every difference is explained or fixed
    committed = ROOT / "benchmarks/peers/records/equations.json"
    if committed.exists():
        old = json.loads(committed.read_text())
        assert [(c["id"], c["verdict"]) for c in old["checks"]] == [(c["id"], c["verdict"]) for c in rec["checks"]]
