#!/usr/bin/env python3
"""PyTorch's side of the Llama training-step benchmark: Hugging Face transformers'
LlamaForCausalLM from a config.json, float32 on the CPU, AdamW(lr=1e-3, betas=(0.9, 0.95),
weight_decay=0.1), cross entropy on a token file read as build/bin/llama reads it (uint32, step s =
rows s*B .. s*B+B-1 of T + 1 tokens). Prints "RESULT {json}" with the median step time (the first
step left out), as build/bin/llama does. Runs in the peers' environment (scripts/setup_peers.sh):

    .venv-peers/bin/python bench/llama/torch_llama.py --config C.json --data tokens.bin --steps 10
"""
import argparse
import json
import statistics
import time

import numpy as np
import torch
import transformers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    with open(a.config) as f:
        cfg = transformers.LlamaConfig(**json.load(f))
    model = transformers.LlamaForCausalLM(cfg).float().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    tokens = np.fromfile(a.data, dtype="<u4").astype(np.int64)
    row = a.block + 1
    rows = len(tokens) // row
    losses, times = [], []
    for s in range(a.steps):
        idx = [(s * a.batch + b) % rows for b in range(a.batch)]
        batch = torch.from_numpy(np.stack([tokens[i * row:(i + 1) * row] for i in idx]))
        t0 = time.perf_counter()
        logits = model(batch[:, :-1]).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
    med = statistics.median(times[1:]) if len(times) > 1 else times[0]
    print("RESULT " + json.dumps({"torch": torch.__version__, "transformers": transformers.__version__,
                                  "threads": a.threads, "loss_first": losses[0], "loss_last": losses[-1],
                                  "step_ms_median": med * 1e3, "tokens_per_s_median": a.batch * a.block / med}))


if __name__ == "__main__":
    main()
