"""The Llama of tutorial 09 (docs/09-llama-hf.md) written in Python: the model of examples/llama/
as `globe.nn` modules under Hugging Face's names, a `save_pretrained` directory loaded straight into a
dp x tp x pp layout, greedy generation with a KV cache, and AdamW training on a token file
(uint32 ids, build/bin/llama's rows), so it prints the tokens and losses build/bin/llama prints for
the same flags. Pipeline stages are placements (OneFlow's way): each stage's layers live on its own
dp x tp mesh and the activations move to the next with to_global; build/bin/llama runs the same
stages under a schedule (1F1B, ...). --zero 0-3 and --recompute as build/bin/llama's.

    python3 -m globe.launch --nproc_per_node 4 examples/python/llama.py --load-hf tests/llama/data/gqa --tp 2 \\
        --pp 2 --generate 215,215,233,241,247 --tokens 12
"""
import argparse
import json
import math

import numpy as np

import globe as flow
import globe.nn as nn
from globe.utils.checkpoint import checkpoint

B_, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)


def rope_tables(c, T):
    """cos and sin [T, head_dim / 2] of positions 0..T-1, each step in float32 as transformers does
    (which repeats them for both halves; flow.rotary_embedding takes each once)."""
    D = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    f32 = np.float32
    inv = f32(1.0) / np.power(f32(c.get("rope_theta", 10000.0)), np.arange(0, D, 2).astype(f32) / f32(D))
    r = c.get("rope_scaling")
    if r:  # Llama 3: long wavelengths slowed by `factor`, the middle band blended
        factor, lo, hi = f32(r["factor"]), f32(r["low_freq_factor"]), f32(r["high_freq_factor"])
        old = r["original_max_position_embeddings"]
        wavelen = f32(2 * math.pi) / inv
        scaled = np.where(wavelen > f32(old / r["low_freq_factor"]), inv / factor, inv)
        smooth = (f32(old) / wavelen - lo) / (hi - lo)
        blended = (f32(1) - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < f32(old / r["high_freq_factor"])) & ~(wavelen > f32(old / r["low_freq_factor"]))
        inv = np.where(medium, blended, scaled).astype(f32)
    angles = np.arange(T).astype(f32)[:, None] * inv[None, :]
    return np.cos(angles).astype(f32), np.sin(angles).astype(f32)


def repeat_kv(x, g):
    """[B, KV, T, D] -> [B, KV * g, T, D]: each KV head for its g query heads."""
    if g == 1:
        return x
    B, KV, T, D = x.shape
    return flow.reshape(flow.expand(flow.unsqueeze(x, 2), [B, KV, g, T, D]), [B, KV * g, T, D])


class Attention(nn.Module):
    def __init__(self, c, D):
        super().__init__()
        E, H, KV = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.q_proj, self.k_proj = nn.Linear(E, H * D, bias=False), nn.Linear(E, KV * D, bias=False)
        self.v_proj, self.o_proj = nn.Linear(E, KV * D, bias=False), nn.Linear(H * D, E, bias=False)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        E, I = c["hidden_size"], c["intermediate_size"]
        self.gate_proj, self.up_proj = nn.Linear(E, I, bias=False), nn.Linear(E, I, bias=False)
        self.down_proj = nn.Linear(I, E, bias=False)


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.H, self.KV = c["num_attention_heads"], c["num_key_value_heads"]
        self.D = c.get("head_dim") or c["hidden_size"] // self.H
        self.input_layernorm = nn.RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c, self.D)
        self.post_attention_layernorm = nn.RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, cache=None):  # x [B, T, E]; cache: this layer's keys and values
        B, T, _ = x.shape
        H, KV, D = self.H, self.KV, self.D
        h = nn.enter_tp_region(self.input_layernorm(x))
        a = self.self_attn
        # x * cos + rotate_half(x) * sin, one fused op
        q = flow.rotary_embedding(flow.transpose(flow.reshape(a.q_proj(h), [B, T, H, D]), 1, 2), cos, sin)
        k = flow.rotary_embedding(flow.transpose(flow.reshape(a.k_proj(h), [B, T, KV, D]), 1, 2), cos, sin)
        v = flow.transpose(flow.reshape(a.v_proj(h), [B, T, KV, D]), 1, 2)
        if cache is not None:  # generation: the positions before these are cached (split by KV heads under tp)
            if "k" in cache:
                k, v = flow.cat([cache["k"], k], 2), flow.cat([cache["v"], v], 2)
            cache["k"], cache["v"] = k, v
        G, scale = H // KV, 1.0 / math.sqrt(D)
        if k.shape[2] == T:  # every position at once: one fused op -> [B, H, T, D]
            qkv = flow.cat([flow.unsqueeze(t, 0) for t in (q, repeat_kv(k, G), repeat_kv(v, G))], 0)
            att = flow.causal_attention(qkv, scale)
        else:  # one new position: it sees every cached key
            att = flow.matmul(flow.softmax(flow.matmul(q, flow.transpose(repeat_kv(k, G), 2, 3)) * scale, -1), repeat_kv(v, G))
        x = x + nn.reduce_over_tp(a.o_proj(flow.reshape(flow.transpose(att, 1, 2), [B, T, H * D])))
        h2 = nn.enter_tp_region(self.post_attention_layernorm(x))
        return x + nn.reduce_over_tp(self.mlp.down_proj(flow.swiglu(self.mlp.gate_proj(h2), self.mlp.up_proj(h2))))


class Inner(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.Sequential(*[DecoderLayer(c) for _ in range(c["num_hidden_layers"])])  # keys 0, 1, ...
        self.norm = nn.RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Inner(c)
        self.tied = c.get("tie_word_embeddings", False)
        if not self.tied:
            self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        self.rope = {}
        self.recompute = False  # each layer's forward run again in the backward instead of kept
        self.meshes, self.stage_of = [], []  # set by distribute

    def rope_on(self, stage, n):
        """cos and sin of positions 0..n-1 on stage `stage`'s mesh, replicated; made once per stage."""
        if (stage, n) not in self.rope:
            self.rope[stage, n] = [flow.from_numpy(t).to_global(placement=self.meshes[stage], sbp=(B_, B_))
                                   for t in rope_tables(self.config, n)]
        return self.rope[stage, n]

    def forward(self, idx, caches=None, start=0):  # idx [B, T] int64 at positions start.. on stage 0 -> logits [B, T, V]
        T = idx.shape[1]
        x = nn.reduce_over_tp(flow.embedding(self.model.embed_tokens.weight, idx))
        n = max(start + T, self.config.get("max_position_embeddings", 0))
        for i in range(self.config["num_hidden_layers"]):
            stage = self.stage_of[i]
            x = x.to_global(placement=self.meshes[stage])  # a new stage: each rank sends its shard to its peer there
            cos, sin = (flow.narrow(t, 0, start, T) for t in self.rope_on(stage, n))
            if self.recompute and caches is None:
                x = checkpoint(self.model.layers[i], x, cos, sin)
            else:
                x = self.model.layers[i](x, cos, sin, caches[i] if caches is not None else None)
        last = self.meshes[-1]
        # a tied head on another stage reads the embedding moved there (its gradient flows back)
        w = self.model.embed_tokens.weight.to_global(placement=last) if self.tied else self.lm_head.weight
        return flow.matmul_nt(nn.enter_tp_region(self.model.norm(x.to_global(placement=last))), w)

    def distribute(self, meshes, tp):
        """Each stage's modules on its dp x tp mesh (the embedding on the first, the norm and head on
        the last, the layers in consecutive runs as build/bin/llama's pipeline cuts them); on the tp
        axis (the mesh's last) Megatron's plan: q, k, v, gate, up by output rows (whole heads and KV
        heads on each rank), o and down by input columns, embedding and head by vocabulary rows; norms
        replicated."""
        c = self.config
        if c["num_attention_heads"] % tp or c["num_key_value_heads"] % tp:
            raise SystemExit(f"llama.py: {c['num_attention_heads']} heads on {c['num_key_value_heads']} KV heads "
                             f"cannot be split over --tp {tp}")
        L, S = c["num_hidden_layers"], len(meshes)
        if L < S:
            raise SystemExit(f"llama.py: --pp {S} stages need at least as many layers; the model has {L}")
        self.meshes = meshes
        self.stage_of = [s for s in range(S) for _ in range(L // S + (1 if s < L % S else 0))]
        # (module, its stage's mesh, whether all its weights split by vocabulary rows)
        parts = [(self.model.embed_tokens, meshes[0], True), (self.model.norm, meshes[-1], False)]
        parts += [(layer, meshes[s], False) for layer, s in zip(self.model.layers, self.stage_of)]
        if not self.tied:
            parts.append((self.lm_head, meshes[-1], True))
        rows = ("q_proj.weight", "k_proj.weight", "v_proj.weight", "gate_proj.weight", "up_proj.weight")
        for module, mesh, vocab in parts:
            layouts = {}
            for name, _ in module.named_parameters():
                if vocab or name.endswith(rows):
                    layouts[name] = (B_, S0)
                elif name.endswith(("o_proj.weight", "down_proj.weight")):
                    layouts[name] = (B_, S1)
            module.distribute(mesh, layouts, (B_, B_))


def rows_on(mesh, tokens, step, batch, block, shift, dp, rank):
    """This rank's rows of step `step` (rows step*batch .. + batch - 1 of block + 1 tokens, the file
    wrapping around), from `shift` on, as the global [batch, block] tensor split over dp on `mesh`
    (a stage's; the rows of a rank outside it are not read)."""
    n_rows = len(tokens) // (block + 1)
    per_stage = mesh.ranks.size
    coord = rank % per_stage // (per_stage // dp)
    first = sum(batch // dp + (1 if r < batch % dp else 0) for r in range(coord))
    count = batch // dp + (1 if coord < batch % dp else 0)
    idx = (step * batch + np.arange(first, first + count)) % n_rows
    local = tokens[idx[:, None] * (block + 1) + shift + np.arange(block)[None, :]].astype(np.int64)
    return flow.from_numpy(local).to_global(placement=mesh, sbp=(S0, B_))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--load-hf", required=True, help="a Hugging Face checkpoint directory")
    for name, default in [("dp", 0), ("tp", 1), ("pp", 1), ("microbatches", 1), ("tokens", 16), ("block", 16),
                          ("batch", 4), ("steps", 0)]:
        ap.add_argument("--" + name, type=int, default=default)
    for name, default in [("lr", 1e-3), ("weight-decay", 0.1)]:
        ap.add_argument("--" + name, type=float, default=default)
    ap.add_argument("--generate", default="", help="token ids, comma-separated: continue them (greedy)")
    ap.add_argument("--no-kv-cache", action="store_true", help="run the whole context again for each new token")
    ap.add_argument("--zero", type=int, default=0, choices=range(4), help="ZeRO stage over the data-parallel ranks")
    ap.add_argument("--recompute", action="store_true", help="recompute each layer's activations in the backward")
    ap.add_argument("--data", default="", help="a token file (uint32 ids) to train --steps on")
    ap.add_argument("--losses-out", default="")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    world, rank = flow.env.get_world_size(), flow.env.get_rank()
    dp = a.dp or max(1, world // (a.tp * a.pp))
    if dp * a.tp * a.pp != world:
        raise SystemExit(f"llama.py: --dp {dp} x --tp {a.tp} x --pp {a.pp} = {dp * a.tp * a.pp} ranks, but the job has {world}")
    with open(a.load_hf + "/config.json") as f:
        c = json.load(f)
    c.setdefault("num_key_value_heads", c["num_attention_heads"])
    c.setdefault("rms_norm_eps", 1e-6)

    model = Llama(c)
    # stage s: ranks s * dp * tp .. as a dp x tp mesh (build/bin/llama's order)
    meshes = [flow.placement(a.device, ranks=[[(s * dp + d) * a.tp + t for t in range(a.tp)] for d in range(dp)])
              for s in range(a.pp)]
    model.distribute(meshes, a.tp)
    flow.load_sharded_into(a.load_hf, model.state_dict())  # each rank reads only its blocks' bytes
    model.recompute = a.recompute
    if a.zero == 3:  # each layer's weights split over dp too, gathered while it runs (FSDP)
        for layer in model.model.layers:
            nn.fully_shard(layer)

    if a.steps > 0:
        tokens = np.fromfile(a.data, dtype="<u4")
        optimizer = flow.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=a.weight_decay)
        optimizer.set_zero_stage(min(a.zero, 2))  # optimizer state (1) and gradients (2) split over dp
        M = a.microbatches
        if a.batch % (M * dp):
            raise SystemExit(f"llama.py: --batch {a.batch} does not split into --microbatches {M} x --dp {dp}")
        losses = []
        for s in range(a.steps):
            x = rows_on(meshes[0], tokens, s, a.batch, a.block, 0, dp, rank)  # inputs on the first stage
            y = rows_on(meshes[-1], tokens, s, a.batch, a.block, 1, dp, rank)  # targets on the last
            total, rows = 0.0, a.batch // M
            for k in range(M):  # each micro-batch's backward starts as its forward ends (GPipe's order)
                loss = flow.cross_entropy(model(flow.narrow(x, 0, k * rows, rows)), flow.narrow(y, 0, k * rows, rows)) / float(M)
                loss.backward()
                total = loss.detach() + total
            optimizer.step()
            optimizer.zero_grad()
            losses.append(total.item())
        if rank == 0:
            print(f"losses {losses[0]:.6f} -> {losses[-1]:.6f}")
            if a.losses_out:
                with open(a.losses_out, "w") as f:
                    json.dump(losses, f)

    if a.generate:
        ids = [int(t) for t in a.generate.split(",")]
        new, feed, start = [], list(ids), 0
        caches = None if a.no_kv_cache else [{} for _ in range(c["num_hidden_layers"])]
        everyone = flow.placement(a.device, ranks=list(range(world)))
        with flow.no_grad():
            for _ in range(a.tokens):  # greedy; with the KV cache each pass after the prompt feeds one token
                idx = flow.from_numpy(np.array([feed], dtype=np.int64)).to_global(placement=meshes[0], sbp=(B_, B_))
                # the last position's logits, whole on every rank (from the last stage)
                last = flow.narrow(model(idx, caches, start), 1, len(feed) - 1, 1).to_global(placement=everyone, sbp=B_)
                token = int(np.argmax(last.to_local().numpy().reshape(-1)))
                ids.append(token)
                new.append(token)
                if caches is None:
                    feed = ids
                else:
                    start, feed = start + len(feed), [token]
        if rank == 0:
            print("generated: " + json.dumps(new, separators=(",", ":")))


if __name__ == "__main__":
    main()
