"""The in-memory rounds loop (osfl.protocols.rounds): FedAvg, chains (FedSeq), one group (centralized), and resume.

Issue 18's contract: a run killed at round r and resumed equals the uninterrupted run, and growing T after a
finished run costs only the new rounds."""
from pathlib import Path

import numpy as np
import pytest
import torch

from osfl.data.digits import load_digits_arrays
from osfl.evaluation import accuracy
from osfl.models import build_model
from osfl.protocols.rounds import LocalSpec, Participant, run_rounds
from osfl.runtime import seeded_init

LOCAL = LocalSpec(epochs=3, batch_size=16, lr=0.03, momentum=0.9)


@pytest.fixture(scope="module")
def digits():
    d = load_digits_arrays(None, Path("unused"))
    n = 720  # half the training digits: the loop, not the model, is under test
    return (torch.from_numpy(d.x_train[:n]), torch.from_numpy(d.y_train[:n]).long(), torch.from_numpy(d.x_test),
            torch.from_numpy(d.y_test).long())


def clients(digits, k=4):
    x, y, _, _ = digits
    parts = np.array_split(np.arange(len(y)), k)  # the digits come shuffled: IID shards
    return [Participant(x[torch.from_numpy(i)], y[torch.from_numpy(i)], f"c{j}") for j, i in enumerate(parts)]


def fresh():
    with seeded_init(0):
        return build_model("lenet5", (1, 28, 28), 10)


def run(digits, groups, rounds, **kw):
    _, _, xte, yte = digits
    model = fresh()
    res = run_rounds(model, groups, rounds=rounds, local=LOCAL, seed=1,
                     evaluate=lambda m: accuracy(m, xte, yte), **kw)
    return model, res


def same_state(a, b):
    return all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())


def test_resumed_equals_uninterrupted_and_growing_t_costs_only_new_rounds(digits, tmp_path):
    groups = [[c] for c in clients(digits)]
    full, res_full = run(digits, groups, 4)
    assert [p["round"] for p in res_full.curve] == [1, 2, 3, 4]
    acc = [p["test_acc"] for p in res_full.curve]
    assert acc[-1] > 20 and acc[-1] > acc[0] + 10  # it learns (measured: 10.0, 24.2, 55.8, 77.8%; chance 10%)
    ck = tmp_path / "ck.pt"
    _, killed = run(digits, groups, 4, checkpoint=ck, checkpoint_every=1, stop_after=2)  # "killed" after round 2
    assert len(killed.curve) == 2
    resumed, res = run(digits, groups, 4, checkpoint=ck)
    assert res.resumed_from == 2 and same_state(resumed, full)
    assert [p["test_acc"] for p in res.curve] == [p["test_acc"] for p in res_full.curve]
    grown, res6 = run(digits, groups, 6, checkpoint=ck)  # -S rounds=6 after a 4-round run: 2 more rounds
    assert res6.resumed_from == 4 and len(res6.curve) == 6
    straight, _ = run(digits, groups, 6)
    assert same_state(grown, straight)


def test_a_checkpoint_of_another_run_is_ignored(digits, tmp_path, capsys):
    groups = [[c] for c in clients(digits)]
    ck = tmp_path / "ck.pt"
    run(digits, groups, 1, checkpoint=ck)
    _, res = run(digits, groups[:3], 1, checkpoint=ck)  # other participants: another signature
    assert res.resumed_from == 0 and "starting from round 0" in capsys.readouterr().out


def test_chains_and_one_group(digits):
    cs = clients(digits)
    _, seq = run(digits, [cs[:2], cs[2:]], 2, shuffle=True)  # FedSeq: two superclients of two
    _, seq_again = run(digits, [cs[:2], cs[2:]], 2, shuffle=True)
    assert seq.curve[-1]["test_acc"] == seq_again.curve[-1]["test_acc"]  # the chain order is seeded
    x = torch.cat([c.x for c in cs])
    y = torch.cat([c.y for c in cs])
    _, cl = run(digits, [[Participant(x, y, "all")]], 2)  # centralized: a round is an epoch on everything
    assert cl.curve[-1]["test_acc"] > 40  # measured: 60.8% after three epochs, 92.8% after six
    with pytest.raises(ValueError, match="weighting"):
        run(digits, [cs], 1, weighting="median")


def test_batched_clients_give_the_sequential_rounds_within_float_tolerance(digits, tmp_path):
    """FedAvg's clients trained as one batched model (the path CUDA takes by default) give the sequential path's
    global model and curve within float tolerance; the checkpoint records the path, so the other one starts anew."""
    groups = [[c] for c in clients(digits)]
    seq, res_seq = run(digits, groups, 1)
    ck = tmp_path / "ck.pt"
    bat, res_bat = run(digits, groups, 1, batched=True, checkpoint=ck)
    for k, v in seq.state_dict().items():
        torch.testing.assert_close(bat.state_dict()[k], v, rtol=1e-4, atol=1e-5)
    assert res_bat.curve[0]["test_acc"] == pytest.approx(res_seq.curve[0]["test_acc"], abs=0.6)
    assert torch.load(ck, weights_only=True)["signature"]["batched"] is True
    _, again = run(digits, groups, 1, checkpoint=ck, stop_after=0)  # the sequential path does not resume it
    assert again.resumed_from == 0 and again.curve == []
