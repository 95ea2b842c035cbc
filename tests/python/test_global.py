"""The Python front end on several ranks (run under globe-launch, every rank runs every test):
placements and SBPs in OneFlow's spelling, boxing values, module.to_global keeping parameters,
collective save/load with global_dst_rank / global_src_rank."""
import numpy as np
import pytest

import globe as flow
import globe.nn as nn

RANK, WORLD = flow.env.get_rank(), flow.env.get_world_size()


def all_ranks():
    return flow.placement("cpu", ranks=list(range(WORLD)))


def test_placement_spelling():
    p = all_ranks()
    assert p.ranks.tolist() == list(range(WORLD)) and p.mesh_shape == [WORLD]  # a numpy array, as OneFlow's
    if WORLD == 4:
        mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
        assert mesh.mesh_shape == [2, 2] and mesh.ranks.tolist() == [[0, 1], [2, 3]]
        assert mesh == flow.placement("cpu", ranks=np.arange(4).reshape(2, 2))
    assert repr(flow.sbp.split(1)) == "sbp.split(1)"


def test_boxing_gives_the_whole_value():
    flow.manual_seed(5)
    whole = flow.randn(8, 6)  # the same on every rank (same seed)
    x = flow.from_full(whole, all_ranks(), flow.sbp.split(0))
    assert x.is_global and x.shape == (8, 6) and x.to_local().shape == (8 // WORLD, 6)
    np.testing.assert_array_equal(x.numpy(), whole.numpy())  # numpy() of a global tensor: the whole value
    b = x.to_global(sbp=flow.sbp.broadcast)
    np.testing.assert_array_equal(b.to_local().numpy(), whole.numpy())
    s1 = x.to_global(sbp=flow.sbp.split(1))
    np.testing.assert_array_equal(s1.numpy(), whole.numpy())
    # local data as a partial sum: every rank holds rank + 1
    terms = flow.tensor(np.full((2, 2), RANK + 1, dtype=np.float32)).to_global(placement=all_ranks(),
                                                                            sbp=flow.sbp.partial_sum)
    np.testing.assert_array_equal(terms.numpy(), np.full((2, 2), WORLD * (WORLD + 1) / 2))


def test_deterministic_algorithms_give_the_single_process_bits():
    flow.manual_seed(6)
    a, b = flow.randn(4, 32), flow.randn(32, 3)
    flow.use_deterministic_algorithms(True)
    try:
        assert flow.are_deterministic_algorithms_enabled()
        want = flow.matmul(a, b).numpy()
        got = flow.matmul(flow.from_full(a, all_ranks(), flow.sbp.split(1)), flow.from_full(b, all_ranks(), flow.sbp.split(0)))
        assert got.numpy().tobytes() == want.tobytes()  # bit for bit, on any world size the mode covers
    finally:
        flow.use_deterministic_algorithms(False)
    assert not flow.are_deterministic_algorithms_enabled()


def test_to_global_keeps_parameters_for_the_optimizer():
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    before = model.parameters()
    opt = flow.optim.SGD(model.parameters(), lr=0.1)  # made before to_global
    model.to_global(placement=all_ranks(), sbp=flow.sbp.broadcast)
    assert all(a.same(b) for a, b in zip(before, model.parameters()))
    assert all(p.is_global for p in model.parameters())
    x = flow.randn(8, 4, placement=all_ranks(), sbp=flow.sbp.split(0))
    y = flow.randn(8, 2, placement=all_ranks(), sbp=flow.sbp.split(0))
    losses = []
    for _ in range(5):
        loss = flow.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_save_on_one_rank_load_on_another(tmp_path_factory):
    path = "/tmp/globe-pytest-save-%d.safetensors" % WORLD
    flow.manual_seed(1)
    model = nn.Linear(6, 4)
    model.to_global(placement=all_ranks(), sbp=flow.sbp.broadcast)
    flow.save(model.state_dict(), path, global_dst_rank=0)
    flow.manual_seed(2)
    other = nn.Linear(6, 4)
    other.to_global(placement=all_ranks(), sbp=flow.sbp.broadcast)
    other.load_state_dict(flow.load(path, global_src_rank=WORLD - 1))
    for (_, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_save_keeps_a_nested_checkpoint_in_one_file():
    """flow.save of a dict nesting the model's and the optimizer's state dicts with plain values
    (OneFlow's and torch's usual checkpoint): one safetensors file whose tensors are named by key
    path, the nesting and the other values back as saved, the states loading into a new model."""
    import json
    import struct
    path = "/tmp/globe-pytest-nested-%d.safetensors" % WORLD
    flow.manual_seed(1)
    model = nn.Linear(6, 4)
    model.to_global(placement=all_ranks(), sbp=flow.sbp.split(0))
    opt = flow.optim.Adam(model.parameters(), lr=0.01)
    flow.sum(model(flow.randn(3, 6, placement=all_ranks(), sbp=flow.sbp.broadcast))).backward()
    opt.step()
    flow.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
               "history": [0.5, (1, "two", None)], "by_step": {10: True}}, path, global_dst_rank=0)
    with open(path, "rb") as f:  # any safetensors reader sees the tensors under their key paths
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    assert {"model.weight", "model.bias", "optimizer.state.0.exp_avg"} <= set(header), sorted(header)
    back = flow.load(path, global_src_rank=WORLD - 1)
    assert back["epoch"] == 3 and back["history"] == [0.5, (1, "two", None)] and back["by_step"] == {10: True}
    flow.manual_seed(2)
    other = nn.Linear(6, 4)
    other.to_global(placement=all_ranks(), sbp=flow.sbp.split(0))
    other.load_state_dict(back["model"])
    other_opt = flow.optim.Adam(other.parameters(), lr=0.01)
    other_opt.load_state_dict(back["optimizer"])
    for (_, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for key, value in opt.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), other_opt.state_dict()[key].numpy())
    with pytest.raises(TypeError, match=r"flow.save: cannot store a set at extra"):
        flow.save({"model": model.state_dict(), "extra": {1, 2}}, path)


def test_sharded_checkpoint_reshards_into_another_layout():
    path = "/tmp/globe-pytest-sharded-%d" % WORLD
    flow.manual_seed(1)
    model = nn.Linear(6, 4)
    model.to_global(placement=all_ranks(), sbp=flow.sbp.broadcast)
    model.to_global(placement=all_ranks(), sbp=flow.sbp.split(0))  # each rank its rows
    flow.save_sharded(model.state_dict(), path)
    flow.manual_seed(2)
    other = nn.Linear(6, 4)
    other.to_global(placement=all_ranks(), sbp=flow.sbp.broadcast)
    other.load_state_dict(flow.load_sharded(path, other.state_dict()))
    assert other.weight.sbp == (flow.sbp.broadcast,)
    for (_, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert sorted(flow.load_sharded(path)) == ["bias", "weight"]


def test_mixing_local_and_global_is_an_error_on_every_rank():
    x = flow.randn(4, 4, placement=all_ranks(), sbp=flow.sbp.split(0))
    with pytest.raises(flow.Error, match="mixes local and global"):
        flow.add(x, flow.randn(4, 4))


def test_no_sync_accumulates_and_reduces_once():
    """Two backward calls, the first under no_sync, give twice the gradient of one; so do two
    without it (one reduction each). Tiny buckets: a reduction per gradient, started in backward."""
    flow.manual_seed(3)
    x = flow.randn(8, 4, placement=all_ranks(), sbp=flow.sbp.split(0))
    grads = []
    old = flow.grad_bucket_bytes()
    flow.set_grad_bucket_bytes(1)
    try:
        for calls in (1, 2, 2):
            flow.manual_seed(0)
            fc = nn.Linear(4, 3)
            fc.to_global(placement=all_ranks(), sbp=flow.sbp.broadcast)
            for k in range(calls):
                if calls == 2 and k == 0 and len(grads) == 1:
                    with flow.no_sync():
                        flow.sum(fc(x)).backward()
                else:
                    flow.sum(fc(x)).backward()
            grads.append(fc.weight.grad.numpy())
    finally:
        flow.set_grad_bucket_bytes(old)
    np.testing.assert_allclose(grads[1], 2 * grads[0], rtol=1e-6)
    np.testing.assert_allclose(grads[2], 2 * grads[0], rtol=1e-6)


def test_tensor_with_placement_takes_data_as_the_whole_value():
    # OneFlow's flow.tensor(data, placement=, sbp=): `data` is the whole value (rank 0's, broadcast),
    # each rank keeps its block. Rank-dependent data shows whose value wins.
    data = np.arange(64, dtype=np.float32).reshape(8, 8) + 1000 * RANK
    x = flow.tensor(data, placement=all_ranks(), sbp=flow.sbp.split(0))
    assert x.shape == (8, 8) and x.to_local().shape == (8 // WORLD, 8)
    whole = np.arange(64, dtype=np.float32).reshape(8, 8)
    np.testing.assert_array_equal(x.numpy(), whole)
    np.testing.assert_array_equal(x.to_local().numpy(), np.split(whole, WORLD)[RANK])
    b = flow.tensor(data, placement=all_ranks(), sbp=flow.sbp.broadcast)
    np.testing.assert_array_equal(b.to_local().numpy(), whole)
    # The pieces spelling: each rank's data is its piece.
    pieces = flow.local_to_global(data, all_ranks(), flow.sbp.split(0))
    assert pieces.shape == (8 * WORLD, 8)
    np.testing.assert_array_equal(pieces.to_local().numpy(), data)
    with pytest.raises(flow.Error, match=r"\[tensor\] sbp= needs placement="):
        flow.tensor(data, sbp=flow.sbp.split(0))
    if WORLD == 4:  # an N-D placement: the whole value broadcast on every mesh axis first
        mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
        for sbp in [[flow.sbp.split(0), flow.sbp.split(1)], [flow.sbp.broadcast, flow.sbp.split(0)]]:
            np.testing.assert_array_equal(flow.tensor(data, placement=mesh, sbp=sbp).numpy(), whole)


def test_seeded_local_streams_agree_on_every_rank():
    # After manual_seed every rank draws the same local stream; a broadcast layout takes rank 0's
    # values either way, so a data-parallel model starts replicated.
    flow.manual_seed(9)
    mine = flow.randn(4)
    pieces = flow.local_to_global(flow.unsqueeze(mine, 0), all_ranks(), flow.sbp.split(0)).numpy()
    for r in range(WORLD):
        np.testing.assert_array_equal(pieces[r], mine.numpy())


def test_ddp_over_local_batches_trains_as_one_model_on_the_whole_batch():
    """A DDP program: a local model and each rank's own batch; the result equals one model trained
    on every rank's batch together (the gradient is the ranks' average)."""
    n, r = flow.env.get_world_size(), flow.env.get_rank()
    flow.manual_seed(5)
    whole_x, whole_y = flow.randn(4 * n, 3), flow.randn(4 * n, 2)
    mine_x, mine_y = whole_x[4 * r:4 * r + 4], whole_y[4 * r:4 * r + 4]

    flow.manual_seed(2)
    ref = nn.Linear(3, 2)  # local, the same on every rank
    ref_opt = flow.optim.SGD(ref.parameters(), lr=0.1)
    flow.manual_seed(2)
    model = nn.Linear(3, 2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)  # made before wrapping: DDP keeps the parameters
    from globe.nn.parallel import DistributedDataParallel as ddp
    assert ddp(model) is model  # OneFlow's DDP changes the module in place
    for _ in range(3):
        out = model(mine_x)
        assert out.is_local and list(out.shape) == [4, 2]
        loss = nn.MSELoss()(out, mine_y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        ref_loss = nn.MSELoss()(ref(whole_x), whole_y)
        ref_loss.backward()
        ref_opt.step()
        ref_opt.zero_grad()
    np.testing.assert_allclose(model.weight.numpy(), ref.weight.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.bias.numpy(), ref.bias.numpy(), rtol=1e-5, atol=1e-6)


def test_a_global_module_and_ddp_follow_the_device_they_are_given():
    """module.to("sim") and tensor.to("sim") on global tensors keep the ranks and SBP and take the
    sim kind for the placement (OneFlow's); DDP of a module on the sim device lays it out there
    and computes what the CPU computes."""
    flow.manual_seed(4)
    m = nn.Linear(3, 2).to_global(placement=all_ranks(), sbp=flow.sbp.broadcast)
    w = m.weight.numpy()
    m.to("sim")
    for p in m.parameters():
        assert p.placement.type == "sim" and p.placement.rank_list == all_ranks().rank_list
        assert p.sbp == (flow.sbp.broadcast,)
    np.testing.assert_array_equal(m.weight.numpy(), w)
    t = flow.randn(4, 3).to_global(placement=all_ranks(), sbp=flow.sbp.split(0)).to("sim")
    assert t.placement.type == "sim" and t.sbp == (flow.sbp.split(0),)

    flow.manual_seed(6)
    ref = nn.Linear(3, 2)
    flow.manual_seed(6)
    model = nn.Linear(3, 2).to("sim")
    from globe.nn.parallel import DistributedDataParallel as ddp
    ddp(model)
    assert model.weight.placement.type == "sim"
    x = flow.randn(2, 3)
    out = model(x.to("sim"))
    assert str(out.device).startswith("sim")
    np.testing.assert_allclose(out.numpy(), ref(x).numpy(), rtol=1e-6, atol=1e-7)


def test_oneflows_ddp_train_program_runs():
    """OneFlow's ddp_train.py (its DDP chapter), "cuda" -> "cpu": attributes of the wrapped model,
    a Parameter, a summed loss, each rank its own data; w against the average-gradient update."""
    from globe.nn.parallel import DistributedDataParallel as ddp
    n, r = flow.env.get_world_size(), flow.env.get_rank()
    xs = [np.array([[1, 2], [2, 3]], np.float32) + k for k in range(n)]
    ys = [np.array([[8], [13]], np.float32) * (k + 1) for k in range(n)]
    train_x = [flow.tensor(x, dtype=flow.float32) for x in xs]
    train_y = [flow.tensor(y, dtype=flow.float32) for y in ys]

    class Model(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.lr = 0.001
            self.iter_count = 20
            self.w = flow.nn.Parameter(flow.tensor([[0], [0]], dtype=flow.float32))

        def forward(self, x):
            return flow.matmul(x, self.w)

    m = Model().to("cpu")
    m = ddp(m)
    loss = flow.nn.MSELoss(reduction="sum")
    optimizer = flow.optim.SGD(m.parameters(), m.lr)
    for _ in range(m.iter_count):
        x, y = train_x[r].to("cpu"), train_y[r].to("cpu")
        l = loss(m(x), y)  # noqa: E741  (the program's name)
        optimizer.zero_grad()
        l.backward()
        optimizer.step()
    w = np.zeros((2, 1), np.float64)
    for _ in range(20):
        grad = sum(2 * x.T @ (x @ w - y) for x, y in zip(xs, ys)) / n
        w -= 0.001 * grad
    np.testing.assert_allclose(m.w.numpy(), w, rtol=1e-4)


def test_distributed_sampler_gives_each_rank_its_share():
    from globe.utils.data import DataLoader, DistributedSampler, TensorDataset
    n, r = flow.env.get_world_size(), flow.env.get_rank()
    data = TensorDataset(flow.tensor(np.arange(10, dtype=np.float32)), flow.tensor(np.arange(10)))
    sampler = DistributedSampler(data, shuffle=True, seed=3)
    per_rank = -(-10 // n)
    assert len(sampler) == per_rank
    mine = list(sampler)
    # Every rank's share, gathered: all indices covered; the padding repeats from the start.
    p = flow.placement("cpu", ranks=list(range(n)))
    everyone = flow.local_to_global(flow.tensor(np.array(mine)), p, flow.sbp.split(0))
    everyone = everyone.to_global(placement=p, sbp=flow.sbp.broadcast).numpy().tolist()
    assert sorted(set(everyone)) == list(range(10)) and len(everyone) == per_rank * n
    sampler.set_epoch(1)
    assert list(sampler) != mine or n == 10  # another order in another epoch
    loader = DataLoader(data, batch_size=2, sampler=sampler)
    batches = list(loader)
    assert len(batches) == len(loader) == -(-per_rank // 2)
    x, y = batches[0]
    assert x.dtype == flow.float32 and y.dtype == flow.int64 and list(x.shape) == [min(2, per_rank)]
    sampler.set_epoch(1)
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in loader]), np.array(list(sampler)))
    assert r < n


def test_global_view_converts_nested_structures():
    from globe.utils import global_view
    p = flow.placement("cpu", ranks=list(range(flow.env.get_world_size())))
    batch = {"x": flow.ones(2, 3), "meta": [flow.zeros(2), "name"]}
    g = global_view.to_global(batch, placement=p, sbp=flow.sbp.broadcast)
    assert g["x"].is_global and g["meta"][0].is_global and g["meta"][1] == "name"
    back = global_view.to_local(g)
    assert back["x"].is_local and back["meta"][1] == "name"
    np.testing.assert_array_equal(back["x"].numpy(), np.ones((2, 3), np.float32))


def test_global_view_takes_oneflows_sbp_function_and_keeps_what_is_left_out(tmp_path_factory):
    """OneFlow's cookie for large models: a state dict loaded on one rank (flow.load gives every
    rank global tensors), spread with get_sbp(state, tensor) choosing each tensor's layout; a
    missing placement= keeps each tensor's own; a None input says what to do instead."""
    from globe.utils import global_view
    p = all_ranks()
    path = "/tmp/globe-pytest-global-view-%d.safetensors" % WORLD
    flow.manual_seed(3)
    model = nn.Linear(WORLD * 2, 3)
    model.to_global(placement=p, sbp=flow.sbp.broadcast)
    flow.save(model.state_dict(), path)
    loaded = flow.load(path, global_src_rank=0)

    def get_sbp(state, tensor):
        return flow.sbp.split(1) if tensor is state["weight"] else flow.sbp.broadcast

    spread = global_view.to_global(loaded, placement=p, sbp=get_sbp)
    assert spread["weight"].sbp == (flow.sbp.split(1),) and spread["bias"].sbp == (flow.sbp.broadcast,)
    assert spread["weight"].to_local().shape == (3, 2)
    np.testing.assert_array_equal(spread["weight"].numpy(), model.weight.numpy())
    kept = global_view.to_global(spread, sbp=flow.sbp.broadcast)  # placement left out: each keeps its own
    assert kept["weight"].placement == p and kept["weight"].sbp == (flow.sbp.broadcast,)
    assert global_view.to_global(None, placement=p, sbp=get_sbp) is None  # OneFlow's: nothing to convert
    if WORLD > 1:  # a placement without this rank: OneFlow would send the structure over
        others = flow.placement("cpu", ranks=[r for r in range(WORLD) if r != RANK])
        with pytest.raises(ValueError, match=r"input is None on this rank.*flow.load\(path, global_src_rank=R\)"):
            global_view.to_global(None, placement=others, sbp=get_sbp)
    with pytest.raises(ValueError, match="a local tensor needs both placement= and sbp="):
        global_view.to_global({"x": flow.ones(2)}, sbp=flow.sbp.broadcast)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8", "int64"])
def test_integer_partial_sums_reduce_in_boxing(dtype):
    """OneFlow's integer tensors laid out P: each rank's summand, summed when boxed to B or S."""
    p = all_ranks()
    piece = flow.tensor(np.arange(8).reshape(4, 2) + RANK, dtype=getattr(flow, dtype))
    x = piece.to_global(placement=p, sbp=flow.sbp.partial_sum)
    whole = sum(np.arange(8).reshape(4, 2) + r for r in range(WORLD))
    for s in (flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)):
        y = x.to_global(sbp=s)
        assert y.dtype == getattr(flow, dtype)
        np.testing.assert_array_equal(y.numpy(), whole)
    assert x.to_global(sbp=flow.sbp.broadcast).global_id() != x.global_id()
    assert x.to_global(sbp=flow.sbp.partial_sum).global_id() == x.global_id()  # the same tensor


def test_local_block_is_the_piece_to_global_expects():
    p = all_ranks()
    start, shape = flow.local_block([101, 3], p, flow.sbp.split(0))
    assert shape[1] == 3 and start[1] == 0
    # The balanced blocks: sizes differ by at most one, the longer first, and they tile the rows.
    blocks = [flow.local_block([101, 3], p, flow.sbp.split(0), rank=r) for r in range(WORLD)]
    assert (start, shape) == blocks[RANK]
    assert [b[1][0] for b in blocks] == [101 // WORLD + (r < 101 % WORLD) for r in range(WORLD)]
    assert [b[0][0] for b in blocks] == [sum(b[1][0] for b in blocks[:r]) for r in range(WORLD)]
    whole = np.arange(303, dtype=np.float32).reshape(101, 3)
    piece = flow.tensor(np.ascontiguousarray(whole[start[0]:start[0] + shape[0]]))
    x = piece.to_global(placement=p, sbp=flow.sbp.split(0))
    np.testing.assert_array_equal(x.numpy(), whole)


def test_boxing_paths_count_what_a_layout_change_ran():
    p = all_ranks()
    x = flow.randn(8, 4, placement=p, sbp=flow.sbp.split(0))
    flow.reset_boxing_paths()
    x.to_global(placement=p, sbp=flow.sbp.broadcast)
    paths = dict(flow.boxing_paths())
    if WORLD > 1:
        assert paths == {"to_global: (S(0)) -> (B): per axis (0: S(0) -> B)": 1}
    flow.reset_boxing_paths()
    assert flow.boxing_paths() == []


def test_visualize_shows_a_layout_not_yet_made():
    n = flow.env.get_world_size()
    p = flow.placement("cpu", ranks=list(range(n)))
    v = flow.visualize((2 * n, 3), p, flow.sbp.split(0))
    for r in range(n):
        assert f"rank {r} (mesh [{r}]): [{2 * r}:{2 * r + 2}, 0:3]" in v, v
    b = flow.visualize((2, 3), p, flow.sbp.broadcast)
    assert n == 1 or "the same block as rank 0" in b, b


def test_balanced_splitter_gives_each_ranks_block():
    from globe.framework import balanced_splitter
    for total in [1, WORLD, 2 * WORLD + 1, 10]:
        blocks = [flow.local_block([total], all_ranks(), flow.sbp.split(0), r) for r in range(WORLD)]
        assert balanced_splitter.BalancedRanges(total, WORLD) == [(s[0], s[0] + n[0]) for s, n in blocks]
