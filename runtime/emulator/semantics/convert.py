"""Packing conversions and legacy VOP1 ops (Vega ISA guide 12.7-12.8):

``v_cvt_pkrtz_f16_f32`` (D = {f16(S1), f16(S0)} rounded toward zero),
``v_cvt_pknorm_i16_f32``/``u16_f32`` and ``_f16`` (round(clamp(x, -1, 1) * 32767) /
round(clamp(x, 0, 1) * 65535) per half, NaN -> 0), ``v_cvt_off_f32_i4`` (signed
S0[3:0] / 16), ``v_sat_pk_u8_i16`` (each i16 half saturated to u8, packed in the low
16 bits), ``v_exp_legacy_f32`` / ``v_log_legacy_f32`` (2^x, log2 x, correctly rounded
here; hardware is approximate within 1 ulp).
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ._util import I64, U32, half, plain, s16

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


def _off_i4(a):
    v = np.asarray(a, U32).astype(I64) & 0xF
    v = np.where(v >= 8, v - 16, v)
    return (v.astype(F32) * F32(0.0625)).view(U32)


def _sat_pk_u8_i16(a):
    lo = np.clip(s16(half(a, False)), 0, 255)
    hi = np.clip(s16(half(a, True)), 0, 255)
    return (lo | (hi << 8)).astype(U32)


BUILDERS = {
    "v_cvt_pkrtz_f16_f32": plain(_pkrtz),
    "v_cvt_pknorm_i16_f32": plain(_pknorm_f32(True)),
    "v_cvt_pknorm_u16_f32": plain(_pknorm_f32(False)),
    "v_cvt_pknorm_i16_f16": plain(_pknorm_f16(True)),
    "v_cvt_pknorm_u16_f16": plain(_pknorm_f16(False)),
    "v_cvt_off_f32_i4": plain(_off_i4),
    "v_sat_pk_u8_i16": plain(_sat_pk_u8_i16),
    "v_exp_legacy_f32": plain(lambda a: O.b32(np.exp2(O.f32(a).astype(F64)).astype(F32))),
    "v_log_legacy_f32": plain(lambda a: O.b32(np.log2(O.f32(a).astype(F64)).astype(F32))),
}
