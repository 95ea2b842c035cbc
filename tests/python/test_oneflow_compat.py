"""What a OneFlow (or PyTorch) program relies on without saying so, in one process: weight tying
and late assignment through the module registry, buffers in state dicts, Sequential over an
OrderedDict, and torch's printing thresholds. Each of these once ran and gave other numbers."""
from collections import OrderedDict

import numpy as np
import pytest

import globe as flow
import globe.nn as nn


def test_tying_by_assignment_is_what_the_forward_uses():
    flow.manual_seed(1)
    a, b = nn.Linear(3, 4), nn.Linear(3, 4, bias=False)
    x = flow.randn(2, 3)
    assert not np.array_equal(b(x).numpy(), flow.matmul_nt(x, a.weight).numpy())
    b.weight = a.weight
    assert b.weight.same(a.weight)
    assert b.weight is a.weight  # one Python object per parameter, as torch's and OneFlow's
    np.testing.assert_array_equal(b(x).numpy(), flow.matmul_nt(x, a.weight).numpy())
    # The gradient of the tied weight gathers both uses.
    flow.sum(a(x) + b(x)).backward()
    np.testing.assert_allclose(a.weight.grad.numpy(), 2 * np.ones((4, 2)) @ x.numpy(), rtol=1e-6)


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # GPT's tied head

    def forward(self, idx):
        return self.head(self.embed(idx))


def test_a_parameter_is_one_python_object_through_reads_moves_and_loads():
    m = Tied()
    w = m.embed.weight
    assert m.head.weight is w and m.embed.weight is w
    assert any(p is w for p in m.parameters()) and dict(m.named_parameters())["embed.weight"] is w
    m.load_state_dict(Tied().state_dict())  # copies into the same tensors
    assert m.embed.weight is w
    m.to_global(flow.placement("cpu", ranks=[0]), flow.sbp.broadcast)  # moves in place
    assert m.embed.weight is w and w.is_global
    m.head.weight = nn.Parameter(flow.randn(10, 4))  # a new tensor: a new object
    assert m.head.weight is not w and m.head.weight is m.head.weight


def test_tied_parameters_appear_once():
    m = Tied()
    assert [k for k, _ in m.named_parameters()] == ["embed.weight"]
    assert len(m.parameters()) == 1
    assert [k for k, _ in m.named_parameters(remove_duplicate=False)] == ["embed.weight", "head.weight"]
    assert list(m.state_dict()) == ["embed.weight", "head.weight"]  # as torch: every name
    opt = flow.optim.SGD(m.parameters(), lr=0.1)
    before = m.embed.weight.numpy().copy()
    flow.cross_entropy(m(flow.tensor([[1, 2]])), flow.tensor([[2, 3]])).backward()
    opt.step()
    assert not np.array_equal(m.embed.weight.numpy(), before)
    np.testing.assert_array_equal(m.head.weight.numpy(), m.embed.weight.numpy())


def test_a_module_assigned_after_construction_replaces_the_old_one():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 4)

        def forward(self, x):
            return self.fc(x)

    net = Net()
    net.fc = nn.Linear(3, 5)
    assert [tuple(p.shape) for _, p in net.named_parameters()] == [(5, 3), (5,)]
    assert net.state_dict()["fc.weight"].shape == (5, 3)
    assert net(flow.randn(2, 3)).shape == (2, 5)
    net.extra = nn.Parameter(flow.ones(2))  # a parameter added late joins the registry too
    assert [k for k, _ in net.named_parameters()] == ["extra", "fc.weight", "fc.bias"]


def test_assigning_the_wrong_kind_to_a_registered_name_is_a_type_error():
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="parameter 'weight'"):
        layer.weight = flow.ones(2, 2)  # does not require grad: not a Parameter
    with pytest.raises(TypeError, match="parameter 'weight'"):
        layer.weight = 3
    seq = nn.Sequential(nn.ReLU())
    with pytest.raises(TypeError, match="submodule '0'"):
        seq.__setattr__("0", flow.ones(1))


def test_state_dict_has_buffers_and_load_checks_shapes():
    class WithBuffer(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 3)
            self.register_buffer("steps", flow.zeros(1, dtype=flow.int64))

    m = WithBuffer()
    assert list(m.state_dict()) == ["fc.weight", "fc.bias", "steps"]
    assert [k for k, _ in m.named_buffers()] == ["steps"]
    state = m.state_dict()
    state["fc.weight"] = flow.zeros(4, 2)
    before = m.fc.weight.numpy().copy()
    with pytest.raises(flow.Error, match=r"shape mismatch: fc\.weight: checkpoint \[4, 2\] vs model \[3, 2\]"):
        m.load_state_dict(state)
    np.testing.assert_array_equal(m.fc.weight.numpy(), before)  # a failed load changes nothing


def test_sequential_of_an_ordered_dict():
    flow.manual_seed(2)
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(3, 4)), ("act", nn.ReLU())]))
    assert [k for k, _ in seq.named_parameters()] == ["fc.weight", "fc.bias"]
    x = flow.randn(2, 3)
    y = seq(x)
    assert y.shape == (2, 4)
    np.testing.assert_array_equal(y.numpy(), np.maximum(seq.fc(x).numpy(), 0))
    assert len(seq) == 2 and seq[0] is seq.fc
    with pytest.raises(TypeError, match="'0' is a dict, not a Module"):
        nn.Sequential({"fc": nn.Linear(3, 4)})
    with pytest.raises(TypeError, match="'1' is a int, not a Module"):
        nn.Sequential(nn.ReLU(), 3)


def test_printing_follows_torch_thresholds():
    assert "[0, 1, 2, 3, 4, 5, 6, 7]" in repr(flow.tensor(np.arange(8)))
    assert "..." not in repr(flow.tensor(np.arange(1000)))
    long = repr(flow.tensor(np.arange(1001)))
    assert "[0, 1, 2, ..., 998, 999, 1000]" in long


# ---- the APIs OneFlow programs call ------------------------------------------------------------

def test_tensor_methods_under_torch_names():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = flow.tensor(a)
    np.testing.assert_array_equal(x.transpose(0, 2).numpy(), a.transpose(2, 1, 0))
    np.testing.assert_array_equal(x.permute(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.permute([2, 0, 1]).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.view(6, 4).numpy(), a.reshape(6, 4))
    np.testing.assert_array_equal(x.reshape(-1).numpy(), a.reshape(-1))
    np.testing.assert_array_equal(x.flatten(1).numpy(), a.reshape(2, 12))
    assert x.unsqueeze(1).shape == (2, 1, 3, 4) and x.unsqueeze(1).squeeze().shape == (2, 3, 4)
    assert x.unsqueeze(0).squeeze(0).shape == (2, 3, 4)
    m = flow.tensor(a[0])
    np.testing.assert_array_equal(m.T.numpy(), a[0].T)
    assert x.T.shape == (4, 3, 2) and x.ndim == 3 and x.is_local and not x.is_global
    values, indices = x.max(dim=2)
    np.testing.assert_array_equal(values.numpy(), a.max(axis=2))
    np.testing.assert_array_equal(indices.numpy(), a.argmax(axis=2))
    assert x.max().item() == 23.0 and x.argmax().item() == 23
    np.testing.assert_array_equal(x.argmax(dim=1, keepdim=True).numpy(), a.argmax(axis=1)[:, None, :])
    np.testing.assert_allclose(m.softmax(-1).numpy().sum(axis=-1), [1, 1, 1], rtol=1e-6)
    np.testing.assert_allclose(m.log_softmax(1).exp().numpy().sum(axis=1), [1, 1, 1], rtol=1e-6)
    np.testing.assert_array_equal(m.matmul(m.T).numpy(), a[0] @ a[0].T)
    np.testing.assert_array_equal(x.sum(dim=1).numpy(), a.sum(axis=1))
    np.testing.assert_array_equal(x.mean(dim=(0, 2), keepdim=True).numpy(), a.mean(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(m.pow(2).sqrt().numpy(), a[0], rtol=1e-6)
    np.testing.assert_allclose((m + 1).log().numpy(), np.log(a[0] + 1), rtol=1e-6)
    np.testing.assert_array_equal(m.neg().relu().numpy(), np.zeros((3, 4)))
    assert [c.shape for c in x.chunk(2, dim=2)] == [(2, 3, 2), (2, 3, 2)]
    assert [c.shape for c in x.split(2, dim=1)] == [(2, 2, 4), (2, 1, 4)]
    assert [c.shape for c in x.split([1, 3], dim=2)] == [(2, 3, 1), (2, 3, 3)]
    row = flow.tensor([[1.0, 2.0]])
    np.testing.assert_array_equal(row.expand(3, -1).numpy(), [[1, 2]] * 3)
    np.testing.assert_array_equal(row.repeat(2, 3).numpy(), np.tile([[1, 2]], (2, 3)))
    np.testing.assert_array_equal(row.repeat(2, 1, 1).numpy(), np.tile([[1, 2]], (2, 1, 1)))
    c = m.clone()
    assert not c.same(m)
    np.testing.assert_array_equal(c.numpy(), a[0])
    assert m.long().dtype == flow.int64 and m.long().float().dtype == flow.float32
    assert m.double().dtype == flow.float64 and m.type_as(flow.tensor([1])).dtype == flow.int64
    assert m.to(flow.float64).dtype == flow.float64 and m.to("cpu").same(m)
    assert m.to(flow.tensor([1.0], dtype=flow.float64)).dtype == flow.float64
    assert m.tolist() == a[0].tolist() and m.contiguous().shape == (3, 4)


def test_indexing():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = flow.tensor(a)
    for key in [0, -1, (1, 2), (slice(None), slice(1, 3)), (Ellipsis, 1), (None, 0), (0, None, slice(2, None)),
                (slice(None), -1, slice(0, 2)), (Ellipsis, None)]:
        np.testing.assert_array_equal(x[key].numpy(), a[key], err_msg=repr(key))
    np.testing.assert_array_equal(x[flow.tensor([1, 0, 1])].numpy(), a[[1, 0, 1]])
    np.testing.assert_array_equal(x[[1]].numpy(), a[[1]])
    with pytest.raises(IndexError, match="out of bounds"):
        x[2]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    with pytest.raises(flow.Error, match=r"\[index\] slice step 2"):
        x[::2]
    with pytest.raises(IndexError, match="tensors used as indices must be int64 or bool"):
        x[flow.tensor([1.0, 0.0])]
    # Indexing is differentiable: the gradient lands in the indexed block.
    p = flow.zeros(2, 3, requires_grad=True)
    flow.sum(p[1, 1:] * 2).backward()
    np.testing.assert_array_equal(p.grad.numpy(), [[0, 0, 0], [0, 2, 2]])


def test_in_place_forms_write_and_refuse_where_autograd_needs_the_old_value():
    x = flow.ones(2, 2)
    assert x.zero_().same(x) and x.numpy().sum() == 0
    x.fill_(3).add_(1).mul_(flow.tensor([[1.0, 2.0], [3.0, 4.0]])).sub_(1).div_(2)
    np.testing.assert_array_equal(x.numpy(), [[1.5, 3.5], [5.5, 7.5]])
    x.copy_(flow.zeros(2, 2))
    assert x.numpy().sum() == 0
    w = flow.ones(2, requires_grad=True)
    with pytest.raises(flow.Error, match=r"\[add_\] in-place on a leaf that requires grad"):
        w.add_(1)
    h = w * 2
    with pytest.raises(flow.Error, match=r"\[mul_\] in-place on a tensor autograd may need unchanged"):
        h.mul_(2)
    with flow.no_grad():
        w.add_(1)  # an optimizer's kind of update
    np.testing.assert_array_equal(w.numpy(), [2, 2])


def test_devices_and_cuda():
    assert flow.device("cpu") == "cpu" and flow.device("cpu:0").index == 0 and repr(flow.device("cpu")) == "device(type='cpu')"
    assert flow.tensor([1.0]).device == flow.device("cpu")
    assert flow.device("cuda:1").index == 1 and str(flow.device("cuda", 2)) == "cuda:2"
    with pytest.raises(flow.Error, match=r"\[device\] unknown device type 'gpu' \(supported: cpu, cuda, sim\)"):
        flow.device("gpu")
    with pytest.raises(flow.Error, match=r"'cuda:x' is not a device"):
        flow.device("cuda:x")
    assert flow.cuda.is_available() == (flow.cuda.device_count() > 0)
    if not flow.cuda.is_available():
        # Where there is no GPU, each way of asking for one says why (which of the two is missing).
        why = "no CUDA device visible" if flow._globe.cuda_built() else "this build has no CUDA"
        with pytest.raises(flow.Error, match=r"\[to\] cuda:0: " + why):
            flow.tensor([1.0]).to("cuda")
        with pytest.raises(flow.Error, match=why):
            flow.tensor([1.0]).cuda()
        with pytest.raises(flow.Error, match=why):
            flow.zeros(2, device="cuda")
        with pytest.raises(flow.Error, match=why):
            flow.tensor([1.0, 2.0], device="cuda:0")
    else:
        x = flow.tensor([1.0, 2.0]).cuda()
        assert x.device == flow.device("cuda:0") and x.cpu().device == "cpu"
        np.testing.assert_array_equal((x * 2).cpu().numpy(), [2.0, 4.0])
    assert flow.tensor([1.0]).cpu().device == "cpu"
    assert flow.randn(2, 3, device="cpu").shape == (2, 3)
    assert flow.tensor([1, 2], device=flow.device("cpu")).dtype == flow.int64
    layer = nn.Linear(2, 2)
    assert layer.to("cpu") is layer and layer.to(flow.float64).weight.dtype == flow.float64


def test_creation_spellings():
    t = flow.Tensor([[1, 2], [3, 4]])  # flow.Tensor(data): float32, as OneFlow's
    assert t.dtype == flow.float32 and t.shape == (2, 2)
    assert flow.Tensor(2, 3).shape == (2, 3)
    assert isinstance(t, flow.Tensor)
    flow.manual_seed(0)
    r = flow.randint(0, 5, (1000,))
    assert r.dtype == flow.int64 and r.numpy().min() == 0 and r.numpy().max() == 4
    assert flow.randint(3, (4,)).numpy().max() < 3  # randint(high, size)
    u = flow.rand(100)
    assert 0 <= u.numpy().min() and u.numpy().max() < 1
    with pytest.raises(flow.Error, match=r"\[randint\] high must be greater than low"):
        flow.randint(4, 4, (2,))
    with pytest.raises(flow.Error, match=r"\[randint\] sbp= needs placement= too"):
        flow.randint(0, 4, (2,), sbp=flow.sbp.broadcast)
    with pytest.raises(flow.Error, match=r"\[full\] sbp= needs placement= too"):
        flow.full([2], 1.0, sbp=flow.sbp.broadcast)


def test_loss_reduction():
    x = flow.tensor([[1.0, 2.0], [3.0, 5.0]])
    y = flow.zeros(2, 2)
    assert nn.MSELoss(reduction="sum")(x, y).item() == 39.0
    np.testing.assert_array_equal(nn.MSELoss(reduction="none")(x, y).numpy(), [[1, 4], [9, 25]])
    assert nn.MSELoss()(x, y).item() == 39.0 / 4
    logits, target = flow.tensor([[0.0, 1.0], [2.0, 0.0]]), flow.tensor([1, 1])
    each = nn.CrossEntropyLoss(reduction="none")(logits, target).numpy()
    np.testing.assert_allclose(each, [np.log1p(np.exp(-1.0)), np.log1p(np.exp(2.0))], rtol=1e-6)
    np.testing.assert_allclose(flow.cross_entropy(logits, target, reduction="sum").item(), each.sum(), rtol=1e-6)
    # OneFlow's [N, 1] labels (its ZeRO cookie): the same indices; reduction none keeps their shape.
    column = flow.tensor([[1], [1]])
    assert nn.CrossEntropyLoss()(logits, column).item() == nn.CrossEntropyLoss()(logits, target).item()
    np.testing.assert_array_equal(nn.CrossEntropyLoss(reduction="none")(logits, column).numpy(), each[:, None])
    with pytest.raises(flow.Error, match=r"\[cross_entropy\] logits .* and target .* shapes do not match"):
        nn.CrossEntropyLoss()(logits, flow.tensor([[1, 1]]))  # two elements, but not [2] nor [2, 1]
    with pytest.raises(ValueError, match="reduction must be 'mean', 'sum' or 'none', got 'max'"):
        nn.MSELoss(reduction="max")
    with pytest.raises(flow.Error, match=r"\[mse_loss\] reduction must be"):
        flow.mse_loss(x, y, reduction="avg")


def test_init_family():
    flow.manual_seed(0)
    w = flow.zeros(300, 200)
    assert nn.init.uniform_(w, -2.0, 2.0).same(w)
    assert -2.0 <= w.numpy().min() and w.numpy().max() < 2.0 and w.numpy().std() > 1.0
    nn.init.normal_(w, mean=1.0, std=0.1)
    assert abs(w.numpy().mean() - 1.0) < 0.01 and abs(w.numpy().std() - 0.1) < 0.01
    nn.init.xavier_uniform_(w)
    assert abs(w.numpy().std() - np.sqrt(2.0 / 500)) < 0.003
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.numpy().std() - np.sqrt(2.0 / 300)) < 0.003
    nn.init.constant_(w, 0.5)
    assert (w.numpy() == 0.5).all()
    nn.init.zeros_(w)
    assert (w.numpy() == 0).all()
    assert nn.init.calculate_gain("relu") == pytest.approx(np.sqrt(2))
    with pytest.raises(flow.Error, match=r"\[xavier_normal_\] fan in and fan out need at least 2 dims"):
        nn.init.xavier_normal_(flow.zeros(3))


def test_onefows_integer_dtypes_store_cast_and_compare():
    a = np.array([-3, 0, 5, 100])
    for name, np_type in [("int32", np.int32), ("int8", np.int8), ("uint8", np.uint8)]:
        dt = getattr(flow, name)
        t = flow.tensor(np.abs(a) if name == "uint8" else a, dtype=dt)
        assert t.dtype == dt and t.numpy().dtype == np_type
        np.testing.assert_array_equal(t.numpy(), (np.abs(a) if name == "uint8" else a).astype(np_type))
        assert t.sum().item() == int(t.numpy().astype(np.int64).sum()) and t.sum().dtype == flow.int64
        np.testing.assert_array_equal((t > 4).numpy(), t.numpy() > 4)
        assert t.float().dtype == flow.float32 and t.long().dtype == flow.int64 and isinstance(t[0].item(), int)
        with pytest.raises(flow.Error, match=rf"has no {name} kernel .*cast it"):
            t + t
        # an integer scalar keeps the dtype, with its wrap-around (OneFlow's `x * int(rank)`)
        u = t * 3 + 1
        assert u.dtype == dt
        np.testing.assert_array_equal(u.numpy(), (t.numpy() * np_type(3) + np_type(1)).astype(np_type))
        with pytest.raises(flow.Error, match=rf"\[mul_scalar\] expects a floating tensor, or an integer one with an "
                                             rf"integer scalar for \+ and \*; got {name} and 2.5 \(cast it with .float"):
            t * 2.5
    with pytest.raises(flow.Error, match=r"\[pow\] expects a floating tensor"):
        flow.tensor([1, 2]) ** 2
    with pytest.raises(flow.Error, match=r"got bool and 2"):
        flow.tensor([True, False]) * 2
    assert flow.int is flow.int32 and flow.char is flow.int8
    assert flow.tensor([1.5, 2.5]).int().dtype == flow.int32 and flow.tensor([1, 2]).byte().dtype == flow.uint8


def test_balanced_splitter_is_the_layouts_split():
    from globe.framework import balanced_splitter
    assert balanced_splitter.BalancedPartNums(10, 4) == [3, 3, 2, 2]
    assert balanced_splitter.BalancedRanges(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert balanced_splitter.BalancedRanges(2, 3) == [(0, 1), (1, 2), (2, 2)]


def test_layout_comparisons_and_spellings_return_bools():
    assert (flow.sbp.split(0) != flow.sbp.broadcast) is True
    assert (flow.sbp.broadcast == "broadcast") is False
    assert flow.sbp.broadcast() == flow.sbp.broadcast and flow.sbp.partial_sum() == flow.sbp.partial_sum
    assert len({flow.sbp.split(0), flow.sbp.split(0), flow.sbp.broadcast}) == 2
    nd = flow._globe.NdSbp((flow.sbp.split(0), flow.sbp.broadcast))
    assert (nd == flow.sbp.broadcast) is False and nd == flow._globe.NdSbp([flow.sbp.split(0), flow.sbp.broadcast])
    p = flow.placement("cpu", ranks=[0])
    assert (p == "cpu") is False and (p != 3) is True and p == flow.placement("cpu", ranks=range(1))
    assert flow.placement("cpu", ranks=np.array([0])) == p and flow.placement.all("cpu") == p
    assert isinstance(p.ranks, np.ndarray) and p.ranks.shape == (1,) and p.ranks.size == 1
    x = flow.randn(2, placement=p, sbp=flow.sbp.broadcast)
    assert (x.sbp != flow.sbp.broadcast) is True  # a tuple, one per mesh axis, as in OneFlow
    assert x.sbp == (flow.sbp.broadcast,) and x.placement == p and not x.is_local


def test_selection_methods_follow_torch():
    x = flow.tensor(np.array([[-2.0, -0.5, 0.0], [0.5, 1.5, 3.0]], dtype=np.float32), requires_grad=True)
    np.testing.assert_array_equal(x.abs().numpy(), np.abs(x.numpy()))
    np.testing.assert_array_equal(x.clamp(-1, 1).numpy(), np.clip(x.numpy(), -1, 1))
    np.testing.assert_array_equal(x.clamp(min=0.5).numpy(), np.maximum(x.numpy(), 0.5))
    np.testing.assert_array_equal(flow.clamp(x, max=0.0).numpy(), np.minimum(x.numpy(), 0.0))
    mask = flow.tensor(np.array([[1, 0, 0], [0, 0, 1]]))
    np.testing.assert_array_equal(x.masked_fill(mask, -np.inf).numpy(),
                                  np.where(mask.numpy() != 0, -np.inf, x.numpy()).astype(np.float32))
    row_mask = flow.tensor(np.array([1.0, 0.0, 0.0], dtype=np.float32))  # a float 0/1 mask, broadcast
    np.testing.assert_array_equal(flow.masked_fill(x, row_mask, 7).numpy()[:, 0], [7, 7])
    np.testing.assert_allclose(x.norm().numpy(), np.linalg.norm(x.numpy()), rtol=1e-6)
    np.testing.assert_allclose(x.norm(p=1, dim=1).numpy(), np.abs(x.numpy()).sum(1), rtol=1e-6)
    np.testing.assert_allclose(x.norm(p=float("inf")).numpy(), 3.0)
    # torch's gradients: clamp passes where min <= x <= max, abs is sign(x) (0 at 0), a filled
    # element gets none.
    (x.clamp(-1, 1).sum() + x.abs().sum() + x.masked_fill(mask, 0.0).sum()).backward()
    xv, m = x.numpy(), mask.numpy()
    expected = ((xv >= -1) & (xv <= 1)) + np.sign(xv) + (m == 0)
    np.testing.assert_array_equal(x.grad.numpy(), expected.astype(np.float32))
    with pytest.raises(flow.Error, match="in-place"):
        x.clamp_(0, 1)


def test_data_loader_batches_like_torch():
    from globe.utils.data import DataLoader, TensorDataset
    data = TensorDataset(flow.tensor(np.arange(10, dtype=np.float32).reshape(5, 2)), flow.tensor(np.arange(5)))
    batches = list(DataLoader(data, batch_size=2))
    assert [list(b[0].shape) for b in batches] == [[2, 2], [2, 2], [1, 2]]
    np.testing.assert_array_equal(batches[2][1].numpy(), [4])
    assert len(DataLoader(data, batch_size=2, drop_last=True)) == 2
    flow.manual_seed(0)
    shuffled = np.concatenate([b[1].numpy() for b in DataLoader(data, batch_size=2, shuffle=True)])
    assert sorted(shuffled.tolist()) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(data, sampler=[0, 1], shuffle=True)
