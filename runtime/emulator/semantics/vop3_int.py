"""VOP3-only integer instructions (Vega ISA guide 12.8, VOP3a opcodes 0x1c0..0x29f).

``v_add_i32``/``v_sub_i32`` (0x29c/0x29d: signed add without carry-out; ``clamp``
saturates to the int32 range), the 16-bit ``v_add_i16``/``v_sub_i16``,
``v_mad_u32_u16``/``v_mad_i32_i16``, ``v_mad_u16``/``v_mad_i16`` (and the legacy
forms), 16-bit ``min3``/``max3``/``med3``, ``v_perm_b32`` (BYTE_PERMUTE of
{S0, S1}), the SAD family (``v_sad_u8``, ``v_sad_hi_u8``, ``v_sad_u16``,
``v_sad_u32``), ``v_lerp_u8``, ``v_cvt_pk_u16_u32``/``v_cvt_pk_i16_i32``
(saturating), ``v_cvt_pk_u8_f32``, ``v_pack_b32_f16`` and ``v_bfe_i32`` (the
field is taken from the arithmetic shift ``S0.i >> offset``, so a field that
reaches past bit 31 repeats the sign bit).
"""

from __future__ import annotations

import numpy as np

from ._util import I64, U32, U64, half, op16, plain, s16
from .. import state

_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def _add_sub_i32(sub: bool):
    def build(ins, b, p):
        ra, rb = [state.vsrc_reader(o) for o in ins.src[:2]]
        wr = state.vwriter(ins.dst[0])
        clamp = ins.f.get("clamp", 0)

        def run(b, g):
            x = np.asarray(ra(b, g), U32).view(np.int32).astype(I64)
            y = np.asarray(rb(b, g), U32).view(np.int32).astype(I64)
            r = x - y if sub else x + y
            if clamp:
                r = np.clip(r, _I32_MIN, _I32_MAX)
            wr(b, g, r.astype(U32))
        return run
    return build


def _bfe_i32(x, off, width):
    """V_BFE_I32: D.i = sign-extended ((S0.i >> S1.u[4:0]) & ((1 << S2.u[4:0]) - 1))."""
    o = (np.asarray(off, U32) & U32(31)).astype(I64)
    w = (np.asarray(width, U32) & U32(31)).astype(I64)
    v = (np.asarray(x, U32).view(np.int32).astype(I64) >> o) & ((np.int64(1) << w) - 1)
    neg = (w > 0) & (((v >> np.maximum(w - 1, 0)) & 1) == 1)
    v = np.where(neg, v - (np.int64(1) << w), v)
    return np.where(w == 0, 0, v).astype(U32)


def _byte_permute(data, sel):
    """BYTE_PERMUTE(in[8], sel) of the Vega ISA guide (V_PERM_B32)."""
    sel = np.asarray(sel, U64) & U64(0xFF)
    byte = lambda i: (data >> (U64(8) * i)) & U64(0xFF)  # noqa: E731
    sx = lambda i: np.where((byte(U64(i)) >> U64(7)) & U64(1), U64(0xFF), U64(0))  # noqa: E731
    r = byte(np.minimum(sel, U64(7)))
    r = np.where(sel == 8, sx(1), r)
    r = np.where(sel == 9, sx(3), r)
    r = np.where(sel == 10, sx(5), r)
    r = np.where(sel == 11, sx(7), r)
    r = np.where(sel == 12, U64(0), r)
    r = np.where(sel >= 13, U64(0xFF), r)
    return r


def _perm(a, b_, c):
    data = (np.asarray(a, U32).astype(U64) << U64(32)) | np.asarray(b_, U32).astype(U64)
    s = np.asarray(c, U32).astype(U64)
    out = U64(0)
    for i in range(4):
        out = out | (_byte_permute(data, s >> U64(8 * i)) << U64(8 * i))
    return np.asarray(out, U64).astype(U32)


def _bytes(x):
    x = np.asarray(x, U32).astype(I64)
    return [(x >> (8 * i)) & 0xFF for i in range(4)]


def _sad_u8(a, b_, c):
    return (sum(np.abs(p - q) for p, q in zip(_bytes(a), _bytes(b_))) + np.asarray(c, U32).astype(I64)).astype(U32)


def _sad_hi_u8(a, b_, c):
    s = sum(np.abs(p - q) for p, q in zip(_bytes(a), _bytes(b_)))
    return ((s << 16) + np.asarray(c, U32).astype(I64)).astype(U32)


def _sad_u16(a, b_, c):
    s = sum(np.abs(half(a, h).astype(I64) - half(b_, h).astype(I64)) for h in (False, True))
    return (s + np.asarray(c, U32).astype(I64)).astype(U32)


def _sad_u32(a, b_, c):
    d = np.abs(np.asarray(a, U32).astype(I64) - np.asarray(b_, U32).astype(I64))
    return (d + np.asarray(c, U32).astype(I64)).astype(U32)


def _lerp_u8(a, b_, c):
    """V_LERP_U8: per byte ((S0 + S1 + S2[bit 0 of the byte]) >> 1)."""
    out = np.int64(0)
    for i, (p, q) in enumerate(zip(_bytes(a), _bytes(b_))):
        r = (np.asarray(c, U32).astype(I64) >> (8 * i)) & 1
        out = out | (((p + q + r) >> 1) << (8 * i))
    return np.asarray(out, I64).astype(U32)


def _sat(v, lo, hi):
    return np.clip(np.asarray(v, I64), lo, hi)


def _cvt_pk_u16_u32(a, b_):
    lo = _sat(np.asarray(a, U32).astype(I64), 0, 0xFFFF)
    hi = _sat(np.asarray(b_, U32).astype(I64), 0, 0xFFFF)
    return (lo | (hi << 16)).astype(U32)


def _cvt_pk_i16_i32(a, b_):
    lo = _sat(np.asarray(a, U32).view(np.int32).astype(I64), -0x8000, 0x7FFF) & 0xFFFF
    hi = _sat(np.asarray(b_, U32).view(np.int32).astype(I64), -0x8000, 0x7FFF) & 0xFFFF
    return (lo | (hi << 16)).astype(U32)


def _cvt_pk_u8_f32(a, b_, c):
    """V_CVT_PK_U8_F32: byte S1[1:0] of S2 replaced by u8(S0.f) (round to nearest even, clamped)."""
    f = np.asarray(a, U32).view(np.float32).astype(np.float64)
    v = np.clip(np.where(np.isnan(f), 0, np.rint(f)), 0, 255).astype(I64)
    sh = (np.asarray(b_, U32).astype(I64) & 3) * 8
    keep = np.asarray(c, U32).astype(I64) & ~(np.int64(0xFF) << sh)
    return (keep | (v << sh)).astype(U32)


def _mad16(signed: bool, legacy: bool = False):
    def f(a, b_, c, clamp=0):
        if signed:
            r = s16(a) * s16(b_) + s16(c)
            return _sat(r, -0x8000, 0x7FFF) if clamp else r
        r = a.astype(I64) * np.asarray(b_, I64) + np.asarray(c, I64)
        return _sat(r, 0, 0xFFFF) if clamp else r
    return f


def _mad32_16(signed: bool):
    def build(ins, b, p):
        rd = [state.vsrc_reader(o) for o in ins.src]
        wr = state.vwriter(ins.dst[0])
        sel = ins.f.get("op_sel", 0)

        def run(b, g):
            a, b_ = (half(rd[i](b, g), bool((sel >> i) & 1)) for i in range(2))
            c = np.asarray(rd[2](b, g), U32)
            if signed:
                r = s16(a) * s16(b_) + c.view(np.int32).astype(I64)
            else:
                r = a.astype(I64) * b_.astype(I64) + c.astype(I64)
            wr(b, g, r.astype(U32))
        return run
    return build


def _m3(kind, which):
    def f(a, b_, c):
        x = np.stack(np.broadcast_arrays(*(s16(v) if kind == "i" else np.asarray(v, I64) for v in (a, b_, c))))
        if which == "min":
            return x.min(axis=0)
        if which == "max":
            return x.max(axis=0)
        return np.sort(x, axis=0)[1]
    return f


def _add16(sub: bool, signed: bool):
    def f(a, b_, clamp=0):
        x, y = (s16(a), s16(b_)) if signed else (np.asarray(a, I64), np.asarray(b_, I64))
        r = x - y if sub else x + y
        if clamp:
            r = _sat(r, -0x8000, 0x7FFF) if signed else _sat(r, 0, 0xFFFF)
        return r
    return f


def _pack_mods(ins):
    from ._util import raw_reader16
    from .f16 import _mod16 as mod
    from .float_mode import denorm_bits, flush16, mode_of
    ra, rb = [raw_reader16(o) for o in ins.src[:2]]
    wr = state.vwriter(ins.dst[0])
    sel = ins.f.get("op_sel", 0)

    def run(b, g):
        lo = mod(half(ra(b, g), bool(sel & 1)), ins.src[0])
        hi = mod(half(rb(b, g), bool(sel & 2)), ins.src[1])
        if denorm_bits(mode_of(b, g), "f16") != 3:
            # an f16 operation: its denormal operands/results flush under FLOAT_DENORM_MODE_16_64
            # (LLVM selects it for build_vector only of canonical values: is_canonicalized_2)
            lo, hi = flush16(lo), flush16(hi)
        wr(b, g, (lo | (hi << U32(16))).astype(U32))
    return run


BUILDERS = {
    "v_add_i32": _add_sub_i32(False),
    "v_sub_i32": _add_sub_i32(True),
    "v_add_i16": op16(_add16(False, True)),
    "v_sub_i16": op16(_add16(True, True)),
    "v_bfe_i32": plain(_bfe_i32),
    "v_perm_b32": plain(_perm),
    "v_sad_u8": plain(_sad_u8),
    "v_sad_hi_u8": plain(_sad_hi_u8),
    "v_sad_u16": plain(_sad_u16),
    "v_sad_u32": plain(_sad_u32),
    "v_lerp_u8": plain(_lerp_u8),
    "v_cvt_pk_u16_u32": plain(_cvt_pk_u16_u32),
    "v_cvt_pk_i16_i32": plain(_cvt_pk_i16_i32),
    "v_cvt_pk_u8_f32": plain(_cvt_pk_u8_f32),
    "v_mad_u32_u16": _mad32_16(False),
    "v_mad_i32_i16": _mad32_16(True),
    "v_mad_u16": op16(_mad16(False)),
    "v_mad_i16": op16(_mad16(True)),
    "v_mad_legacy_u16": op16(_mad16(False, True)),
    "v_mad_legacy_i16": op16(_mad16(True, True)),
    "v_min3_i16": op16(_m3("i", "min")), "v_max3_i16": op16(_m3("i", "max")),
    "v_med3_i16": op16(_m3("i", "med")),
    "v_min3_u16": op16(_m3("u", "min")), "v_max3_u16": op16(_m3("u", "max")),
    "v_med3_u16": op16(_m3("u", "med")),
    "v_pack_b32_f16": lambda ins, b, p: _pack_mods(ins),
}
