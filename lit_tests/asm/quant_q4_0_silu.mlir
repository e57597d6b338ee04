// RUN: vlpc compile %s --split-k 1 --emit asm | filecheck %s

// f16 activations x GGUF Q4_0 weights (passes/isel/quant.py, docs/quantized.md) with silu:
// B is the tensor's bytes, 64 rows of 4 blocks of 18 bytes; 2 block pairs over 2 wavefront groups.
func.func @q4(%x: memref<1x128xf16>, %w: memref<64x72xi8>, %y: memref<1x64xf32>, %alpha: f32, %beta: f32) {
  gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT", b_format = "q4_0", epilogue = ["silu"]}
      : memref<1x128xf16>, memref<64x72xi8>, memref<1x64xf32>, f32, f32
  func.return
}

// The dequantization's constants: 0x64 (the high byte of 1024.0) in every byte, the byte selectors
// of v_perm_b32, -1032 in both f16 halves.
// CHECK-DAG: v_mov_b32 v[[MAGIC:[0-9]+]], 0x64646464
// CHECK-DAG: s_mov_b32 s[[SEL0:[0-9]+]], 0x4010400
// CHECK-DAG: s_mov_b32 s[[SEL2:[0-9]+]], 0x4030402
// CHECK-DAG: s_mov_b32 s[[OFF:[0-9]+]], 0xe408e408
// One row of A: both blocks of the pair in SGPRs (loaded a pair ahead), then the lane's 36 bytes of
// the pair, two dwordx4 and a dword.
// CHECK: s_load_dwordx16 s[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], s{{[0-9]+}} ; A row 0, block 0
// CHECK-NEXT: s_load_dwordx16 s[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], s{{[0-9]+}} offset:0x40 ; A row 0, block 1
// CHECK-NEXT: global_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B blocks, dwords 0..
// CHECK: global_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] offset:16 ; B blocks, dwords 4..
// CHECK: global_load_dword v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] offset:32 ; B blocks, dword 8
// Block 0: the scale (bytes 0-1), then weights 0 and 1 = the low nibbles of bytes 2 and 3.
// CHECK: v_cvt_f32_f16 v[[D:[0-9]+]], v{{[0-9]+}}
// CHECK-NEXT: v_and_b32 v[[LO:[0-9]+]], 0xf0f0f0f, v{{[0-9]+}}
// CHECK-NEXT: v_perm_b32 v[[H:[0-9]+]], v[[MAGIC]], v[[LO]], s[[SEL2]]
// CHECK-NEXT: v_pk_add_f16 v{{[0-9]+}}, s[[OFF]], v[[H]]
// The high nibbles: weights 16.. of the block.
// CHECK: v_lshrrev_b32 v[[S:[0-9]+]], 4, v{{[0-9]+}}
// CHECK-NEXT: v_and_b32 v{{[0-9]+}}, 0xf0f0f0f, v[[S]]
// 16 dots into the block sum from 0, then the row's accumulator += d * block sum.
// CHECK: v_dot2_f32_f16 v[[BS:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v{{[0-9]+}}
// CHECK-COUNT-15: v_dot2_f32_f16 v[[BS]], v{{[0-9]+}}, s{{[0-9]+}}, v[[BS]]
// CHECK-NEXT: v_fma_f32 v{{[0-9]+}}, v[[D]], v[[BS]], v{{[0-9]+}} ; row 0 += d * block sum
// silu after the groups' LDS reduction: x / (1 + 2^(-x log2 e)).
// CHECK: s_mov_b32 s[[K:[0-9]+]], 0xbfb8aa3b
// CHECK: v_mul_f32 v[[Z:[0-9]+]], s[[K]], v[[X:[0-9]+]]
// CHECK-NEXT: v_exp_f32 v[[E:[0-9]+]], v[[Z]]
// CHECK-NEXT: v_add_f32 v[[DEN:[0-9]+]], s{{[0-9]+}}, v[[E]]
// CHECK-NEXT: v_rcp_f32 v[[R:[0-9]+]], v[[DEN]]
// CHECK-NEXT: v_mul_f32 v{{[0-9]+}}, v[[X]], v[[R]]
// CHECK: global_store_dword
