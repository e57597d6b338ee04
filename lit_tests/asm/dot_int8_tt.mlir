// RUN: vlpc compile %s --emit asm | filecheck %s

// int8 x int8 -> i32 with A stored K x M (layout TT): rows 4kk..4kk+3 of A (the tile's 32
// values each, one s_load_dwordx8 per row) go into SGPRs, and each v_dot4_i32_i8's A operand
// A[m][4kk..4kk+3] is a 4x4 byte transpose in SALU ops: s_pack_ll_b32_b16 (m % 4 = 0, 1) or
// s_pack_hh_b32_b16 (m % 4 = 2, 3) of rows (k, k+2) and (k+1, k+3), then a delta swap of
// bytes 0 and 2 (mask 0x00FF00FF) gives rows m and m + 1: 8 SALU ops per two dots.
func.func @t(%a: memref<1024x64xi8, strided<[64, 1]>>, %b: memref<256x1024xi8, strided<[1024, 1]>>,
             %c: memref<64x256xi32>, %alpha: i32, %beta: i32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "TT"}
      : memref<1024x64xi8, strided<[64, 1]>>, memref<256x1024xi8, strided<[1024, 1]>>, memref<64x256xi32>, i32, i32
  func.return
}

// CHECK: ; kernel t: macro tile 32x256, k-step 16, 256 work-items per workgroup
// CHECK: s_load_dwordx8 s[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], {{.*}}; A row k+0 (K x M)
// CHECK: .Lt_k_loop:
// CHECK: s_pack_ll_b32_b16 s[[X:[0-9]+]], s{{[0-9]+}}, s{{[0-9]+}} ; A rows k, k+2 of m = 0, 1
// CHECK-NEXT: s_pack_ll_b32_b16 s[[Y:[0-9]+]], s{{[0-9]+}}, s{{[0-9]+}} ; A rows k+1, k+3
// CHECK-NEXT: s_lshr_b32 s[[T:[0-9]+]], s[[X]], 8
// CHECK-NEXT: s_xor_b32 s[[T]], s[[T]], s[[Y]]
// CHECK-NEXT: s_and_b32 s[[T]], s[[T]], 0xff00ff
// CHECK-NEXT: s_xor_b32 s[[ODD:[0-9]+]], s[[Y]], s[[T]] ; A[m = 1][k..k+3]
// CHECK-NEXT: s_lshl_b32 s[[T8:[0-9]+]], s[[T]], 8
// CHECK-NEXT: s_xor_b32 s[[EVEN:[0-9]+]], s[[X]], s[[T8]] ; A[m = 0][k..k+3]
// CHECK: v_dot4_i32_i8 v[[ACC0:[0-9]+]], v{{[0-9]+}}, s[[EVEN]], v[[ACC0]]
// CHECK: s_pack_hh_b32_b16 s{{[0-9]+}}, s{{[0-9]+}}, s{{[0-9]+}} ; A rows k, k+2 of m = 2, 3
// CHECK: s_cbranch_scc1 .Lt_k_loop
// CHECK: s_endpgm
