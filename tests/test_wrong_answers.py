"""Wrong answers found by differential testing (issue 14, part A), each at its root.

Every expected value is a float64 NumPy product computed here; buffers are sized exactly
to the data (the last element ends the allocation), so a read or write past a matrix is
either a fault or (with the emulator's per-argument bounds) a fault naming the buffer.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import vlpc
from vlpc.errors import DiagnosticError, VlpcError
from vlpc.runtime import LaunchError, get_device, load_code_object

NP = {"f32": np.float32, "f64": np.float64}


def gemm_source(layout="NT", dtype="f32", m="64", n="64", k="16", lda=None, ldb=None, ldc=None,
                epilogue=(), name="g"):
    """A gemm.matmul kernel; sizes are ints or '?', leading dimensions None (packed) or ints/'?'."""
    def mem(rows, cols, ld):
        t = f"memref<{rows}x{cols}x{dtype}"
        if ld is not None:
            t += f", strided<[{ld}, 1]>"
        return t + ">"
    a = mem(m, k, lda) if layout[0] == "N" else mem(k, m, lda)
    b = mem(k, n, ldb) if layout[1] == "N" else mem(n, k, ldb)
    c = mem(m, n, ldc)
    bias_arg = bias_use = epi = ""
    if epilogue:
        blen = m if "bias_row" in epilogue else n
        bias_arg = f", %bias: memref<{blen}x{dtype}>"
        bias_use = f" bias(%bias : memref<{blen}x{dtype}>)"
        epi = ", epilogue = [" + ", ".join(f'"{x}"' for x in epilogue) + "]"
    return f"""builtin.module {{
  func.func @{name}(%a: {a}, %b: {b}, %c: {c}, %alpha: {dtype}, %beta: {dtype}{bias_arg}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta{bias_use} {{layout = "{layout}"{epi}}} : {a}, {b}, {c}, {dtype}, {dtype}
    func.return
  }}
}}
"""


@functools.lru_cache(maxsize=None)
def compiled(src: str, **options):
    return vlpc.compile(src, "gfx906", **dict(options))


def stored(layout, which, m, n, k):
    if which == "A":
        return (m, k) if layout[0] == "N" else (k, m)
    return (k, n) if layout[1] == "N" else (n, k)


def exact(mat: np.ndarray, ld: int) -> np.ndarray:
    """``mat`` (rows x cols) in a buffer of (rows - 1) * ld + cols elements, padding NaN."""
    rows, cols = mat.shape
    buf = np.full((rows - 1) * ld + cols, np.nan, mat.dtype)
    for r in range(rows):
        buf[r * ld:r * ld + cols] = mat[r]
    return buf


def unpack(buf: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    return np.stack([buf[r * ld:r * ld + cols] for r in range(rows)])


def launch_exact(kern, layout, dtype, m, n, k, a, b, c, alpha, beta, lda=None, ldb=None, ldc=None, bias=None):
    """Run ``kern`` (its whole plan) on the strict emulator with exactly sized buffers."""
    lda = lda or a.shape[1]
    ldb = ldb or b.shape[1]
    ldc = ldc or n
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(exact(a, lda)), dev.upload(exact(b, ldb)), dev.upload(exact(c, ldc))]
    t = NP[dtype]
    args = [*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(lda), np.int32(ldb), np.int32(ldc),
            t(alpha), t(beta)]
    if bias is not None:
        args.append(dev.upload(bias))
    kern.execute(dev, load_code_object(kern.code_object), args, m, n, k, ldc)
    out = dev.download(bufs[2], t, ((m - 1) * ldc + n,))
    return unpack(out, m, n, ldc)


def reference(layout, a, b, c, alpha, beta):
    """BLAS: alpha * op(A) op(B) + beta * C; alpha = 0 reads neither A nor B, beta = 0 not C."""
    a64 = a.astype(np.float64) if layout[0] == "N" else a.astype(np.float64).T
    b64 = b.astype(np.float64) if layout[1] == "N" else b.astype(np.float64).T
    out = np.zeros((a64.shape[0], b64.shape[1]))
    if alpha != 0:
        out += alpha * (a64 @ b64)
    if beta != 0:
        out += beta * c.astype(np.float64)
    return out


def check(got, ref, k, dtype):
    eps = np.finfo(NP[dtype]).eps
    assert np.isfinite(got).all(), f"non-finite at {np.argwhere(~np.isfinite(got))[:4].tolist()}"
    np.testing.assert_allclose(got, ref, rtol=0, atol=(k + 4) * eps * (np.abs(ref).max() + 1) * 4)


def operands(layout, dtype, m, n, k, seed=0, nan_a=False, nan_c=False):
    rng = np.random.default_rng(seed)
    t = NP[dtype]
    a = rng.uniform(-1, 1, stored(layout, "A", m, n, k)).astype(t)
    b = rng.uniform(-1, 1, stored(layout, "B", m, n, k)).astype(t)
    c = rng.uniform(-1, 1, (m, n)).astype(t)
    if nan_a:
        a[0, 0] = np.nan
        a[-1, -1] = np.inf
        b[-1, 0] = -np.inf
    if nan_c:
        c[:] = np.nan
    return a, b, c


# -- item 1 / 4: BLAS quick-return rules for alpha = 0 and beta = 0, every kernel ----------

# (id, source kwargs, compile options, M at launch)
KERNELS = [
    ("sqc-f32", dict(), dict(), 64),
    ("sqc-f64-TN", dict(layout="TN", dtype="f64", m="40", n="33", k="9"), dict(), 40),
    ("lds-f32", dict(), dict(strategy="lds", macro_tile=(64, 64)), 64),
    ("split-workspace", dict(k="64"), dict(split_k=2), 64),
    ("split-atomic", dict(k="64"), dict(split_k=2, split_mode="atomic"), 64),
    ("local-split", dict(k="64"), dict(local_split=2, split_k=1), 64),
    ("rows8", dict(m="?"), dict(), 12),
    ("rows1", dict(m="?", dtype="f64"), dict(), 3),
    ("bias_col", dict(epilogue=("bias_col",)), dict(), 64),
]


def _case(kid):
    _, src_kw, opts, m_run = next(x for x in KERNELS if x[0] == kid)
    layout, dtype = src_kw.get("layout", "NT"), src_kw.get("dtype", "f32")
    n, k = int(src_kw.get("n", "64")), int(src_kw.get("k", "16"))
    kern = compiled(gemm_source(**src_kw), **{kk: v for kk, v in opts.items()}).kernel()
    bias = None
    if src_kw.get("epilogue"):
        bias = np.linspace(-1, 1, n).astype(NP[dtype])
    return kern, layout, dtype, m_run, n, k, bias


def _ref_epilogue(ref, bias):
    return ref if bias is None else ref + bias[None, :]


@pytest.mark.parametrize("kid", [x[0] for x in KERNELS])
def test_beta_zero_does_not_read_nan_c(kid):
    kern, layout, dtype, m, n, k, bias = _case(kid)
    a, b, c = operands(layout, dtype, m, n, k, nan_c=True)
    got = launch_exact(kern, layout, dtype, m, n, k, a, b, c, 1.5, 0.0, bias=bias)
    check(got, _ref_epilogue(reference(layout, a, b, c, 1.5, 0.0), bias), k, dtype)


@pytest.mark.parametrize("kid", [x[0] for x in KERNELS])
def test_alpha_zero_does_not_read_a_b(kid):
    kern, layout, dtype, m, n, k, bias = _case(kid)
    a, b, c = operands(layout, dtype, m, n, k, nan_a=True)
    got = launch_exact(kern, layout, dtype, m, n, k, a, b, c, 0.0, -0.75, bias=bias)
    check(got, _ref_epilogue(reference(layout, a, b, c, 0.0, -0.75), bias), k, dtype)


@pytest.mark.parametrize("kid", ["sqc-f32", "lds-f32", "split-workspace", "rows1"])
def test_alpha_and_beta_zero_give_zero(kid):
    kern, layout, dtype, m, n, k, bias = _case(kid)
    a, b, c = operands(layout, dtype, m, n, k, nan_a=True, nan_c=True)
    got = launch_exact(kern, layout, dtype, m, n, k, a, b, c, 0.0, 0.0, bias=bias)
    assert (got == 0).all()
