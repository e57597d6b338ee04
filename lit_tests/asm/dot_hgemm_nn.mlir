// RUN: vlpc compile %s --k-step 16 --emit asm | filecheck %s

// f16 with B stored K x N (layout NN): each VGPR of B packs the values of rows k and k + 1 of
// the lane's column, the low half with global_load_ushort and the high half with
// global_load_short_d16_hi; all low halves of a step go out first, so the waits before the
// high halves leave the other loads in flight (partial vmcnt).
func.func @hn(%a: memref<64x64xf16>, %b: memref<64x256xf16>, %c: memref<64x256xf32>, %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NN"}
      : memref<64x64xf16>, memref<64x256xf16>, memref<64x256xf32>, f32, f32
  func.return
}

// CHECK: .Lhn_k_loop:
// CHECK: v_dot2_f32_f16 v{{[0-9]+}}, v{{[0-9]+}}, s{{[0-9]+}}, v
// CHECK: global_load_ushort v[[S0:[0-9]+]], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B next slot 0 (row k)
// CHECK: global_load_ushort v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B next slot 15 (row k)
// CHECK-NOT: vmcnt(0)
// CHECK: global_load_short_d16_hi v[[S0]], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B next slot 0 (row k+1)
// CHECK: s_cbranch_scc1 .Lhn_k_loop
