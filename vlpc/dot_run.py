"""``vlpc.run`` / ``vlpc run`` for the f16 and int8 dot kernels (passes/gemm_to_gcn_dot.py).

The f32/f64 path (:mod:`vlpc.api`, :mod:`vlpc.verify`) assumes one element type for A, B, C,
alpha and beta.  The dot kernels mix them: A and B f16 with C f32 or f16 and f32 alpha/beta;
A and B i8 with C i32 and i32 alpha/beta, or (W8A8 dequantization) C f32/f16 with f32
alpha/beta and two more f32 vectors, ``scale_row`` (M) and ``scale_col`` (N).

Buffers are exactly sized (the last row of each matrix ends its buffer); the gaps between
rows are NaN (f16, f32 C) or a garbage pattern (i8: -77, i32: 0x5A5A5A5A), so a kernel that
reads or writes past the matrices is caught.  Random inputs: f16 standard normal, i8
uniform in [-128, 127], scales uniform in [1e-3, 2e-2].

**Reference and bound** (docs/kernels.md "f16 and int8 through the dot instructions"): float64 math on
the inputs (every f16 product is exact in float64), BLAS's quick returns (alpha = 0 reads
neither A nor B, beta = 0 does not read C).  int8 -> i32: exact, ``alpha * A B^T + beta * C``
wrapped to 32 bits.  f16: ``gamma_n(2^-24) (|alpha| |A||B| + |beta||C|)`` with ``n = ceil(K/2)
+ S L + 2`` (one rounding per dot instruction, per addition of split-K / local-split
partials, and the epilogue's two; Higham 2002 eq. 3.4).  Dequantized int8: the exact i32 sum,
then conversion, two scale products, beta * C and the FMA: ``gamma_5(2^-24)`` times the
magnitudes.  f16 C adds its rounding to f16: ``2^-11 |result| + 2^-25``.  C's padding must
keep its bits.
"""

from __future__ import annotations

import numpy as np

from vlpc.errors import VlpcError
from vlpc.verify import (Problem, Verdict, epilogue_step, finish_verdict, geometries,
                         launch_and_read, op_matrices, pack, worst_error_text)

#: NumPy types of the dot kernels' element types.
NP = {"f16": np.float16, "i8": np.int8, "f32": np.float32, "i32": np.int32}
#: Padding of each element type (NaN for floats, a garbage pattern for integers).
PAD = {"f16": np.nan, "f32": np.nan, "i8": -77, "i32": 0x5A5A5A5A}

U32 = 2.0 ** -24
U16 = 2.0 ** -11
TINY32 = 2.0 ** -126  # the smallest normal f32
#: f16's largest finite value (65504) plus half its spacing there (32 / 2): an f32 value of at
#: least this magnitude rounds to +-Inf in f16 (round to nearest even, IEEE 754).
F16_OVERFLOW = 65520.0


def gamma(n: int, u: float) -> float:
    return n * u / (1 - n * u)


def types_of(kernel) -> tuple[str, str, bool]:
    """(A/B type, C type, dequantizing) of a dot kernel."""
    li = kernel.launch_info
    ab, ct = str(li.get("dtype")), str(li.get("c_dtype", "f32"))
    return ab, ct, ab == "i8" and ct != "i32"


def scalar_type(kernel) -> type:
    """NumPy type of alpha and beta: i32 for int8 -> i32, else f32."""
    ab, ct, _ = types_of(kernel)
    return np.int32 if ab == "i8" and ct == "i32" else np.float32


def round_leading_dimensions(kern, p: Problem, a_given: bool, b_given: bool) -> None:
    """Leading dimensions given at launch and not by arrays: A's (and for NT, B's) rows rounded
    up to whole dwords (2 f16 / 4 int8 values), as the dot kernels need (``offset_errors``);
    ``p`` is changed in place.  In a strided batch whose batch stride is also given at launch
    (rows x leading dimension) the stride follows the rounded leading dimension; a batch
    stride the IR fixes keeps the leading dimension as it is."""
    ab, _, _ = types_of(kern)
    pack = 2 if ab == "f16" else 4
    li = kern.launch_info
    lay = kern.layout
    rows = {"a": p.m if lay[0] == "N" else p.k, "b": p.k if lay[1] == "N" else p.n}
    for x, given in (("a", a_given), ("b", b_given or lay[1] != "T")):
        ld = getattr(p, f"ld{x}")
        if li[f"static_ld{x}"] >= 0 or given or ld % pack == 0:
            continue
        if p.batch:
            if li.get(f"static_stride_{x}", -1) >= 0:
                continue
            setattr(p, f"stride_{x}", rows[x] * (-(-ld // pack) * pack))
        setattr(p, f"ld{x}", -(-ld // pack) * pack)


def reference(op_a: np.ndarray, op_b: np.ndarray, c0: np.ndarray, alpha, beta, ab: str, ct: str,
              pieces: int = 1, scales: tuple | None = None, epilogue=(), bias: np.ndarray | None = None,
              rounds: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(expected, bound) per element, (batches, M, N), for ``op_a`` (batches, M, K) and ``op_b``
    (batches, K, N) as stored types; see the module docstring.  ``epilogue`` (f16 products and
    dequantized int8), in f32 on the result before its f16 rounding: each operation's reference
    and bound are :func:`vlpc.verify.epilogue_step`'s with u = 2^-24 (bias add ``e (1 + u) +
    u |y|``; relu max(x, 0), relu(NaN) = 0, ``e``; gelu the tanh form, ``1.13 e + u |y| (8 + 4
    |z|)``), plus 2^-126 for a flushed subnormal.  ``rounds``: n of the f16 bound when the kernel
    rounds fewer times than one per dot and partial (the quantized GEMV: vlpc/quant_run.py)."""
    k = op_a.shape[2]
    if ab == "i8" and scales is None:
        prod = np.einsum("zmk,zkn->zmn", op_a.astype(np.int64), op_b.astype(np.int64)) if alpha != 0 else 0
        res = np.int64(alpha) * prod + (np.int64(beta) * c0.astype(np.int64) if beta != 0 else 0)
        res = ((res + 2**31) % 2**32 - 2**31).astype(np.int64) + np.zeros(c0.shape, np.int64)
        return res, np.zeros(res.shape)
    with np.errstate(all="ignore"):
        if ab == "i8":  # W8A8: exact integer sum, then scaled in f32
            prod = np.einsum("zmk,zkn->zmn", op_a.astype(np.int64), op_b.astype(np.int64)).astype(np.float64)
            sr, sc = (np.asarray(x, np.float64) for x in scales)
            d = sr[None, :, None] * sc[None, None, :] * prod if alpha != 0 else np.zeros(prod.shape)
            exp = alpha * d
            mag = abs(alpha) * np.abs(d)
            n_round = 5
        else:
            a64, b64 = op_a.astype(np.float64), op_b.astype(np.float64)
            exp = alpha * (a64 @ b64) if alpha != 0 else np.zeros(c0.shape)
            mag = abs(alpha) * (np.abs(a64) @ np.abs(b64)) if alpha != 0 else np.zeros(c0.shape)
            n_round = rounds if rounds is not None else -(-k // 2) + pieces + 2
        if beta != 0:
            exp = exp + beta * c0.astype(np.float64)
            mag = mag + abs(beta) * np.abs(c0.astype(np.float64))
    bound = gamma(n_round, U32) * mag
    for x in epilogue:  # vlpc.verify's reference and bound of each operation, in f32
        exp, bound = epilogue_step(x, exp, bound, U32, bias)
        bound = bound + TINY32  # a flushed f32 subnormal (gelu's x / (1 + e) near 0)
    if ct == "f16":
        bound = bound * (1 + U16) + U16 * np.abs(exp) + 2.0 ** -25
    return exp, bound


class DotVerdict(Verdict):
    """A :class:`vlpc.verify.Verdict` whose summary names the dot kernels' bound."""

    #: C is i32 (int8 -> i32): compared bit for bit (an all-NaN float C also has bound 0)
    exact: bool = False

    def summary(self) -> str:
        if self.exact and not np.isinf(self.worst):
            return "int8 -> i32 results exact (compared bit for bit with NumPy int64 math wrapped to 32 bits)"
        return (f"max error {worst_error_text(self.worst)} (max abs error {self.max_abs_error:.3e}, largest bound {self.max_bound:.3e}: "
                "f32 accumulation of exact f16 (or int8) products, gamma_n(2^-24) bound of vlpc/dot_run.py)")


def check(layout: str, p: Problem, ab: str, ct: str, a: np.ndarray, b: np.ndarray, c0: np.ndarray,
          out: np.ndarray, alpha, beta, pieces: int = 1, scales: tuple | None = None, epilogue=(),
          bias: np.ndarray | None = None, op_b: np.ndarray | None = None, rounds: int | None = None,
          expected: tuple | None = None) -> Verdict:
    """C after the launch (flat ``out``) against :func:`reference` of the flat buffers as launched
    (``op_b``: op(B) (batches, K, N) itself instead of ``b``'s, e.g. dequantized weights;
    ``expected``: the (reference, bound) pair itself, e.g. a SwiGLU's: vlpc/quant_run.py)."""
    g = geometries(layout, p)
    cm = g["C"].matrices(c0)
    if expected is not None:
        ref, bound = expected
    else:
        if op_b is None:
            op_a, op_b = op_matrices(layout, p, a, b)
        else:
            op_a = g["A"].matrices(a)
        ref, bound = reference(op_a, op_b, cm, alpha, beta, ab, ct, pieces, scales, epilogue, bias, rounds)
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


def _buffers(layout: str, p: Problem, ab: str, ct: str, arrays: dict, rng: np.random.Generator) -> dict:
    out = {}
    for name, geom in geometries(layout, p).items():
        t = ab if name in "AB" else ct
        arr = arrays.get(name)
        if arr is None:
            flat = np.full(geom.size, PAD[t], NP[t])
            nb = 1 if geom.stride == 0 else geom.batches
            offs = geom.offsets()[:nb].reshape(-1)
            if t in ("i8", "i32"):
                lo, hi = (-128, 128) if t == "i8" else (-2**31, 2**31)
                flat[offs] = rng.integers(lo, hi, offs.size).astype(NP[t])
            else:
                flat[offs] = rng.standard_normal(offs.size).astype(NP[t])
        else:
            arr = np.asarray(arr)
            if arr.dtype != NP[t]:
                raise VlpcError(f"operand {name} has dtype {arr.dtype}, the kernel takes {np.dtype(NP[t]).name}")
            if arr.shape[-2] != geom.rows or arr.shape[-1] != geom.ld:
                raise VlpcError(f"operand {name} has shape {arr.shape}, the kernel expects "
                                f"{(geom.rows, geom.ld)} (rows x leading dimension, as stored)")
            flat = pack(name, arr, geom, NP[t], fill=PAD[t])
        out[name] = flat
    return out


def run_dot(kern, a, b, c, p: Problem, alpha, beta, device, *, seed: int = 0, verify: bool = True,
            iterations: int = 1, scales: tuple | None = None, bias: np.ndarray | None = None):
    """Run a dot kernel (sizes resolved in ``p``) on ``device`` (a Device) and check C.
    Returns ``(c, stats, wall, verdict or None, inputs)``: C (batches, M, N) as NumPy, the
    last launch's statistics, the best wall time, the check, and the operands as launched."""
    ab, ct, dequant = types_of(kern)
    layout = kern.layout
    rng = np.random.default_rng(seed)
    flat = _buffers(layout, p, ab, ct, {"A": a, "B": b, "C": c}, rng)
    if dequant:
        if scales is None:
            scales = (rng.uniform(1e-3, 2e-2, p.m).astype(np.float32), rng.uniform(1e-3, 2e-2, p.n).astype(np.float32))
        scales = tuple(np.ascontiguousarray(x, np.float32) for x in scales)
        if scales[0].shape != (p.m,) or scales[1].shape != (p.n,):
            raise VlpcError(f"scales must be f32 vectors of M = {p.m} and N = {p.n} values, got shapes "
                            f"{scales[0].shape} and {scales[1].shape}")
    elif scales is not None:
        raise VlpcError(f"kernel {kern.name} does not dequantize (int8 with f32/f16 C): do not pass scales")
    epi = tuple(x for x in str(kern.launch_info.get("epilogue", "")).split(",") if x)
    wants_bias = [x for x in epi if x.startswith("bias")]
    if wants_bias:
        length = p.m if wants_bias[0] == "bias_row" else p.n
        bt = np.float32 if dequant else NP[ab]  # dequantized int8: an f32 bias, as the scales
        bias = (rng.standard_normal(length).astype(bt) if bias is None else np.ascontiguousarray(bias))
        if bias.dtype != bt or bias.shape != (length,):
            raise VlpcError(f"bias must be a vector of {length} {np.dtype(bt).name} values "
                            f"({wants_bias[0]}), got {bias.dtype} {bias.shape}")
    elif bias is not None:
        raise VlpcError(f"kernel {kern.name} has no bias epilogue; do not pass bias")
    st = scalar_type(kern)
    host = dict(flat)
    if dequant:
        host["scale_row"], host["scale_col"] = scales
    if wants_bias:
        host["bias"] = bias
    out, stats, walls = launch_and_read(kern, device, host, p, alpha, beta, NP[ct], iterations, scalar=st)
    cm = np.ascontiguousarray(geometries(layout, p)["C"].matrices(out))
    verdict = None
    if verify:
        pieces = kern.split_k * kern.local_split
        verdict = check(layout, p, ab, ct, flat["A"], flat["B"], flat["C"], out, alpha, beta, pieces,
                        scales if dequant else None, epi, bias)
    inputs = {name: flat[name] for name in "ABC"}
    if dequant:
        inputs["scale_row"], inputs["scale_col"] = scales
    if wants_bias:
        inputs["bias"] = bias
    return cm, stats, min(walls), verdict, inputs


__all__ = ["check", "reference", "round_leading_dimensions", "run_dot", "scalar_type", "types_of"]
