// DGEMM's split-K plan on gfx906 (f64 at half rate) and on gfx900 (f64 at 1/16 rate:
// MI25, 768 GFLOP/s f64 vs 12.3 TFLOP/s f32).  The cost model's main time per round is
// (macro rows x K per slice x 4 cycles x f64 rate divisor + 2000 fixed cycles) / clock:
//   gfx906 (MI50 clock 1725 MHz): (32 x 640 x 4 x 2  + 2000) / 1.725e9 =  96.1 us
//   gfx900 (MI25 clock 1500 MHz): (32 x 640 x 4 x 16 + 2000) / 1.5e9   = 875.1 us
// RUN: vlpc compile %s --target gfx906 --cus 64 --print-plan -o %t906.hsaco | filecheck %s --check-prefix=GFX906
// RUN: vlpc compile %s --target gfx900 --print-plan -o %t900.hsaco | filecheck %s --check-prefix=GFX900

// GFX906: plan for @dgemm: M=256 N=512 K=640 f64, 64 CUs
// GFX906: macro tile 32x256, micro tile 32x1, k-step 8
// GFX906: 1: 1 rounds, 96.1 + 0.0 = 96.1 us
// GFX900: plan for @dgemm: M=256 N=512 K=640 f64, 64 CUs
// GFX900: macro tile 32x256, micro tile 32x1, k-step 8
// GFX900: 1: 1 rounds, 875.1 + 0.0 = 875.1 us
func.func @dgemm(%a: memref<256x640xf64>, %b: memref<512x640xf64>, %c: memref<256x512xf64>,
                 %alpha: f64, %beta: f64) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
      : memref<256x640xf64>, memref<512x640xf64>, memref<256x512xf64>, f64, f64
  func.return
}
