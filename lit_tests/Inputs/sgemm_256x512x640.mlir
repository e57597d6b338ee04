// The seed's SGEMM: A row-major M x K, B stored N x K ("NT"), C row-major M x N.
// C <- alpha * A * B^T + beta * C, with the sizes of the seed's headline run
// scaled down so the example executes quickly on the emulator.
builtin.module {
  func.func @sgemm(%a: memref<256x640xf32>, %b: memref<512x640xf32>,
                   %c: memref<256x512xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
        : memref<256x640xf32>, memref<512x640xf32>, memref<256x512xf32>, f32, f32
    func.return
  }
}
