"""Launch and check f16 / int8 dot kernels (passes/isel/dot.py) on the emulator.

Buffers are exactly sized (the last element of each matrix ends its buffer) and the gaps
between rows (leading dimension past the row) are filled with ``pad``: NaN for f16 and f32,
a garbage byte pattern for i8/i32.  The reference is float64 math on the f16 inputs (exact
products; int8: exact integer math in int64, wrapped to i32), with BLAS's quick returns.

f16 bound (docs/kernels.md, "f16 and int8 through the dot instructions"): each ``v_dot2_f32_f16``
adds two exact f16 products to the f32 accumulator with one rounding (the emulator's and
the ISA's definition), so after ``nd = ceil(K / 2)`` dot instructions (plus ``L - 1``
additions of a local split, plus the epilogue's ``beta * C`` and ``fma``) the error is at most
``gamma_n(2^-24) * (|alpha| sum_k |a||b| + |beta| |c|)`` with ``n = nd + L + 2`` (recursive
summation, Higham 2002, eq. 3.4, each operation rounding once with unit roundoff 2^-24);
f16 output adds one more rounding to f16: ``2^-11 |result| + 2^-25`` (half of the smallest
f16 subnormal spacing 2^-24).
"""

from __future__ import annotations

import numpy as np

from vlpc.runtime import get_device, load_code_object

U32 = 2.0 ** -24
U16 = 2.0 ** -11

#: alpha/beta type of each A/B element type (int8 -> i32; f16 and dequantized int8 take f32).
SCALAR = {"f16": "f32", "i8": "i32"}
#: NumPy type of each element type.
NP = {"f16": np.float16, "i8": np.int8, "f32": np.float32, "i32": np.int32}


def memref(rows, cols, ld, t: str) -> str:
    """``memref<rows x cols x t, strided<[ld, 1]>>``; a ``None`` size or ``ld`` is ``?`` (given at launch)."""
    dims = "x".join("?" if x is None else str(x) for x in (rows, cols))
    return f"memref<{dims}x{t}, strided<[{'?' if ld is None else ld}, 1]>>"


def batch_memref(nb: int, rows: int, cols: int, ld: int, stride: int, t: str) -> str:
    """A strided batch of ``nb`` matrices: ``memref<nb x rows x cols x t, strided<[stride, ld, 1]>>``."""
    return f"memref<{nb}x{rows}x{cols}x{t}, strided<[{stride}, {ld}, 1]>>"


def source(m, n, k, lda, ldb, ldc, ab: str = "f16", ct: str = "f32", gemv: str | None = None) -> str:
    """``func.func @g`` with one NT ``gemm.matmul``: A M x K and B N x K of ``ab``, C M x N of
    ``ct``, alpha/beta of ``SCALAR[ab]``; ``None`` sizes or leading dimensions are ``?``;
    ``gemv``: the matmul's ``gemv`` attribute (``"sgpr"``: the SGPR decode GEMV, not the
    lane-along-K one, passes/isel/gemv.py)."""
    ta, tb, tc = memref(m, k, lda, ab), memref(n, k, ldb, ab), memref(m, n, ldc, ct)
    s = SCALAR[ab]
    extra = f', gemv = "{gemv}"' if gemv else ""
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {s}, %beta: {s}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"{extra}}} : {ta}, {tb}, {tc}, {s}, {s}\n"
            "  func.return\n}\n")


def operands(m: int, n: int, k: int, ab: str, ct: str, rng: np.random.Generator):
    """Random A (M x K), B (N x K), C (M x N) and the padding of A/B and of C:
    int8 uniform over [-128, 127] with i32 C over all 32-bit values (padding -77 and
    -0x5A5A5A5A); f16 standard normal with C of ``ct`` (padding NaN)."""
    if ab == "i8":
        a = rng.integers(-128, 128, (m, k)).astype(np.int8)
        b = rng.integers(-128, 128, (n, k)).astype(np.int8)
        c = rng.integers(-2**31, 2**31, (m, n)).astype(np.int32)
        return a, b, c, np.int8(-77), np.int32(-0x5A5A5A5A)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    c = rng.standard_normal((m, n)).astype(NP[ct])
    return a, b, c, np.nan, np.nan


def f16_batch(nb: int, m: int, n: int, k: int, c_type, rng: np.random.Generator):
    """Standard normal A (nb x M x K) and B (nb x N x K) in f16 and C (nb x M x N) of ``c_type``,
    drawn in that order."""
    a = rng.standard_normal((nb, m, k)).astype(np.float16)
    b = rng.standard_normal((nb, n, k)).astype(np.float16)
    return a, b, rng.standard_normal((nb, m, n)).astype(c_type)


def flat_batch(x: np.ndarray, ld: int, stride: int, pad=np.nan) -> np.ndarray:
    """The matrices of the 3-D ``x`` (batch, rows, cols) in one exactly sized flat buffer:
    matrix z starts at ``z * stride``, its rows ``ld`` apart; every gap holds ``pad``."""
    nb, rows, cols = x.shape
    f = np.full((nb - 1) * stride + (rows - 1) * ld + cols, pad, x.dtype)
    for z in range(nb):
        for i in range(rows):
            f[z * stride + i * ld:z * stride + i * ld + cols] = x[z, i]
    return f


def gamma(n: int, u: float) -> float:
    return n * u / (1 - n * u)


def exact(arr: np.ndarray, ld: int, pad) -> np.ndarray:
    """The rows of the 2-D ``arr`` in an exactly sized flat buffer with row stride ``ld``."""
    rows, cols = arr.shape
    flat = np.full((rows - 1) * ld + cols, pad, arr.dtype)
    for i in range(rows):
        flat[i * ld:i * ld + cols] = arr[i]
    return flat


def rows_of(flat: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    return np.stack([flat[i * ld:i * ld + cols] for i in range(rows)])


def pad_mask(size: int, rows: int, cols: int, ld: int) -> np.ndarray:
    mask = np.ones(size, bool)
    for i in range(rows):
        mask[i * ld:i * ld + cols] = False
    return mask


def launch_dot(kern, a_flat, b_flat, c_flat, alpha, beta, m, n, k, lda, ldb, ldc, *, device=None,
               strict: bool = True, batch=None, strides=None, scales=None):
    """Run the kernel (a CompiledKernel) with the given flat buffers; returns (C flat, stats).
    ``scales``: (scale_row, scale_col) f32 vectors of a dequantizing int8 kernel."""
    dev = device or get_device("emulator", strict=strict)
    scalar = np.int32 if a_flat.dtype == np.int8 and c_flat.dtype == np.int32 else np.float32
    arrays = [np.ascontiguousarray(x) for x in (a_flat, b_flat, c_flat, *(scales or ()))]
    bufs = [dev.upload(x) for x in arrays]
    try:
        args = [*bufs[:3], *(np.int32(v) for v in (m, n, k, lda, ldb, ldc)), scalar(alpha), scalar(beta), *bufs[3:]]
        if strides is not None:
            args += [np.int32(s) for s in strides]
        stats = kern.execute(dev, load_code_object(kern.code_object), args, m, n, k, ldc, batch,
                             buffer_sizes={(i if i < 3 else i + 8): x.nbytes for i, x in enumerate(arrays)})
        return dev.download(bufs[2], c_flat.dtype.type, c_flat.shape), stats
    finally:
        for buf in bufs:
            dev.free(buf)


def reference(a: np.ndarray, bt: np.ndarray, c0: np.ndarray, alpha: float, beta: float,
              local: int = 1, scales=None) -> tuple[np.ndarray, np.ndarray]:
    """(expected, bound) for C <- alpha A B^T + beta C with A M x K, B N x K (f16 or i8).

    ``scales`` (int8 with f32/f16 C): C <- alpha * scale_row[m] * scale_col[n] * (A B^T) + beta C.
    The int8 product is exact; its conversion to f32, the two scale products, beta * C and
    the FMA round once each: gamma_5(2^-24) times the magnitudes (plus the f16 rounding)."""
    if scales is not None:
        prod = (a.astype(np.int64) @ bt.astype(np.int64).T).astype(np.float64)
        sr, sc = (np.asarray(x, np.float64) for x in scales)
        with np.errstate(all="ignore"):
            d = sr[:, None] * sc[None, :] * prod if alpha != 0 else np.zeros(prod.shape)
            exp = alpha * d + (beta * c0.astype(np.float64) if beta != 0 else 0.0)
            mag = abs(alpha) * np.abs(d) + (abs(beta) * np.abs(c0.astype(np.float64)) if beta != 0 else 0.0)
        bound = gamma(5, U32) * mag
        if c0.dtype == np.float16:
            bound = bound * (1 + U16) + U16 * np.abs(exp) + 2.0 ** -25
        return exp, bound
    if a.dtype == np.int8:
        prod = a.astype(np.int64) @ bt.astype(np.int64).T
        res = np.int64(alpha) * prod + (np.int64(beta) * c0.astype(np.int64) if beta != 0 else 0)
        res = ((res + 2**31) % 2**32 - 2**31).astype(np.int64)
        return res, np.zeros(res.shape)
    a64, b64 = a.astype(np.float64), bt.astype(np.float64)
    k = a.shape[1]
    with np.errstate(all="ignore"):
        prod = a64 @ b64.T if alpha != 0 else np.zeros((a.shape[0], bt.shape[0]))
        mag = abs(alpha) * (np.abs(a64) @ np.abs(b64).T) if alpha != 0 else 0.0
        exp = alpha * prod
        if beta != 0:
            exp = exp + beta * c0.astype(np.float64)
            mag = mag + abs(beta) * np.abs(c0.astype(np.float64))
    bound = gamma(-(-k // 2) + local + 2, U32) * mag + np.zeros(exp.shape)
    if c0.dtype == np.float16:
        bound = bound * (1 + U16) + U16 * np.abs(exp) + 2.0 ** -25
    return exp, bound


def assert_close(got: np.ndarray, exp: np.ndarray, bound: np.ndarray) -> None:
    got = got.astype(np.float64)
    fin = np.isfinite(exp)
    assert np.array_equal(np.isnan(got), np.isnan(exp)), "NaN where the reference has none (or the reverse)"
    err = np.abs(got[fin] - exp[fin])
    worst = np.max(err - bound[fin]) if err.size else 0
    assert np.all(err <= bound[fin]), f"error over the bound by {worst}"


def check_c(out: np.ndarray, exp: np.ndarray, bound: np.ndarray, ct: str, m: int, n: int, ldc: int,
            cf: np.ndarray) -> None:
    """C (flat ``out``, M x N with ``ldc``) against the reference: i32 exactly, else within
    ``bound``; every element outside the matrix bit for bit as uploaded (``cf``)."""
    got = rows_of(out, m, n, ldc)
    if ct == "i32":
        np.testing.assert_array_equal(got.astype(np.int64), exp)
    else:
        assert_close(got, exp, bound)
    pm = pad_mask(cf.size, m, n, ldc)
    assert np.array_equal(out[pm].view(np.uint8), cf[pm].view(np.uint8)), "C's padding changed"


def layout_source(layout: str, m, n, k, lda, ldb, ldc, ab: str, ct: str, dequant: bool = False,
                  batch=None, strides=None) -> str:
    """``gemm.matmul`` in ``layout`` (A stored K x M for layouts T?, B N x K for ?T), A/B ``ab``,
    C ``ct``; a None size or leading dimension is '?' (given at launch); ``batch`` (a count) with
    ``strides`` (A, B, C batch strides) makes it a strided batch; ``dequant``: int8 with
    ``scales(scale_row, scale_col)`` and f32 alpha/beta."""
    def d(x):
        return "?" if x is None else str(x)

    def mt(rows, cols, ld, t, st=None):
        if batch is not None:
            return f"memref<{d(batch)}x{d(rows)}x{d(cols)}x{t}, strided<[{d(st)}, {d(ld)}, 1]>>"
        return f"memref<{d(rows)}x{d(cols)}x{t}, strided<[{d(ld)}, 1]>>"
    sa, sb, sc = strides or (None, None, None)
    ta = mt(k, m, lda, ab, sa) if layout[0] == "T" else mt(m, k, lda, ab, sa)
    tb = mt(n, k, ldb, ab, sb) if layout[1] == "T" else mt(k, n, ldb, ab, sb)
    tc = mt(m, n, ldc, ct, sc)
    if dequant:
        sr, scl = f"memref<{d(m)}xf32>", f"memref<{d(n)}xf32>"
        return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: f32, %beta: f32, %sr: {sr}, %sc: {scl}) {{\n"
                f"  gemm.matmul %a, %b, %c, %alpha, %beta scales(%sr, %sc : {sr}, {scl}) {{layout = \"{layout}\"}}"
                f" : {ta}, {tb}, {tc}, f32, f32\n  func.return\n}}\n")
    st = SCALAR[ab]
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {st}, %beta: {st}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"{layout}\"}} : {ta}, {tb}, {tc}, {st}, {st}\n"
            "  func.return\n}\n")


#: What the buffers hold outside the matrices (NaN for floats, a byte pattern for integers):
#: a kernel that reads or writes there shows.
PAD = {"f16": np.float16(np.nan), "i8": np.int8(-77), "f32": np.float32(np.nan), "i32": np.int32(0x5A5A5A5A)}


def garbage_device():
    """A strict emulator whose fresh buffers (the plan's workspace among them) hold 0xFF bytes."""
    dev = get_device("emulator", strict=True)
    alloc = dev.alloc

    def filled(nbytes: int):
        buf = alloc(nbytes)
        dev.write(buf, np.full(nbytes, 0xFF, np.uint8))
        return buf
    dev.alloc = filled
    return dev


def check_strided_batch(kern, layout: str, a, b, c, ab: str, ct: str, m, n, k, lda, ldb, ldc, strides) -> None:
    """Launch ``kern`` on a strided batch (``a``, ``b``, ``c``: (batch, rows, cols) as stored for
    ``layout``; ``strides``: the batch strides in elements) with exactly-sized buffers padded
    with :data:`PAD` and a workspace of 0xFF bytes; every C matrix must match :func:`reference`
    (int8 -> i32 exactly), and everything between and beyond C's matrices keep its bits."""
    sa, sb, sc = strides
    nb = len(c)
    cf = flat_batch(c, ldc, sc, PAD[ct])
    alpha, beta = (3, -2) if ct == "i32" else (0.5, 2.0)
    out, _ = launch_dot(kern, flat_batch(a, lda, sa, PAD[ab]), flat_batch(b, ldb, sb, PAD[ab]), cf, alpha, beta,
                        m, n, k, lda, ldb, ldc, batch=nb, strides=(sa, sb, sc), device=garbage_device())
    gaps = np.ones(cf.size, bool)
    for z in range(nb):
        op_a = a[z] if layout[0] == "N" else a[z].T.copy()
        bt = b[z] if layout[1] == "T" else b[z].T.copy()
        exp, bound = reference(op_a, bt, c[z], alpha, beta)
        got = rows_of(out[z * sc:], m, n, ldc)
        if ct == "i32":
            np.testing.assert_array_equal(got.astype(np.int64), exp)
        else:
            assert_close(got, exp, bound)
        for i in range(m):
            gaps[z * sc + i * ldc:z * sc + i * ldc + n] = False
    assert np.array_equal(out[gaps].view(np.uint8), cf[gaps].view(np.uint8))


def check_general_and_beta0(kern, af, bf, op_a, bt, c, ct: str, m, n, k, lda, ldb, ldc, dev) -> None:
    """Launch ``kern`` twice on the padded stored operands ``af``, ``bf``: a general alpha/beta
    over ``c``, then alpha = 1, beta = 0 over a C filled with :data:`PAD` (NaN for floats: C
    must not be read); each result against :func:`reference` of ``op_a`` (M x K) and ``bt``
    (N x K), C's padding kept (:func:`check_c`)."""
    parts = kern.split_k * kern.local_split
    for alpha, beta, c0 in [(0.75 if ct != "i32" else 3, -1.5 if ct != "i32" else -2, c),
                            (1 if ct == "i32" else 1.0, 0, np.full_like(c, PAD[ct]))]:
        cf = exact(c0, ldc, PAD[ct])
        out, _ = launch_dot(kern, af, bf, cf, alpha, beta, m, n, k, lda, ldb, ldc, device=dev)
        exp, bound = reference(op_a, bt, c0, alpha, beta, parts)
        check_c(out, exp, bound, ct, m, n, ldc, cf)


def check_copies_workspace(kern, m: int, n: int, k: int, ldc: int, ab: str, copies: tuple) -> None:
    """A plan that copies B (and A when ``"A"`` is in ``copies``) first: its copy kernels, and a
    workspace of the split-K partials (S x M x ldc x 4 bytes when split) then (M +) N rows of
    ceil(K / P) P elements (passes/isel/transpose.py)."""
    assert kern.b_copy_kernel() is not None and (kern.transpose_kernel() is not None) == ("A" in copies)
    p = 2 if ab == "f16" else 4
    split = kern.split_k
    rows = (m if "A" in copies else 0) + n
    assert kern.workspace_bytes(m, ldc, k, n=n) == (split * m * ldc * 4 if split > 1 else 0) + rows * -(-k // p) * p * (
        2 if ab == "f16" else 1)
