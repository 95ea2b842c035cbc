"""Modules (torch.nn / flow.nn spelling). Module is subclassed in Python: tensors that require
grad and modules assigned as attributes are registered, in assignment order, under their
attribute names (the state_dict keys). The layers wrap Globe's C++ layers, so a model built here
has the C++ model's initial values and losses."""
from collections import OrderedDict

from . import _globe
from ._globe import Tensor
from .autograd import no_grad


def Parameter(data, requires_grad=True):  # noqa: N802  (flow.nn.Parameter)
    """A tensor registered as a parameter when assigned to a Module attribute."""
    return data.detach().requires_grad_(requires_grad)


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise _globe.Error("[nn.Module] call super().__init__() before assigning attributes")
        if isinstance(value, Module):
            self._modules[name] = value
        elif isinstance(value, Tensor) and value.requires_grad and value.is_leaf:
            self._parameters[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- parameters and state ----
    def named_parameters(self, prefix=""):
        for name, p in self._own_parameters():
            yield prefix + name, p
        for name, child in self._modules.items():
            yield from child.named_parameters(prefix + name + ".")

    def _own_parameters(self):
        return list(self._parameters.items())

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def children(self):
        return list(self._modules.values())

    def state_dict(self):
        return OrderedDict((k, v.detach()) for k, v in self.named_parameters())

    def load_state_dict(self, state, strict=True):
        own = OrderedDict(self.named_parameters())
        missing = [k for k in own if k not in state]
        unexpected = [k for k in state if k not in own]
        if strict and (missing or unexpected):
            raise _globe.Error(f"[load_state_dict] missing keys {missing}, unexpected keys {unexpected}")
        with no_grad():
            for k, p in own.items():
                if k in state:
                    _globe.copy_(p, state[k])
        return missing, unexpected

    def zero_grad(self):
        for p in self.parameters():
            p.grad = None

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for c in self._modules.values():
            c.train(mode)
        return self

    def eval(self):
        return self.train(False)

    # ---- layouts ----
    def to_global(self, placement=None, sbp=None):
        """Every parameter laid out on `placement` with `sbp` (flow's module.to_global), in place:
        the same parameter objects, so an optimizer made before keeps working."""
        if placement is None:
            raise _globe.Error("[to_global] a module needs placement=")
        for _, p in self._own_parameters():
            layout = sbp if sbp is not None else (p.sbp if p.is_global else _globe.broadcast)
            _globe.rebind(p, p.to_global(placement=placement, sbp=layout))
        for c in self._modules.values():
            c.to_global(placement, sbp)
        return self


class _CppLayer(Module):
    """A Module over a C++ layer: its parameters are the C++ layer's tensors."""

    def __init__(self, cpp):
        super().__init__()
        object.__setattr__(self, "_cpp", cpp)
        for name, p in cpp.named_parameters():
            object.__setattr__(self, name, p)

    def _own_parameters(self):
        return list(self._cpp.named_parameters())

    def forward(self, x):
        return self._cpp.forward(x)

    def to_global(self, placement=None, sbp=None):
        self._cpp.to_global(placement, sbp)
        return self

    def train(self, mode=True):
        self._cpp.train(mode)
        return super().train(mode)

    def distribute(self, placement, plan, default_sbp=_globe.broadcast):
        """The whole layer (rank 0's values) laid out by `plan`: {name: sbp}, others default_sbp
        (tensor-parallel layers from an ordinary initialisation; see Module::distribute)."""
        self._cpp.distribute(placement, dict(plan), default_sbp)
        return self


class Linear(_CppLayer):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(_globe.CppLinear(in_features, out_features, bias))


class ColumnParallelLinear(_CppLayer):
    def __init__(self, in_features, out_features, placement, bias=True, tp_axis=-1):
        super().__init__(_globe.CppColumnParallelLinear(in_features, out_features, placement, bias, tp_axis))


class RowParallelLinear(_CppLayer):
    def __init__(self, in_features, out_features, placement, bias=True, tp_axis=-1):
        super().__init__(_globe.CppRowParallelLinear(in_features, out_features, placement, bias, tp_axis))


class Embedding(_CppLayer):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__(_globe.CppEmbedding(num_embeddings, embedding_dim))


class LayerNorm(_CppLayer):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__(_globe.CppLayerNorm(normalized_shape, eps, elementwise_affine))


class Dropout(_CppLayer):
    def __init__(self, p=0.5):
        super().__init__(_globe.CppDropout(p))


class ReLU(Module):
    def forward(self, x):
        return _globe.relu(x)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return _globe.gelu_tanh(x) if self.approximate == "tanh" else _globe.gelu(x)


class Tanh(Module):
    def forward(self, x):
        return _globe.tanh(x)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return _globe.flatten(x, self.start_dim, self.end_dim)


class Sequential(Module):
    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            setattr(self, str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class MSELoss(Module):
    def forward(self, input, target):  # noqa: A002
        return _globe.mse_loss(input, target)


class CrossEntropyLoss(Module):
    def forward(self, logits, target):
        return _globe.cross_entropy(logits, target)
