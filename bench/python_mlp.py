"""The data-parallel MLP step of bench_mlp.cpp, from Python (import globe): Linear(H, H) - ReLU -
Linear(H, H), MSE loss, SGD (lr 0.01), one fixed batch split over the ranks (batch per rank).
Prints one "RESULT {json}" line (rank 0) with the median step time, to compare with bench_mlp:

    bench/run_python_overhead.sh     (both, in pairs; see bench/RESULTS.md)
    PYTHONPATH=build/python /usr/bin/python3 -m globe.launch --nproc_per_node 2 bench/python_mlp.py
"""
import argparse
import json
import statistics
import time

import globe as flow
import globe.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    a = parser.parse_args()
    world = flow.env.get_world_size()
    p = flow.placement("cpu")
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(a.hidden, a.hidden), nn.ReLU(), nn.Linear(a.hidden, a.hidden))
    model.to_global(placement=p, sbp=flow.sbp.broadcast)
    opt = flow.optim.SGD(model.parameters(), lr=0.01)
    flow.manual_seed(1234)
    x = flow.randn(a.batch * world, a.hidden, placement=p, sbp=flow.sbp.split(0))
    y = flow.randn(a.batch * world, a.hidden, placement=p, sbp=flow.sbp.split(0))

    def step():
        opt.zero_grad()
        loss = flow.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    if flow.env.get_rank() == 0:
        print("RESULT " + json.dumps({"bench": "python_mlp", "world": world, "hidden": a.hidden,
                                      "batch_per_rank": a.batch, "steps": a.steps, "step_ms_median": 1000 * med}))


if __name__ == "__main__":
    main()
