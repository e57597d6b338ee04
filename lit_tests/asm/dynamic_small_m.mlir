// RUN: vlpc compile %s --macro-tile 64x256 --micro-tile 64x1 --schedule cover --emit asm | filecheck %s
// RUN: vlpc compile %s --macro-tile 64x256 --micro-tile 64x1 --schedule cover --emit mlir | filecheck %s --check-prefix=IR
// RUN: vlpc compile %s --macro-tile 64x256 --micro-tile 64x1 --schedule cover --split-k 2 --emit mlir | filecheck %s --check-prefix=SPLIT
// RUN: vlpc compile %s --strategy lds --emit mlir | filecheck %s --check-prefix=LDS

// M given at launch: besides the main kernel, row-narrow companions with 8 rows and 1 row
// per workgroup compute an M below the macro tile's 64 rows (the runtime picks one).
// CHECK: ; kernel sgemm_dyn: macro tile 64x256, k-step 16, 256 work-items per workgroup
// CHECK: ; kernel sgemm_dyn_rows8: macro tile 8x256, k-step 16, 256 work-items per workgroup
// CHECK: ; kernel sgemm_dyn_rows1: macro tile 1x256, k-step 16, 256 work-items per workgroup

// The 8-row kernel ends its last row tile at row M (M >= 8).
// CHECK: sgemm_dyn_rows8:
// CHECK: s_sub_u32 s[[LAST:[0-9]+]], s[[LAST]], 8
// CHECK-NEXT: s_min_u32 s{{[0-9]+}}, s{{[0-9]+}}, s[[LAST]] {{ +}}; last row tile ends at row M
// CHECK: .Lsgemm_dyn_rows8_k_loop:
// CHECK: .amdhsa_kernel sgemm_dyn_rows8

// One row: a single batch of 16 A values per K step, reloaded for the next step after the
// step's last FMA into the same SGPRs.
// CHECK: sgemm_dyn_rows1:
// CHECK: s_load_dwordx16 s[[[A:[0-9]+]]:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], s{{[0-9]+}} {{ +}}; A row 0 k+0..
// CHECK: .Lsgemm_dyn_rows1_k_loop:
// CHECK: v_fma_f32 v{{[0-9]+}}, v{{[0-9]+}}, s[[A]], v
// CHECK-NOT: s_load_dwordx16
// CHECK: v_fma_f32 v{{[0-9]+}}, v{{[0-9]+}}, s{{[0-9]+}}, v
// CHECK-NOT: s_load_dwordx16
// CHECK: global_load_dwordx4 {{.*}} ; B next slot 3
// CHECK-NEXT: s_load_dwordx16 s[[[A]]:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], s{{[0-9]+}} {{ +}}; A row 0 k+0..
// CHECK: s_cbranch_scc1 .Lsgemm_dyn_rows1_k_loop
// CHECK: .amdhsa_kernel sgemm_dyn_rows1

// The main kernel lists them; their role keeps them out of the module's kernels.
// IR: sym_name = "sgemm_dyn"
// IR: launch = {{{.*}}small_m = "sgemm_dyn_rows8,sgemm_dyn_rows1"}
// IR: sym_name = "sgemm_dyn_rows8"
// IR: launch = {{{.*}}macro_m = 8 : i64{{.*}}role = "rows"}
// IR: sym_name = "sgemm_dyn_rows1"
// IR: launch = {{{.*}}macro_m = 1 : i64{{.*}}role = "rows"}

// A split-K plan keeps its order; the companions are unsplit and not in it.
// SPLIT: sym_name = "sgemm_dyn"
// SPLIT: launch = {{{.*}}plan = "sgemm_dyn,sgemm_dyn_reduce", small_m = "sgemm_dyn_rows8,sgemm_dyn_rows1"}
// SPLIT: sym_name = "sgemm_dyn_reduce"
// SPLIT: sym_name = "sgemm_dyn_rows8"
// SPLIT-NOT: split_k
// SPLIT: launch = {{{.*}}role = "rows"}

// The lds strategy builds none (it computes whole tiles only).
// LDS-NOT: small_m
// LDS-NOT: _rows

builtin.module {
  func.func @sgemm_dyn(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
        : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>, f32, f32
    func.return
  }
}
