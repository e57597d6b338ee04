// RUN: not vlpc compile %s --emit asm 2>&1 | filecheck %s
// RUN: not vlpc compile %s --target gfx908 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not vlpc compile %inputs/sgemm_256x512x640.mlir --macro-tile 64x96 2>&1 | filecheck %s --check-prefix=WAVES

// No traceback before or after the one-line error (a NOT guards only its span, so one each side).
// CHECK-NOT: Traceback
// CHECK: cli_errors.mlir:[[# @LINE + 10]]:5: error: inconsistent K: A (M x K) has 64 but B (N x K, transposed) has 32
// CHECK-NOT: Traceback
// TARGET-NOT: Traceback
// TARGET: vlpc: unknown target 'gfx908' (supported targets: gfx900, gfx906)
// TARGET-NOT: Traceback
// WAVES-NOT: Traceback
// WAVES: sgemm_256x512x640.mlir:7:5: error: macro tile N=96 does not divide into wavefronts
// WAVES-NOT: Traceback
builtin.module {
  func.func @sgemm(%a: memref<128x64xf32>, %b: memref<256x32xf32>, %c: memref<128x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<128x64xf32>, memref<256x32xf32>, memref<128x256xf32>, f32, f32
    func.return
  }
}
