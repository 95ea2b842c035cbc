"""OneFlow's nn.Graph over Globe's eager engine: a OneFlow program's Graph class runs unchanged.

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.model.stage0.to(flow.nn.graph.GraphModule).set_stage(0, P0)   # pipeline stages
            self.model.stage1.to(flow.nn.graph.GraphModule).set_stage(1, P1)
            self.config.set_gradient_accumulation_steps(4)                     # 4 micro-batches
            self.config.enable_zero(True, stage=2)                             # ZeRO
            self.add_optimizer(optimizer, lr_sch=scheduler)
        def build(self, x, y):
            loss = loss_fn(self.model(x), y)
            loss.backward()
            return loss

    loss = TrainGraph()(x, y)   # one training iteration

OneFlow compiles build() into a static graph; Globe runs it eagerly, which gives the same numbers:
- a call cuts every tensor argument into `gradient_accumulation_steps` micro-batches along dim 0
  and runs build() once per micro-batch; each loss.backward() inside is taken by the graph, scaled
  by 1/steps (the gradients average the micro-batches, as one batch's mean loss would) and run in
  the schedule's order: "1f1b" (default; stages - 1 forwards ahead, then one forward and one
  backward) or "gpipe" (every forward, then every backward), config.set_pipeline_schedule();
- with stages (set_stage), every rank runs the whole program and computes only the ops of its own
  placement (global tensors, docs/06-pipeline.md): a stage's forward of the next micro-batch
  overlaps the next stage's work on the one before. Every rank holds at most `stages` micro-batches'
  activations;
- a module marked `.to(GraphModule).activation_checkpointing = True` keeps none of its
  intermediate tensors: its forward runs again in the backward (globe.utils.checkpoint), giving
  the same gradients bit for bit;
- then each optimizer steps (its lr scheduler after it) and the gradients are dropped;
- the outputs are the micro-batches' outputs concatenated along dim 0 (scalars stacked), as
  OneFlow packs them; with one micro-batch, build()'s own outputs.
- config.enable_amp(True, dtype=flow.float16) marks the graph's modules for mixed precision
  (globe.nn.mixed_precision: float32 master weights, the forward in `dtype`), and
  set_grad_scaler(flow.amp.GradScaler(...)) scales each micro-batch's loss, unscales and skips a
  step whose gradients overflowed, as OneFlow's graph does;
- state_dict() / load_state_dict() in OneFlow's layout: each module under its attribute name, then
  "System-Train-TrainStep", each optimizer state tensor under "<parameter's name>-<state>" and each
  lr scheduler's position; a graph that loads them trains on as the saved one would have.
Hints that change speed, not values, in OneFlow (allow_fuse_*, enable_cudnn_*, ...) are accepted
and do nothing."""
from collections import OrderedDict

import numpy as _np

from . import tensor_methods
from ._globe import Error, Tensor
from . import _globe


class GraphModule:
    """A module's graph settings (OneFlow's `module.to(nn.graph.GraphModule)`, older spelling
    `module.config`): its pipeline stage."""

    def __init__(self, module):
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "stage_id", None)
        object.__setattr__(self, "placement", None)
        object.__setattr__(self, "activation_checkpointing", False)

    @staticmethod
    def of(module):
        g = module.__dict__.get("_graph_module")
        if g is None:
            g = GraphModule(module)
            object.__setattr__(module, "_graph_module", g)
        return g

    def set_stage(self, stage_id, placement=None):
        if not isinstance(stage_id, int) or stage_id < 0:
            raise ValueError(f"set_stage: stage_id must be an integer >= 0, got {stage_id!r}")
        if placement is not None:
            for name, p in self.module.named_parameters():
                if not p.is_global or p.placement != placement:
                    where = p.placement if p.is_global else "local"
                    raise Error(f"[nn.Graph] set_stage({stage_id}, {placement}): parameter {name} of "
                                f"{type(self.module).__name__} lives on {where}; place the module there first "
                                f"(module.to_global(placement=..., sbp=...)), before its optimizer is made")
        object.__setattr__(self, "stage_id", stage_id)
        object.__setattr__(self, "placement", placement)
        return self

    @property
    def config(self):  # `module.to(GraphModule).config.set_stage(...)` as well
        return self

    def __setattr__(self, name, value):
        if name not in ("stage_id", "activation_checkpointing"):
            raise AttributeError(f"GraphModule has no setting {name!r}")
        object.__setattr__(self, name, value)


# OneFlow's GraphConfig methods that tune speed or memory of its compiled graph, not the values.
_SPEED_HINTS = ("allow_fuse_add_to_output", "allow_fuse_model_update_ops", "allow_fuse_cast_scale",
                "enable_cudnn_conv_heuristic_search_algo", "enable_straighten_algorithm", "enable_compress_memory",
                "set_outputs_buffer_size", "enable_auto_parallel", "enable_multi_tensor_update",
                "enable_fused_model_update_cast", "enable_compiler")


class GraphConfig:
    def __init__(self):
        self.accumulation_steps = 1
        self.zero_stage = 0
        self.schedule = "1f1b"
        self.amp_dtype = None  # enable_amp: the dtype the modules compute in

    def set_gradient_accumulation_steps(self, value):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"set_gradient_accumulation_steps: expected an integer >= 1, got {value!r}")
        self.accumulation_steps = value

    def enable_zero(self, mode=True, *, stage=2, shard_min_size=1024, shard_restore_level=1):  # noqa: ARG002
        if stage not in (1, 2, 3):
            raise ValueError(f"enable_zero: stage {stage!r}: Globe shards optimizer state (1), gradients (2) and "
                             "parameters (3)")
        self.zero_stage = stage if mode else 0

    def enable_amp(self, mode=True, *, dtype=None):
        """OneFlow's automatic mixed precision: the graph's modules compute in `dtype` (float16 by
        default, as OneFlow's; bfloat16 too) over float32 master weights. float16 wants a loss scale:
        Graph.set_grad_scaler(flow.amp.GradScaler())."""
        dtype = _globe.dtype.float16 if dtype is None else dtype
        if mode and dtype not in (_globe.dtype.float16, _globe.dtype.bfloat16):
            raise ValueError(f"enable_amp: dtype {dtype}: float16 or bfloat16")
        self.amp_dtype = dtype if mode else None

    def set_pipeline_schedule(self, schedule):
        """Globe's: the order of the micro-batches' forwards and backwards, "1f1b" or "gpipe"."""
        if schedule not in ("1f1b", "gpipe"):
            raise ValueError(f"set_pipeline_schedule: '1f1b' or 'gpipe', got {schedule!r}")
        self.schedule = schedule

    def __getattr__(self, name):
        if name in _SPEED_HINTS:
            return lambda *args, **kwargs: None
        raise AttributeError(f"nn.Graph config has no {name!r}")


def schedule_order(schedule, microbatches, stages):
    """[("F", i) | ("B", i)]: the forwards and backwards of the micro-batches, in the order run."""
    ahead = microbatches if schedule == "gpipe" else min(max(stages - 1, 0), microbatches)
    order = [("F", i) for i in range(ahead)]
    for i in range(microbatches - ahead):
        order += [("F", ahead + i), ("B", i)]
    return order + [("B", i) for i in range(microbatches - ahead, microbatches)]


def _micro_batches(args, n):
    """Every tensor argument cut into n equal pieces along dim 0; other arguments repeated."""
    pieces = []
    for k, a in enumerate(args):
        if not isinstance(a, Tensor):
            pieces.append([a] * n)
            continue
        if a.dim() == 0 or a.shape[0] % n != 0:
            raise Error(f"[nn.Graph] gradient accumulation over {n} micro-batches: input {k} has shape "
                        f"{list(a.shape)}; dim 0 must divide by {n}")
        _globe.check_microbatches("nn.Graph", a.shape[0], n)  # deterministic mode: the batch's bits, or an error
        m = a.shape[0] // n
        pieces.append([_globe.narrow(a, 0, i * m, m) for i in range(n)])
    return [[p[i] for p in pieces] for i in range(n)]


def _pack(outputs):
    """The micro-batches' outputs as one: tensors concatenated along dim 0 (scalars stacked)."""
    first = outputs[0]
    if isinstance(first, Tensor):
        parts = [_globe.unsqueeze(o, 0) if o.dim() == 0 else o for o in outputs]
        return _globe.cat(parts, 0)
    if isinstance(first, (tuple, list)):
        return type(first)(_pack([o[i] for o in outputs]) for i in range(len(first)))
    if isinstance(first, dict):
        return {k: _pack([o[k] for o in outputs]) for k in first}
    return first


class Graph:
    def __init__(self):
        self.config = GraphConfig()
        self._optimizers = []  # (optimizer, lr scheduler or None)
        self._grad_scaler = None
        self._prepared = False
        self._train_steps = 0  # calls that stepped the optimizers: state_dict's "System-Train-TrainStep"
        self.name = type(self).__name__

    def build(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.build")

    def add_optimizer(self, optimizer, *, lr_sch=None, is_sparse=False):
        if is_sparse:
            raise NotImplementedError("nn.Graph add_optimizer(is_sparse=True): no sparse updates in Globe")
        if lr_sch is not None and lr_sch.optimizer is not optimizer:
            raise ValueError("nn.Graph add_optimizer: lr_sch schedules another optimizer")
        self._optimizers.append((optimizer, lr_sch))

    def set_grad_scaler(self, grad_scaler=None):
        """OneFlow's loss scaling for float16: each micro-batch's loss is scaled before its
        backward; at the step the gradients are unscaled, a step whose gradients hold inf or NaN is
        skipped on every rank, and the scale is updated (flow.amp.GradScaler)."""
        self._grad_scaler = grad_scaler

    # ---- state: OneFlow's layout of the dictionary ----
    def _modules(self):
        from . import nn  # noqa: PLC0415  (nn imports this module)
        return [(name, value) for name, value in vars(self).items() if isinstance(value, nn.Module)]

    def _state_keys(self):
        """Per optimizer, each parameter's key prefix in the graph's state: its dotted name under the
        graph's module attribute (a parameter of no graph module: "optimizer<i>.param<j>")."""
        names = {}
        for attr, module in self._modules():
            for name, p in module.named_parameters():
                names.setdefault(p._impl_id, f"{attr}.{name}")
        return [[names.get(p._impl_id, f"optimizer{i}.param{j}")
                 for j, p in enumerate(q for g in opt.param_groups for q in g["params"])]
                for i, (opt, _) in enumerate(self._optimizers)]

    def state_dict(self):
        """OneFlow's Graph.state_dict: each module of the graph under its attribute name (its own
        state_dict), then the graph's other state as tensors: "System-Train-TrainStep" (the steps
        taken, int64 [1]), each optimizer state tensor as "<parameter's name>-<state>" (for example
        "model.fc.weight-exp_avg") and each lr scheduler's position as "<its class>-<i>-last_epoch"."""
        out = OrderedDict((name, module.state_dict()) for name, module in self._modules())
        out["System-Train-TrainStep"] = _globe.from_numpy(_np.array([self._train_steps], dtype=_np.int64))
        for (opt, _), keys in zip(self._optimizers, self._state_keys()):
            for key, t in opt.state_dict().items():
                _, j, what = key.split(".", 2)  # "state.<j>.<name>"
                out[f"{keys[int(j)]}-{what}"] = t
        for i, (_, sched) in enumerate(self._optimizers):
            if sched is not None:
                out[f"{type(sched).__name__}-{i}-last_epoch"] = _globe.from_numpy(
                    _np.array([sched.last_epoch], dtype=_np.int64))
        return out

    def load_state_dict(self, state, strict=True):
        """Puts a Graph.state_dict() back: each module's entry into that module (load_state_dict),
        the steps, optimizer state and scheduler positions into theirs. With strict, a key this graph
        has no place for is an error naming it, and nothing is loaded."""
        modules = dict(self._modules())
        keys = self._state_keys()
        owner = {f"{k}-": (i, j) for i, ks in enumerate(keys) for j, k in enumerate(ks)}
        per_opt = [{} for _ in self._optimizers]
        scheds = {f"{type(sched).__name__}-{i}-last_epoch": sched
                  for i, (_, sched) in enumerate(self._optimizers) if sched is not None}
        unexpected, steps, positions = [], None, {}
        for name, item in state.items():
            if name in modules:
                continue
            if name == "System-Train-TrainStep":
                steps = int(item.numpy().reshape(-1)[0])
            elif name in scheds:
                positions[name] = int(item.numpy().reshape(-1)[0])
            else:
                prefix = next((p for p in owner if name.startswith(p)), None)
                if prefix is None:
                    unexpected.append(name)
                else:
                    i, j = owner[prefix]
                    per_opt[i][f"state.{j}.{name[len(prefix):]}"] = item
        if strict and unexpected:
            raise Error(f"[nn.Graph] load_state_dict: the graph has no place for {', '.join(sorted(unexpected))} "
                        f"(its modules: {', '.join(modules) or 'none'})")
        for name, module in modules.items():
            if name in state:
                module.load_state_dict(state[name], strict)
            elif strict:
                raise Error(f"[nn.Graph] load_state_dict: no state for the graph's module {name!r}")
        for (opt, _), sd in zip(self._optimizers, per_opt):
            if sd:
                opt.load_state_dict(sd)
        for name, position in positions.items():
            scheds[name].step(position)  # its position, and the learning rate it gives there
        if steps is not None:
            self._train_steps = steps

    def debug(self, *args, **kwargs):  # OneFlow prints its compilation; nothing is compiled here
        pass

    def _stages(self):
        """How many pipeline stages the graph's modules were given (1 without set_stage)."""
        from . import nn  # noqa: PLC0415  (nn imports this module)
        ids = set()
        for value in list(vars(self).values()):
            if isinstance(value, nn.Module):
                for m in value.modules():
                    g = m.__dict__.get("_graph_module")
                    if g is not None and g.stage_id is not None:
                        ids.add(g.stage_id)
        return max(ids) + 1 if ids else 1

    def __call__(self, *args):
        if not self._prepared:
            for opt, _ in self._optimizers:
                if self.config.zero_stage:
                    opt.set_zero_stage(min(self.config.zero_stage, 2))
            if self.config.zero_stage == 3:  # every layer with global parameters, fully sharded in place
                from . import nn  # noqa: PLC0415  (nn imports this module)
                for value in list(vars(self).values()):
                    if isinstance(value, nn.Module):
                        for m in value.modules():
                            if isinstance(m, nn._CppLayer) and any(p.is_global for _, p in m.named_parameters()):
                                nn.fully_shard(m)
            if self.config.amp_dtype is not None:  # enable_amp: every module of the graph computes in it
                from . import nn  # noqa: PLC0415
                for value in list(vars(self).values()):
                    if isinstance(value, nn.Module):
                        nn.mixed_precision(value, nn.MixedPrecisionPolicy(param_dtype=self.config.amp_dtype))
            self._prepared = True
        n = self.config.accumulation_steps
        batches = _micro_batches(args, n) if n > 1 else [list(args)]
        for opt, _ in self._optimizers:
            opt.zero_grad()
        losses, outputs = {}, [None] * len(batches)

        scaler = self._grad_scaler

        def take(loss):
            loss = loss if n == 1 else loss * (1.0 / n)
            losses[current] = scaler.scale(loss) if scaler is not None else loss

        saved = tensor_methods.backward_hook
        tensor_methods.backward_hook = take
        try:
            for action, i in schedule_order(self.config.schedule, len(batches), self._stages()):
                if action == "F":
                    current = i
                    outputs[i] = self.build(*batches[i])
                elif i in losses:
                    tensor_methods.backward_hook = None
                    losses.pop(i).backward()
                    tensor_methods.backward_hook = take
        finally:
            tensor_methods.backward_hook = saved
        for opt, sched in self._optimizers:
            if scaler is not None:
                scaler.step(opt)  # unscales; skipped where a gradient overflowed
            else:
                opt.step()
            if sched is not None:
                sched.step()
            opt.zero_grad()
        if scaler is not None:
            scaler.update()
        if self._optimizers:
            self._train_steps += 1
        return outputs[0] if n == 1 else _pack(outputs)

    def __repr__(self):
        return f"{self.name}(accumulation_steps={self.config.accumulation_steps}, stages={self._stages()}, " \
               f"schedule={self.config.schedule!r}, optimizers={len(self._optimizers)})"
