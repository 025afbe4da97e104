#!/usr/bin/env bash
# Run THERE, on the GPU machine, from the repository root, with .device/
# carried (bench/cuda/prepare_device_run.sh makes it). One call (the step
# timeouts add up to 560 s, under the device tool's 600 s): the card and
# driver, the CUDA kernel tests against the CPU references, compute-sanitizer
# memcheck and racecheck on a subset, the bf16 matrix rate (PyTorch, the
# ceiling for prefill), and backend_decode_bench's table. Logs and the table
# land in $OUT (the device tool fetches them; at most 8 files come back).
set -u -o pipefail
OUT=${OUT:-/tmp/pagoda-device-out}
BIN=${PAGODA_DEVICE_BIN:-.device}
mkdir -p "$OUT"
summary="$OUT/summary.txt"
: > "$summary"
note() { echo "$*" | tee -a "$summary"; }
chmod +x "$BIN"/* 2>/dev/null

note "== card and driver"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$summary"
{ nvidia-smi; ldd "$BIN/pagoda_kernels_tests" "$BIN/backend_decode_bench"; } > "$OUT/nvidia-smi.txt" 2>&1

note "== CUDA kernel tests (against the CPU references)"
timeout 120 "$BIN/pagoda_kernels_tests" --gtest_filter='*/cuda*:MakeBackendTest.*:DeviceSpecTest.*' \
  > "$OUT/tests.log" 2>&1
rc=$?
note "tests exit $rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$OUT/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]|Skipped|unavailable' "$OUT/tests.log" | head -20 | tee -a "$summary"

# The sanitizer runs each kernel many times slower: one case per kernel family.
subset='*MatMul*/cuda_Q4_0_t3*:*MatMul*/cuda_Q6_K_t17*:*MatMul*/cuda_BF16_t1_k229:*BackendOpsTest.*/cuda:*Attention*/cuda_fp8_e4m3_shape1:*Attention*/cuda_f16_shape0'
for tool in memcheck racecheck; do
  note "== compute-sanitizer $tool"
  timeout 90 compute-sanitizer --tool "$tool" --error-exitcode 3 "$BIN/pagoda_kernels_tests" --gtest_filter="$subset" \
    > "$OUT/sanitizer-$tool.log" 2>&1
  rc=$?
  note "$tool exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.log" | tail -1)"
done

note "== bf16 matrix rate (PyTorch, 8192^3, random data, median of 10 after 3 warm-ups)"
tflops=$(timeout 60 python3 - <<'PY' 2>"$OUT/matrix-rate.log"
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
for _ in range(3): a @ b
torch.cuda.synchronize()
times = []
for _ in range(10):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); a @ b; e.record(); e.synchronize()
    times.append(s.elapsed_time(e) / 1e3)
times.sort()
print(f"{2 * 8192**3 / times[5] / 1e12:.1f}")
PY
)
note "bf16 matrix rate: ${tflops:-unknown} TFLOP/s"

note "== backend_decode_bench (8B Llama shape, random weights)"
timeout 200 "$BIN/backend_decode_bench" --device cuda:0 --matrix-tflops "${tflops:-0}" > "$OUT/bench.txt" 2>&1
rc=$?
note "bench exit $rc"
cat "$OUT/bench.txt" | tee -a "$summary"
