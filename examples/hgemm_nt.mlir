// HGEMM through v_dot2_f32_f16: A (f16, M x K) and B (f16, stored N x K: "NT"), C in f32.
// C <- alpha * A * B^T + beta * C with f32 accumulation and f32 alpha/beta; A is read with
// scalar loads (two values of K per SGPR), B two values of K per VGPR.  K = 641 is odd: the
// last value is read one element at a time; lda and ldb must be even (4-byte rows).
builtin.module {
  func.func @hgemm(%a: memref<256x641xf16, strided<[642, 1]>>, %b: memref<512x641xf16, strided<[642, 1]>>,
                   %c: memref<256x512xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
        : memref<256x641xf16, strided<[642, 1]>>, memref<512x641xf16, strided<[642, 1]>>, memref<256x512xf32>, f32, f32
    func.return
  }
}
