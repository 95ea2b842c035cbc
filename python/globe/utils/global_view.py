"""OneFlow's flow.utils.global_view: to_global / to_local over a tensor or any nesting of lists,
tuples and dicts of tensors (a batch, a model's outputs); other leaves are returned as they are."""
from .._globe import Tensor


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


def to_global(input, placement=None, sbp=None, warn_on_non_tensor_leaf=True):  # noqa: A002, ARG001
    """Every tensor of `input` made global on `placement` with `sbp`, as Tensor.to_global does
    (a global one re-laid out; a local one taken as what Tensor.to_global takes it for)."""
    if placement is None or sbp is None:
        raise ValueError("global_view.to_global needs placement= and sbp=")
    return _map(lambda t: t.to_global(placement=placement, sbp=sbp), input)


def to_local(input):  # noqa: A002
    """Every global tensor of `input` as this rank's local piece; local tensors unchanged."""
    return _map(lambda t: t.to_local() if t.is_global else t, input)
