"""16-bit integer VALU instructions (VOP2, and their VOP3 forms): Vega ISA guide 12.7.

``D.u16 = op(S0.u16, S1.u16)`` on the low halves (VOP3 ``op_sel`` picks halves and
the destination half, see :func:`._util.op16`); shifts take the shift count from
S0 (``rev`` forms) masked to 4 bits; ``clamp`` saturates adds/subtracts to the
16-bit range.
"""

from __future__ import annotations

import numpy as np

from ._util import I64, op16, s16


def _u(x):
    return np.asarray(x, I64)


def _addsub(kind):
    def f(a, b, clamp=0):
        r = {"add": _u(a) + _u(b), "sub": _u(a) - _u(b), "subrev": _u(b) - _u(a)}[kind]
        return np.clip(r, 0, 0xFFFF) if clamp else r
    return f


#: mnemonic -> fn(S0.16, S1.16) on uint32 arrays holding 16 bits (also used by SDWA forms)
FUNCS = {
    "v_add_u16": _addsub("add"),
    "v_sub_u16": _addsub("sub"),
    "v_subrev_u16": _addsub("subrev"),
    "v_mul_lo_u16": lambda a, b: _u(a) * _u(b),
    "v_lshlrev_b16": lambda a, b: _u(b) << (_u(a) & 15),
    "v_lshrrev_b16": lambda a, b: _u(b) >> (_u(a) & 15),
    "v_ashrrev_i16": lambda a, b: s16(b) >> (_u(a) & 15),
    "v_max_u16": lambda a, b: np.maximum(_u(a), _u(b)),
    "v_min_u16": lambda a, b: np.minimum(_u(a), _u(b)),
    "v_max_i16": lambda a, b: np.maximum(s16(a), s16(b)),
    "v_min_i16": lambda a, b: np.minimum(s16(a), s16(b)),
}

BUILDERS = {mn: op16(fn) for mn, fn in FUNCS.items()}
