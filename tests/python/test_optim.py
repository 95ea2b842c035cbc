"""Optimizers from Python as torch and OneFlow programs use them: param_groups, a learning rate
that changes between steps, and the lr schedulers, each against values computed by hand."""
import math

import numpy as np
import pytest

import globe as flow
import globe.nn as nn
from globe.optim import lr_scheduler


def param(value):
    p = flow.tensor(np.array(value, dtype=np.float32))
    p.requires_grad = True
    return p


def step(opt, params):
    """One step on loss = sum of every parameter: each gradient is 1."""
    opt.zero_grad()
    sum(flow.sum(p) for p in params).backward()
    opt.step()


def test_a_changed_lr_is_the_next_steps():
    p = param([1.0, 2.0])
    opt = flow.optim.SGD([p], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"][0] is p
    step(opt, [p])
    np.testing.assert_allclose(p.numpy(), [0.9, 1.9], rtol=1e-6)
    opt.param_groups[0]["lr"] = 0.5
    step(opt, [p])
    np.testing.assert_allclose(p.numpy(), [0.4, 1.4], rtol=1e-6)


def test_groups_keep_their_weight_decay_and_share_the_lr():
    a, b = param([1.0]), param([1.0])
    opt = flow.optim.AdamW([{"params": [a]}, {"params": [b], "weight_decay": 0.0}], lr=0.1, weight_decay=0.5)
    assert [g["weight_decay"] for g in opt.param_groups] == [0.5, 0.0]
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    step(opt, [a, b])
    # Adam's first step moves by lr whatever the gradient; AdamW also shrinks by lr * wd first.
    np.testing.assert_allclose(a.numpy(), [1.0 * (1 - 0.1 * 0.5) - 0.1], rtol=1e-5)
    np.testing.assert_allclose(b.numpy(), [1.0 - 0.1], rtol=1e-5)


def test_what_the_optimizers_cannot_do_is_refused_by_name():
    a, b = param([1.0]), param([1.0])
    opt = flow.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    with pytest.raises(ValueError, match=r"different learning rates \[0.1, 0.5\]"):
        step(opt, [a, b])
    opt = flow.optim.SGD([a], lr=0.1, momentum=0.9)
    opt.param_groups[0]["momentum"] = 0.5
    with pytest.raises(ValueError, match=r"param_groups\[0\]\['momentum'\] changed from 0.9 to 0.5"):
        step(opt, [a])
    with pytest.raises(ValueError, match="different 'weight_decay'"):
        flow.optim.SGD([{"params": [a]}, {"params": [b], "weight_decay": 0.1}])
    with pytest.raises(TypeError, match=r"unknown hyperparameters \['momentum'\]"):
        flow.optim.Adam([{"params": [a], "momentum": 0.9}])
    with pytest.raises(ValueError, match="empty parameter list"):
        flow.optim.SGD([])


def lrs(scheduler, steps):
    out = [scheduler.get_last_lr()[0]]
    for _ in range(steps):
        scheduler.optimizer.step()
        scheduler.step()
        out.append(scheduler.get_last_lr()[0])
    return out


def sgd(lr=1.0):
    return flow.optim.SGD([param([0.0])], lr=lr)


@pytest.mark.parametrize("make, expected", [
    (lambda o: lr_scheduler.StepLR(o, step_size=2, gamma=0.5), [1, 1, 0.5, 0.5, 0.25, 0.25]),
    (lambda o: lr_scheduler.MultiStepLR(o, milestones=[3, 1], gamma=0.1), [1, 0.1, 0.1, 0.01, 0.01, 0.01]),
    (lambda o: lr_scheduler.ExponentialLR(o, gamma=0.5), [1, 0.5, 0.25, 0.125, 0.0625, 0.03125]),
    (lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.2),
     [0.2 + 0.8 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(6)]),
    (lambda o: lr_scheduler.CosineDecayLR(o, decay_steps=4, alpha=0.1),
     [0.9 * 0.5 * (1 + math.cos(math.pi * min(e, 4) / 4)) + 0.1 for e in range(6)]),
    (lambda o: lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)), [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5, 1 / 6]),
    (lambda o: lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=3), [0.25, 0.5, 0.75, 1, 1, 1]),
    (lambda o: lr_scheduler.ConstantLR(o, factor=0.5, total_iters=2), [0.5, 0.5, 1, 1, 1, 1]),
    (lambda o: lr_scheduler.WarmupLR(lr_scheduler.StepLR(o, step_size=3, gamma=0.5), warmup_factor=0.5,
                                     warmup_iters=2), [0.5, 0.75, 1, 0.5, 0.5, 0.5]),
    (lambda o: lr_scheduler.WarmupLR(o, warmup_factor=0.1, warmup_iters=3, warmup_method="constant"),
     [0.1, 0.1, 0.1, 1, 1, 1]),
    (lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.ConstantLR(o, factor=0.1, total_iters=9),
                                             lr_scheduler.ExponentialLR(o, gamma=0.5)], milestones=[2]),
     [0.1, 0.1, 1, 0.5, 0.25, 0.125]),
])
def test_each_schedule_gives_its_formulas_values(make, expected):
    np.testing.assert_allclose(lrs(make(sgd()), 5), expected, rtol=1e-12)


def test_a_wrapped_schedule_keeps_each_groups_own_lambda():
    """WarmupLR over a LambdaLR with one lambda per group: each group follows its own."""
    opt = flow.optim.SGD([{"params": [param([0.0])]}, {"params": [param([0.0])]}], lr=1.0)
    inner = lr_scheduler.LambdaLR(opt, [lambda e: 1.0, lambda e: 0.5 ** e])
    sched = lr_scheduler.WarmupLR(inner, warmup_factor=1.0, warmup_iters=1)
    for _ in range(2):
        sched.step()
    assert sched.get_last_lr() == [1.0, 0.25]


def test_a_schedule_drives_the_updates_and_resumes_from_its_state():
    p = param([0.0])
    opt = flow.optim.SGD([p], lr=1.0)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        step(opt, [p])
        sched.step()
    np.testing.assert_allclose(p.numpy(), [-(1 + 0.5 + 0.25)], rtol=1e-6)
    # A new optimizer and scheduler loaded from the state continue with the same values.
    opt2 = flow.optim.SGD([param([0.0])], lr=1.0)
    sched2 = lr_scheduler.StepLR(opt2, step_size=1, gamma=0.5)
    sched2.load_state_dict(sched.state_dict())
    sched2.step()
    sched.step()
    assert sched2.get_last_lr() == sched.get_last_lr() == [0.0625]


def test_a_warmup_cosine_schedule_matches_the_cpp_helper():
    """The C++ GPT's warmup_cosine_lr is nanoGPT's; LambdaLR spells it in Python."""
    opt = sgd(6e-4)
    warmup, decay, lo = 3, 10, 6e-5

    def f(e):
        if e < warmup:
            return (e + 1) / (warmup + 1)
        r = min(1.0, (e - warmup) / (decay - warmup))
        return (lo + 0.5 * (1 + math.cos(math.pi * r)) * (6e-4 - lo)) / 6e-4

    got = lrs(lr_scheduler.LambdaLR(opt, f), 12)
    np.testing.assert_allclose(got, [flow._globe.warmup_cosine_lr(e, warmup, decay, 6e-4, lo) for e in range(13)],
                               rtol=1e-12)


def test_modules_parameters_train_with_a_scheduler():
    flow.manual_seed(0)
    m = nn.Linear(3, 2)
    opt = flow.optim.SGD(m.parameters(), lr=0.1)
    sched = lr_scheduler.ExponentialLR(opt, gamma=0.9)
    x, y = flow.randn(4, 3), flow.randn(4, 2)
    before = m.weight.numpy().copy()
    for _ in range(2):
        opt.zero_grad()
        nn.MSELoss()(m(x), y).backward()
        opt.step()
        sched.step()
    assert not np.array_equal(before, m.weight.numpy())
    assert sched.get_last_lr() == [pytest.approx(0.1 * 0.81)]
