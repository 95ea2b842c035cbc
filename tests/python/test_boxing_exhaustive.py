"""Every boxing from Python, as a user of OneFlow's global tensors would check it (under
globe-launch; 4 ranks for every case, fewer skip the placements they lack): for each pair of
placements — the same, overlapping, disjoint, 1-D to 2-D — and each pair of layouts among split(0),
split(1), broadcast and partial_sum, on even and uneven shapes, the value is unchanged and each
rank's local block is the one the layout gives it (blocks balanced, the first ones larger)."""
import itertools

import numpy as np
import pytest

import globe as flow

RANK, WORLD = flow.env.get_rank(), flow.env.get_world_size()
S0, S1, B, P = flow.sbp.split(0), flow.sbp.split(1), flow.sbp.broadcast, flow.sbp.partial_sum
LAYOUTS = {"S0": S0, "S1": S1, "B": B, "P": P}
PLACEMENTS = {  # name: ranks (a list, or rows of a 2-D mesh)
    "[0,1]": [0, 1],
    "[2,3]": [2, 3],
    "[0,1,3]": [0, 1, 3],
    "[1,0]": [1, 0],
    "[[0,1],[2,3]]": [[0, 1], [2, 3]],
}
PAIRS = [("[0,1]", "[0,1]"), ("[0,1]", "[2,3]"), ("[0,1,3]", "[2,3]"), ("[0,1]", "[1,0]"), ("[0,1,3]", "[0,1,3]")]


def ranks_of(name):
    r = PLACEMENTS[name]
    return [x for row in r for x in row] if isinstance(r[0], list) else r


def blocks(n, parts):
    """Balanced split of n into `parts` blocks, the first ones larger (Globe's and OneFlow's)."""
    q, r = divmod(n, parts)
    sizes = [q + (1 if i < r else 0) for i in range(parts)]
    starts = np.cumsum([0] + sizes[:-1])
    return [(int(s), int(s + z)) for s, z in zip(starts, sizes)]


def expected_local(whole, ranks, layout):
    if RANK not in ranks:
        return None
    i = ranks.index(RANK)
    if layout is B:
        return whole
    dim = 0 if layout is S0 else 1
    a, b = blocks(whole.shape[dim], len(ranks))[i]
    return whole[a:b] if dim == 0 else whole[:, a:b]


def make(whole, placement, layout):
    if layout is P:
        # This rank's term: the whole value split into terms by rank (any split sums back).
        ranks = placement.ranks
        term = whole / ranks.size if RANK in ranks else np.zeros_like(whole)
        return flow.tensor(term.astype(np.float64)).to_global(placement=placement, sbp=P)
    return flow.from_full(flow.tensor(whole.astype(np.float64)), placement, layout)


@pytest.mark.parametrize("shape", [(4, 6), (5, 7)])
@pytest.mark.parametrize("src, dst", PAIRS)
@pytest.mark.parametrize("src_layout, dst_layout", list(itertools.product(LAYOUTS, LAYOUTS)))
def test_boxing(shape, src, dst, src_layout, dst_layout):
    needed = max(ranks_of(src) + ranks_of(dst)) + 1
    if WORLD < needed:
        pytest.skip(f"needs {needed} ranks")
    rng = np.random.default_rng(7)
    whole = rng.integers(-9, 10, size=shape).astype(np.float64)  # exact in any summation order
    src_p, dst_p = flow.placement("cpu", PLACEMENTS[src]), flow.placement("cpu", PLACEMENTS[dst])
    x = make(whole, src_p, LAYOUTS[src_layout])
    y = x.to_global(placement=dst_p, sbp=LAYOUTS[dst_layout])
    assert y.placement == dst_p and y.shape == shape
    np.testing.assert_array_equal(y.numpy(), whole)  # the value, gathered (collective)
    if dst_layout != "P":
        want = expected_local(whole, ranks_of(dst), LAYOUTS[dst_layout])
        if want is not None:
            np.testing.assert_array_equal(y.to_local().numpy(), want)
        else:
            assert y.to_local().numel() == 0  # outside the placement: an empty shard


@pytest.mark.parametrize("src_layout", ["S0", "S1", "B", "P"])
@pytest.mark.parametrize("dst_layout", [(S0, S1), (S1, B), (B, P), (P, S0), (B, B)])
def test_boxing_into_a_2d_mesh(src_layout, dst_layout):
    if WORLD < 4:
        pytest.skip("needs 4 ranks")
    whole = np.arange(6 * 8, dtype=np.float64).reshape(6, 8)
    x = make(whole, flow.placement("cpu", [0, 1, 2, 3]), LAYOUTS[src_layout])
    mesh = flow.placement("cpu", [[0, 1], [2, 3]])
    y = x.to_global(placement=mesh, sbp=dst_layout)
    np.testing.assert_array_equal(y.numpy(), whole)
    np.testing.assert_array_equal(y.to_global(placement=flow.placement("cpu", [3, 2, 1, 0]), sbp=B).to_local().numpy(),
                                  whole)
