// RUN: vlpc compile %s --a-transpose in-kernel --macro-tile 32x256 --micro-tile 32x1 --split-k 4 --emit asm | filecheck %s
// (the tile and S = 4 pinned: the automatic plan may add a local split, gemm-split-k; this test is the one-group kernel)

// int8 x int8 -> i32 with A stored K x M (layout TT): rows 4kk..4kk+3 of A (the tile's 32
// values each, one s_load_dwordx8 per row) go into SGPRs, and the v_dot4_i32_i8 A operands
// A[m][4kk..4kk+3] of four rows m come from one 4x4 byte transpose in SALU ops: the pairs
// X = (s_pack_ll_b32_b16, s_pack_hh_b32_b16) of rows (k, k+2) and Y = the same of rows
// (k+1, k+3), then a 64-bit delta swap of bytes 0 and 2 (mask 0x00FF00FF in both dwords of
// an SGPR pair set before the loop): X' holds rows m, m+2, Y' rows m+1, m+3.
// (--a-transpose in-kernel: by default int8 TT copies A into an M x K workspace first, which
// is modeled faster, 82.5 vs 36.8 % of the int8 dot peak at 4096^3: lit_tests/asm/dot_transpose.mlir.)
func.func @t(%a: memref<1024x64xi8, strided<[64, 1]>>, %b: memref<256x1024xi8, strided<[1024, 1]>>,
             %c: memref<64x256xi32>, %alpha: i32, %beta: i32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "TT"}
      : memref<1024x64xi8, strided<[64, 1]>>, memref<256x1024xi8, strided<[1024, 1]>>, memref<64x256xi32>, i32, i32
  func.return
}

// CHECK: ; kernel t: macro tile 32x256, k-step 16, 256 work-items per workgroup
// CHECK: s_mov_b32 s[[MLO:[0-9]+]], 0xff00ff
// CHECK: s_load_dwordx8 s[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], {{.*}}; A row k+0 (K x M)
// CHECK: .Lt_k_loop:
// CHECK: s_pack_ll_b32_b16 s[[X0:[0-9]+]], s[[R0:[0-9]+]], s[[R2:[0-9]+]] ; A rows k, k+2 of m = 0..3
// CHECK-NEXT: s_pack_hh_b32_b16 s[[X1:[0-9]+]], s[[R0]], s[[R2]]
// CHECK-NEXT: s_pack_ll_b32_b16 s[[Y0:[0-9]+]], s[[R1:[0-9]+]], s[[R3:[0-9]+]] ; A rows k+1, k+3
// CHECK-NEXT: s_pack_hh_b32_b16 s[[Y1:[0-9]+]], s[[R1]], s[[R3]]
// CHECK-NEXT: s_lshr_b64 s[[[T:[0-9]+]]:{{[0-9]+}}], s[[[X0]]:[[X1]]], 8
// CHECK-NEXT: s_xor_b64 s[[[T]]:{{[0-9]+}}], s[[[T]]:{{[0-9]+}}], s[[[Y0]]:[[Y1]]]
// CHECK-NEXT: s_and_b64 s[[[T]]:{{[0-9]+}}], s[[[T]]:{{[0-9]+}}], s[[[MLO]]:{{[0-9]+}}]
// CHECK-NEXT: s_xor_b64 s[[[ODD:[0-9]+]]:[[ODD1:[0-9]+]]], s[[[Y0]]:[[Y1]]], s[[[T]]:{{[0-9]+}}]
// CHECK-NEXT: s_lshl_b64 s[[[T8:[0-9]+]]:{{[0-9]+}}], s[[[T]]:{{[0-9]+}}], 8
// CHECK-NEXT: s_xor_b64 s[[[EVEN:[0-9]+]]:[[EVEN1:[0-9]+]]], s[[[X0]]:[[X1]]], s[[[T8]]:{{[0-9]+}}]
// CHECK: v_dot4_i32_i8 v[[ACC0:[0-9]+]], v[[B:[0-9]+]], s[[EVEN]], v[[ACC0]]
// CHECK-NEXT: v_dot4_i32_i8 v[[ACC1:[0-9]+]], v[[B]], s[[ODD]], v[[ACC1]]
// CHECK-NEXT: v_dot4_i32_i8 v[[ACC2:[0-9]+]], v[[B]], s[[EVEN1]], v[[ACC2]]
// CHECK-NEXT: v_dot4_i32_i8 v[[ACC3:[0-9]+]], v[[B]], s[[ODD1]], v[[ACC3]]
// CHECK: s_cbranch_scc1 .Lt_k_loop
// CHECK: s_endpgm
