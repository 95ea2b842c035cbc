"""The Python front end in one process: tensors and numpy, operators, autograd values, modules,
optimizers, checkpoints, and errors arriving as globe.Error with the core's message."""
import numpy as np
import pytest

import globe as flow
import globe.nn as nn


def test_numpy_round_trip_and_dtypes():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = flow.tensor(a)
    assert t.shape == (3, 4) and t.dtype == flow.float32 and not t.is_global
    np.testing.assert_array_equal(t.numpy(), a)
    assert flow.tensor([1, 2, 3]).dtype == flow.int64
    assert flow.tensor([1.5, 2.0]).dtype == flow.float32
    assert flow.tensor(np.zeros(2, dtype=np.float64)).dtype == flow.float64
    # numpy() shares the tensor's storage: no copy
    view = t.numpy()
    view[0, 0] = 42.0
    assert t.numpy()[0, 0] == 42.0
    # a transposed (strided) tensor reads right through its strides
    np.testing.assert_array_equal(flow.transpose(flow.tensor(a), 0, 1).numpy(), a.T)


def test_operators_and_ops_values():
    x = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = flow.tensor([[0.5, -1.0], [2.0, 0.0]])
    np.testing.assert_allclose((x + y).numpy(), [[1.5, 1.0], [5.0, 4.0]])
    np.testing.assert_allclose((2 * x - 1).numpy(), [[1, 3], [5, 7]])
    np.testing.assert_allclose((1 / x).numpy(), [[1, 0.5], [1 / 3, 0.25]], rtol=1e-6)
    np.testing.assert_allclose((x @ y).numpy(), np.array([[1, 2], [3, 4]]) @ np.array([[0.5, -1], [2, 0]]))
    np.testing.assert_allclose((-x).numpy(), [[-1, -2], [-3, -4]])
    assert flow.sum(x).item() == 10.0
    np.testing.assert_allclose(flow.sum(x, [0]).numpy(), [4, 6])
    np.testing.assert_allclose(flow.softmax(x, 1).numpy().sum(axis=1), [1, 1], rtol=1e-6)
    assert flow.reshape(x, [4]).shape == (4,)
    assert x.reshape(1, 4).shape == (1, 4)


def test_every_op_is_reachable_and_computes():
    x = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(flow.narrow(x, 1, 1, 2).numpy(), [[1, 2], [4, 5]])
    np.testing.assert_array_equal(flow.slice(x, 1, -2, 3).numpy(), [[1, 2], [4, 5]])
    np.testing.assert_array_equal(flow.gather(x, 1, flow.tensor([[2], [0]])).numpy(), [[2], [3]])
    np.testing.assert_array_equal(flow.scatter_add([2, 3], 1, flow.tensor([[2], [0]]),
                                                   flow.tensor([[1.0], [5.0]])).numpy(), [[0, 0, 1], [5, 0, 0]])
    np.testing.assert_array_equal(flow.pick(x, flow.tensor([1, 2])).numpy(), [1, 5])
    np.testing.assert_array_equal(flow.expand(flow.tensor([[1.0], [2.0]]), [2, 3]).numpy(), [[1, 1, 1], [2, 2, 2]])
    np.testing.assert_array_equal(flow.sum_to(x, [1, 3]).numpy(), [[3, 5, 7]])
    np.testing.assert_array_equal(flow.view(x, [3, 2]).numpy(), np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(flow.matmul_nt(x, x).numpy(), x.numpy() @ x.numpy().T)
    assert flow.to_dtype(x, flow.float64).dtype == flow.float64
    np.testing.assert_array_equal(flow.zeros_like(x).numpy(), np.zeros((2, 3)))
    c = flow.causal_fill(flow.zeros(2, 2), -1.0).numpy()
    np.testing.assert_array_equal(c, [[0, -1], [0, 0]])
    u = flow.uniform([1000], 2.0, 3.0).numpy()
    assert u.min() >= 2.0 and u.max() < 3.0


def test_save_hf_writes_bfloat16_when_asked(tmp_path):
    w = flow.tensor(np.array([[1.0, 1.00390625, 3.14159], [-2.5, 1e-3, 7.0]], dtype=np.float32))
    flow.save_hf({"w": w, "steps": flow.tensor([3])}, tmp_path / "bf16", dtype=flow.bfloat16)
    got = flow.load_sharded(tmp_path / "bf16")
    assert got["w"].dtype == flow.bfloat16 and got["steps"].dtype == flow.int64  # integers kept
    np.testing.assert_array_equal(got["w"].to_local().float().numpy(), flow.to_dtype(w, flow.bfloat16).float().numpy())


def test_llama_ops_match_their_formulas():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 8)), rng.standard_normal(8)
    want = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(flow.rms_norm(flow.tensor(x), flow.tensor(w), 1e-6).numpy(), want, rtol=1e-12)
    silu = x / (1 + np.exp(-x))
    np.testing.assert_allclose(flow.silu(flow.tensor(x)).numpy(), silu, rtol=1e-12)
    np.testing.assert_allclose(flow.swiglu(flow.tensor(x), flow.tensor(x + 1)).numpy(), silu * (x + 1), rtol=1e-12)
    # rotary: Hugging Face's x * cat(cos, cos) + rotate_half(x) * cat(sin, sin), tables [T, D / 2]
    cos, sin = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    half = np.concatenate([-x[..., 4:], x[..., :4]], -1)
    want = x * np.concatenate([cos, cos], -1) + half * np.concatenate([sin, sin], -1)
    got = flow.rotary_embedding(flow.tensor(x), flow.tensor(cos), flow.tensor(sin)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    with pytest.raises(flow.Error, match=r"\[rotary_embedding\] cos float64\[3, 8\] is not float64\[3, 4\]"):
        flow.rotary_embedding(flow.tensor(x), flow.tensor(np.zeros((3, 8))), flow.tensor(sin))


def test_backward_gives_the_gradient():
    w = flow.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
    x = flow.tensor([[2.0, 1.0]])
    loss = flow.sum(flow.relu(x @ w) * 3.0)  # x @ w = [2.5, -1]: relu keeps the first
    loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), [[6.0, 0.0], [3.0, 0.0]])
    assert w.is_leaf and w.requires_grad
    with flow.no_grad():
        z = w * 2
    assert not z.requires_grad


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.scale = flow.tensor([2.0], requires_grad=True)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_module_registers_parameters_in_order():
    net = Net()
    assert [k for k, _ in net.named_parameters()] == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert list(net.state_dict()) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert net.fc1.weight.shape == (3, 4)
    assert net(flow.randn(5, 4)).shape == (5, 2)
    with pytest.raises(flow.Error, match="missing keys"):
        net.load_state_dict({"scale": flow.tensor([1.0])})
    other = Net()
    other.load_state_dict(net.state_dict())
    for (_, a), (_, b) in zip(net.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_sgd_step_updates_in_place():
    p = flow.tensor([1.0, 2.0], requires_grad=True)
    opt = flow.optim.SGD([p], lr=0.5)
    flow.sum(p * p).backward()  # grad 2p
    opt.step()
    np.testing.assert_allclose(p.numpy(), [0.0, 0.0])
    opt.zero_grad()
    assert p.grad is None


def test_save_and_load(tmp_path):
    flow.manual_seed(3)
    net = Net()
    flow.save(net.state_dict(), tmp_path / "net.safetensors")
    loaded = flow.load(tmp_path / "net.safetensors")
    assert list(loaded) == list(net.state_dict())
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(loaded[k].numpy(), v.numpy())


def test_bfloat16_tensors_compute_round_and_save(tmp_path):
    x = flow.tensor([[1.0, 2.0], [3.0, 1.0 + 2.0 ** -10]])
    b = x.to(flow.bfloat16)
    assert b.dtype == flow.bfloat16 and x.bfloat16().dtype == flow.bfloat16
    # 8 mantissa bits: 1 + 2^-10 rounds to 1; the rest are exact
    np.testing.assert_array_equal(b.float().numpy(), [[1.0, 2.0], [3.0, 1.0]])
    # ops compute in float32 and round their result once
    y = flow.matmul(b, b)
    assert y.dtype == flow.bfloat16
    np.testing.assert_array_equal(y.float().numpy(), [[7.0, 4.0], [6.0, 7.0]])
    assert (b * 2).sum().item() == 14.0
    with pytest.raises(TypeError, match=r"\[numpy\] bfloat16 has no numpy dtype: convert with .float\(\) first"):
        b.numpy()
    with pytest.raises(flow.Error, match=r"\[matmul\] dtype mismatch: bfloat16\[2, 2\] @ float32\[2, 2\]"):
        flow.matmul(b, x)
    # float16 round-trips through numpy's float16
    h = flow.tensor(np.array([1.0, 65504.0, 1e-7], dtype=np.float16))
    assert h.dtype == flow.float16 and x.half().dtype == flow.float16
    np.testing.assert_array_equal(h.numpy(), np.array([1.0, 65504.0, 1e-7], dtype=np.float16))
    assert (h * 2).float().numpy()[1] == np.inf  # past float16's range
    # safetensors keeps BF16
    flow.save({"b": b}, tmp_path / "b.safetensors")
    loaded = flow.load(tmp_path / "b.safetensors")["b"]
    assert loaded.dtype == flow.bfloat16
    np.testing.assert_array_equal(loaded.float().numpy(), b.float().numpy())


def test_errors_carry_the_cores_message():
    with pytest.raises(flow.Error, match=r"\[matmul\].*\[2, 3\] @ \[2, 3\]"):
        flow.matmul(flow.randn(2, 3), flow.randn(2, 3))
    with pytest.raises(RuntimeError):  # globe.Error is a RuntimeError
        flow.add(flow.randn(2), flow.randn(3))
    with pytest.raises(flow.Error, match=r"\[placement\] placement\(cuda, \[0\]\)"):
        flow.placement("cuda", ranks=[0])
    with pytest.raises(flow.Error, match=r"unknown device type 'tpu'"):
        flow.placement("tpu", ranks=[0])


def test_numpy_of_a_device_tensor_is_a_host_copy_as_oneflows():
    """On the sim device (every build has it): .numpy() copies to the host, as OneFlow's does for a
    GPU tensor; the host tensor's array shares memory; .to("cpu") and back keep the values."""
    x = flow.randn(3, 4)
    s = x.to("sim")
    assert str(s.device) == "sim:0"
    a = s.numpy()
    np.testing.assert_array_equal(a, x.numpy())
    a[0, 0] = 7.0  # a copy: the device tensor keeps its value
    assert s.numpy()[0, 0] == x.numpy()[0, 0]
    np.testing.assert_array_equal(((s * 2).to("cpu")).numpy(), (x * 2).numpy())
    with pytest.raises(flow.Error, match=r"input 0 is on sim:0 and input 1 on cpu"):
        flow.add(s, x)


def test_module_to_a_device_moves_its_parameters_in_place_and_refuses_one_it_cannot_use():
    """module.to("sim") moves every parameter there, in place: an optimizer made before trains the
    moved model, and the forward gives the CPU's values; module.cpu() brings it back. A device
    this process cannot use (sim has sim:0 and sim:1) is an error, and nothing moves."""
    flow.manual_seed(3)
    m = nn.Linear(3, 2)
    opt = flow.optim.SGD(m.parameters(), lr=0.5)
    x = flow.randn(4, 3)
    want = m(x).numpy()
    w0 = m.weight.numpy().copy()
    assert m.to("sim") is m
    assert [str(p.device) for p in m.parameters()] == ["sim:0", "sim:0"]
    out = m(x.to("sim"))
    np.testing.assert_array_equal(out.numpy(), want)
    out.sum().backward()
    opt.step()
    assert str(m.weight.device) == "sim:0"
    assert not np.array_equal(m.weight.numpy(), w0), "the optimizer made before the move did not update the model"
    m.cpu()
    assert [str(p.device) for p in m.parameters()] == ["cpu", "cpu"]
    with pytest.raises(flow.Error, match=r"\[to\].*sim:7"):
        m.to("sim:7")
    assert [str(p.device) for p in m.parameters()] == ["cpu", "cpu"]


def test_tf32_is_torchs_switch_and_the_cpu_keeps_full_float32():
    """flow.backends.cuda.matmul.allow_tf32 and set_float32_matmul_precision, torch's spellings of
    one setting; on the CPU and the sim device (no TF32 there) a product keeps float32's bits."""
    x, w = flow.randn(8, 32), flow.randn(32, 4)
    want = flow.matmul(x, w).numpy()
    assert flow.get_float32_matmul_precision() == "highest" and not flow.backends.cuda.matmul.allow_tf32
    flow.backends.cuda.matmul.allow_tf32 = True
    try:
        assert flow.get_float32_matmul_precision() == "high"
        np.testing.assert_array_equal(flow.matmul(x, w).numpy(), want)
        np.testing.assert_array_equal(flow.matmul(x.to("sim"), w.to("sim")).numpy(), want)
        flow.set_float32_matmul_precision("medium")
        assert flow.backends.cuda.matmul.allow_tf32
    finally:
        flow.backends.cuda.matmul.allow_tf32 = False
    assert flow.get_float32_matmul_precision() == "highest"
    with pytest.raises(flow.Error, match=r"\[set_float32_matmul_precision\] 'fast' is not a precision"):
        flow.set_float32_matmul_precision("fast")


def test_cuda_memory_counts_and_says_what_is_missing_without_a_gpu():
    """flow.cuda.memory_allocated and its family count the tensors on a GPU as torch.cuda's do;
    without one they say so; another device is refused by name. The count underneath is per
    device (here the sim device's)."""
    before = flow._globe.memory_stats("sim:0", "test")[0]
    x = flow.zeros(1024).to("sim")
    assert flow._globe.memory_stats("sim:0", "test")[0] == before + 4096
    del x
    assert flow._globe.memory_stats("sim:0", "test")[0] == before
    with pytest.raises(flow.Error, match=r"\[cuda.memory_allocated\] expects a CUDA device, got sim:0"):
        flow.cuda.memory_allocated("sim:0")
    if not flow.cuda.is_available():
        for fn in (flow.cuda.memory_allocated, flow.cuda.max_memory_allocated, flow.cuda.memory_reserved,
                   flow.cuda.synchronize, flow.cuda.reset_peak_memory_stats):
            with pytest.raises(flow.Error, match=r"(?i)cuda"):
                fn()
        return
    y = flow.zeros(1024).to("cuda")
    assert flow.cuda.memory_allocated() >= 4096 and flow.cuda.max_memory_allocated() >= 4096
    assert flow.cuda.memory_reserved() >= flow.cuda.memory_allocated()
    flow.cuda.synchronize()
    del y
    flow.cuda.empty_cache()


def test_from_numpy_shares_memory_where_it_can():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = flow.from_numpy(a)
    a[0, 0] = 42.0
    assert t.numpy()[0, 0] == 42.0  # the same memory, both ways
    t.numpy()[1, 2] = -1.0
    assert a[1, 2] == -1.0
    del a
    assert t.numpy().tolist() == [[42.0, 1.0, 2.0], [3.0, 4.0, -1.0]]  # the tensor keeps the array alive
    # Copied: strided, read-only, other dtypes; and flow.tensor always copies (as torch.tensor).
    s = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    ro = np.arange(4, dtype=np.float64)
    ro.setflags(write=False)
    i32 = np.arange(3, dtype=np.int32)
    made = [flow.from_numpy(s), flow.from_numpy(ro), flow.from_numpy(i32)]
    c = np.ones(3, dtype=np.float32)
    made.append(flow.tensor(c))
    s[0, 0], i32[0], c[0] = 7, 7, 7
    assert made[0].numpy()[0, 0] == 0 and made[2].numpy()[0] == 0 and made[3].numpy()[0] == 1
    assert made[1].numpy().tolist() == [0.0, 1.0, 2.0, 3.0] and made[2].dtype == flow.int64
    big = np.arange(3, dtype=">f4")
    assert flow.from_numpy(big).numpy().tolist() == [0.0, 1.0, 2.0]


def test_adamw_parameter_groups_as_torch():
    """torch's parameter groups: each group's weight_decay; the same updates as one optimizer per group."""
    def make():
        flow.manual_seed(0)
        w, b = flow.randn(3, 2, requires_grad=True), flow.randn(2, requires_grad=True)
        flow.sum(flow.matmul(flow.ones(4, 3), w) + b).backward()
        return w, b
    w, b = make()
    flow.optim.AdamW([{"params": [w], "weight_decay": 0.5}, {"params": [b]}], lr=0.1, weight_decay=0.0).step()
    w2, b2 = make()
    flow.optim.AdamW([w2], lr=0.1, weight_decay=0.5).step()
    flow.optim.AdamW([b2], lr=0.1, weight_decay=0.0).step()
    np.testing.assert_array_equal(w.numpy(), w2.numpy())
    np.testing.assert_array_equal(b.numpy(), b2.numpy())
    w3, _ = make()
    flow.optim.AdamW([w3], lr=0.1, weight_decay=0.0).step()
    assert not np.array_equal(w.numpy(), w3.numpy())  # the group's decay was applied
    with pytest.raises(ValueError, match="params"):
        flow.optim.AdamW([{"weight_decay": 0.1}])
