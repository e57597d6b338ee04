"""The float mode (MODE register) on SDWA and DPP forms, as on the plain ones: denormal
flushing of sources and results, DX10 clamp, the IEEE-mode min/max pseudo-code, directed
rounding (emulated for add/sub/mul, refused by name otherwise), f16 denormals.

Expected values are raw IEEE bit patterns from the Vega ISA guide (section 3.3 MODE,
V_MIN_F32 pseudo-code) and IEEE 754 rounding (1 + 2^-24 is a tie: nearest-even keeps 1,
toward +inf gives the next float); AMDGPUUsage's denorm enumeration (0 flush in and out,
1 flush out, 2 flush in, 3 keep).
"""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.isa.modes import FloatMode
from vlpc.runtime.emulator.errors import UnsupportedInstruction
from vlpc.runtime.emulator.testing import run_lanes

DEN, NDEN, ONE, TWO20, MINNORM, HALF = 0x00000200, 0x80000200, 0x3F800000, 0x49800000, 0x00800000, 0x3F000000
SNAN, QNAN = 0x7F800001, 0x7FC00000
SDWA = " dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD"
DPP = " quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf"


def mode(d32=3, d64=3, dx10=True, ieee=True, r32=0):
    return FloatMode(round_32=r32, denorm_32=d32, denorm_16_64=d64, dx10_clamp=dx10, ieee=ieee).register


def run1(body, a, b=None, **cfg):
    ins = [np.resize(np.array(a, np.uint32), 64)]
    if b is not None:
        ins.append(np.resize(np.array(b, np.uint32), 64))
    (out,), _ = run_lanes(body, ins, **cfg)
    return out[: len(a)].tolist()


@pytest.mark.parametrize("form", [SDWA, DPP])
@pytest.mark.parametrize("d32, expect", [
    (3, [DEN, NDEN, 0x03800000, 0x00400000]),     # keep: denormal in, denormal out
    (0, [0, 0x80000000, 0, 0]),                    # flush in and out (sign kept)
    (1, [0, 0x80000000, 0x03800000, 0]),           # flush out only: 2^-140 * 2^20 = 2^-120 kept
    (2, [0, 0x80000000, 0, 0x00400000]),           # flush in only: the 2^-127 result kept
])
def test_mul_f32_denorm_modes(form, d32, expect):
    body = "v_mul_f32" + ("_sdwa" if form is SDWA else "_dpp") + " v20, v10, v11" + form
    assert run1(body, [DEN, NDEN, DEN, MINNORM], [ONE, ONE, TWO20, HALF], mode=mode(d32)) == expect


def test_compare_sees_flushed_sources():
    # (VOPC has SDWA forms only: LLVM has no DPP compare for gfx906)
    body = "v_cmp_lt_f32_sdwa vcc, v11, v10 src0_sel:DWORD src1_sel:DWORD\nv_cndmask_b32 v20, 0, 1, vcc"
    assert run1(body, [DEN], [0], mode=mode(3)) == [1]   # 0 < 2^-140
    assert run1(body, [DEN], [0], mode=mode(0)) == [0]   # the source flushed to +0


@pytest.mark.parametrize("dx10, expect", [(True, 0), (False, QNAN)])
def test_clamp_of_nan_follows_dx10_clamp(dx10, expect):
    body = "v_add_f32_sdwa v20, v10, v11 clamp" + SDWA
    assert run1(body, [QNAN, 0x40000000], [0, 0], mode=mode(dx10=dx10)) == [expect, ONE]


@pytest.mark.parametrize("suffix,form", [("_sdwa", SDWA), ("_dpp", DPP)])
@pytest.mark.parametrize("ieee, expect", [(True, [0x7FC00001, ONE, 0x80000000]),
                                          (False, [ONE, ONE, 0x80000000])])
def test_min_f32_pseudo_code(suffix, form, ieee, expect):
    out = run1(f"v_min_f32{suffix} v20, v10, v11{form}", [SNAN, QNAN, 0], [ONE, ONE, 0x80000000],
               mode=mode(ieee=ieee))
    assert out == expect


@pytest.mark.parametrize("r32, expect", [(0, ONE), (1, 0x3F800001), (2, ONE), (3, ONE)])
def test_directed_rounding_of_add(r32, expect):
    # 1 + 2^-24: exactly halfway between 1 and 1 + 2^-23
    assert run1("v_add_f32_dpp v20, v10, v11" + DPP, [ONE], [0x33800000], mode=mode(r32=r32)) == [expect]
    assert run1("v_add_f32_sdwa v20, v10, v11" + SDWA, [0xBF800000], [0xB3800000],
                mode=mode(r32=r32)) == [{2: 0xBF800001}.get(r32, 0xBF800000)]


def test_directed_rounding_without_emulation_is_refused():
    with pytest.raises(UnsupportedInstruction, match="v_sqrt_f32 .*round mode 3"):
        run1("v_sqrt_f32_sdwa v20, v10 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD", [ONE],
             mode=mode(r32=3))


@pytest.mark.parametrize("d64, expect", [(3, 0x0002), (0, 0), (2, 0)])
def test_f16_denormals_follow_the_16_64_mode(d64, expect):
    # 2^-24 + 2^-24 (f16 denormals): kept, or flushed at the input
    out = run1("v_add_f16_sdwa v20, v10, v11" + SDWA, [0x0001], [0x0001], mode=mode(d64=d64))
    assert out == [expect]


# ---- conversions ------------------------------------------------------------------------------


def fmode(r32=0, r64=0, d32=3, d64=3):
    return FloatMode(round_32=r32, round_16_64=r64, denorm_32=d32, denorm_16_64=d64).register


@pytest.mark.parametrize("r32, pos, neg", [
    (0, 0x4B800000, 0xCB800000),   # nearest even: 2^24 + 1 is a tie -> 2^24
    (1, 0x4B800001, 0xCB800000),   # toward +inf: 2^24 + 2 / -2^24
    (2, 0x4B800000, 0xCB800001),   # toward -inf
    (3, 0x4B800000, 0xCB800000),   # toward zero
])
def test_cvt_f32_i32_rounds_by_the_mode(r32, pos, neg):
    out = run1("v_cvt_f32_i32 v20, v10", [16777217, (-16777217) & 0xFFFFFFFF], mode=fmode(r32=r32))
    assert out == [pos, neg]


def test_cvt_f32_u32_toward_zero():
    # 2^32 - 1: nearest is 2^32, toward zero the largest float below it
    assert run1("v_cvt_f32_u32 v20, v10", [0xFFFFFFFF], mode=fmode()) == [0x4F800000]
    assert run1("v_cvt_f32_u32 v20, v10", [0xFFFFFFFF], mode=fmode(r32=3)) == [0x4F7FFFFF]


def test_cvt_f32_f64_rounds_by_the_f32_mode():
    body = "v_cvt_f32_f64 v20, v[10:11]"
    x = 0x3FF0000004000000   # 1 + 2^-30 (f64)
    lo, hi = x & 0xFFFFFFFF, x >> 32
    assert run1(body, [lo], [hi], mode=fmode()) == [ONE]
    assert run1(body, [lo], [hi], mode=fmode(r32=1)) == [0x3F800001]


@pytest.mark.parametrize("r64, expect", [(0, 0x3C00), (1, 0x3C01), (3, 0x3C00)])
def test_cvt_f16_f32_rounds_by_the_16_64_mode(r64, expect):
    # 1 + 2^-11 is halfway between the f16 values 1 and 1 + 2^-10
    assert run1("v_cvt_f16_f32 v20, v10", [0x3F801000], mode=fmode(r64=r64)) == [expect]


@pytest.mark.parametrize("d64, to16, to32", [(3, 0x0001, 0x33800000), (0, 0, 0), (1, 0, 0x33800000),
                                             (2, 0x0001, 0)])
def test_f16_f32_conversions_follow_the_16_64_denorm_mode(d64, to16, to32):
    # 2^-24: an f16 denormal (0x0001), an f32 normal (0x33800000)
    assert run1("v_cvt_f16_f32 v20, v10", [0x33800000], mode=fmode(d64=d64)) == [to16]   # result flush
    assert run1("v_cvt_f32_f16 v20, v10", [0x0001], mode=fmode(d64=d64)) == [to32]       # source flush
