"""Gradient recording on and off: `with globe.no_grad(): ...` records no graph inside."""
from . import _globe


class no_grad:  # noqa: N801  (torch / flow spelling)
    def __enter__(self):
        self._prev = _globe.grad_enabled()
        _globe.set_grad_enabled(False)

    def __exit__(self, *exc):
        _globe.set_grad_enabled(self._prev)
        return False
