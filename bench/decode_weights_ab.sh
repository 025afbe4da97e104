#!/bin/bash
# Interleaved A/B of --decode-weights on a Q8_0 checkpoint (docs/PERFORMANCE.md,
# "Decode weights"): A = the checkpoint alone, B = with 4-bit decode copies.
# Usage: bench/decode_weights_ab.sh [PAGODA_BIN] [MODEL] [PAIRS] [DECODE_TYPE]
B=${1:-build/bin/pagoda}
M=${2:-/work/models/llama1b-q8_0.gguf}
PAIRS=${3:-3}
T=${4:-q4_0}
for i in $(seq 1 "$PAIRS"); do
  echo "== pair $i A (checkpoint) $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$B" bench -m "$M" -t 2 -p 512 -n 128 -r 1 2>&1 | grep -E "\| (pp|tg)|error"
  echo "== pair $i B (--decode-weights $T) $(date +%T) load: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$B" bench -m "$M" -t 2 -p 512 -n 128 -r 1 --decode-weights "$T" 2>&1 | grep -E "\| (pp|tg)|decode weights|error"
done
