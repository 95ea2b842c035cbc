"""Globe's Python front end: global tensors from Python, over Globe's C++ core.

    import globe as flow                       # the tutorial's OneFlow programs, device "cpu"
    p = flow.placement("cpu", ranks=[0, 1])
    x = flow.randn(4, 5, placement=p, sbp=flow.sbp.split(0))
    y = x.to_global(sbp=flow.sbp.broadcast)

Run several ranks with `python3 -m globe.launch --nproc_per_node 2 script.py` (or
`globe-launch --nproc_per_node 2 python3 script.py`). Errors from the core arrive as globe.Error
with the core's message.
"""
import builtins as _builtins
import sys as _sys
import traceback as _traceback

import numpy as _np

from . import _globe
from ._globe import (Error, Placement, Tensor, abs, add, allclose, arange, argmax, boxing_paths, cat, causal_attention, causal_fill,
                     causal_softmax, clamp, contiguous, cross_entropy, describe, div, dropout, embedding, eq, equal, exp, expand, flatten,
                     from_full, from_numpy, gather, ge, gelu, gelu_tanh, gt, layer_norm, le, linear, local_block, log, log_softmax, logical_and, logical_not,
                     logical_or, lt, manual_seed, matmul, matmul_nt, max, mean, mse_loss, mul, narrow, ne, neg, ones_like, permute, pick, pow, relu, reset_boxing_paths, reshape, rms_norm,
                     rotary_embedding, scatter_add, sigmoid, silu, slice, softmax, sqrt, squeeze, sub, sum, sum_to, swiglu, tanh, to_dtype,
                     transpose, uniform, unsqueeze, view, visualize, where, zeros_like)
from . import amp, env, nn, optim, pipeline, sbp, tensor_methods, trace  # noqa: E402  (after _globe: they use it)
from .trace import CommTrace, Timeline  # noqa: E402
from .tensor_methods import masked_fill, norm  # noqa: E402  (torch's mask and norm arguments)
from . import utils  # noqa: E402  (utils.data, utils.global_view)
from . import _saved_tree  # noqa: E402
from .autograd import grad_bucket_bytes, no_grad, no_sync, set_grad_bucket_bytes
from .sbp import broadcast as _broadcast

float32 = _globe.dtype.float32
float64 = _globe.dtype.float64
int64 = _globe.dtype.int64
bfloat16 = _globe.dtype.bfloat16
float16 = _globe.dtype.float16
half = float16
float = float32  # noqa: A001  (OneFlow / PyTorch spelling)
double = float64
long = int64
bool = _globe.dtype.bool  # noqa: A001  (torch.bool; the builtin is _builtins.bool here)
# OneFlow's and torch's narrow integers: storage, casts, comparisons, moves and checkpoints; an op
# that computes in them says so (cast to int64 or a float first).
int32 = _globe.dtype.int32
int = int32  # noqa: A001  (torch.int)
int8 = _globe.dtype.int8
char = int8
uint8 = _globe.dtype.uint8
_NUMPY_DTYPES = {float32: _np.float32, float64: _np.float64, float16: _np.float16, int64: _np.int64,
                 bool: _np.bool_, int32: _np.int32, int8: _np.int8, uint8: _np.uint8}


def _excepthook(kind, value, tb, _previous=_sys.excepthook):
    # The traceback, from this rank unless another rank of the job already showed the same one
    # (globe-launch then names the ranks that raised it alike: globe/dist/error_report.h).
    if env.get_world_size() == 1 or _globe.print_error_here("".join(_traceback.format_exception(kind, value, tb))):
        _previous(kind, value, tb)
    if env.get_world_size() > 1:  # tell the other ranks (they stop at once) and exit 1, as Python does
        _sys.stdout.flush()
        _sys.stderr.flush()
        _globe.exit_after_failure(1)


_sys.excepthook = _excepthook


def use_deterministic_algorithms(mode):
    """torch.use_deterministic_algorithms's name for Globe's deterministic mode: with True, every sum
    that a layout may spread over ranks is taken in one order fixed by the global shapes, so the
    program gives the same bits on any number of ranks (docs/design.md §10). Every rank must agree."""
    _globe.set_deterministic(_builtins.bool(mode))


def are_deterministic_algorithms_enabled():
    return _globe.deterministic()


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: "highest" (the default, full float32 products), "high" or
    "medium" (TF32 products on CUDA; the CPU's and deterministic mode's stay full float32)."""
    _globe.set_float32_matmul_precision(precision)


def get_float32_matmul_precision():
    return _globe.get_float32_matmul_precision()


class _CudaMatmul:
    """flow.backends.cuda.matmul (torch.backends.cuda.matmul): allow_tf32 = True is
    set_float32_matmul_precision("high"), False "highest"."""

    @property
    def allow_tf32(self):
        return _globe.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, on):
        _globe.set_float32_matmul_precision("high" if on else "highest")


class backends:  # noqa: N801  (flow.backends / torch.backends)
    class cuda:  # noqa: N801
        matmul = _CudaMatmul()


__all__ = ["Tensor", "Placement", "Error", "placement", "tensor", "local_to_global", "randn", "zeros", "ones", "full", "save", "load",
           "save_sharded", "load_sharded", "load_sharded_into", "save_hf", "rms_norm", "silu", "swiglu", "rotary_embedding", "no_grad", "no_sync", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "set_float32_matmul_precision", "get_float32_matmul_precision", "backends", "CommTrace", "Timeline", "trace", "set_grad_bucket_bytes", "grad_bucket_bytes", "sbp", "nn", "optim", "amp", "env", "float32", "float64", "int64", "bfloat16", "float16", "half", "bool", "int32", "int8", "uint8"]


class device:  # noqa: N801  (torch.device / flow.device)
    """device("cpu"), device("cuda"), device("cuda:1") or device("cuda", 1), as torch's. "cuda"
    needs a build with the CUDA backend and a visible GPU; asking for one where there is none is an
    error saying which of the two is missing when a tensor is put there."""

    def __init__(self, type="cpu", index=None):  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        name, _, idx = str(type).partition(":")
        _globe.parse_device(str(type) if index is None else f"{name}:{index}")  # "[device] ..." errors
        self.type, self.index = name, _builtins.int(idx) if idx else index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index or 0) == (other.type, other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}'" + ("" if self.index is None else f", index={self.index}") + ")"


class cuda:  # noqa: N801  (flow.cuda)
    """Whether this build has the CUDA backend and the process sees a GPU; the bytes of tensors on
    a GPU, as torch.cuda's memory_allocated family (the current device is the one a placement
    gives this rank: local rank % GPUs). Without a GPU these say what is missing."""

    @staticmethod
    def is_available():
        return _globe.cuda_device_count() > 0

    @staticmethod
    def device_count():
        return _globe.cuda_device_count()

    @staticmethod
    def current_device():
        n = _globe.cuda_device_count()
        return env.get_local_rank() % n if n > 0 else 0

    @staticmethod
    def _name(dev, what):
        if dev is None:
            return f"cuda:{cuda.current_device()}"
        if isinstance(dev, _builtins.int):
            return f"cuda:{dev}"
        d = device(dev)
        if d.type != "cuda":
            raise _globe.Error(f"[cuda.{what}] expects a CUDA device, got {d}")
        return f"cuda:{d.index or 0}"

    @staticmethod
    def memory_allocated(device=None):  # noqa: A002  (torch's name)
        return _globe.memory_stats(cuda._name(device, "memory_allocated"), "cuda.memory_allocated")[0]

    @staticmethod
    def max_memory_allocated(device=None):
        return _globe.memory_stats(cuda._name(device, "max_memory_allocated"), "cuda.max_memory_allocated")[1]

    @staticmethod
    def memory_reserved(device=None):
        return _globe.memory_stats(cuda._name(device, "memory_reserved"), "cuda.memory_reserved")[2]

    @staticmethod
    def reset_peak_memory_stats(device=None):
        _globe.reset_peak_memory(cuda._name(device, "reset_peak_memory_stats"), "cuda.reset_peak_memory_stats")

    @staticmethod
    def empty_cache():
        _globe.empty_cache(cuda._name(None, "empty_cache"), "cuda.empty_cache")

    @staticmethod
    def synchronize(device=None):
        _globe.synchronize(cuda._name(device, "synchronize"), "cuda.synchronize")


def placement(type="cpu", ranks=None):  # noqa: A002  (OneFlow's keyword)
    """flow.placement(type, ranks): ranks a list, range or numpy array (1-D), or a nested list /
    2-D array (a mesh, row-major); None: every rank. placement.all("cpu") is every rank. "cuda"
    says what it needs where it cannot be had (the C++ Placement's errors)."""
    if ranks is None:
        return Placement.all(type)
    if isinstance(ranks, (range, _np.ndarray)):
        a = _np.asarray(ranks)
        return Placement(type, [_builtins.int(r) for r in a.flat], list(a.shape))
    shape, level, flat = [], ranks, list(ranks)
    while isinstance(level, (list, tuple)):  # the mesh: the lengths along the first elements
        shape.append(len(level))
        level = level[0] if len(level) else None
    while flat and isinstance(flat[0], (list, tuple)):
        flat = [r for row in flat for r in row]
    return Placement(type, [_builtins.int(r) for r in flat], shape)


placement.all = lambda type="cpu": placement(type)  # noqa: A002  (OneFlow's placement.all)
# OneFlow's placement.ranks: a numpy array shaped like the mesh.
Placement.ranks = property(lambda p: _np.array(p.rank_list, dtype=_np.int64).reshape(p.mesh_shape))
Placement.device_type = property(lambda p: p.type)
_globe.Sbp.__call__ = lambda self: self  # flow.sbp.broadcast() as well as flow.sbp.broadcast


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return list(size[0])
    return list(size)


def _on_device(t, dev):
    """`t` moved to `dev` (a local tensor; None or the CPU: t itself)."""
    if dev is None:
        return t
    return _globe.to_device(t, str(device(dev)))


def _create(fn, size, dtype, placement, sbp, requires_grad, dev=None):
    t = _on_device(fn(_shape(size), dtype, placement, sbp), dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def randn(*size, dtype=float32, placement=None, sbp=None, requires_grad=False, device=None):
    return _create(_globe.randn, size, dtype, placement, sbp, requires_grad, device)


def zeros(*size, dtype=float32, placement=None, sbp=None, requires_grad=False, device=None):
    return _create(_globe.zeros, size, dtype, placement, sbp, requires_grad, device)


def ones(*size, dtype=float32, placement=None, sbp=None, requires_grad=False, device=None):
    return _create(_globe.ones, size, dtype, placement, sbp, requires_grad, device)


def rand(*size, dtype=float32, placement=None, sbp=None, requires_grad=False, device=None):
    return _create(_globe.rand, size, dtype, placement, sbp, requires_grad, device)


def randint(low, high=None, size=None, dtype=None, placement=None, sbp=None, device=None):
    """flow.randint(low=0, high, size): int64 values uniform in [low, high); local, or global with
    placement= (the same values in any layout, as randn)."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    t = _create(lambda shape, _dtype, p, b: _globe.randint(low, high, shape, p, b), (size,), int64, placement, sbp,
                False, device)
    return t if dtype is None or dtype == int64 else t.to(dtype)


def full(size, value, dtype=float32, placement=None, sbp=None, requires_grad=False):
    t = _globe.full(list(size) if isinstance(size, (list, tuple)) else [size], value, dtype, placement, sbp)
    return t.requires_grad_(True) if requires_grad else t


def tensor(data, dtype=None, requires_grad=False, placement=None, sbp=None, device=None):
    """A tensor from numpy data or (nested) Python numbers. With placement and sbp, `data` is the
    whole value of the global tensor, as in OneFlow: rank 0's data is broadcast to the placement
    and each rank keeps its block of it, so a split(0) tensor of (8, 8) data has shape (8, 8) and
    each of 2 ranks holds 4 rows (a collective). To put together a global tensor from each rank's
    piece instead, use local_to_global."""
    if isinstance(data, Tensor):
        data = data.numpy()
    a = _np.array(data)  # a copy, as torch.tensor makes (from_numpy shares)
    if dtype is not None:
        a = a.astype(_NUMPY_DTYPES[dtype])
    elif a.dtype == _np.float64 and not isinstance(data, _np.ndarray):
        a = a.astype(_np.float32)  # Python floats make float32 tensors, as in PyTorch
    t = from_numpy(a)  # numpy's integers come in as int64 (Globe's indices)
    if dtype is not None and t.dtype != dtype:
        t = _globe.to_dtype(t, dtype)
    if placement is not None:
        # rank 0's value on every rank (broadcast on every mesh axis of an N-D placement)
        t = t.to_global(placement=placement, sbp=[_broadcast] * len(placement.mesh_shape))
        if sbp is not None:
            t = t.to_global(sbp=sbp)  # each rank's block of it: no communication from B
    elif sbp is not None:
        raise Error("[tensor] sbp= needs placement= too")
    else:
        t = _on_device(t, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def local_to_global(local, placement, sbp):
    """The global tensor whose pieces are each rank's `local` (numpy data or a local tensor): a
    split(0) of (4, 8) pieces on 2 ranks has shape (8, 8). The same as local.to_global(...)."""
    if not isinstance(local, Tensor):
        local = tensor(local)
    return local.to_global(placement=placement, sbp=sbp)


def save(obj, path, global_dst_rank=0):
    """flow.save(state_dict, path, global_dst_rank=R): collective; rank R writes one safetensors
    file with every tensor's whole value. `obj` may nest dicts, lists and tuples of tensors,
    numbers, strings and None ({"model": ..., "optimizer": ..., "epoch": 3}, nn.Graph.state_dict()):
    the nesting is kept in the file's metadata (_saved_tree)."""
    tensors, structure = _saved_tree.flatten(obj)
    _globe.save(tensors, str(path), global_dst_rank, {} if structure is None else {_saved_tree.STRUCTURE_KEY: structure})


def load(path, global_src_rank=0):
    """flow.load(path, global_src_rank=R): collective; rank R reads the file, every rank gets a
    dict of global tensors (whole values on R) that load_state_dict lays out like its own, nested
    as it was saved."""
    tensors, metadata = _globe.load(str(path), global_src_rank, True)
    structure = metadata.get(_saved_tree.STRUCTURE_KEY)
    return tensors if structure is None else _saved_tree.unflatten(tensors, structure)


def save_sharded(state, path):
    """Every rank writes the blocks it holds of each tensor into the directory `path`, with an
    index.json of global shapes, dtypes and chunks (collective; C++ globe::save_sharded)."""
    _globe.save_sharded(dict(state), str(path))


def load_sharded(path, like=None):
    """A sharded checkpoint read back, resharded: with `like` (a state dict, e.g. the model's own)
    each tensor comes in its layout there, each rank reading only its block's bytes; without, global
    tensors in the layouts they were saved in (collective; C++ globe::load_sharded)."""
    return _globe.load_sharded(str(path), None if like is None else dict(like))


def load_sharded_into(path, targets):
    """A sharded checkpoint, or a Hugging Face directory (save_pretrained's), read straight into the
    tensors of `targets` (e.g. `model.state_dict()`), one at a time, each rank reading only its
    blocks (collective; C++ globe::load_sharded_into)."""
    _globe.load_sharded_into(str(path), dict(targets))


def save_hf(state, path, max_shard_bytes=5_000_000_000, dtype=None):
    """`state` written as a Hugging Face checkpoint directory (model.safetensors, or shards and
    their index) from any layout (collective; C++ globe::save_hf); `dtype` (flow.bfloat16, say)
    converts the floating tensors as they are written."""
    _globe.save_hf(dict(state), str(path), _builtins.int(max_shard_bytes), dtype)


def _numpy_array(self, dtype=None):
    a = self.numpy()
    return a if dtype is None else a.astype(dtype)


Tensor.__array__ = _numpy_array
Tensor.__iter__ = lambda self: iter(self.numpy())
tensor_methods.install()
# Where a tensor lives: a local one on its storage's device; a global one on its placement's type.
Tensor.device = property(lambda self: device(self.placement.type if self.is_global else self._device))
Tensor.cuda = lambda self, device=None: self.to("cuda" if device is None else f"cuda:{_builtins.int(device)}"
                                                if isinstance(device, _builtins.int) else device)


def _tensor_from_args(*args, **kwargs):
    """flow.Tensor(data) / flow.Tensor(2, 3) as in OneFlow (the binding's constructor calls this): a
    float32 tensor from data, or an uninitialised (here: zero-filled) one of a shape."""
    if len(args) == 1 and not isinstance(args[0], _builtins.int):
        return tensor(args[0], dtype=float32, **kwargs)
    return zeros(*args, **kwargs)
