// RUN: vlpc opt %inputs/sgemm_256x512x640.mlir -p gemm-tile,gemm-map-workgroups,gemm-map-subgroups,gemm-split-k,convert-gemm-to-gcn | filecheck %s
// No wait is written by instruction selection: NOWAIT has only a NOT, so it covers the whole output.
// RUN: vlpc opt %inputs/sgemm_256x512x640.mlir -p gemm-tile,gemm-map-workgroups,gemm-map-subgroups,gemm-split-k,convert-gemm-to-gcn | filecheck %s --check-prefix=NOWAIT

// The kernel's entry registers are the dispatch-initialised ones.
// CHECK: "gcn.kernel"() <{sym_name = "sgemm"}>
// CHECK: ^bb0(%{{.*}}: !gcn.sgpr<s[0:1]>, %{{.*}}: !gcn.sgpr<s2>, %{{.*}}: !gcn.sgpr<s3>, %{{.*}}: !gcn.vgpr<v0>, %{{.*}}: !gcn.special<exec>):
// A rows are scalar loads into (still virtual) 16-SGPR ranges.
// CHECK: "gcn.s_load_dwordx16"
// CHECK-SAME: -> !gcn.sgpr<x16>
// B quads are vector loads into 4-VGPR ranges.
// CHECK: "gcn.global_load_dwordx4"
// CHECK-SAME: -> !gcn.vgpr<x4>
// CHECK: "gcn.loop"
// CHECK: "gcn.v_fma_f32"(%{{.*}}, %{{.*}}, %{{.*}}) : (!gcn.vgpr<x1>, !gcn.sgpr<x1>, !gcn.vgpr<x1>) -> !gcn.vgpr<x1>
// CHECK: "gcn.loop_back"
// CHECK: "gcn.s_endpgm"
// NOWAIT-NOT: gcn.s_waitcnt
