"""f32 VALU bit functions (Vega ISA guide 12.7-12.11) in the IEEE default mode (the
float-mode-aware wrapper is :mod:`.vop_float`): rounding to integral, fract,
transcendentals (``v_rcp/rsq/sqrt/exp/log/sin/cos``: correctly rounded here, the
hardware is within 1 ulp), frexp, add/sub/mul (legacy mul: 0 * anything = 0),
min/max (NaN-avoiding), legacy mad (two roundings), min3/max3/med3, ldexp.
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ._util import F32, F64, I32, U32, _f, _i, _med3, _minmax3, _rndne


def _mad_f32(a, b, c):
    # legacy mad: product rounded to f32, then the sum (two roundings)
    return O.b32(O.f32(a) * O.f32(b) + O.f32(c))


def _rcp32(a):
    return O.b32((1.0 / O.f32(a).astype(F64)).astype(F32))


def _ldexp32(a, e):
    v = O.f32(a).astype(F64) * np.exp2(_i(e).astype(F64).clip(-400, 400))
    return O.b32(v.astype(F32))


def _fract32(a):
    x = O.f32(a)
    return O.b32(np.where(np.isinf(x), F32(np.nan), np.minimum(x - np.floor(x), F32(0.99999994))))


TABLE: dict = {
    "v_trunc_f32": _f(np.trunc),
    "v_ceil_f32": _f(np.ceil),
    "v_floor_f32": _f(np.floor),
    "v_rndne_f32": _f(_rndne),
    "v_fract_f32": _fract32,
    "v_rcp_f32": _rcp32,
    "v_rcp_iflag_f32": _rcp32,
    "v_rsq_f32": lambda a: O.b32((1.0 / np.sqrt(O.f32(a).astype(F64))).astype(F32)),
    "v_sqrt_f32": _f(np.sqrt),
    "v_exp_f32": _f(np.exp2),
    "v_log_f32": _f(np.log2),
    "v_sin_f32": lambda a: O.b32(np.sin(O.f32(a).astype(F64) * 2 * np.pi).astype(F32)),
    "v_cos_f32": lambda a: O.b32(np.cos(O.f32(a).astype(F64) * 2 * np.pi).astype(F32)),
    "v_frexp_mant_f32": _f(lambda x: np.frexp(x)[0]),
    "v_frexp_exp_i32_f32": lambda a: np.frexp(O.f32(a))[1].astype(I32).view(U32),
    "v_add_f32": _f(lambda a, b: a + b),
    "v_sub_f32": _f(lambda a, b: a - b),
    "v_subrev_f32": _f(lambda a, b: b - a),
    "v_mul_f32": _f(lambda a, b: a * b),
    "v_mul_legacy_f32": _f(lambda a, b: np.where((a == 0) | (b == 0), F32(0), a * b)),
    "v_min_f32": _f(np.fmin),
    "v_max_f32": _f(np.fmax),
    "v_mac_f32": _mad_f32,
    "v_mad_f32": _mad_f32,
    "v_mad_legacy_f32": _mad_f32,
    "v_madmk_f32": _mad_f32,
    "v_madak_f32": _mad_f32,
    "v_min3_f32": _minmax3("f", np.fmin),
    "v_max3_f32": _minmax3("f", np.fmax),
    "v_med3_f32": _med3("f"),
    "v_ldexp_f32": _ldexp32,
}


