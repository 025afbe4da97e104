#!/usr/bin/env bash
# MoE / MLA figures of docs/PERFORMANCE.md ("Mixture of experts and MLA",
# issue 14): makes the random-weight models once (bench/moe_bench.sh DIR;
# the two 30B shapes are ~17 GB each and take ~12 minutes apiece on 2 cores),
# warms the page cache, then runs `pagoda bench` on each:
#   qwen2moe-a2.7b   the ANCHORS.md qwen2moe shape: pp512 (vs llama.cpp's anchor) and tg
#   qwen3-30b-a3b    tg single stream (active-bytes bound) and x16 (bound of the experts selected)
#   kanana-2-30b-a3b the same, MLA + MoE
#   kanana 8 layers  absorbed vs decompressed MLA: tg at 2,000 positions and pp512
# Env: PAGODA (binary, default build/bin/pagoda), THREADS (2), SKIP_30B=1 skips the two 30B models.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/pagoda-models}
bin=${PAGODA:-build/bin/pagoda}
t=${THREADS:-2}
mkdir -p "$dir"
vocab=../shared/testdata/ggml-vocab-llama-spm.gguf

make() {  # name, make-model args...
  local f="$dir/$1.gguf"; shift
  [ -f "$f" ] || "$bin" make-model -o "$f" --seed 1 "$@" >&2
  echo "$f"
}
bench() {  # file, bench args...
  local f=$1; shift
  cat "$f" > /dev/null  # page cache: the experts a run selects come from memory, not disk
  "$bin" bench -m "$f" -t "$t" "$@"
}

q2=$(make qwen2moe-a2.7b-q4_0 --preset qwen2moe-a2.7b --vocab-from "$vocab")
bench "$q2" -p 512 -n 64 -r 3
k8=$(make kanana2-shape-8l-q4_0 --preset kanana-2-30b-a3b --n-layer 8)
for mla in absorbed decompress; do
  bench "$k8" -p 512 -n 8 -d 2000 -r 2 --mla "$mla"
done
if [ "${SKIP_30B:-0}" != 1 ]; then
  for m in qwen3-30b-a3b kanana-2-30b-a3b; do
    f=$(make "$m-q4_0" --preset "$m")
    bench "$f" -p 0 -n 32 -r 3
    bench "$f" -p 0 -n 16 -r 2 --parallel 16
  done
fi
