"""Batched client training (one vmap model for many clients) equals training them one by one."""
from __future__ import annotations

import pytest
import torch

from osfl.accel import Accel
from osfl.clients.batched import train_classifiers_batched, train_clients
from osfl.clients.training import train_classifier
from osfl.errors import ConfigError
from osfl.evaluation import accuracy
from osfl.models import build_model

HP = dict(batch_size=32, lr=0.01, momentum=0.9, weight_decay=1e-4)


def make_clients(arch, shape, sizes, seed=0):
    g = torch.Generator().manual_seed(seed)
    data = [(torch.randint(0, 256, (n, *shape), dtype=torch.uint8, generator=g),
             torch.randint(0, 10, (n,), generator=g)) for n in sizes]
    torch.manual_seed(seed)
    init = build_model(arch, shape, 10).state_dict()

    def models():
        out = []
        for _ in sizes:
            m = build_model(arch, shape, 10)
            m.load_state_dict(init)
            out.append(m)
        return out

    return data, models


def gens(n, seed=0):
    return [torch.Generator().manual_seed(seed + k) for k in range(n)]


def max_state_diff(a: torch.nn.Module, b: torch.nn.Module) -> float:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    return max((sa[k].double() - sb[k].double()).abs().max().item() for k in sa)


@pytest.mark.parametrize("arch,shape,augment,sizes,epochs", [
    # unequal sizes: a partial last batch (70, 45), a client smaller than one batch (20), BN in cnn2
    ("cnn2", (1, 28, 28), "none", (64, 70, 20, 45, 96), 2),
    # crop + flip augmentation draws from each client's generator; no BN
    ("cnn3", (3, 32, 32), "crop_flip", (40, 33, 20), 1),
])
def test_batched_equals_sequential(arch, shape, augment, sizes, epochs):
    data, models = make_clients(arch, shape, sizes)
    x_test, y_test = data[0]
    seq = models()
    res_seq = [train_classifier(m, x, y, epochs=epochs, augment=augment, gen=g, **HP,
                                eval_fn=lambda mm: accuracy(mm, x_test, y_test), eval_every=1)
               for m, (x, y), g in zip(seq, data, gens(len(sizes)))]
    bat = models()
    calls = []
    res_bat = train_classifiers_batched(bat, data, gens(len(sizes)), epochs=epochs, augment=augment, **HP,
                                        eval_fn=lambda mm: accuracy(mm, x_test, y_test), eval_every=1,
                                        on_epoch=lambda k, e, loss: calls.append((k, e)))
    assert len(calls) == epochs * len(sizes)
    for k in range(len(sizes)):
        assert max_state_diff(seq[k], bat[k]) < 1e-4, k  # parameters and BN running statistics
        assert res_bat[k].steps == res_seq[k].steps and res_bat[k].samples_seen == res_seq[k].samples_seen
        assert res_bat[k].final_loss == pytest.approx(res_seq[k].final_loss, abs=1e-4)
        assert [c["epoch"] for c in res_bat[k].curve] == [c["epoch"] for c in res_seq[k].curve]
        for cb, cs in zip(res_bat[k].curve, res_seq[k].curve):
            assert cb["test_acc"] == pytest.approx(cs["test_acc"], abs=1.0)  # one flipped prediction at most
    assert not bat[0].training  # left in eval mode like the sequential path
    # the clients really trained (different data -> different weights)
    assert max_state_diff(bat[0], bat[1]) > 1e-3


def test_batched_without_momentum_or_weight_decay():
    data, models = make_clients("cnn2", (1, 28, 28), (40, 50))
    hp = dict(batch_size=16, lr=0.05, momentum=0.0, weight_decay=0.0, augment="none", epochs=1)
    seq = models()
    for m, (x, y), g in zip(seq, data, gens(2)):
        train_classifier(m, x, y, gen=g, **hp)
    bat = models()
    train_classifiers_batched(bat, data, gens(2), **hp)
    assert all(max_state_diff(a, b) < 1e-4 for a, b in zip(seq, bat))


def test_mixed_architectures_group_by_architecture():
    """Three cnn2 clients train as one batch, a LeNet-5 client alone; all equal their sequential runs."""
    shape = (1, 28, 28)
    data, cnn_models = make_clients("cnn2", shape, (30, 41, 25, 37))
    torch.manual_seed(5)
    lenet_init = build_model("lenet5", shape, 10).state_dict()

    def mixed():
        ms = cnn_models()
        ms[2] = build_model("lenet5", shape, 10)
        ms[2].load_state_dict(lenet_init)
        return ms

    hp = dict(epochs=1, augment="none", **HP)
    seq = mixed()
    for m, (x, y), g in zip(seq, data, gens(4)):
        train_classifier(m, x, y, gen=g, **hp)
    bat = mixed()
    seen = []
    results, seconds = train_clients(bat, data, gens(4), batched=True, **hp,
                                     on_epoch=lambda k, e, loss: seen.append(k))
    assert sorted(seen) == [0, 1, 2, 3] and len(results) == 4 and all(s >= 0 for s in seconds)
    assert all(max_state_diff(a, b) < 1e-4 for a, b in zip(seq, bat))


def test_bf16_autocast_trains_close_to_fp32():
    data, models = make_clients("cnn2", (1, 28, 28), (64, 64))
    hp = dict(epochs=1, augment="none", **HP)
    fp32 = train_classifiers_batched(models(), data, gens(2), **hp)
    bf16 = train_classifiers_batched(models(), data, gens(2), accel=Accel(precision="bf16"), **hp)
    for a, b in zip(fp32, bf16):
        assert a.final_loss == pytest.approx(b.final_loss, rel=0.05)
        assert a.final_loss != b.final_loss  # autocast really changed the arithmetic


def test_bf16_steps_taken_inside_one_autocast_context_reach_the_next_forward():
    """A server method trains inside ONE autocast context (protocols/one_shot.run_method): with torch's weight-cast
    cache the second forward would reuse the first one's bf16 weights and ignore the step (DENSE ended at 10 %)."""
    import torch

    lin = torch.nn.Linear(8, 4)
    x = torch.ones(2, 8)
    opt = torch.optim.SGD(lin.parameters(), lr=0.5)
    with Accel(precision="bf16").autocast(torch.device("cpu")):
        before = lin(x)
        before.float().square().sum().backward()
        opt.step()
        after = lin(x)
    assert before.dtype == torch.bfloat16
    assert not torch.equal(before, after)


@pytest.mark.parametrize("runtime,message", [
    ({"batched_clients": "on"}, "runtime.batched_clients: unknown value 'on'; allowed: auto, true, false"),
    ({"precision": "fp16"}, "runtime.precision: unknown value 'fp16'; allowed: fp32, bf16"),
    ({"compile": "yes"}, "runtime.compile: must be true or false, got 'yes'"),
    ({"batched_teachers": "yes"}, "runtime.batched_teachers: unknown value 'yes'; allowed: true, false, auto"),
    ({"amp": "bf16"}, "runtime.amp: unknown key; allowed: batched_clients, batched_teachers, channels_last, compile, "
                      "device, precision, threads"),
])
def test_runtime_errors_are_one_line(runtime, message):
    with pytest.raises(ConfigError) as e:
        Accel.from_params(runtime)
    assert str(e.value) == message


def test_auto_batches_on_cuda_only():
    a = Accel()
    assert not a.batched(torch.device("cpu")) and a.batched(torch.device("cuda"))
    assert Accel(batched_clients=True).batched(torch.device("cpu"))


def test_teacher_batching_is_recorded_only_off_its_default():
    """``runtime.batched_teachers`` (finding F35): ``true`` by default on every device, as every recorded server run
    used it, and then absent from the record (those records stay byte-identical); any other value is recorded with
    what it gave, and reaches the server context."""
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert Accel().teachers_batched(cpu) and "batched_teachers" not in Accel().in_force(cpu)
    assert set(Accel().in_force(cpu)) == {"device", "threads", "batched_clients", "precision", "channels_last",
                                          "compile", "batched_clients_in_force", "channels_last_in_force"}
    loop = Accel.from_params({"batched_teachers": False})
    assert not loop.teachers_batched(cpu) and not loop.teachers_batched(cuda)
    assert loop.in_force(cpu)["batched_teachers"] is False and loop.in_force(cpu)["batched_teachers_in_force"] is False
    auto = Accel(batched_teachers="auto")
    assert not auto.teachers_batched(cpu) and auto.teachers_batched(cuda)
    assert auto.in_force(cuda)["batched_teachers_in_force"] is True


def test_local_training_is_logged_live_as_each_client_epoch_ends(tmp_path, monkeypatch):
    """train_cohort with a live folder: every client's loss per epoch goes to dvclive's files while training runs
    (what `dvc exp show` reads during the long train_clients stage), and the summary counts finished client-epochs."""
    import json

    from osfl import live as live_mod
    from osfl.clients.cohort import Cohort, train_cohort
    from osfl.live import ClientsLive

    data, models = make_clients("cnn2", (1, 28, 28), (30, 41))
    folder = tmp_path / "live" / "clients"
    seen = []
    original = ClientsLive.epoch

    def epoch_then_read(self, k, e, loss):
        original(self, k, e, loss)
        seen.append(json.loads((folder / "metrics.json").read_text())["training"]["client_epochs"])

    monkeypatch.setattr(live_mod.ClientsLive, "epoch", epoch_then_read)
    cohort = Cohort(["cnn2", "cnn2"], models(), data, gens(2))
    hp = dict(epochs=3, augment="none", eval_fn=None, eval_every=0, accel=Accel(), **HP)
    results, _, _ = train_cohort(cohort, hp, torch.device("cpu"), progress=False, live=folder)
    assert seen == [1, 2, 3, 4, 5, 6]
    for k, res in enumerate(results):
        rows = (folder / "plots" / "metrics" / "train" / f"client{k}" / "loss.tsv").read_text().split("\n")[1:]
        assert [int(r.split("\t")[0]) for r in rows if r] == [1, 2, 3]
        assert float([r for r in rows if r][-1].split("\t")[1]) == pytest.approx(res.final_loss)


class _TinyDropout(torch.nn.Module):
    """A small classifier with dropout, as FedMHO's VGG-9 has (its masks come from the device's random stream)."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(28 * 28, 16), torch.nn.ReLU(),
                                       torch.nn.Dropout(0.5), torch.nn.Linear(16, 10))

    def forward(self, x):
        return self.net(x)


def test_models_with_dropout_train_one_by_one_with_the_sequential_numbers():
    # vmap cannot draw per-client dropout masks (it stopped FedMHO's VGG-9 part on an H100: "vmap: called random
    # operation while in randomness error mode"); batched=True must give exactly the one-by-one path's models
    data, _ = make_clients("cnn2", (1, 28, 28), (40, 33, 21))

    def run(batched):
        torch.manual_seed(0)
        models = [_TinyDropout() for _ in data]
        for m in models[1:]:
            m.load_state_dict(models[0].state_dict())
        calls = []
        train_clients(models, data, gens(len(data)), batched=batched, epochs=2, augment="none", **HP,
                      on_epoch=lambda k, e, loss: calls.append((k, e)))
        return models, calls

    seq, calls_seq = run(False)
    bat, calls_bat = run(True)
    assert sorted(calls_bat) == sorted(calls_seq) and len(calls_bat) == 6
    assert all(max_state_diff(a, b) == 0.0 for a, b in zip(seq, bat))
    with pytest.raises(ValueError, match="dropout"):
        train_classifiers_batched(bat, data, gens(len(data)), epochs=1, augment="none", **HP)


@pytest.mark.parametrize("grad_clip", [0.0, 10.0])
def test_counted_training_flops_equal_counting_the_whole_run(grad_clip):
    """train_clients' --count-flops: one step of each batch size, times its steps, is what FlopCounterMode counts
    over the whole run (unequal clients, a last smaller batch, two architectures, normalised inputs)."""
    from osfl.clients.cohort import build_cohort, cohort_training_flops, local_hparams, train_cohort
    from osfl.config import LocalTraining
    from osfl.cost.counter import spent

    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (150, 1, 28, 28), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (150,), generator=g)
    cohort = build_cohort(["cnn2", "lenet5", "cnn2"], [list(range(0, 70)), list(range(70, 110)), list(range(110, 150))],
                          x, y, (1, 28, 28), 10, torch.device("cpu"), seed=0, start=None, data_seed=lambda k: k,
                          inputs={"mean": [0.5], "std": [0.5]})
    hp = local_hparams(LocalTraining(batch_size=32, grad_clip=grad_clip), 2, "none", Accel())
    expected = cohort_training_flops(cohort, hp, torch.device("cpu"))
    with spent(True) as cost:
        train_cohort(cohort, hp, torch.device("cpu"), progress=False)
    assert expected == cost.flops > 0


def test_the_server_context_takes_its_teacher_batching_from_the_runtime(repo_root):
    import yaml

    from osfl.runconfig import validate
    from osfl.protocols.one_shot import build_context

    params = yaml.safe_load((repo_root / "params.yaml").read_text())
    cpu, x, y = torch.device("cpu"), torch.zeros(1, 1, 8, 8, dtype=torch.uint8), torch.zeros(1, dtype=torch.long)
    for runtime, batched in (({}, True), ({"batched_teachers": False}, False), ({"batched_teachers": "auto"}, False)):
        cfg = validate({**params, "runtime": {**(params.get("runtime") or {}), **runtime}})
        assert build_context(cfg, [], x, y, cpu, progress=False).batched_ensemble is batched
