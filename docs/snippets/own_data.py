"""Your own dataset (docs/01-quickstart.md §4): each rank reads only its rows, and the pieces become
one global batch. local_block gives the rows: the balanced blocks that to_global expects.

    PYTHONPATH=build/python /usr/bin/python3 -m globe.launch --nproc_per_node 2 docs/snippets/own_data.py
"""
import numpy as np

import globe as flow

# Stands for a file every rank can open, read lazily: np.load("train.npy", mmap_mode="r").
dataset = np.arange(101 * 2, dtype=np.float32).reshape(101, 2)

placement = flow.placement("cpu")
start, shape = flow.local_block(list(dataset.shape), placement, flow.sbp.split(0))
rows = dataset[start[0]:start[0] + shape[0]]  # only this rank's rows are read
batch = flow.tensor(np.ascontiguousarray(rows)).to_global(placement=placement, sbp=flow.sbp.split(0))
total = batch.sum().item()  # collective: every rank calls it
print(f"rank {flow.env.get_rank()} read rows {start[0]}-{start[0] + shape[0] - 1}; "
      f"batch {list(batch.shape)}, sum {total:g}")
