"""Optimizers (torch.optim / flow.optim spelling); parameters are any iterable of tensors, or
torch's parameter groups ([{"params": [...], "weight_decay": wd}, ...]).

Each optimizer has torch's `param_groups`: a list of dicts, one per group, holding "params" and
the group's hyperparameters. A group's "lr" may be changed between steps (by hand or by a
scheduler of `lr_scheduler`); the next step uses it. The update itself is Globe's C++ optimizer."""
from . import _globe
from . import lr_scheduler  # noqa: F401  (flow.optim.lr_scheduler)


class Optimizer:
    """What every optimizer shares: param_groups, step, zero_grad, state_dict, ZeRO stages."""

    # Hyperparameters a group may hold a value of its own for; the others must agree across groups.
    _per_group = ("lr",)

    def __init__(self, cpp, groups, defaults):
        self._cpp = cpp
        self.defaults = dict(defaults)
        self.param_groups = groups
        self._fixed = [{k: v for k, v in g.items() if k not in ("params", "lr", "initial_lr")} for g in groups]

    def _apply_lr(self):
        """The groups' learning rate, handed to the C++ optimizer before each step."""
        for i, (g, fixed) in enumerate(zip(self.param_groups, self._fixed)):
            for k, v in fixed.items():
                if g.get(k) != v:
                    raise ValueError(f"[{type(self).__name__}] param_groups[{i}][{k!r}] changed from {v!r} to "
                                     f"{g.get(k)!r}: only \"lr\" may change after construction")
        lrs = sorted({float(g["lr"]) for g in self.param_groups})
        if len(lrs) != 1:
            raise ValueError(f"[{type(self).__name__}] parameter groups with different learning rates {lrs}: "
                             "Globe's optimizers take one learning rate for all groups")
        if lrs[0] < 0:
            raise ValueError(f"[{type(self).__name__}] learning rate {lrs[0]} < 0")
        self._cpp.lr = lrs[0]

    def step(self, closure=None):
        loss = closure() if closure is not None else None
        self._apply_lr()
        self._cpp.step()
        return loss

    def zero_grad(self, set_to_none=True):  # noqa: ARG002  (gradients are always dropped)
        self._cpp.zero_grad()

    def state_dict(self):
        return self._cpp.state_dict()

    def load_state_dict(self, state):
        self._cpp.load_state_dict(state)

    def set_zero_stage(self, stage):
        self._cpp.set_zero_stage(stage)

    @property
    def zero_stage(self):
        return self._cpp.zero_stage

    def state_bytes(self):
        return self._cpp.state_bytes()

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines + [")"])


def _param_groups(params, defaults):
    """torch's groups from `params`: each a dict with its "params" (a list) and every hyperparameter,
    its own where given, else the optimizer's."""
    params = list(params)
    if not params:
        raise ValueError("optimizer got an empty parameter list")
    if not isinstance(params[0], dict):
        params = [{"params": params}]
    groups = []
    for g in params:
        if not isinstance(g, dict):
            raise TypeError(f"params: every parameter group must be a dict, got {type(g).__name__}")
        if "params" not in g:
            raise ValueError("params: a parameter group needs \"params\"")
        unknown = set(g) - set(defaults) - {"params", "initial_lr"}
        if unknown:
            raise TypeError(f"params: unknown hyperparameters {sorted(unknown)} in a parameter group "
                            f"(this optimizer has {sorted(defaults)})")
        groups.append(dict(defaults, **dict(g, params=list(g["params"]))))
    return groups


def _check_shared(name, groups, keys):
    for k in keys:
        values = {repr(g[k]) for g in groups}
        if len(values) > 1:
            raise ValueError(f"[{name}] parameter groups with different {k!r} ({', '.join(sorted(values))}): "
                             f"Globe's {name} takes one for all groups")


class SGD(Optimizer):
    def __init__(self, params, lr=0.01, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        groups = _param_groups(params, defaults)
        _check_shared("SGD", groups, ["momentum", "dampening", "weight_decay", "nesterov"])
        g = groups[0]
        tensors = [p for group in groups for p in group["params"]]
        super().__init__(_globe.SGD(tensors, g["lr"], g["momentum"], g["dampening"], g["weight_decay"],
                                    g["nesterov"]), groups, defaults)


class Adam(Optimizer):
    _cpp_class = staticmethod(_globe.Adam)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
        groups = _param_groups(params, defaults)
        for g in groups:
            g["betas"] = tuple(g["betas"])
        _check_shared(type(self).__name__, groups, ["betas", "eps"])
        g = groups[0]
        cpp_groups = [{"params": group["params"], "weight_decay": group["weight_decay"]} for group in groups]
        super().__init__(self._cpp_class(cpp_groups, g["lr"], g["betas"], g["eps"], g["weight_decay"]), groups,
                         defaults)


class AdamW(Adam):
    _cpp_class = staticmethod(_globe.AdamW)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr, betas, eps, weight_decay)


def clip_grad_norm_(parameters, max_norm):
    return _globe.clip_grad_norm_(list(parameters), max_norm)
