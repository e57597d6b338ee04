"""Directed rounding (FP_ROUND of the MODE register: 1 toward +inf, 2 toward -inf, 3 toward
zero) for the f32 and f64 arithmetic the emulator can compute exactly.

The exact result is an unevaluated sum ``hi + lo`` of two f64 values: an f32 product is
exact in f64, an f32 sum is exact as TwoSum(a, b), an f32 fma as TwoSum(a * b, c), an
f64 sum as TwoSum and an f64 product as TwoProduct (Dekker's splitting).  The
round-to-nearest result ``r`` is then moved one step toward the requested direction
when the exact residual ``(hi - r) + lo`` says it lies on the wrong side; overflow
follows IEEE 754 (toward zero and away from the overflow side give the largest finite
value).  Covered: ``v_add/sub/subrev/mul_f32``, ``v_fma_f32``, ``v_fmac_f32``,
``v_add_f64``, ``v_mul_f64``, ``v_fma_f64`` (TwoProduct and TwoSum, exact rationals near
underflow/overflow), and the rounding conversions ``v_cvt_f32_i32/u32``,
``v_cvt_f32_f64`` and ``v_cvt_f16_f32`` (their source is exact in f64;
``v_cvt_f64_i32/u32`` are exact); other float instructions stop under a directed mode.
The sign of an exact zero sum follows round-to-nearest (-0 only from -0 + -0).
"""

from __future__ import annotations

import numpy as np

from ..ops import two_prod as _two_prod
from ..ops import two_sum as _two_sum

F16, F32, F64 = np.float16, np.float32, np.float64

#: conversions: mnemonic -> (source type, result type)
_CONVERT = {"v_cvt_f32_i32": ("i32", F32), "v_cvt_f32_u32": ("u32", F32), "v_cvt_f64_i32": ("i32", F64),
            "v_cvt_f64_u32": ("u32", F64), "v_cvt_f32_f64": ("f64", F32), "v_cvt_f16_f32": ("f32", F16)}


def _exact(mn, vals):
    if mn in _CONVERT:
        v = vals[0]
        src = _CONVERT[mn][0]
        if src == "i32":
            x = np.asarray(v, np.uint32).view(np.int32).astype(F64)
        elif src == "u32":
            x = np.asarray(v, np.uint32).astype(F64)
        elif src == "f32":
            x = np.asarray(v, np.uint32).view(F32).astype(F64)
        else:
            x = np.asarray(v, np.uint64).view(F64)
        return x, np.zeros_like(x)
    if mn == "v_fma_f64":
        return _exact_fma64(*vals)
    if mn == "v_ldexp_f64":
        return _exact_ldexp64(*vals)
    if mn.endswith("_f64"):
        a, b = (np.asarray(v, np.uint64).view(F64) for v in vals[:2])
        return _two_sum(a, b) if mn == "v_add_f64" else _two_prod(a, b)
    x = [np.asarray(v, np.uint32).view(F32).astype(F64) for v in vals]
    if mn == "v_add_f32":
        return _two_sum(x[0], x[1])
    if mn == "v_sub_f32":
        return _two_sum(x[0], -x[1])
    if mn == "v_subrev_f32":
        return _two_sum(x[1], -x[0])
    if mn == "v_mul_f32":
        return x[0] * x[1], np.zeros_like(x[0] * x[1])
    return _two_sum(x[0] * x[1], x[2])          # v_fma_f32 / v_fmac_f32 (product exact)


DIRECTED = frozenset({"v_add_f32", "v_sub_f32", "v_subrev_f32", "v_mul_f32", "v_fma_f32", "v_fmac_f32",
                      "v_add_f64", "v_mul_f64", "v_fma_f64", "v_ldexp_f64", *_CONVERT})


def _exact_ldexp64(a, e):
    """``(hi, lo)`` for V_LDEXP_F64 (S0 * 2^S1): exact in f64 unless the result leaves the
    normal range; those lanes in exact rational arithmetic."""
    import math
    from fractions import Fraction

    x = np.asarray(a, np.uint64).view(F64)
    n = np.asarray(e, np.uint32).view(np.int32).astype(np.int64).clip(-2200, 2200)
    x, n = np.broadcast_arrays(x, n)
    with np.errstate(all="ignore"):
        hi = np.ldexp(x, n)
    lo = np.zeros_like(hi)
    exact = ~np.isfinite(x) | (x == 0) | (np.isfinite(hi) & (np.abs(hi) >= 2.0 ** -1022))
    hi = np.array(hi, F64, copy=True)
    for i in zip(*np.nonzero(~exact)):
        v = Fraction(float(x[i])) * Fraction(2) ** int(n[i])
        try:
            h = v.numerator / v.denominator
        except OverflowError:
            h = float(np.finfo(F64).max) * (1.0 if v > 0 else -1.0)
        if h == 0:
            h = math.copysign(0.0, float(x[i]))
        d = v - Fraction(h)
        hi[i], lo[i] = h, (0.0 if d == 0 else (5e-324 if d > 0 else -5e-324))
    return hi, lo


def _exact_fma64(a, b, c):
    """``(hi, lo)`` for the f64 fma ``a * b + c``: ``hi`` a float next to the exact value and
    ``lo`` carrying the sign of ``exact - hi`` (and ``|lo|`` below ``hi``'s ulp).  Error-free
    transformations (TwoProduct, TwoSum) where they are exact, exact rational arithmetic in
    the other lanes (near underflow or overflow); like :func:`..ops.fma64`."""
    import math
    from fractions import Fraction

    fa, fb, fc = (np.asarray(x, np.uint64).view(F64) for x in (a, b, c))
    fa, fb, fc = np.broadcast_arrays(fa, fb, fc)
    p, e = _two_prod(fa, fb)
    s, t = _two_sum(p, fc)
    u, v = _two_sum(t, e)
    hi, w = _two_sum(s, u)
    lo = w + v
    mag = np.abs(p)
    ok = np.isfinite(hi) & np.isfinite(p) & np.isfinite(e) & (np.abs(fa) < 2.0 ** 995) & (np.abs(fb) < 2.0 ** 995)
    ok &= ((mag == 0) & ((fa == 0) | (fb == 0))) | ((mag > 2.0 ** -960) & (mag < 2.0 ** 995))
    ok &= (np.abs(hi) > 2.0 ** -960) | ((hi == 0) & (lo == 0))
    hi, lo = np.array(hi, F64, copy=True), np.array(lo, F64, copy=True)
    for i in zip(*np.nonzero(~ok)):
        x_a, x_b, x_c = float(fa[i]), float(fb[i]), float(fc[i])
        if not (math.isfinite(x_a) and math.isfinite(x_b) and math.isfinite(x_c)):
            hi[i], lo[i] = x_a * x_b + x_c, 0.0
            continue
        x = Fraction(x_a) * Fraction(x_b) + Fraction(x_c)
        try:
            h = x.numerator / x.denominator if x else (x_a * x_b + x_c)
        except OverflowError:   # beyond the f64 range: the largest finite value and a residual
            h = float(np.finfo(F64).max) * (1.0 if x > 0 else -1.0)
        d = x - Fraction(h)
        hi[i], lo[i] = h, (0.0 if d == 0 else (5e-324 if d > 0 else -5e-324))
    return hi, lo


def directed(mn: str, vals, mode: int):
    """Raw result bits of ``mn`` on raw ``vals`` rounded per ``mode`` (1 +inf, 2 -inf, 3 zero)."""
    ft = _CONVERT[mn][1] if mn in _CONVERT else (F64 if mn.endswith("_f64") else F32)
    with np.errstate(all="ignore"):
        hi, lo = _exact(mn, vals)
    return round_pair(hi, lo, ft, mode)


def round_pair(hi, lo, ft, mode: int):
    """The value ``hi + lo`` (f64 arrays; ``lo`` may only carry the sign of the residual)
    rounded to ``ft`` (F16/F32/F64) per ``mode``; raw result bits (uint32 for F16/F32)."""
    with np.errstate(all="ignore"):
        hi, lo = np.broadcast_arrays(np.asarray(hi, F64), np.asarray(lo, F64))
        r = hi.astype(ft)
        rd = r.astype(F64)
        resid = np.where(np.isfinite(rd), (hi - rd) + lo, 0.0)
        up = np.where(resid > 0, True, False)
        down = resid < 0
        if mode == 1:
            step = up
            target = np.inf
        elif mode == 2:
            step = down
            target = -np.inf
        else:
            step = (up & (r < 0)) | (down & (r > 0))
            target = 0.0
        if mode == 3:
            r = np.where(step, np.nextafter(r, ft(0)), r)
        else:
            r = np.where(step, np.nextafter(r, ft(target)), r)
        # overflow: round-to-nearest gave inf from a finite exact value
        big = np.isinf(r) & np.isfinite(hi)
        if big.any():
            fmax = np.finfo(ft).max
            pos = hi > 0
            keep_inf = (mode == 1) & pos | (mode == 2) & ~pos
            r = np.where(big & ~keep_inf, np.where(pos, ft(fmax), ft(-fmax)), r)
    r = r.astype(ft)
    if ft is F64:
        return r.view(np.uint64)
    if ft is F16:
        return r.view(np.uint16).astype(np.uint32)
    return r.view(np.uint32)
