#!/usr/bin/env bash
# Rebuild the foreign (hipcc-compiled) gfx906 code objects used by
# tests/test_foreign_kernels.py.  Needs Debian's hipcc (ROCm 5.2, clang 15):
#     apt-get update && apt-get install -y hipcc
# Usage: tests/data/hip/build.sh [OUTDIR] [NAME...]   (defaults: this directory, all kernels)
#
# HIP_PLATFORM=amd is required: hipcc picks the NVIDIA platform when nvcc is on PATH.
# Default code objects are v4 (clang 15's default, what ROCm 5.2 loads);
# a few kernels are also built as code object v5 (*.v5.hsaco) so the emulator
# sees the v5 hidden kernel arguments (hidden_block_count_*, hidden_group_size_*, ...).
# saxpy is also built for explicit target ids: gfx906:sramecc-:xnack-
# (saxpy.sramecc-off.hsaco), which an ECC-on board (MI50/MI60 default to
# sramecc+) must refuse, and gfx906:sramecc+:xnack- (saxpy.sramecc-on.hsaco).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HERE}"
shift || true
HIPCC="${HIPCC:-hipcc}"
ARCH="${HIP_ARCH:-gfx906}"
V5_KERNELS="saxpy grid2d kernarg_dump"
mkdir -p "$OUT"
if [ "$#" -gt 0 ]; then names="$*"; else names="$(cd "$HERE" && ls *.hip | sed 's/\.hip$//')"; fi
FTZ_KERNELS="ftz"   # built with f32 denormals flushed (descriptor FLOAT_DENORM_MODE_32 = 0)
O0_KERNELS="scratch"  # also built at -O0 (*.O0.hsaco): every local goes through scratch
for name in $names; do
  src="$HERE/$name.hip"
  extra=""
  case " $FTZ_KERNELS " in *" $name "*) extra="-fgpu-flush-denormals-to-zero" ;; esac
  HIP_PLATFORM=amd "$HIPCC" --offload-arch="$ARCH" --cuda-device-only --no-gpu-bundle-output \
      -O3 $extra -c "$src" -o "$OUT/$name.hsaco"
  echo "built $OUT/$name.hsaco"
  case " $V5_KERNELS " in
    *" $name "*)
      HIP_PLATFORM=amd "$HIPCC" --offload-arch="$ARCH" --cuda-device-only --no-gpu-bundle-output \
          -O3 -mcode-object-version=5 -c "$src" -o "$OUT/$name.v5.hsaco"
      echo "built $OUT/$name.v5.hsaco"
      ;;
  esac
  case " $O0_KERNELS " in
    *" $name "*)
      HIP_PLATFORM=amd "$HIPCC" --offload-arch="$ARCH" --cuda-device-only --no-gpu-bundle-output \
          -O0 -c "$src" -o "$OUT/$name.O0.hsaco"
      echo "built $OUT/$name.O0.hsaco"
      ;;
  esac
  if [ "$name" = saxpy ]; then
    HIP_PLATFORM=amd "$HIPCC" --offload-arch="$ARCH:sramecc-:xnack-" --cuda-device-only \
        --no-gpu-bundle-output -O3 -c "$src" -o "$OUT/$name.sramecc-off.hsaco"
    echo "built $OUT/$name.sramecc-off.hsaco"
    HIP_PLATFORM=amd "$HIPCC" --offload-arch="$ARCH:sramecc+:xnack-" --cuda-device-only \
        --no-gpu-bundle-output -O3 -c "$src" -o "$OUT/$name.sramecc-on.hsaco"
    echo "built $OUT/$name.sramecc-on.hsaco"
  fi
done
