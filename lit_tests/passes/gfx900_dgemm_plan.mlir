// DGEMM's split-K plan on gfx906 (f64 at half rate) and on gfx900 (f64 at 1/16 rate:
// MI25, 768 GFLOP/s f64 vs 12.3 TFLOP/s f32).  The plan surrogate (vlpc/plan_model.py)
// costs a K step at the board's f64 VALU rate (mi60: 8 cycles per f64 FMA, mi25: 64), so
// the gfx900 plan's modeled time is several times gfx906's (tests/tune/test_plan_model.py
// checks the ratio); here: each chip's plan and board.
// RUN: vlpc compile %s --target gfx906 --cus 64 --print-plan -o %t906.hsaco | filecheck %s --check-prefix=GFX906
// RUN: vlpc compile %s --target gfx900 --print-plan -o %t900.hsaco | filecheck %s --check-prefix=GFX900

// GFX906: plan for @dgemm: M=256 N=512 K=640 f64, 64 CUs
// GFX906: macro tile 16x64, micro tile 16x1, k-step 8
// GFX906: modeled candidates on mi50 (64 CUs
// GFX906: 1: 1 rounds, {{[0-9.]+}} + 0.0 = {{[0-9.]+}} us
// GFX900: plan for @dgemm: M=256 N=512 K=640 f64, 64 CUs
// GFX900: macro tile 16x64, micro tile 16x1, k-step 8
// GFX900: modeled candidates on mi25 (64 CUs, 1500 MHz
// GFX900: 1: 1 rounds, {{[0-9.]+}} + 0.0 = {{[0-9.]+}} us
func.func @dgemm(%a: memref<256x640xf64>, %b: memref<512x640xf64>, %c: memref<256x512xf64>,
                 %alpha: f64, %beta: f64) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
      : memref<256x640xf64>, memref<512x640xf64>, memref<256x512xf64>, f64, f64
  func.return
}
