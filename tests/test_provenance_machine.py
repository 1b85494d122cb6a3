"""osfl.provenance.machine: which of device, CPU model and CPU kernels differ between a record and this machine."""
import json

from osfl.provenance import machine

HERE = {"device": "cpu", "cpu": "AMD EPYC", "cpu_capability": "AVX2"}


def test_same_model_name_other_kernels_is_a_difference():
    rec = {"runtime": {"device": "cpu", "cpu": "AMD EPYC", "cpu_capability": "AVX512", "threads": 1}}
    assert machine.differences(rec, HERE) == ["cpu_capability: recorded 'AVX512', here 'AVX2'"]
    assert "byte identity is not expected" in machine.note(rec, HERE)


def test_agreeing_machines_and_keys_a_record_lacks_give_no_note():
    assert machine.note({"runtime": dict(HERE, threads=2)}, HERE) == ""
    assert machine.differences({"device": "cpu", "cpu": "AMD EPYC"}, HERE) == []  # written before cpu_capability


def test_cli_reads_records_and_never_fails(tmp_path, capsys):
    rec = tmp_path / "clients.json"
    rec.write_text(json.dumps({"runtime": {"device": "cpu", "cpu": "Made-up CPU 9000", "cpu_capability": "NONE"}}))
    assert machine.main([str(rec), str(tmp_path / "absent.json")]) == 0
    out = capsys.readouterr().out
    assert "cpu: recorded 'Made-up CPU 9000'" in out and "cpu_capability: recorded 'NONE'" in out
    assert "absent.json: no such record" in out
