"""Optimizers (torch.optim / flow.optim spelling); parameters are any iterable of tensors."""
from . import _globe


def SGD(params, lr=0.01, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):  # noqa: N802
    return _globe.SGD(list(params), lr, momentum, dampening, weight_decay, nesterov)


def _groups(params):
    """Tensors, or torch's parameter groups: [{"params": [...], "weight_decay": wd}, ...] (each
    group's params made a list; the binding checks the groups)."""
    return [dict(g, params=list(g["params"])) if isinstance(g, dict) and "params" in g else g for g in params]


def Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):  # noqa: N802
    return _globe.Adam(_groups(params), lr, tuple(betas), eps, weight_decay)


def AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):  # noqa: N802
    return _globe.AdamW(_groups(params), lr, tuple(betas), eps, weight_decay)


def clip_grad_norm_(parameters, max_norm):
    return _globe.clip_grad_norm_(list(parameters), max_norm)
