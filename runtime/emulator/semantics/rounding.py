"""Directed rounding (FP_ROUND of the MODE register: 1 toward +inf, 2 toward -inf, 3 toward
zero) for the f32 and f64 arithmetic the emulator can compute exactly.

The exact result is an unevaluated sum ``hi + lo`` of two f64 values: an f32 product is
exact in f64, an f32 sum is exact as TwoSum(a, b), an f32 fma as TwoSum(a * b, c), an
f64 sum as TwoSum and an f64 product as TwoProduct (Dekker's splitting).  The
round-to-nearest result ``r`` is then moved one step toward the requested direction
when the exact residual ``(hi - r) + lo`` says it lies on the wrong side; overflow
follows IEEE 754 (toward zero and away from the overflow side give the largest finite
value).  Covered: ``v_add/sub/subrev/mul_f32``, ``v_fma_f32``, ``v_fmac_f32``,
``v_add_f64``, ``v_mul_f64``; other float instructions stop under a directed mode.
The sign of an exact zero sum follows round-to-nearest (-0 only from -0 + -0).
"""

from __future__ import annotations

import numpy as np

from ..ops import two_prod as _two_prod
from ..ops import two_sum as _two_sum

F32, F64 = np.float32, np.float64


def _exact(mn, vals):
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
                      "v_add_f64", "v_mul_f64"})


def directed(mn: str, vals, mode: int):
    """Raw result bits of ``mn`` on raw ``vals`` rounded per ``mode`` (1 +inf, 2 -inf, 3 zero)."""
    is64 = mn.endswith("_f64")
    ft = F64 if is64 else F32
    with np.errstate(all="ignore"):
        hi, lo = _exact(mn, vals)
        hi, lo = np.broadcast_arrays(hi, lo)
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
    return r.astype(ft).view(np.uint64 if is64 else np.uint32)
