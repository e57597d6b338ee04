// The decode step of an int8 (W8A8) language-model layer: 4 activation rows (A, M x K) times
// a weight matrix stored N x K as LLM layers keep it ("NT"), exact i32 results.
// M <= 16 (K a multiple of 16 bytes) gets the lane-along-K decode GEMV (docs/decode_gemv.md): one
// wave per workgroup and weight row, each load 1 KiB of the row, A from the caches, the lanes'
// partial sums added through LDS, every weight byte read once (four int8 values of K per
// v_dot4_i32_i8).
builtin.module {
  func.func @gemv_int8(%x: memref<4x4096xi8>, %w: memref<1024x4096xi8>, %y: memref<4x1024xi32>,
                       %alpha: i32, %beta: i32) {
    gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT"}
        : memref<4x4096xi8>, memref<1024x4096xi8>, memref<4x1024xi32>, i32, i32
    func.return
  }
}
