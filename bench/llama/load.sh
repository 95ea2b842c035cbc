#!/usr/bin/env bash
# Loading a Hugging Face checkpoint of >= 1 GB on 4 ranks as tp2 x pp2 (issue #59's benchmark),
# against reading the same files once with cat. Makes the checkpoint first (a config.json of
# Llama's shape, random weights, save_hf into 4 shards) under $OUT (default /tmp/globe-llama-load).
#
#   bench/llama/load.sh            # prints one line per measurement and the ratio
#
# Both reads are timed after dropping the page cache (when this machine lets root do it: the
# disk's rate) and warm (the files in memory: the copy rate), alternating REPS times (default 3),
# medians compared. The rate is bytes of checkpoint per second of load (all 4 ranks together,
# each reading its share; the clock starts after a barrier, the slowest rank's time).
set -euo pipefail
cd "$(dirname "$0")/../.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=${OUT:-/tmp/globe-llama-load}
mkdir -p "$OUT"
cat > "$OUT/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 32000, "hidden_size": 1024,
 "intermediate_size": 2816, "num_hidden_layers": 20, "num_attention_heads": 16, "num_key_value_heads": 4,
 "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false,
 "torch_dtype": "float32"}
JSON
if [ ! -f "$OUT/ckpt/model.safetensors.index.json" ]; then
  build/bin/llama --config "$OUT/config.json" --save-hf "$OUT/ckpt" --save-shard-mb 300 > /dev/null
fi
bytes=$(cat "$OUT"/ckpt/*.safetensors | wc -c)
drop() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; }
REPS=${REPS:-3}  # cat and Globe alternate, REPS times each; the medians are compared (a VM's disk varies run to run)
for cache in cold warm; do
  if [ $cache = cold ] && ! drop; then echo "cold: cannot drop the page cache here (not permitted); skipped"; continue; fi
  [ $cache = warm ] && cat "$OUT"/ckpt/*.safetensors > /dev/null
  cats=() loads=() res=
  for rep in $(seq "$REPS"); do
    [ $cache = cold ] && drop
    t0=$(date +%s.%N); cat "$OUT"/ckpt/*.safetensors > /dev/null; t1=$(date +%s.%N)
    cats+=("$(echo "$t1 - $t0" | bc -l)")
    [ $cache = cold ] && drop
    res=$(build/bin/globe-launch --nproc_per_node 4 build/bin/llama --load-hf "$OUT/ckpt" --tp 2 --pp 2 | grep -o 'RESULT .*' | sed 's/^RESULT //')
    loads+=("$(echo "$res" | python3 -c 'import json,sys; print(json.load(sys.stdin)["load"]["seconds"])')")
  done
  echo "$res" | python3 -c "
import json, statistics, sys
r = json.load(sys.stdin)['load']; b = $bytes
cats = [float(x) for x in '${cats[*]}'.split()]; loads = [float(x) for x in '${loads[*]}'.split()]
cat_s, load_s = statistics.median(cats), statistics.median(loads)
print(f'$cache: checkpoint {b / 1e9:.3f} GB; cat {b / cat_s / 1e9:.2f} GB/s (median of {cats} s); '
      f'globe load tp2 x pp2 {b / load_s / 1e9:.2f} GB/s (median of {loads} s) = {cat_s / load_s:.2f}x cat; '
      f'peak above parameters {r[\"peak_above_held_bytes\"] / 2**20:.1f} MiB, largest tensor {r[\"largest_tensor_bytes\"] / 2**20:.1f} MiB, '
      f'rank share {r[\"rank_share_bytes\"] / 2**20:.1f} MiB')"
done
