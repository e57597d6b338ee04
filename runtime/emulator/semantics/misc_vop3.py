"""Remaining VOP3-only ALU instructions (Vega ISA guide 12.8 pseudo-code):

* cube map: ``v_cubeid_f32`` (face 0..5 of the major axis: z if |S2| >= |S0|, |S1|, else
  y if |S1| >= |S0|, else x; odd for a negative axis), ``v_cubesc_f32`` (z: S2 < 0 ?
  -S0 : S0; y: S0; x: S0 < 0 ? S2 : -S2), ``v_cubetc_f32`` (z, x: -S1; y: S1 < 0 ?
  -S2 : S2), ``v_cubema_f32`` (2 * the major-axis value);
* masked SAD: ``v_msad_u8`` (byte i counts only where S1's byte i is non-zero), the
  quad SADs ``v_qsad_pk_u16_u8`` / ``v_mqsad_pk_u16_u8`` (four 16-bit accumulators of
  SAD(S0.u64 >> 8k, S1) + S2.u16[k]; m: masked) and ``v_mqsad_u32_u8`` (32-bit
  accumulators in a 128-bit S2/D);
* ``v_cvt_pkaccum_u8_f32``: byte S1[1:0] of D replaced by u8(S0.f) (round to nearest
  even, clamped to 0..255), the other bytes of D kept;
* ``v_trig_preop_f64``: 53-bit segment S1[4:0] of 2/pi (1201 bits, computed here from
  Machin's formula), see :func:`trig_preop`.
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ._util import I64, U32, U64, plain
from .. import state

F32 = np.float32


def _axes(a, b_, c):
    x, y, z = O.f32(a), O.f32(b_), O.f32(c)
    zmaj = (np.abs(z) >= np.abs(x)) & (np.abs(z) >= np.abs(y))
    ymaj = ~zmaj & (np.abs(y) >= np.abs(x))
    return x, y, z, zmaj, ymaj


def _cubeid(a, b_, c):
    x, y, z, zm, ym = _axes(a, b_, c)
    r = np.where(zm, np.where(z < 0, 5, 4), np.where(ym, np.where(y < 0, 3, 2), np.where(x < 0, 1, 0)))
    return O.b32(r.astype(F32))


def _cubesc(a, b_, c):
    x, y, z, zm, ym = _axes(a, b_, c)
    return O.b32(np.where(zm, np.where(z < 0, -x, x), np.where(ym, x, np.where(x < 0, z, -z))).astype(F32))


def _cubetc(a, b_, c):
    x, y, z, zm, ym = _axes(a, b_, c)
    return O.b32(np.where(zm, -y, np.where(ym, np.where(y < 0, -z, z), -y)).astype(F32))


def _cubema(a, b_, c):
    x, y, z, zm, ym = _axes(a, b_, c)
    with np.errstate(all="ignore"):
        return O.b32((F32(2) * np.where(zm, z, np.where(ym, y, x))).astype(F32))


def _bytes(x, n=4):
    x = np.asarray(x, U64).astype(I64) if np.asarray(x).dtype == U64 else np.asarray(x, U32).astype(I64)
    return [(x >> (8 * i)) & 0xFF for i in range(n)]


def _sad(s0_bytes, ref_bytes, masked):
    tot = 0
    for p, q in zip(s0_bytes, ref_bytes):
        d = np.abs(p - q)
        tot = tot + (np.where(q != 0, d, 0) if masked else d)
    return tot


def _msad(a, b_, c):
    return (_sad(_bytes(a), _bytes(b_), True) + np.asarray(c, U32).astype(I64)).astype(U32)


def _qsad(masked, wide):
    def f(a, b_, c):
        a = np.asarray(a, U64)
        ref = _bytes(b_)
        out = np.zeros(np.broadcast_shapes(a.shape, np.shape(b_)), U64) if not wide else None
        acc = []
        for k in range(4):
            win = _bytes((a >> U64(8 * k)) & U64(0xFFFFFFFF))
            s = _sad(win, ref, masked)
            if wide:
                acc.append(s)
            else:
                base = (np.asarray(c, U64) >> U64(16 * k)) & U64(0xFFFF)
                v = np.minimum(s + base.astype(I64), 0xFFFF).astype(U64)
                out = out | (v << U64(16 * k))
        return out if not wide else acc
    return f


def _build_mqsad_u32(ins, b, p):
    ra, rb = state.vsrc_reader(ins.src[0]), state.vsrc_reader(ins.src[1])
    c = ins.src[2]
    d = ins.dst[0].reg
    f = _qsad(True, True)

    def run(b, g):
        sums = f(ra(b, g), rb(b, g), None)
        for k in range(4):
            acc = b.V[c.reg + k][g.sel].astype(I64) if c.kind == "v" else np.int64(c.value if k == 0 else 0)
            v = np.minimum(sums[k] + acc, 0xFFFFFFFF).astype(U32)
            b.vwrite(g, d + k, np.broadcast_to(v, (g.n, state.WAVE)))
    return run


def _build_pkaccum(ins, b, p):
    ra, rb = state.vsrc_reader(ins.src[0]), state.vsrc_reader(ins.src[1])
    d = ins.dst[0].reg

    def run(b, g):
        fv = O.f32(ra(b, g)).astype(np.float64)
        v = np.clip(np.where(np.isnan(fv), 0, np.rint(fv)), 0, 255).astype(I64)
        sh = (np.asarray(rb(b, g), U32).astype(I64) & 3) * 8
        cur = b.V[d][g.sel].astype(I64)
        out = (cur & ~(np.int64(0xFF) << sh)) | (v << sh)
        b.vwrite(g, d, np.broadcast_to(out, (g.n, state.WAVE)).astype(U32))
    return run


def _f32x3(fn):
    """Three f32 sources and an f32 result under the wave's FP_DENORM mode and output modifiers
    (exact: a selection, a negation or a doubling, so any FP_ROUND mode)."""
    from .float_mode import plain_flushed
    return plain_flushed(fn, ("f32", "f32", "f32"), "f32", exact=True)


BUILDERS = {
    "v_cubeid_f32": _f32x3(_cubeid), "v_cubesc_f32": _f32x3(_cubesc), "v_cubetc_f32": _f32x3(_cubetc),
    "v_cubema_f32": _f32x3(_cubema), "v_msad_u8": plain(_msad),
    "v_qsad_pk_u16_u8": plain(_qsad(False, False)), "v_mqsad_pk_u16_u8": plain(_qsad(True, False)),
    "v_mqsad_u32_u8": _build_mqsad_u32, "v_cvt_pkaccum_u8_f32": _build_pkaccum,
}


# -- v_trig_preop_f64 ---------------------------------------------------------------------------

def _pi_fixed(bits: int) -> int:
    """floor(pi * 2^bits) by Machin's formula in integer arithmetic (guard bits included)."""
    g = bits + 32
    one = 1 << g

    def atan_inv(x):
        total, term, k, sign = 0, one // x, 1, 1
        x2 = x * x
        while term:
            total += sign * (term // k)
            term //= x2
            k += 2
            sign = -sign
        return total
    return (16 * atan_inv(5) - 4 * atan_inv(239)) >> 32


def _two_over_pi_bits() -> int:
    """2/pi as 0.b1200 b1199 ... b0: floor(2/pi * 2^1201)."""
    return (2 << (1201 + 1300)) // _pi_fixed(1300)


_TOP = _two_over_pi_bits()


def trig_preop(s0_bits: int, seg: int) -> float:
    """V_TRIG_PREOP_F64: the 53-bit segment ``seg`` (S1[4:0]) of 2/pi, scaled so that the
    segments sum to 2/pi; for exponent(S0) > 1077 the window moves down by
    exponent(S0) - 1077 bits (and the scale up by 2^128 for exponent >= 1968)."""
    import math
    e = (s0_bits >> 52) & 0x7FF
    shift = (seg & 31) * 53
    if e > 1077:
        shift += e - 1077
    sh = 1201 - 53 - shift
    result = (_TOP >> sh) if sh >= 0 else (_TOP << -sh)
    result &= (1 << 53) - 1
    scale = -53 - shift
    if e >= 1968:
        scale += 128
    return math.ldexp(float(result), scale)


def _trig_preop(a, c):
    a = np.asarray(a, U64)
    c = np.asarray(c, U32)
    a, c = np.broadcast_arrays(a, c)
    out = np.empty(a.shape, np.float64)
    for idx in np.ndindex(a.shape):
        out[idx] = trig_preop(int(a[idx]), int(c[idx]))
    return out.view(U64)


BUILDERS["v_trig_preop_f64"] = plain(_trig_preop)
