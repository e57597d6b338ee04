// A linalg input: C += A * B^T on memrefs, as a frontend (or upstream MLIR 19) writes it.
// vlpc raises it into gemm.matmul {layout = "NT"} with alpha = 1 and beta = 1
// (linalg accumulates into C) and compiles it like the gemm-dialect examples:
//   vlpc compile examples/linalg_matmul_transpose_b.mlir --emit asm
//   vlpc opt examples/linalg_matmul_transpose_b.mlir -p convert-linalg-to-gemm
//   python -c "import vlpc; print(vlpc.run(open('examples/linalg_matmul_transpose_b.mlir').read()).max_abs_error)"
// MLIR 20+ spells the same product `linalg.matmul indexing_maps = [...]`; vlpc reads both.
builtin.module {
  func.func @matmul_tb(%a: memref<128x64xf32>, %b: memref<256x64xf32>, %c: memref<128x256xf32>) {
    linalg.matmul_transpose_b ins(%a, %b : memref<128x64xf32>, memref<256x64xf32>)
                              outs(%c : memref<128x256xf32>)
    func.return
  }
}
