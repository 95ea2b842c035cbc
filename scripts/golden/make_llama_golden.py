#!/usr/bin/env python3
"""Writes tests/llama/data/: small Llama checkpoints made by Hugging Face transformers itself, and
what transformers computes from them, for test_llama (which then needs no torch or transformers).

For each model (gqa: 4 heads on 2 KV heads, untied head, two shards with their index; tied: tied
embeddings, no GQA, Llama 3's rope scaling, one file):
  MODEL/                 LlamaForCausalLM(config) with random weights, written by save_pretrained
  MODEL_golden.safetensors
      tokens    int64 [2, 16]     a batch
      logits    float32 [2, 16, V] the model's logits for it
      train     int64 [steps, 4, 17] each step's rows: inputs [:, :-1], targets [:, 1:]
      losses    float32 [steps]   cross entropy of each step, before AdamW updates the weights
      prompt    int64 [5]; greedy int64 [12]   generate(prompt, max_new_tokens=12, greedy), new tokens only

Training: torch.optim.AdamW(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1) on every
parameter, no clipping, float32, one thread. Needs the peers' environment: scripts/setup_peers.sh.

    python scripts/golden/make_llama_golden.py [--out tests/llama/data]
"""
import argparse
import json
import os

import torch
import transformers
from safetensors.torch import save_file

STEPS = 10

# Debian's torch 1.13 cannot import torch.distributed.fsdp under Python 3.11, which generate() asks
# about only to learn whether the model is FSDP-wrapped: it is not.
if torch.__version__.startswith("1."):
    import transformers.generation.utils as _gen
    _gen.is_fsdp_managed_module = lambda module: False


def configs():
    common = dict(vocab_size=256, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  max_position_embeddings=64, rms_norm_eps=1e-5, initializer_range=0.1)
    return {
        "gqa": dict(common, num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False, rope_theta=10000.0),
        "tied": dict(common, num_attention_heads=4, num_key_value_heads=4, tie_word_embeddings=True, rope_theta=500000.0,
                     rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 16}),
    }


def make(name, cfg, out):
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg)).float().eval()
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    # gqa: files of at most 200 kB, so the checkpoint comes in shards with an index
    model.save_pretrained(d, safe_serialization=True, max_shard_size="200KB" if name == "gqa" else "5GB")
    g = torch.Generator().manual_seed(1)
    V = cfg["vocab_size"]
    tokens = torch.randint(0, V, (2, 16), generator=g)
    with torch.no_grad():
        logits = model(tokens).logits.float()
    prompt = torch.randint(0, V, (5,), generator=g)
    with torch.no_grad():
        greedy = model.generate(prompt[None], max_new_tokens=12, do_sample=False, min_new_tokens=12,
                                pad_token_id=0, eos_token_id=None)[0, 5:]
    train = torch.randint(0, V, (STEPS, 4, 17), generator=g)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    losses = []
    for s in range(STEPS):
        x, y = train[s, :, :-1], train[s, :, 1:]
        loss = torch.nn.functional.cross_entropy(model(x).logits.flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    save_file({"tokens": tokens, "logits": logits.contiguous(), "train": train, "losses": torch.tensor(losses),
               "prompt": prompt, "greedy": greedy.contiguous()},
              os.path.join(out, name + "_golden.safetensors"), metadata={"torch": torch.__version__,
                                                               "transformers": transformers.__version__})
    print(f"{name}: {sorted(os.listdir(d))}; losses {losses[0]:.4f} -> {losses[-1]:.4f}; greedy {greedy.tolist()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "llama", "data"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    for name, cfg in configs().items():
        make(name, cfg, a.out)
    with open(os.path.join(a.out, "versions.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
