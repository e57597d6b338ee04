// The load pattern of each layout (A through SGPRs in every case).
// RUN: %python %inputs/gemm_template.py NT f32 128 256 64 | vlpc compile - --emit asm | filecheck %s --check-prefix=NT
// RUN: %python %inputs/gemm_template.py NN f32 128 256 64 | vlpc compile - --emit asm | filecheck %s --check-prefix=NN
// RUN: %python %inputs/gemm_template.py TN f32 128 256 64 | vlpc compile - --emit asm | filecheck %s --check-prefix=TN
// RUN: %python %inputs/gemm_template.py TT f64 128 256 64 | vlpc compile - --emit asm | filecheck %s --check-prefix=TT64

// A M x K: one s_load_dwordx16 per row (16 k); B N x K: a dwordx4 per lane along K.
// NT: .Lg_k_loop:
// NT: s_load_dwordx16 {{.*}} ; A row
// NT: global_load_dwordx4
// NT: v_fma_f32 v[[C:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v[[C]]

// B K x N: one coalesced dword per lane per k.
// NN: .Lg_k_loop:
// NN-NOT: global_load_dwordx4
// NN: global_load_dword v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B next slot
// NN-NOT: global_load_dwordx4
// NN: s_cbranch_scc1 .Lg_k_loop

// A K x M: one s_load_dwordx16 covers 16 rows of one k.
// TN: .Lg_k_loop:
// TN: s_load_dwordx16 {{.*}} ; A rows {{[0-9]+}}..{{[0-9]+}} k+
// TN: v_fma_f32

// f64: A as SGPR pairs, 8 doubles per s_load_dwordx16, v_fma_f64.
// No f32 FMA anywhere in the f64 kernel: a NOT before and after each positive match.
// TT64-NOT: v_fma_f32
// TT64: .Lg_k_loop:
// TT64-NOT: v_fma_f32
// TT64: s_load_dwordx16 {{.*}} ; A rows {{[0-9]+}}..{{[0-9]+}} k+
// TT64-NOT: v_fma_f32
// TT64: v_fma_f64 v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}]
// TT64-NOT: v_fma_f32
