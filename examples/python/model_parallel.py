"""Model parallelism (tutorial: docs/03-model-parallel.md), the Python edition of
examples/model_parallel.cpp: the ToyModel with both Linear layers split along their output
features, the data broadcast. It prints the C++ program's losses.

    python3 -m globe.launch --nproc_per_node 2 examples/python/model_parallel.py [--iters N]
"""
import argparse

import globe as flow
import globe.nn as nn


class ModelParallelLinear(nn.Module):
    def __init__(self, in_features, out_features, placement):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        # weight [out, in] and bias [out] split along out_features: rank r holds rows of its slice.
        self.linear.distribute(placement, {"weight": flow.sbp.split(0), "bias": flow.sbp.split(0)},
                               flow.sbp.broadcast)

    def forward(self, x):
        return self.linear(x)


class ToyModel(nn.Module):
    def __init__(self, placement):
        super().__init__()
        self.net1 = ModelParallelLinear(10, 20, placement)
        self.net2 = ModelParallelLinear(20, 16, placement)
        self.relu = nn.ReLU()
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
    placement = flow.placement(args.device)
    model = ToyModel(placement)
    optimizer = flow.optim.SGD(model.parameters(), lr=0.05)
    rank0 = flow.env.get_rank() == 0
    for i in range(max_iter):
        flow.manual_seed(1 + i)  # each batch from its iteration, as in data_parallel
        data = flow.randn(20, 10, placement=placement, sbp=flow.sbp.broadcast)  # every rank sees all data
        labels = flow.randn(20, 16, placement=placement, sbp=flow.sbp.broadcast)
        loss = model(data, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        value = loss.item()
        if rank0:
            print(f"iter {i} loss {value:g}")
    text = flow.visualize(model.net1.linear.weight)
    if rank0:
        print(text, end="")


if __name__ == "__main__":
    main()
