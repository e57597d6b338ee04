// RUN: vlpc opt %inputs/sgemm_256x512x640.mlir -p gemm-tile,gemm-map-workgroups,gemm-map-subgroups,gemm-split-k,convert-gemm-to-gcn,gcn-allocate-registers | filecheck %s
// RUN: not vlpc opt %inputs/sgemm_256x512x640.mlir -p 'gemm-tile,gemm-map-workgroups,gemm-map-subgroups,gemm-split-k,convert-gemm-to-gcn,gcn-allocate-registers{max-vgprs=40}' 2>&1 | filecheck %s --check-prefix=BUDGET

// Every value gets a physical range; 16-SGPR ranges start at a multiple of 4.
// (A NOT guards only up to the next positive match, so the pair is repeated after each.)
// CHECK-NOT: !gcn.sgpr<x
// CHECK-NOT: !gcn.vgpr<x
// CHECK: "gcn.s_load_dwordx16"{{.*}} -> !gcn.sgpr<s[{{[0-9]*[048]}}:{{[0-9]+}}]>
// CHECK-NOT: !gcn.sgpr<x
// CHECK-NOT: !gcn.vgpr<x
// The accumulator stays in place: result and third source share a VGPR.
// CHECK: "gcn.v_fma_f32"(%{{.*}}, %{{.*}}, %{{.*}}) : (!gcn.vgpr<v[[B:[0-9]+]]>, !gcn.sgpr<s{{[0-9]+}}>, !gcn.vgpr<v[[C:[0-9]+]]>) -> !gcn.vgpr<v[[C]]>
// CHECK-NOT: !gcn.sgpr<x
// CHECK-NOT: !gcn.vgpr<x
// BUDGET: error: register allocation failed: kernel 'sgemm' needs {{[0-9]+}} VGPRs live at once
// BUDGET-SAME: the budget is 40
