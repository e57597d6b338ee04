// convert-gemm-to-gcn{schedule=seed}: the loop of the seed's hand-written 64x256 SGEMM
// (An Alternative SGEMM on VEGA, section 2), with data forwarding (default) and without (--no-forwarding).
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --schedule seed --emit asm | filecheck %s
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --schedule seed --emit asm | filecheck %s --check-prefix=NOLDS
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --schedule seed --no-forwarding --emit asm | filecheck %s --check-prefix=NOFWD
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --split-k 1 --macro-tile 64x256 --micro-tile 64x1 --schedule cover --no-forwarding --emit asm | filecheck %s --check-prefix=SQCNOFWD
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --schedule seed --print-pipeline | filecheck %s --check-prefix=PIPE

// CHECK-LABEL: .Lsgemm_k_loop:
// B double-buffered: the next 8 k of the lane's B row (2 x global_load_dwordx4), the
// address advanced by 16 bytes per load ...
// CHECK: global_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v[[VOFF:[0-9]+]], s[{{[0-9]+}}:{{[0-9]+}}] ; B next k+0..
// CHECK-NEXT: s_add_u32 s{{[0-9]+}}, s{{[0-9]+}}, 16
// CHECK-NEXT: s_addc_u32 s{{[0-9]+}}, s{{[0-9]+}}, 0
// CHECK-NEXT: global_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v[[VOFF]], s[{{[0-9]+}}:{{[0-9]+}}] ; B next k+4..
// ... a group of 8 rows starts with one s_waitcnt lgkmcnt(0) for its 8 s_load_dwordx8 (issued
// during the group before: SMEM returns out of order) ...
// CHECK: s_waitcnt lgkmcnt(0)
// ... then the FMAs with an SGPR source, row by row: the accumulator of each is the previous one's ...
// CHECK-NEXT: v_fma_f32 v[[C:[0-9]+]], v{{[0-9]+}}, s[[S:[0-9]+]], v[[C]]
// CHECK-NEXT: v_fma_f32 v[[C]], v{{[0-9]+}}, s{{[0-9]+}}, v[[C]]
// CHECK-COUNT-6: v_fma_f32 v[[C]], v{{[0-9]+}}, s{{[0-9]+}}, v[[C]]
// ... and right after the row's 8 FMAs, the load that refills its SGPRs with the same row of
// the next group (SGPR offset stepped by lda*4), as the seed's sgemm_64x256_sqc.s does.
// CHECK-NEXT: s_add_u32 [[OFF:s[0-9]+]], [[OFF]], 0xa00
// CHECK-NEXT: s_load_dwordx8 s[[[S]]:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], [[OFF]] ; A row 8 k+0..7
// CHECK-NEXT: v_fma_f32 v[[C2:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v[[C2]]
// The step ends with the wait that retires the prefetch, separate from the A waits.
// CHECK: s_waitcnt vmcnt(0)
// CHECK: s_cbranch_scc1 .Lsgemm_k_loop
// CHECK: .amdhsa_next_free_vgpr 82
// CHECK: .amdhsa_group_segment_fixed_size 0

// NOLDS-NOT: ds_read
// NOLDS-NOT: ds_write
// NOLDS-NOT: s_barrier
// NOLDS-NOT: s_load_dwordx16

// Without forwarding (the seed's sgemm_64x256_sqc_sum_no_reuse.s): the FMAs of a pair of rows
// alternate, K-major, so none reads the accumulator the one before wrote; the pair's two
// loads follow its 16 FMAs.
// NOFWD-LABEL: .Lsgemm_k_loop:
// NOFWD: s_waitcnt lgkmcnt(0)
// NOFWD-NEXT: v_fma_f32 v[[C1:[0-9]+]], v[[B:[0-9]+]], s{{[0-9]+}}, v[[C1]]
// NOFWD-NEXT: v_fma_f32 v[[C2:[0-9]+]], v[[B]], s{{[0-9]+}}, v[[C2]]
// NOFWD-NEXT: v_fma_f32 v[[C1]], v[[B2:[0-9]+]], s{{[0-9]+}}, v[[C1]]
// NOFWD-NEXT: v_fma_f32 v[[C2]], v[[B2]], s{{[0-9]+}}, v[[C2]]
// NOFWD-COUNT-12: v_fma_f32
// NOFWD-NEXT: s_add_u32
// NOFWD-NEXT: s_load_dwordx8 {{.*}} ; A row 8 k+0..7
// NOFWD-NEXT: s_add_u32
// NOFWD-NEXT: s_load_dwordx8 {{.*}} ; A row 9 k+0..7
// NOFWD: s_cbranch_scc1 .Lsgemm_k_loop

// The default schedule without forwarding: batches of 2 rows, K-major (rows alternate).
// SQCNOFWD-LABEL: .Lsgemm_k_loop:
// SQCNOFWD: v_fma_f32 v[[R0:[0-9]+]], v[[B0:[0-9]+]], s{{[0-9]+}}, v[[R0]]
// SQCNOFWD-NEXT: v_fma_f32 v[[R1:[0-9]+]], v[[B0]], s{{[0-9]+}}, v[[R1]]
// SQCNOFWD-NEXT: v_fma_f32 v[[R0]], v{{[0-9]+}}, s{{[0-9]+}}, v[[R0]]
// SQCNOFWD-NEXT: v_fma_f32 v[[R1]], v{{[0-9]+}}, s{{[0-9]+}}, v[[R1]]

// PIPE: convert-gemm-to-gcn{{.*}}schedule{{.*}}seed
