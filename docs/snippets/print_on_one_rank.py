"""A common mistake (docs/01-quickstart.md §3, tests/python/test_examples.py): printing a global
tensor on rank 0 only. Printing gathers the tensor, a collective every rank of its placement must
enter; the other ranks end their program instead, and rank 0 must fail at once, naming them, not
after GLOBE_TIMEOUT."""
import globe as flow

x = flow.ones(4, 4, placement=flow.placement("cpu", ranks=list(range(flow.env.get_world_size()))),
              sbp=flow.sbp.split(0))
if flow.env.get_rank() == 0:
    print(x)
