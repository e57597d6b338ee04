// RUN: vlpc opt %s -p 'gemm-tile{model=false}',gemm-map-workgroups,gemm-map-subgroups,gemm-split-k | filecheck %s --check-prefix=AUTO
// RUN: vlpc opt %s -p 'gemm-tile{model=false},gemm-map-workgroups,gemm-map-subgroups,gemm-split-k{cus=64}' | filecheck %s --check-prefix=MI60
// RUN: vlpc opt %s -p 'gemm-tile{model=false},gemm-map-workgroups,gemm-map-subgroups,gemm-split-k{split-k=4}' | filecheck %s --check-prefix=WS
// RUN: vlpc opt %s -p 'gemm-tile{model=false},gemm-map-workgroups,gemm-map-subgroups,gemm-split-k{split-k=4 mode=atomic}' | filecheck %s --check-prefix=ATOMIC
// RUN: vlpc opt %s -p 'gemm-tile{model=false},gemm-map-workgroups,gemm-map-subgroups,gemm-split-k{split-k=2 local-split=4}' | filecheck %s --check-prefix=LOCAL
// RUN: vlpc opt %s -p 'gemm-tile{model=false},gemm-map-workgroups,gemm-map-subgroups,gemm-split-k{split-k=1}' | filecheck %s --check-prefix=NONE
// RUN: not vlpc opt %s -p 'gemm-tile{model=false},gemm-map-workgroups,gemm-map-subgroups,gemm-split-k{local-split=8}' 2>&1 | filecheck %s --check-prefix=ERR

// XeTLA GEMM's split-K example (docs/references.md): 256x256x8192 gives 4 macro tiles of 64x256 (the seed's tile:
// gemm-tile{model=false}).  Automatic (least modeled time, vlpc/plan_model.py, S with the local
// split L: L = 2 at most for this tile, whose 4 waves fit 3 times in a CU): on 60 CUs 15 x 2
// slices of 288 (60 workgroups of 512 work-items, one per CU), on 64 CUs 16 x 2 slices of 256
// (64 workgroups).  A model change that moves the choice shows here.
// AUTO: grid = array<i64: 1, 4, 15>
// AUTO-SAME: split_k = 15 : i64, local_split = 2 : i64, split_mode = "workspace", k_per_split = 288 : i64
// MI60: grid = array<i64: 1, 4, 16>
// MI60-SAME: split_k = 16 : i64, local_split = 2 : i64, split_mode = "workspace", k_per_split = 256 : i64
// The K slice is workgroup id z: the grid grows in z.
// WS: grid = array<i64: 1, 4, 4>, workgroup_size = array<i64: 256, 1, 1>
// WS-SAME: split_k = 4 : i64, local_split = 1 : i64, split_mode = "workspace", k_per_split = 2048 : i64
// ATOMIC: grid = array<i64: 1, 4, 4>
// ATOMIC-SAME: split_mode = "atomic"
// A local split multiplies the workgroup: 4 groups of 4 wavefronts, 8 K slices of 1024.
// LOCAL: grid = array<i64: 1, 4, 2>, workgroup_size = array<i64: 1024, 1, 1>
// LOCAL-SAME: local_range = array<i64: 1, 4, 4>, split_k = 2 : i64, local_split = 4 : i64, split_mode = "workspace", k_per_split = 1024 : i64
// NONE-NOT: split_mode
// NONE: grid = array<i64: 1, 4, 1>
// NONE-SAME: split_k = 1 : i64, local_split = 1 : i64, k_per_split = 8192 : i64
// NONE-NOT: split_mode
// ERR: gemm_split_k.mlir:[[# @LINE + 3]]:5: error: local-split=8 makes 2048 work-items per workgroup; gfx906 allows at most 1024
builtin.module {
  func.func @sgemm(%a: memref<256x8192xf32>, %b: memref<256x8192xf32>, %c: memref<256x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<256x8192xf32>, memref<256x8192xf32>, memref<256x256xf32>, f32, f32
    func.return
  }
}
