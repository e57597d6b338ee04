// RUN: vlpc opt %s -p gemm-tile,gemm-map-workgroups,gemm-map-subgroups,gemm-split-k | filecheck %s
// RUN: not vlpc opt %s -p 'gemm-tile,gemm-map-workgroups,gemm-map-subgroups,gemm-split-k{split-k=4}' 2>&1 | filecheck %s --check-prefix=ERR

// split-k=1 is a no-op that records its contract; the grid is unchanged.
// CHECK: grid = array<i64: 2, 4, 1>
// CHECK-SAME: split_k = 1 : i64
// ERR: gemm_split_k.mlir:[[# @LINE + 3]]:5: error: split-k=4: splitting K is not implemented yet
builtin.module {
  func.func @sgemm(%a: memref<256x640xf32>, %b: memref<512x640xf32>, %c: memref<256x512xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<256x640xf32>, memref<512x640xf32>, memref<256x512xf32>, f32, f32
    func.return
  }
}
