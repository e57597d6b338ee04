"""Pure NumPy semantics of ALU instructions (no machine state here).

Vector functions take ``uint32`` (or ``uint64`` for 64-bit operands) arrays that
broadcast against each other (``(waves, 64)`` for VGPRs, ``(waves, 1)`` for
scalars, 0-d for constants) and return the raw result bits.  Float operations
work on bit-cast views; f32 arithmetic is IEEE single with round-to-nearest-even
and denormals preserved (the ``FLOAT_DENORM_MODE_32 = 3`` setting), f64 likewise.

``v_fma_f32`` is one rounding: the f32 x f32 product is exact in f64, the f64
sum is rounded once more to f32, and lanes where that double rounding could
differ from a single rounding (the f64 sum exactly halfway between two f32
values) are repaired with the exact error of the f64 sum.  ``v_fma_f64`` uses
error-free transformations and falls back to exact rational arithmetic for the
lanes where those are not exact.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

U32 = np.uint32
U64 = np.uint64
I32 = np.int32
I64 = np.int64
F32 = np.float32
F64 = np.float64

SIGN32 = U32(0x80000000)
SIGN64 = U64(0x8000000000000000)
LANES = np.arange(64, dtype=U64)


def f32(x):
    return np.asarray(x, U32).view(F32)


def f64(x):
    return np.asarray(x, U64).view(F64)


def b32(x):
    return np.asarray(x, F32).view(U32)


def b64(x):
    return np.asarray(x, F64).view(U64)


def u64_of(lo, hi):
    return np.asarray(lo, U32).astype(U64) | (np.asarray(hi, U32).astype(U64) << U64(32))


def split64(x):
    x = np.asarray(x, U64)
    return (x & U64(0xFFFFFFFF)).astype(U32), (x >> U64(32)).astype(U32)


def mask_of(bits64):
    """(n,) uint64 lane masks -> (n, 64) bool."""
    return ((np.asarray(bits64, U64).reshape(-1, 1) >> LANES) & U64(1)).astype(bool)


def bits_of(mask):
    """(n, 64) bool -> (n,) uint64 lane masks."""
    m = np.ascontiguousarray(mask, dtype=bool)
    return np.packbits(m, axis=-1, bitorder="little").view("<u8").reshape(-1).astype(U64)


# ---------------------------------------------------------------------------
# f32 fused multiply-add

_MID29 = U64(0x10000000)
_LOW29 = U64(0x1FFFFFFF)
_ABS32 = U32(0x7FFFFFFF)
_MINNORM32 = U32(0x00800000)
_LOW28 = U64(0x0FFFFFFF)


def fma32_into(a, b, c, scratch) -> np.ndarray:
    """Correctly rounded f32 fma of uint32 bit arrays; returns f64 sums ready to round.

    The returned f64 array ``t`` is such that ``t.astype(float32)`` is the single
    rounding of ``a*b+c``: double-rounding ties are nudged (see module docstring).
    ``scratch(shape, dtype, k)`` provides reusable buffers.
    """
    fa, fb, fc = f32(a), f32(b), f32(c)
    shape = np.broadcast_shapes(fa.shape, fb.shape, fc.shape)
    t = scratch(shape, F64, 0)
    # cast the biggest operand into t, multiply by the other (cast small ones explicitly)
    if fa.shape == shape:
        np.copyto(t, fa)
        other = fb
    else:
        np.copyto(t, fb)
        other = fa
    if other.shape == shape:
        u = scratch(shape, F64, 1)
        np.copyto(u, other)
        np.multiply(t, u, out=t)
    else:
        np.multiply(t, other.astype(F64), out=t)
    if fc.shape == shape:
        u = scratch(shape, F64, 1)
        np.copyto(u, fc)
        np.add(t, u, out=t)
    else:
        np.add(t, fc.astype(F64), out=t)
    return t


def fma32_fix(t, a, b, c, rbits) -> None:
    """Repair double-rounding lanes of ``rbits`` (the f32 bits of ``t``) in place.

    Candidates: f64 sums whose low 29 mantissa bits are exactly the f32 halfway
    pattern, and nonzero results in the f32 subnormal range (|r| <= 2^-126); an
    exact zero sum is an exact result, never a tie.  Every lane the repair changes
    is a halfway point of two adjacent f32 values, so its low 28 mantissa bits are
    zero and it is not zero: :func:`fma32_candidates` is a cheap superset of them.
    """
    hit = fma32_candidates(t)
    if hit.any():
        fma32_fix_lanes(t, a, b, c, rbits, np.nonzero(hit))


def fma32_candidates(t) -> np.ndarray:
    """Lanes of the f64 sums ``t`` that :func:`fma32_fix` may repair (a superset): low 28
    mantissa bits zero (every f32 halfway point, normal or subnormal) and ``t != 0``."""
    hit = (t.view(U64) & _LOW28) == 0
    if hit.any():
        hit &= t != 0
    return hit


def fma32_fix_lanes(t, a, b, c, rbits, idx) -> None:
    """:func:`fma32_fix` on the lanes ``idx`` (a tuple of index arrays into ``t.shape``)
    that hold every lane to repair (e.g. ``np.nonzero(fma32_candidates(t))``)."""
    if idx[0].size == 0:
        return
    tt = t[idx]
    tb = tt.view(U64)
    rb32 = rbits[idx]
    # the candidates of the original definition, among the given lanes
    keep = ((tb & _LOW29) == _MID29) | (((rb32 & _ABS32) <= _MINNORM32) & (tt != 0))
    if not keep.all():
        idx = tuple(i[keep] for i in idx)
        if idx[0].size == 0:
            return
        tt = tt[keep]
    fa = np.broadcast_to(f32(a), t.shape)[idx].astype(F64)
    fb = np.broadcast_to(f32(b), t.shape)[idx].astype(F64)
    fc = np.broadcast_to(f32(c), t.shape)[idx].astype(F64)
    p = fa * fb
    with np.errstate(all="ignore"):
        r = tt.astype(F32)
        rb = r.astype(F64)
        exact = rb == tt
        # neighbour of r on t's side
        toward = np.where(tt > rb, F32(np.inf), F32(-np.inf))
        other = np.nextafter(r, toward).astype(F64)
        tie = (~exact) & np.isfinite(tt) & (((rb + other) * 0.5) == tt)
        if not tie.any():
            return
        bb = tt - p
        err = (p - (tt - bb)) + (fc - bb)
        nud = tie & (err != 0)
        if not nud.any():
            return
        t2 = np.nextafter(tt, np.where(err > 0, np.inf, -np.inf))
        fixed = np.where(nud, t2, tt).astype(F32).view(U32)
    sel = tuple(i[nud] for i in idx)
    rbits[sel] = fixed[nud]


def fma32(a, b, c):
    """Standalone correctly rounded f32 fma on uint32 bit arrays (returns uint32 bits)."""
    bufs = {}

    def scratch(shape, dt, k):
        return np.empty(shape, dt)
    with np.errstate(all="ignore"):
        t = fma32_into(a, b, c, scratch)
        r = t.astype(F32).view(U32)
    if r.ndim == 0:
        r = r.reshape(1)
        fma32_fix(t.reshape(1), np.reshape(a, -1)[:1] if np.ndim(a) else a, b, c, r)
        return r[0]
    fma32_fix(t, a, b, c, r)
    del bufs
    return r


# ---------------------------------------------------------------------------
# f64 fused multiply-add

_SPLIT = F64(134217729.0)  # 2^27 + 1


def two_prod(a, b):
    """Dekker's TwoProduct of f64 arrays: ``(p, e)`` with ``p = fl(a * b)`` and ``a * b = p + e``
    exactly (no overflow/underflow)."""
    p = a * b
    ca = _SPLIT * a
    ah = ca - (ca - a)
    al = a - ah
    cb = _SPLIT * b
    bh = cb - (cb - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def two_sum(a, b):
    """Knuth's TwoSum of f64 arrays: ``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def fma64(a, b, c):
    """Correctly rounded f64 fma of uint64 bit arrays (broadcasting); returns uint64 bits."""
    fa, fb, fc = np.broadcast_arrays(f64(a), f64(b), f64(c))
    with np.errstate(all="ignore"):
        p, e = two_prod(fa, fb)
        s, t = two_sum(p, fc)
        u, v = two_sum(t, e)
        r = s + u
        ok = (v == 0) & np.isfinite(r) & np.isfinite(p) & np.isfinite(e)
        # TwoProduct is exact only away from underflow/overflow
        mag = np.abs(p)
        ok &= (mag == 0) | ((mag > 2.0 ** -960) & (mag < 2.0 ** 995))
        ok &= np.abs(fa) < 2.0 ** 995
        ok &= np.abs(fb) < 2.0 ** 995
        r = np.array(r, F64, copy=True)
        # Where t + e is inexact (v != 0): round it to odd and add (Boldo & Melquiond,
        # "Emulation of FMA and correctly rounded sums: proved algorithms using rounding
        # to odd", IEEE TC 2008, Algorithm 5.4): RN(s + RO(t + e)) is the correctly
        # rounded a*b + c when nothing underflows or overflows; the range guards keep
        # every term normal, lanes outside them take the exact rational path.
        odd = ~ok & (v != 0) & np.isfinite(r) & np.isfinite(p) & np.isfinite(e) & np.isfinite(fc)
        if odd.any():
            odd &= (mag > 2.0 ** -900) & (mag < 2.0 ** 990)
            odd &= (np.abs(fa) < 2.0 ** 990) & (np.abs(fb) < 2.0 ** 990) & (np.abs(fc) < 2.0 ** 990)
            odd &= (np.abs(s) > 2.0 ** -900) & (np.abs(s) < 2.0 ** 990) & (np.abs(u) > 2.0 ** -900)
            oi = np.nonzero(odd)
            if oi[0].size:
                uo, vo = u[oi], v[oi]
                even = (uo.view(U64) & U64(1)) == 0
                uo = np.where(even, np.nextafter(uo, np.where(vo > 0, np.inf, -np.inf)), uo)
                r[oi] = s[oi] + uo
                ok = ok | odd
    bad = np.nonzero(~ok)
    if bad[0].size:
        xa, xb, xc = fa[bad], fb[bad], fc[bad]
        out = np.empty(xa.shape, F64)
        for i in range(xa.size):
            out[i] = _exact_fma(float(xa[i]), float(xb[i]), float(xc[i]))
        r[bad] = out
    return r.view(U64)


def _exact_fma(a: float, b: float, c: float) -> float:
    import math
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c
    x = Fraction(a) * Fraction(b) + Fraction(c)
    if x == 0:
        # sign of an exact zero: +0 unless both a*b and c are -0 (or negative zero product + -0)
        prod_neg = (math.copysign(1, a) * math.copysign(1, b)) < 0
        if prod_neg and math.copysign(1, c) < 0:
            return -0.0
        return 0.0
    try:
        return x.numerator / x.denominator
    except OverflowError:
        return math.inf if x > 0 else -math.inf


# ---------------------------------------------------------------------------
# integer helpers

def sext(x, bits):
    x = np.asarray(x, U32).astype(I64) & ((1 << bits) - 1)
    return np.where(x >= (1 << (bits - 1)), x - (1 << bits), x)


def bfe_u32(x, off, width):
    off = np.asarray(off, U32) & U32(31)
    w = np.asarray(width, U32) & U32(31)
    v = (np.asarray(x, U32).astype(U64) >> off.astype(U64)) & ((U64(1) << w.astype(U64)) - U64(1))
    return np.where(w == 0, U32(0), v.astype(U32))


def bfe_i32(x, off, width):
    off = np.asarray(off, U32) & U32(31)
    w = np.asarray(width, U32) & U32(31)
    v = (np.asarray(x, U32).astype(U64) >> off.astype(U64)) & ((U64(1) << w.astype(U64)) - U64(1))
    wi = w.astype(I64)
    vi = v.astype(I64)
    sv = np.where((wi > 0) & ((vi >> np.maximum(wi - 1, 0)) & 1 == 1), vi - (np.int64(1) << wi), vi)
    return np.where(w == 0, U32(0), sv.astype(I64).astype(U32))


def popcount32(x):
    x = np.asarray(x, U32)
    x = x - ((x >> U32(1)) & U32(0x55555555))
    x = (x & U32(0x33333333)) + ((x >> U32(2)) & U32(0x33333333))
    x = (x + (x >> U32(4))) & U32(0x0F0F0F0F)
    return ((x * U32(0x01010101)) & U32(0xFFFFFFFF)) >> U32(24)


def popcount64(x):
    lo, hi = split64(x)
    return popcount32(lo) + popcount32(hi)


def ffbh_u32(x):
    """Leading-zero count (0xffffffff for 0)."""
    x = np.asarray(x, U32)
    out = np.full(x.shape, 0xFFFFFFFF, U32)
    nz = x != 0
    lz = 31 - np.floor(np.log2(np.where(nz, x, 1).astype(F64))).astype(I64)
    out[nz] = lz[nz].astype(U32) if lz.ndim else U32(lz)
    return out


def ffbl_b32(x):
    x = np.asarray(x, U32)
    low = x & (~x + U32(1))
    out = np.full(x.shape, 0xFFFFFFFF, U32)
    nz = x != 0
    tz = np.floor(np.log2(np.where(nz, low, 1).astype(F64))).astype(I64)
    out[nz] = tz[nz].astype(U32)
    return out


def brev32(x):
    x = np.asarray(x, U32)
    x = ((x >> U32(1)) & U32(0x55555555)) | ((x & U32(0x55555555)) << U32(1))
    x = ((x >> U32(2)) & U32(0x33333333)) | ((x & U32(0x33333333)) << U32(2))
    x = ((x >> U32(4)) & U32(0x0F0F0F0F)) | ((x & U32(0x0F0F0F0F)) << U32(4))
    x = ((x >> U32(8)) & U32(0x00FF00FF)) | ((x & U32(0x00FF00FF)) << U32(8))
    return (x >> U32(16)) | (x << U32(16))


def f32_to_i32(x):
    """Float -> int32 with saturation, NaN -> 0 (round toward zero)."""
    v = f32(x).astype(F64)
    v = np.where(np.isnan(v), 0.0, np.trunc(v))
    return np.clip(v, -2147483648.0, 2147483647.0).astype(I64).astype(I32).view(U32)


def f32_to_u32(x):
    v = f32(x).astype(F64)
    v = np.where(np.isnan(v), 0.0, np.trunc(v))
    return np.clip(v, 0.0, 4294967295.0).astype(U64).astype(U32)


def f64_to_i32(x):
    v = f64(x)
    v = np.where(np.isnan(v), 0.0, np.trunc(v))
    return np.clip(v, -2147483648.0, 2147483647.0).astype(I64).astype(I32).view(U32)


def f64_to_u32(x):
    v = f64(x)
    v = np.where(np.isnan(v), 0.0, np.trunc(v))
    return np.clip(v, 0.0, 4294967295.0).astype(U64).astype(U32)


def f32_cmp(name, a, b):
    x, y = f32(a), f32(b)
    return _fcmp(name, x, y)


def f64_cmp(name, a, b):
    return _fcmp(name, f64(a), f64(b))


def _fcmp(name, x, y):
    if name == "f":
        return np.zeros(np.broadcast_shapes(x.shape, y.shape), bool)
    if name == "tru":
        return np.ones(np.broadcast_shapes(x.shape, y.shape), bool)
    un = np.isnan(x) | np.isnan(y)
    base = {"lt": x < y, "eq": x == y, "le": x <= y, "gt": x > y, "lg": (x < y) | (x > y),
            "ge": x >= y, "o": ~un, "u": un}
    if name in base:
        return base[name]
    # negated forms are true for unordered
    neg = {"nge": "ge", "nlg": "lg", "ngt": "gt", "nle": "le", "neq": "eq", "nlt": "lt"}[name]
    return ~base[neg]


def int_cmp(name, x, y):
    shape = np.broadcast_shapes(np.shape(x), np.shape(y))
    if name == "f":
        return np.zeros(shape, bool)
    if name == "t":
        return np.ones(shape, bool)
    return {"lt": x < y, "eq": x == y, "le": x <= y, "gt": x > y, "ne": x != y, "ge": x >= y,
            "lg": x != y}[name]


def cmp_class(x, mask, is64=False):
    v = f64(x) if is64 else f32(x).astype(F64)
    bits = (f64(x).view(U64) if is64 else f32(x).view(U32).astype(U64))
    m = np.asarray(mask, U32)
    sign = (bits >> U64(63 if is64 else 31)) & U64(1)
    if is64:
        quiet = (bits >> U64(51)) & U64(1)
    else:
        quiet = (bits >> U64(22)) & U64(1)
    nan = np.isnan(v)
    inf = np.isinf(v)
    zero = v == 0
    tiny = 2.0 ** (-1022 if is64 else -126)
    sub = (~zero) & (np.abs(v) < tiny) & ~nan
    norm = ~(nan | inf | zero | sub)
    neg = sign == 1
    classes = [nan & (quiet == 0), nan & (quiet == 1), inf & neg, norm & neg, sub & neg, zero & neg,
               zero & ~neg, sub & ~neg, norm & ~neg, inf & ~neg]
    out = np.zeros(np.broadcast_shapes(v.shape, m.shape), bool)
    for i, c in enumerate(classes):
        out |= c & (((m >> U32(i)) & U32(1)) == 1)
    return out
