"""Activation recomputation, torch.utils.checkpoint's spelling: `y = checkpoint(fn, x, ...)` keeps
none of fn's intermediate tensors; the backward runs fn again (with the random generator where the
forward found it, so dropout draws the same masks) and differentiates that. The gradients are the
bits of the plain run. What fn reads (its tensor arguments, the parameters of the modules it calls,
tensors it captured) is found by Globe, not listed. fn must return one tensor and compute the
same way when run again; a difference Globe can see (other ops, another parameter) is an error
naming the function. A module marked `module.to(nn.graph.GraphModule).activation_checkpointing =
True` (OneFlow's spelling) is called through this wherever it runs."""
from .. import _globe
from .._globe import Tensor


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):  # noqa: ARG001
    """function(*args, **kwargs), recomputed in the backward instead of stored. `use_reentrant`
    is accepted for torch's callers and changes nothing (Globe has one way); `preserve_rng_state`
    must stay True: a recomputation that draws other random numbers would give wrong gradients."""
    if not preserve_rng_state:
        raise ValueError("checkpoint: preserve_rng_state=False is not offered: Globe always replays the random "
                         "generator, so that the recomputed forward equals the first")
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]

    def region(tensors):
        full = list(args)
        for i, t in zip(positions, tensors):
            full[i] = t
        return function(*full, **kwargs)

    name = getattr(function, "__qualname__", None) or type(function).__name__
    return _globe.checkpoint(region, [args[i] for i in positions], name)
