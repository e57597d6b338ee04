// What convert-linalg-to-gemm cannot raise is a located error saying why.
// RUN: not vlpc compile %s --emit asm 2>&1 | filecheck %s
// RUN: not vlpc opt %s -p convert-linalg-to-gemm 2>&1 | filecheck %s

// CHECK-NOT: Traceback
// CHECK: linalg_batch_matmul.mlir:[[# @LINE + 4]]:5: error: cannot raise linalg.batch_matmul to gemm.matmul: batched linalg products are not raised yet: {{.*}}; write the product as a gemm.matmul on 3-D memrefs
// CHECK-NOT: Traceback
builtin.module {
  func.func @bmm(%a: memref<4x64x32xf32>, %b: memref<4x32x256xf32>, %c: memref<4x64x256xf32>) {
    linalg.batch_matmul ins(%a, %b : memref<4x64x32xf32>, memref<4x32x256xf32>)
                        outs(%c : memref<4x64x256xf32>)
    func.return
  }
}
