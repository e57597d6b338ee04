"""The tests' own reference for GEMM results, written from the BLAS definition.

Independent of ``vlpc/api.py`` and ``vlpc/verify.py`` on purpose: a test that checks a
kernel's output against what vlpc itself computes as the answer (``r.verified``,
``vlpc.verify.tolerance``, ``vlpc.verify.apply_epilogue``) cannot catch a fault the product's
checker shares.  Nothing here imports vlpc.

What is computed (BLAS xGEMM, reference BLAS ``sgemm.f``/``dgemm.f`` and docs/inputs.md):

    C <- epilogue(alpha * op(A) * op(B) + beta * C)

* ``layout`` is BLAS ``transa``/``transb``: ``N`` = A stored M x K (B stored K x N),
  ``T`` = A stored K x M (B stored N x K).  Arrays are row-major *as stored*; the row
  stride (leading dimension) is the array's last extent, so a wider array is a larger
  lda/ldb/ldc.  3-D arrays are a batch (batch, rows, leading dimension); a batch stride
  of 0 or any other stride is expressed with :func:`batch_view`.
* Quick-return rules (reference BLAS): ``beta == 0`` -> C is not read (NaN/Inf in C do
  not reach the result); ``alpha == 0`` -> A and B are not read, C <- beta * C.
* Epilogues, in the order written, on D (docs/inputs.md): ``bias_row`` D + v[m],
  ``bias_col`` D + v[n], ``relu`` max(D, 0) (IEEE maxNum, the GCN ``v_max`` semantics:
  relu(NaN) = 0), ``gelu`` the tanh form
  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).  The bias vector is shared by the batch.
* The expected values are float64 (for f32 inputs every product is exact in float64).

The bound (:func:`gemm_reference`'s second result), element-wise, with
gamma_n = n u / (1 - n u) (Higham, *Accuracy and Stability of Numerical Algorithms*,
2nd ed., section 3.1, eq. 3.4 for a dot product; one more term per extra operation):

* D: gamma_{K+2} (|alpha| |op(A)| |op(B)| + |beta| |C|)  -- K FMAs, the alpha scaling,
  the beta*C product (the final add is counted by the + 2 as in Higham 3.5).
* each bias add: one more rounding, n += 1 and the magnitude gains |v|
  (|fl(d + v) - (d + v)| <= u (|d| + |v|)).
* relu is exact and 1-Lipschitz: the bound carries over.
* gelu: |gelu'(x)| <= 1.129 (at x = +-1.4185), so the bound is multiplied by 1.13, plus the
  evaluation error of the kernel's f32 formula (exp and reciprocal are 1-ULP
  approximations on GCN, then about 8 more roundings):  GELU_EVAL_ULPS * eps32 * (|x| + |gelu(x)|).
* the store: u |result| for the final rounding to the stored type (covers epilogues
  that end in a rounding the terms above do not count).
* underflow: (n + 2) * the smallest normal number of the type (flushed denormals).
* the float64 reference's own rounding: gamma_{n}(2^-53) times the magnitude (matters
  for f64 inputs, where the reference is no more exact than the kernel).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}
GELU_LIPSCHITZ = 1.13  # max |d/dx gelu_tanh(x)| = 1.12899 at x = +-1.4185 (computed on a 1e-5 grid)
GELU_EVAL_ULPS = 32     # allowance for the kernel's f32 evaluation of the tanh form, in f32 eps


def gamma(n: int, u: float) -> float:
    """Higham's gamma_n = n u / (1 - n u) (requires n u < 1)."""
    assert n * u < 1, (n, u)
    return n * u / (1 - n * u)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in float64 (docs/inputs.md's formula)."""
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x * x * x)))


def batch_view(buf: np.ndarray, batch: int, rows: int, ld: int, stride: int, offset: int = 0) -> np.ndarray:
    """A read-only (batch, rows, ld) view of a flat buffer, matrix z starting at offset + z*stride.

    ``stride`` may be 0 (every batch reads the same matrix), as a strided batched GEMM allows
    for A and B.  Raises ValueError if the view would reach past the buffer.
    """
    buf = np.asarray(buf).reshape(-1)
    last = offset + (batch - 1) * stride + (rows - 1) * ld + ld
    if offset < 0 or stride < 0 or last > buf.size:
        raise ValueError(f"batch view reaches element {last}, buffer has {buf.size}")
    item = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf[offset:], shape=(batch, rows, ld),
                                           strides=(stride * item, ld * item, item), writeable=False)


def _op(x: np.ndarray, trans: str, rows: int, cols: int) -> np.ndarray:
    """op(X) as a float64 rows x cols (logical) array from the stored array (last two axes)."""
    if trans == "N":
        v = x[..., :rows, :cols]
    elif trans == "T":
        v = np.swapaxes(x[..., :cols, :rows], -1, -2)
    else:
        raise ValueError(f"trans must be 'N' or 'T', got {trans!r}")
    if v.shape[-2:] != (rows, cols):
        raise ValueError(f"stored operand {x.shape} too small for op = {trans}, {rows} x {cols}")
    return v.astype(np.float64)


def sizes(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, layout: str) -> tuple[int, int, int]:
    """(M, N, K) implied by stored A and B (and C's row count) for ``layout``."""
    m = a.shape[-2] if layout[0] == "N" else a.shape[-1]
    k = a.shape[-1] if layout[0] == "N" else a.shape[-2]
    n = b.shape[-1] if layout[1] == "N" else b.shape[-2]
    if c is not None:
        m = c.shape[-2]
    return m, n, k


def gemm_reference(a: np.ndarray | None, b: np.ndarray | None, c: np.ndarray | None,
                   alpha: float, beta: float, *, layout: str = "NN",
                   m: int | None = None, n: int | None = None, k: int | None = None,
                   epilogue: Sequence[str] = (), bias: np.ndarray | None = None,
                   dtype: str | type | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(expected, bound): float64 arrays of shape (M, N), or (batch, M, N) for 3-D operands.

    ``a``, ``b``, ``c``: stored operands (see the module docstring); only the logical
    M x K / K x N / M x N part is read, and, per BLAS, C only when beta != 0 and A, B only
    when alpha != 0 (``None`` is accepted for an operand that is not read).  Sizes default
    to the stored arrays' (without padding: pass m/n/k when arrays are wider than the data).
    ``dtype``: the kernel's element type, "f32"/"f64" (default: A's, else C's dtype).
    """
    if len(layout) != 2 or set(layout) - {"N", "T"}:
        raise ValueError(f"layout must be NN, NT, TN or TT, got {layout!r}")
    ref_arr = next(x for x in (a, c, b) if x is not None)
    dt = np.dtype({"f32": np.float32, "f64": np.float64}.get(dtype, dtype) if dtype is not None else ref_arr.dtype)
    u = UNIT_ROUNDOFF[dt]
    if a is not None and b is not None:
        m0, n0, k0 = sizes(a, b, c, layout)
        m, n, k = m if m is not None else m0, n if n is not None else n0, k if k is not None else k0
    if c is not None and (m is None or n is None):
        m, n = m if m is not None else c.shape[-2], n if n is not None else c.shape[-1]
    if None in (m, n, k):
        raise ValueError("give m, n and k when an operand is omitted")
    batch_shape = np.broadcast_shapes(*(np.shape(x)[:-2] for x in (a, b, c) if x is not None))
    alpha, beta = float(alpha), float(beta)

    if alpha != 0.0:
        op_a, op_b = _op(a, layout[0], m, k), _op(b, layout[1], k, n)
        prod = op_a @ op_b
        mag_prod = abs(alpha) * (np.abs(op_a) @ np.abs(op_b))
    else:  # quick return: A and B are not read
        prod = np.zeros((*batch_shape, m, n))
        mag_prod = np.zeros_like(prod)
    if beta != 0.0:
        c0 = np.asarray(c)[..., :m, :n].astype(np.float64)
        if c0.shape[-2:] != (m, n):
            raise ValueError(f"C {np.shape(c)} is smaller than M x N = {m} x {n}")
        d = alpha * prod + beta * c0 if alpha != 0.0 else beta * c0
        mag = mag_prod + abs(beta) * np.abs(c0)
    else:  # quick return: C is not read
        d = alpha * prod if alpha != 0.0 else np.zeros_like(prod)
        mag = mag_prod

    terms = k + 2
    bound_nonlinear = None  # the propagated bound once a non-linear op has run
    for op in epilogue:
        if op in ("bias_row", "bias_col"):
            v = np.asarray(bias, np.float64)
            want = m if op == "bias_row" else n
            if v.shape != (want,):
                raise ValueError(f"{op} needs a bias of length {want}, got {v.shape}")
            v = v[:, None] if op == "bias_row" else v[None, :]
            d = d + v
            if bound_nonlinear is None:
                terms += 1
                mag = mag + np.abs(v)
            else:  # after a non-linear op: the propagated bound plus this add's rounding
                bound_nonlinear = bound_nonlinear + u * (np.abs(d) + bound_nonlinear)
        elif op == "relu":
            if bound_nonlinear is None:
                bound_nonlinear = (gamma(terms, u) + gamma(terms, 2.0**-53)) * mag
            d = np.fmax(d, 0.0)  # IEEE 754-2008 maxNum, as v_max_f32/v_max_f64 compute: relu(NaN) = 0
        elif op == "gelu":
            if bound_nonlinear is None:
                bound_nonlinear = (gamma(terms, u) + gamma(terms, 2.0**-53)) * mag
            g = gelu_tanh(d)
            bound_nonlinear = (GELU_LIPSCHITZ * bound_nonlinear
                               + GELU_EVAL_ULPS * float(np.finfo(np.float32).eps) * (np.abs(d) + np.abs(g)))
            d = g
        elif op:
            raise ValueError(f"unknown epilogue operation {op!r}")
    if bound_nonlinear is None:
        bound = (gamma(terms, u) + gamma(terms, 2.0**-53)) * mag
    else:
        bound = bound_nonlinear
    # underflow (Higham (2.8) with gradual underflow: vlpc's kernels keep subnormals, FLOAT_DENORM_MODE
    # 3): at most half the smallest subnormal per operation, the kernel's and the reference's; gelu's
    # v_exp_f32 / v_rcp_f32 may flush: the smallest normal per gelu
    fi = np.finfo(dt)
    bound = (bound + u * np.abs(d) + (terms + 2) * float(fi.smallest_subnormal)
             + sum(op == "gelu" for op in epilogue) * float(fi.tiny))
    return d, bound


def assert_gemm_close(c: np.ndarray, expected: np.ndarray, bound: np.ndarray | float, what: str = "C") -> None:
    """Assert |c - expected| <= bound element-wise; NaN expected -> NaN, +-Inf expected -> the same Inf.

    The failure message counts the elements outside the bound and names the worst one
    (largest error / bound): index, value, expected value, error and bound.
    """
    got = np.asarray(c, np.float64)
    exp = np.asarray(expected, np.float64)
    bnd = np.broadcast_to(np.asarray(bound, np.float64), exp.shape)
    if got.shape != exp.shape:
        raise AssertionError(f"{what}: shape {got.shape}, expected {exp.shape}")
    nan_exp = np.isnan(exp)
    inf_exp = np.isinf(exp)
    fin = ~(nan_exp | inf_exp)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(fin, np.abs(got - exp), 0.0)
        bad = (nan_exp & ~np.isnan(got)) | (inf_exp & (got != exp)) | (fin & ~(err <= bnd))
        ratio = np.where(fin, err / np.maximum(bnd, np.finfo(np.float64).tiny), 0.0)
    ratio = np.where(bad & ~fin, np.inf, ratio)
    ratio = np.where(np.isnan(ratio), np.inf, ratio)
    if bad.any():
        worst = np.unravel_index(int(np.argmax(np.where(bad, ratio, -1.0))), exp.shape)
        idx = ",".join(str(int(i)) for i in worst)
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} elements outside the bound; worst {what}[{idx}] = "
            f"{float(got[worst])!r}, expected {float(exp[worst])!r} (|error| {err[worst]:.3e}, bound {bnd[worst]:.3e})")


def assert_padding_untouched(after: np.ndarray, before: np.ndarray, cols: int, what: str = "C") -> None:
    """Columns ``cols:`` (the padding beyond N) are bit-identical before and after (NaN payloads too)."""
    a, b = np.ascontiguousarray(after[..., cols:]), np.ascontiguousarray(before[..., cols:])
    if a.shape != b.shape:
        raise AssertionError(f"{what}: padding shapes differ, {a.shape} vs {b.shape}")
    if a.size == 0:
        return
    width = a.itemsize
    differs = (a.view(np.uint8).reshape(a.shape + (width,)) != b.view(np.uint8).reshape(b.shape + (width,))).any(axis=-1)
    if differs.any():
        first = tuple(int(x) for x in np.argwhere(differs)[0])
        raise AssertionError(f"{what}: {int(differs.sum())} padding elements beyond column {cols} were modified; "
                             f"first at {first[:-1] + (first[-1] + cols,)}: {float(a[first])!r}, was {float(b[first])!r}")


def check_run(r, epilogue: Sequence[str] | None = None) -> None:
    """Check a ``vlpc.run`` result ``r`` against this module from its inputs (not ``r.verified``).

    Uses ``r.inputs`` (A, B, C0 and bias as launched), ``r.alpha``/``r.beta``, the kernel's
    layout and the problem's sizes; the epilogue defaults to the kernel's.
    """
    p = r.problem
    if epilogue is None:
        epilogue = [x for x in str(r.kernel.launch_info.get("epilogue", "")).split(",") if x]
    exp, bound = gemm_reference(r.inputs["A"], r.inputs["B"], r.inputs["C"], r.alpha, r.beta,
                                layout=r.kernel.layout, m=p.m, n=p.n, k=p.k, epilogue=epilogue,
                                bias=r.inputs.get("bias"), dtype=r.inputs["C"].dtype)
    assert_gemm_close(r.c, exp, bound)
