#!/usr/bin/env bash
# The issue's speed comparison: random-weight ~1B Llama (dim 2048, 16 layers,
# 32 heads, 8 KV heads, FFN 8192, vocab 32000 = the Llama-2 SPM vocab) in Q4_0
# (output.weight Q6_K, as llama-quantize does), Q8_0 and F16, made with
# `pagoda make-model`; `pagoda bench` pp512 / tg128 on 2 threads, 3 repetitions.
# q4_k_m / q5_k_m are llama-quantize's mixes (attn_v and ffn_down of its
# more-bits layers Q6_K; the Q4_K_M file is byte for byte the size of the
# anchor's, 675,749,344 bytes).
# Usage: bench/llama1b.sh [MODEL_DIR] [TYPES...]
#   (default /tmp/pagoda-models, q4_0 q8_0 f16 q4_k_m q5_k_m q6_k)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/pagoda-models}
shift || true
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(q4_0 q8_0 f16 q4_k_m q5_k_m q6_k)
vocab=../shared/testdata/ggml-vocab-llama-spm.gguf
mkdir -p "$dir"
for t in "${types[@]}"; do
  f="$dir/llama1b-$t.gguf"
  if [ ! -f "$f" ]; then
    extra=()
    [ "$t" = q4_0 ] && extra=(--output-type q6_k)  # the _M mixes set Q6_K themselves
    vflag=()
    [ -f "$vocab" ] && vflag=(--vocab-from "$vocab")
    build/bin/pagoda make-model -o "$f" --type "$t" "${extra[@]}" "${vflag[@]}" --seed 1
  fi
  build/bin/pagoda bench -m "$f" -t 2 -p 512 -n 128 -r 3
done
