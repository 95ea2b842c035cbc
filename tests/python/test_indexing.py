"""Comparisons, bool tensors and indexing by arrays and masks, local and global, against numpy. Runs
in one process and under globe-launch on 2 and 4 ranks (every rank runs every test); global
tensors take every 1-D layout of the ranks."""
import numpy as np
import pytest

import globe as flow

RANK, WORLD = flow.env.get_rank(), flow.env.get_world_size()


def all_ranks():
    return flow.placement("cpu", ranks=list(range(WORLD)))


def layouts(ndim):
    return [flow.sbp.broadcast] + [flow.sbp.split(d) for d in range(ndim)]


def data(shape, seed=3):
    rng = np.random.default_rng(seed)  # the same on every rank
    return rng.integers(-3, 4, size=shape).astype(np.float32)  # repeats, so == and <= matter


def test_comparisons_are_elementwise_bool_tensors():
    a, b = data((5, 4)), data((4,), seed=4)
    x, y = flow.tensor(a), flow.tensor(b)
    for got, want in [(x == y, a == b), (x != y, a != b), (x < y, a < b), (x <= y, a <= b), (x > y, a > b),
                      (x >= y, a >= b), (x == 1, a == 1), (x < 0.5, a < 0.5), (2 > x, 2 > a), (x.ge(y), a >= b),
                      (flow.ne(x, 0.0), a != 0)]:
        assert got.dtype == flow.bool and tuple(got.shape) == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
    assert (x == x).numpy().all() and not (x is x + 0)  # never identity
    assert (x == None) is False and (x != None) is True  # noqa: E711  (as torch: not comparable)
    assert len({x, y}) == 2 and x in [x]  # hashable by identity, as torch's
    i = flow.tensor(np.array([1, 2, 3]))
    np.testing.assert_array_equal((i < 2.5).numpy(), [True, True, False])  # int64 against a fraction
    np.testing.assert_array_equal((i == flow.tensor([1.0, 0.0, 3.0])).numpy(), [True, False, True])


def test_bool_tensors_print_cast_count_and_mask():
    a = data((3, 4))
    x = flow.tensor(a)
    m = x > 0
    assert "True" in repr(m) and "dtype=bool" in repr(m)
    assert m.sum().item() == int((a > 0).sum()) and m.sum().dtype == flow.int64  # torch's count
    np.testing.assert_allclose(m.float().mean().item(), (a > 0).mean(), rtol=1e-6)
    np.testing.assert_array_equal(m.long().numpy(), (a > 0).astype(np.int64))
    np.testing.assert_array_equal(x.bool().numpy(), a != 0)
    np.testing.assert_array_equal(x.masked_fill(m, 9.0).numpy(), np.where(a > 0, 9.0, a))
    np.testing.assert_array_equal(flow.where(m, x, -x).numpy(), np.abs(a))
    np.testing.assert_array_equal(flow.where(m, 1.0, x).numpy(), np.where(a > 0, 1.0, a))
    np.testing.assert_array_equal((~m).numpy(), ~(a > 0))
    np.testing.assert_array_equal(((x > -2) & (x < 2)).numpy(), (a > -2) & (a < 2))
    np.testing.assert_array_equal(((x < -2) | (x > 2)).numpy(), (a < -2) | (a > 2))
    np.testing.assert_array_equal(flow.tensor([True, False]).numpy(), [True, False])
    assert (x.sum() > 0).item() in (True, False) and bool(flow.tensor([3.0]) > 2)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(m)
    with pytest.raises(TypeError, match="takes bool tensors"):
        ~flow.tensor([1, 2])  # torch's ~ on integers is bitwise, which Globe does not have
    with pytest.raises(flow.Error, match=r"\[mean\] expects a floating tensor"):
        m.mean()
    # The accuracy line of every classifier.
    logits, y = flow.tensor(data((8, 5))), flow.tensor(np.arange(8) % 5)
    acc = (logits.argmax(1) == y).float().mean().item()
    np.testing.assert_allclose(acc, (data((8, 5)).argmax(1) == np.arange(8) % 5).mean(), rtol=1e-6)


def test_where_gradients_go_to_the_side_taken():
    a, b = data((4, 3)), data((4, 3), seed=5)
    x, y = flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True)
    flow.where(x > y, x, y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (a > b).astype(np.float32))
    np.testing.assert_array_equal(y.grad.numpy(), (a <= b).astype(np.float32))


def test_equal_and_allclose():
    a = data((4, 3))
    x = flow.tensor(a)
    assert flow.equal(x, flow.tensor(a.copy())) is True and x.equal(x + 1) is False
    assert flow.equal(x, flow.tensor(a[:2])) is False  # another shape
    assert flow.allclose(x, x * (1 + 1e-7)) and not flow.allclose(x, x + 1e-3)
    assert flow.allclose(x, x + 1e-3, atol=1e-2)
    nan = flow.tensor([float("nan"), 1.0])
    assert not flow.allclose(nan, nan) and flow.allclose(nan, nan, equal_nan=True)


@pytest.mark.parametrize("sbp", layouts(2), ids=str)
def test_global_comparisons_and_where_in_every_layout(sbp):
    a, b = data((6, 5)), data((6, 5), seed=6)
    x, y = flow.from_full(flow.tensor(a), all_ranks(), sbp), flow.from_full(flow.tensor(b), all_ranks(), sbp)
    m = x < y
    assert m.is_global and m.dtype == flow.bool
    np.testing.assert_array_equal(m.numpy(), a < b)
    np.testing.assert_array_equal((x >= 0).numpy(), a >= 0)
    np.testing.assert_array_equal(flow.where(m, x, y).numpy(), np.minimum(a, b))
    np.testing.assert_array_equal(x.masked_fill(m, 0.0).numpy(), np.where(a < b, 0, a))
    assert m.sum().item() == int((a < b).sum())
    np.testing.assert_allclose(m.float().mean().item(), (a < b).mean(), rtol=1e-6)
    assert flow.equal(x, x) and not flow.equal(x, y) and flow.allclose(x, x * 1.0)


@pytest.mark.parametrize("sbp", layouts(2), ids=str)
def test_global_indexing_by_arrays_and_masks_as_numpy(sbp):
    a = data((12, 3))
    x = flow.from_full(flow.tensor(a), all_ranks(), sbp)
    rows = [0, 7, 7, 11, -1]
    for key in [rows, np.array(rows), flow.tensor(np.array(rows)), np.array([[1, 2], [3, 0]]), []]:
        got = x[key]
        want = a[np.array(key.numpy() if isinstance(key, flow.Tensor) else key, dtype=np.int64)]
        assert got.is_global and tuple(got.shape) == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
    # Boolean masks: of every element, of the rows; local (numpy, list, tensor) or global.
    mask = a > 0
    for key in [mask, flow.tensor(mask), x > 0]:
        got = x[key]
        assert tuple(got.shape) == (int(mask.sum()),)  # every rank knows the count
        np.testing.assert_array_equal(got.numpy(), a[mask])
    row_mask = a[:, 0] > 0
    for key in [row_mask, row_mask.tolist(), x[:, 0] > 0]:
        np.testing.assert_array_equal(x[key].numpy(), a[row_mask])
    np.testing.assert_array_equal(x[x > 100].numpy(), a[a > 100])  # nothing selected: shape (0,)
    # The gradient reaches the selected rows, twice where a row is selected twice.
    w = flow.from_full(flow.tensor(a), all_ranks(), sbp).requires_grad_(True)
    w[[0, 7, 7]].sum().backward()
    want = np.zeros_like(a)
    want[[0, 7, 7][0]] += 1
    want[7] += 2
    np.testing.assert_array_equal(w.grad.numpy(), want)


def test_bad_array_indices():
    x = flow.from_full(flow.tensor(data((4, 3))), all_ranks(), flow.sbp.split(0))
    with pytest.raises(IndexError, match="index 4 is out of bounds for dim 0 with size 4"):
        x[[0, 4]]
    with pytest.raises(IndexError, match="mask of shape \\[3\\] does not match"):
        x[np.array([True, False, True])]
    with pytest.raises(IndexError, match="must be int64 or bool"):
        x[flow.tensor([0.0, 1.0])]
    if WORLD > 1:  # each rank its own list: from_full's check names them
        with pytest.raises(flow.Error, match="different whole values"):
            x[[RANK % 2]]
