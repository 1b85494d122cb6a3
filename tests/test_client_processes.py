"""OSFL_CLIENT_PROCESSES (osfl.clients.parallel): one-by-one clients trained in worker processes give the bits of the
same clients trained in the stage's own process, report every epoch back, and leave the models trained in place."""
import pytest
import torch
from test_batched_training import HP, _TinyDropout, gens, make_clients

from osfl.clients.batched import train_clients
from osfl.clients.parallel import ENV, client_processes
from osfl.errors import ConfigError


def _run(monkeypatch, processes, models, data, augment):
    import osfl.clients.batched as batched

    monkeypatch.setenv(ENV, str(processes))
    used, real = [], batched.train_in_processes
    monkeypatch.setattr(batched, "train_in_processes", lambda ks, *a, **kw: used.append(ks) or real(ks, *a, **kw))
    calls = []
    # an eval_fn that is never called (eval_every 0), as the train stages pass it, does not keep them here
    results, seconds = train_clients(models, data, gens(len(data)), batched=False, epochs=2, augment=augment, **HP,
                                     on_epoch=lambda k, e, loss: calls.append((k, e, loss)),
                                     eval_fn=lambda m: 0.0, eval_every=0)
    assert used == ([[0, 1, 2]] if processes > 1 else [])  # the workers trained every client, or none did
    return results, seconds, calls


# cnn2 has BatchNorm (buffers travel back) and crop+flip draws from each client's generator (its state travels)
@pytest.mark.parametrize("kind", ["cnn2", "dropout"])
def test_clients_in_processes_equal_clients_in_the_stage(monkeypatch, kind):
    data, fresh = make_clients("cnn2", (1, 28, 28), (40, 33, 21))

    def models():
        if kind != "dropout":
            return fresh()
        torch.manual_seed(0)
        out = [_TinyDropout() for _ in data]
        for m in out[1:]:
            m.load_state_dict(out[0].state_dict())
        return out

    augment = "none" if kind == "dropout" else "crop_flip"
    a, b = models(), models()
    res_a, _, calls_a = _run(monkeypatch, 1, a, data, augment)
    res_b, secs_b, calls_b = _run(monkeypatch, 2, b, data, augment)
    for x, y in zip(a, b):
        sx, sy = x.state_dict(), y.state_dict()
        assert sx.keys() == sy.keys() and all(torch.equal(sx[k], sy[k]) for k in sx)
        assert not y.training  # left in eval mode, as the one-by-one path leaves it
    assert [r.final_loss for r in res_a] == [r.final_loss for r in res_b]
    assert sorted(calls_a) == sorted(calls_b) and len(calls_b) == 6  # every client-epoch reported back
    assert all(s > 0 for s in secs_b)


def test_a_bad_process_count_fails_in_one_line(monkeypatch):
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(ENV, bad)
        with pytest.raises(ConfigError, match=rf"^{ENV}: must be an integer >= 1"):
            client_processes()
    monkeypatch.delenv(ENV)
    assert client_processes() == 1
