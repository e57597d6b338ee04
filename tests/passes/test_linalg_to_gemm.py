"""convert-linalg-to-gemm: which linalg forms are raised (and to which layout), which are refused and why."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.dialects.gemm import MatmulOp
from vlpc.errors import DiagnosticError
from vlpc.passes.convert_linalg_to_gemm import ConvertLinalgToGemmPass
from vlpc.compiler import make_context, parse, print_ir

from reference import assert_gemm_close, check_run, gemm_reference

#: Small tiles: compiling takes about half a second (the default 64x256 tile takes seconds).
SMALL = dict(macro_tile=(16, 64), micro_tile=(16, 1), k_step=8)

MAPS = {  # (A map, B map) over (d0, d1, d2) = (m, n, k)
    "NN": ("(d0, d2)", "(d2, d1)"),
    "NT": ("(d0, d2)", "(d1, d2)"),
    "TN": ("(d2, d0)", "(d2, d1)"),
    "TT": ("(d2, d0)", "(d1, d2)"),
}


def shapes(layout: str, m: int = 16, n: int = 64, k: int = 32) -> tuple[str, str, str]:
    a = f"memref<{m}x{k}xf32>" if layout[0] == "N" else f"memref<{k}x{m}xf32>"
    b = f"memref<{k}x{n}xf32>" if layout[1] == "N" else f"memref<{n}x{k}xf32>"
    return a, b, f"memref<{m}x{n}xf32>"


def func(body: str, a: str, b: str, c: str) -> str:
    return (f"func.func @f(%a: {a}, %b: {b}, %c: {c}) {{\n{body}\n  func.return\n}}\n")


def maps_attr(layout: str) -> str:
    am, bm = MAPS[layout]
    return (f"[affine_map<(d0, d1, d2) -> {am}>, affine_map<(d0, d1, d2) -> {bm}>, "
            "affine_map<(d0, d1, d2) -> (d0, d1)>]")


def named(op: str, layout: str, prefix: str = "") -> str:
    a, b, c = shapes(layout)
    return func(f"  linalg.{op} {prefix}ins(%a, %b : {a}, {b}) outs(%c : {c})", a, b, c)


def generic(layout: str, body: str = "%p = arith.mulf %x, %y : f32\n    %s = arith.addf %z, %p : f32\n"
            "    linalg.yield %s : f32", iterators: str = '"parallel", "parallel", "reduction"') -> str:
    a, b, c = shapes(layout)
    return func(f"""  linalg.generic {{indexing_maps = {maps_attr(layout)}, iterator_types = [{iterators}]}}
      ins(%a, %b : {a}, {b}) outs(%c : {c}) {{
  ^bb0(%x: f32, %y: f32, %z: f32):
    {body}
  }}""", a, b, c)


def raise_(text: str, **opts) -> tuple[MatmulOp, str]:
    ctx = make_context()
    module = parse(text, "in.mlir", ctx)
    ConvertLinalgToGemmPass(**opts).apply(ctx, module)
    module.verify()
    mms = [o for o in module.walk() if isinstance(o, MatmulOp)]
    assert len(mms) == 1
    return mms[0], print_ir(module)


def refused(text: str, **opts) -> DiagnosticError:
    ctx = make_context()
    module = parse(text, "in.mlir", ctx)
    with pytest.raises(DiagnosticError) as info:
        ConvertLinalgToGemmPass(**opts).apply(ctx, module)
    return info.value


def scalar(v) -> float:
    return v.owner.value.value.data


@pytest.mark.parametrize("text, layout", [
    (named("matmul", "NN"), "NN"),
    (named("matmul_transpose_b", "NT"), "NT"),
    (named("matmul_transpose_a", "TN"), "TN"),
    # MLIR 20+ spelling (unbraced) and xDSL's braced one
    (named("matmul", "NT", f"indexing_maps = {maps_attr('NT')} "), "NT"),
    (named("matmul", "TN", f"{{indexing_maps = {maps_attr('TN')}}} "), "TN"),
    (named("matmul", "TT", f"indexing_maps = {maps_attr('TT')} "), "TT"),
    (generic("NT"), "NT"),
    (generic("NN"), "NN"),
    (generic("TT", "%p = arith.mulf %y, %x : f32\n    %s = arith.addf %p, %z : f32\n    linalg.yield %s : f32"), "TT"),
], ids=["matmul", "transpose_b", "transpose_a", "maps_nt", "braced_maps_tn", "maps_tt", "generic_nt",
        "generic_nn", "generic_tt_commuted"])
def test_raised_layout_and_accumulate(text, layout):
    mm, ir = raise_(text)
    assert mm.layout.data == layout
    assert (scalar(mm.alpha), scalar(mm.beta)) == (1.0, 1.0)  # linalg accumulates: C += op(A) op(B)
    assert "linalg." not in ir
    assert mm.location.line.data == 2  # the gemm op keeps the linalg op's location


def test_zero_fill_folds_into_beta():
    a, b, c = shapes("NT")
    text = func(f"""  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : {c})
  linalg.matmul_transpose_b ins(%a, %b : {a}, {b}) outs(%c : {c})""", a, b, c)
    mm, ir = raise_(text)
    assert (scalar(mm.alpha), scalar(mm.beta)) == (1.0, 0.0)
    assert "linalg.fill" not in ir and "0.000000e+00" in ir


def test_nonzero_fill_is_refused_or_left():
    a, b, c = shapes("NT")
    text = func(f"""  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%c : {c})
  linalg.matmul_transpose_b ins(%a, %b : {a}, {b}) outs(%c : {c})""", a, b, c)
    e = refused(text)
    assert (e.line, e.col) == (3, 3) and "only a fill of C with 0.0" in e.message
    ctx = make_context()
    module = parse(text, "in.mlir", ctx)
    ConvertLinalgToGemmPass(strict=False).apply(ctx, module)
    assert "linalg.fill" in print_ir(module) and "gemm.matmul" in print_ir(module)


BATCH = """func.func @f(%a: memref<2x16x32xf32>, %b: memref<2x32x64xf32>, %c: memref<2x16x64xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x16x32xf32>, memref<2x32x64xf32>) outs(%c : memref<2x16x64xf32>)
  func.return
}
"""

BATCH_GENERIC = """func.func @f(%a: memref<2x16x32xf32>, %b: memref<2x32x64xf32>, %c: memref<2x16x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, k, n)>,
                                   affine_map<(b, m, n, k) -> (b, m, n)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<2x16x32xf32>, memref<2x32x64xf32>) outs(%c : memref<2x16x64xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  func.return
}
"""

TENSOR = """func.func @f(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  func.return %r : tensor<16x64xf32>
}
"""


@pytest.mark.parametrize("text, line, words", [
    (BATCH, 2, "batched linalg products are not raised yet: linalg.batch_matmul computes one product per batch element"),
    (BATCH_GENERIC, 2, "batched linalg products are not raised yet: loop d0 indexes A, B and C"),
    (TENSOR, 2, "operates on tensors: vlpc needs memrefs (bufferize first"),
    (generic("NT", "%xe = arith.extf %x : f16 to f64\n    %ye = arith.extf %y : f16 to f64\n"
             "    %p = arith.mulf %xe, %ye : f64\n    %s = arith.addf %z, %p : f64\n    linalg.yield %s : f64")
     .replace("^bb0(%x: f32, %y: f32, %z: f32", "^bb0(%x: f16, %y: f16, %z: f64").replace("16x32xf32", "16x32xf16")
     .replace("64x32xf32", "64x32xf16").replace("16x64xf32", "16x64xf64"), 2, "mixed element types"),
    (named("matmul", "NN").replace("xf32>", "xi32>"), 2, "element type i32 is not supported"),
    (generic("NT", "%p = arith.subf %x, %y : f32\n    %s = arith.addf %z, %p : f32\n    linalg.yield %s : f32"),
     2, "not a multiply-accumulate"),
    (generic("NT", "%p = arith.mulf %x, %x : f32\n    %s = arith.addf %z, %p : f32\n    linalg.yield %s : f32"),
     2, "arith.mulf must multiply the two input elements"),
    (generic("NT", iterators='"parallel", "parallel", "parallel"'), 2, "a reduction K loop"),
    (generic("NT").replace("affine_map<(d0, d1, d2) -> (d0, d2)>", "affine_map<(d0, d1, d2) -> (d0, d1)>", 1)
     .replace("memref<16x32xf32>", "memref<16x64xf32>"), 2, "the map of A"),
    (named("matmul_transpose_b", "NT").replace("memref<16x32xf32>", "memref<16x32xf32, strided<[32, 1], offset: 8>>"),
     2, "non-zero offset"),
    (named("matmul_transpose_b", "NT").replace("memref<16x32xf32>", "memref<16x32xf32, strided<[1, 16]>>"),
     2, "only row-major memrefs"),
], ids=["batch_matmul", "batched_generic", "tensors", "mixed_types", "integer", "body_subf", "body_square",
        "no_reduction", "bad_a_map", "offset", "column_major"])
def test_refused_with_located_reason(text, line, words):
    e = refused(text)
    assert e.file == "in.mlir" and e.line == line and e.col == 3, str(e)
    assert words in e.message, e.message
    assert e.message.startswith("cannot raise linalg.")


def test_other_linalg_ops_strict_and_lenient():
    text = """func.func @f(%a: memref<16x64xf32>, %b: memref<16x64xf32>, %c: memref<16x64xf32>) {
  linalg.add ins(%a, %b : memref<16x64xf32>, memref<16x64xf32>) outs(%c : memref<16x64xf32>)
  func.return
}
"""
    e = refused(text)
    assert e.line == 2 and "linalg.add is not a matrix product" in e.message
    ctx = make_context()
    module = parse(text, "in.mlir", ctx)
    ConvertLinalgToGemmPass(strict=False).apply(ctx, module)
    assert "linalg.add" in print_ir(module)


def test_gemm_input_is_untouched():
    text = open(__file__.replace("tests/passes/test_linalg_to_gemm.py", "examples/sgemm_nt.mlir")).read()
    ctx = make_context()
    module = parse(text, "in.mlir", ctx)
    before = print_ir(module)
    ConvertLinalgToGemmPass().apply(ctx, module)
    assert print_ir(module) == before


@pytest.mark.parametrize("layout, text", [
    ("NN", named("matmul", "NN")),
    ("TN", named("matmul_transpose_a", "TN")),
    ("TT", named("matmul", "TT", f"indexing_maps = {maps_attr('TT')} ")),
])
def test_every_layout_runs(layout, text):
    """Each linalg form computes C += op(A) op(B) on the emulator (docs/inputs.md: all four layouts are
    supported, so a refusal here is a failure, not a skip); checked against tests/reference.py."""
    compiled = vlpc.compile(text, filename="in.mlir", **SMALL)
    r = vlpc.run(compiled, seed=4, verify=False)
    assert compiled.kernel().layout == layout and (r.alpha, r.beta) == (1.0, 1.0)
    check_run(r)


def test_compile_and_run_accumulates_into_c():
    """linalg semantics end to end: C <- C + A * B^T (beta = 1), on the emulator."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 32), dtype=np.float32)
    b = rng.standard_normal((64, 32), dtype=np.float32)
    c = rng.standard_normal((16, 64), dtype=np.float32)
    compiled = vlpc.compile(named("matmul_transpose_b", "NT"), **SMALL)
    kernel = compiled.kernel()
    assert (kernel.alpha, kernel.beta, kernel.layout) == (1.0, 1.0, "NT")
    r = vlpc.run(compiled, a, b, c, verify=False)
    assert (r.alpha, r.beta) == (1.0, 1.0)
    assert_gemm_close(r.c, *gemm_reference(a, b, c, 1.0, 1.0, layout="NT"))


def test_compile_and_run_zero_fill():
    a, b, c = shapes("NT")
    text = func(f"""  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : {c})
  linalg.matmul_transpose_b ins(%a, %b : {a}, {b}) outs(%c : {c})""", a, b, c)
    r = vlpc.run(text, c=np.full((16, 64), np.nan, np.float32), verify=False, **SMALL)  # beta = 0: C is never read
    assert r.beta == 0.0 and np.isfinite(r.c).all()
    check_run(r)


def test_f64_linalg_runs():
    """f64 linalg raises to a DGEMM with f64 alpha/beta constants (1, 1)."""
    text = named("matmul_transpose_b", "NT").replace("xf32>", "xf64>")
    r = vlpc.run(text, seed=2, verify=False, **SMALL)
    assert r.c.dtype == np.float64 and (r.alpha, r.beta) == (1.0, 1.0)
    check_run(r)
