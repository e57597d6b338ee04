// RUN: vlpc compile %s --macro-tile 64x256 --micro-tile 64x1 --emit asm | filecheck %s

// f16 x f16 -> f16 with the fused epilogue bias_col, gelu (passes/isel/dot.py, the
// instructions of isel/emit.py fused_epilogue): in f32 on alpha * acc + beta * C,
// before the rounding to f16.
func.func @hg(%a: memref<64x64xf16>, %b: memref<256x64xf16>, %c: memref<64x256xf16>, %alpha: f32, %beta: f32,
              %bias: memref<256xf16>) {
  gemm.matmul %a, %b, %c, %alpha, %beta bias(%bias : memref<256xf16>) {layout = "NT", epilogue = ["bias_col", "gelu"]}
      : memref<64x64xf16>, memref<256x64xf16>, memref<64x256xf16>, f32, f32
  func.return
}

// CHECK: .Lhg_k_loop:
// CHECK: v_dot2_f32_f16 v[[ACC:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v[[ACC]]
// CHECK: s_cbranch_scc1 .Lhg_k_loop
// The column's bias: an f16 value per lane, widened once.
// CHECK: global_load_ushort v[[BC:[0-9]+]], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; bias[n]
// CHECK: v_cvt_f32_f16 v[[BC]], v[[BC]]
// gelu's constants, once: -2 log2(e), 0.044715 sqrt(2/pi), sqrt(2/pi) (a VGPR: the FMA's addend), 1.0.
// CHECK-DAG: s_mov_b32 s[[K:[0-9]+]], 0xc038aa3b
// CHECK-DAG: s_mov_b32 s[[C1:[0-9]+]], 0x3d122279
// CHECK-DAG: v_mov_b32 v[[C0:[0-9]+]], 0x3f4c422a
// CHECK-DAG: s_mov_b32 s[[ONE:[0-9]+]], 0x3f800000
// Row 0: C widened, alpha * acc + beta * C, + bias[n], gelu = x / (1 + 2^(k x (c0 + c1 x^2))), f16.
// CHECK: global_load_ushort v[[C:[0-9]+]], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; C row 0
// CHECK: v_cvt_f32_f16 v[[C]], v[[C]]
// CHECK-NEXT: v_mul_f32 v[[T:[0-9]+]], s{{[0-9]+}}, v[[C]]
// CHECK-NEXT: v_fma_f32 v[[D:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v[[T]]
// CHECK-NEXT: v_add_f32 v[[X:[0-9]+]], v[[BC]], v[[D]]
// CHECK-NEXT: v_mul_f32 v[[X2:[0-9]+]], v[[X]], v[[X]]
// CHECK-NEXT: v_fma_f32 v[[P:[0-9]+]], v[[X2]], s[[C1]], v[[C0]]
// CHECK-NEXT: v_mul_f32 v[[Y:[0-9]+]], v[[X]], v[[P]]
// CHECK-NEXT: v_mul_f32 v[[Z:[0-9]+]], s[[K]], v[[Y]]
// CHECK-NEXT: v_exp_f32 v[[E:[0-9]+]], v[[Z]]
// CHECK-NEXT: v_add_f32 v[[DEN:[0-9]+]], s[[ONE]], v[[E]]
// CHECK-NEXT: v_rcp_f32 v[[R:[0-9]+]], v[[DEN]]
// CHECK-NEXT: v_mul_f32 v[[G:[0-9]+]], v[[X]], v[[R]]
// CHECK-NEXT: v_cvt_f16_f32 v[[H:[0-9]+]], v[[G]]
// CHECK-NEXT: global_store_short v{{[0-9]+}}, v[[H]], s[{{[0-9]+}}:{{[0-9]+}}]
// CHECK: s_endpgm
