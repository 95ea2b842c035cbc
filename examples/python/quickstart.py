"""Quick start (tutorial: docs/01-quickstart.md), the Python edition of examples/quickstart.cpp:
one model, data and tensor parallel at once — layer 1 replicated and run on each rank's samples,
then the block fc2 -> fc3 split Megatron-style (column- then row-parallel) over the gathered
activations. It prints the C++ program's losses and layouts.

    python3 -m globe.launch --nproc_per_node 2 examples/python/quickstart.py [--iters N]
"""
import argparse

import globe as flow
import globe.nn as nn


class HybridModel(nn.Module):
    def __init__(self, placement):
        super().__init__()
        self.fc1 = nn.Linear(32, 64)                             # replicated, run on each rank's samples
        self.fc2 = nn.ColumnParallelLinear(64, 128, placement)   # weight S(0): each rank its features
        self.fc3 = nn.RowParallelLinear(128, 8, placement)       # weight S(1): partial sums out
        self.fc1.to_global(placement=placement, sbp=flow.sbp.broadcast)

    def forward(self, x):
        h = flow.relu(self.fc1(x))                                # S(0): each rank its own samples
        h = h.to_global(placement=h.placement, sbp=flow.sbp.broadcast)  # all-gather the samples
        return self.fc3(flow.relu(self.fc2(h)))                  # hidden S(1), then partial sums P


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--boxing-report", action="store_true")  # what one step communicated
    parser.add_argument("--device", default="cpu")  # or "cuda": each rank's shards on its GPU
    args = parser.parse_args()
    max_iter = args.iters
    flow.manual_seed(0)
    placement = flow.placement(args.device)  # every launched rank
    model = HybridModel(placement)
    optimizer = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    # A fixed regression task: targets from a hidden random linear map of the inputs.
    x = flow.randn(64, 32, placement=placement, sbp=flow.sbp.split(0))   # batch split: data parallel
    teacher = flow.randn(32, 8, placement=placement, sbp=flow.sbp.broadcast)
    y = flow.matmul(x, teacher) * 0.2                                     # y keeps x's split

    rank0 = flow.env.get_rank() == 0
    for i in range(max_iter):
        if i == max_iter - 1:
            flow.reset_boxing_paths()  # count the last step's communication only
        pred = model(x)
        loss = flow.mse_loss(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        value = loss.item()
        if rank0:
            print(f"iter {i} loss {value:g}")
        if i == 0:
            # Layouts: which rank holds which block (metadata only, no communication).
            shown = [("fc1.weight", model.fc1.weight), ("fc2.weight", model.fc2.weight),
                     ("fc3.weight", model.fc3.weight), ("x", x), ("pred", pred)]
            text = "".join(f"{name}: {flow.visualize(t)}" for name, t in shown)
            if rank0:
                print(text, end="")
    if args.boxing_report and rank0:
        # What one step communicated on this rank: where a layout change was needed, and how often.
        print("boxing in one step (calls, what asked, the path):")
        for path, n in flow.boxing_paths():
            print(f"  {n}  {path}")


if __name__ == "__main__":
    main()
