"""Mixed precision's loss scaling, as torch.amp.GradScaler (C++ globe::optim::GradScaler).

    scaler = globe.amp.GradScaler()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)          # optional: before clip_grad_norm_
    scaler.step(opt)              # skipped on every rank when a gradient is inf or NaN
    scaler.update()

Needed with float16 compute (globe.nn.mixed_precision with param_dtype=globe.float16); bfloat16
has float32's range and trains without it."""
from . import _globe


class GradScaler:
    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._enabled = enabled
        self._cpp = _globe.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval)

    def is_enabled(self):
        return self._enabled

    def scale(self, loss):
        return self._cpp.scale(loss) if self._enabled else loss

    def unscale_(self, optimizer):
        if self._enabled:
            self._cpp.unscale(optimizer._cpp)

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step() unless a gradient overflowed (then nothing; returns None either way)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        optimizer._apply_lr()
        self._cpp.step(optimizer._cpp)
        return None

    def update(self):
        if self._enabled:
            self._cpp.update()

    def get_scale(self):
        return self._cpp.get_scale() if self._enabled else 1.0

    @property
    def steps_skipped(self):
        return self._cpp.steps_skipped
