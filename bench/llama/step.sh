#!/usr/bin/env bash
# The Llama training step against PyTorch (issue #59's benchmark): the same config.json (4 layers,
# width 256, 8 heads on 4 KV heads, MLP 688, byte vocabulary), batch 8 x 128 tokens of Debian's
# fortunes, AdamW, float32, one thread each; the median step of 12 (the first left out), from
# build/bin/llama and from transformers' LlamaForCausalLM (bench/llama/torch_llama.py in
# .venv-peers, scripts/setup_peers.sh). Prints both RESULT lines and Globe's speed-up.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/globe-llama-step}
mkdir -p "$OUT"
cat > "$OUT/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 256, "hidden_size": 256,
 "intermediate_size": 688, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
 "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false}
JSON
python3 -c "
import array
d = open('/usr/share/games/fortunes/fortunes', 'rb').read()[:400000]
array.array('I', list(d)).tofile(open('$OUT/tokens.bin', 'wb'))"
args=(--data "$OUT/tokens.bin" --block 128 --batch 8 --steps 12)
g=$(OPENBLAS_NUM_THREADS=1 build/bin/llama --config "$OUT/config.json" "${args[@]}" --log-every 0 | grep -o 'RESULT .*')
t=$(OPENBLAS_NUM_THREADS=1 .venv-peers/bin/python bench/llama/torch_llama.py --config "$OUT/config.json" "${args[@]}" | grep -o 'RESULT .*')
echo "globe $g"
echo "torch $t"
python3 -c "
import json
g = json.loads('''${g#RESULT }'''); t = json.loads('''${t#RESULT }''')
print(f'globe {g[\"step_ms_median\"]:.1f} ms, torch {t[\"torch\"]} + transformers {t[\"transformers\"]} {t[\"step_ms_median\"]:.1f} ms: globe {t[\"step_ms_median\"] / g[\"step_ms_median\"]:.2f}x')"
