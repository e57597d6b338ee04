// RUN: vlpc compile %s --macro-tile 32x64 --split-k 1 --wg-group 4 --emit asm | filecheck %s
// RUN: vlpc compile %s --macro-tile 32x64 --split-k 1 --wg-group 1 --emit asm | filecheck %s --check-prefix=OFF
// RUN: vlpc compile %S/../Inputs/sgemm_dynamic.mlir --macro-tile 32x64 --split-k 1 --wg-group 4 --emit asm | filecheck %s --check-prefix=DYN

// The grouped workgroup order (Triton's GROUP_SIZE_M): 300 rows are 10 tile rows of 32, 200
// columns 4 tile columns of 64.  Workgroup (x, y) = (s2, s3) becomes the tile of linear id
// y * 4 + x in groups of 4 tile rows: first = y & -4, l = (y & 3) * 4 + x, row = first | (l & 3),
// column = l >> 2; the last group (tile rows 8, 9) is only 2 rows, so it keeps the row-major
// order (first <= 10 - 4 = 6 selects the grouped ids).  The tile's row and column follow from
// the remapped ids.
// CHECK-LABEL: sgemm:
// CHECK: s_and_b32 s[[FIRST:[0-9]+]], s3, -4 {{ +}}; first tile row of the group of 4
// CHECK-NEXT: s_and_b32 s[[IN:[0-9]+]], s3, 3
// CHECK-NEXT: s_lshl_b32 s[[IN]], s[[IN]], 2
// CHECK-NEXT: s_add_u32 s[[L:[0-9]+]], s[[IN]], s2 {{ +}}; id within the group
// CHECK-NEXT: s_and_b32 s[[R:[0-9]+]], s[[L]], 3
// CHECK-NEXT: s_or_b32 s[[ROW:[0-9]+]], s[[FIRST]], s[[R]] {{ +}}; grouped tile row
// CHECK-NEXT: s_lshr_b32 s[[COL:[0-9]+]], s[[L]], 2 {{ +}}; grouped tile column
// CHECK-NEXT: s_cmp_le_u32 s[[FIRST]], 6
// CHECK-NEXT: s_cselect_b32 s[[ROW2:[0-9]+]], s[[ROW]], s3 {{ +}}; a whole group, else the last group row-major
// CHECK-NEXT: s_cselect_b32 s[[COL2:[0-9]+]], s[[COL]], s2
// CHECK-NEXT: s_lshl_b32 s{{[0-9]+}}, s[[ROW2]], 5
// CHECK: s_lshl_b32 s{{[0-9]+}}, s[[COL2]], 6
// CHECK: .amdhsa_kernel sgemm

// G = 1: the hardware's row-major order, no remap.
// OFF-LABEL: sgemm:
// OFF-NOT: grouped
// OFF: .amdhsa_kernel sgemm

// Sizes at launch: tiles along N and M from the kernel arguments by shifts (tiles of 64 and 32);
// the last group is the one with first + 4 > tiles along M.
// DYN-LABEL: sgemm_dyn:
// DYN: s_load_dword s[[N:[0-9]+]], s[0:1], 0x1c {{ +}}; kernarg N
// DYN: s_load_dword s[[M:[0-9]+]], s[0:1], 0x18 {{ +}}; kernarg M
// DYN: s_add_u32 s[[GX:[0-9]+]], s[[N]], 63
// DYN-NEXT: s_lshr_b32 s[[GX]], s[[GX]], 6 {{ +}}; tiles along N
// DYN-NEXT: s_add_u32 s[[GY:[0-9]+]], s[[M]], 31
// DYN-NEXT: s_lshr_b32 s[[GY]], s[[GY]], 5 {{ +}}; tiles along M
// DYN-NEXT: s_and_b32 s[[FIRST:[0-9]+]], s3, -4
// DYN-NEXT: s_and_b32 s[[IN:[0-9]+]], s3, 3
// DYN-NEXT: s_mul_i32 s[[L:[0-9]+]], s[[IN]], s[[GX]]
// DYN: s_add_u32 s[[END:[0-9]+]], s[[FIRST]], 4
// DYN-NEXT: s_cmp_le_u32 s[[END]], s[[GY]]
// DYN-NEXT: s_cselect_b32
// DYN-NEXT: s_cselect_b32
// DYN: .amdhsa_kernel sgemm_dyn{{$}}

func.func @sgemm(%a: memref<300x640xf32>, %b: memref<200x640xf32>, %c: memref<300x200xf32>, %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<300x640xf32>, memref<200x640xf32>, memref<300x200xf32>, f32, f32
  func.return
}
