// The legacy LDS-tiled kernel (convert-gemm-to-gcn{strategy=lds}, An Alternative SGEMM on VEGA, section 1)
// next to the sqc kernel on the same problem.
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --target gfx906 --strategy lds --emit asm | filecheck %s
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --target gfx906 --strategy sqc --macro-tile 64x256 --micro-tile 64x1 --schedule cover --split-k 2 --emit asm | filecheck %s --check-prefix=SQC
// RUN: vlpc compile %inputs/sgemm_256x512x640.mlir --target gfx906 --strategy lds -v -o %t.hsaco 2>&1 | filecheck %s --check-prefix=OCC
// RUN: vlpc opt %inputs/sgemm_256x512x640.mlir -p 'gemm-tile{model=false},gemm-map-workgroups,gemm-map-subgroups,gemm-split-k{split-k=1},convert-gemm-to-gcn{strategy=lds}' | filecheck %s --check-prefix=IR

// CHECK: sgemm:
// Stage 0 and 1 are loaded from memory, stage 0 goes to LDS buffer 0 transposed to K-major ...
// CHECK: global_load_dword v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; A k+ 0
// CHECK: global_load_dwordx4 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B k+ 0..3
// CHECK: ds_write2st64_b32 v{{[0-9]+}}, v{{[0-9]+}}, v{{[0-9]+}} offset0:0 offset1:1 ; A -> LDS0
// CHECK: ds_write2st64_b32 v{{[0-9]+}}, v{{[0-9]+}}, v{{[0-9]+}} offset0:8 offset1:12 ; B -> LDS0
// ... and every wave waits for its LDS writes before the barrier.
// CHECK: s_waitcnt lgkmcnt(0)
// CHECK-NEXT: s_barrier
// CHECK: .Lsgemm_k_loop:
// Fragments of k and k+1 in flight; the first FMAs wait for the older reads only.
// CHECK: ds_read_b128 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}} ; A frag k=0
// CHECK: ds_read_b128 v[{{[0-9]+}}:{{[0-9]+}}], v{{[0-9]+}} offset:2048 ; B frag k=0
// CHECK: ds_read_b128 {{.*}} ; B frag k=1
// CHECK-NEXT: ds_read_b128 {{.*}} ; B frag k=1
// CHECK-NEXT: s_waitcnt lgkmcnt(5)
// FMAs with VGPR operands only, accumulating in place.
// CHECK-NEXT: v_fma_f32 v[[C:[0-9]+]], v{{[0-9]+}}, v{{[0-9]+}}, v[[C]]
// The next stage goes to the other buffer while this one is computed.
// CHECK: ds_write2st64_b32 {{.*}} ; A -> LDS1
// CHECK: s_waitcnt lgkmcnt(0)
// CHECK-NEXT: s_barrier
// CHECK: s_cbranch_scc1 .Lsgemm_k_loop
// CHECK: global_store_dwordx4
// CHECK: s_endpgm
// CHECK: .amdhsa_group_segment_fixed_size 20480
// CHECK: .group_segment_fixed_size: 20480
// CHECK: .vgpr_count: 112

// SQC: sgemm:
// SQC-NOT: ds_read
// SQC-NOT: ds_write
// SQC-NOT: s_barrier
// SQC: s_endpgm
// SQC-NOT: ds_read
// SQC-NOT: ds_write
// SQC-NOT: s_barrier
// SQC: .amdhsa_group_segment_fixed_size 0

// OCC: VGPRs 112, SGPRs {{[0-9]+}} (+4 reserved), LDS 20480 bytes; occupancy 2 waves/SIMD (limited by VGPRs)

// IR: "gcn.kernel"
// IR-DAG: lds_bytes = 20480 : i64
// IR-DAG: "gcn.s_barrier"
// IR-DAG: "gcn.ds_read_b128"
