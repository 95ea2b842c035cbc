"""Gradient recording on and off: `with globe.no_grad(): ...` records no graph inside;
`with globe.no_sync(): loss.backward()` accumulates data-parallel gradients without reducing them
(the last backward of the step, outside it, reduces the sum once: PyTorch DDP's no_sync)."""
from . import _globe


class no_grad:  # noqa: N801  (torch / flow spelling)
    def __enter__(self):
        self._prev = _globe.grad_enabled()
        _globe.set_grad_enabled(False)

    def __exit__(self, *exc):
        _globe.set_grad_enabled(self._prev)
        return False


class no_sync:  # noqa: N801  (DDP's spelling)
    def __enter__(self):
        self._guard = _globe._NoSyncGuard()

    def __exit__(self, *exc):
        del self._guard
        return False


set_grad_bucket_bytes = _globe.set_grad_bucket_bytes
grad_bucket_bytes = _globe.grad_bucket_bytes
