"""Saving and loading (tutorial: docs/04-save-load.md), the Python edition of
examples/save_load.cpp: the ToyModel trained, saved with global_dst_rank, loaded into a fresh
model with global_src_rank, and checked. save and load are collective: every rank calls them.

    python3 -m globe.launch --nproc_per_node 2 examples/python/save_load.py [--iters N] [--path FILE]
"""
import argparse

import numpy as np

import globe as flow
from data_parallel import ToyModel  # the original tutorial's model (examples/python/data_parallel.py)


def train(model, placement, iters, tag):
    optimizer = flow.optim.SGD(model.parameters(), lr=0.05)
    for i in range(iters):
        flow.manual_seed(1000 + i)  # the same batches in every run
        data = flow.randn(20, 10, placement=placement, sbp=flow.sbp.split(0))
        labels = flow.randn(20, 16, placement=placement, sbp=flow.sbp.split(0))
        loss = model(data, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        value = loss.item()
        if flow.env.get_rank() == 0:
            print(f"{tag} iter {i} loss {value:g}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--path", default="model_weights.safetensors")
    parser.add_argument("--device", default="cpu")  # or "cuda": each rank's shards on its GPU
    args = parser.parse_args()
    placement = flow.placement(args.device)

    flow.manual_seed(0)
    model = ToyModel()
    model.to_global(placement=placement, sbp=flow.sbp.broadcast)
    train(model, placement, args.iters, "train")
    flow.save(model.state_dict(), args.path, global_dst_rank=0)  # every rank calls it

    flow.manual_seed(42)  # a different initialisation, overwritten by the load
    model2 = ToyModel()
    model2.to_global(placement=placement, sbp=flow.sbp.broadcast)
    model2.load_state_dict(flow.load(args.path, global_src_rank=0))

    # The loaded parameters are the saved ones, in model2's own layout.
    same = all(np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(model.parameters(), model2.parameters()))
    if flow.env.get_rank() == 0:
        print("loaded parameters equal the saved ones: " + ("yes" if same else "NO"))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
