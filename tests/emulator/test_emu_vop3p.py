"""VOP3P (packed 16-bit math, dot products, fma_mix) against the ISA definitions,
worked out by hand (integers) or with NumPy's float16/float32 (floats)."""

from __future__ import annotations

import numpy as np

from vlpc.runtime.emulator.testing import run_lanes


def hb(x):
    return int(np.array(x, np.float16).view(np.uint16))


def pk(lo, hi):
    return lo | (hi << 16)


def run1(body, *cols):
    ins = [np.resize(np.asarray(c, np.uint32), 64) for c in cols]
    (out,), _ = run_lanes(body, ins)
    return [int(x) for x in out[: len(cols[0])]]


def test_packed_integer():
    assert run1("v_pk_add_u16 v20, v10, v11", [pk(0xFFFF, 1)], [pk(1, 2)]) == [pk(0, 3)]
    assert run1("v_pk_add_u16 v20, v10, v11 clamp", [pk(0xFFFF, 1)], [pk(1, 2)]) == [pk(0xFFFF, 3)]
    assert run1("v_pk_sub_i16 v20, v10, v11", [pk(1, 5)], [pk(2, 7)]) == [pk(0xFFFF, 0xFFFE)]
    assert run1("v_pk_mad_u16 v20, v10, v11, v12", [pk(3, 4)], [pk(5, 6)], [pk(1, 2)]) == [pk(16, 26)]
    assert run1("v_pk_ashrrev_i16 v20, v10, v11", [pk(1, 4)], [pk(0x8000, 0x8000)]) == [pk(0xC000, 0xF800)]
    # op_sel / op_sel_hi choose the source halves of each lane
    out = run1("v_pk_add_u16 v20, v10, v11 op_sel:[1,0] op_sel_hi:[0,1]", [pk(10, 20)], [pk(1, 2)])
    assert out == [pk(20 + 1, 10 + 2)]


def test_packed_f16():
    a, b, c = pk(hb(1.5), hb(2.0)), pk(hb(2.0), hb(3.0)), pk(hb(0.5), hb(-1.0))
    assert run1("v_pk_fma_f16 v20, v10, v11, v12", [a], [b], [c]) == [pk(hb(3.5), hb(5.0))]
    assert run1("v_pk_mul_f16 v20, v10, v11 neg_hi:[1,0]", [a], [b]) == [pk(hb(3.0), hb(-6.0))]
    assert run1("v_pk_max_f16 v20, v10, v11", [a], [b]) == [pk(hb(2.0), hb(3.0))]


def test_dot_products():
    a, b = pk(hb(1.5), hb(2.0)), pk(hb(2.0), hb(3.0))
    acc = int(np.array(0.25, np.float32).view(np.uint32))
    assert run1("v_dot2_f32_f16 v20, v10, v11, v12", [a], [b], [acc]) == \
        [int(np.array(9.25, np.float32).view(np.uint32))]
    # bytes [1, -2, 3, -4] . [5, 6, -7, 8] = 5 - 12 - 21 - 32 = -60, + 100
    assert run1("v_dot4_i32_i8 v20, v10, v11, v12", [0xFC03FE01], [0x08F90605], [100]) == [40]
    assert run1("v_dot4_u32_u8 v20, v10, v11, v12", [0x01020304], [0x01010101], [0]) == [10]
    # nibbles of 0xF1 (1, -1) . 0x22 (2, 2) = 0; all 8 nibbles: -1*-1 * 8 = 8
    assert run1("v_dot8_i32_i4 v20, v10, v11, v12", [0xFFFFFFFF], [0xFFFFFFFF], [0]) == [8]
    assert run1("v_dot8_u32_u4 v20, v10, v11, v12", [0xFFFFFFFF], [0x11111111], [1]) == [8 * 15 + 1]
    # 0x7fff * 0x7fff * 2 + 0x7fffffff saturates with clamp
    assert run1("v_dot2_i32_i16 v20, v10, v11, v12 clamp", [pk(0x7FFF, 0x7FFF)], [pk(0x7FFF, 0x7FFF)],
                [0x7FFFFFFF]) == [0x7FFFFFFF]
    assert run1("v_dot2_u32_u16 v20, v10, v11, v12", [pk(3, 4)], [pk(5, 6)], [1]) == [40]


def test_fma_mix():
    a, b = pk(hb(1.5), hb(-8.0)), pk(hb(2.0), hb(0.5))
    c = int(np.array(0.25, np.float32).view(np.uint32))
    out = run1("v_fma_mix_f32 v20, v10, v11, v12 op_sel_hi:[1,1,0]", [a], [b], [c])
    assert out == [int(np.array(3.25, np.float32).view(np.uint32))]
    # the high f16 halves: -8 * 0.5 + 0.25
    out = run1("v_fma_mix_f32 v20, v10, v11, v12 op_sel:[1,1,0] op_sel_hi:[1,1,0]", [a], [b], [c])
    assert out == [int(np.array(-3.75, np.float32).view(np.uint32))]
    body = "v_mov_b32 v20, v13\nv_fma_mixlo_f16 v20, v10, v11, v12 op_sel_hi:[1,1,0]"
    assert run1(body, [a], [b], [c], [0xABCD0000]) == [0xABCD0000 | hb(3.25)]
