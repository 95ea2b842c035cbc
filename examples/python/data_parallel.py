"""Data parallelism (tutorial: docs/02-data-parallel.md), the Python edition of
examples/data_parallel.cpp: the original tutorial's ToyModel, parameters broadcast, each batch
split along dim 0. It prints the C++ program's losses.

    python3 -m globe.launch --nproc_per_node 2 examples/python/data_parallel.py [--iters N]
"""
import argparse

import globe as flow
import globe.nn as nn


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 20)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(20, 16)
        self.loss_fn = nn.MSELoss()

    def forward(self, x, labels):
        return self.loss_fn(self.net2(self.relu(self.net1(x))), labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--device", default="cpu")  # or "cuda": each rank's shards on its GPU
    args = parser.parse_args()
    max_iter = args.iters
    flow.manual_seed(0)
    placement = flow.placement(args.device, ranks=list(range(flow.env.get_world_size())))

    model = ToyModel()
    model.to_global(placement=placement, sbp=flow.sbp.broadcast)  # rank 0's initial parameters win

    optimizer = flow.optim.SGD(model.parameters(), lr=0.05)
    for i in range(max_iter):
        flow.manual_seed(1 + i)  # each batch from its iteration alone, as the C++ program
        data = flow.randn(20, 10, placement=placement, sbp=flow.sbp.split(0))
        labels = flow.randn(20, 16, placement=placement, sbp=flow.sbp.split(0))
        loss = model(data, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        value = loss.item()  # collective: every rank asks, rank 0 prints
        if flow.env.get_rank() == 0:
            print(f"iter {i} loss {value:g}")


if __name__ == "__main__":
    main()
