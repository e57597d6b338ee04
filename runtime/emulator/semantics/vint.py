"""Vector integer ALU bit functions (Vega ISA guide 12.7-12.11): moves, bit counts and
reversals, 24-bit and 32-bit multiplies, min/max/med3, shifts (the shift count's low
5 bits; 6 for 64-bit shifts), logic, bit-field extract/insert/mask, align, and the
GFX9 three-operand adds/shifts.  Values are raw uint32 (uint64 for ``_b64``) arrays;
the generic builder :func:`.valu.build_valu` reads operands and writes results.
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ._util import I32, I64, U32, U64, _i, _med3, _minmax3, _shift


def _mul_lo(a, b):
    return (np.asarray(a, U32).astype(U64) * np.asarray(b, U32).astype(U64)).astype(U32)


def _mul_hi_u(a, b):
    return ((np.asarray(a, U32).astype(U64) * np.asarray(b, U32).astype(U64)) >> U64(32)).astype(U32)


def _mul_hi_i(a, b):
    p = np.asarray(a, U32).view(I32).astype(I64) * np.asarray(b, U32).view(I32).astype(I64)
    return (p >> 32).astype(I64).astype(U32)


def _u24(x):
    return np.asarray(x, U32) & U32(0xFFFFFF)


def _i24(x):
    return O.sext(x, 24)


def _alignbit(a, b, c):
    v = (O.u64_of(b, a) >> (np.asarray(c, U32) & U32(31)).astype(U64))
    return (v & U64(0xFFFFFFFF)).astype(U32)


def _alignbyte(a, b, c):
    v = (O.u64_of(b, a) >> ((np.asarray(c, U32) & U32(3)) * U32(8)).astype(U64))
    return (v & U64(0xFFFFFFFF)).astype(U32)


def _ffbh_i32(a):
    x = _i(a).astype(I64)
    y = np.where(x < 0, ~x, x).astype(U32)
    r = O.ffbh_u32(y)
    # count of leading bits equal to the sign bit, minus one -> position of first differing bit
    return np.where((x == 0) | (x == -1), U32(0xFFFFFFFF), r)


TABLE: dict = {
    "v_mov_b32": lambda a: np.asarray(a, U32),
    "v_not_b32": lambda a: ~np.asarray(a, U32),
    "v_bfrev_b32": O.brev32,
    "v_ffbh_u32": O.ffbh_u32,
    "v_ffbl_b32": O.ffbl_b32,
    "v_ffbh_i32": _ffbh_i32,
    "v_mul_i32_i24": lambda a, b: (_i24(a) * _i24(b)).astype(U32),
    "v_mul_hi_i32_i24": lambda a, b: ((_i24(a) * _i24(b)) >> 32).astype(U32),
    "v_mul_u32_u24": lambda a, b: (_u24(a).astype(U64) * _u24(b).astype(U64)).astype(U32),
    "v_mul_hi_u32_u24": lambda a, b: ((_u24(a).astype(U64) * _u24(b).astype(U64)) >> U64(32)).astype(U32),
    "v_min_i32": lambda a, b: np.minimum(_i(a), _i(b)).view(U32),
    "v_max_i32": lambda a, b: np.maximum(_i(a), _i(b)).view(U32),
    "v_min_u32": lambda a, b: np.minimum(np.asarray(a, U32), b),
    "v_max_u32": lambda a, b: np.maximum(np.asarray(a, U32), b),
    "v_lshrrev_b32": lambda a, b: np.asarray(b, U32) >> _shift(a),
    "v_ashrrev_i32": lambda a, b: (_i(b) >> _shift(a).astype(I32)).view(U32),
    "v_lshlrev_b32": lambda a, b: np.asarray(b, U32) << _shift(a),
    "v_and_b32": lambda a, b: np.asarray(a, U32) & b,
    "v_or_b32": lambda a, b: np.asarray(a, U32) | b,
    "v_xor_b32": lambda a, b: np.asarray(a, U32) ^ b,
    "v_xnor_b32": lambda a, b: ~(np.asarray(a, U32) ^ b),
    "v_add_u32": lambda a, b: np.asarray(a, U32) + b,
    "v_sub_u32": lambda a, b: np.asarray(a, U32) - b,
    "v_subrev_u32": lambda a, b: np.asarray(b, U32) - a,
    "v_mad_i32_i24": lambda a, b, c: (_i24(a) * _i24(b) + _i(c)).astype(U32),
    "v_mad_u32_u24": lambda a, b, c: (_u24(a).astype(U64) * _u24(b).astype(U64) + np.asarray(c, U32)).astype(U32),
    "v_bfe_u32": O.bfe_u32,
    "v_bfe_i32": O.bfe_i32,
    "v_bfi_b32": lambda a, b, c: (np.asarray(a, U32) & b) | (~np.asarray(a, U32) & c),
    "v_alignbit_b32": _alignbit,
    "v_alignbyte_b32": _alignbyte,
    "v_min3_i32": _minmax3("i", np.minimum),
    "v_max3_i32": _minmax3("i", np.maximum),
    "v_min3_u32": _minmax3("u", np.minimum),
    "v_max3_u32": _minmax3("u", np.maximum),
    "v_med3_i32": _med3("i"),
    "v_med3_u32": _med3("u"),
    "v_xad_u32": lambda a, b, c: (np.asarray(a, U32) ^ b) + np.asarray(c, U32),
    "v_lshl_add_u32": lambda a, b, c: (np.asarray(a, U32) << _shift(b)) + np.asarray(c, U32),
    "v_add_lshl_u32": lambda a, b, c: (np.asarray(a, U32) + b) << _shift(c),
    "v_add3_u32": lambda a, b, c: np.asarray(a, U32) + b + c,
    "v_lshl_or_b32": lambda a, b, c: (np.asarray(a, U32) << _shift(b)) | c,
    "v_and_or_b32": lambda a, b, c: (np.asarray(a, U32) & b) | c,
    "v_or3_b32": lambda a, b, c: np.asarray(a, U32) | b | c,
    "v_mul_lo_u32": _mul_lo,
    "v_mul_hi_u32": _mul_hi_u,
    "v_mul_hi_i32": _mul_hi_i,
    "v_bcnt_u32_b32": lambda a, b: O.popcount32(a) + np.asarray(b, U32),
    "v_bfm_b32": lambda a, b: (((U64(1) << (np.asarray(a, U32) & U32(31)).astype(U64)) - U64(1))
                               << (np.asarray(b, U32) & U32(31)).astype(U64)).astype(U32),
    "v_lshlrev_b64": lambda a, b: np.asarray(b, U64) << (np.asarray(a, U32) & U32(63)).astype(U64),
    "v_lshrrev_b64": lambda a, b: np.asarray(b, U64) >> (np.asarray(a, U32) & U32(63)).astype(U64),
    "v_ashrrev_i64": lambda a, b: (np.asarray(b, U64).view(I64) >> (np.asarray(a, U32) & U32(63)).astype(I64)).view(U64),
}


