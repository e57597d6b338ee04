// RUN: vlpc opt %s -p gemm-tile | filecheck %s
// RUN: vlpc opt %s -p 'gemm-tile{macro-n=128 k-step=8}' | filecheck %s --check-prefix=SMALL

// CHECK: gemm.matmul
// CHECK-SAME: macro_tile = array<i64: 64, 256>
// CHECK-SAME: micro_tile = array<i64: 64, 1>
// CHECK-SAME: k_step = 16 : i64
// SMALL: macro_tile = array<i64: 64, 128>
// SMALL-SAME: k_step = 8 : i64
builtin.module {
  func.func @sgemm(%a: memref<256x640xf32>, %b: memref<512x640xf32>, %c: memref<256x512xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<256x640xf32>, memref<512x640xf32>, memref<256x512xf32>, f32, f32
    func.return
  }
}
