#!/usr/bin/python3
"""The PyTorch side of bench/run_benchmarks.sh: the training step of bench/bench_mlp.cpp, timed the
same way, in one process or data parallel with DDP over gloo.

Model Linear(H, H) - ReLU - Linear(H, H), MSE loss against a fixed random target, plain SGD (lr
0.01); one fixed random batch of --batch rows per rank. Every step (zero_grad, forward,
loss, backward with DDP's gradient all-reduce, optimizer step) is timed after --warmup untimed
steps; rank 0 prints a summary and one "RESULT {json}" line with the field names bench_mlp uses
(steps_per_s_median, step_ms_median, samples_per_s_global_median, ...).

    /usr/bin/python3 bench/torch_mlp.py [--threads 1] [--hidden 1024] [--batch 64]
    /usr/bin/python3 bench/torch_mlp.py --nproc 2 --threads 1       DDP, 2 local ranks

Debian's python3-torch computes Linear with OpenBLAS, whose thread count only OPENBLAS_NUM_THREADS
controls (torch.set_num_threads does not), so --threads is put into the environment before torch
is imported, here and in the ranks --nproc starts.
"""
import argparse
import json
import os
import statistics
import sys
import time

from machine_info import machine, same_blas_kernels_as_globe


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1, help="threads per process (torch and OpenBLAS)")
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--batch", type=int, default=64, help="rows per rank")
    p.add_argument("--steps", type=int, default=50, help="timed steps")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--nproc", type=int, default=1, help="ranks on this machine (DDP over gloo when > 1)")
    return p.parse_args()


def train(rank, args, port):
    same_blas_kernels_as_globe()  # before torch loads OpenBLAS's kernels
    import torch
    import torch.distributed as dist
    torch.set_num_threads(args.threads)
    world = args.nproc
    if world > 1:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    torch.manual_seed(0)  # the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(args.hidden, args.hidden))
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own batch
    x = torch.randn(args.batch, args.hidden, generator=gen)
    y = torch.randn(args.batch, args.hidden, generator=gen)

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    first = step()
    for _ in range(args.warmup - 1):
        step()
    seconds = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        last = step()
        seconds.append(time.perf_counter() - t0)
    if world > 1:
        dist.destroy_process_group()
    if rank != 0:
        return
    rates = sorted(1.0 / s for s in seconds)
    median = statistics.median(rates)
    res = {"mode": "ddp-gloo" if world > 1 else "single", "world": world, "threads_per_proc": args.threads,
           "hidden": args.hidden, "batch_per_rank": args.batch, "steps": args.steps, "warmup": args.warmup,
           "steps_per_s_median": median, "steps_per_s_min": rates[0], "steps_per_s_max": rates[-1],
           "steps_per_s_mean": len(seconds) / sum(seconds),
           "samples_per_s_global_median": median * args.batch * world, "step_ms_median": 1000.0 / median,
           "loss_first": first, "loss_last": last, "torch": torch.__version__, "machine": machine(torch)}
    print(f"torch_mlp {res['mode']} world {world}: {median:.1f} steps/s median ({1000.0 / median:.2f} ms/step), "
          f"loss {first:.5f} -> {last:.5f}")
    print("RESULT " + json.dumps(res), flush=True)


def main():
    args = parse()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)  # before torch is imported, also by the spawned ranks
    if args.nproc == 1:
        train(0, args, None)
        return 0
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(train, args=(args, port), nprocs=args.nproc, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
