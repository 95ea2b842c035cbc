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


def test_seeded_local_streams_agree_on_every_rank():
    # After manual_seed every rank draws the same local stream; a broadcast layout takes rank 0's
    # values either way, so a data-parallel model starts replicated.
    flow.manual_seed(9)
    mine = flow.randn(4)
    pieces = flow.local_to_global(flow.unsqueeze(mine, 0), all_ranks(), flow.sbp.split(0)).numpy()
    for r in range(WORLD):
        np.testing.assert_array_equal(pieces[r], mine.numpy())
