// xdsl-opt reads vlpc's linalg (vlpc/universe.py): the named linalg.matmul_transpose_b and an f16
// linalg.matmul accumulating into f32, and -t gcn-hsaco writes the code object.
// RUN: xdsl-opt %s -p 'convert-linalg-to-gemm,gemm-tile{macro-m=16 macro-n=64 micro-m=16 micro-n=1 k-step=8},gemm-map-workgroups,gemm-map-subgroups,gemm-split-k,convert-gemm-to-gcn,gcn-allocate-registers,gcn-insert-waitcnt,gcn-insert-hazard-nops,gcn-emit-descriptor' -t 'gcn-hsaco{output="%t.hsaco"}' | filecheck %s
// RUN: od -A n -t x1 -N 4 %t.hsaco | filecheck %s --check-prefix=ELF

// CHECK:      .globl tb
// CHECK:      v_fma_f32
// CHECK:      .globl h
// CHECK:      v_dot2_f32_f16
// ELF:        7f 45 4c 46

builtin.module {
  func.func @tb(%a: memref<16x32xf32>, %b: memref<64x32xf32>, %c: memref<16x64xf32>) {
    linalg.matmul_transpose_b ins(%a, %b : memref<16x32xf32>, memref<64x32xf32>) outs(%c : memref<16x64xf32>)
    func.return
  }
  func.func @h(%a: memref<16x32xf16>, %b: memref<32x64xf16>, %c: memref<16x64xf32>) {
    linalg.matmul ins(%a, %b : memref<16x32xf16>, memref<32x64xf16>) outs(%c : memref<16x64xf32>)
    func.return
  }
}
