"""Float modes (MODE register) in the emulator: denormal flushing, DX10 clamp, IEEE
min/max, s_setreg/s_getreg, and the descriptor fields vlpc's kernels request.

Expected values come from the Vega ISA guide (section 3.3 MODE, the V_MIN_F32 /
V_MED3_F32 pseudo-code) and AMDGPUUsage's denorm mode enumeration (0 flush in and
out, 1 flush out, 2 flush in, 3 keep), written as raw IEEE bit patterns.
"""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.isa.modes import IEEE_DEFAULT, FloatMode
from vlpc.runtime.emulator.errors import UnsupportedInstruction
from vlpc.runtime.emulator.testing import run_lanes


def mode(d32=3, d64=3, dx10=True, ieee=True, r32=0):
    return FloatMode(round_32=r32, denorm_32=d32, denorm_16_64=d64, dx10_clamp=dx10, ieee=ieee).register


def u32(*v):
    return np.array(v, np.uint32)


def run1(body, a, b=None, c=None, **cfg):
    ins = [np.resize(u32(*a), 64)]
    for x in (b, c):
        if x is not None:
            ins.append(np.resize(u32(*x), 64))
    (out,), _ = run_lanes(body, ins, **cfg)
    return out[: len(a)]


DEN = 0x00000200          # 2^-140, an f32 denormal
NDEN = 0x80000200         # -2^-140
ONE = 0x3F800000
TWO20 = 0x49800000        # 2^20
MINNORM = 0x00800000      # 2^-126
HALF = 0x3F000000


@pytest.mark.parametrize("d32, expect", [
    (3, [DEN, NDEN, 0x03800000, 0x00400000]),     # keep: denormal in, denormal out
    (0, [0, 0x80000000, 0, 0]),                    # flush in and out (sign kept)
    (1, [0, 0x80000000, 0x03800000, 0]),           # flush out only: 2^-140 * 2^20 = 2^-120 kept
    (2, [0, 0x80000000, 0, 0x00400000]),           # flush in only: 2^-127 result kept
])
def test_v_mul_f32_denorm_modes(d32, expect):
    out = run1("v_mul_f32 v20, v10, v11", [DEN, NDEN, DEN, MINNORM], [ONE, ONE, TWO20, HALF], mode=mode(d32))
    assert out.tolist() == expect


@pytest.mark.parametrize("d32", [0, 3])
def test_v_fma_f32_with_sgpr_source_denorm(d32):
    # the GEMM form: v_fma_f32 vC, vB, sA, vC; (+-2^-140) * 1 + 0
    body = "s_mov_b32 s40, 1.0\nv_mov_b32 v20, 0\nv_fma_f32 v20, v10, s40, v20"
    out = run1(body, [DEN, NDEN], mode=mode(d32))
    # flushed: (-0) * 1 + (+0) = +0 (IEEE sum of zeros of opposite sign)
    assert out.tolist() == ([DEN, NDEN] if d32 == 3 else [0, 0])


def test_v_add_f64_denorm_mode_16_64():
    den64 = 1  # 2^-1074
    lo, hi = den64 & 0xFFFFFFFF, den64 >> 32
    body = "v_mov_b32 v30, v10\nv_mov_b32 v31, v11\nv_add_f64 v[32:33], v[30:31], 0\nv_mov_b32 v20, v32"
    assert run1(body, [lo], [hi], mode=mode(d64=3)).tolist() == [1]
    assert run1(body, [lo], [hi], mode=mode(d64=0)).tolist() == [0]
    # the f32 mode does not affect f64
    assert run1(body, [lo], [hi], mode=mode(d32=0, d64=3)).tolist() == [1]


def test_v_cmp_sees_flushed_sources():
    body = "v_cmp_eq_f32 vcc, 0, v10\nv_cndmask_b32 v20, 0, 1, vcc"
    assert run1(body, [DEN], mode=mode(3)).tolist() == [0]
    assert run1(body, [DEN], mode=mode(0)).tolist() == [1]


def test_v_mad_f32_never_keeps_f32_denormals():
    out = run1("v_mad_f32 v20, v10, v11, 0", [DEN], [ONE], mode=mode(3))
    assert out.tolist() == [0]
    # v_fma_f32 does under the same mode
    assert run1("v_fma_f32 v20, v10, v11, 0", [DEN], [ONE], mode=mode(3)).tolist() == [DEN]


def test_s_setreg_changes_the_denorm_mode_and_s_getreg_reads_it():
    # hipcc's division sequence switches f32 denormals on with s_setreg_imm32_b32
    body = ("v_mul_f32 v21, v10, v11\n"
            "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 3\n"
            "v_mul_f32 v22, v10, v11\n"
            "s_getreg_b32 s40, hwreg(HW_REG_MODE, 0, 10)\n"
            "v_mov_b32 v20, s40\n"
            "v_cmp_eq_u32 vcc, v21, 0\n"
            "v_cndmask_b32 v21, 0, 1, vcc\n"
            "v_lshlrev_b32 v21, 16, v21\n"
            "v_cmp_eq_u32 vcc, v22, v10\n"
            "v_cndmask_b32 v22, 0, 1, vcc\n"
            "v_lshlrev_b32 v22, 17, v22\n"
            "v_or3_b32 v20, v20, v21, v22")
    out = run1(body, [DEN], [ONE], mode=mode(0))
    got = int(out[0])
    assert got & 0x3FF == mode(3)        # MODE after the s_setreg
    assert (got >> 16) & 1 == 1          # before: flushed
    assert (got >> 17) & 1 == 1          # after: kept


def test_s_setreg_b32_from_an_sgpr():
    body = ("s_mov_b32 s40, 0\n"
            "s_setreg_b32 hwreg(HW_REG_MODE, 4, 2), s40\n"
            "v_mul_f32 v20, v10, v11")
    assert run1(body, [DEN], [ONE], mode=mode(3)).tolist() == [0]


@pytest.mark.parametrize("dx10, expect", [(True, 0), (False, 0x7FC00000)])
def test_clamp_of_nan_follows_dx10_clamp(dx10, expect):
    out = run1("v_add_f32_e64 v20, v10, 0 clamp", [0x7FC00000], mode=mode(dx10=dx10))
    assert out.tolist() == [expect]
    # ordinary values clamp to [0, 1] in both modes
    assert run1("v_add_f32_e64 v20, v10, 0 clamp", [0x40000000], mode=mode(dx10=dx10)).tolist() == [ONE]


SNAN, QNAN = 0x7F800001, 0x7FC00000


@pytest.mark.parametrize("ieee, expect", [(True, [0x7FC00001, ONE, 0x80000000]),
                                          (False, [ONE, ONE, 0x80000000])])
def test_v_min_f32_pseudo_code(ieee, expect):
    out = run1("v_min_f32 v20, v10, v11", [SNAN, QNAN, 0], [ONE, ONE, 0x80000000], mode=mode(ieee=ieee))
    assert out.tolist() == expect


def test_v_max_f32_zero_order():
    assert run1("v_max_f32 v20, v10, v11", [0x80000000, 0], [0, 0x80000000]).tolist() == [0, 0]


def test_v_med3_f32_nan_is_min3_of_the_others():
    out = run1("v_med3_f32 v20, v10, v11, v12", [QNAN, 0x40400000, ONE], [ONE, ONE, 0x40400000],
               [0x40000000, 0x40000000, 0x40000000])
    # NaN, 1, 2 -> min3 = 1;   3, 1, 2 -> 2;   1, 3, 2 -> 2
    assert out.tolist() == [ONE, 0x40000000, 0x40000000]


def test_directed_round_mode_without_emulation_is_refused():
    # directed rounding is emulated for add/sub/mul/fma only: a square root under it stops
    with pytest.raises(UnsupportedInstruction, match="v_sqrt_f32: round mode 3"):
        run1("v_sqrt_f32 v20, v10", [ONE], mode=mode(r32=3))


def test_mode_register_from_descriptor_fields():
    assert IEEE_DEFAULT.register == 0x3F0
    # rsrc1: round 32 = 1 [13:12], denorm 32 = 2 [17:16], denorm 16_64 = 1 [19:18], dx10 0, ieee 1 [23]
    rsrc1 = (1 << 12) | (2 << 16) | (1 << 18) | (1 << 23)
    m = FloatMode.from_rsrc1(rsrc1)
    assert (m.round_32, m.denorm_32, m.denorm_16_64, m.dx10_clamp, m.ieee) == (1, 2, 1, False, True)
    assert FloatMode.from_register(m.register) == m


def test_vlpc_kernels_request_ieee_denormals(tmp_path):
    import vlpc
    from vlpc.runtime.code_object import load_code_object
    src = open("examples/sgemm_nt.mlir").read()
    co_bytes = vlpc.compile(src).kernel().code_object
    p = tmp_path / "k.hsaco"
    p.write_bytes(co_bytes)
    for k in load_code_object(p).kernels.values():
        d = k.descriptor
        assert (d.float_denorm_mode_32, d.float_denorm_mode_16_64) == (3, 3)
        assert d.enable_ieee_mode and d.enable_dx10_clamp
        assert (d.float_round_mode_32, d.float_round_mode_16_64) == (0, 0)
        # the emulator starts the waves in that mode
        assert FloatMode.from_rsrc1(d.compute_pgm_rsrc1).register == 0x3F0


def test_hipcc_kernels_request_the_same_mode():
    from pathlib import Path

    from vlpc.runtime.code_object import load_code_object
    co = load_code_object(Path(__file__).parents[1] / "data" / "hip" / "saxpy.hsaco")
    for k in co.kernels.values():
        assert FloatMode.from_rsrc1(k.descriptor.compute_pgm_rsrc1) == IEEE_DEFAULT


def test_mode_change_reaches_instructions_already_run():
    # the same v_mul_f32 (one PC) runs before and after s_setreg switches flushing on
    body = ("s_mov_b32 s41, 0\n"
            "v_mov_b32 v20, 0\n"
            "loop:\n"
            "v_mul_f32 v21, v10, v11\n"
            "v_add_u32 v20, v20, v21\n"
            "s_setreg_imm32_b32 hwreg(HW_REG_MODE, 4, 2), 0\n"
            "s_add_u32 s41, s41, 1\n"
            "s_cmp_lt_u32 s41, 2\n"
            "s_cbranch_scc1 loop")
    # first pass keeps 2^-140 (0x200), the second flushes it: the sum is 0x200, not 0x400
    assert run1(body, [DEN], [ONE], mode=mode(3)).tolist() == [DEN]


def test_legacy_mad_and_mul_zero_times_anything_is_zero():
    inf, nan = 0x7F800000, 0x7FC00000
    # V_MAD_LEGACY_F32 / V_MUL_LEGACY_F32 (DX9 rules): 0 * inf = 0 * NaN = 0
    out = run1("v_mad_legacy_f32 v20, v10, v11, 2.0", [0, inf], [inf, 0])
    assert out.tolist() == [0x40000000, 0x40000000]
    out = run1("v_mul_legacy_f32 v20, v10, v11", [0, nan], [nan, 0])
    assert out.tolist() == [0, 0]
    # the IEEE forms give NaN
    assert np.isnan(run1("v_mad_f32 v20, v10, v11, 2.0", [0], [inf]).view(np.float32)[0])


def _f(x):
    return int(np.array(x, np.float32).view(np.uint32))


@pytest.mark.parametrize("r32, expect", [
    (0, 1.0), (1, float(np.nextafter(np.float32(1), np.float32(2)))), (2, 1.0), (3, 1.0)])
def test_directed_rounding_f32_add(r32, expect):
    # 1 + 2^-30: nearest and down/zero give 1, up gives the next float
    assert run1("v_add_f32 v20, v10, v11", [_f(1.0)], [_f(2.0 ** -30)], mode=mode(r32=r32)).tolist() == [_f(expect)]


def test_directed_rounding_negative_mul_fma_and_overflow():
    x = 1 + 2.0 ** -23                       # x * x = 1 + 2^-22 + 2^-46
    lo, hi = 1 + 2.0 ** -22, 1 + 2.0 ** -22 + 2.0 ** -23
    assert run1("v_mul_f32 v20, v10, v11", [_f(-x)], [_f(x)], mode=mode(r32=3)).tolist() == [_f(-lo)]
    assert run1("v_mul_f32 v20, v10, v11", [_f(-x)], [_f(x)], mode=mode(r32=2)).tolist() == [_f(-hi)]
    assert run1("v_fma_f32 v20, v10, v11, 0", [_f(x)], [_f(x)], mode=mode(r32=1)).tolist() == [_f(hi)]
    big = np.finfo(np.float32).max
    assert run1("v_add_f32 v20, v10, v11", [_f(big)], [_f(big)], mode=mode(r32=3)).tolist() == [_f(big)]
    assert run1("v_add_f32 v20, v10, v11", [_f(big)], [_f(big)], mode=mode(r32=1)).tolist() == [0x7F800000]


def test_directed_rounding_f64_add():
    one = np.float64(1.0).view(np.uint64)
    tiny = np.float64(2.0 ** -60).view(np.uint64)
    body = ("v_mov_b32 v30, v10\nv_mov_b32 v31, v11\nv_mov_b32 v32, v12\nv_mov_b32 v33, v13\n"
            "v_add_f64 v[34:35], v[30:31], v[32:33]\nv_mov_b32 v20, v34")
    lo32 = lambda u: [int(u) & 0xFFFFFFFF]  # noqa: E731
    hi32 = lambda u: [int(u) >> 32]  # noqa: E731
    # round_16_64 = 1 (toward +inf): 1 + 2^-60 -> nextafter(1, 2), whose low word is 1
    m = FloatMode(round_16_64=1).register
    (out,), _ = run_lanes(body, [np.resize(np.array(v, np.uint32), 64) for v in
                                 (lo32(one), hi32(one), lo32(tiny), hi32(tiny))], mode=m)
    assert int(out[0]) == 1
