"""FedDF's distillation pass (osfl.distill.unlabeled.distil_epoch) and FedMHO's FedDF baseline's gradient clip
(``server.feddf_vote.grad_clip``: FedMHO's code clips the student's gradient norm at 5, finding F14)."""
from __future__ import annotations

import pytest
import torch

from osfl.distill.unlabeled import distil_epoch
from osfl.errors import ConfigError
from osfl.methods import METHODS


def _moved(grad_clip: float | None) -> float:
    """How far one distillation step (SGD, lr 1) moves a linear student towards a far-off teacher."""
    gen = torch.Generator().manual_seed(0)
    student = torch.nn.Linear(4, 3)
    with torch.no_grad():
        student.weight.zero_()
        student.bias.zero_()
    x = torch.randn(8, 4, generator=gen)
    teacher = lambda inp: 50.0 * torch.nn.functional.one_hot(torch.arange(len(inp)) % 3, 3).float()  # noqa: E731
    opt = torch.optim.SGD(student.parameters(), lr=1.0)
    distil_epoch([student], [opt], [None], lambda: [x], teacher, T=1.0, grad_clip=grad_clip)
    return float(torch.cat([p.detach().flatten() for p in student.parameters()]).norm())


def test_the_clip_bounds_the_step_and_none_leaves_it():
    free, clipped = _moved(None), _moved(0.1)
    assert clipped == pytest.approx(0.1, rel=1e-4)  # one SGD step at lr 1 moves by the clipped norm
    assert free > 0.5


def test_feddf_vote_clips_at_five_by_default_and_refuses_a_negative_clip():
    method = METHODS.get("feddf_vote")
    assert method.defaults["grad_clip"] == 5.0
    assert method(grad_clip=0.0).params["grad_clip"] == 0.0  # no clip: the paper says none
    with pytest.raises(ConfigError, match="server.feddf_vote.grad_clip: must be >= 0"):
        method(grad_clip=-1.0)
