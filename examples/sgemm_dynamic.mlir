// SGEMM with every size supplied at launch: vlpc run examples/sgemm_dynamic.mlir --m 256 --n 512 --k 128
builtin.module {
  func.func @sgemm_dyn(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
        : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, f32, f32
    func.return
  }
}
