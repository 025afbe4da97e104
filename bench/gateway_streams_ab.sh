#!/usr/bin/env bash
# The gateway's CPU per 100 streaming requests/s (the streams part of
# gateway_bench.sh's OVERHEAD section), for comparing builds in one sitting:
# one stories260K replica (started from the first binary), then for each
# binary in turn a gateway with io_threads = 1 and upstream_threads = 1 in
# front of it and `bench/gateway_overhead.mjs --mode streams` (STREAMS
# concurrent 64-token streams for SECONDS). Name a binary several times,
# interleaved (A B B A ...), and compare medians: the CPU share is robust to
# a busy machine, the requests/s are not. One JSON line per run.
# Usage: bench/gateway_streams_ab.sh BIN [BIN...]
# Env: STREAMS (1000), SECONDS_PER_RUN (20), BASE_PORT (18500), OUT (append the lines there too)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN...]" >&2; exit 1; }
base=${BASE_PORT:-18500}
log=$(mktemp -d /tmp/pagoda-gw-ab.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
wait_health() {
  for _ in $(seq 200); do curl -sf "$1/health" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "$1 did not become healthy" >&2; exit 1
}
"$1" serve -m ../shared/testdata/stories260K.gguf --port $((base + 5)) -t 1 --served-model-name gw --max-running 64 \
  --max-waiting 4096 2>>"$log/replica.log" &
pids+=($!)
wait_health "http://127.0.0.1:$((base + 5))"
printf '[gateway]\nlisten = "127.0.0.1:%d"\nupstream_threads = 1\nio_threads = 1\n\n[[models]]\nname = "gw"\npolicy = "least_loaded"\n[[models.deployments]]\nversion = "v1"\n[[models.deployments.replicas]]\nurl = "http://127.0.0.1:%d"\n' \
  $((base + 30)) $((base + 5)) >"$log/gateway.toml"
for bin in "$@"; do
  "$bin" gateway --config "$log/gateway.toml" 2>>"$log/gateway.log" &
  gw=$!
  wait_health "http://127.0.0.1:$((base + 30))"
  r=$(node bench/gateway_overhead.mjs --mode streams --gateway "http://127.0.0.1:$((base + 30))" --gateway-pid "$gw" \
        --model gw --streams "${STREAMS:-1000}" --seconds "${SECONDS_PER_RUN:-20}")
  line="{\"bin\":\"$bin\",\"loadavg\":$(cut -d' ' -f1 /proc/loadavg),\"result\":$r}"
  echo "$line"
  [ -z "${OUT:-}" ] || echo "$line" >>"$OUT"
  kill -TERM "$gw"; wait "$gw" 2>/dev/null || true
  sleep 1
done
