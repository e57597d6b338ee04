// RUN: vlpc compile %s --emit asm | filecheck %s

// int8 x int8 -> i32 through v_dot4_i32_i8, M = 4: the decode GEMV plan (macro tile 4x64,
// K over 16 wavefront groups reduced through LDS).  K = 2051 is 512 dwords of four values:
// two K steps of 16 dwords for each of the 16 groups, and 3 values left over.
func.func @q(%x: memref<4x2051xi8, strided<[2052, 1]>>, %w: memref<256x2051xi8, strided<[2052, 1]>>,
             %y: memref<4x256xi32>, %alpha: i32, %beta: i32) {
  gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT"}
      : memref<4x2051xi8, strided<[2052, 1]>>, memref<256x2051xi8, strided<[2052, 1]>>, memref<4x256xi32>, i32, i32
  func.return
}

// CHECK: ; kernel q: macro tile 4x64, k-step 16, 1024 work-items per workgroup
// CHECK: ds_write_b32 {{.*}}; zero the group's row of the sums
// CHECK: s_barrier
// CHECK: .Lq_k_loop:
// CHECK-NOT: v_fma
// CHECK: v_dot4_i32_i8 v[[ACC:[0-9]+]], v{{[0-9]+}}, s{{[0-9]+}}, v[[ACC]]
// CHECK-NOT: v_fma
// CHECK: s_cbranch_scc1 .Lq_k_loop
// The three values left over, one byte each (zero-extended: the other products are 0 x 0).
// CHECK: .Lq_k_left:
// CHECK: global_load_ubyte v{{[0-9]+}}, v{{[0-9]+}}, s[{{[0-9]+}}:{{[0-9]+}}] ; B[n, k]
// CHECK: v_dot4_i32_i8
// CHECK: s_cbranch_scc1 .Lq_k_left
// Partial sums of the wavefront groups: integer adds into the LDS rows zeroed before the
// K loop, one barrier, group g reads row g.
// CHECK: ds_add_u32
// CHECK: s_barrier
// CHECK: ds_read_b32 {{.*}}; the sum of row g
// i32 epilogue: alpha * acc + beta * C with integer multiplies (two's complement wrap).
// CHECK: v_mul_lo_u32
// CHECK: v_mul_lo_u32
// CHECK: v_add_u32
// CHECK: global_store_dword
// CHECK: s_endpgm
