"""The GPT of tutorial 07 (docs/07-gpt-3d.md) written in Python: the model of examples/gpt/ as
`globe.nn` modules, trained data x tensor parallel on a dp x tp mesh with the C++ program's
flags, initial values, batch order and optimizer, so it prints (and with --losses-out writes)
the losses build/bin/gpt prints for the same flags. Pipeline stages: build/bin/gpt --pp.

    python3 -m globe.launch --nproc_per_node 4 examples/python/gpt.py --dp 2 --tp 2 --steps 20
"""
import argparse
import json
import math
import os

import numpy as np

import globe as flow
import globe.nn as nn

B_, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)


# ---- Megatron's two operators on the tensor-parallel axis (the mesh's last) -------------------
def replicated_over_tp(t):
    """After a row-parallel layer: its partial sum over tp made broadcast (an all-reduce)."""
    return t.to_global(sbp=t.sbp[:-1] + (B_,))


def tp_region_input(t):
    """Before a column-parallel layer: broadcast over tp, and so is its gradient (all-reduced)."""
    s = t.sbp[:-1] + (B_,)
    return t.to_global(sbp=s, grad_sbp=s)


# ---- the model: nanoGPT's names; c_attn as [3, E, E] so that tp splits q, k, v by heads ----------
class QKV(nn.Module):
    def __init__(self, embd):
        super().__init__()
        self.weight = nn.Parameter(flow.zeros(3, embd, embd))
        self.bias = nn.Parameter(flow.zeros(3, embd))


class Attention(nn.Module):
    def __init__(self, embd):
        super().__init__()
        self.c_attn = QKV(embd)
        self.c_proj = nn.Linear(embd, embd)


class MLP(nn.Module):
    def __init__(self, embd):
        super().__init__()
        self.c_fc = nn.Linear(embd, 4 * embd)
        self.c_proj = nn.Linear(4 * embd, embd)


class Block(nn.Module):
    def __init__(self, embd, heads):
        super().__init__()
        # Made in the C++ model's order (its random draws), registered in its key order.
        ln_1, ln_2 = nn.LayerNorm(embd), nn.LayerNorm(embd)
        attn, mlp = Attention(embd), MLP(embd)
        self.ln_1, self.attn, self.ln_2, self.mlp = ln_1, attn, ln_2, mlp
        self.heads = heads

    def forward(self, x):  # x [B, T, E]
        B, T, E = x.shape
        H = self.heads
        D = E // H
        # q, k, v in one product: [1, B*T, E] @ [3, E, E]^T + bias [3, 1, E] -> [3, B*T, E]
        h = flow.unsqueeze(flow.reshape(tp_region_input(self.ln_1(x)), [B * T, E]), 0)
        qkv = flow.matmul_nt(h, self.attn.c_attn.weight, flow.unsqueeze(self.attn.c_attn.bias, 1))
        # as heads (views): [3, B*T, E] -> [3, B, T, H, D] -> [3, B, H, T, D]
        heads = flow.permute(flow.reshape(qkv, [3, B, T, H, D]), [0, 1, 3, 2, 4])
        # softmax(q k^T / sqrt(D)) over the keys up to each query, times v: one fused op -> [B, H, T, D]
        att = flow.causal_attention(heads, 1.0 / math.sqrt(D))
        y = flow.reshape(flow.transpose(att, 1, 2), [B, T, E])  # [B, T, E]
        a = x + replicated_over_tp(self.attn.c_proj(y))
        return a + replicated_over_tp(self.mlp.c_proj(flow.gelu_tanh(self.mlp.c_fc(tp_region_input(self.ln_2(a))))))


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab, c.embd)
        self.wpe = nn.Embedding(c.block, c.embd)
        self.h = nn.Sequential(*[Block(c.embd, c.heads) for _ in range(c.layers)])  # the blocks under the keys 0, 1, ...
        self.ln_f = nn.LayerNorm(c.embd)


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = Transformer(c)
        self.blocks = list(self.transformer.h)
        # nanoGPT's initialisation from the global seed, parameter by parameter in key order.
        residual_std = 0.02 / math.sqrt(2.0 * c.layers)
        with flow.no_grad():
            for name, p in self.named_parameters():
                if ".ln_" in name:
                    continue  # 1 and 0 already
                if name.endswith("bias"):
                    p.zero_()
                else:
                    std = residual_std if "c_proj.weight" in name else 0.02
                    p.copy_(flow.randn(*p.shape) * std)

    def forward(self, idx):  # idx [B, T] int64 -> logits [B, T, V]
        tr = self.transformer
        T = idx.shape[1]
        x = replicated_over_tp(flow.embedding(tr.wte.weight, idx)) + flow.narrow(tr.wpe.weight, 0, 0, T)
        for b in self.blocks:
            x = b(x)
        return flow.matmul_nt(tp_region_input(tr.ln_f(x)), tr.wte.weight)  # the head is tied to wte

    def distribute(self, mesh):
        """Every tensor on the dp x tp mesh, replicated; then Megatron's plan on the tp axis:
        vocabulary-parallel embedding (and tied head), column-parallel c_attn (by heads) and c_fc,
        row-parallel c_proj. Parameters keep their identity (an optimizer may already hold them)."""
        plan = {"transformer.wte.weight": S0, "attn.c_attn.weight": S1, "attn.c_attn.bias": S1,
                "attn.c_proj.weight": S1, "mlp.c_fc.weight": S0, "mlp.c_fc.bias": S0, "mlp.c_proj.weight": S1}
        layouts = {}
        for name, _ in self.named_parameters():
            split = next((s for key, s in plan.items() if name.endswith(key)), None)
            if split is not None:
                layouts[name] = (B_, split)
        super().distribute(mesh, layouts, (B_, B_))


# ---- the corpus and the reference's batch order (examples/gpt/corpus.cpp) ---------------------
def read_corpus(path):
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if "." not in n and n not in ("chinese", "tang300", "song100")
                       and os.path.isfile(os.path.join(path, n)) and not os.path.islink(os.path.join(path, n)))
        data = b"".join(open(os.path.join(path, n), "rb").read() for n in names)
    else:
        data = open(path, "rb").read()
    n_train = int(len(data) * 0.9)
    return np.frombuffer(data[:n_train], dtype=np.uint8), np.frombuffer(data[n_train:], dtype=np.uint8)


def windows(stream, step, batch, first, rows, block, shift):
    """Sequence j of step s starts at ((s * batch + j) * block) mod (len - block - 1)."""
    span = len(stream) - block - 1
    starts = ((step * batch + np.arange(first, first + rows)) * block) % span + shift
    return stream[starts[:, None] + np.arange(block)[None, :]].astype(np.int64)


def batch_on(mesh, stream, step, batch, block, shift, dp, rank):
    """This rank's rows of the step's batch, as the global [batch, block] tensor split over dp."""
    coord = list(mesh.ranks.flat).index(rank) // (mesh.ranks.size // dp)
    first = sum(batch // dp + (1 if r < batch % dp else 0) for r in range(coord))
    rows = batch // dp + (1 if coord < batch % dp else 0)
    local = flow.from_numpy(windows(stream, step, batch, first, rows, block, shift))
    return local.to_global(placement=mesh, sbp=(S0, B_))


def main():
    ap = argparse.ArgumentParser()
    for name, default in [("layers", 4), ("heads", 4), ("embd", 128), ("block", 64), ("vocab", 256), ("batch", 16),
                          ("steps", 30), ("warmup", 5), ("seed", 0), ("dp", 0), ("tp", 1), ("log-every", 10)]:
        ap.add_argument("--" + name, type=int, default=default)
    for name, default in [("lr", 1e-3), ("weight-decay", 0.1), ("grad-clip", 1.0)]:
        ap.add_argument("--" + name, type=float, default=default)
    ap.add_argument("--data", default="/usr/share/games/fortunes")
    ap.add_argument("--losses-out", default="")
    ap.add_argument("--device", default="cpu")  # or "cuda": each rank's shards on its GPU
    a = ap.parse_args()
    world, rank = flow.env.get_world_size(), flow.env.get_rank()
    dp = a.dp or max(1, world // a.tp)
    if dp * a.tp != world:
        raise SystemExit(f"gpt.py: --dp {dp} x --tp {a.tp} = {dp * a.tp} ranks, but the job has {world}")
    train, _ = read_corpus(a.data)

    flow.manual_seed(a.seed)
    model = GPT(a)
    mesh = flow.placement(a.device, ranks=[[d * a.tp + t for t in range(a.tp)] for d in range(dp)])
    model.distribute(mesh)
    # AdamW with weight decay on the matrices only (the C++ program's decay_matrices_only)
    matrices = [p for p in model.parameters() if len(p.shape) >= 2]
    others = [p for p in model.parameters() if len(p.shape) < 2]
    optimizer = flow.optim.AdamW([{"params": matrices, "weight_decay": a.weight_decay},
                                  {"params": others, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    losses = []
    total = a.warmup + a.steps
    for s in range(total):
        idx = batch_on(mesh, train, s, a.batch, a.block, 0, dp, rank)
        target = batch_on(mesh, train, s, a.batch, a.block, 1, dp, rank)
        loss = flow.cross_entropy(model(idx), target)
        loss.backward()
        if a.grad_clip > 0:
            flow.optim.clip_grad_norm_(matrices + others, a.grad_clip)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if rank == 0 and a.log_every > 0 and ((s + 1) % a.log_every == 0 or s + 1 == total):
            print(f"step {s + 1}/{total}  loss {losses[-1]:.4f}", flush=True)
    if rank == 0:
        print(f"globe GPT (Python) {sum(math.prod(p.shape) for p in model.parameters())} params, dp{dp}xtp{a.tp}: "
              f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
        if a.losses_out:
            with open(a.losses_out, "w") as f:
                json.dump(losses, f)


if __name__ == "__main__":
    main()
