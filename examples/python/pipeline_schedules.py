"""The pipeline object with its schedules (tutorial: docs/06-pipeline.md), the Python edition of
examples/pipeline_schedules.cpp: Flatten + Linear(784, 256) first, 8 blocks of Linear + ReLU, a head
last, one stage per rank. It prints the C++ program's plan, schedule and losses.

    python3 -m globe.launch --nproc_per_node 2 examples/python/pipeline_schedules.py \\
        [--schedule 1f1b|gpipe|interleaved|zb-h1|zbv] [--microbatches 8] [--iters 20]
"""
import argparse

import globe as flow
import globe.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--schedule", default="1f1b")
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--chunks", type=int, default=None)
    args = parser.parse_args()
    chunks = args.chunks or (2 if args.schedule in ("interleaved", "zbv") else 1)

    groups = [flow.placement("cpu", ranks=[r]) for r in range(flow.env.get_world_size())]
    flow.manual_seed(0)
    flatten = nn.Flatten()
    embed, head = nn.Linear(28 * 28, 256), nn.Linear(256, 10)
    blocks = [nn.Sequential(nn.Linear(256, 256), nn.ReLU()) for _ in range(8)]
    pipe = flow.pipeline.Pipeline(groups, blocks, schedule=args.schedule, microbatches=args.microbatches,
                                  chunks=chunks, first=[flatten, embed], last=[head])
    rank0 = flow.env.get_rank() == 0
    if rank0:
        print(pipe.describe() + pipe.schedule(), end="")

    params = embed.parameters() + [p for b in blocks for p in b.parameters()] + head.parameters()
    sgd = flow.optim.SGD(params, lr=0.05)
    x = flow.randn(64, 1, 28, 28)
    y = flow.tensor([(i * 7) % 10 for i in range(64)])
    for i in range(args.iters):
        r = pipe.step(x, y, flow.cross_entropy)
        sgd.step()
        sgd.zero_grad()
        value = r.loss.item()
        if rank0:
            print(f"iter {i} loss {value:g}")


if __name__ == "__main__":
    main()
