#!/usr/bin/python3
"""Globe's PyTorch reference for build/bin/gpt (tutorial docs/07-gpt-3d.md).

A GPT-2-style byte-level language model (nanoGPT's layout) trained on CPU with PyTorch 1.13
(Debian's python3-torch), in one process or as DDP over gloo. Its flags have the names, meanings
and defaults of build/bin/gpt's (except that --batch counts sequences *per rank* here), so the two
programs train the same model on the same data in the same order and can be compared loss for loss
from the same initial weights, and step rate for step rate.

Run it with Debian's interpreter (the one that has torch):

    /usr/bin/python3 bench/gpt/torch_gpt.py [--threads 1] [--steps 30]        # one process
    /usr/bin/python3 bench/gpt/torch_gpt.py --nproc 2 --threads 1             # DDP, 2 local ranks
    /usr/bin/python3 bench/gpt/torch_gpt.py --save-init init.safetensors --steps 0 --warmup 0
    /usr/bin/python3 bench/gpt/torch_gpt.py --load-init init.safetensors --losses-out losses.json
    /usr/bin/python3 bench/gpt/torch_gpt.py --print-keys --steps 0 --warmup 0
    python3 bench/gpt/torch_gpt.py --device cuda --layers 12 --heads 12 --embd 768 --block 1024 --batch 8

On a GPU (--device cuda) the model is built and initialised on the CPU as above, then moved; the
matmuls run in full float32 unless --tf32 (as Globe's, unless its --tf32), and the result adds the
GPU's name and peak_gpu_bytes (torch.cuda.max_memory_allocated over the run).

scripts/golden/make_gpt_golden.sh uses it to write the golden data of tests/gpt.

What it fixes:

Corpus. With --data a directory (default /usr/share/games/fortunes, Debian package `fortunes`):
the regular files (not symlinks) whose names contain no dot, leaving out the non-English
`chinese`, `tang300` and `song100`, in sorted name order, concatenated. With --data a file: its
bytes. Each byte is a token (vocabulary 256). The first int(0.9 * n) bytes are the training
stream, the rest the validation stream.

Batch order. For step s (warm-up steps included, counted from 0) and global sequence j, where
0 <= j < batch * world and rank r holds j in [r * batch, (r + 1) * batch):
    start  = ((s * batch * world + j) * block) mod (len(stream) - block - 1)
    input  = stream[start : start + block]
    target = stream[start + 1 : start + block + 1]
Validation batch v (0 <= v < --val-batches) is the same formula on the validation stream with
s = v and j in [0, batch), evaluated after training; val_loss is the mean of those losses.

Model (the state-dict keys, printed by --print-keys):
    transformer.wte.weight [vocab, embd]             token embedding; also the output head (tied)
    transformer.wpe.weight [block, embd]             learned position embedding
    transformer.h.{i}.ln_1.{weight,bias}             LayerNorm(embd, eps 1e-5) before attention
    transformer.h.{i}.attn.c_attn.{weight,bias}      Linear(embd, 3 embd) giving q, k, v in order
    transformer.h.{i}.attn.c_proj.{weight,bias}      Linear(embd, embd)
    transformer.h.{i}.ln_2.{weight,bias}             LayerNorm before the MLP
    transformer.h.{i}.mlp.c_fc.{weight,bias}         Linear(embd, 4 embd), GELU (tanh form)
    transformer.h.{i}.mlp.c_proj.{weight,bias}       Linear(4 embd, embd)
    transformer.ln_f.{weight,bias}                   final LayerNorm
Attention: --heads heads of width embd / heads, causal, softmax(q k^T / sqrt(head width)) v.
Residual pre-norm blocks, no dropout; logits = ln_f(x) @ wte.weight^T; the loss is the mean
cross-entropy over the batch * block positions (of the global batch under DDP: the ranks' losses
are averaged for reporting).

Initialization. torch.manual_seed(--seed), the modules built in key order above (their default
initializers draw from the generator too), then, walking the parameters in key order: every
c_proj weight ~ N(0, 0.02 / sqrt(2 * layers)), every other 2-D weight ~ N(0, 0.02), biases 0,
LayerNorm weights 1. --save-init writes these weights (F32 safetensors, keys sorted); --load-init
replaces them by a file's (keys the model lacks are ignored).

Optimizer. AdamW(lr --lr, betas (0.9, 0.95), eps 1e-8), weight decay --weight-decay on the 2-D
weights and 0 on the rest; before each step the gradients are clipped to a global L2 norm of
--grad-clip (0 turns clipping off). No learning-rate schedule.

Output. A summary line, then one line "RESULT {json}" on rank 0: mode, world, threads, the model
shape, batch_per_rank, params, corpus_bytes, steps, warmup, loss_first, loss_last, val_loss,
torch, and (when there are timed steps) step_ms_median, steps_per_s_median, tokens_per_s_median
over the --steps steps that follow the --warmup untimed ones. --losses-out writes the loss of
every step, warm-up included, as a JSON list.
"""
import argparse
import json
import math
import os
import struct
import sys

DEFAULT_CORPUS = "/usr/share/games/fortunes"
SKIPPED_FILES = ("chinese", "tang300", "song100")  # not English
CHILD_MARK = "GLOBE_TORCH_GPT_RANK_CHILD"


def parse_flags(argv=None):
    ap = argparse.ArgumentParser(description="Globe's PyTorch reference GPT (see the module docstring).")
    add = ap.add_argument
    add("--threads", type=int, default=1, help="intra-op threads per process")
    add("--layers", type=int, default=4)
    add("--heads", type=int, default=4)
    add("--embd", type=int, default=128)
    add("--block", type=int, default=64, help="sequence length (context)")
    add("--vocab", type=int, default=256)
    add("--batch", type=int, default=16, help="sequences per rank per step")
    add("--steps", type=int, default=30, help="timed steps (after the warm-up)")
    add("--warmup", type=int, default=5, help="untimed steps first (they train too)")
    add("--lr", type=float, default=1e-3)
    add("--weight-decay", type=float, default=0.1)
    add("--grad-clip", type=float, default=1.0, help="global gradient norm limit; 0 = no clipping")
    add("--seed", type=int, default=0)
    add("--data", default=DEFAULT_CORPUS, help="corpus: a directory (see the docstring) or a file")
    add("--save-init", help="write the initial weights to this safetensors file, then train")
    add("--load-init", help="take the initial weights from this safetensors file (F32)")
    add("--losses-out", help="write the loss of every step (warm-up included) here as JSON")
    add("--val-batches", type=int, default=8, help="validation batches evaluated after training")
    add("--val-every", type=int, default=0, help="also validate every N steps (0: only at the end)")
    add("--print-keys", action="store_true", help="print the state-dict keys and shapes")
    add("--nproc", type=int, default=1, help="run as this many local DDP ranks (gloo)")
    add("--device", default="cpu", choices=("cpu", "cuda"), help="where the model trains (one process on cuda)")
    add("--tf32", action="store_true", help="on cuda: let float32 matmuls use TF32 (off by default)")
    return ap.parse_args(argv)


FLAGS = parse_flags()


def run_local_ranks(n):
    """Re-runs this script as n ranks on this machine (torchrun's environment) and exits with the
    first failing rank's status, stopping the others; 0 when all succeed."""
    import signal
    import socket
    import subprocess
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, os.path.abspath(__file__)] + sys.argv[1:]
    ranks = []
    for r in range(n):
        env = dict(os.environ)
        env.update({"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_WORLD_SIZE": str(n),
                    "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), CHILD_MARK: "1"})
        ranks.append(subprocess.Popen(cmd, env=env))
    status = 0
    running = list(ranks)
    while running:
        for proc in list(running):
            code = proc.poll()
            if code is None:
                continue
            running.remove(proc)
            if code != 0 and status == 0:
                status = code if code > 0 else 128 - code  # killed by signal k: 128 + k
                for other in running:
                    other.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    sys.exit(status)


if FLAGS.nproc > 1 and CHILD_MARK not in os.environ and "RANK" not in os.environ:
    run_local_ranks(FLAGS.nproc)

# Thread counts must be in the environment before torch (and its OpenMP / BLAS) loads.
os.environ["OMP_NUM_THREADS"] = str(FLAGS.threads)
os.environ["OPENBLAS_NUM_THREADS"] = str(FLAGS.threads)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from machine_info import machine, same_blas_kernels_as_globe  # noqa: E402
same_blas_kernels_as_globe()  # before torch loads OpenBLAS's kernels
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Corpus


def corpus_files(directory):
    keep = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if "." in name or name in SKIPPED_FILES or os.path.islink(path) or not os.path.isfile(path):
            continue
        keep.append(path)
    return keep


def load_corpus(path):
    """The corpus as a 1-D int64 tensor of byte values."""
    if not os.path.exists(path):
        hint = " (apt-get install fortunes, or give --data FILE_OR_DIR)" if path == DEFAULT_CORPUS else ""
        sys.exit(f"torch_gpt: corpus {path} does not exist{hint}")
    if os.path.isdir(path):
        files = corpus_files(path)
        if not files:
            sys.exit(f"torch_gpt: no text files in {path} (apt-get install fortunes)")
        raw = bytearray()
        for f in files:
            with open(f, "rb") as fh:
                raw += fh.read()
    else:
        with open(path, "rb") as fh:
            raw = fh.read()
    return torch.from_numpy(np.frombuffer(bytes(raw), dtype=np.uint8).astype(np.int64))


# ---------------------------------------------------------------------------------------------
# Model. Submodules are created in state-dict key order: their default initializers draw from
# torch's generator, so the order decides the weights a seed gives.


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.heads
        self.c_attn = nn.Linear(cfg.embd, 3 * cfg.embd)
        self.c_proj = nn.Linear(cfg.embd, cfg.embd)
        # A plain attribute, not a buffer: DDP would broadcast a buffer, and gloo has no bool.
        self.future = torch.ones(cfg.block, cfg.block, dtype=torch.bool).triu(diagonal=1)

    def forward(self, x):
        B, T, C = x.shape
        D = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, D).transpose(1, 2)  # [B, heads, T, D]
        k = k.view(B, T, self.n_head, D).transpose(1, 2)
        v = v.view(B, T, self.n_head, D).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        probs = scores.masked_fill(self.future[:T, :T], float("-inf")).softmax(dim=-1)
        out = (probs @ v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(out)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.embd, 4 * cfg.embd)
        self.c_proj = nn.Linear(4 * cfg.embd, cfg.embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.embd)
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.vocab, cfg.embd),
            wpe=nn.Embedding(cfg.block, cfg.embd),
            h=nn.ModuleList(Block(cfg) for _ in range(cfg.layers)),
            ln_f=nn.LayerNorm(cfg.embd),
        ))
        proj_std = 0.02 / math.sqrt(2 * cfg.layers)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=proj_std)
            elif p.dim() == 2:
                nn.init.normal_(p, mean=0.0, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        B, T = idx.shape
        tr = self.transformer
        x = tr.wte(idx) + tr.wpe(torch.arange(T, device=idx.device))
        for block in tr.h:
            x = block(x)
        logits = tr.ln_f(x) @ tr.wte.weight.t()  # the head is the token embedding
        return F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))


# ---------------------------------------------------------------------------------------------
# safetensors (F32 only): 8-byte little-endian header length, JSON header, raw data.


def write_safetensors(path, tensors):
    header, chunks, offset = {}, [], 0
    for key in sorted(tensors):
        t = tensors[key]
        data = t.detach().contiguous().float().numpy().tobytes()
        header[key] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(head)))
        fh.write(head)
        for data in chunks:
            fh.write(data)


def read_safetensors(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    base = 8 + hlen
    tensors = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit(f"torch_gpt: {path}: {key} is {info['dtype']}; only F32 is read")
        lo, hi = info["data_offsets"]
        arr = np.frombuffer(raw[base + lo:base + hi], dtype="<f4").copy()
        tensors[key] = torch.from_numpy(arr).view(info["shape"])
    return tensors


# ---------------------------------------------------------------------------------------------
# Training


def main():
    cfg = FLAGS
    torch.set_num_threads(cfg.threads)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    distributed = world > 1
    rank = 0
    if distributed:
        dist.init_process_group(backend="gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    lead = rank == 0

    torch.manual_seed(cfg.seed)
    model = GPT(cfg)
    if cfg.print_keys and lead:
        for key, value in model.state_dict().items():
            print(key, list(value.shape))
    if cfg.load_init:
        missing, _ = model.load_state_dict(read_safetensors(cfg.load_init), strict=False)
        if missing and lead:
            print(f"torch_gpt: {cfg.load_init} lacks {missing}; those keep their seeded values", file=sys.stderr)
    if cfg.save_init and lead:
        write_safetensors(cfg.save_init, model.state_dict())

    device = torch.device(cfg.device)
    if device.type == "cuda":
        if distributed:
            sys.exit("torch_gpt: --device cuda runs one process (--nproc 1)")
        torch.backends.cuda.matmul.allow_tf32 = cfg.tf32
        torch.backends.cudnn.allow_tf32 = cfg.tf32
        model.to(device)
        for block in model.transformer.h:
            block.attn.future = block.attn.future.to(device)
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95), eps=1e-8)
    net = nn.parallel.DistributedDataParallel(model) if distributed else model

    corpus = load_corpus(cfg.data)
    split = int(len(corpus) * 0.9)
    train_stream, val_stream = corpus[:split], corpus[split:]
    T, B = cfg.block, cfg.batch
    window = torch.arange(T + 1)

    def get_batch(stream, s, first_row):
        rows = torch.arange(first_row, first_row + B)
        starts = ((s * B * world + rows) * T) % (len(stream) - T - 1)
        tokens = stream[starts.unsqueeze(1) + window.unsqueeze(0)].to(device)  # [B, T + 1]
        return tokens[:, :-1], tokens[:, 1:]

    def train_step(s):
        x, y = get_batch(train_stream, s, rank * B)
        opt.zero_grad(set_to_none=True)
        loss = net(x, y)
        loss.backward()
        if cfg.grad_clip > 0:
            nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        if not distributed:
            return loss.item()
        total = loss.detach().clone()  # the global batch's mean: the ranks' mean losses averaged
        dist.all_reduce(total)
        return total.item() / world

    def validate():
        with torch.no_grad():
            return [model(*get_batch(val_stream, v, 0)).item() for v in range(cfg.val_batches)]

    losses, seconds = [], []
    total_steps = cfg.warmup + cfg.steps
    for s in range(total_steps):
        if distributed and s == cfg.warmup:
            dist.barrier()  # the timed steps start together
        t0 = time.perf_counter()
        losses.append(train_step(s))  # .item() waits for the GPU
        if s >= cfg.warmup:
            seconds.append(time.perf_counter() - t0)
        if cfg.val_every > 0 and (s + 1) % cfg.val_every == 0 and s + 1 < total_steps:
            val = validate()  # the same batches as the final validation, as Globe's gpt --val-every
            if lead and val:
                print(f"step {s + 1}  val loss {sum(val) / len(val):.4f}", flush=True)

    val = validate()

    result = {
        "mode": "ddp-gloo" if distributed else "single", "world": world, "threads": cfg.threads,
        "layers": cfg.layers, "heads": cfg.heads, "embd": cfg.embd, "block": T, "vocab": cfg.vocab,
        "batch_per_rank": B, "params": sum(p.numel() for p in params), "corpus_bytes": len(corpus),
        "steps": cfg.steps, "warmup": cfg.warmup,
        "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
        "val_loss": sum(val) / len(val) if val else None,
        "torch": torch.__version__, "device": cfg.device,
    }
    if device.type == "cuda":
        result["tf32"] = cfg.tf32
        result["gpu"] = torch.cuda.get_device_name(device)
        result["peak_gpu_bytes"] = torch.cuda.max_memory_allocated(device)
    if seconds:
        med = statistics.median(seconds)
        result["step_ms_median"] = med * 1e3
        result["steps_per_s_median"] = 1.0 / med
        result["tokens_per_s_median"] = B * T * world / med

    if lead:
        if cfg.losses_out:
            with open(cfg.losses_out, "w") as fh:
                json.dump(losses, fh)
                fh.write("\n")
        summary = (f"torch GPT {result['params']} params, world {world}: "
                   f"loss {result['loss_first']} -> {result['loss_last']}")
        if val:
            summary += f", val {result['val_loss']:.4f}"
        if seconds:
            summary += f", {result['tokens_per_s_median']:.0f} tokens/s"
        print(summary)
        result["machine"] = machine(torch)
        print("RESULT " + json.dumps(result), flush=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
