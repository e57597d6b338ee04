"""VOP3-only and 16-bit integer instructions against the Vega ISA guide's pseudo-code.

Expected values are worked out by hand from the guide's definitions (noted per case).
"""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.runtime.emulator.testing import run_lanes


def run1(body, *cols):
    ins = [np.resize(np.array(c, np.uint32), 64) for c in cols]
    (out,), _ = run_lanes(body, ins)
    return [int(x) for x in out[: len(cols[0])]]


def test_v_add_i32_the_seed_instruction():
    # the seed's SGEMM: v_add_i32 v2, s34, v2 (VOP3 0x29c), signed add that wraps
    body = "v_readfirstlane_b32 s34, v10\nv_add_i32 v20, s34, v11"
    assert run1(body, [5, 5], [7, 0xFFFFFFFF]) == [12, 4]


@pytest.mark.parametrize("body, a, b, expect", [
    ("v_add_i32 v20, v10, v11", 0x7FFFFFFF, 1, 0x80000000),             # wraps
    ("v_add_i32 v20, v10, v11 clamp", 0x7FFFFFFF, 1, 0x7FFFFFFF),       # saturates at INT_MAX
    ("v_sub_i32 v20, v10, v11 clamp", 0x80000000, 1, 0x80000000),       # saturates at INT_MIN
    ("v_sub_i32 v20, v10, v11", 3, 5, 0xFFFFFFFE),
])
def test_v_add_sub_i32(body, a, b, expect):
    assert run1(body, [a], [b]) == [expect]


def test_v_bfe_i32_field_past_bit_31_repeats_the_sign():
    # (S0.i >> 28) & 0xff of 0x80000000 = 0xf8; bit 7 set -> sign-extended 0xfffffff8
    assert run1("v_bfe_i32 v20, v10, 28, 8", [0x80000000, 0x40000000]) == [0xFFFFFFF8, 4]


def test_v_perm_b32_byte_permute():
    # in[0..3] = bytes of S1, in[4..7] = bytes of S0; 12 -> 0x00, >= 13 -> 0xff,
    # 8/9/10/11 -> sign of in[1]/in[3]/in[5]/in[7]
    body = "v_perm_b32 v20, v10, v11, v12"
    out = run1(body, [0x8899AABB] * 2, [0x11223344] * 2, [0x0C0D0407, 0x0B0A0908])
    assert out == [0x00FFBB88, 0xFFFF0000]


def test_sad_and_lerp():
    assert run1("v_sad_u8 v20, v10, v11, 10", [0x01020304], [0x04030201]) == [18]
    assert run1("v_sad_hi_u8 v20, v10, v11, 10", [0x01020304], [0x04030201]) == [(8 << 16) + 10]
    assert run1("v_sad_u16 v20, v10, v11, 1", [0x00010005], [0x00040002]) == [3 + 3 + 1]
    assert run1("v_sad_u32 v20, v10, v11, 1", [2], [7]) == [6]
    # per byte (S0 + S1 + S2[8i]) >> 1
    assert run1("v_lerp_u8 v20, v10, v11, v12", [0x00FF0102], [0x00FF0304], [0x00000100]) == [0x00FF0203]


def test_16_bit_integer_ops_zero_the_high_half():
    assert run1("v_add_u16 v20, v10, v11", [0xABCDFFFF], [2]) == [1]
    assert run1("v_add_u16_e64 v20, v10, v11 clamp", [0xFFFF], [2]) == [0xFFFF]
    assert run1("v_sub_u16 v20, v10, v11", [1], [2]) == [0xFFFF]
    assert run1("v_ashrrev_i16 v20, 4, v10", [0x8000]) == [0xF800]
    assert run1("v_lshlrev_b16 v20, 17, v10", [0x0003]) == [0x0006]     # count masked to 4 bits
    assert run1("v_max_i16 v20, v10, v11", [0xFFFF], [1]) == [1]
    assert run1("v_min_u16 v20, v10, v11", [0xFFFF], [1]) == [1]
    assert run1("v_mul_lo_u16 v20, v10, v11", [0x1234], [0x100]) == [0x3400]
    assert run1("v_add_i16 v20, v10, v11 clamp", [0x7FFF], [1]) == [0x7FFF]


def test_op_sel_picks_and_writes_high_halves():
    # S0 high half 0x0003 + S1 low half 0x0004 -> written to the high half, low half kept
    body = "v_mov_b32 v20, v12\nv_add_i16 v20, v10, v11 op_sel:[1,0,1]"
    assert run1(body, [0x00030001], [0x00090004], [0x1111_2222]) == [0x0007_2222]


def test_mad_and_pack_conversions():
    assert run1("v_mad_u32_u16 v20, v10, v11, 10", [0x0002FFFF], [3]) == [0xFFFF * 3 + 10]
    assert run1("v_mad_i32_i16 v20, v10, v11, 0", [0xFFFF], [3]) == [(-3) & 0xFFFFFFFF]
    assert run1("v_cvt_pk_i16_i32 v20, v10, v11", [(-100000) & 0xFFFFFFFF], [5]) == [0x00058000]
    assert run1("v_cvt_pk_u16_u32 v20, v10, v11", [0x12345], [7]) == [0x0007FFFF]
    assert run1("v_med3_i16 v20, v10, v11, v12", [0xFFFF], [5], [2]) == [2]
    # byte 1 of S2 replaced by u8(2.5 -> 2, round to nearest even)
    assert run1("v_cvt_pk_u8_f32 v20, v10, 1, v11", [0x40200000], [0xAABBCCDD]) == [0xAABB02DD]
    assert run1("v_pack_b32_f16 v20, v10, v11", [0x00003C00], [0x0000C000]) == [0xC0003C00]


def test_packing_conversions():
    f = lambda x: int(np.array(x, np.float32).view(np.uint32))  # noqa: E731
    hb = lambda x: int(np.array(x, np.float16).view(np.uint16))  # noqa: E731
    # 1/3 toward zero in f16 is 0x3555 (round-to-nearest would give 0x3555 too); 65520 -> 65504 (no inf)
    assert run1("v_cvt_pkrtz_f16_f32 v20, v10, v11", [f(1 / 3)], [f(65520.0)]) == [0x3555 | (hb(65504.0) << 16)]
    assert run1("v_cvt_pkrtz_f16_f32 v20, v10, v11", [f(-1.0009765625 - 2 ** -12)], [0]) == [hb(-1.0009765625)]
    assert run1("v_cvt_pknorm_i16_f32 v20, v10, v11", [f(0.5)], [f(-2.0)]) == [16384 | (0x8001 << 16)]
    assert run1("v_cvt_pknorm_u16_f32 v20, v10, v11", [f(1.5)], [f(0.25)]) == [0xFFFF | (16384 << 16)]
    assert run1("v_cvt_off_f32_i4 v20, v10", [0xF, 0x7]) == [f(-0.0625), f(0.4375)]
    assert run1("v_sat_pk_u8_i16 v20, v10", [0x0100FFF0]) == [0xFF00]
