// The unsplit kernel on the seed-sized 64x256 tile with schedule cover (A batches of 32 SGPRs, each load covered by 32 FMAs); the default kernel: prefix WIDE below.
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --target gfx906 --split-k 1 --macro-tile 64x256 --micro-tile 64x1 --schedule cover --emit asm | filecheck %s
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --target gfx906 --split-k 1 --macro-tile 64x256 --micro-tile 64x1 --schedule cover --emit asm | filecheck %s --check-prefix=NOLDS
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --target gfx906:sramecc+:xnack- --split-k 1 --macro-tile 64x256 --micro-tile 64x1 --schedule cover --emit asm | filecheck %s --check-prefix=TID
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --target gfx906 --split-k 1 --emit asm | filecheck %s --check-prefix=WIDE

// The default kernel (above: the seed-sized 64x256 tile with schedule cover): 32-row tiles at
// 4 waves per SIMD, A in batches of 4 rows (64 SGPRs) loaded together after the previous
// batch's FMAs, one lgkmcnt(0) per 64 FMAs (gcn-insert-waitcnt keeps the batch together).
// WIDE: ; kernel sgemm: macro tile 32x{{[0-9]+}}, k-step 16
// WIDE-NEXT: VGPRs {{[0-9]+}}, SGPRs {{[0-9]+}} (+4 reserved), LDS 0 bytes; occupancy 4 waves/SIMD
// WIDE-LABEL: _k_loop:
// WIDE: s_load_dwordx16 {{.*}} ; A row 4 k+0..
// WIDE-NEXT: s_load_dwordx16 {{.*}} ; A row 5 k+0..
// WIDE-NEXT: s_load_dwordx16 {{.*}} ; A row 6 k+0..
// WIDE-NEXT: s_load_dwordx16 {{.*}} ; A row 7 k+0..
// WIDE-NEXT: s_waitcnt lgkmcnt(0)
// WIDE-NEXT: v_fma_f32 v{{[0-9]+}}, v{{[0-9]+}}, s{{[0-9]+}}, v{{[0-9]+}}

// CHECK: .amdgcn_target "amdgcn-amd-amdhsa--gfx906"
// CHECK: .amdhsa_code_object_version 5
// CHECK: sgemm:
// A is read with scalar loads into 16 SGPRs, a tuple aligned to 4 ...
// CHECK: s_load_dwordx16 s{{\[}}[[A0:[0-9]+]]:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], s{{[0-9]+}}{{( offset:0x[0-9a-f]+)?}} ; A row 0
// ... B with vector loads into 4 VGPRs ...
// CHECK: global_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}]
// CHECK: .Lsgemm_k_loop:
// ... and each A SGPR is the scalar source of an in-place FMA.
// CHECK: v_fma_f32 v[[C:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v[[C]]
// CHECK: s_cbranch_scc1 .Lsgemm_k_loop
// CHECK: s_endpgm
// CHECK: .amdhsa_kernel sgemm
// CHECK-DAG: .amdhsa_next_free_vgpr 84
// CHECK-DAG: .amdhsa_user_sgpr_kernarg_segment_ptr 1
// CHECK-DAG: .amdhsa_system_sgpr_workgroup_id_x 1
// CHECK-DAG: .amdhsa_system_sgpr_workgroup_id_y 1
// CHECK-DAG: .amdhsa_kernarg_size 56
// CHECK-DAG: .amdhsa_group_segment_fixed_size 0
// CHECK: .end_amdhsa_kernel
// CHECK: amdhsa.version: [ 1, 2 ]
// CHECK: .name: sgemm
// CHECK: .vgpr_count: 84
// CHECK: .max_flat_workgroup_size: 256
// CHECK: .args:
// CHECK-NEXT: - .name: A
// CHECK-NEXT: .offset: 0
// CHECK-NEXT: .size: 8
// CHECK-NEXT: .value_kind: global_buffer
// CHECK: .name: beta
// CHECK-NEXT: .offset: 52

// NOLDS-NOT: ds_
// NOLDS-NOT: s_barrier

// TID: .amdgcn_target "amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-"
// TID: .amdhsa_reserve_xnack_mask 0
