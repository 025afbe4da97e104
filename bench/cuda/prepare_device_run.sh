#!/usr/bin/env bash
# Run HERE (a machine with the CUDA toolkit, no GPU needed) before spending
# device time: builds the kernel tests and the decode bench with PAGODA_CUDA=ON
# and copies them, stripped, into .device/ (ignored by git), which the device
# tool carries to the GPU machine. That machine's image has nvcc and CMake but
# not the project's Debian libraries, so nothing is built there; both
# binaries link only libstdc++/libc beside the static CUDA runtime and GTest.
#
#   bench/cuda/prepare_device_run.sh [build-dir]     (default build-device/, ignored by git)
# then, with the device tool:
#   run(command="bash bench/cuda/device_check.sh", carry=[".device"], timeout_s=600)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-device}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAGODA_CUDA=ON -DPAGODA_BUILD_BENCH=ON >/dev/null
ninja -C "$build" -j"${JOBS:-2}" pagoda_kernels_tests backend_decode_bench
mkdir -p .device
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.device/' "$exclude" 2>/dev/null || echo '/.device/' >> "$exclude"
for b in tests/pagoda_kernels_tests bench/backend_decode_bench; do
  strip -o ".device/$(basename "$b")" "$build/$b"
done
echo "prepare_device_run: .device/ holds:"
ls -l .device
echo "dynamic libraries they need (all must exist on the GPU machine):"
ldd .device/pagoda_kernels_tests .device/backend_decode_bench | awk '{print $1}' | sort -u | grep -v ':$'
du -sh .device
