"""osfl.reporting.machines: a table's caption names the machines its runs came from."""
from osfl.reporting.machines import describe, label

XEON = {"device": "cpu", "cpu": "Intel(R) Xeon(R) Processor", "cpu_capability": "AVX512", "threads": 1}
EPYC2 = {"device": "cpu", "cpu": "AMD EPYC", "cpu_capability": "AVX2", "threads": 1}


def test_one_machine_is_named_without_a_warning():
    text = describe({"fmnist-dir0.5-s0": {"fedavg": [{"runtime": XEON}], "dense": [{"runtime": XEON}]}})
    assert text == "Computed on Intel(R) Xeon(R) Processor (AVX512, 1 thread): 2 runs."


def test_several_machines_are_counted_and_their_seconds_flagged():
    text = describe({"s0": {"fedavg": [{"runtime": XEON}], "dense": [{"acc_final": 50.0}]},
                     "s1": {"fedavg": [{"runtime": EPYC2}, {"runtime": EPYC2}]}})
    assert text.startswith("Computed on AMD EPYC (AVX2, 1 thread): 2 runs; Intel(R) Xeon(R) Processor (AVX512, 1 "
                           "thread): 1 run.")
    assert "compare only within one machine" in text


def test_gpu_runs_and_old_records_without_kernels():
    assert label({"device": "cuda:0", "gpu": "NVIDIA H100 80GB HBM3"}) == "NVIDIA H100 80GB HBM3 (cuda)"
    assert label({"device": "cpu", "cpu": "AMD EPYC", "threads": 2}) == "AMD EPYC (kernels not recorded, 2 threads)"
    assert describe({}) == "" and describe({"s0": {"fedavg": []}}) == ""
