#!/usr/bin/env python3
"""A checkpoint Globe saved (save_hf, from tp2 x pp2) loads in Hugging Face transformers'
from_pretrained and equals the original bit for bit, with the same logits; one saved as bfloat16
(--save-dtype bf16) equals the original converted by torch to bfloat16, bit for bit.

    loads_in_transformers.py SAVED_DIR ORIGINAL_DIR

Exits 77 (CTest's skip) when transformers is not installed (scripts/setup_peers.sh installs it)."""
import sys

try:
    import torch
    import transformers
except ImportError as e:
    print(f"skipped: {e} (scripts/setup_peers.sh installs the peers' environment)")
    sys.exit(77)

saved, original = sys.argv[1], sys.argv[2]
b = transformers.LlamaForCausalLM.from_pretrained(saved, torch_dtype="auto").eval()
bf16 = b.dtype == torch.bfloat16
# The original converted as transformers converts on loading (torch's round to nearest even).
a = transformers.LlamaForCausalLM.from_pretrained(original, torch_dtype=b.dtype).eval()
sa, sb = a.state_dict(), b.state_dict()
assert sa.keys() == sb.keys(), f"keys differ: {sorted(set(sa) ^ set(sb))}"
for k in sa:
    assert sa[k].dtype == sb[k].dtype and torch.equal(sa[k], sb[k]), f"{k} differs"
x = torch.arange(12).reshape(2, 6)
with torch.no_grad():
    assert torch.equal(a(x).logits, b(x).logits), "logits differ"
print(f"OK: {len(sa)} tensors equal bit for bit{', as bfloat16' if bf16 else ''}, same logits (transformers {transformers.__version__})")
