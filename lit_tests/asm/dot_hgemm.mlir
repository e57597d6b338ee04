// RUN: vlpc compile %s --macro-tile 64x256 --micro-tile 64x1 --split-k 1 --emit asm | filecheck %s
// (S = 1 pinned: the automatic plan may add a local split, gemm-split-k; this test is the one-group kernel)

// f16 x f16 -> f16 through v_dot2_f32_f16 (passes/isel/dot.py): K = 67 is 33 dwords
// of two f16 values (two K steps of 16 dwords, a tail of one) and one value left over.
func.func @h(%a: memref<64x67xf16, strided<[68, 1]>>, %b: memref<256x67xf16, strided<[68, 1]>>,
             %c: memref<64x256xf16>, %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
      : memref<64x67xf16, strided<[68, 1]>>, memref<256x67xf16, strided<[68, 1]>>, memref<64x256xf16>, f32, f32
  func.return
}

// CHECK: ; kernel h: macro tile 64x256, k-step 16, 256 work-items per workgroup
// A row 1 starts lda * 2 = 136 bytes after row 0: 16 dwords = 32 values of K per scalar load.
// CHECK: s_load_dwordx16 s[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], s{{[0-9]+}} offset:0x88 ; A row 1 dword 0..
// CHECK: global_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] offset:48 ; B slot 3
// The K loop: one dot instruction per SGPR of A, its other operand a VGPR of B.
// CHECK: .Lh_k_loop:
// CHECK-NOT: v_fma
// CHECK: v_dot2_f32_f16 v[[ACC:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v[[ACC]]
// CHECK-NOT: v_fma
// CHECK: s_cbranch_scc1 .Lh_k_loop
// The value left over (K odd): B and A one element each, zero-extended, both operands VGPRs.
// CHECK: .Lh_k_left:
// CHECK: global_load_ushort v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B[n, k]
// CHECK: global_load_ushort v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; A[row 0, k]
// CHECK: v_dot2_f32_f16 v[[ACC2:[0-9]+]], v{{[0-9]+}}, v{{[0-9]+}}, v[[ACC2]]
// CHECK: s_cbranch_scc1 .Lh_k_left
// f16 C: read as ushort, widened, alpha * acc + beta * C in f32, rounded to f16 and stored.
// CHECK: global_load_ushort v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; C row 0
// CHECK: v_cvt_f32_f16
// CHECK: v_fma_f32
// CHECK: v_cvt_f16_f32
// CHECK: global_store_short
// CHECK: s_endpgm
