// RUN: vlpc opt %s -p convert-linalg-to-gemm | filecheck %s
// Nothing of linalg is left anywhere (a prefix with only a NOT checks the whole output).
// RUN: vlpc opt %s -p convert-linalg-to-gemm | filecheck %s --check-prefix=NOLINALG
// NOLINALG-NOT: linalg.

// linalg.matmul (A M x K, B K x N) -> layout NN; linalg accumulates, so alpha = beta = 1.
// CHECK-LABEL: func.func @nn
// CHECK:       %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:  %[[BETA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:  gemm.matmul %a, %b, %c, %[[ONE]], %[[BETA]] {layout = "NN"}
// CHECK-LABEL: func.func @nt
// CHECK:       gemm.matmul {{.*}} {layout = "NT"}
// CHECK-LABEL: func.func @tn
// CHECK:       gemm.matmul {{.*}} {layout = "TN"}
// MLIR 20+ writes a transposed operand as explicit indexing maps:
// CHECK-LABEL: func.func @tt_maps
// CHECK:       gemm.matmul {{.*}} {layout = "TT"}
// A zero fill of C before the product becomes beta = 0:
// CHECK-LABEL: func.func @zero_fill
// CHECK-NOT:   linalg.fill
// CHECK:       %[[BETA0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:  gemm.matmul %a, %b, %c, %{{.*}}, %[[BETA0]] {layout = "NT"}
// CHECK-LABEL: func.func @generic
// CHECK:       gemm.matmul {{.*}} {layout = "NT"}
#nt_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#nt_b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
builtin.module {
  func.func @nn(%a: memref<64x32xf32>, %b: memref<32x256xf32>, %c: memref<64x256xf32>) {
    linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x256xf32>) outs(%c : memref<64x256xf32>)
    func.return
  }
  func.func @nt(%a: memref<64x32xf32>, %b: memref<256x32xf32>, %c: memref<64x256xf32>) {
    linalg.matmul_transpose_b ins(%a, %b : memref<64x32xf32>, memref<256x32xf32>) outs(%c : memref<64x256xf32>)
    func.return
  }
  func.func @tn(%a: memref<32x64xf32>, %b: memref<32x256xf32>, %c: memref<64x256xf32>) {
    linalg.matmul_transpose_a ins(%a, %b : memref<32x64xf32>, memref<32x256xf32>) outs(%c : memref<64x256xf32>)
    func.return
  }
  func.func @tt_maps(%a: memref<32x64xf32>, %b: memref<256x32xf32>, %c: memref<64x256xf32>) {
    linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, #nt_b, #c]
        ins(%a, %b : memref<32x64xf32>, memref<256x32xf32>) outs(%c : memref<64x256xf32>)
    func.return
  }
  func.func @zero_fill(%a: memref<64x32xf32>, %b: memref<256x32xf32>, %c: memref<64x256xf32>) {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%c : memref<64x256xf32>)
    linalg.matmul indexing_maps = [#nt_a, #nt_b, #c]
        ins(%a, %b : memref<64x32xf32>, memref<256x32xf32>) outs(%c : memref<64x256xf32>)
    func.return
  }
  func.func @generic(%a: memref<64x32xf32>, %b: memref<256x32xf32>, %c: memref<64x256xf32>) {
    linalg.generic {indexing_maps = [#nt_a, #nt_b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<64x32xf32>, memref<256x32xf32>) outs(%c : memref<64x256xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }
    func.return
  }
}
