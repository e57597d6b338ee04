"""f16 arithmetic, conversions and compares, and the 16-bit integer compares.

An f16 operand is the low half of its register (VOP3 ``op_sel`` bits 0..2 pick the
high half; ``abs``/``neg`` act on bit 15); the result goes to the low half with the
high half zeroed (GFX9), or with ``op_sel`` bit 3 to the high half keeping the low
one.  Arithmetic is computed exactly in f64 and rounded once to f16 (NumPy's
correctly rounded f64 -> f16 conversion; ``v_fma_f16``'s sum may round twice when
the product and addend are more than 2^53 apart).  ``v_mad_f16``/``v_mac_f16``/
``v_madak``/``v_madmk`` round the product to f16 before adding (unfused).
FP_DENORM_16_64 of the wave's MODE flushes f16 denormal inputs/results as for f32
(:mod:`.vop_float`); FP_ROUND_16_64 rounds the f16 result (nearest even, toward +inf,
-inf or zero: the exact value in f64 rounded once); ``clamp`` clamps to [0, 1] (NaN to
0 with DX10_CLAMP).
Transcendentals (``v_exp/log/rcp/rsq/sqrt/sin/cos_f16``) are correctly rounded
here; hardware is within 1 ulp.
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ._util import I64, U32, half, raw_reader, raw_reader16, s16
from .float_mode import denorm_bits, flush16, mode_of, round_bits, round_directed
from .. import state

F16, F64 = np.float16, np.float64


_raw = raw_reader


def _to_f(x):
    return (np.asarray(x, U32) & U32(0xFFFF)).astype(np.uint16).view(F16).astype(F64)


def _from_f(v):
    with np.errstate(all="ignore"):
        return np.asarray(v, F64).astype(F16).view(np.uint16).astype(U32)


def cmp_class16(x, mask):
    """V_CMP_CLASS_F16: is the class of the f16 value ``x`` (low 16 bits) selected in
    ``mask``?  Bits (Vega ISA guide): 0 signalling NaN, 1 quiet NaN, 2 -inf, 3 -normal,
    4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf."""
    x = np.asarray(x, U32) & U32(0xFFFF)
    neg = (x >> U32(15)) == 1
    e, m = (x >> U32(10)) & U32(31), x & U32(0x3FF)
    cls = np.where(e == 31, np.where(m == 0, np.where(neg, 2, 9), np.where(m & U32(0x200), 1, 0)),
                   np.where(e == 0, np.where(m == 0, np.where(neg, 5, 6), np.where(neg, 4, 7)),
                            np.where(neg, 3, 8)))
    return ((np.asarray(mask, U32) >> cls.astype(U32)) & U32(1)) == 1


def from_f_rounded(v, rb: int):
    """f64 values -> f16 bits (uint32) rounded by FP_ROUND mode ``rb`` (the f16/f64 field)."""
    if rb == 0:
        return _from_f(v)
    return round_directed(v, F16, rb).view(np.uint16).astype(U32)


def _mod16(x, o):
    x = np.asarray(x, U32)
    if o.abs:
        x = x & U32(0x7FFF)
    if o.neg:
        x = x ^ U32(0x8000)
    return x


def _fract(x):
    return x - np.floor(x)


def _rndne(x):
    return np.rint(x)


def _mad(a, b, c):
    return _to_f(_from_f(a * b)) + c


def _minmax(fn):
    return lambda a, b: np.where(np.isnan(a), b, np.where(np.isnan(b), a, fn(a, b)))


_min = _minmax(np.minimum)
_max = _minmax(np.maximum)


def _med3(a, b, c):
    anynan = np.isnan(a) | np.isnan(b) | np.isnan(c)
    m = _max(_max(a, b), c)
    med = np.where(m == a, _max(b, c), np.where(m == b, _max(a, c), _max(a, b)))
    return np.where(anynan, _min(_min(a, b), c), med)


def _is_snan16(x):
    return ((x & U32(0x7C00)) == U32(0x7C00)) & ((x & U32(0x3FF)) != 0) & ((x & U32(0x200)) == 0)


def minmax16(a, c, ieee: bool, want_min: bool):
    """V_MIN_F16 / V_MAX_F16 (Vega ISA guide pseudo-code, as V_MIN_F32) on f16 bits in the low
    halves: in IEEE mode a signalling NaN operand returns quieted; otherwise a NaN operand
    yields the other one; -0 < +0."""
    a, c = np.broadcast_arrays(np.asarray(a, U32) & U32(0xFFFF), np.asarray(c, U32) & U32(0xFFFF))
    fa, fc = a.astype(np.uint16).view(F16), c.astype(np.uint16).view(F16)
    with np.errstate(invalid="ignore"):
        if want_min:
            pick_a = (fa < fc) | ((fa == fc) & ((a & U32(0x8000)) != 0))
        else:
            pick_a = (fa > fc) | ((fa == fc) & ((a & U32(0x8000)) == 0))
    r = np.where(pick_a, a, c)
    na, nc = np.isnan(fa), np.isnan(fc)
    r = np.where(nc & ~na, a, r)
    r = np.where(na, c, r)
    if ieee:
        r = np.where(_is_snan16(c), c | U32(0x200), r)
        r = np.where(_is_snan16(a), a | U32(0x200), r)
    return r


def _minmax16_fns(mn):
    def make(ieee):
        def lo(a, c):
            return minmax16(a, c, ieee, True)

        def hi(a, c):
            return minmax16(a, c, ieee, False)
        if mn == "v_min_f16":
            return lo
        if mn == "v_max_f16":
            return hi
        if mn == "v_min3_f16":
            return lambda a, b, c: lo(lo(a, b), c)
        if mn == "v_max3_f16":
            return lambda a, b, c: hi(hi(a, b), c)

        def med3(a, b, c):  # V_MED3: a NaN operand -> V_MIN3; else the median
            fa, fb, fc = (_to_f(x) for x in (a, b, c))
            anynan = np.isnan(fa) | np.isnan(fb) | np.isnan(fc)
            fm = _to_f(hi(hi(a, b), c))
            med = np.where(fm == fa, hi(b, c), np.where(fm == fb, hi(a, c), hi(a, b)))
            return np.where(anynan, lo(lo(a, b), c), med)
        return med3
    return make


#: min/max/med3 on f16 bits: mnemonic -> (IEEE mode -> bits function)
MINMAX16 = {mn: _minmax16_fns(mn) for mn in ("v_min_f16", "v_max_f16", "v_min3_f16", "v_max3_f16", "v_med3_f16")}


def _ldexp(a, e):
    return np.ldexp(a, np.clip(s16(e), -100, 100))


#: f16 -> f16 (floats in f64): mnemonic -> (fn, number of f16 sources; ldexp's 2nd is an int)
ARITH = {
    "v_add_f16": (lambda a, b: a + b, 2), "v_sub_f16": (lambda a, b: a - b, 2),
    "v_subrev_f16": (lambda a, b: b - a, 2), "v_mul_f16": (lambda a, b: a * b, 2),
    "v_max_f16": (_max, 2), "v_min_f16": (_min, 2),
    "v_mac_f16": (_mad, 3), "v_madmk_f16": (_mad, 3), "v_madak_f16": (_mad, 3),
    "v_mad_f16": (_mad, 3), "v_mad_legacy_f16": (_mad, 3),
    "v_fma_f16": (lambda a, b, c: a * b + c, 3), "v_fma_legacy_f16": (lambda a, b, c: a * b + c, 3),
    "v_min3_f16": (lambda a, b, c: _min(_min(a, b), c), 3),
    "v_max3_f16": (lambda a, b, c: _max(_max(a, b), c), 3),
    "v_med3_f16": (_med3, 3),
    "v_rcp_f16": (lambda a: 1.0 / a, 1), "v_sqrt_f16": (np.sqrt, 1),
    "v_rsq_f16": (lambda a: 1.0 / np.sqrt(a), 1), "v_log_f16": (np.log2, 1),
    "v_exp_f16": (np.exp2, 1), "v_floor_f16": (np.floor, 1), "v_ceil_f16": (np.ceil, 1),
    "v_trunc_f16": (np.trunc, 1), "v_rndne_f16": (_rndne, 1), "v_fract_f16": (_fract, 1),
    "v_sin_f16": (lambda a: np.sin(a * 2 * np.pi), 1), "v_cos_f16": (lambda a: np.cos(a * 2 * np.pi), 1),
    "v_frexp_mant_f16": (lambda a: np.where(np.isfinite(a), np.frexp(a)[0], a), 1),
}

#: f16 source(s) -> integer / other results: mnemonic -> fn(f64 values) -> uint32 bits
TO_INT = {
    "v_cvt_u16_f16": lambda a: np.clip(np.where(np.isnan(a), 0, np.trunc(a)), 0, 0xFFFF).astype(I64).astype(U32),
    "v_cvt_i16_f16": lambda a: (np.clip(np.where(np.isnan(a), 0, np.trunc(a)), -0x8000, 0x7FFF).astype(I64)
                                & 0xFFFF).astype(U32),
    "v_frexp_exp_i16_f16": lambda a: (np.where(np.isfinite(a), np.frexp(a)[1], 0).astype(I64) & 0xFFFF).astype(U32),
    "v_cvt_norm_i16_f16": lambda a: (np.rint(np.clip(np.nan_to_num(a), -1, 1) * 32767).astype(I64)
                                     & 0xFFFF).astype(U32),
    "v_cvt_norm_u16_f16": lambda a: np.rint(np.clip(np.nan_to_num(a), 0, 1) * 65535).astype(I64).astype(U32),
}

#: integer source -> f16
FROM_INT = {
    "v_cvt_f16_u16": lambda x: (np.asarray(x, U32) & U32(0xFFFF)).astype(F64),
    "v_cvt_f16_i16": lambda x: s16(x).astype(F64),
}


def _build(mn, kind):
    def build(ins, b, p):
        srcs = ins.src
        if mn in ("v_mac_f16",):
            srcs = ins.src[:2] + [ins.dst[0]]  # D = S0 * S1 + D
        d = ins.dst[0].reg
        sel = ins.f.get("op_sel", 0) if ins.encoding == "VOP3" else 0
        clamp, omod = ins.f.get("clamp", 0), ins.f.get("omod", 0)
        mul = {0: None, 1: 2.0, 2: 4.0, 3: 0.5}[omod]
        fn = {"arith": lambda: ARITH[mn][0], "to_int": lambda: TO_INT[mn],
              "from_int": lambda: FROM_INT[mn]}[kind]()
        nflt = ARITH[mn][1] if kind == "arith" else (1 if kind == "to_int" else 0)
        rd = [(raw_reader16 if i < nflt else _raw)(o) for i, o in enumerate(srcs)]
        bitwise = mn in MINMAX16

        def run(b, g):
            mode = mode_of(b, g)
            dm = denorm_bits(mode, "f16")
            vals = []
            for i, r in enumerate(rd):
                x = half(r(b, g), bool((sel >> i) & 1))
                if i < nflt and not (mn == "v_ldexp_f16" and i == 1):
                    x = _mod16(x, srcs[i])
                    if not (dm & 1):
                        x = flush16(x)
                    vals.append(x if bitwise else _to_f(x))
                else:
                    vals.append(x)
            with np.errstate(all="ignore"):
                if bitwise:  # the ISA pseudo-code on the bits (IEEE mode: signalling NaNs)
                    v = MINMAX16[mn](bool((mode >> 9) & 1))(*vals)
                    if mul is None and not clamp:
                        kind_out = "bits"
                    else:
                        v, kind_out = _to_f(v), kind
                else:
                    v, kind_out = fn(*vals), kind
                if kind_out in ("to_int", "bits"):
                    out = v
                    if kind_out == "bits" and not (dm & 2):
                        out = flush16(out)
                else:
                    if mul is not None:
                        v = v * mul
                    if clamp:
                        nan = np.isnan(v)
                        v = np.clip(v, 0.0, 1.0)
                        if (mode >> 8) & 1:
                            v = np.where(nan, 0.0, v)
                    out = from_f_rounded(v, round_bits(mode, "f16"))
                    if not (dm & 2):
                        out = flush16(out)
            out = np.asarray(out, U32).astype(I64) & 0xFFFF
            if (sel >> 3) & 1:
                out = (b.V[d][g.sel].astype(I64) & 0xFFFF) | (out << 16)
            b.vwrite(g, d, np.broadcast_to(out, (g.n, state.WAVE)).astype(U32))
        return run
    return build


ARITH["v_ldexp_f16"] = (_ldexp, 1)


# -- compares ----------------------------------------------------------------------------------

def _build_cmp(mn):
    parts = mn.split("_")
    x = parts[1] == "cmpx"
    cond, ty = parts[2], parts[-1]

    def build(ins, b, p):
        rd = [(raw_reader16 if ty == "f16" and not (i == 1 and cond == "class") else _raw)(o)
              for i, o in enumerate(ins.src[:2])]
        sel = ins.f.get("op_sel", 0) if ins.encoding == "VOP3" else 0
        wr = state.swriter(ins.dst[0])

        def run(b, g):
            a, c = (half(r(b, g), bool((sel >> i) & 1)) for i, r in enumerate(rd))
            if ty == "f16" and cond != "class" and not (denorm_bits(mode_of(b, g), "f16") & 1):
                a, c = flush16(a), flush16(c)   # FLOAT_DENORM_MODE_16_64 flushes inputs
            if ty == "f16":
                if cond == "class":
                    res = cmp_class16(_mod16(a, ins.src[0]), c)
                else:
                    res = O._fcmp(cond, _to_f(_mod16(a, ins.src[0])), _to_f(_mod16(c, ins.src[1])))
            elif ty == "i16":
                res = O.int_cmp(cond, s16(a), s16(c))
            else:
                res = O.int_cmp(cond, a.astype(I64), c.astype(I64))
            b.write_compare(g, wr, res, b.em(g), x)
        return run
    return build


def _cmp_names():
    from vlpc import isa as table
    return [mn for mn in table.opcodes("VOPC").values()
            if mn.endswith(("_f16", "_i16", "_u16"))]


BUILDERS = {mn: _build(mn, "arith") for mn in ARITH}
BUILDERS.update({mn: _build(mn, "to_int") for mn in TO_INT})
BUILDERS.update({mn: _build(mn, "from_int") for mn in FROM_INT})
BUILDERS.update({mn: _build_cmp(mn) for mn in _cmp_names()})
