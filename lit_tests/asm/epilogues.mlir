// Each fused epilogue's instructions, in the store phase (after the K loop).
// RUN: %python %inputs/gemm_template.py NT f32 64 256 32 bias_row relu | vlpc compile - --emit asm | filecheck %s --check-prefix=ROW
// RUN: %python %inputs/gemm_template.py NT f32 64 256 32 bias_col gelu | vlpc compile - --emit asm | filecheck %s --check-prefix=GELU
// RUN: %python %inputs/gemm_template.py NT f64 32 256 32 relu | vlpc compile - --emit asm | filecheck %s --check-prefix=RELU64

// ROW: s_cbranch_scc1
// ROW: s_load_dword s[[BR:[0-9]+]], s[{{[0-9]+}}:{{[0-9]+}}], 0x0 ; bias[row 0]
// ROW: v_fma_f32 v[[D:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v{{[0-9]+}}
// ROW: v_add_f32 v[[E:[0-9]+]], s[[BR]], v[[D]]
// ROW-NEXT: v_max_f32 v[[F:[0-9]+]], 0, v[[E]]
// ROW-NEXT: global_store_dword v{{[0-9]+}}, v[[F]]

// GELU: s_cbranch_scc1
// GELU: global_load_dword v[[BC:[0-9]+]], {{.*}} ; bias[n]
// GELU: v_add_f32 v{{[0-9]+}}, v[[BC]], v{{[0-9]+}}
// GELU: v_mul_f32
// GELU: v_fma_f32
// GELU: v_exp_f32
// GELU: v_add_f32
// GELU: v_rcp_f32
// GELU: v_mul_f32
// GELU-NEXT: global_store_dword

// RELU64: v_fma_f64
// RELU64: v_max_f64 v[{{[0-9]+}}:{{[0-9]+}}], 0, v[{{[0-9]+}}:{{[0-9]+}}]
// RELU64-NEXT: global_store_dwordx2
