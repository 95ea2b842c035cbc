"""Learning-rate schedulers (flow.optim.lr_scheduler / torch.optim.lr_scheduler): each sets its
optimizer's param_groups' "lr" at construction (epoch 0) and at every step().

Every schedule here is in closed form, lr = f(group's base lr, epoch), so a scheduler restored from its
state_dict, or stepped by another one (WarmupLR, SequentialLR), gives the same values as one that
ran from the start. torch's CosineAnnealingLR is recursive; as long as nothing else changes the lr
its values are this closed form's."""
import bisect
import math


class LRScheduler:
    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        elif any("initial_lr" not in g for g in optimizer.param_groups):
            raise KeyError("param_groups have no 'initial_lr': resuming a schedule (last_epoch != -1) needs the "
                           "optimizer a scheduler was constructed with")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, group, epoch):
        """The learning rate of parameter group `group` at `epoch`."""
        raise NotImplementedError

    def get_lr(self):
        return [self.lr_at(i, self.last_epoch) for i in range(len(self.base_lrs))]

    def step(self, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        self._last_lr = self.get_lr()
        for g, lr in zip(self.optimizer.param_groups, self._last_lr):
            g["lr"] = lr

    def get_last_lr(self):
        return list(self._last_lr)

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state):
        self.__dict__.update(state)


_LRScheduler = LRScheduler  # the name older torch and OneFlow code subclasses


class StepLR(LRScheduler):
    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        return self.base_lrs[group] * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        return self.base_lrs[group] * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ExponentialLR(LRScheduler):
    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        return self.base_lrs[group] * self.gamma ** epoch


class CosineAnnealingLR(LRScheduler):
    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        base = self.base_lrs[group]
        return self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2


class CosineDecayLR(LRScheduler):
    """OneFlow's: a cosine from the base lr down to alpha x base at decay_steps, then flat."""

    def __init__(self, optimizer, decay_steps, alpha=0.0, last_epoch=-1):
        self.decay_steps, self.alpha = decay_steps, alpha
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        cosine = 0.5 * (1 + math.cos(math.pi * min(epoch, self.decay_steps) / self.decay_steps))
        return self.base_lrs[group] * ((1 - self.alpha) * cosine + self.alpha)


class LambdaLR(LRScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * n
        if len(self.lr_lambdas) != n:
            raise ValueError(f"LambdaLR: {len(self.lr_lambdas)} lr_lambdas for {n} parameter groups")
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        return self.base_lrs[group] * self.lr_lambdas[group](epoch)

    def state_dict(self):
        return {k: v for k, v in super().state_dict().items() if k != "lr_lambdas"}


class LinearLR(LRScheduler):
    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1):
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        t = min(epoch, self.total_iters) / self.total_iters
        return self.base_lrs[group] * (self.start_factor + (self.end_factor - self.start_factor) * t)


class ConstantLR(LRScheduler):
    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        return self.base_lrs[group] * (self.factor if epoch < self.total_iters else 1.0)


class WarmupLR(LRScheduler):
    """OneFlow's: for the first warmup_iters steps the lr is scaled by a warm-up factor (linear from
    warmup_factor to 1, or constant warmup_factor); the schedule wrapped (a scheduler, or none when
    given an optimizer) gives the lr it scales: at the same step, or with warmup_prefix, counted
    from the end of the warm-up."""

    def __init__(self, scheduler, warmup_factor=1.0 / 3, warmup_iters=5, warmup_method="linear",
                 warmup_prefix=False, last_epoch=-1):
        if warmup_method not in ("linear", "constant"):
            raise ValueError(f"WarmupLR: warmup_method must be 'linear' or 'constant', got {warmup_method!r}")
        self.inner = scheduler if isinstance(scheduler, LRScheduler) else None
        optimizer = scheduler.optimizer if self.inner is not None else scheduler
        self.warmup_factor, self.warmup_iters = warmup_factor, warmup_iters
        self.warmup_method, self.warmup_prefix = warmup_method, warmup_prefix
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        inner_epoch = max(0, epoch - self.warmup_iters) if self.warmup_prefix else epoch
        lr = self.inner.lr_at(group, inner_epoch) if self.inner is not None else self.base_lrs[group]
        if epoch >= self.warmup_iters:
            return lr
        if self.warmup_method == "constant":
            return lr * self.warmup_factor
        t = epoch / self.warmup_iters
        return lr * (self.warmup_factor * (1 - t) + t)

    def state_dict(self):
        s = {k: v for k, v in super().state_dict().items() if k != "inner"}
        if self.inner is not None:
            s["inner"] = self.inner.state_dict()
        return s

    def load_state_dict(self, state):
        state = dict(state)
        inner = state.pop("inner", None)
        if inner is not None and self.inner is not None:
            self.inner.load_state_dict(inner)
        super().load_state_dict(state)


class SequentialLR(LRScheduler):
    """schedulers[i] from milestones[i-1] on, each counting its epochs from its own start."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: {len(schedulers)} schedulers need {len(schedulers) - 1} milestones, "
                             f"got {len(milestones)}")
        self.schedulers, self.milestones = list(schedulers), list(milestones)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, group, epoch):
        i = bisect.bisect_right(self.milestones, epoch)
        return self.schedulers[i].lr_at(group, epoch - (self.milestones[i - 1] if i else 0))

    def state_dict(self):
        s = {k: v for k, v in super().state_dict().items() if k != "schedulers"}
        s["schedulers"] = [x.state_dict() for x in self.schedulers]
        return s

    def load_state_dict(self, state):
        state = dict(state)
        for x, sd in zip(self.schedulers, state.pop("schedulers", [])):
            x.load_state_dict(sd)
        super().load_state_dict(state)
