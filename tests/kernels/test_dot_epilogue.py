"""Fused epilogues of the dot kernels (passes/isel/dot.py) on the strict emulator:
gelu for f16 products (C f32 or f16, computed in f32 before the rounding to f16) and
bias_row / bias_col / relu / gelu for int8 products dequantized into f32 or f16 C (an f32
bias, applied after the dequantization).  Exactly sized buffers (each one's last matrix
element ends it, so the emulator's red zones catch a read past it) with NaN or garbage
padding between rows that must keep its bits; BLAS's beta = 0 over a NaN C and alpha = 0
over NaN/Inf inputs.

Expected values: float64 NumPy on the f16 (or int8) inputs (tests/dot_support.py's
reference and f32-accumulation bound), then the epilogue in float64 here: the tanh form
``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` with docs/kernels.md's bound ``1.13 e + u |y|
(8 + 4 |z|)`` (u = 2^-24, z = the argument of v_exp_f32; max |gelu'| = 1.1289 <= 1.13), a bias
add ``e (1 + u) + u |y|``, relu 1-Lipschitz, plus 2^-126 per operation (a flushed subnormal);
f16 C adds its rounding ``2^-11 |y| + 2^-25`` after the epilogue.
"""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.errors import VlpcError
from vlpc.runtime import get_device, load_code_object
from vlpc.verify import Problem, kernel_arguments

from dot_support import assert_close, batch_memref, exact, f16_batch, flat_batch, pad_mask, reference, rows_of

U32, U16, TINY = 2.0 ** -24, 2.0 ** -11, 2.0 ** -126
NP = {"f16": np.float16, "f32": np.float32, "i8": np.int8}


def source(m, n, k, lda, ldb, ldc, ab, ct, epi, bias_len=None) -> str:
    """gemm.matmul, layout NT (A M x K, B N x K), with ``epi``; None sizes are '?' (given at
    launch); int8 with f32/f16 C dequantizes (scales operands; bias f32)."""
    def mt(rows, cols, ld, t):
        dims = "x".join("?" if x is None else str(x) for x in (rows, cols))
        return f"memref<{dims}x{t}, strided<[{'?' if ld is None else ld}, 1]>>"
    ta, tb, tc = mt(m, k, lda, ab), mt(n, k, ldb, ab), mt(m, n, ldc, ct)
    dequant = ab == "i8"
    bt = f"memref<{'?' if bias_len is None else bias_len}x{'f32' if dequant else ab}>"
    has_bias = any(x.startswith("bias") for x in epi)
    args = f"%a: {ta}, %b: {tb}, %c: {tc}, %alpha: f32, %beta: f32" + (f", %bias: {bt}" if has_bias else "")
    extra = f" bias(%bias : {bt})" if has_bias else ""
    if dequant:
        sr, sc = f"memref<{'?' if m is None else m}xf32>", f"memref<{'?' if n is None else n}xf32>"
        args += f", %sr: {sr}, %sc: {sc}"
        extra += f" scales(%sr, %sc : {sr}, {sc})"
    attrs = 'layout = "NT", epilogue = [' + ", ".join(f'"{x}"' for x in epi) + "]"
    return (f"func.func @g({args}) {{\n  gemm.matmul %a, %b, %c, %alpha, %beta{extra} {{{attrs}}}"
            f" : {ta}, {tb}, {tc}, f32, f32\n  func.return\n}}\n")


def expected(a, b, c, alpha, beta, epi, bias=None, scales=None, pieces=1):
    """(float64 reference, bound) of epi(alpha A B^T + beta C) (see the module docstring)."""
    exp, bound = reference(a, b, c.astype(np.float32), alpha, beta, pieces, scales=scales)
    bound = bound + np.zeros(exp.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        for x in epi:
            if x == "gelu":
                inner = exp + 0.044715 * exp ** 3
                y = 0.5 * exp * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * inner))
                z = -2.0 * np.log2(np.e) * np.sqrt(2.0 / np.pi) * inner
                bound = 1.13 * bound + U32 * np.abs(y) * (8 + 4 * np.abs(z))
                exp = y
            elif x == "relu":
                exp = np.where(np.isnan(exp), 0.0, np.maximum(exp, 0.0))
            else:
                bv = bias.astype(np.float64)
                exp = exp + (bv[:, None] if x == "bias_row" else bv[None, :])
                bound = bound * (1 + U32) + U32 * np.abs(exp)
            bound = bound + TINY
    if c.dtype == np.float16:
        bound = bound * (1 + U16) + U16 * np.abs(exp) + 2.0 ** -25
    return exp, bound


def launch(kern, host: dict, p: Problem, alpha, beta):
    """Run ``kern`` with the exactly sized flat buffers ``host`` (A, B, C, bias, scale_row,
    scale_col by name) on the strict emulator; returns C's flat buffer after the launch."""
    dev = get_device("emulator", strict=True)
    bufs = {name: dev.upload(np.ascontiguousarray(x)) for name, x in host.items()}
    try:
        args = kernel_arguments(kern, bufs, p, alpha, beta, scalar=np.float32)
        sizes = {i: host[name].nbytes for i, x in enumerate(args) for name, buf in bufs.items() if x is buf}
        kern.execute(dev, load_code_object(kern.code_object), args, p.m, p.n, p.k, p.ldc, p.batch or None,
                     buffer_sizes=sizes)
        return dev.download(bufs["C"], host["C"].dtype.type, host["C"].shape)
    finally:
        for buf in bufs.values():
            dev.free(buf)


def run_case(m, n, k, lda, ldc, ab, ct, epi, alpha, beta, *, static=True, seed=0, a=None, b=None, c=None,
             scales=None, opts=None):
    """Compile, launch on exactly sized padded buffers, compare with NumPy; returns C (M x N)."""
    rng = np.random.default_rng(seed)
    dequant = ab == "i8"
    blen = m if "bias_row" in epi else n
    sizes = (m, n, k, lda, lda, ldc) if static else (None,) * 6
    kern = vlpc.compile(source(*sizes, ab, ct, epi, blen if static else None), **(opts or {})).kernel("g")
    assert kern.launch_info["epilogue"] == ",".join(epi)
    if dequant:
        a = rng.integers(-128, 128, (m, k)).astype(np.int8) if a is None else a
        b = rng.integers(-128, 128, (n, k)).astype(np.int8) if b is None else b
        scales = scales or (rng.uniform(1e-3, 2e-2, m).astype(np.float32), rng.uniform(1e-3, 2e-2, n).astype(np.float32))
        pad_ab = np.int8(-77)
    else:
        a = (0.5 * rng.standard_normal((m, k))).astype(np.float16) if a is None else a
        b = (0.5 * rng.standard_normal((n, k))).astype(np.float16) if b is None else b
        pad_ab = np.nan
    c = rng.standard_normal((m, n)).astype(NP[ct]) if c is None else c
    bias = rng.standard_normal(blen).astype(np.float32 if dequant else np.float16)
    host = {"A": exact(a, lda, pad_ab), "B": exact(b, lda, pad_ab), "C": exact(c, ldc, np.nan)}
    if any(x.startswith("bias") for x in epi):
        host["bias"] = bias
    if dequant:
        host["scale_row"], host["scale_col"] = scales
    out = launch(kern, host, Problem(m, n, k, lda, lda, ldc), alpha, beta)
    got = rows_of(out, m, n, ldc)
    exp, bound = expected(a, b, c, alpha, beta, epi, bias, scales if dequant else None,
                          kern.split_k * kern.local_split)
    assert_close(got, exp, bound)
    pm = pad_mask(out.size, m, n, ldc)  # C's padding keeps its bits
    assert np.array_equal(out[pm].view(np.uint8), host["C"][pm].view(np.uint8))
    return got


@pytest.mark.parametrize("m, n, k, lda, ldc, ct, epi, opts, static", [
    (70, 100, 37, 38, 101, "f32", ("gelu",), {}, True),                    # edges in M and N, K odd
    (70, 100, 38, 40, 100, "f16", ("bias_row", "gelu"), {}, True),         # f16 C: gelu in f32, then rounded
    (40, 70, 99, 100, 71, "f32", ("gelu", "bias_col"), {"split_k": 3}, True),  # in the reduce kernel
    (4, 128, 259, 260, 128, "f16", ("gelu", "relu"), {}, True),            # the decode GEMV plan (local split)
    (5, 70, 35, 36, 70, "f32", ("gelu",), {}, False),                      # sizes at launch: a row-narrow kernel
])
def test_f16_gelu(m, n, k, lda, ldc, ct, epi, opts, static):
    """gelu (tanh form via v_exp_f32 and v_rcp_f32) on alpha * A B^T + beta * C in f32, in order
    with bias and relu, for f16 products in every output path of the dot kernels."""
    got = run_case(m, n, k, lda, ldc, "f16", ct, epi, 0.75, -0.5, static=static, opts=opts)
    x = got.astype(np.float64)
    if epi[-1] == "gelu":  # gelu's range: >= -0.17 (its minimum, at x = -0.75), values on both sides
        assert x.min() >= -0.171 and (x < -0.01).any() and (x > 1).any()


@pytest.mark.parametrize("ct", ["f32", "f16"])
def test_f16_gelu_blas_rules(ct):
    """alpha = 0 over NaN/Inf in A and B: C = gelu(beta * C), finite; beta = 0 over a NaN C:
    C = gelu(alpha * A B^T), finite (C is not read)."""
    m, n, k = 20, 70, 9
    rng = np.random.default_rng(4)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    a[1, 2], a[4, 8], b[3, 0], b[7, 8] = np.nan, np.inf, -np.inf, np.nan
    got = run_case(m, n, k, 10, n, "f16", ct, ("bias_col", "gelu"), 0.0, 1.5, a=a, b=b)
    assert np.isfinite(got).all()
    got = run_case(m, n, k, 10, n, "f16", ct, ("gelu",), 1.0, 0.0, c=np.full((m, n), np.nan, NP[ct]), seed=5)
    assert np.isfinite(got).all()


@pytest.mark.parametrize("m, n, k, ct, epi, opts, static", [
    (70, 100, 71, "f32", ("bias_row", "gelu"), {}, True),            # edges, K % 4 = 3
    (20, 64, 33, "f16", ("gelu", "bias_col"), {}, True),             # f16 output
    (70, 100, 71, "f32", ("bias_col", "relu"), {"split_k": 2}, True),  # in the reduce kernel
    (4, 128, 259, "f16", ("relu", "bias_row"), {}, True),            # the GEMV plan (local split)
    (5, 70, 35, "f32", ("bias_row", "gelu"), {}, False),             # sizes at launch: a row-narrow kernel
])
def test_dequantized_int8_epilogues(m, n, k, ct, epi, opts, static):
    """W8A8: epi(alpha * scale_row[m] * scale_col[n] * (A B^T)[m, n] + beta * C), the bias f32."""
    lda = -(-k // 4) * 4
    got = run_case(m, n, k, lda, n, "i8", ct, epi, 0.5, -1.5, opts=opts, seed=2, static=static)
    if epi[-1] == "relu":
        assert got.min() >= 0 and (got == 0).any()


def test_dequantized_int8_epilogue_blas_rules():
    """alpha = 0 over an Inf scale: C = epi(beta * C); beta = 0 over a NaN C: C is not read."""
    m, n, k = 9, 70, 16
    rng = np.random.default_rng(6)
    sr, sc = rng.uniform(1e-3, 2e-2, m).astype(np.float32), rng.uniform(1e-3, 2e-2, n).astype(np.float32)
    sc[3] = np.inf
    got = run_case(m, n, k, 16, n, "i8", "f32", ("gelu", "bias_row"), 0.0, 1.0, scales=(sr, sc))
    assert np.isfinite(got).all()
    got = run_case(m, n, k, 16, n, "i8", "f16", ("bias_col", "gelu"), 1.0, 0.0, c=np.full((m, n), np.nan, np.float16))
    assert np.isfinite(got).all()


def test_f16_gelu_strided_batch():
    """A strided batch of 2 (f16 -> f16 C, bias_row then gelu; the bias shared by the batch),
    gaps between the matrices NaN and kept."""
    nb, m, n, k, ld = 2, 20, 70, 13, 14
    sa, sb, sc = m * ld + 6, n * ld + 2, m * n + 5
    ta, tb = batch_memref(nb, m, k, ld, sa, "f16"), batch_memref(nb, n, k, ld, sb, "f16")
    tc = batch_memref(nb, m, n, n, sc, "f16")
    kern = vlpc.compile(f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: f32, %beta: f32, %v: memref<{m}xf16>) {{\n"
                        f"  gemm.matmul %a, %b, %c, %alpha, %beta bias(%v : memref<{m}xf16>) "
                        f"{{layout = \"NT\", epilogue = [\"bias_row\", \"gelu\"]}} : {ta}, {tb}, {tc}, f32, f32\n"
                        "  func.return\n}\n").kernel("g")
    rng = np.random.default_rng(8)
    a, b, c = f16_batch(nb, m, n, k, np.float16, rng)
    bias = rng.standard_normal(m).astype(np.float16)
    host = {"A": flat_batch(a, ld, sa), "B": flat_batch(b, ld, sb), "C": flat_batch(c, n, sc), "bias": bias}
    p = Problem(m, n, k, ld, ld, n, batch=nb, stride_a=sa, stride_b=sb, stride_c=sc)
    out = launch(kern, host, p, 0.5, 1.25)
    gaps = np.ones(out.size, bool)
    for z in range(nb):
        exp, bound = expected(a[z], b[z], c[z], 0.5, 1.25, ("bias_row", "gelu"), bias)
        assert_close(rows_of(out[z * sc:], m, n, n), exp, bound)
        for i in range(m):
            gaps[z * sc + i * n:z * sc + i * n + n] = False
    assert np.isnan(out[gaps]).all()


def test_vlpc_run_checks_the_dot_epilogues():
    """vlpc.run's own check (vlpc/verify.py) covers gelu and the dequantized bias (f32), and
    refuses a bias of the wrong type."""
    kern = vlpc.compile(source(70, 100, 38, 38, 38, 100, "f16", "f16", ("bias_col", "gelu"), 100),
                        split_k=3).kernel("g")
    r = vlpc.run(kern, alpha=0.75, beta=1.5, strict=True)
    assert r.verified and r.inputs["bias"].dtype == np.float16
    kd = vlpc.compile(source(20, 64, 33, 36, 36, 64, "i8", "f32", ("bias_row", "gelu"), 20)).kernel("g")
    r = vlpc.run(kd, alpha=2.0, beta=0.25, strict=True)
    assert r.verified and r.inputs["bias"].dtype == np.float32
    with pytest.raises(VlpcError, match="bias must be a vector of 20 float32 values"):
        vlpc.run(kd, bias=np.ones(20, np.float16))


@pytest.mark.parametrize("text, words", [
    (source(64, 64, 32, 32, 32, 64, "i8", "f32", ("gelu",)).replace("%alpha: f32, %beta: f32, %sr", "%alpha: i32, %beta: i32, %sr")
     .replace("x64xf32, strided<[64, 1]>>", "x64xi32, strided<[64, 1]>>").replace(", f32, f32\n", ", i32, i32\n")
     .replace(", %sr: memref<64xf32>, %sc: memref<64xf32>", "").replace(" scales(%sr, %sc : memref<64xf32>, memref<64xf32>)", ""),
     "fused epilogue gelu: the dot kernels fuse bias_row, bias_col, relu, gelu and silu for f16 products"),
    (source(64, 64, 32, 32, 32, 64, "i8", "f32", ("bias_row",), 64).replace("memref<64xf32>)", "memref<64xi8>)")
     .replace("%bias: memref<64xf32>", "%bias: memref<64xi8>"),
     "bias must be a 1-D memref of f32, got memref<64xi8> (the bias of a dequantized int8 product is f32"),
])
def test_dot_epilogues_refused(text, words):
    """int8 -> i32 fuses no epilogue; a dequantized int8 product's bias is f32: located errors."""
    with pytest.raises(VlpcError) as e:
        vlpc.compile(text, filename="t.mlir")
    assert words in str(e.value) and "t.mlir:" in str(e.value)
