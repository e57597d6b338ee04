// The automatic plan's grouped workgroup order is printed with the plan (passes/gemm_tile.py
// auto_wg_group: on MI60, 192 tile columns share a factor of 64 with the 64 CUs), and an explicit
// --wg-group 1 keeps the hardware's row-major order, which the plan does not mention.
// RUN: vlpc compile %s --gpu mi60 --print-plan | filecheck %s --check-prefix=AUTO
// RUN: vlpc compile %s --gpu mi60 --wg-group 1 --print-plan | filecheck %s --check-prefix=ROWS
// AUTO: grid 192x384x1 = 73728 workgroups
// AUTO-NEXT: workgroup order: grouped, 4 tile rows per group (wg_group 4; the hardware's order is row-major)
// AUTO-NEXT: kernels: sgemm (grid z 1)
// ROWS: grid 192x384x1 = 73728 workgroups
// ROWS-NEXT: kernels: sgemm (grid z 1)
func.func @sgemm(%a: memref<12288x640xf32>, %b: memref<12288x640xf32>, %c: memref<12288x12288xf32>) {
  %alpha = arith.constant 1.0 : f32
  %beta = arith.constant 0.0 : f32
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<12288x640xf32>, memref<12288x640xf32>, memref<12288x12288xf32>, f32, f32
  return
}
