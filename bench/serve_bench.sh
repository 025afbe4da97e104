#!/usr/bin/env bash
# Server under concurrency (issue 3): starts `pagoda serve` on the ~1B Llama
# Q4_0, runs bench/serve_load.mjs (streams of 200-token prompts + 128
# generated tokens, all requests of a level at once), then the cached-prefix
# TTFT test, prints markdown tables and stops the server. With PERF=1 the
# levels pass runs under `perf record -g` on the server (use LEVELS=64 REPS=1)
# and the script prints where the server's cycles went, per thread and symbol.
# Usage: bench/serve_bench.sh [MODEL] [OUT_DIR]
# Env: LEVELS (1,4,16,64), REPS (3), PORT (8123), THREADS (2),
#      MAX_BATCH_TOKENS (512), MAX_RUNNING (64), KV_MEMORY (1GiB = 32768 tokens
#      >= 64 x 328), PERF (0), PREFIX_TEST (1), EXTRA_FLAGS ("", server flags),
#      LOAD_FLAGS ("", serve_load.mjs flags, e.g. --json-schema bench/constrained_schema.json)
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-/work/models/llama1b-q4_0.gguf}
out=${2:-/tmp/pagoda-serve-bench}
port=${PORT:-8123}
url=http://127.0.0.1:$port
mkdir -p "$out"
[ -f "$model" ] || { echo "no model $model (make it with bench/llama1b.sh)" >&2; exit 1; }

server_pid=
start_server() {
  # shellcheck disable=SC2086
  build/bin/pagoda serve -m "$model" --port "$port" -t "${THREADS:-2}" \
    --max-running "${MAX_RUNNING:-64}" --kv-cache-memory "${KV_MEMORY:-1GiB}" \
    --max-batch-tokens "${MAX_BATCH_TOKENS:-512}" ${EXTRA_FLAGS:-} 2>>"$out/server.log" &
  server_pid=$!
  for _ in $(seq 100); do
    curl -sf "$url/health" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "server did not become healthy; see $out/server.log" >&2
  exit 1
}
stop_server() {
  [ -n "$server_pid" ] || return 0
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
trap stop_server EXIT

echo "$(date -u '+%F %T') UTC; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/meta.txt"
start_server
(while sleep 5; do cut -d' ' -f1 /proc/loadavg; done) >"$out/load.txt" &
load_pid=$!
trap 'kill $load_pid 2>/dev/null || true; stop_server' EXIT
perf_pid=
if [ "${PERF:-0}" = 1 ]; then
  # The whole levels pass is recorded: run it with LEVELS=64 REPS=1 for the
  # 64-stream profile. 499 Hz keeps perf's own share small.
  perf record -g -F 499 -o "$out/perf.data" -p "$server_pid" 2>"$out/perf_record.log" &
  perf_pid=$!
fi
node bench/serve_load.mjs --url "$url" --levels "${LEVELS:-1,4,16,64}" --reps "${REPS:-3}" ${LOAD_FLAGS:-} | tee "$out/levels.jsonl"
if [ -n "$perf_pid" ]; then
  kill -INT "$perf_pid"
  wait "$perf_pid" || true
fi
if [ "${PREFIX_TEST:-1}" = 1 ]; then
  node bench/serve_load.mjs --url "$url" --prefix-test --seed 7 | tee "$out/prefix.jsonl"
fi
curl -s "$url/metrics" >"$out/metrics.txt"
kill "$load_pid"
stop_server

if [ -n "$perf_pid" ]; then
  # Self time (no children: each sample counted once), per thread and per symbol.
  perf report -i "$out/perf.data" --no-children --sort pid,comm --stdio -g none >"$out/perf_threads.txt" 2>/dev/null || true
  perf report -i "$out/perf.data" --no-children --sort dso,symbol --stdio -g none >"$out/perf_symbols.txt" 2>/dev/null || true
  perf report -i "$out/perf.data" --no-children --sort symbol --stdio -g caller,0.5,callee --percent-limit 2 \
    >"$out/perf_callers.txt" 2>/dev/null || true
  echo "== top symbols (self; full list in $out/perf_symbols.txt)"
  grep -v '^#' "$out/perf_symbols.txt" | grep -v '^$' | sed -n 1,40p || true
fi

echo
echo "load average during the run (5 s samples): $(sort -n "$out/load.txt" | awk '{a[NR]=$1} END {printf "min %s median %s max %s", a[1], a[int((NR+1)/2)], a[NR]}')"
cat "$out"/*.jsonl | node bench/serve_load.mjs --table
