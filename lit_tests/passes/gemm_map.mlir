// RUN: vlpc opt %s -p 'gemm-tile{model=false}',gemm-map-workgroups | filecheck %s --check-prefix=WG
// RUN: vlpc opt %s -p 'gemm-tile{model=false}',gemm-map-workgroups,gemm-map-subgroups | filecheck %s --check-prefix=SG
// RUN: vlpc opt %s -p 'gemm-tile{macro-n=64 model=false},gemm-map-workgroups,gemm-map-subgroups' | filecheck %s --check-prefix=SG64

// Workgroup id x runs over N tiles (512/256 = 2), y over M tiles (256/64 = 4).
// WG: grid = array<i64: 2, 4, 1>
// WG-SAME: workgroup_size = array<i64: 256, 1, 1>
// SG: wg_tile = array<i64: 64, 256>
// SG-SAME: sg_tile = array<i64: 64, 64>
// SG-SAME: local_range = array<i64: 1, 4>
// SG64: grid = array<i64: 8, 4, 1>
// SG64-SAME: workgroup_size = array<i64: 64, 1, 1>
// SG64-SAME: local_range = array<i64: 1, 1>
builtin.module {
  func.func @sgemm(%a: memref<256x640xf32>, %b: memref<512x640xf32>, %c: memref<256x512xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<256x640xf32>, memref<512x640xf32>, memref<256x512xf32>, f32, f32
    func.return
  }
}
