"""OneFlow's flow.utils.global_view: to_global / to_local over a tensor or any nesting of lists,
tuples and dicts of tensors (a batch, a model's outputs, a state dict); other leaves are returned as
they are."""
import functools
import types

from .. import env
from .._globe import Placement, Tensor


def _map(fn, x):
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a namedtuple
        return type(x)(*(_map(fn, v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_map(fn, v) for v in x)
    if isinstance(x, dict):
        return type(x)((k, _map(fn, v)) for k, v in x.items())
    return x


def _is_sbp_function(sbp):
    """OneFlow's get_sbp(input, tensor), as opposed to an SBP or a sequence of them."""
    return isinstance(sbp, (types.FunctionType, types.MethodType, functools.partial))


def to_global(input, placement=None, sbp=None, warn_on_non_tensor_leaf=True):  # noqa: A002, ARG001
    """Every tensor of `input` made global, as Tensor.to_global does (a global one re-laid out; a
    local one taken as this rank's piece). As in OneFlow:
      - `sbp` may be a function of (input, tensor) returning the tensor's SBP, for a state dict
        whose tensors want different layouts (OneFlow's get_sbp);
      - for global tensors `placement` or `sbp` may be left out: each tensor keeps its own.
    None is returned as None when the placement covers every rank (OneFlow's too). Where it does
    not, OneFlow sends the ranks outside it the structure of the others' input; Globe refuses that
    case, because flow.load(path, global_src_rank=R) already gives every rank global tensors, whose
    to_global needs no such step."""
    everywhere = placement is not None and sorted(placement.rank_list) == list(range(env.get_world_size()))
    if input is None and (placement is None or everywhere):
        return None  # OneFlow's: nothing to convert
    if input is None:
        raise ValueError("global_view.to_global: the input is None on this rank. To spread a state dict "
                         "that one rank loaded, load it with flow.load(path, global_src_rank=R) on every rank "
                         "(it returns global tensors everywhere), then call to_global on that")
    if placement is not None and not isinstance(placement, Placement):
        raise TypeError(f"global_view.to_global: placement= takes a globe.placement, not {type(placement).__name__}")

    def one(t):
        s = sbp(input, t) if _is_sbp_function(sbp) else sbp
        if not t.is_global and (placement is None or s is None):
            raise ValueError("global_view.to_global: a local tensor needs both placement= and sbp=")
        if placement is None and s is None:
            raise ValueError("global_view.to_global needs placement= or sbp= (or both)")
        return t.to_global(placement=placement if placement is not None else t.placement,
                           sbp=s if s is not None else t.sbp)

    return _map(one, input)


def to_local(input):  # noqa: A002
    """Every global tensor of `input` as this rank's local piece; local tensors unchanged."""
    return _map(lambda t: t.to_local() if t.is_global else t, input)
