"""Modules (torch.nn / flow.nn spelling). Module is subclassed in Python. Its parameters, buffers
and submodules live in one registry, the C++ module's (globe/nn/module.h), so state_dict,
load_state_dict, to_global and parameters() are the C++ ones. An attribute assignment registers:
a leaf tensor that requires grad (a Parameter) as a parameter, a Module as a submodule, in
assignment order under the attribute name (the state_dict key); assigning to a name already
registered replaces what it holds, so `b.weight = a.weight` ties the two, as in PyTorch. The
layers wrap Globe's C++ layers, so a model built here has the C++ model's initial values and
losses."""
import sys as _sys
import types as _types
import weakref as _weakref
from collections import OrderedDict

from . import _globe
from ._globe import Tensor
from .tensor_methods import dtype_and_device


def Parameter(data, requires_grad=True):  # noqa: N802  (flow.nn.Parameter)
    """A tensor registered as a parameter when assigned to a Module attribute."""
    return data.detach().requires_grad_(requires_grad)


def _is_parameter(value):
    return isinstance(value, Tensor) and value.requires_grad and value.is_leaf


# One Python object per parameter and buffer, as torch and OneFlow keep: every read of a module's
# tensor (an attribute, parameters(), named_parameters(), buffers()) gives the object handed out
# before while it lives, so `b.weight = a.weight` makes `a.weight is b.weight`, and identity
# survives to_global and load_state_dict (both change the tensor in place). Keyed by the C++
# tensor's address, which stays its own while the object (holding it) lives.
_one_object = _weakref.WeakValueDictionary()


def _one(t):
    kept = _one_object.get(t._impl_id)
    if kept is not None:
        return kept
    _one_object[t._impl_id] = t
    return t


class Module:
    def __init__(self):
        object.__setattr__(self, "_cpp", _globe.CppModule())
        object.__setattr__(self, "_modules", OrderedDict())

    def __setattr__(self, name, value):
        if "_cpp" not in self.__dict__:
            raise _globe.Error("[nn.Module] call super().__init__() before assigning attributes")
        kind = self._cpp.kind_of(name)
        if isinstance(value, Module):
            self._cpp.set_module(name, value._cpp)  # an error if `name` is a parameter or buffer
            self._modules[name] = value
        elif kind == "parameter" or (not kind and _is_parameter(value)):
            if not _is_parameter(value):
                raise TypeError(f"cannot assign {type(value).__name__} as parameter '{name}' of "
                                f"{type(self).__name__}: a Parameter (a leaf tensor that requires grad) is expected")
            self._cpp.set_parameter(name, value)
        elif kind == "buffer":
            if not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer '{name}' of {type(self).__name__}")
            self._cpp.set_buffer(name, value)
        elif kind == "module":
            raise TypeError(f"cannot assign {type(value).__name__} as submodule '{name}' of "
                            f"{type(self).__name__}: a Module is expected")
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):  # only for names not found the ordinary way: the registry's
        d = self.__dict__
        if "_cpp" in d:
            if name in d["_modules"]:
                return d["_modules"][name]
            t = d["_cpp"].get(name)
            if t is not None:
                return _one(t)
            if name == "config":  # OneFlow's older spelling of module.to(nn.graph.GraphModule)
                return graph.GraphModule.of(self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def register_buffer(self, name, tensor):
        self._cpp.set_buffer(name, tensor)

    def register_parameter(self, name, param):
        self._cpp.set_parameter(name, param)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def __call__(self, *args, **kwargs):
        g = self.__dict__.get("_graph_module")
        if g is not None and g.activation_checkpointing:  # OneFlow's per-module mark: recomputed in backward
            from .utils.checkpoint import checkpoint
            return checkpoint(self._call_forward, *args, **kwargs)
        return self._call_forward(*args, **kwargs)

    def _call_forward(self, *args, **kwargs):
        # A span per named module call; a C++ layer's call opens its own.
        if _globe.tracing() and self._cpp.name and not isinstance(self, _CppLayer):
            with _globe.TraceSpan("module", self._cpp.name):
                return self._run_forward(*args, **kwargs)
        return self._run_forward(*args, **kwargs)

    def _run_forward(self, *args, **kwargs):
        # A fully sharded or mixed-precision Python module runs with its parameters gathered and
        # cast, its floating tensor inputs cast too (a C++ layer does this itself).
        if not isinstance(self, _CppLayer) and self._cpp.transforms_parameters:
            cpp = self._cpp
            args = tuple(_globe.cast_input(cpp, a) if isinstance(a, Tensor) else a for a in args)
            kwargs = {k: _globe.cast_input(cpp, v) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
            return _globe.with_parameters_in_use(cpp, lambda: self.forward(*args, **kwargs))
        return self.forward(*args, **kwargs)

    # ---- parameters and state ----
    def named_parameters(self, prefix="", remove_duplicate=True):
        """Dotted names in registration order; a tied parameter once, under its first name
        (remove_duplicate=False lists every name, as state_dict does)."""
        seen = []
        for name, p in self._cpp.named_parameters():
            if remove_duplicate and any(p.same(q) for q in seen):
                continue
            seen.append(p)
            yield prefix + name, _one(p)

    def parameters(self):
        return [_one(p) for p in self._cpp.parameters()]

    def named_buffers(self, prefix=""):
        for name, b in self._cpp.named_buffers():
            yield prefix + name, _one(b)

    def buffers(self):
        return [b for _, b in self.named_buffers()]

    def children(self):
        return list(self._modules.values())

    def named_children(self):
        return list(self._modules.items())

    def modules(self):
        yield self
        for c in self._modules.values():
            yield from c.modules()

    def state_dict(self):
        """Parameters and buffers, detached, every name (tied ones under each)."""
        return OrderedDict(self._cpp.state_dict())

    def load_state_dict(self, state, strict=True):
        """Copies into the existing parameters; every missing, unexpected or mis-shaped key is
        listed in the error (strict), and a failed load changes nothing."""
        missing, unexpected = self._cpp.load_state_dict(dict(state), strict)
        return missing, unexpected

    def zero_grad(self, set_to_none=True):
        self._cpp.zero_grad()

    def to(self, *args, **kwargs):
        """to(dtype) converts every floating parameter and buffer in place; to(device) moves them
        there in place ("cpu", "cuda", "cuda:1", "sim"; a global one keeps its ranks and SBP and
        takes the device's kind for its placement, as OneFlow's), refusing a device this process
        cannot use with the module unchanged; to(nn.graph.GraphModule) gives the module's nn.Graph
        settings (its pipeline stage)."""
        if args and args[0] is graph.GraphModule:
            return graph.GraphModule.of(self)
        dtype, dev = dtype_and_device(args, kwargs)
        if dev is not None:
            self._cpp.to_device(str(dev))
        if dtype is not None:
            self._cpp.to(dtype)
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device if isinstance(device, str) and ":" in device
                       else f"cuda:{device}")

    def to_local(self):
        """Every global parameter and buffer becomes its local piece, in place (OneFlow's
        module.to_local)."""
        for _, t in list(self._cpp.named_parameters()) + list(self._cpp.named_buffers()):
            if t.is_global:
                _globe.rebind(t, t.to_local().detach().requires_grad_(t.requires_grad))
        return self

    @property
    def training(self):
        return self._cpp.training

    def train(self, mode=True):
        self._cpp.train(mode)
        return self

    def eval(self):
        return self.train(False)

    # ---- layouts ----
    def to_global(self, placement=None, sbp=None):
        """Every parameter and buffer laid out on `placement` with `sbp` (flow's
        module.to_global; without sbp each keeps its own, local ones becoming broadcast), in
        place: the same parameter objects, so an optimizer made before keeps working."""
        if placement is None:
            raise _globe.Error("[to_global] a module needs placement=")
        self._cpp.to_global(placement, sbp)
        return self

    def distribute(self, placement, plan, default_sbp=_globe.broadcast):
        """The whole module (rank 0's values) laid out by `plan`: {name: sbp}, others default_sbp
        (tensor-parallel layers from an ordinary initialisation; see Module::distribute)."""
        self._cpp.distribute(placement, dict(plan), default_sbp)
        return self


class init:  # noqa: N801  (torch.nn.init / flow.nn.init: in place, returning the tensor)
    uniform_ = staticmethod(_globe.init_uniform_)
    normal_ = staticmethod(_globe.init_normal_)
    constant_ = staticmethod(_globe.init_constant_)
    zeros_ = staticmethod(_globe.init_zeros_)
    ones_ = staticmethod(_globe.init_ones_)
    xavier_uniform_ = staticmethod(_globe.init_xavier_uniform_)
    xavier_normal_ = staticmethod(_globe.init_xavier_normal_)
    kaiming_uniform_ = staticmethod(_globe.init_kaiming_uniform_)
    kaiming_normal_ = staticmethod(_globe.init_kaiming_normal_)
    calculate_gain = staticmethod(_globe.init_calculate_gain)


class MixedPrecisionPolicy:
    """torch.distributed.fsdp.MixedPrecisionPolicy's role: compute in `param_dtype` (bfloat16) with
    float32 master weights and optimizer state; data-parallel gradients summed in `reduce_dtype`
    (float32 by default; bfloat16 halves the bytes and loses small gradients on many ranks)."""

    def __init__(self, param_dtype=None, reduce_dtype=None):
        self.param_dtype = _globe.dtype.bfloat16 if param_dtype is None else param_dtype
        self.reduce_dtype = _globe.dtype.float32 if reduce_dtype is None else reduce_dtype

    def __repr__(self):
        return f"MixedPrecisionPolicy(param_dtype={self.param_dtype}, reduce_dtype={self.reduce_dtype})"


def mixed_precision(module, policy=None):
    """Marks `module` and every module under it to run in `policy.param_dtype` (C++
    nn::mixed_precision): parameters stay float32, each call casts them (and floating inputs) for
    the forward, and gradients come back widened. Returns the module."""
    if not isinstance(module, Module):
        raise TypeError(f"mixed_precision: expected a Module, got {type(module).__name__}")
    policy = policy or MixedPrecisionPolicy()
    _globe.mixed_precision(module._cpp, policy.param_dtype, policy.reduce_dtype)
    return module


def fully_shard(module, mp_policy=None, reshard_after_forward=True):
    """ZeRO-3 / FSDP for `module` (torch.distributed.fsdp.fully_shard): each of its global parameters
    is split over the mesh axes where it is broadcast, in place (an optimizer made before keeps
    updating it), gathered while the module runs, and its gradient reduce-scattered into the shard.
    Shard each layer (or block) for the memory to pay off: the gathered copies are released when
    the forward returns and gathered again for the backward (reshard_after_forward=False keeps
    them until then); a module also recomputed gathers inside its recomputation. Collective."""
    if not isinstance(module, Module):
        raise TypeError(f"fully_shard: expected a Module, got {type(module).__name__}")
    _globe.fully_shard(module._cpp, bool(reshard_after_forward))
    if mp_policy is not None:
        mixed_precision(module, mp_policy)
    return module


def set_prefetch(modules, depth=1):
    """ZeRO-3 prefetch over fully sharded `modules` listed in the order every forward calls them:
    calling one starts the gathers of the next `depth` ahead, and the backward likewise in reverse
    (FSDP's forward and backward prefetch). 0 turns it off. The values trained are the same bits
    at any depth. Collective: every rank lists the same modules."""
    modules = list(modules)
    for m in modules:
        if not isinstance(m, Module):
            raise TypeError(f"set_prefetch: expected Modules, got {type(m).__name__}")
    if isinstance(depth, bool) or not isinstance(depth, int):
        raise TypeError(f"set_prefetch: depth must be an int, got {type(depth).__name__}")
    _globe.set_prefetch([m._cpp for m in modules], depth)


class _CppLayer(Module):
    """A Module over a C++ layer: the C++ layer is its registry, so its parameters are the C++
    layer's tensors and an assignment to one (`head.weight = wte.weight`) is what its forward uses."""

    def __init__(self, cpp):
        super().__init__()
        object.__setattr__(self, "_cpp", cpp)

    def forward(self, x):
        return self._cpp.forward(x)


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


class RMSNorm(_CppLayer):
    """Llama's RMSNorm over the last dim (torch.nn.RMSNorm with one normalised dim)."""

    def __init__(self, dim, eps=1e-6):
        super().__init__(_globe.CppRMSNorm(dim, eps))


def reduce_over_tp(x, tp_axis=-1):
    """After a row-parallel layer: its partial sum over the tensor-parallel mesh axis made
    broadcast (Megatron's all-reduce; C++ nn::reduce_over_tp). A local tensor passes through."""
    return _globe.reduce_over_tp(x, tp_axis)


def enter_tp_region(x, tp_axis=-1):
    """Before a column-parallel layer: broadcast over the tensor-parallel axis, and its gradient
    all-reduced coming back (C++ nn::enter_tp_region). A local tensor passes through."""
    return _globe.enter_tp_region(x, tp_axis)


class SiLU(Module):
    def forward(self, x):
        return _globe.silu(x)


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
    """Sequential(m0, m1, ...) names its children "0", "1", ...; Sequential(OrderedDict) uses the
    dict's names. Anything but a Module is a TypeError."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            items = list(modules[0].items())
        else:
            items = [(str(i), m) for i, m in enumerate(modules)]
        for name, m in items:
            if not isinstance(m, Module):
                raise TypeError(f"nn.Sequential: '{name}' is a {type(m).__name__}, not a Module "
                                "(give modules, or one OrderedDict of them)")
            setattr(self, name, m)

    def __len__(self):
        return len(self._modules)

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction


class MSELoss(_Loss):
    def forward(self, input, target):  # noqa: A002
        return _globe.mse_loss(input, target, self.reduction)


class CrossEntropyLoss(_Loss):
    def forward(self, logits, target):
        return _globe.cross_entropy(logits, target, self.reduction)


def DistributedDataParallel(module, *, broadcast_buffers=True, bucket_size=10, use_bucket=True):  # noqa: N802, ARG001
    """OneFlow's DDP over global tensors: a program that trains a local model on each rank's own
    batch, wrapped in DDP, trains as one model on all the ranks' batches together. As OneFlow's, it
    changes `module` in place and returns it: its parameters and buffers become global on every
    rank with rank 0's values (the same objects, so an optimizer made before keeps working); its
    forward takes each rank's local tensor arguments as their pieces of one batch split along dim 0
    and returns the local pieces of the outputs; backward averages the ranks' gradients, as DDP's
    all-reduce does (each output's gradient is scaled by 1 / world size; the layouts' reduction
    sums the rest). The local batches must be the balanced pieces of the whole one (equal sizes
    when the batch divides)."""
    from . import env, local_to_global, placement  # noqa: PLC0415  (the package's, defined after nn)
    from .utils.global_view import _map  # noqa: PLC0415
    n = env.get_world_size()
    if n == 1 or module.__dict__.get("_ddp"):
        return module
    kinds = {p.placement.type if p.is_global else p.device.type for p in module.parameters()}
    if len(kinds) > 1:
        raise _globe.Error(f"[DistributedDataParallel] the module's parameters are on devices of kinds {sorted(kinds)}: "
                           "move it to one with module.to(device) first")
    everywhere = placement(kinds.pop() if kinds else "cpu", ranks=list(range(n)))  # the module's device
    module.to_global(placement=everywhere, sbp=_globe.broadcast)
    local_forward = module.forward
    split = _globe.split(0)

    def forward(*args, **kwargs):
        out = local_forward(*_map(lambda t: t if t.is_global else local_to_global(t, everywhere, split), args),
                            **kwargs)
        return _map(lambda t: _globe.scale_grad(t, 1.0 / n).to_local() if t.is_global else t, out)

    object.__setattr__(module, "forward", forward)
    object.__setattr__(module, "_ddp", True)
    return module


parallel = _types.ModuleType(__name__ + ".parallel", "nn.parallel: DistributedDataParallel")
parallel.DistributedDataParallel = DistributedDataParallel
_sys.modules[parallel.__name__] = parallel  # `from globe.nn.parallel import DistributedDataParallel`

from . import graph  # noqa: E402  (nn.graph.GraphModule; graph.py uses Module lazily)

Graph = graph.Graph
