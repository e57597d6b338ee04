// The legacy LDS-tiled kernel for f64 (DGEMM, convert-gemm-to-gcn{strategy=lds}) with
// the default f64 tile 32x256, k-step 8: LDS stages of 4 k, a 4x8 micro tile of doubles.
// RUN: %python %inputs/gemm_template.py NT f64 64 512 640 | vlpc compile - --target gfx906 --strategy lds --emit asm | filecheck %s
// RUN: %python %inputs/gemm_template.py NT f64 64 512 640 | vlpc compile - --target gfx906 --strategy lds -v -o %t.hsaco 2>&1 | filecheck %s --check-prefix=OCC

// CHECK: g:
// alpha and beta are doubles at kernarg offsets 48 and 56 (loaded in the epilogue).
// One dword of A (half a double) and a row of B (4 doubles) per work-item and stage ...
// CHECK: global_load_dword v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; A k+ 0 (one dword of a double)
// CHECK-NEXT: global_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B k+ 0..1
// ... written K-major into LDS: B as pairs of doubles 64 doubles apart (units of 512 bytes).
// CHECK: ds_write_b32 v{{[0-9]+}}, v{{[0-9]+}} ; A -> LDS0 k+ 0
// CHECK: ds_write2st64_b64 v{{[0-9]+}}, v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}] offset0:2 offset1:6 ; B -> LDS0 k+ 0, 1
// CHECK: ds_write2st64_b64 {{.*}} offset0:10 offset1:14 ; B -> LDS0 k+ 2, 3
// CHECK: s_waitcnt lgkmcnt(0)
// CHECK-NEXT: s_barrier
// CHECK: .Lg_k_loop:
// Fragments: 2 x ds_read_b128 of A (4 doubles), 4 of B (8 doubles), then A of k+1 ...
// CHECK: ds_read_b128 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}} ; A frag k=0
// CHECK: ds_read_b128 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}} offset:1024 ; B frag k=0
// CHECK: ds_read_b128 {{.*}} offset:272 ; A frag k=1
// CHECK-NEXT: s_waitcnt lgkmcnt(5)
// ... v_fma_f64 on VGPR pairs only, column by column (4 rows per B double) ...
// CHECK-NEXT: v_fma_f64 v{{\[}}[[C:[0-9]+]]:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], v{{\[}}[[B:[0-9]+]]:{{[0-9]+}}], v{{\[}}[[C]]:{{[0-9]+}}]
// CHECK-NEXT: v_fma_f64 v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], v{{\[}}[[B]]:{{[0-9]+}}],
// ... and each B quad of k+1 is read into the registers its k quad frees, 2 columns (8 FMAs) later.
// CHECK-COUNT-6: v_fma_f64
// CHECK-NEXT: ds_read_b128 v{{\[}}[[B]]:{{[0-9]+}}], v{{[0-9]+}} offset:3072 ; B frag k=1
// CHECK-NEXT: s_waitcnt lgkmcnt(5)
// CHECK-NEXT: v_fma_f64
// The next stage goes to the other LDS buffer during the last k of this one.
// CHECK: ds_write_b32 {{.*}} offset:9216 ; A -> LDS1 k+ 0
// CHECK: ds_write2st64_b64 {{.*}} offset0:20 offset1:24 ; B -> LDS1 k+ 0, 1
// CHECK: s_waitcnt lgkmcnt(0)
// CHECK-NEXT: s_barrier
// CHECK: s_cbranch_scc1 .Lg_k_loop
// Epilogue: C = alpha * acc + beta * C on pairs, alpha and beta from SGPR pairs.
// CHECK: s_load_dwordx2 s[{{[0-9]+}}:{{[0-9]+}}], s[0:1], 0x30 ; kernarg alpha
// CHECK: s_load_dwordx2 s[{{[0-9]+}}:{{[0-9]+}}], s[0:1], 0x38 ; kernarg beta
// CHECK: global_load_dwordx4 {{.*}} ; C row 0 cols 0..
// CHECK: v_mul_f64 v[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}]
// CHECK-NEXT: v_fma_f64 v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}]
// CHECK: global_store_dwordx4
// CHECK: s_endpgm
// CHECK: .amdhsa_group_segment_fixed_size 18432
// CHECK: .group_segment_fixed_size: 18432
// CHECK: .vgpr_count: 112

// OCC: macro tile 32x256, k-step 8, 256 work-items per workgroup
// OCC: VGPRs 112, SGPRs {{[0-9]+}} (+4 reserved), LDS 18432 bytes; occupancy 2 waves/SIMD (limited by VGPRs)
