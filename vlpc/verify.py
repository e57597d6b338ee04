"""The one reference and the one error bound that ``vlpc run`` and ``vlpc.run`` check C against.

**Reference** (float64 NumPy, BLAS semantics as in reference BLAS ``xGEMM`` and rocBLAS):
``D = alpha * op(A) op(B) + beta * C``, then the fused epilogue in order.  ``alpha = 0``
means A and B are not read (D = beta * C, so NaN/Inf in A or B never enter it);
``beta = 0`` means C is not read (NaN/Inf in C never enter it).  Non-finite values in
operands that *are* read propagate as IEEE arithmetic says (each product summed, not a
BLAS library's shortcut).  ``relu`` is ``max(x, 0)`` with IEEE 754-2008 maxNum semantics,
what ``v_max_f32``/``v_max_f64`` compute: ``relu(NaN) = 0``.  ``gelu`` is the tanh form the
kernel computes (:func:`gelu_tanh`); ``silu`` is ``x sigmoid(x)``.

**Error bound**, element-wise, for a kernel computing in precision u (f32: 2^-24,
f64: 2^-53).  Sources: N. J. Higham, *Accuracy and Stability of Numerical Algorithms*,
2nd ed., SIAM 2002: the model of floating-point arithmetic ``fl(x op y) = (x op y)(1 + d)
+ e``, ``|d| <= u``, ``|e| <= u tiny`` (section 2.2, eq. (2.8), with gradual underflow), and
the dot-product bound of section 3.1, eq. (3.5): ``|fl(x^T y) - x^T y| <= gamma_K |x|^T |y|``
with ``gamma_n = n u / (1 - n u)`` (Lemma 3.1); it holds for any summation order, so also
for split-K (partials summed in slice order, or by atomics).  Terms:

1. the product and the scaling: ``gamma_(K+2) (|alpha| |op(A)| |op(B)| + |beta| |C|)`` (the
   K-term dot product, one rounding for alpha and one for adding beta*C);
2. each epilogue operation, applied to the bound ``e`` of its input ``x`` giving ``y``:
   bias add ``e (1 + u) + u |y|`` (one rounding); relu ``e`` (1-Lipschitz, exact);
   gelu ``L e + u |y| (8 + 4 |z|)``, L = 1.13 >= max |gelu'| (1.1289, at x = 2.42),
   z = the argument of ``v_exp_f32`` (an error in z is relative ``ln 2 |z| u`` in the
   exponential; ``v_exp_f32`` and ``v_rcp_f32`` are 1-ulp approximations and the form has
   five more roundings); silu (``x / (1 + 2^(-x log2 e))``: ``v_exp_f32``, ``v_rcp_f32``)
   ``1.1 e + u |y| (8 + 4 |z|)``, 1.1 >= max |silu'| (1.0998, at x = 2.4), z = -x log2 e;
3. the store: ``u |D|``, the rounding of the value written to C in its precision;
4. underflow: ``(K + 3) * the smallest subnormal`` (the kernels keep subnormals, so each
   operation's absolute term of eq. (2.8) is at most half of it, the reference's another
   half) plus ``tiny`` (the smallest normal number) per epilogue op (a transcendental may flush);
5. the float64 reference's own rounding: the same bound evaluated with u = 2^-53 (as large
   as the kernel's for f64; negligible for f32).

A result element is right when it is within the bound of the reference, or, where the
reference is not finite, when it is the same NaN/Inf (an f32 result beyond the largest
finite number may be the infinity of the reference's sign).  Elements of C outside the
M x N matrices (padding columns beyond N, gaps between batch matrices) must keep their
bit patterns (NaN compares equal to the same NaN).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vlpc.errors import VlpcError

UNIT_ROUNDOFF = {"f32": 2.0**-24, "f64": 2.0**-53}
NP_DTYPE = {"f32": np.float32, "f64": np.float64}
#: NumPy types of every element type (f32/f64 kernels; the dot kernels: A/B f16 or i8, C f32, f16 or i32).
NP = {"f64": np.float64, "f32": np.float32, "f16": np.float16, "i8": np.int8, "i32": np.int32}
#: Padding of each element type in exactly sized buffers (NaN for floats, a garbage pattern for integers).
PAD = {"f64": np.nan, "f32": np.nan, "f16": np.nan, "i8": -77, "i32": 0x5A5A5A5A}
U32 = 2.0 ** -24
U16 = 2.0 ** -11
TINY32 = 2.0 ** -126  # the smallest normal f32
#: f16's largest finite value (65504) plus half its spacing there (32 / 2): an f32 value of at
#: least this magnitude rounds to +-Inf in f16 (round to nearest even, IEEE 754).
F16_OVERFLOW = 65520.0
#: max over x of |d/dx gelu_tanh(x)| is 1.1289 (at x = 2.42); the bound uses 1.13.
GELU_LIPSCHITZ = 1.13
#: max |d/dx x sigmoid(x)| = 1.0998 (at x = 2.3994), rounded up: the silu bound's factor.
SILU_LIPSCHITZ = 1.1
#: the scale of gelu_tanh's exponent: v_exp_f32 computes 2^z, z = -2 log2(e) sqrt(2/pi) (x + 0.044715 x^3)
_GELU_Z = -2.0 * np.log2(np.e) * np.sqrt(2.0 / np.pi)


@dataclass
class Problem:
    """Sizes (elements), leading dimensions and batch strides (elements) of one GEMM launch.

    ``batch = 0`` is a plain GEMM; ``batch >= 1`` a strided batch of that many products,
    matrix z of A starting at element ``z * stride_a`` (likewise B, C; a stride may be 0
    for A or B: one matrix shared by every product).
    """

    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    batch: int = 0
    stride_a: int = 0
    stride_b: int = 0
    stride_c: int = 0

    @property
    def batches(self) -> int:
        """Products computed: ``batch``, or 1 for a plain GEMM."""
        return max(1, self.batch)


@dataclass(frozen=True)
class Geometry:
    """Where one operand's matrices lie in its buffer (all in elements)."""

    rows: int
    cols: int
    ld: int
    stride: int
    batches: int

    @property
    def size(self) -> int:
        """Elements of an exactly sized buffer: the last matrix's last element ends it."""
        return (self.batches - 1) * self.stride + (self.rows - 1) * self.ld + self.cols

    def offsets(self) -> np.ndarray:
        """Element offsets (batches, rows, cols) of every matrix element."""
        z = np.arange(self.batches)[:, None, None] * self.stride
        i = np.arange(self.rows)[None, :, None] * self.ld
        j = np.arange(self.cols)[None, None, :]
        return z + i + j

    def matrices(self, flat: np.ndarray) -> np.ndarray:
        """The matrices of a flat buffer, (batches, rows, cols), as a read-only view."""
        if flat.size < self.size:
            raise ValueError(f"buffer of {flat.size} elements is smaller than the {self.size} the matrices span")
        isz = flat.itemsize
        return np.lib.stride_tricks.as_strided(flat, (self.batches, self.rows, self.cols),
                                               (self.stride * isz, self.ld * isz, isz), writeable=False)

    def outside(self, size: int) -> np.ndarray:
        """Mask of the ``size`` buffer elements that belong to no matrix (padding, gaps)."""
        mask = np.ones(size, bool)
        mask[self.offsets().reshape(-1)] = False
        return mask


def types_of(kernel) -> tuple[str, str, bool]:
    """(A/B element type, C element type, dequantizing) of a compiled kernel: ``("f32", "f32",
    False)``, ``("f16", "f16", False)``, ``("i8", "i32", False)``, ``("i8", "f32", True)`` (W8A8) ..."""
    li = kernel.launch_info
    ab = str(li.get("dtype", "f32"))
    ct = str(li.get("c_dtype", "f32" if ab in ("f16", "i8") else ab))
    return ab, ct, ab == "i8" and ct != "i32"


def scalar_type(kernel) -> type:
    """NumPy type of alpha and beta: i32 for int8 -> i32, f64 for f64, else f32."""
    ab, ct, _ = types_of(kernel)
    return np.int32 if ab == "i8" and ct == "i32" else NP_DTYPE.get(ab, np.float32)


def geometries(layout: str, p: Problem) -> dict[str, Geometry]:
    """A, B and C as stored for ``layout`` (``"NT"``: A is M x K, B is N x K)."""
    nb = p.batches
    return {"A": Geometry(p.m if layout[0] == "N" else p.k, p.k if layout[0] == "N" else p.m, p.lda, p.stride_a, nb),
            "B": Geometry(p.k if layout[1] == "N" else p.n, p.n if layout[1] == "N" else p.k, p.ldb, p.stride_b, nb),
            "C": Geometry(p.m, p.n, p.ldc, p.stride_c, nb)}


def op_matrices(layout: str, p: Problem, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """op(A) (batches x M x K) and op(B) (batches x K x N) of flat stored buffers ``a``, ``b``."""
    g = geometries(layout, p)
    am, bm = g["A"].matrices(a), g["B"].matrices(b)
    return (am if layout[0] == "N" else am.transpose(0, 2, 1)), (bm if layout[1] == "N" else bm.transpose(0, 2, 1))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (what the kernel computes).

    Its largest difference from the erf form 0.5 x (1 + erf(x / sqrt(2))) is about 4.7e-4
    (near |x| = 2), as measured by tests/passes/test_epilogue.py.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def apply_epilogue(d: np.ndarray, ops, bias: np.ndarray | None) -> np.ndarray:
    """The reference for a fused epilogue: ``ops`` in order on D (float64).  ``bias`` has
    length M (``bias_row``: + v[m]) or N (``bias_col``: + v[n]); relu is maxNum (relu(NaN) = 0)."""
    for x in ops:
        if x == "bias_row":
            d = d + np.asarray(bias, np.float64)[:, None]
        elif x == "bias_col":
            d = d + np.asarray(bias, np.float64)[None, :]
        elif x == "relu":
            d = np.fmax(d, 0.0)
        elif x == "gelu":
            d = gelu_tanh(d)
        elif x == "silu":
            with np.errstate(over="ignore", invalid="ignore"):
                d = d / (1.0 + np.exp(-d))
        elif x:
            raise VlpcError(f"unknown epilogue operation '{x}'")
    return d


def epilogue_step(op: str, x: np.ndarray, e: np.ndarray, u: float, bias: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """One fused-epilogue operation ``op`` on the reference ``x`` (float64) and its bound ``e``,
    for a kernel rounding with unit roundoff ``u`` (module docstring, term 2): ``(y, bound of
    y)``.  Shared by :func:`error_bound` and :func:`dot_error_bound`."""
    y = apply_epilogue(x, (op,), bias)
    with np.errstate(invalid="ignore", over="ignore"):
        if op.startswith("bias"):
            e = e * (1 + u) + u * np.abs(y)
        elif op == "gelu":
            z = _GELU_Z * (x + 0.044715 * x**3)
            e = GELU_LIPSCHITZ * e + u * np.abs(y) * (8 + 4 * np.abs(z))
        elif op == "silu":
            e = SILU_LIPSCHITZ * e + u * np.abs(y) * (8 + 4 * np.log2(np.e) * np.abs(x))
    return y, e


def _product(op_a: np.ndarray, op_b: np.ndarray) -> np.ndarray:
    """op_a @ op_b in float64, with IEEE propagation of NaN/Inf (BLAS libraries may skip zeros)."""
    a = np.asarray(op_a, np.float64)
    b = np.asarray(op_b, np.float64)
    if np.isfinite(a).all() and np.isfinite(b).all():
        return a @ b
    out = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]))
    with np.errstate(invalid="ignore", over="ignore"):
        for kk in range(a.shape[-1]):
            out = out + a[..., :, kk, None] * b[..., None, kk, :]
    return out


def reference(op_a: np.ndarray, op_b: np.ndarray, c0: np.ndarray, alpha: float, beta: float,
              epilogue=(), bias: np.ndarray | None = None, scales: tuple | None = None) -> np.ndarray:
    """``epilogue(alpha op_a op_b + beta c0)`` in float64 with BLAS's quick returns: A and B
    are not read when alpha = 0, C is not read when beta = 0.  Shapes ``(..., M, K)``,
    ``(..., K, N)``, ``(..., M, N)``; ``op_a``/``op_b`` f64, f32, f16 (every f16 product is exact
    in float64) or i8.  int8 without ``scales`` (int8 -> i32): exact NumPy int64 math wrapped to
    32 bits (int64 result, no epilogue).  int8 with ``scales = (scale_row (M), scale_col (N))``
    (W8A8 dequantization): the exact integer sum times ``scale_row[m] * scale_col[n]``."""
    shape = np.broadcast_shapes(op_a.shape[:-2], op_b.shape[:-2], c0.shape[:-2]) + c0.shape[-2:]
    integer = np.issubdtype(op_a.dtype, np.integer)
    if integer and scales is None:
        prod = np.einsum("zmk,zkn->zmn", op_a.astype(np.int64), op_b.astype(np.int64)) if alpha != 0 else 0
        res = np.int64(alpha) * prod + (np.int64(beta) * c0.astype(np.int64) if beta != 0 else 0)
        return ((res + 2**31) % 2**32 - 2**31).astype(np.int64) + np.zeros(shape, np.int64)
    d = np.zeros(shape)
    with np.errstate(invalid="ignore", over="ignore"):
        if alpha != 0:
            d = d + float(alpha) * _scaled_product(op_a, op_b, scales)
        if beta != 0:
            d = d + float(beta) * np.asarray(c0, np.float64)
        return apply_epilogue(d, epilogue, bias)


def _scaled_product(op_a: np.ndarray, op_b: np.ndarray, scales: tuple | None) -> np.ndarray:
    """op_a @ op_b in float64: int8 exactly (then times the W8A8 ``scales``), floats by :func:`_product`."""
    if not np.issubdtype(op_a.dtype, np.integer):
        return _product(op_a, op_b)
    prod = np.einsum("zmk,zkn->zmn", op_a.astype(np.int64), op_b.astype(np.int64)).astype(np.float64)
    if scales is None:
        return prod
    sr, sc = (np.asarray(x, np.float64) for x in scales)
    return sr[None, :, None] * sc[None, None, :] * prod


def error_bound(op_a: np.ndarray, op_b: np.ndarray, c0: np.ndarray, alpha: float, beta: float, k: int,
                dtype: str = "f32", epilogue=(), bias: np.ndarray | None = None,
                reference_u: float | None = 2.0**-53, *, c_type: str | None = None, pieces: int = 1,
                scales: tuple | None = None, rounds: int | None = None) -> np.ndarray:
    """The element-wise bound (``(..., M, N)``) of a kernel whose A and B are ``dtype``: ``"f32"``/
    ``"f64"``, the module docstring's, checked against a reference in float64 (``reference_u=None``
    leaves the reference's own rounding out); ``"f16"``/``"i8"`` (the dot kernels, C ``c_type``,
    default f32), :func:`dot_error_bound` (int8 -> i32: 0, exact)."""
    if dtype not in NP_DTYPE:
        return dot_error_bound(op_a, op_b, c0, alpha, beta, dtype, c_type or "f32", pieces, scales, epilogue, bias,
                               rounds)
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.zeros(np.broadcast_shapes(op_a.shape[:-2], op_b.shape[:-2], c0.shape[:-2]) + c0.shape[-2:])
        if alpha != 0:
            mag = mag + abs(float(alpha)) * _product(np.abs(np.asarray(op_a, np.float64)),
                                                     np.abs(np.asarray(op_b, np.float64)))
        if beta != 0:
            mag = mag + abs(float(beta)) * np.abs(np.asarray(c0, np.float64))
        x = reference(op_a, op_b, c0, alpha, beta, (), None)
        total = np.zeros_like(mag)
        for u in (UNIT_ROUNDOFF[dtype], reference_u):
            if u is None:
                continue
            n = k + 2
            e = n * u / (1 - n * u) * mag
            y = x
            for op in epilogue:
                y, e = epilogue_step(op, x, e, u, bias)
                x = y
            e = e + u * np.abs(y)  # the store
            total = total + e
        # the kernels keep subnormals (FLOAT_DENORM_MODE 3): an FMA's underflow error is at most
        # half the smallest subnormal (Higham (2.8), gradual underflow), and so is the reference's;
        # an epilogue's v_exp_f32 / v_rcp_f32 may flush: the smallest normal per epilogue operation
        fi = np.finfo(NP_DTYPE[dtype])
        return total + (k + 3) * float(fi.smallest_subnormal) + len(epilogue) * float(fi.tiny)


def gamma(n: int, u: float) -> float:
    """Higham's ``gamma_n = n u / (1 - n u)`` (Lemma 3.1)."""
    return n * u / (1 - n * u)


def dot_error_bound(op_a: np.ndarray, op_b: np.ndarray, c0: np.ndarray, alpha, beta, ab: str, ct: str,
                    pieces: int = 1, scales: tuple | None = None, epilogue=(), bias: np.ndarray | None = None,
                    rounds: int | None = None) -> np.ndarray:
    """The element-wise bound (``(batches, M, N)``) of the f16/int8 dot kernels (A/B ``ab``, C
    ``ct``; docs/kernels.md "f16 and int8 through the dot instructions").  int8 -> i32: 0 (exact).
    f16: ``gamma_n(2^-24) (|alpha| |A||B| + |beta||C|)`` with ``n = ceil(K/2) + pieces + 2`` (one
    rounding per dot instruction, per addition of split-K / local-split partials, and the
    epilogue's two; Higham 2002 eq. 3.4), or ``n = rounds`` when the kernel rounds fewer times
    (the quantized GEMV: vlpc/quant_run.py).  Dequantized int8 (``scales``): the exact i32 sum,
    then conversion, two scale products, beta * C and the FMA: ``gamma_5(2^-24)`` times the
    magnitudes.  ``epilogue``, in f32 before C's rounding: :func:`epilogue_step` with u = 2^-24
    plus 2^-126 for a flushed subnormal per operation.  f16 C adds its rounding to f16:
    ``2^-11 |result| + 2^-25``."""
    if ab == "i8" and scales is None:
        return np.zeros(np.broadcast_shapes(op_a.shape[:-2], op_b.shape[:-2], c0.shape[:-2]) + c0.shape[-2:])
    k = op_a.shape[2]
    with np.errstate(all="ignore"):
        if ab == "i8":
            d = np.abs(_scaled_product(op_a, op_b, scales)) if alpha != 0 else np.zeros(c0.shape)
            mag = abs(alpha) * d
            n_round = 5
        else:
            a64, b64 = op_a.astype(np.float64), op_b.astype(np.float64)
            mag = abs(alpha) * (np.abs(a64) @ np.abs(b64)) if alpha != 0 else np.zeros(c0.shape)
            n_round = rounds if rounds is not None else -(-k // 2) + pieces + 2
        if beta != 0:
            mag = mag + abs(beta) * np.abs(c0.astype(np.float64))
        bound = gamma(n_round, U32) * mag
        x = reference(op_a, op_b, c0, alpha, beta, (), None, scales)
        for op in epilogue:  # each operation's reference and bound, in f32
            x, bound = epilogue_step(op, x, bound, U32, bias)
            bound = bound + TINY32  # a flushed f32 subnormal (gelu's x / (1 + e) near 0)
        if ct == "f16":
            bound = bound * (1 + U16) + U16 * np.abs(x) + 2.0 ** -25
    return bound


def reference_and_bound(op_a: np.ndarray, op_b: np.ndarray, c0: np.ndarray, alpha, beta, ab: str, ct: str,
                        pieces: int = 1, scales: tuple | None = None, epilogue=(), bias: np.ndarray | None = None,
                        rounds: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`reference`, :func:`dot_error_bound`) per element, (batches, M, N), of a dot kernel's
    ``op_a`` (batches, M, K) and ``op_b`` (batches, K, N) as stored types."""
    return (reference(op_a, op_b, c0, alpha, beta, epilogue, bias, scales),
            error_bound(op_a, op_b, c0, alpha, beta, op_a.shape[-1], ab, epilogue, bias, c_type=ct, pieces=pieces,
                        scales=scales, rounds=rounds))


def with_residual(expected: tuple[np.ndarray, np.ndarray], r: np.ndarray, ct: str) -> tuple[np.ndarray, np.ndarray]:
    """(reference, bound) of ``D = x + R`` from ``expected``, x's (reference, bound) in f32 (before C's
    rounding: the kernels add R in f32 after the fused epilogue), and ``r`` (R, shaped as C): one more
    f32 rounding, then f16 C's (``ct``)."""
    with np.errstate(all="ignore"):
        exp = expected[0] + np.asarray(r, np.float64)
        bound = expected[1] + U32 * np.abs(exp)
        if ct == "f16":
            bound = bound * (1 + U16) + U16 * np.abs(exp) + 2.0 ** -25
    return exp, bound


def tolerance(a: np.ndarray, bt: np.ndarray, c0: np.ndarray, alpha: float, beta: float, k: int,
              dtype: str = "f32") -> np.ndarray:
    """:func:`error_bound` without an epilogue for ``alpha * a @ bt.T + beta * c0`` (``a`` M x K,
    ``bt`` N x K)."""
    return error_bound(np.asarray(a), np.asarray(bt).T, np.asarray(c0), alpha, beta, k, dtype)


def worst_error_text(worst: float) -> str:
    """The worst element's error against its bound in words: ``within the error bound (83 % of
    it used)`` (a pass: ``worst`` <= 1), ``1.5 x the error bound`` (a failure) or ``a wrong
    NaN/Inf`` (``worst`` infinite).  ``worst``: max over elements of |error| / bound."""
    if np.isinf(worst):
        return "a wrong NaN/Inf"
    if worst <= 1:
        pct = worst * 100
        return f"within the error bound ({pct:.0f} % of it used)" if pct >= 10 else \
            f"within the error bound ({pct:.2g} % of it used)"
    return f"{worst:.3g} x the error bound"


@dataclass
class Verdict:
    """The check of one launch's C: matrix elements against the bound, padding bit for bit."""

    ok: bool
    elements: int                    #: matrix elements checked (batches x M x N)
    bad: int                         #: elements outside the bound (or the wrong NaN/Inf)
    worst: float                     #: max over elements of |error| / bound (inf: a wrong NaN/Inf)
    max_abs_error: float             #: over the finite elements
    max_bound: float                 #: the largest element-wise bound
    first_bad: str = ""              #: where and what, for the message
    padding_modified: int = 0        #: elements outside the matrices whose bits changed
    first_padding: str = ""
    reference: np.ndarray | None = field(default=None, repr=False)  #: float64, (batches, M, N)
    bound: np.ndarray | None = field(default=None, repr=False)

    def summary(self) -> str:
        """One line: what the bound judged (:func:`worst_error_text`: the worst error within the
        bound, as the share of it used, or a multiple of it)."""
        return (f"max error {worst_error_text(self.worst)} (max abs error {self.max_abs_error:.3e}, largest bound "
                f"{self.max_bound:.3e}: Higham's gamma_(K+2)(|alpha||A||B|+|beta||C|) + epilogue and "
                f"store roundings, see vlpc/verify.py)")

    def failure(self) -> str:
        """One line naming what failed (empty when ``ok``)."""
        parts = []
        if self.bad:
            parts.append(f"{self.bad} of {self.elements} elements outside the error bound (worst "
                         f"{worst_error_text(self.worst)}); "
                         f"{self.first_bad}")
        if self.padding_modified:
            parts.append(f"{self.padding_modified} elements of C outside the M x N matrices were modified; "
                         f"{self.first_padding}")
        return "; ".join(parts)


def _where(p: Problem, z: int, i: int, j: int) -> str:
    return f"C[{z}][{i},{j}]" if p.batch else f"C[{i},{j}]"


class DotVerdict(Verdict):
    """A :class:`Verdict` whose summary names the dot kernels' bound (:func:`dot_error_bound`)."""

    #: C is i32 (int8 -> i32): compared bit for bit (an all-NaN float C also has bound 0)
    exact: bool = False

    def summary(self) -> str:
        if self.exact and not np.isinf(self.worst):
            return "int8 -> i32 results exact (compared bit for bit with NumPy int64 math wrapped to 32 bits)"
        return (f"max error {worst_error_text(self.worst)} (max abs error {self.max_abs_error:.3e}, largest bound {self.max_bound:.3e}: "
                "f32 accumulation of exact f16 (or int8) products, gamma_n(2^-24) bound of vlpc/verify.py)")


def check(layout: str, p: Problem, dtype: str, a: np.ndarray, b: np.ndarray, c0: np.ndarray,
          out: np.ndarray, alpha: float, beta: float, epilogue=(), bias: np.ndarray | None = None, *,
          c_type: str | None = None, pieces: int = 1, scales: tuple | None = None, op_b: np.ndarray | None = None,
          rounds: int | None = None, expected: tuple | None = None) -> Verdict:
    """Check ``out`` (C after the launch) against the reference and bound of ``a``, ``b``,
    ``c0``, the buffers as launched.  All four are flat arrays of the buffers (at least the
    exact size of :class:`Geometry`); element offsets follow ``p`` and ``layout``.  ``dtype``:
    the element type of A and B (``f32``/``f64``: :func:`error_bound`; ``f16``/``i8``, the dot
    kernels: :func:`dot_error_bound` with C of type ``c_type`` (default f32), ``pieces`` partial
    sums, W8A8 ``scales``; ``op_b``: op(B) (batches, K, N) itself instead of ``b``'s, e.g.
    dequantized weights; ``rounds``: the f16 bound's n; ``expected``: the (reference, bound)
    pair itself, e.g. a SwiGLU's: vlpc/quant_run.py)."""
    if dtype not in NP_DTYPE:
        return _check_dot(layout, p, dtype, c_type or "f32", a, b, c0, out, alpha, beta, pieces, scales,
                          epilogue, bias, op_b, rounds, expected)
    a, b, c0, out = (np.asarray(x).reshape(-1) for x in (a, b, c0, out))
    g = geometries(layout, p)
    op_a, op_b = op_matrices(layout, p, a, b)
    cm = g["C"].matrices(c0)
    ref = reference(op_a, op_b, cm, alpha, beta, epilogue, bias)
    bound = error_bound(op_a, op_b, cm, alpha, beta, p.k, dtype, epilogue, bias)
    got = g["C"].matrices(out).astype(np.float64)
    fin = np.isfinite(ref)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(got - ref)
        ok = np.where(fin, err <= bound, (got == ref) | (np.isnan(got) & np.isnan(ref)))
        big = float(np.finfo(NP_DTYPE[dtype]).max)
        overflow = fin & np.isinf(got) & (np.abs(ref) + bound > big) & (np.sign(got) == np.sign(ref))
        ok |= overflow
        ratio = np.where(fin & ~overflow, err / np.where(bound > 0, bound, np.inf), 0.0)
        ratio = np.where(ok | fin, ratio, np.inf)
        ratio = np.where(np.isnan(ratio), np.inf, ratio)
    return finish_verdict(Verdict, p, g["C"], ref, bound, got, err, ratio, ~ok, fin, c0, out)


def _check_dot(layout: str, p: Problem, ab: str, ct: str, a, b, c0, out, alpha, beta, pieces, scales, epilogue,
               bias, op_b, rounds, expected) -> Verdict:
    """:func:`check` for the dot kernels: i32 C bit for bit, f16 C allowed f16's overflow to Inf."""
    g = geometries(layout, p)
    cm = g["C"].matrices(c0)
    if expected is not None:
        ref, bound = expected
    else:
        if op_b is None:
            op_a, op_b = op_matrices(layout, p, a, b)
        else:
            op_a = g["A"].matrices(a)
        ref, bound = reference_and_bound(op_a, op_b, cm, alpha, beta, ab, ct, pieces, scales, epilogue, bias, rounds)
    got = g["C"].matrices(out)
    if ct == "i32":
        bad = got.astype(np.int64) != ref
        err = np.abs(got.astype(np.int64) - ref).astype(np.float64)
        ratio = np.where(bad, np.inf, 0.0)
        fin = np.ones(ref.shape, bool)
    else:
        got = got.astype(np.float64)
        fin = np.isfinite(ref)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            err = np.abs(got - ref)
            ok = np.where(fin, err <= bound, (got == ref) | (np.isnan(got) & np.isnan(ref)))
            if ct == "f16":  # an f32 result of magnitude >= 65520 rounds to +-Inf in f16 (IEEE)
                pre = (bound - U16 * np.abs(ref) - 2.0 ** -25) / (1 + U16)  # the bound before that rounding
                inf = fin & (np.abs(ref) + pre >= F16_OVERFLOW) & (got == np.copysign(np.inf, ref))
                ok, err = ok | inf, np.where(inf, 0.0, err)
            ratio = np.where(fin, err / np.where(bound > 0, bound, np.inf), 0.0)
            ratio = np.where((~ok & ~fin) | np.isnan(ratio), np.inf, ratio)
        bad = ~ok
    v = finish_verdict(DotVerdict, p, g["C"], ref, bound, got, err, ratio, bad, fin, c0, out)
    v.exact = ct == "i32"
    return v


def finish_verdict(cls, p: Problem, geom: Geometry, ref, bound, got, err, ratio, bad, fin, c0, out):
    """The verdict (``cls``: :class:`Verdict` or a subclass) from the element checks: counts,
    worst ratio, the first bad element, and C's padding compared bit for bit with ``c0``
    (flat buffers as launched)."""
    finite_err = err[fin & np.isfinite(err)]
    v = cls(ok=True, elements=int(ref.size), bad=int(bad.sum()), worst=float(ratio.max(initial=0.0)),
            max_abs_error=float(finite_err.max(initial=0.0)), max_bound=float(bound[fin].max(initial=0.0)),
            reference=ref, bound=bound)
    if v.bad:
        z, i, j = (int(x) for x in np.argwhere(bad)[0])
        v.first_bad = (f"{_where(p, z, i, j)} = {got[z, i, j]!r}, expected {ref[z, i, j]!r} "
                       f"(bound {bound[z, i, j]:.3e})")
    outside = geom.outside(out.size)
    if outside.any():
        uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[out.itemsize]
        changed = outside & (out.view(uint) != c0.view(uint))
        v.padding_modified = int(changed.sum())
        if v.padding_modified:
            off = int(np.argmax(changed))
            v.first_padding = f"first at element {off} of C's buffer: {c0[off]!r} became {out[off]!r}"
    v.ok = not v.bad and not v.padding_modified
    return v


def pack(name: str, arr: np.ndarray, geom: Geometry, dtype, fill: float = np.nan) -> np.ndarray:
    """A flat, exactly sized buffer holding ``arr`` as stored: ``arr`` is (rows, >= ld) or
    (batches, rows, >= ld) (2-D: one matrix for every product, only with stride 0 or
    one product); elements the matrices do not cover are ``fill`` (or ``arr``'s padding)."""
    arr = np.asarray(arr)
    if arr.ndim == 2:
        if geom.batches > 1 and geom.stride != 0:
            raise VlpcError(f"operand {name} is 2-D but the kernel runs a batch of {geom.batches} with "
                            f"stride_{name.lower()}={geom.stride}: give a 3-D array (batch, rows, columns)")
        arr = arr[None]
    if arr.ndim != 3:
        raise VlpcError(f"operand {name} must be a 2-D or 3-D array, got shape {arr.shape}")
    nb = 1 if geom.stride == 0 else geom.batches
    if geom.stride == 0 and arr.shape[0] > 1:
        if not all(np.array_equal(arr[0], x, equal_nan=True) for x in arr[1:]):
            raise VlpcError(f"stride_{name.lower()} is 0 (one {name} for every product) but the {arr.shape[0]} "
                            f"matrices of {name} differ: give one matrix")
        arr = arr[:1]
    if arr.shape[0] != nb or arr.shape[1] != geom.rows or arr.shape[2] < geom.ld:
        want = f"({geom.rows}, {geom.ld})" if nb == 1 else f"({nb}, {geom.rows}, {geom.ld})"
        raise VlpcError(f"operand {name} has shape {arr.shape}, expected {want} (rows x leading dimension, as stored)")
    flat = np.full(geom.size, fill, dtype)
    rows = arr[:, :, :geom.ld].astype(dtype, copy=False)
    for z in range(nb):
        start = z * geom.stride
        for i in range(geom.rows):
            seg = rows[z, i]
            lo = start + i * geom.ld
            flat[lo:lo + geom.ld] = seg[:max(0, min(geom.ld, geom.size - lo))]
    return flat


def kernel_arguments(kernel, buffers: dict, p: Problem, alpha: float, beta: float, scalar: type | None = None) -> list:
    """The explicit kernel arguments in the order of the kernel's metadata (without the split-K
    workspace, which :meth:`CompiledKernel.execute` appends): ``buffers`` maps ``A``, ``B``,
    ``C`` (and ``bias``) to device buffers; sizes, leading dimensions and batch strides are
    32-bit integers (a value beyond 2^31 - 1 is a :class:`VlpcError` naming it).  ``scalar``:
    the NumPy type of alpha and beta (default: the kernel's element type; the f16/int8 dot
    kernels take f32/i32 scalars, :func:`scalar_type`)."""
    dtype = scalar or NP_DTYPE[str(kernel.launch_info.get("dtype", "f32"))]
    values = {"M": p.m, "N": p.n, "K": p.k, "lda": p.lda, "ldb": p.ldb, "ldc": p.ldc,
              "stride_a": p.stride_a, "stride_b": p.stride_b, "stride_c": p.stride_c}
    args = []
    for arg in kernel.kernargs:
        name = arg.get(".name", "")
        if name == "workspace" or str(arg.get(".value_kind", "")).startswith("hidden"):
            continue
        if name in buffers:
            args.append(buffers[name])
        elif name in ("alpha", "beta"):
            value = alpha if name == "alpha" else beta
            if np.issubdtype(dtype, np.floating) and np.isfinite(value) and abs(value) > float(np.finfo(dtype).max):
                raise VlpcError(f"{name}={value} is outside the range of {np.dtype(dtype).name}, the kernel's "
                                f"{name} type (largest finite {np.finfo(dtype).max:.7g})")
            args.append(dtype(value))
        elif name in values:
            if not 0 <= values[name] < 2**31:
                raise VlpcError(f"{name}={values[name]} does not fit the kernel's 32-bit argument {name}")
            args.append(np.int32(values[name]))
        else:
            raise VlpcError(f"kernel {kernel.name} takes an argument '{name}' vlpc does not know how to pass")
    return args


def check_before_allocating(kernel, p: Problem) -> None:
    """The launch's limit checks, made before any host or device buffer is allocated: the
    sizes the kernel can compute (:meth:`CompiledKernel.check_sizes`), the 32-bit kernel
    arguments (:func:`kernel_arguments`), and the check :meth:`CompiledKernel.execute` makes at
    launch (:meth:`CompiledKernel.check_offsets`: values the IR fixes, the kernels' 32-bit byte
    offsets, overlapping batch entries of C, a workspace of 2^32 bytes or more), here on
    placeholder buffers.  A 70000 x 70000 f32 C (19.6 GB) is refused at once instead of after
    its buffers were allocated, filled and uploaded.  Raises a one-line :class:`VlpcError`
    (exit code 1: the sizes are the user's).  Used by ``vlpc run``, ``vlpc bench``, ``vlpc tune``,
    the energy report and :func:`launch_and_read`."""
    kernel.check_sizes(p.m, p.n, p.k, p.lda, p.ldb, p.ldc)
    check_offsets_before_allocating(kernel, p)


def check_offsets_before_allocating(kernel, p: Problem) -> None:
    """:meth:`CompiledKernel.check_offsets` (the launch's check of the values the IR fixes, the
    32-bit byte offsets, C's batch entries and the workspace) for the problem ``p``, on
    placeholder buffers, as a one-line :class:`VlpcError`; the part of
    :func:`check_before_allocating` that :func:`launch_and_read` makes before it uploads."""
    placeholders = {a.get(".name"): None for a in kernel.kernargs
                    if str(a.get(".value_kind", "")) == "global_buffer"}
    args = kernel_arguments(kernel, placeholders, p, 0.0, 0.0, scalar=np.float32)
    batch = p.batch or None
    try:
        kernel.check_offsets(args, p.m, p.n, p.k, batch,
                             kernel.workspace_bytes(p.m, p.ldc, p.k, batch, n=p.n))
    except VlpcError as e:  # LaunchError: the same one line, as the user's mistake
        raise VlpcError(str(e)) from None


def launch_and_read(kernel, device, host: dict, p: Problem, alpha, beta, c_type, iterations: int = 1,
                    scalar: type | None = None) -> tuple[np.ndarray, object, list[float]]:
    """Upload ``host`` (name -> flat array: ``A``, ``B``, ``C`` and any ``bias``/scales), run
    ``kernel``'s plan ``iterations`` times on ``device`` (C re-uploaded before each repeat),
    read C back as ``c_type`` and free every buffer: ``(C flat, the last launch's stats, wall
    seconds per launch)``.  :func:`vlpc.run`'s launch."""
    import time

    from vlpc.runtime import load_code_object

    check_offsets_before_allocating(kernel, p)  # before the device buffers (the host ones are the caller's)
    co = load_code_object(kernel.code_object)
    bufs: dict = {}
    walls: list[float] = []
    stats = None
    try:
        for name, x in host.items():
            bufs[name] = device.upload(x)
        args = kernel_arguments(kernel, bufs, p, alpha, beta, scalar=scalar)
        for it in range(max(1, iterations)):
            if it:
                device.write(bufs["C"], host["C"])
            t0 = time.perf_counter()
            stats = kernel.execute(device, co, args, p.m, p.n, p.k, p.ldc, p.batch or None)
            walls.append(time.perf_counter() - t0)
        out = device.download(bufs["C"], c_type, host["C"].shape)
    finally:
        for buf in bufs.values():
            device.free(buf)
    return out, stats, walls


__all__ = ["DotVerdict", "F16_OVERFLOW", "GELU_LIPSCHITZ", "Geometry", "NP", "NP_DTYPE", "PAD", "Problem", "TINY32",
           "U16", "U32", "UNIT_ROUNDOFF", "Verdict", "apply_epilogue", "check", "check_before_allocating",
           "check_offsets_before_allocating", "dot_error_bound", "epilogue_step", "error_bound", "gamma", "geometries",
           "gelu_tanh", "kernel_arguments", "launch_and_read", "op_matrices", "pack", "reference", "reference_and_bound",
           "scalar_type", "tolerance", "types_of", "with_residual"]
