#!/usr/bin/env bash
# Cache-aware routing against round robin and against nginx (issue 13): four
# `pagoda serve` replicas with KV events on, one random-weight model large
# enough that a cold 2,000-token prefill takes over half a second, and the
# session trace of bench/gateway_trace.mjs through
#   1. `pagoda gateway` with policy cache_aware,
#   2. `pagoda gateway` with policy round_robin,
#   3. nginx (Debian) as a plain round-robin reverse proxy,
# each against freshly started replicas (empty caches), in that order, REPS
# times interleaved. Prints one JSON line per run and a markdown table of
# medians. Then the gateway's own cost (bench/gateway_overhead.mjs): added
# latency at RPS requests/s against one replica directly, and STREAMS
# concurrent streams through the gateway with its CPU time.
# Usage: bench/gateway_bench.sh [OUT_DIR]
# Env: MODEL (made if missing), REPS (3), KIND (agentic), SESSIONS (16),
#      THINK_MS (1500), TRACE_FLAGS (e.g. "--turns 6 --apps 4"), REPLICA_THREADS (1), BASE_PORT (18300),
#      OVERHEAD (1), RPS (100), STREAMS (1000), KV_MEMORY (256MiB per replica:
#      32K tokens of this model, room for the sessions a cache-aware router
#      sends each replica but not for all of them), TARGETS ("cache_aware
#      round_robin nginx"), DECODE_LOAD_WEIGHT (0.1, cache_aware's
#      decode_load_weight)
# Needs nginx (scripts/setup --bench installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/pagoda-gateway-bench}
mkdir -p "$out"
bin=build/bin/pagoda
model=${MODEL:-/tmp/pagoda-models/gw-llama-45m-q4_0.gguf}
base=${BASE_PORT:-18300}
reps=${REPS:-3}
if [ ! -f "$model" ]; then
  mkdir -p "$(dirname "$model")"
  # ~45M parameters: 2,000-token cold prefill ~1 s on one Zen 4 core.
  $bin make-model -o "$model" --type q4_0 --output-type q6_k --n-embd 512 --n-layer 8 --n-head 8 \
    --n-head-kv 4 --n-ff 1536 --n-ctx 8192 --vocab-from ../shared/testdata/ggml-vocab-llama-spm.gguf --seed 3 >&2
fi
command -v nginx >/dev/null || { echo "nginx missing: scripts/setup --bench" >&2; exit 1; }

pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
trap cleanup EXIT

wait_health() {
  for _ in $(seq 200); do curl -sf "$1/health" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "$1 did not become healthy" >&2; exit 1
}

start_replicas() {
  for i in 0 1 2 3; do
    $bin serve -m "$model" --port $((base + i)) -t "${REPLICA_THREADS:-1}" --served-model-name gw \
      --kv-events "tcp://127.0.0.1:$((base + 10 + i))" --kv-events-replay "tcp://127.0.0.1:$((base + 20 + i))" \
      --ctx-size 8192 --max-running 16 --kv-cache-memory "${KV_MEMORY:-256MiB}" 2>>"$out/replica$i.log" &
    pids+=($!)
  done
  for i in 0 1 2 3; do wait_health "http://127.0.0.1:$((base + i))"; done
}

write_config() {  # policy
  {
    printf '[gateway]\nlisten = "127.0.0.1:%d"\nadmin_key_env = "PAGODA_GW_BENCH_KEY"\n\n' $((base + 30))
    printf '[[models]]\nname = "gw"\npolicy = "%s"\ntokenizer_gguf = "%s"\nblock_size = 16\n' "$1" "$model"
    printf 'decode_load_weight = %s\n' "${DECODE_LOAD_WEIGHT:-0.1}"
    printf '[[models.deployments]]\nversion = "v1"\n'
    for i in 0 1 2 3; do
      printf '[[models.deployments.replicas]]\nurl = "http://127.0.0.1:%d"\nname = "r%d"\n' $((base + i)) "$i"
      printf 'kv_events = "tcp://127.0.0.1:%d"\nkv_events_replay = "tcp://127.0.0.1:%d"\n' $((base + 10 + i)) $((base + 20 + i))
    done
  } >"$out/gateway-$1.toml"
}

write_nginx() {
  mkdir -p "$out/nginx"
  {
    printf 'daemon off;\nworker_processes 1;\npid %s/nginx/nginx.pid;\nerror_log %s/nginx/error.log;\n' "$out" "$out"
    printf 'events { worker_connections 4096; }\nhttp {\n  access_log off;\n'
    printf '  client_body_temp_path %s/nginx; proxy_temp_path %s/nginx;\n' "$out" "$out"
    printf '  upstream replicas {\n'
    for i in 0 1 2 3; do printf '    server 127.0.0.1:%d;\n' $((base + i)); done
    printf '    keepalive 64;\n  }\n  server {\n    listen 127.0.0.1:%d;\n' $((base + 40))
    printf '    location / { proxy_pass http://replicas; proxy_http_version 1.1; proxy_set_header Connection "";\n'
    printf '      proxy_buffering off; proxy_read_timeout 600s; }\n  }\n}\n'
  } >"$out/nginx/nginx.conf"
}

trace() {  # label url
  # shellcheck disable=SC2086
  node bench/gateway_trace.mjs --url "$2" --model gw --label "$1" --kind "${KIND:-agentic}" \
    --sessions "${SESSIONS:-16}" --think-ms "${THINK_MS:-1500}" ${TRACE_FLAGS:-}
}

export PAGODA_GW_BENCH_KEY=bench
echo "$(date -u '+%F %T') UTC; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee "$out/meta.txt"
: >"$out/results.jsonl"
for rep in $(seq "$reps"); do
  for target in ${TARGETS:-cache_aware round_robin nginx}; do
    start_replicas
    if [ "$target" = nginx ]; then
      write_nginx
      nginx -c "$out/nginx/nginx.conf" -p "$out/nginx" 2>>"$out/nginx/stderr.log" &
      pids+=($!)
      sleep 0.5
      url=http://127.0.0.1:$((base + 40))
    else
      write_config "$target"
      $bin gateway --config "$out/gateway-$target.toml" 2>>"$out/gateway.log" &
      pids+=($!)
      url=http://127.0.0.1:$((base + 30))
      wait_health "$url"
    fi
    trace "$target" "$url" | tee -a "$out/results.jsonl"
    [ "$target" = nginx ] || curl -s "$url/metrics" >"$out/metrics-$target-$rep.txt" || true
    cleanup
  done
done

node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
console.log("| target | runs | hit rate | TTFT p50 ms | TTFT p90 ms | gen tok/s | failures |");
console.log("|---|---|---|---|---|---|---|");
for (const t of ["cache_aware", "round_robin", "nginx"]) {
  const r = rows.filter((x) => x.label === t);
  if (!r.length) continue;
  console.log(`| ${t} | ${r.length} | ${med(r.map((x) => x.hit_rate))} | ${med(r.map((x) => x.ttft_ms_p50))} | ` +
              `${med(r.map((x) => x.ttft_ms_p90))} | ${med(r.map((x) => x.gen_tok_s))} | ${r.reduce((a, x) => a + x.failures, 0)} |`);
}' "$out/results.jsonl" | tee "$out/table.md"

# Index lag (gateway receive time - batch ts) over the cache_aware runs, from
# the pagoda_gateway_kv_event_lag_seconds histograms: the bucket holding the
# median and the 99th percentile, all replicas together.
node -e '
const fs = require("fs");
const files = fs.readdirSync(process.argv[1]).filter((f) => f.startsWith("metrics-cache_aware-"));
const buckets = new Map();
for (const f of files) {
  for (const line of fs.readFileSync(`${process.argv[1]}/${f}`, "utf8").split("\n")) {
    const m = line.match(/^pagoda_gateway_kv_event_lag_seconds_bucket\{.*le="([^"]+)".*\} (\S+)/);
    if (m) buckets.set(m[1], (buckets.get(m[1]) ?? 0) + Number(m[2]));
  }
}
const les = [...buckets.keys()].sort((a, b) => (a === "+Inf") - (b === "+Inf") || Number(a) - Number(b));
const total = buckets.get("+Inf") ?? 0;
const q = (p) => les.find((le) => buckets.get(le) >= p * total);
console.log(JSON.stringify({ kv_event_batches: total, lag_p50_le_s: q(0.5), lag_p99_le_s: q(0.99) }));
' "$out" | tee -a "$out/table.md"

if [ "${OVERHEAD:-1}" = 1 ]; then
  # One replica of the tiny stories260K (sub-millisecond requests), so that
  # what is measured is the proxy, not the model: directly and through a
  # gateway whose model has only that replica.
  tiny=../shared/testdata/stories260K.gguf
  $bin serve -m "$tiny" --port $((base + 5)) -t 1 --served-model-name gw --max-running 64 \
    --max-waiting 4096 2>>"$out/replica-tiny.log" &
  pids+=($!)
  wait_health "http://127.0.0.1:$((base + 5))"
  {
    printf '[gateway]\nlisten = "127.0.0.1:%d"\nupstream_threads = 1\nio_threads = 1\n\n' $((base + 30))
    printf '[[models]]\nname = "gw"\npolicy = "least_loaded"\n[[models.deployments]]\nversion = "v1"\n'
    printf '[[models.deployments.replicas]]\nurl = "http://127.0.0.1:%d"\n' $((base + 5))
  } >"$out/gateway-overhead.toml"
  $bin gateway --config "$out/gateway-overhead.toml" 2>>"$out/gateway.log" &
  gw_pid=$!
  pids+=($gw_pid)
  wait_health "http://127.0.0.1:$((base + 30))"
  node bench/gateway_overhead.mjs --mode latency --direct "http://127.0.0.1:$((base + 5))" \
    --gateway "http://127.0.0.1:$((base + 30))" --model gw --rps "${RPS:-100}" --seconds 20 | tee -a "$out/overhead.jsonl"
  node bench/gateway_overhead.mjs --mode streams --gateway "http://127.0.0.1:$((base + 30))" --gateway-pid "$gw_pid" \
    --model gw --streams "${STREAMS:-1000}" --seconds 20 | tee -a "$out/overhead.jsonl"
fi
