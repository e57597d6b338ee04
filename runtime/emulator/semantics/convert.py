"""Conversions (Vega ISA guide 12.7-12.8).

:data:`TABLE`: the plain ones (int <-> f32/f64, f32 <-> f64, f32 <-> f16 through
:mod:`.f16`'s half-precision helpers, ``rpi``/``flr``, ``ubyteN``), run by the generic
builder :func:`.valu.build_valu`; the float-mode-aware forms are :mod:`.vop_float`'s.

:data:`BUILDERS`: packing conversions and legacy VOP1 ops:

``v_cvt_pkrtz_f16_f32`` (D = {f16(S1), f16(S0)} rounded toward zero whatever the
round mode), ``v_cvt_pknorm_i16_f32``/``u16_f32`` and ``_f16`` (round(clamp(x, -1, 1) *
32767) / round(clamp(x, 0, 1) * 65535) per half, NaN -> 0).  These follow the wave's
MODE (Vega ISA guide 3.3): f32 sources are flushed to a signed zero when
FLOAT_DENORM_MODE_32 flushes inputs, f16 sources (``_f16`` forms: the low half, or the
high one with VOP3 ``op_sel``; ``abs``/``neg`` act on bit 15; an inline float constant is
its f16 encoding) when FLOAT_DENORM_MODE_16_64 does, and ``v_cvt_pkrtz``'s f16 halves
when FLOAT_DENORM_MODE_16_64 flushes results.  ``clamp`` on ``v_cvt_pknorm`` changes
nothing (its results are already saturated); ``omod``, and ``clamp`` on
``v_cvt_pkrtz``, stop with UnsupportedInstruction (the guide does not define them for a
packed result).  ``v_cvt_off_f32_i4`` (signed
S0[3:0] / 16), ``v_sat_pk_u8_i16`` (each i16 half saturated to u8, packed in the low
16 bits), ``v_exp_legacy_f32`` / ``v_log_legacy_f32`` (2^x, log2 x, correctly rounded
here; hardware is approximate within 1 ulp).
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ..errors import UnsupportedInstruction
from ._util import I64, U32, _i, half, plain, raw_reader, raw_reader16, s16
from .float_mode import denorm_bits, flush16, flush32, mode_of, plain_flushed
from .. import state

F16, F32, F64 = np.float16, np.float32, np.float64


def _f16_rtz(x):
    """f32 values (as f64) -> f16 bits rounded toward zero."""
    x = np.asarray(x, F64)
    with np.errstate(all="ignore"):
        r = x.astype(F16)
        over = np.isfinite(x) & (np.abs(r.astype(F64)) > np.abs(x))
        r = np.where(over, np.nextafter(r, F16(0)), r).astype(F16)
    return r.view(np.uint16).astype(U32)


def _pkrtz(a, b_):
    return _f16_rtz(O.f32(a).astype(F64)) | (_f16_rtz(O.f32(b_).astype(F64)) << U32(16))


def _norm(x, signed):
    x = np.where(np.isnan(x), 0.0, x)
    if signed:
        return (np.rint(np.clip(x, -1, 1) * 32767).astype(I64) & 0xFFFF).astype(U32)
    return np.rint(np.clip(x, 0, 1) * 65535).astype(I64).astype(U32)


def _pknorm_f32(signed):
    return lambda a, b_: _norm(O.f32(a).astype(F64), signed) | (_norm(O.f32(b_).astype(F64), signed) << U32(16))


def _pknorm_f16(signed):
    def f(a, b_):
        fa = (half(a, False)).astype(np.uint16).view(F16).astype(F64)
        fb = (half(b_, False)).astype(np.uint16).view(F16).astype(F64)
        return _norm(fa, signed) | (_norm(fb, signed) << U32(16))
    return f


def _sign_mods(x, o, sign):
    if o.abs:
        x = x & U32(~sign & 0xFFFFFFFF)
    if o.neg:
        x = x ^ U32(sign)
    return x


def _build_packing(fn, src16: bool, out16: bool):
    """Builder of a two-source packing conversion ``D = fn(S0, S1)`` under the wave's MODE:
    f32 sources (or, ``src16``, the f16 halves op_sel picks) flushed by their type's
    denorm mode, and (``out16``) both f16 result halves flushed by FLOAT_DENORM_MODE_16_64."""
    def build(ins, b, p):
        mn = ins.mnemonic
        if ins.f.get("omod", 0) or (out16 and ins.f.get("clamp", 0)):
            raise UnsupportedInstruction(f"{mn}: the clamp/omod output modifiers of a packed f16 "
                                         f"result are not defined by the Vega ISA guide", mnemonic=mn)
        srcs = ins.src[:2]
        rd = [(raw_reader16 if src16 else raw_reader)(o) for o in srcs]
        sel = ins.f.get("op_sel", 0) if (src16 and ins.encoding == "VOP3") else 0
        wr = state.vwriter(ins.dst[0])
        st, sign, flush = ("f16", 0x8000, flush16) if src16 else ("f32", 0x80000000, flush32)

        def run(b, g):
            mode = mode_of(b, g)
            keep_in = denorm_bits(mode, st) & 1
            vals = []
            for i, (r, o) in enumerate(zip(rd, srcs)):
                x = np.asarray(r(b, g), U32)
                if src16:
                    x = half(x, bool((sel >> i) & 1))
                x = _sign_mods(x, o, sign)
                vals.append(x if keep_in else flush(x))
            with np.errstate(all="ignore"):
                v = np.asarray(fn(*vals), U32)
            if out16 and not (denorm_bits(mode, "f16") & 2):
                v = flush16(v & U32(0xFFFF)) | (flush16(v >> U32(16)) << U32(16))
            wr(b, g, v)
        return run
    return build


def _off_i4(a):
    v = np.asarray(a, U32).astype(I64) & 0xF
    v = np.where(v >= 8, v - 16, v)
    return (v.astype(F32) * F32(0.0625)).view(U32)


def _sat_pk_u8_i16(a):
    lo = np.clip(s16(half(a, False)), 0, 255)
    hi = np.clip(s16(half(a, True)), 0, 255)
    return (lo | (hi << 8)).astype(U32)


#: bit functions of the legacy VOP1 ops (also run by the SDWA/DPP forms, :mod:`.sdwa_dpp`)
RAW = {
    "v_cvt_off_f32_i4": _off_i4,
    "v_exp_legacy_f32": lambda a: O.b32(np.exp2(O.f32(a).astype(F64)).astype(F32)),
    "v_log_legacy_f32": lambda a: O.b32(np.log2(O.f32(a).astype(F64)).astype(F32)),
    "v_sat_pk_u8_i16": _sat_pk_u8_i16,
}

BUILDERS = {
    "v_cvt_pkrtz_f16_f32": _build_packing(_pkrtz, False, True),
    "v_cvt_pknorm_i16_f32": _build_packing(_pknorm_f32(True), False, False),
    "v_cvt_pknorm_u16_f32": _build_packing(_pknorm_f32(False), False, False),
    "v_cvt_pknorm_i16_f16": _build_packing(_pknorm_f16(True), True, False),
    "v_cvt_pknorm_u16_f16": _build_packing(_pknorm_f16(False), True, False),
    "v_cvt_off_f32_i4": plain(RAW["v_cvt_off_f32_i4"]),
    "v_sat_pk_u8_i16": plain(RAW["v_sat_pk_u8_i16"]),
    "v_exp_legacy_f32": plain_flushed(RAW["v_exp_legacy_f32"], ("f32",), "f32"),
    "v_log_legacy_f32": plain_flushed(RAW["v_log_legacy_f32"], ("f32",), "f32"),
}


# ---- the plain conversions (generic VALU builder) ----


def _cvt_f16_f32(a):
    from .f16 import _from_f
    return _from_f(O.f32(a))


def _cvt_f32_f16(a):
    from .f16 import _to_f
    return O.b32(_to_f(a).astype(F32))


def _ubyte(n):
    return lambda a: O.b32(((np.asarray(a, U32) >> U32(8 * n)) & U32(0xFF)).astype(F32))


TABLE: dict = {
    "v_cvt_f32_i32": lambda a: O.b32(_i(a).astype(F32)),
    "v_cvt_f32_u32": lambda a: O.b32(np.asarray(a, U32).astype(F32)),
    "v_cvt_u32_f32": O.f32_to_u32,
    "v_cvt_i32_f32": O.f32_to_i32,
    "v_cvt_f64_f32": lambda a: O.b64(O.f32(a).astype(F64)),
    "v_cvt_f32_f64": lambda a: O.b32(O.f64(a).astype(F32)),
    "v_cvt_f64_i32": lambda a: O.b64(_i(a).astype(F64)),
    "v_cvt_f64_u32": lambda a: O.b64(np.asarray(a, U32).astype(F64)),
    "v_cvt_i32_f64": O.f64_to_i32,
    "v_cvt_u32_f64": O.f64_to_u32,
    "v_cvt_f16_f32": _cvt_f16_f32,
    "v_cvt_f32_f16": _cvt_f32_f16,
    "v_cvt_rpi_i32_f32": lambda a: O.f32_to_i32(O.b32(np.floor(O.f32(a) + F32(0.5)))),
    "v_cvt_flr_i32_f32": lambda a: O.f32_to_i32(O.b32(np.floor(O.f32(a)))),
    "v_cvt_f32_ubyte0": _ubyte(0),
    "v_cvt_f32_ubyte1": _ubyte(1),
    "v_cvt_f32_ubyte2": _ubyte(2),
    "v_cvt_f32_ubyte3": _ubyte(3),
}


