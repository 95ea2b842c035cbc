"""OneFlow's nn.Graph programs run and train as their eager editions do (python/globe/graph.py):
gradient accumulation, pipeline stages under both schedules, ZeRO, an lr scheduler. Run in one
process (python_unit) and on 2 and 4 ranks (python_global_npN); the pipeline cases need 2 ranks."""
import numpy as np
import pytest

import globe as flow
import globe.nn as nn

BROADCAST = [flow.sbp.broadcast]


def world():
    return flow.env.get_world_size()


def everywhere():
    return flow.placement("cpu", ranks=list(range(world())))


def value(t):
    """A tensor's whole value on every rank (a global one gathered from wherever it lives)."""
    if t.is_global:
        t = t.to_global(placement=everywhere(), sbp=flow.sbp.broadcast)
    return t.numpy()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def batch(n=8):
    flow.manual_seed(7)
    return flow.randn(n, 6), flow.randint(0, 3, (n,))


def test_schedule_orders_are_printable_data():
    assert flow.nn.graph.schedule_order("1f1b", 4, 2) == [("F", 0), ("F", 1), ("B", 0), ("F", 2), ("B", 1),
                                                          ("F", 3), ("B", 2), ("B", 3)]
    assert flow.nn.graph.schedule_order("gpipe", 2, 2) == [("F", 0), ("F", 1), ("B", 0), ("B", 1)]
    assert flow.nn.graph.schedule_order("1f1b", 3, 1) == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("F", 2),
                                                          ("B", 2)]


@pytest.mark.parametrize("steps", [1, 4])
def test_accumulation_trains_as_the_whole_batch_does(steps):
    """A graph with `steps` micro-batches against the eager program on the whole batch: the same
    losses (the micro-batches' mean) and weights, within float rounding; scheduler included."""
    def make():
        flow.manual_seed(0)
        m = Net()
        opt = flow.optim.SGD(m.parameters(), lr=0.2, momentum=0.5)
        return m, opt, flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    m1, opt1, sch1 = make()
    loss_fn = nn.CrossEntropyLoss()
    x, y = batch()
    eager = []
    for _ in range(5):
        loss = loss_fn(m1(x), y)
        loss.backward()
        opt1.step()
        opt1.zero_grad()
        sch1.step()
        eager.append(float(loss.numpy()))

    m2, opt2, sch2 = make()

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = m2
            self.loss_fn = loss_fn
            self.add_optimizer(opt2, lr_sch=sch2)
            self.config.set_gradient_accumulation_steps(steps)
            self.config.allow_fuse_add_to_output(True)  # a speed hint: accepted, no effect

        def build(self, x, y):
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss

    g = TrainGraph()
    graph = []
    for _ in range(5):
        out = g(x, y)
        assert list(out.shape) == ([] if steps == 1 else [steps])
        graph.append(float(out.numpy().mean()))
    np.testing.assert_allclose(graph, eager, rtol=2e-5)
    np.testing.assert_allclose(m2.fc1.weight.numpy(), m1.fc1.weight.numpy(), rtol=1e-4, atol=1e-6)
    assert opt2.param_groups[0]["lr"] == opt1.param_groups[0]["lr"] == 0.2 * 0.25
    assert m2.fc1.weight.grad is None  # the graph dropped its gradients after the step


def test_graph_state_dict_resumes_training_as_if_never_stopped():
    """OneFlow's Graph.state_dict / load_state_dict: the modules under their names, the train step,
    Adam's moments per parameter and the scheduler's position; a new graph that loads them trains on
    with the uninterrupted graph's losses to the bit, on any layout the model has, through a file."""
    p = everywhere()

    def make(seed):
        flow.manual_seed(seed)
        m = Net().to_global(placement=p, sbp=flow.sbp.broadcast)
        opt = flow.optim.Adam(m.parameters(), lr=0.05)
        sched = flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        class G(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = m
                self.add_optimizer(opt, lr_sch=sched)

            def build(self, x, y):
                loss = nn.CrossEntropyLoss()(self.model(x), y)
                loss.backward()
                return loss
        return G()

    x, y = batch(8 * world())
    x, y = x.to_global(placement=p, sbp=flow.sbp.split(0)), y.to_global(placement=p, sbp=flow.sbp.split(0))
    g = make(0)
    for _ in range(3):
        g(x, y)
    state = g.state_dict()
    assert list(state)[0] == "model" and sorted(state["model"]) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert value(state["System-Train-TrainStep"]).tolist() == [3]
    assert "model.fc1.weight-exp_avg" in state and "model.fc2.bias-exp_avg_sq" in state
    assert value(state["StepLR-0-last_epoch"]).tolist() == [3]
    path = "/tmp/globe-pytest-graph-state-%d.safetensors" % world()
    flow.save(state, path)  # nested: the modules' dict inside the graph's (one file)
    resumed = make(1)  # other initial weights: all of it must come from the saved state
    resumed.load_state_dict(flow.load(path))
    for _ in range(3):
        assert value(resumed(x, y)) == value(g(x, y))
    with pytest.raises(flow.Error, match=r"\[nn.Graph\] load_state_dict: the graph has no place for bogus"):
        make(2).load_state_dict({**state, "bogus": state["System-Train-TrainStep"]})


def test_graph_mistakes_are_errors_naming_them():
    class G(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.config.set_gradient_accumulation_steps(3)

        def build(self, x):
            return x

    with pytest.raises(flow.Error, match=r"input 0 has shape \[8, 6\]; dim 0 must divide by 3"):
        G()(flow.randn(8, 6))
    # Deterministic mode: micro-batches outside its rule (a power of two of them, 32 rows each, or
    # a multiple) would not give the whole batch's bits, so the graph refuses them.
    flow.use_deterministic_algorithms(True)
    try:
        with pytest.raises(flow.Error, match=r"\[nn.Graph\] deterministic mode: a batch of 96 rows in 3 micro-batches"):
            G()(flow.randn(96, 6))
    finally:
        flow.use_deterministic_algorithms(False)
    with pytest.raises(ValueError, match="expected an integer >= 1"):
        flow.nn.Graph().config.set_gradient_accumulation_steps(0)
    with pytest.raises(ValueError, match="enable_amp: dtype .*: float16 or bfloat16"):
        flow.nn.Graph().config.enable_amp(True, dtype=flow.float64)
    with pytest.raises(AttributeError, match="no 'set_gradient_acumulation_steps'"):
        flow.nn.Graph().config.set_gradient_acumulation_steps(2)
    with pytest.raises(ValueError, match=r"stage 4: .* and parameters \(3\)"):
        flow.nn.Graph().config.enable_zero(True, stage=4)
    m = Net()
    with pytest.raises(flow.Error, match="parameter fc1.weight of Net lives on local"):
        m.to(flow.nn.graph.GraphModule).set_stage(0, everywhere())


# OneFlow's pipeline tutorial program (two stages, to_global between them), cuda -> cpu.
class Stage0(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten, self.linear0, self.relu0 = nn.Flatten(), nn.Linear(16, 32), nn.ReLU()

    def forward(self, x):
        return self.relu0(self.linear0(self.flatten(x)))


class Stage1(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1, self.relu1, self.linear2 = nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10)

    def forward(self, x):
        return self.linear2(self.relu1(self.linear1(x)))


def placements():
    if world() < 2:
        pytest.skip("two pipeline stages need 2 ranks")
    half = world() // 2
    return flow.placement("cpu", ranks=list(range(half))), flow.placement("cpu", ranks=list(range(half, world())))


class PipelineModule(nn.Module):
    def __init__(self, p0, p1):
        super().__init__()
        self.p1 = p1
        self.m_stage0, self.m_stage1 = Stage0(), Stage1()
        self.m_stage0.to_global(placement=p0, sbp=BROADCAST)
        self.m_stage1.to_global(placement=p1, sbp=BROADCAST)

    def forward(self, x):
        return self.m_stage1(self.m_stage0(x).to_global(placement=self.p1, sbp=BROADCAST))


def pipeline_data(p0, p1):
    flow.manual_seed(3)
    x = flow.randn(8, 1, 4, 4).to_global(placement=p0, sbp=BROADCAST)
    y = flow.randint(0, 10, (8,)).to_global(placement=p1, sbp=BROADCAST)
    return x, y


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_oneflows_pipeline_program_trains_as_its_eager_edition(schedule):
    p0, p1 = placements()
    x, y = pipeline_data(p0, p1)
    loss_fn = nn.CrossEntropyLoss()

    flow.manual_seed(1)
    eager_model = PipelineModule(p0, p1)
    eager_sgd = flow.optim.SGD(eager_model.parameters(), lr=0.1)
    eager = []
    for _ in range(4):
        loss = loss_fn(eager_model(x), y)
        loss.backward()
        eager_sgd.step()
        eager_sgd.zero_grad()
        eager.append(float(value(loss)))

    flow.manual_seed(1)
    module_pipeline = PipelineModule(p0, p1)
    sgd = flow.optim.SGD(module_pipeline.parameters(), lr=0.1)

    class PipelineGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.module_pipeline = module_pipeline
            self.module_pipeline.m_stage0.to(nn.graph.GraphModule).set_stage(stage_id=0, placement=p0)
            self.module_pipeline.m_stage1.config.set_stage(stage_id=1, placement=p1)  # the older spelling
            self.loss_fn = flow.nn.CrossEntropyLoss()
            self.config.set_gradient_accumulation_steps(2)
            self.config.set_pipeline_schedule(schedule)
            self.add_optimizer(sgd)

        def build(self, x, y):
            out = self.module_pipeline(x)
            loss = self.loss_fn(out, y)
            loss.backward()
            return loss

    graph_pipeline = PipelineGraph()
    assert "stages=2" in repr(graph_pipeline)
    graph = [float(value(graph_pipeline(x, y)).mean()) for _ in range(4)]
    np.testing.assert_allclose(graph, eager, rtol=2e-5)
    assert eager[-1] < eager[0]


def test_zero_in_a_graph_trains_as_without_it():
    """config.enable_zero over data parallelism: the same losses as the graph without ZeRO."""
    if world() < 2:
        pytest.skip("ZeRO shards over 2 or more ranks")
    p = everywhere()

    def run(zero):
        flow.manual_seed(0)
        m = Net().to_global(placement=p, sbp=flow.sbp.broadcast)
        opt = flow.optim.Adam(m.parameters(), lr=0.01)

        class G(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.m = m
                self.add_optimizer(opt)
                self.config.set_gradient_accumulation_steps(2)
                if zero:
                    self.config.enable_zero(True, stage=3 if zero == 3 else 2)

            def build(self, x, y):
                loss = nn.CrossEntropyLoss()(self.m(x), y)
                loss.backward()
                return loss

        x, y = batch(8 * world())
        x, y = x.to_global(placement=p, sbp=flow.sbp.split(0)), y.to_global(placement=p, sbp=flow.sbp.split(0))
        g = G()
        losses = [value(g(x, y)) for _ in range(3)]
        return losses, opt.zero_stage

    plain, stage0 = run(False)
    zero, stage2 = run(True)
    assert (stage0, stage2) == (0, 2)
    np.testing.assert_allclose(zero, plain, rtol=1e-5)
    zero3, _ = run(3)
    np.testing.assert_allclose(zero3, plain, rtol=1e-5)


class DropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.drop, self.fc2 = nn.Linear(6, 16), nn.Dropout(0.3), nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.drop(flow.tanh(self.fc1(x))))


def test_activation_checkpointing_gives_the_same_bits():
    """utils.checkpoint and OneFlow's GraphModule mark: the recomputed forward (dropout on) gives
    the plain run's outputs and gradients to the bit, locally or data parallel over every rank."""
    from globe.utils.checkpoint import checkpoint

    def run(how):
        flow.manual_seed(0)
        m = DropNet()
        x, _ = batch(4 * world())
        if world() > 1:
            m = m.to_global(placement=everywhere(), sbp=flow.sbp.broadcast)
            x = x.to_global(placement=everywhere(), sbp=flow.sbp.split(0))
        if how == "graph-module":
            m.to(nn.graph.GraphModule).activation_checkpointing = True
        flow.manual_seed(5)
        y = checkpoint(m, x) if how == "function" else m(x)
        (y * y).sum().backward()
        return [value(y)] + [value(p.grad) for p in m.parameters()]

    plain = run("plain")
    for how in ("function", "graph-module"):
        for got, want in zip(run(how), plain):
            assert got.tobytes() == want.tobytes(), how


def test_activation_checkpointing_mistakes_are_errors():
    from globe.utils.checkpoint import checkpoint
    m = Net()
    x, _ = batch()
    calls = []

    def fickle(t):
        calls.append(1)
        if len(calls) > 1:
            raise ValueError("fickle: not again")
        return m(t)

    y = checkpoint(fickle, x.requires_grad_())
    with pytest.raises(ValueError, match="fickle: not again"):  # the Python exception, from the backward
        y.sum().backward()
    with pytest.raises(TypeError, match="must return one Tensor, not tuple"):
        checkpoint(lambda t: (m(t), t), x)
    with pytest.raises(ValueError, match="preserve_rng_state=False"):
        checkpoint(m, x, preserve_rng_state=False)


def test_fully_shard_trains_as_the_replicated_model():
    """nn.fully_shard on a Python-defined module (gathered around its whole forward) and on its
    layers (each gathers itself): the replicated run's losses, each rank holding its share."""
    p = everywhere()

    def run(how):
        flow.manual_seed(0)
        m = Net().to_global(placement=p, sbp=flow.sbp.broadcast)
        opt = flow.optim.Adam(m.parameters(), lr=0.01)  # made before: the parameters keep their identity
        if how == "module":
            nn.fully_shard(m)
        elif how and how.startswith("layers"):
            nn.fully_shard(m.fc1, reshard_after_forward=how != "layers kept")
            nn.fully_shard(m.fc2, reshard_after_forward=how != "layers kept")
            if how == "layers prefetched":
                nn.set_prefetch([m.fc1, m.fc2], depth=2)
        losses = []
        for step in range(3):
            x, y = batch(8 * world())
            x, y = x.to_global(placement=p, sbp=flow.sbp.split(0)), y.to_global(placement=p, sbp=flow.sbp.split(0))
            loss = nn.CrossEntropyLoss()(m(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            losses.append(value(loss))
        return losses, m

    plain, _ = run(None)
    for how in ("module", "layers"):
        losses, m = run(how)
        np.testing.assert_allclose(losses, plain, rtol=1e-5, err_msg=how)
        if world() > 1:
            assert m.fc1.weight.sbp == (flow.sbp.split(0),), how
    # Prefetch and kept copies move the gathers, not their values: the same bits.
    layers, _ = run("layers")
    for how in ("layers prefetched", "layers kept"):
        assert run(how)[0] == layers, how
    with pytest.raises(TypeError, match="expected a Module"):
        nn.fully_shard(3)
    with pytest.raises(TypeError, match="set_prefetch: expected Modules"):
        nn.set_prefetch([3], 1)
    with pytest.raises(Exception, match=r"\[fully_shard\] prefetch depth -1"):
        nn.set_prefetch([Net()], -1)


def test_mixed_precision_trains_close_to_float32():
    """nn.mixed_precision / fully_shard(mp_policy=...): bfloat16 compute, float32 master weights
    and gradients, the losses within bfloat16's reach of float32's."""
    p = everywhere()

    def run(how):
        flow.manual_seed(0)
        m = Net().to_global(placement=p, sbp=flow.sbp.broadcast)
        opt = flow.optim.Adam(m.parameters(), lr=0.01)
        if how == "mixed":
            nn.mixed_precision(m, nn.MixedPrecisionPolicy(param_dtype=flow.bfloat16))
        elif how == "sharded":
            nn.fully_shard(m, mp_policy=nn.MixedPrecisionPolicy())
        elif how == "float16":
            nn.mixed_precision(m, nn.MixedPrecisionPolicy(param_dtype=flow.float16))
        scaler = flow.amp.GradScaler(enabled=how == "float16")
        losses = []
        for step in range(3):
            x, y = batch(8 * world())
            x, y = x.to_global(placement=p, sbp=flow.sbp.split(0)), y.to_global(placement=p, sbp=flow.sbp.split(0))
            out = m(x)
            assert out.dtype == {None: flow.float32, "float16": flow.float16}.get(how, flow.bfloat16), how
            loss = nn.CrossEntropyLoss()(out.float(), y)
            scaler.scale(loss).backward()
            assert all(q.grad.dtype == flow.float32 for q in m.parameters()), how
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            losses.append(value(loss))
        assert all(q.dtype == flow.float32 for q in m.parameters()), how
        return losses

    plain = run(None)
    for how in ("mixed", "sharded", "float16"):
        losses = run(how)
        np.testing.assert_allclose(losses, plain, rtol=2e-2, err_msg=how)
        assert losses != plain, how  # bfloat16 did round
    with pytest.raises(TypeError, match="expected a Module"):
        nn.mixed_precision(3)
    with pytest.raises(flow.Error, match="master weights must be float32"):
        nn.mixed_precision(Net().to(flow.float64))


def test_graph_amp_trains_close_to_float32():
    """OneFlow's config.enable_amp (float16 by default, with set_grad_scaler; bfloat16 without):
    the graph's modules compute in 16 bits over float32 master weights, the losses within their
    reach of float32's."""
    p = everywhere()

    def run(dtype):
        flow.manual_seed(0)
        m = Net().to_global(placement=p, sbp=flow.sbp.broadcast)

        class G(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.m = m
                self.add_optimizer(flow.optim.Adam(m.parameters(), lr=0.01))
                if dtype is not None:
                    self.config.enable_amp(True, dtype=dtype)
                if dtype == flow.float16:
                    self.set_grad_scaler(flow.amp.GradScaler(init_scale=1024.0))

            def build(self, x, y):
                out = self.m(x)
                loss = nn.CrossEntropyLoss()(out.float(), y)
                loss.backward()
                return loss, out.dtype

        g, losses = G(), []
        for _ in range(3):
            x, y = batch(8 * world())
            loss, out_dtype = g(x.to_global(placement=p, sbp=flow.sbp.split(0)), y.to_global(placement=p, sbp=flow.sbp.split(0)))
            assert out_dtype == (dtype or flow.float32)
            losses.append(value(loss))
        assert all(q.dtype == flow.float32 for q in m.parameters())
        return losses

    plain = run(None)
    for dtype in (flow.bfloat16, flow.float16):
        losses = run(dtype)
        np.testing.assert_allclose(losses, plain, rtol=2e-2, err_msg=str(dtype))
        assert losses != plain, dtype  # 16 bits did round


def test_grad_scaler_skips_an_overflowing_step_on_every_rank():
    p = everywhere()
    flow.manual_seed(0)
    m = Net().to_global(placement=p, sbp=flow.sbp.broadcast)
    opt = flow.optim.SGD(m.parameters(), lr=0.1)
    scaler = flow.amp.GradScaler(init_scale=8.0)
    before = [value(q).copy() for q in m.parameters()]
    x, _ = batch(8 * world())
    scaler.scale(m(x.to_global(placement=p, sbp=flow.sbp.split(0))).sum() * float("inf")).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 4.0 and scaler.steps_skipped == 1
    for b, q in zip(before, m.parameters()):
        np.testing.assert_array_equal(value(q), b)
