"""How backward works on global tensors (tutorial: docs/05-backward.md), the Python edition of the
"local" part of docs/snippets/grad_layouts.cpp: gradients of local tensors made global, and of
to_local. Each rank prints its own local gradients; it prints what the C++ snippet prints.

    python3 -m globe.launch --nproc_per_node 2 examples/python/backward_local.py
"""
import globe as flow

rank, world = flow.env.get_rank(), flow.env.get_world_size()
p = flow.placement("cpu")


def say(line):
    if rank == 0:
        print(line)


def tell(what):
    print(f"  rank {rank}: {what}")


def values(t):
    return " ".join(f"{v:g}" for v in t.numpy())


say(f"world size {world}")
say("local -> global and back: each rank's local gradient")

xl = flow.full([3], rank + 1.0).requires_grad_()  # each rank's piece: 1s on rank 0, 2s on rank 1
xg = xl.to_global(placement=p, sbp=flow.sbp.split(0))
flow.sum(xg * xg).backward()
tell(f"split(0), sum(x * x): xl.grad() = {values(xl.grad)}")

wl = flow.ones(3, requires_grad=True)
flow.sum(wl.to_global(placement=p, sbp=flow.sbp.broadcast) * 2.0).backward()  # a B gradient
tell(f"broadcast, sum(2 * w): wl.grad() = {values(wl.grad)}")

vl = flow.ones(3, requires_grad=True)
d = flow.full([2, 3], 2.0, placement=p, sbp=flow.sbp.split(0))
flow.sum(d * vl.to_global(placement=p, sbp=flow.sbp.broadcast)).backward()  # a P gradient: each rank's rows
tell(f"broadcast, sum(d * v), d [2, 3] of 2s split(0): vl.grad() = {values(vl.grad)}")

b = flow.ones(3, placement=p, sbp=flow.sbp.broadcast, requires_grad=True)
flow.sum(b.to_local()).backward()  # on every rank: the accumulation into b is collective
gb = b.grad
say(f"  to_local of a B tensor, sum(b.to_local()).backward() on every rank: b.grad() "
    f"({', '.join(str(s) for s in gb.sbp)}) = {values(gb)}")
