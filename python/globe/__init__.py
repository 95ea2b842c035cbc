"""Globe's Python front end: global tensors from Python, over Globe's C++ core.

    import globe as flow                       # the tutorial's OneFlow programs, device "cpu"
    p = flow.placement("cpu", ranks=[0, 1])
    x = flow.randn(4, 5, placement=p, sbp=flow.sbp.split(0))
    y = x.to_global(sbp=flow.sbp.broadcast)

Run several ranks with `python3 -m globe.launch --nproc_per_node 2 script.py` (or
`globe-launch --nproc_per_node 2 python3 script.py`). Errors from the core arrive as globe.Error
with the core's message.
"""
import sys as _sys

import numpy as _np

from . import _globe
from ._globe import (Error, Placement, Tensor, add, arange, argmax, cat, causal_attention, causal_fill,
                     causal_softmax, contiguous, cross_entropy, describe, div, dropout, embedding, exp, expand, flatten, from_full, from_numpy,
                     gather, gelu, gelu_tanh, layer_norm, linear, log, log_softmax, manual_seed, matmul, matmul_nt,
                     max, mean, mse_loss, mul, narrow, neg, ones_like, permute, pick, pow, rand, relu, reshape,
                     scatter_add, sigmoid, slice, softmax, sqrt, squeeze, sub, sum, sum_to, tanh, to_dtype,
                     transpose, uniform, unsqueeze, view, visualize, zeros_like)
from . import env, nn, optim, pipeline, sbp  # noqa: E402  (after _globe: they use it)
from .autograd import grad_bucket_bytes, no_grad, no_sync, set_grad_bucket_bytes
from .sbp import broadcast as _broadcast

float32 = _globe.dtype.float32
float64 = _globe.dtype.float64
int64 = _globe.dtype.int64
float = float32  # noqa: A001  (OneFlow / PyTorch spelling)
double = float64
long = int64


def _excepthook(kind, value, traceback, _previous=_sys.excepthook):
    _previous(kind, value, traceback)
    if env.get_world_size() > 1:  # tell the other ranks and abort, as an uncaught C++ exception does
        _sys.stdout.flush()
        _sys.stderr.flush()
        _globe.die_of_uncaught_exception()


_sys.excepthook = _excepthook

__all__ = ["Tensor", "Placement", "Error", "placement", "tensor", "randn", "zeros", "ones", "full", "save", "load",
           "no_grad", "no_sync", "set_grad_bucket_bytes", "grad_bucket_bytes", "sbp", "nn", "optim", "env", "float32", "float64", "int64"]


def placement(type="cpu", ranks=None):  # noqa: A002  (OneFlow's keyword)
    """flow.placement(type, ranks): ranks a list (1-D) or a nested list (a mesh, row-major);
    None: every rank. Globe runs on "cpu"; "cuda" is an error saying so."""
    if type != "cpu":
        raise Error(f'[placement] device type "{type}": this build of Globe runs on "cpu"; '
                    f'use placement("cpu", ranks=...)')
    if ranks is None:
        return Placement.all("cpu")
    shape, level, flat = [], ranks, list(ranks)
    while isinstance(level, (list, tuple)):  # the mesh: the lengths along the first elements
        shape.append(len(level))
        level = level[0] if len(level) else None
    while flat and isinstance(flat[0], (list, tuple)):
        flat = [r for row in flat for r in row]
    return Placement("cpu", [int(r) for r in flat], shape)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return list(size[0])
    return list(size)


def _create(fn, size, dtype, placement, sbp, requires_grad):
    t = fn(_shape(size), dtype, placement, sbp)
    if requires_grad:
        t.requires_grad_(True)
    return t


def randn(*size, dtype=float32, placement=None, sbp=None, requires_grad=False):
    return _create(_globe.randn, size, dtype, placement, sbp, requires_grad)


def zeros(*size, dtype=float32, placement=None, sbp=None, requires_grad=False):
    return _create(_globe.zeros, size, dtype, placement, sbp, requires_grad)


def ones(*size, dtype=float32, placement=None, sbp=None, requires_grad=False):
    return _create(_globe.ones, size, dtype, placement, sbp, requires_grad)


def full(size, value, dtype=float32, placement=None, sbp=None, requires_grad=False):
    t = _globe.full(list(size) if isinstance(size, (list, tuple)) else [size], value, dtype, placement, sbp)
    return t.requires_grad_(True) if requires_grad else t


def tensor(data, dtype=None, requires_grad=False, placement=None, sbp=None):
    """A tensor from numpy data or (nested) Python numbers; with placement and sbp, this rank's
    `data` is its local tensor of a global one (as Tensor.to_global)."""
    a = _np.array(data)  # a copy, as torch.tensor makes (from_numpy shares)
    if dtype is not None:
        a = a.astype({float32: _np.float32, float64: _np.float64, int64: _np.int64}[dtype])
    elif a.dtype == _np.float64 and not isinstance(data, _np.ndarray):
        a = a.astype(_np.float32)  # Python floats make float32 tensors, as in PyTorch
    t = from_numpy(a)
    if placement is not None:
        t = t.to_global(placement=placement, sbp=sbp if sbp is not None else _broadcast)
    if requires_grad:
        t.requires_grad_(True)
    return t


def save(state, path, global_dst_rank=0):
    """flow.save(state_dict, path, global_dst_rank=R): collective; rank R writes one safetensors
    file with every tensor's whole value."""
    _globe.save(dict(state), str(path), global_dst_rank)


def load(path, global_src_rank=0):
    """flow.load(path, global_src_rank=R): collective; rank R reads the file, every rank gets a
    dict of global tensors (whole values on R) that load_state_dict lays out like its own."""
    return _globe.load(str(path), global_src_rank)


def _numpy_array(self, dtype=None):
    a = self.numpy()
    return a if dtype is None else a.astype(dtype)


Tensor.__array__ = _numpy_array
Tensor.__iter__ = lambda self: iter(self.numpy())
