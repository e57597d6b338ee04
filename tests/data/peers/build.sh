#!/usr/bin/env bash
# Rebuild the plain HIP tiled GEMM peer of benchmarks/peers.py (tests/test_peers.py runs it).
# Needs Debian's hipcc (ROCm 5.2, clang 15): apt-get update && apt-get install -y hipcc
# Usage: tests/data/peers/build.sh [OUTDIR]   (default: this directory)
# The Triton peer is rebuilt by triton_sgemm.py (pip install 'vlpc[peers]').
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HERE}"
mkdir -p "$OUT"
HIP_PLATFORM=amd "${HIPCC:-hipcc}" --offload-arch="${HIP_ARCH:-gfx906}" --cuda-device-only --no-gpu-bundle-output \
    -O3 -c "$HERE/hip_tiled_sgemm.hip" -o "$OUT/hip_tiled_sgemm.hsaco"
echo "built $OUT/hip_tiled_sgemm.hsaco"
