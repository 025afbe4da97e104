#!/usr/bin/env bash
# Control-plane cost through the gateway: the same gateway config without and with [control]
# (SQLite store, one tenant with limits) in front of one `pagoda serve` replica, alternating
# 2 s slices (bench/gateway_overhead.mjs). Usage: RPS=400 bench/control_plane_overhead.sh [MODEL.gguf]
cd "$(dirname "$0")/.."
ROOT=$PWD; W=$(mktemp -d); cd "$W"
set -e
BIN=$ROOT/build/bin/pagoda
M=${1:-$ROOT/../shared/testdata/stories260K.gguf}
export PAGODA_ADMIN_KEY=bench-admin-key-0123456789
$BIN serve -m $M --port 18100 -t 1 > serve.log 2>&1 & SP=$!
sleep 2
cat > plain.toml <<T
[gateway]
io_threads = 1
upstream_threads = 1
[[models]]
name = "stories260K"
policy = "round_robin"
[[models.deployments]]
version = "v1"
[[models.deployments.replicas]]
url = "http://127.0.0.1:18100"
T
{ echo '[gateway]'; echo 'io_threads = 1'; echo 'upstream_threads = 1'; echo 'admin_key_env = "PAGODA_ADMIN_KEY"'; echo 'allow_insecure_keys = true'; echo '[control]'; echo "db = \"sqlite://$W/control.db\""; sed -n '/\[\[models\]\]/,$p' plain.toml; } > ctl.toml
$BIN gateway --config plain.toml --listen 127.0.0.1:18101 > gp.log 2>&1 & G1=$!
$BIN gateway --config ctl.toml --listen 127.0.0.1:18102 > gc.log 2>&1 & G2=$!
sleep 2
$BIN admin --url http://127.0.0.1:18102 tenants create bench --name Bench > /dev/null
KEY=$($BIN admin --url http://127.0.0.1:18102 --json keys create bench | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).key))')
$BIN admin --url http://127.0.0.1:18102 limits set --tenant bench --rpm 1000000 --tpm 1000000000 > /dev/null
node $ROOT/bench/gateway_overhead.mjs --mode latency --direct http://127.0.0.1:18101 --gateway http://127.0.0.1:18102 --model stories260K --rps ${RPS:-200} --seconds 20 --max-tokens 1 --gateway-key $KEY
kill $G1 $G2 $SP
