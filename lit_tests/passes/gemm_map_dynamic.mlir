// RUN: vlpc opt %inputs/sgemm_dynamic.mlir -p gemm-tile,gemm-map-workgroups,gemm-map-subgroups,gemm-split-k | filecheck %s
// Sizes supplied at launch: the grid is -1 (computed by the host from N and M).
// CHECK: grid = array<i64: -1, -1, 1>
// CHECK-SAME: split_k = 1 : i64
