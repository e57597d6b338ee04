// RUN: vlpc compile %s --macro-tile 64x256 --micro-tile 64x1 --schedule cover --split-k 4 --emit asm | filecheck %s --check-prefix=WS
// RUN: vlpc compile %s --macro-tile 64x256 --micro-tile 64x1 --schedule cover --split-k 4 --split-mode atomic --emit asm | filecheck %s --check-prefix=ATOMIC
// RUN: vlpc compile %s --macro-tile 64x256 --micro-tile 64x1 --schedule cover --split-k 1 --local-split 2 --emit asm | filecheck %s --check-prefix=LOCAL

// Workspace mode: the main kernel stores raw partial tiles into slice z of the workspace
// (no beta or C; alpha only to store zero partials when alpha = 0, BLAS's quick return); the
// reduce kernel, in the same code object, sums the 4 partials of each element in slice order
// and applies alpha and beta.
// WS: sgemm:
// WS: .Lsgemm_k_loop:
// WS: v_fma_f32 v[[C:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v[[C]]
// WS: s_load_dwordx2 s[{{[0-9]+}}:{{[0-9]+}}], s[0:1], 0x38 {{ +}}; kernarg workspace
// WS-NOT: kernarg beta
// WS-NOT: kernarg C
// WS: global_store_dword
// WS: s_endpgm
// WS: .amdhsa_kernel sgemm{{$}}
// WS: .amdhsa_system_sgpr_workgroup_id_z 1
// WS: sgemm_reduce:
// WS-NOT: v_fma_f32 v{{[0-9]+}}, v{{[0-9]+}}, s{{[0-9]+}}, v
// (each slice's offset is added to the address in a VGPR between the loads)
// WS: global_load_dword {{.*}} ; partial 0 row 0
// WS: global_load_dword {{.*}} ; partial 1 row 0
// WS: global_load_dword {{.*}} ; partial 2 row 0
// WS: global_load_dword {{.*}} ; partial 3 row 0
// WS: v_add_f32
// WS: v_add_f32
// WS: v_add_f32
// WS: s_endpgm
// WS: .amdhsa_kernel sgemm_reduce
// WS: .amdhsa_system_sgpr_workgroup_id_z 0
// WS: .name: workspace

// Atomic mode: the scale kernel applies beta once, then each slice adds alpha*acc into C
// with a compare-and-swap loop (gfx906 has no float atomic add).
// ATOMIC: sgemm_scale:
// ATOMIC: kernarg beta
// ATOMIC: s_endpgm
// ATOMIC: sgemm:
// ATOMIC: .Lsgemm_cas_row0:
// ATOMIC: v_add_f32
// ATOMIC: global_atomic_cmpswap v{{[0-9]+}}, v{{[0-9]+}}, v[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}] glc
// ATOMIC: s_waitcnt vmcnt(0)
// ATOMIC: v_cmp_ne_u32_e64
// ATOMIC: s_and_b64 exec, exec,
// ATOMIC: s_cbranch_execnz .Lsgemm_cas_row0

// Local split: two groups of wavefronts, the K loop without LDS or barriers, then group 1
// hands its rows to group 0 through LDS.
// LOCAL: v_readfirstlane_b32
// LOCAL: .Lsgemm_k_loop:
// LOCAL-NOT: ds_
// LOCAL-NOT: s_barrier
// LOCAL: s_cbranch_scc1 .Lsgemm_k_loop
// LOCAL: ds_write_b32
// LOCAL: s_barrier
// LOCAL: ds_read_b32
// LOCAL: .amdhsa_group_segment_fixed_size 16384
builtin.module {
  func.func @sgemm(%a: memref<256x8192xf32>, %b: memref<256x8192xf32>, %c: memref<256x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<256x8192xf32>, memref<256x8192xf32>, memref<256x256xf32>, f32, f32
    func.return
  }
}
