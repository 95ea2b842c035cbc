"""Tensor methods under torch's and OneFlow's names and signatures, over Globe's ops: every op has a
method (x.transpose(0, 1), x.softmax(-1), x.max(dim=1)), a tensor is subscriptable (x[0], x[:, 1:3],
x[..., None]), and the in-place forms (zero_, fill_, copy_, add_, mul_, ...) write into the tensor,
refused where autograd would need its old value. Installed on globe.Tensor by the package."""
import builtins
import collections

import numpy as _np

from . import _globe
from ._globe import Error, Tensor

_py_slice = builtins.slice


def _sizes(args):
    """A shape given as *ints or as one sequence (torch accepts both)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


def _dims(dim):
    if dim is None:
        return []
    return list(dim) if isinstance(dim, (list, tuple)) else [dim]


# max / min with a dim return (values, indices), as torch and OneFlow do.
MaxResult = collections.namedtuple("max", ["values", "indices"])


def max_(self, dim=None, keepdim=False):  # noqa: A001
    if dim is None:
        return _globe.max(self)
    return MaxResult(_globe.max(self, [dim], keepdim), _globe.argmax(self, dim, keepdim))


def argmax(self, dim=None, keepdim=False):
    if dim is None:
        return _globe.argmax(_globe.reshape(self, [-1]), 0)
    return _globe.argmax(self, dim, keepdim)


def squeeze(self, dim=None):
    if dim is not None:
        return _globe.squeeze(self, dim)
    out = self
    for d in reversed(range(self.dim())):
        if self.shape[d] == 1:
            out = _globe.squeeze(out, d)
    return out


def expand(self, *sizes):
    sizes = _sizes(sizes)
    lead = len(sizes) - self.dim()
    return _globe.expand(self, [self.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes)])


def repeat(self, *sizes):
    """Tiles the tensor sizes[d] times along each dim d (leading new dims allowed), as torch."""
    sizes = _sizes(sizes)
    if len(sizes) < self.dim():
        raise Error(f"[repeat] {len(sizes)} repeat counts for a tensor of {self.dim()} dims")
    out = self
    for _ in range(len(sizes) - self.dim()):
        out = _globe.unsqueeze(out, 0)
    for d, n in enumerate(sizes):
        if n != 1:
            out = _globe.cat([out] * n, d)
    return out


def split(self, split_size_or_sections, dim=0):
    n = self.shape[dim]
    if isinstance(split_size_or_sections, int):
        lengths = [min(split_size_or_sections, n - s) for s in range(0, n, split_size_or_sections)]
    else:
        lengths = list(split_size_or_sections)
        if sum(lengths) != n:
            raise Error(f"[split] sections {lengths} do not add up to dim {dim}'s size {n}")
    out, start = [], 0
    for length in lengths:
        out.append(_globe.narrow(self, dim, start, length))
        start += length
    return tuple(out)


def chunk(self, chunks, dim=0):
    n = self.shape[dim]
    return split(self, -(-n // chunks), dim)


_cpp_backward = Tensor.backward
# While nn.Graph runs build(), it takes each loss.backward() here: to scale the loss by its
# micro-batch share and to run the backward in the schedule's order (python/globe/graph.py).
backward_hook = None


def backward(self, gradient=None, retain_graph=False, create_graph=False):  # noqa: ARG001
    """torch's backward: `gradient` weights a non-scalar tensor (the backward of sum(self * gradient))."""
    loss = self if gradient is None else (self * gradient).sum()
    if backward_hook is not None:
        backward_hook(loss)
    else:
        _cpp_backward(loss)


def dtype_and_device(args, kwargs):
    """What to(...) asks for, as torch's and OneFlow's to() take it (dtype, device, both, another
    tensor, or keywords): (dtype or None, device or None), the device's name checked."""
    from . import device  # noqa: PLC0415  (the package's, defined after this module)
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif isinstance(a, _globe.dtype):
            dtype = a
        else:
            dev = a
    return dtype, None if dev is None else device(dev)


def to(self, *args, **kwargs):
    """The same tensor where nothing changes (as torch), else a converted copy: another dtype,
    another device ("cpu", "cuda", "cuda:1"), or both. A global tensor keeps its ranks, mesh and
    SBP and takes the device's kind for its placement (OneFlow's; each shard's device follows its
    rank, so an index is not used)."""
    dtype, dev = dtype_and_device(args, kwargs)
    out = self if dtype is None or dtype == self.dtype else _globe.to_dtype(self, dtype)
    if dev is None:
        return out
    if out.is_global:
        p = out.placement
        if dev.type != p.type:
            out = out.to_global(_globe.Placement(dev.type, p.rank_list, p.mesh_shape), out.sbp)
    elif dev != out.device:
        out = _globe.to_device(out, str(dev))
    return out


def _index(self, key):
    """Basic indexing: ints (the dim removed), slices with step 1, None (a new dim) and Ellipsis;
    as the only index, an integer array (a list, a numpy array or an int64 tensor) selects rows of
    the first dim, and a boolean mask (a bool tensor, numpy array or list) of the leading dims
    selects the elements (or rows) where it holds (_take). Other steps are refused."""
    if not isinstance(key, tuple):
        key = (key,)
    if builtins.sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = builtins.sum(k is not None and k is not Ellipsis for k in key)
    if used > self.dim():
        raise IndexError(f"too many indices for a tensor of {self.dim()} dims: {used}")
    out, d = self, 0
    for k in key:
        if k is Ellipsis:
            d += self.dim() - used
        elif k is None:
            out = _globe.unsqueeze(out, d)
            d += 1
        elif isinstance(k, (int, _np.integer)):
            n = out.shape[d]
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for dim {d} with size {n}")
            out = _globe.squeeze(_globe.narrow(out, d, int(k) % n, 1), d)
        elif isinstance(k, _py_slice):
            start, stop, step = k.indices(out.shape[d])
            if step != 1:
                raise Error(f"[index] slice step {step}: only step 1 is supported")
            out = _globe.narrow(out, d, start, builtins.max(stop - start, 0))
            d += 1
        elif isinstance(k, (Tensor, list, _np.ndarray)) and len(key) == 1:
            return _take(out, k)
        else:
            raise Error(f"[index] unsupported index {k!r}: use ints, slices, None, ..., or one integer array "
                        "or boolean mask")
    return out


def _take(self, key):
    """self[key] for an integer array or a boolean mask `key` (a list, a numpy array or a tensor),
    as numpy and torch index. A global tensor is indexed as one whole: a local key (every rank's
    the same; from_full checks it) becomes a broadcast index on its placement. A mask's result has
    as many rows as the mask has true elements, so every rank must know them: the mask is read
    whole on every rank (collective for a global mask, as .numpy() is), its true positions found
    there, and they index as integers do. The rows are gathered by embedding, so gradients flow
    back to the selected rows (summed where one is selected twice)."""
    index = None
    if isinstance(key, Tensor):
        host = key if key.is_global or key._device == "cpu" else to(key, "cpu")
        if key.dtype == _globe.dtype.bool:
            mask = host.numpy()  # whole on every rank
        elif key.dtype == _globe.dtype.int64 and key.is_global:
            mask, index = None, key  # taken as it is: non-negative
        elif key.dtype == _globe.dtype.int64:
            mask, a = None, host.numpy()
        else:
            raise IndexError(f"tensors used as indices must be int64 or bool, got {key.dtype}")
    else:
        a = _np.asarray(key)
        if a.dtype == _np.bool_:
            mask = a
        elif a.size == 0 or _np.issubdtype(a.dtype, _np.integer):
            mask, a = None, a.astype(_np.int64)
        else:
            raise IndexError(f"arrays used as indices must be integer or boolean, got {a.dtype}")
    shape = list(self.shape)
    if mask is not None:
        lead = mask.ndim
        if list(mask.shape) != shape[:lead]:
            raise IndexError(f"the mask of shape {list(mask.shape)} does not match the first {lead} dims of "
                             f"the indexed tensor's shape {shape}")
        a = _np.flatnonzero(mask).astype(_np.int64)
        shape = [int(_np.prod(shape[:lead], dtype=_np.int64))] + shape[lead:]
    if not shape:
        raise IndexError("a 0-dim tensor cannot be indexed by an array")
    if index is None:
        n = shape[0]
        if a.size and not (-n <= a.min() and a.max() < n):
            bad = a[(a < -n) | (a >= n)][0]
            raise IndexError(f"index {bad} is out of bounds for dim 0 with size {n}")
        index = _globe.from_numpy(_np.ascontiguousarray(a % n if n else a))
        if not self.is_global and self._device != "cpu":
            index = to(index, self._device)
    if self.is_global and not index.is_global:
        index = _globe.from_full(index, self.placement, [_globe.broadcast] * len(self.sbp))
    rows = _globe.reshape(self, [shape[0], -1])
    picked = _globe.embedding(rows, index)
    return _globe.reshape(picked, list(index.shape) + shape[1:])


def _inplace(name, compute):
    """An in-place method: the result computed from the old value, then written into the tensor.
    Refused while autograd records and the tensor takes part in it (torch's leaf rule; for other
    tensors Globe keeps no version counter, so the old value a backward needs would be lost)."""
    def method(self, *args, **kwargs):
        if _globe.grad_enabled() and self.requires_grad:
            what = "a leaf that requires grad" if self.is_leaf else "a tensor autograd may need unchanged"
            raise Error(f"[{name}] in-place on {what} ({_globe.describe(self)}): do it under "
                        f"globe.no_grad(), or use the out-of-place form")
        _globe.copy_(self, compute(self, *args, **kwargs))
        return self
    method.__name__ = name
    return method


def masked_fill(self, mask, value):
    """`value` where `mask` holds (a bool tensor, or an int64 or floating one read as non-zero, of
    this shape or one that broadcasts to it), the tensor's value elsewhere; no gradient where filled."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"masked_fill: mask must be a tensor, got {type(mask).__name__}")
    if mask.dtype not in (_globe.dtype.bool, _globe.dtype.int64):
        mask = _globe.ne(mask, 0.0)
    return _globe.masked_fill(self, mask, float(value))


def _truth(self):
    """bool(t): the value of a one-element tensor (collective for a global one, as item()); more
    elements are ambiguous, as in torch, rather than true because the tensor is not empty."""
    if self.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {self.numel()} values is ambiguous: "
                           "use .all() or .any(), or compare a one-element tensor")
    return builtins.bool(self.item())


def norm(self, p="fro", dim=None, keepdim=False):
    """torch's vector norm over `dim` (all dims by default): p = 2 / "fro", 1, or inf."""
    if p in ("fro", 2, 2.0):
        return _globe.sqrt(_globe.sum(self * self, _dims(dim), keepdim))
    if p in (1, 1.0):
        return _globe.sum(_globe.abs(self), _dims(dim), keepdim)
    if p == float("inf"):
        return _globe.max(_globe.abs(self), _dims(dim), keepdim) if dim is not None else _globe.max(_globe.abs(self))
    raise NotImplementedError(f"norm: p={p!r} (Globe has p = 2, 1 and inf)")


def _fill(self, value):
    if self.is_global:
        return _globe.full(list(self.shape), float(value), self.dtype, self.placement, self.sbp)
    return _globe.full(list(self.shape), float(value), self.dtype)


METHODS = {
    # shapes
    "transpose": lambda self, d0, d1: _globe.transpose(self, d0, d1),
    "permute": lambda self, *dims: _globe.permute(self, _sizes(dims)),
    "view": lambda self, *shape: _globe.view(self, _sizes(shape)),
    "reshape": lambda self, *shape: _globe.reshape(self, _sizes(shape)),
    "flatten": lambda self, start_dim=0, end_dim=-1: _globe.flatten(self, start_dim, end_dim),
    "unsqueeze": lambda self, dim: _globe.unsqueeze(self, dim),
    "squeeze": squeeze,
    "expand": expand,
    "expand_as": lambda self, other: _globe.expand(self, list(other.shape)),
    "repeat": repeat,
    "narrow": lambda self, dim, start, length: _globe.narrow(self, dim, start, length),
    "split": split,
    "chunk": chunk,
    "contiguous": lambda self: _globe.contiguous(self),
    "clone": lambda self: self * 1.0,  # a new tensor (x * 1 is exact), differentiable
    "gather": lambda self, dim, index: _globe.gather(self, dim, index),
    # dtypes and devices
    "to": to,
    "float": lambda self: to(self, _globe.dtype.float32),
    "double": lambda self: to(self, _globe.dtype.float64),
    "long": lambda self: to(self, _globe.dtype.int64),
    "int": lambda self: to(self, _globe.dtype.int32),
    "char": lambda self: to(self, _globe.dtype.int8),
    "byte": lambda self: to(self, _globe.dtype.uint8),
    "bool": lambda self: to(self, _globe.dtype.bool),
    "bfloat16": lambda self: to(self, _globe.dtype.bfloat16),
    "half": lambda self: to(self, _globe.dtype.float16),
    "type_as": lambda self, other: to(self, other.dtype),
    "cpu": lambda self: to(self, "cpu"),
    "tolist": lambda self: self.numpy().tolist(),
    # math
    "matmul": lambda self, other: _globe.matmul(self, other),
    "mm": lambda self, other: _globe.matmul(self, other),
    "add": lambda self, other: self + other,
    "sub": lambda self, other: self - other,
    "mul": lambda self, other: self * other,
    "div": lambda self, other: self / other,
    "pow": lambda self, e: _globe.pow(self, e),
    "neg": lambda self: _globe.neg(self),
    "exp": lambda self: _globe.exp(self),
    "log": lambda self: _globe.log(self),
    "sqrt": lambda self: _globe.sqrt(self),
    "relu": lambda self: _globe.relu(self),
    "tanh": lambda self: _globe.tanh(self),
    "sigmoid": lambda self: _globe.sigmoid(self),
    "gelu": lambda self: _globe.gelu(self),
    "softmax": lambda self, dim: _globe.softmax(self, dim),
    "log_softmax": lambda self, dim: _globe.log_softmax(self, dim),
    # reductions
    "sum": lambda self, dim=None, keepdim=False: _globe.sum(self, _dims(dim), keepdim),
    "mean": lambda self, dim=None, keepdim=False: _globe.mean(self, _dims(dim), keepdim),
    "max": max_,
    "argmax": argmax,
    # selection
    "abs": lambda self: _globe.abs(self),
    "clamp": lambda self, min=None, max=None: _globe.clamp(self, min, max),  # noqa: A002
    "clip": lambda self, min=None, max=None: _globe.clamp(self, min, max),  # noqa: A002
    "masked_fill": masked_fill,
    "where": lambda self, condition, other: _globe.where(condition, self, other),
    "norm": norm,
    # comparisons (the operators ==, !=, <, <=, >, >= are these too; ~, &, | the logical ops)
    "eq": lambda self, other: _globe.eq(self, other),
    "ne": lambda self, other: _globe.ne(self, other),
    "lt": lambda self, other: _globe.lt(self, other),
    "le": lambda self, other: _globe.le(self, other),
    "gt": lambda self, other: _globe.gt(self, other),
    "ge": lambda self, other: _globe.ge(self, other),
    "equal": lambda self, other: _globe.equal(self, other),
    "allclose": lambda self, other, rtol=1e-5, atol=1e-8, equal_nan=False: _globe.allclose(self, other, rtol, atol,
                                                                                           equal_nan),
    "logical_not": lambda self: _globe.logical_not(self),
    "logical_and": lambda self, other: _globe.logical_and(self, other),
    "logical_or": lambda self, other: _globe.logical_or(self, other),
    "all": lambda self: _globe.sum(_globe.logical_not(self)) == 0,
    "any": lambda self: _globe.sum(_globe.ne(self, 0.0)) > 0,
    "__bool__": _truth,
    "__hash__": object.__hash__,  # identity, as torch's: == is elementwise
    # OneFlow's identity of a global tensor: equal for two handles of the same tensor (Tensor.same)
    "global_id": lambda self: self._impl_id,
    # in place
    "clamp_": _inplace("clamp_", lambda self, min=None, max=None: _globe.clamp(self, min, max)),  # noqa: A002
    "masked_fill_": _inplace("masked_fill_", masked_fill),
    "zero_": _inplace("zero_", lambda self: _fill(self, 0.0)),
    "fill_": _inplace("fill_", _fill),
    "copy_": _inplace("copy_", lambda self, src: src),
    "add_": _inplace("add_", lambda self, other: self + other),
    "sub_": _inplace("sub_", lambda self, other: self - other),
    "mul_": _inplace("mul_", lambda self, other: self * other),
    "div_": _inplace("div_", lambda self, other: self / other),
    "__getitem__": _index,
    "backward": backward,
}

PROPERTIES = {
    "T": lambda self: _globe.permute(self, list(reversed(range(self.dim())))),
    "ndim": lambda self: self.dim(),
    "is_local": lambda self: not self.is_global,
}


def install():
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
    for name, fn in PROPERTIES.items():
        setattr(Tensor, name, property(fn))
