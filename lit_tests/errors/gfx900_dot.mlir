// The f16 product compiles to gfx906's v_dot2_f32_f16 (passes/isel/dot.py); gfx900
// has no dot instructions (LLVM AMDGPU.td: no FeatureDot*Insts), so for gfx900 it is a
// located error naming the instruction, one line, no traceback.
// RUN: vlpc compile %s --target gfx906 --emit asm | filecheck %s --check-prefix=GFX906
// RUN: not vlpc compile %s --target gfx900 --emit asm 2>&1 | filecheck %s --check-prefix=GFX900
// RUN: not vlpc compile %s --target gfx900:xnack- -o %t.hsaco 2>&1 | filecheck %s --check-prefix=GFX900

// GFX906: .amdgcn_target "amdgcn-amd-amdhsa--gfx906"
// GFX906: v_dot2_f32_f16 v{{[0-9]+}}, v{{[0-9]+}}, s{{[0-9]+}}, v{{[0-9]+}}
// GFX900-NOT: Traceback
// GFX900: gfx900_dot.mlir:[[# @LINE + 4]]:3: error: kernel 'h': v_dot2_f32_f16 is not a gfx900 instruction (LLVM's gfx900 decoder rejects it); it needs gfx906
// GFX900-NOT: Traceback
func.func @h(%a: memref<64x32xf16>, %b: memref<256x32xf16>, %c: memref<64x256xf32>,
             %alpha: f32, %beta: f32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
      : memref<64x32xf16>, memref<256x32xf16>, memref<64x256xf32>, f32, f32
  func.return
}
