// RUN: vlpc compile %s --k-step 16 --emit asm | filecheck %s
// RUN: vlpc compile %s --k-step 16 --print-plan | filecheck %s --check-prefix=PLAN

// f16 with A stored K x M (layout TT), M = 37 and lda = 39 odd: the dot kernel cannot pack A's
// pairs of K values by SALU ops (they do not start on 4-byte boundaries), so the plan copies A
// first (passes/isel/transpose.py).  hgemm_tt_transpose: lane m reads A[k, m0 + m] of
// rows k, k+1 (global_load_ushort, then global_load_short_d16_hi into the same VGPR: one dword
// of the copy), the dwords go through LDS (ds_write_b32, s_barrier, ds_read_b32) and each lane
// stores one dword of a row of the copy (M x ceil(K/2)*2).  Then hgemm_tt, the NT dot kernel,
// reads A from the workspace (the last kernel argument).
func.func @hgemm_tt(%a: memref<45x37xf16, strided<[39, 1]>>, %b: memref<70x45xf16, strided<[48, 1]>>,
                    %c: memref<37x70xf32>, %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "TT"}
      : memref<45x37xf16, strided<[39, 1]>>, memref<70x45xf16, strided<[48, 1]>>, memref<37x70xf32>, f32, f32
  func.return
}

// PLAN: kernels: hgemm_tt_transpose (grid 1x1x1, LDS 8448 bytes), then hgemm_tt (grid z 1)
// PLAN: A copy (A stored K x M -> M x ceil(K/2)*2 f16, after any split-K partials): 3404 bytes; M, lda

// CHECK: ; kernel hgemm_tt_transpose: macro tile 64x64, k-step 1, 256 work-items per workgroup
// CHECK: ; kernel hgemm_tt: macro tile 32x64, k-step 16, 64 work-items per workgroup
// CHECK: hgemm_tt_transpose:
// CHECK: s_load_dwordx2 s[{{[0-9]+}}:{{[0-9]+}}], s[0:1], 0x38 {{ +}}; kernarg workspace
// CHECK: global_load_ushort v[[D:[0-9]+]], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] {{ +}}; A row k0 + 2w + 0
// CHECK: global_load_short_d16_hi v[[D]], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] offset:{{[0-9]+}} {{ *}}; A row k0 + 2w + 1
// CHECK: ds_write_b32 v{{[0-9]+}}, v[[D]]
// CHECK: s_barrier
// CHECK: ds_read_b32 v[[W:[0-9]+]], v{{[0-9]+}}
// CHECK: global_store_dword v{{[0-9]+}}, v[[W]], s[{{[0-9]+}}:{{[0-9]+}}]
// CHECK: s_endpgm
// CHECK: .amdhsa_group_segment_fixed_size 8448
// CHECK: {{^}}hgemm_tt:
// CHECK: s_load_dwordx2 s[{{[0-9]+}}:{{[0-9]+}}], s[0:1], 0x38 {{ +}}; kernarg workspace
// CHECK-NOT: s_pack_ll_b32_b16
// CHECK: v_dot2_f32_f16 v{{[0-9]+}}, v{{[0-9]+}}, s{{[0-9]+}}, v{{[0-9]+}}
// CHECK: s_endpgm
