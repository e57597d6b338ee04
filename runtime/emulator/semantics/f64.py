"""f64 VALU bit functions (Vega ISA guide 12.7-12.11) in the IEEE default mode:
rounding to integral, fract, rcp/rsq/sqrt, frexp, fma (correctly rounded: ops.fma64),
add/mul/min/max, ldexp.  Values are raw uint64 arrays.
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ._util import I32, U32, _d, _i, _rndne


def _fract64(a):
    x = O.f64(a)
    return O.b64(np.where(np.isinf(x), np.nan, np.minimum(x - np.floor(x), 0.9999999999999999)))


TABLE: dict = {
    "v_trunc_f64": _d(np.trunc),
    "v_ceil_f64": _d(np.ceil),
    "v_floor_f64": _d(np.floor),
    "v_rndne_f64": _d(_rndne),
    "v_fract_f64": _fract64,
    "v_rcp_f64": _d(lambda x: 1.0 / x),
    "v_rsq_f64": _d(lambda x: 1.0 / np.sqrt(x)),
    "v_sqrt_f64": _d(np.sqrt),
    "v_frexp_mant_f64": _d(lambda x: np.frexp(x)[0]),
    "v_frexp_exp_i32_f64": lambda a: np.frexp(O.f64(a))[1].astype(I32).view(U32),
    "v_fma_f64": O.fma64,
    "v_add_f64": _d(lambda a, b: a + b),
    "v_mul_f64": _d(lambda a, b: a * b),
    "v_min_f64": _d(np.fmin),
    "v_max_f64": _d(np.fmax),
    "v_ldexp_f64": lambda a, e: O.b64(np.ldexp(O.f64(a), _i(e).clip(-2200, 2200))),
}


