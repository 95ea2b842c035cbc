"""A Python module whose forward raises on one rank (rank 1), in a 2-rank data-parallel step:
the exception propagates there; the launcher stops the other rank and names rank 1."""
import globe as flow
import globe.nn as nn


class Faulty(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if flow.env.get_rank() == 1:
            raise ValueError("a bug in forward on rank 1")
        return self.fc(x)


p = flow.placement("cpu")
model = Faulty()
model.to_global(placement=p, sbp=flow.sbp.broadcast)
x = flow.randn(4, 4, placement=p, sbp=flow.sbp.split(0))
flow.sum(model(x)).backward()  # rank 0 waits in the gradient's all-reduce for rank 1, which is gone
print("not reached on rank 1")
