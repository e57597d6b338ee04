// Runs only where a gfx906 is reachable through HIP (lit.cfg.py adds the feature).
// REQUIRES: gfx906
// RUN: vlpc run %inputs/sgemm_256x512x640.mlir --device hip -v 2>&1 | filecheck %s
// RUN: vlpc bench %inputs/sgemm_dynamic.mlir --device hip --m 1024 --n 1024 --k 640 | filecheck %s --check-prefix=BENCH
// CHECK: vlpc: device hip
// CHECK: verification passed
// BENCH: | K=640 | kernel ms (mean) | TFLOP/s |
// BENCH: | M=N=1024 |
