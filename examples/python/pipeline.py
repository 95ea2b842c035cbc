"""Pipeline parallelism, the plain two-stage form (tutorial: docs/06-pipeline.md), the Python
edition of examples/pipeline.cpp: stage 0 on rank 0, stage 1 on rank 1, the activations moved
between them with to_global, two micro-batches per step. It prints the C++ program's losses.

    python3 -m globe.launch --nproc_per_node 2 examples/python/pipeline.py [--iters N]
"""
import argparse

import globe as flow
import globe.nn as nn


class Stage0(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear0 = nn.Linear(28 * 28, 512)
        self.relu0 = nn.ReLU()

    def forward(self, x):
        return self.relu0(self.linear0(self.flatten(x)))


class Stage1(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(512, 512)
        self.linear2 = nn.Linear(512, 10)
        self.relu1 = nn.ReLU()

    def forward(self, x):
        return self.linear2(self.relu1(self.linear1(x)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--device", default="cpu")  # or "cuda": each rank's shards on its GPU
    args = parser.parse_args()
    iters = args.iters
    last = 1 if flow.env.get_world_size() > 1 else 0
    P0, P1 = flow.placement(args.device, ranks=[0]), flow.placement(args.device, ranks=[last])

    flow.manual_seed(0)
    stage0, stage1 = Stage0(), Stage1()
    stage0.to_global(placement=P0, sbp=flow.sbp.broadcast)
    stage1.to_global(placement=P1, sbp=flow.sbp.broadcast)
    sgd = flow.optim.SGD(stage0.parameters() + stage1.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    # One fixed batch, as in the original: images on stage 0, labels on the last stage.
    batch, microbatches = 16, 2
    rows = batch // microbatches
    x = flow.randn(batch, 1, 28, 28, placement=P0, sbp=flow.sbp.broadcast)
    y = flow.from_full(flow.tensor([(i * 7) % 10 for i in range(batch)]), P1, flow.sbp.broadcast)

    for i in range(iters):
        total = None
        for k in range(microbatches):
            h = stage0(flow.narrow(x, 0, k * rows, rows))
            out = stage1(h.to_global(placement=P1))  # rank 0 -> rank 1
            loss = loss_fn(out, flow.narrow(y, 0, k * rows, rows)) / float(microbatches)
            loss.backward()  # on rank 0 this returns at once: its part runs when the gradient is read
            total = loss.detach() if total is None else total.detach() + loss.detach()
        sgd.step()  # reads the gradients: stage 0's backward passes finish here, in order
        sgd.zero_grad()
        value = total.item()
        if flow.env.get_rank() == 0:
            print(f"iter {i} loss {value:g}")


if __name__ == "__main__":
    main()
