"""The residual operand of the quantized-weight kernels (``gemm.matmul ... residual(%r : memref<MxNxf16>)``,
docs/quantized.md): ``C <- epilogue(alpha * A W^T + beta * C) + R`` out of place (R read, not written).

Strict emulator, exactly sized buffers (R laid out as C, its row gaps NaN and never read), NaN C under
beta = 0; the expected values from NumPy on the format's dequantized weights (gguf's, or the int4
definition) plus R; the verdict's bound is vlpc/quant_run.py's plus one f32 rounding."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.errors import DiagnosticError, VlpcError
from vlpc.quant_run import dequantize, row_bytes

pytest.importorskip("gguf")

NP = {"f16": np.float16, "f32": np.float32}


def rsource(m, n, k, fmt, ct="f32", rt="f16", ldc=None, epilogue=(), r_type=None) -> str:
    """A b_format matmul with a residual R of element type ``rt`` laid out as C (``r_type``: R's memref
    type itself, for the error tests)."""
    rb = row_bytes(fmt, k)
    ms = "?" if m is None else m

    def mem(rows, cols, ld, t):
        lay = f", strided<[{ld}, 1]>" if ld is not None and ld != cols else ""
        return f"memref<{rows}x{cols}x{t}{lay}>"
    ta, tb, tc = mem(ms, k, None, "f16"), mem(n, rb, None, "i8"), mem(ms, n, ldc, ct)
    tr = r_type or mem(ms, n, ldc, rt)
    epi = f', epilogue = [{", ".join(f"{chr(34)}{x}{chr(34)}" for x in epilogue)}]' if epilogue else ""
    return (f"func.func @g(%x: {ta}, %w: {tb}, %y: {tc}, %alpha: f32, %beta: f32, %r: {tr}) {{\n"
            f'  gemm.matmul %x, %w, %y, %alpha, %beta residual(%r : {tr}) {{layout = "NT", b_format = "{fmt}"{epi}}}\n'
            f"      : {ta}, {tb}, {tc}, f32, f32\n  func.return\n}}\n")


@pytest.mark.parametrize("fmt, m, n, k, ct, rt, ldc, options", [
    ("q8_0", 3, 64, 256, "f32", "f16", None, {}),                     # the GEMV (K split over workgroups)
    ("q4_0", 2, 80, 512, "f16", "f32", 83, {}),                       # f16 C, f32 R, row gaps, an N edge
    ("int4_g128", 1, 64, 320, "f32", "f16", None, {}),                # a last partial int4 group
    ("q8_0", 1, 64, 1024, "f32", "f32", None, {"split_k": 2}),        # split-K: the reduce kernel adds R
    ("q4_0", 40, 64, 512, "f32", "f16", 67, {}),                      # the prefill GEMM (int8 A, 32-row tiles)
    ("q4_0", 1, 64, 4096, "f32", "f16", None, {"epilogue": ()}),      # no epilogue: not the lane kernel
])
def test_residual_against_numpy(fmt, m, n, k, ct, rt, ldc, options):
    epi = options.pop("epilogue", ("silu",))
    kern = vlpc.compile(rsource(m, n, k, fmt, ct, rt, ldc, epilogue=epi), **options).kernel("g")
    assert kern.launch_info["residual"] == rt
    rng = np.random.default_rng(m + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    from vlpc.quant_run import random_weights
    b = random_weights(fmt, n, k, rng)
    width = ldc or n
    r_in = np.full((m, width), np.nan, NP[rt])  # the gaps NaN: never read
    r_in[:, :n] = rng.standard_normal((m, n)).astype(NP[rt])
    c = np.full((m, width), np.nan, NP[ct])
    res = vlpc.run(kern, a, b, c, beta=0.0, residual=r_in, strict=True)
    assert res.verified and np.isfinite(res.c).all()
    if kern.launch_info.get("a_quant"):  # the prefill GEMM on int8 activations: its exact operands
        from vlpc.quant_run import quantize_activations
        x = quantize_activations(a) @ dequantize(fmt, b).T
    else:
        x = a.astype(np.float64) @ dequantize(fmt, b).T
    want = (x / (1 + np.exp(-x)) if epi else x) + r_in[:, :n].astype(np.float64)
    assert np.allclose(res.c[:, :n], want, rtol=2e-3 if ct == "f16" else 1e-5, atol=2e-3 if ct == "f16" else 1e-4)
    c[:, :n] = rng.standard_normal((m, n)).astype(NP[ct])
    res = vlpc.run(kern, a, b, c, alpha=0.5, beta=-1.0, residual=r_in, strict=True)  # R random too when omitted
    assert res.verified and res.error_ratio < 1
    assert vlpc.run(kern, strict=True, beta=0.5).verified


def test_residual_alpha_zero_and_m_at_launch():
    """alpha = 0 over NaN activations: C = beta C + R exactly (f32 C, f32 R: one rounding); M at launch."""
    kern = vlpc.compile(rsource(2, 64, 256, "q8_0", "f32", "f32")).kernel("g")
    rng = np.random.default_rng(5)
    a = np.full((2, 256), np.nan, np.float16)
    c = rng.standard_normal((2, 64)).astype(np.float32)
    r_in = rng.standard_normal((2, 64)).astype(np.float32)
    res = vlpc.run(kern, a, None, c, alpha=0.0, beta=2.0, residual=r_in, strict=True)
    assert res.verified and np.array_equal(res.c, (2.0 * c) + r_in)
    kern = vlpc.compile(rsource(None, 64, 512, "q4_0", "f16", "f16")).kernel("g")
    for m in (5, 33):  # a row-narrow companion; the prefill GEMM's companion
        res = vlpc.run(kern, m=m, beta=0.5, strict=True, seed=m)
        assert res.verified and res.c.shape == (m, 64)


@pytest.mark.parametrize("src, match", [
    (rsource(2, 64, 256, "q8_0", r_type="memref<2x64xf64>"), "residual must be a 2-D memref of f16 or f32"),
    (rsource(2, 64, 256, "q8_0", r_type="memref<2x32xf16>"), "residual memref<2x32xf16> must have C's shape and strides"),
    (rsource(2, 64, 256, "q8_0", ldc=70, r_type="memref<2x64xf16>"), "must have C's shape and strides"),
    ("func.func @g(%a: memref<4x8xf32>, %b: memref<8x8xf32>, %c: memref<4x8xf32>, %al: f32, %be: f32, "
     "%r: memref<4x8xf32>) {\n  gemm.matmul %a, %b, %c, %al, %be residual(%r : memref<4x8xf32>) {layout = \"NN\"}"
     " : memref<4x8xf32>, memref<8x8xf32>, memref<4x8xf32>, f32, f32\n  func.return\n}\n",
     "residual\\(...\\) is supported for b_format products and 2-D f16 products only"),
])
def test_located_errors(src, match):
    with pytest.raises(DiagnosticError, match=match) as e:
        vlpc.compile(src)
    assert "<input>:2:" in str(e.value).splitlines()[0]


def test_api_errors():
    kern = vlpc.compile(rsource(2, 64, 256, "q8_0", "f32", "f16")).kernel("g")
    with pytest.raises(VlpcError, match=r"residual must be f16 of shape \(2, 64\)"):
        vlpc.run(kern, residual=np.zeros((2, 64), np.float32))
    from test_quant_gemv import source
    plain = vlpc.compile(source(2, 64, 256, "q8_0")).kernel("g")
    with pytest.raises(VlpcError, match="kernel g has no residual operand"):
        vlpc.run(plain, residual=np.zeros((2, 64), np.float16))


def test_cli_residual(tmp_path):
    """vlpc run --residual R.npy (C's shape, the IR's type): verified, C saved; a wrong dtype or a kernel
    without the operand is a one-line error, exit 1."""
    import subprocess
    import sys

    src = tmp_path / "r.mlir"
    src.write_text(rsource(3, 64, 256, "q8_0", "f32", "f16"))
    r16, r32 = tmp_path / "r16.npy", tmp_path / "r32.npy"
    np.save(r16, np.full((3, 64), 1.5, np.float16))
    np.save(r32, np.ones((3, 64), np.float32))
    out = tmp_path / "c.npy"
    cli = [sys.executable, "-m", "vlpc.cli", "run"]
    p = subprocess.run([*cli, str(src), "--residual", str(r16), "--save-output", str(out), "--strict"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "verification passed" in p.stdout, p.stderr
    assert np.load(out).shape == (3, 64)
    p = subprocess.run([*cli, str(src), "--residual", str(r32)], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.strip().endswith("--residual has dtype float32, expected float16")
    assert len(p.stderr.strip().splitlines()) == 1
    from test_quant_gemv import source
    plain = tmp_path / "p.mlir"
    plain.write_text(source(3, 64, 256, "q8_0"))
    p = subprocess.run([*cli, str(plain), "--residual", str(r16)], capture_output=True, text=True)
    assert p.returncode == 1 and "kernel g has no residual operand" in p.stderr


def f16_source(m, n, k, ct="f32", rt="f16", ldc=None, layout="NT", epilogue=("relu",)) -> str:
    """An f16 x f16 matmul (the dot kernels) with a residual laid out as C."""
    ms = "?" if m is None else m

    def mem(rows, cols, ld, t):
        lay = f", strided<[{ld}, 1]>" if ld is not None and ld != cols else ""
        return f"memref<{rows}x{cols}x{t}{lay}>"
    ta = mem(ms, k, None, "f16") if layout[0] == "N" else mem(k, ms, None, "f16")
    tb = mem(n, k, None, "f16") if layout[1] == "T" else mem(k, n, None, "f16")
    tc, tr = mem(ms, n, ldc, ct), mem(ms, n, ldc, rt)
    epi = f', epilogue = [{", ".join(f"{chr(34)}{x}{chr(34)}" for x in epilogue)}]' if epilogue else ""
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: f32, %beta: f32, %r: {tr}) {{\n"
            f'  gemm.matmul %a, %b, %c, %alpha, %beta residual(%r : {tr}) {{layout = "{layout}"{epi}}}\n'
            f"      : {ta}, {tb}, {tc}, f32, f32\n  func.return\n}}\n")


@pytest.mark.parametrize("m, n, k, ct, rt, ldc, layout, options", [
    (20, 80, 96, "f32", "f16", None, "NT", {}),
    (33, 64, 256, "f16", "f32", 70, "NN", {}),             # B K x N, f16 C, C's row gaps
    (16, 64, 512, "f32", "f32", None, "NT", {"split_k": 2}),  # the reduce kernel adds R
    (1, 64, 256, "f32", "f16", None, "NT", {}),            # M = 1: not the lane-along-K GEMV
])
def test_f16_residual(m, n, k, ct, rt, ldc, layout, options):
    """The f16 dot kernels take the residual too: C = relu(alpha A B + beta C) + R against NumPy."""
    kern = vlpc.compile(f16_source(m, n, k, ct, rt, ldc, layout), **options).kernel("g")
    assert kern.launch_info["residual"] == rt
    rng = np.random.default_rng(m + n)
    a = rng.standard_normal((m, k) if layout[0] == "N" else (k, m)).astype(np.float16)
    b = rng.standard_normal((n, k) if layout[1] == "T" else (k, n)).astype(np.float16)
    width = ldc or n
    r_in = np.full((m, width), np.nan, NP[rt])
    r_in[:, :n] = rng.standard_normal((m, n)).astype(NP[rt])
    res = vlpc.run(kern, a, b, np.full((m, width), np.nan, NP[ct]), beta=0.0, residual=r_in, strict=True)
    prod = a.astype(np.float64) @ (b.astype(np.float64).T if layout[1] == "T" else b.astype(np.float64))
    want = np.maximum(prod, 0) + r_in[:, :n].astype(np.float64)
    assert res.verified and np.allclose(res.c[:, :n], want, rtol=2e-3 if ct == "f16" else 1e-5, atol=2e-3)
    assert vlpc.run(kern, strict=True, beta=0.5).verified


def test_f16_residual_m_at_launch_and_errors():
    kern = vlpc.compile(f16_source(None, 64, 128)).kernel("g")
    for m in (3, 70):
        assert vlpc.run(kern, m=m, strict=True, beta=0.5, seed=m).verified
    for src, match in ((f16_source(64, 64, 128, layout="TT"), "residual\\(...\\): this product copies A or B first"),
                       (f16_source(8, 64, 128).replace("xf16", "xf32").replace("8x64xf32>) {", "8x64xf16>) {"),
                        "supported for b_format products and 2-D f16 products only")):
        with pytest.raises(DiagnosticError, match=match):
            vlpc.compile(src)


@pytest.mark.parametrize("fmt, epilogue", [("q4_k", ("silu",)), ("q4_0", ("swiglu",))])
def test_residual_q4_k_and_swiglu(fmt, epilogue):
    """Q4_K (its split reference) and the fused SwiGLU (gate and up rows in one B) with R added after."""
    m, n, k = 2, 64, 512
    src = rsource(m, n, k, fmt, "f32", "f16", epilogue=epilogue)
    if "swiglu" in epilogue:
        rb = row_bytes(fmt, k)
        src = src.replace(f"memref<{n}x{rb}xi8>", f"memref<{2 * n}x{rb}xi8>")
    kern = vlpc.compile(src).kernel("g")
    rng = np.random.default_rng(9)
    from vlpc.quant_run import random_weights
    b = random_weights(fmt, 2 * n if "swiglu" in epilogue else n, k, rng)
    a = rng.standard_normal((m, k)).astype(np.float16)
    r_in = rng.standard_normal((m, n)).astype(np.float16)
    res = vlpc.run(kern, a, b, np.full((m, n), np.nan, np.float32), beta=0.0, residual=r_in, strict=True)
    w = dequantize(fmt, b)
    if "swiglu" in epilogue:
        g, u = a.astype(np.float64) @ w[:n].T, a.astype(np.float64) @ w[n:].T
        want = g / (1 + np.exp(-g)) * u
    else:
        x = a.astype(np.float64) @ w.T
        want = x / (1 + np.exp(-x))
    assert res.verified and np.allclose(res.c, want + r_in, rtol=1e-4, atol=1e-3)
