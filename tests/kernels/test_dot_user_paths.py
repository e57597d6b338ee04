"""f16 / int8 GEMMs as a user meets them from docs/kernels.md: named mixed-type linalg products,
the refusals' wording, and the f16 C check at f16's overflow (vlpc/verify.py).

Expected values: NumPy (float64 math on the f16 inputs, int64 math for int8) through
vlpc.run's check (tests/dot_support.py's bound), and IEEE 754 rounding to f16 (an f32 value
of magnitude >= 65520 = 65504 + 32 / 2 rounds to Inf); small sizes for the emulator."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.cli import main
from vlpc.verify import check
from vlpc.errors import VlpcError
from vlpc.verify import Problem

from dot_support import source


def named(op: str, ta: str, tb: str, tc: str, fill: str = "") -> str:
    return (f"func.func @lm(%a: {ta}, %b: {tb}, %c: {tc}) {{\n{fill}"
            f"  {op} ins(%a, %b : {ta}, {tb}) outs(%c : {tc})\n  func.return\n}}\n")


@pytest.mark.parametrize("op, ab, ct, ta, tb", [
    ("linalg.matmul", "f16", "f32", "memref<20x38xf16>", "memref<38x70xf16>"),
    ("linalg.matmul_transpose_b", "i8", "i32", "memref<20x44xi8>", "memref<70x44xi8>"),
])
def test_named_mixed_type_linalg_products_raised_and_run(op, ab, ct, ta, tb):
    """linalg.matmul f16 x f16 -> f32 and i8 x i8 -> i32 (xDSL's own body multiplies the inputs
    uncast and does not verify): raised to the dot kernels, alpha = beta = 1, run and checked."""
    text = named(op, ta, tb, f"memref<20x70x{ct}>")
    kern = vlpc.compile(text, filename="lm.mlir").kernel("lm")
    assert (kern.launch_info["dtype"], kern.launch_info.get("c_dtype", "f32"), kern.alpha, kern.beta) == (ab, ct, 1, 1)
    rng = np.random.default_rng(3)
    if ab == "i8":
        a, b = rng.integers(-128, 128, (20, 44)).astype(np.int8), rng.integers(-128, 128, (70, 44)).astype(np.int8)
        c = rng.integers(-2**20, 2**20, (20, 70)).astype(np.int32)
        r = vlpc.run(kern, a, b, c)
        exp = c.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64).T
        np.testing.assert_array_equal(r.c.astype(np.int64), exp)
    else:
        a, b = rng.standard_normal((20, 38)).astype(np.float16), rng.standard_normal((38, 70)).astype(np.float16)
        c = rng.standard_normal((20, 70)).astype(np.float32)
        r = vlpc.run(kern, a, b, c)
        exp = c + a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(r.c, exp, rtol=0, atol=1e-5 * (1 + np.abs(exp).max()))


def test_named_linalg_matmul_zero_fill_becomes_beta_zero():
    fill = "  %z = arith.constant 0.0 : f32\n  linalg.fill ins(%z : f32) outs(%c : memref<16x64xf32>)\n"
    kern = vlpc.compile(named("linalg.matmul_transpose_b", "memref<16x32xf16>", "memref<64x32xf16>",
                              "memref<16x64xf32>", fill)).kernel("lm")
    assert (kern.alpha, kern.beta) == (1.0, 0.0)
    r = vlpc.run(kern, c=np.full((16, 64), np.nan, np.float32))  # beta = 0: C is not read
    assert np.isfinite(r.c).all()


@pytest.mark.parametrize("text, words", [
    (named("linalg.matmul", "memref<16x32xf16>", "memref<32x64xf32>", "memref<16x64xf32>"),
     "lm.mlir:2:3: error: cannot raise linalg.matmul to gemm.matmul: mixed element types (f16, f32, f32)"),
    (named("linalg.matmul", "memref<16x32xf16>", "memref<32x64xf16>", "memref<16x64xf64>"),
     "lm.mlir:2:3: error: cannot raise linalg.matmul to gemm.matmul: mixed element types (f16, f16, f64)"),
    (named('linalg.matmul {cast = "cast_unsigned"}', "memref<16x32xi8>", "memref<32x64xi8>", "memref<16x64xi32>"),
     "lm.mlir:2:3: error: cannot raise linalg.matmul to gemm.matmul: linalg.matmul with \"cast_unsigned\""),
])
def test_named_mixed_type_linalg_refusals_are_located(tmp_path, capsys, text, words):
    path = tmp_path / "lm.mlir"
    path.write_text(text)
    assert main(["compile", str(path), "-o", str(tmp_path / "x.hsaco")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"{tmp_path}/{words}"), err


def test_c_type_of_an_i8_product_is_named():
    """C i8 for A i8 used to read 'element types differ: A is i8 but C is i8'."""
    with pytest.raises(VlpcError) as e:
        vlpc.compile(source(64, 64, 32, 32, 32, 64, "i8", "i8"), filename="t.mlir")
    msg = str(e.value)
    assert "t.mlir:2:3: error: C of an i8 product is i32 (or f32 / f16 dequantized by scales(...)), got i8" in msg
    assert "differ" not in msg


def test_unaligned_rows_refusal_suggests_the_padded_leading_dimension():
    # a static lda / ldb = 37 compiles (A / B copied into a padded workspace first, tests/kernels/test_dot_a_copy.py)
    assert vlpc.compile(source(16, 64, 37, 37, 38, 64, "f16", "f32")).kernel("g").transpose_kernel() is not None
    assert vlpc.compile(source(16, 64, 37, 38, 37, 64, "f16", "f32")).kernel("g").b_copy_kernel() is not None
    kern = vlpc.compile(source(None, None, None, None, None, None, "i8", "i32")).kernel("g")
    with pytest.raises(VlpcError, match=r"ldb=45: .*\(ldb a multiple of 4: pad the rows, e.g. ldb=48, or give ldb "
                                        r"and B's batch stride at compile time: .*\)"):
        vlpc.run(kern, np.zeros((8, 48), np.int8), np.zeros((64, 45), np.int8), np.zeros((8, 64), np.int32), k=45)


def test_f16_c_overflow_to_inf_passes_the_check():
    """f16 -> f16 with results past f16's range: the kernel's v_cvt_f16_f32 gives +-Inf (IEEE),
    which vlpc.run's check used to call 'a wrong NaN/Inf'."""
    kern = vlpc.compile(source(16, 64, 32, 32, 32, 64, "f16", "f16")).kernel("g")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    c = np.zeros((16, 64), np.float16)
    r = vlpc.run(kern, a, b, c, alpha=20000.0, beta=0.0)
    exp = 20000.0 * (a.astype(np.float64) @ b.astype(np.float64).T)
    over, under = np.abs(exp) > 65520 * 1.001, np.abs(exp) < 65504 * 0.999
    assert over.any() and under.any()
    assert np.array_equal(r.c[over], np.copysign(np.inf, exp[over]).astype(np.float16))
    assert np.isfinite(r.c[under]).all()


def test_f16_c_overflow_check_still_rejects_wrong_values():
    """check() directly: 256 * 256 * 2 = 131072 must be +Inf in f16; 65504 (the largest finite
    f16) there, -Inf, or +Inf where 512 is expected are wrong."""
    a = np.array([256, 256], np.float16)
    b = np.array([256, 256, 1, 1], np.float16)  # B stored N x K: rows (256, 256) and (1, 1)
    c0 = np.zeros(2, np.float16)
    p = Problem(1, 2, 2, 2, 2, 2)

    def verdict(out):
        return check("NT", p, "f16", a, b, c0, np.array(out, np.float16), 1.0, 0.0, c_type="f16")
    assert verdict([np.inf, 512]).ok
    assert not verdict([65504, 512]).ok
    assert not verdict([-np.inf, 512]).ok
    assert not verdict([np.inf, np.inf]).ok


def test_report_on_an_f16_kernel_defaults_to_sqc(tmp_path, capsys):
    """vlpc report without --strategies measures an f16 GEMM with sqc alone (it used to stop
    on the default lds strategy); asking for lds is a one-line refusal with one 'vlpc:' prefix."""
    path = tmp_path / "r.mlir"
    t = ("memref<64x64xf16>", "memref<256x64xf16>", "memref<64x256xf32>")
    path.write_text(f"func.func @r(%a: {t[0]}, %b: {t[1]}, %c: {t[2]}, %alpha: f32, %beta: f32) {{\n"
                    f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {', '.join(t)}, f32, f32\n"
                    "  func.return\n}\n")
    prefix = tmp_path / "rep"
    assert main(["report", str(path), "-q", "-o", str(prefix)]) == 0
    md = (tmp_path / "rep.md").read_text()
    # the kernel measured is the one vlpc compiles (its plan's macro tile, one kernel), not the
    # seed's SGEMM tile 64x256; no seed columns (the seed has no f16 figures) and no empty Notes
    info = vlpc.compile(path.read_text(), split_k=1).kernel().launch_info
    tile = f"{info['macro_m']}x{info['macro_n']}"
    assert tile != "64x256"
    assert f"| sqc | {tile} |" in md and "| lds |" not in md and "yes (max abs error" in md
    assert "seed sqc" not in md and "| — |" not in md.split("## Summary")[0]
    assert "## Notes" not in md
    svg = (tmp_path / "rep.svg").read_text()  # nor seed bars in the chart
    assert ", seed" not in svg and "seed vs measured" not in svg and "traffic: measured" in svg
    capsys.readouterr()
    assert main(["report", str(path), "--strategies", "sqc,lds", "-q", "-o", str(prefix)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("vlpc: report: f16 products are compiled by the dot kernels (strategy sqc) only; "
                       "use --strategies sqc"), err


BATCH_I8 = """func.func @bd(%a: memref<?x?x?xi8>, %b: memref<?x?x?xi8>, %c: memref<?x?x?xi32>, %alpha: i32, %beta: i32) {
  gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<?x?x?xi8>, memref<?x?x?xi8>, memref<?x?x?xi32>, i32, i32
  func.return
}
"""


def test_dynamic_int8_batch_with_k_not_a_multiple_of_4_runs(tmp_path, capsys):
    """Sizes, leading dimensions and batch strides all at launch, K = 13: the random operands'
    rows are padded to whole dwords (lda = ldb = 16) and the batch strides follow (they used to
    stay 13, refused at launch, and vlpc run has no flag to change them)."""
    r = vlpc.run(BATCH_I8, m=9, n=33, k=13, batch=3, alpha=3, beta=-2)
    assert r.c.shape == (3, 9, 33)
    path = tmp_path / "bd.mlir"
    path.write_text(BATCH_I8)
    assert main(["run", str(path), "--m", "9", "--n", "33", "--k", "13", "--batch", "3", "-q"]) == 0
    out = capsys.readouterr().out
    assert "lda=16 ldb=16 ldc=33) batch=3 (strides 144, 528, 297)" in out and "verification passed" in out
    assert main(["run", str(path), "--m", "9", "--n", "33", "--k", "13", "-q"]) == 1
    assert "pass batch= (vlpc run: --batch)" in capsys.readouterr().err


def test_alpha_outside_f32_and_non_finite_alpha():
    """An f32 alpha past f32's range is a one-line VlpcError (it became Inf, then an
    OverflowError in the launch checks); alpha = +Inf or NaN is a value, run and checked; an
    all-NaN f16 C is not summarised as 'int8 -> i32 results exact'."""
    kern = vlpc.compile(source(16, 64, 32, 32, 32, 64, "f16", "f32")).kernel("g")
    with pytest.raises(VlpcError, match=r"^alpha=1e\+40 is outside the range of float32, the kernel's alpha type"):
        vlpc.run(kern, alpha=1e40)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    r = vlpc.run(kern, a, b, alpha=float("inf"), beta=0.0)
    exp = np.inf * (a.astype(np.float64) @ b.astype(np.float64).T)
    assert np.array_equal(r.c, exp.astype(np.float32), equal_nan=True)
    r = vlpc.run(kern, alpha=float("nan"), beta=0.0)
    assert np.isnan(r.c).all() and "int8 -> i32" not in r.verdict.summary()


def test_alpha_type_of_a_dequantized_int8_product_is_explained():
    """i32 alpha on an int8 product with f32 C: f32 is wanted because it dequantizes (the
    message used to say 'alpha and beta of an i8 product', whose alpha is i32 otherwise)."""
    text = source(32, 64, 64, 64, 64, 64, "i8", "f32")
    text = text.replace("%beta: i32)", "%beta: i32, %sr: memref<32xf32>, %sc: memref<64xf32>)").replace(
        "%beta {", "%beta scales(%sr, %sc : memref<32xf32>, memref<64xf32>) {")
    with pytest.raises(VlpcError, match=r"t.mlir:2:3: error: alpha must have type f32 \(alpha and beta of a "
                                        r"dequantized i8 product, C f32\), got i32"):
        vlpc.compile(text, filename="t.mlir")
