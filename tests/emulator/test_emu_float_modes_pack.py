"""Float modes of the packing conversions (v_cvt_pkrtz_f16_f32, v_cvt_pknorm_*), f16
operands (inline constants, neg/abs on bit 15, op_sel) and the output modifiers of f16
SDWA/DPP forms.

Expected values are derived here with NumPy from the Vega ISA guide's definitions, not
from the emulator: V_CVT_PKRTZ_F16_F32 D = {f16(S1), f16(S0)} rounded toward zero;
V_CVT_PKNORM_I16 = round(clamp(x, -1, 1) * 32767), _U16 = round(clamp(x, 0, 1) * 65535);
MODE.FP_DENORM (section 3.3; AMDGPUUsage's enumeration: 0 flush in and out, 1 flush out,
2 flush in, 3 keep), sign-keeping flushes; clamp = [0, 1] after omod (x2, x4, /2).
"""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.isa.modes import FloatMode
from vlpc.runtime.emulator.errors import UnsupportedInstruction
from vlpc.runtime.emulator.testing import run_lanes

F16 = np.float16
SDWA1 = " dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD"
SDWA2 = SDWA1 + " src1_sel:DWORD"
DPP = " quad_perm:[0,1,2,3] row_mask:0xf bank_mask:0xf"


def mode(d32=3, d64=3, dx10=True):
    return FloatMode(denorm_32=d32, denorm_16_64=d64, dx10_clamp=dx10).register


def run1(body, *srcs, **cfg):
    ins = [np.resize(np.array(s, np.uint32), 64) for s in srcs]
    (out,), _ = run_lanes(body, ins, **cfg)
    return out[: len(srcs[0]) if srcs else 1].tolist()


def f32b(x):
    return int(np.array(x, np.float32).view(np.uint32))


def f16b(x):
    return int(np.array(x, F16).view(np.uint16))


def h(bits):
    return float(np.array(bits, np.uint16).view(F16))


def f16_rtz(x: float) -> int:
    """f32 value -> f16 bits rounded toward zero (NumPy: nearest, stepped back if it grew)."""
    with np.errstate(over="ignore"):
        r = np.float16(x)
    if np.isfinite(x) and abs(float(r)) > abs(x):
        r = np.nextafter(r, F16(0))
    return f16b(r)


def flush16(bits):
    return bits & 0x8000 if (bits & 0x7C00) == 0 else bits


# ---- v_cvt_pkrtz_f16_f32 ----------------------------------------------------------------------

A = [2.0 ** -24, 2.0 ** -20, 1 / 3, -(2.0 ** -140), 65520.0]    # f16 denormals, normal, f32 denormal
B = [2.0 ** -15 * 1.5, -(2.0 ** -23), 2.0 ** -14, 1.0, -1e-3]


@pytest.mark.parametrize("d64", [0, 1, 2, 3])
@pytest.mark.parametrize("d32", [0, 3])
def test_pkrtz_flushes_f16_results_by_the_16_64_mode(d32, d64):
    out = run1("v_cvt_pkrtz_f16_f32 v20, v10, v11", [f32b(a) for a in A], [f32b(b) for b in B],
               mode=mode(d32, d64))
    want = []
    for a, b in zip(A, B):
        lo, hi = f16_rtz(float(np.float32(a))), f16_rtz(float(np.float32(b)))
        if not (d64 & 2):           # FLOAT_DENORM_MODE_16_64 flushes results
            lo, hi = flush16(lo), flush16(hi)
        want.append(lo | hi << 16)
    assert out == want
    # the hand-derived cases, spelled out: 2^-24 -> f16 0x0001, 2^-20 -> 0x0010, -2^-140 -> -0
    assert want[0] & 0xFFFF == (0x0001 if d64 & 2 else 0) and want[3] & 0xFFFF == 0x8000


def test_pkrtz_modifiers():
    # neg/abs act on the f32 sources (bit 31); an omod or clamp on the packed result is refused
    assert run1("v_cvt_pkrtz_f16_f32 v20, -v10, |v11|", [f32b(1.5)], [f32b(-2.0)]) == \
        [f16b(-1.5) | f16b(2.0) << 16]
    with pytest.raises(UnsupportedInstruction, match="v_cvt_pkrtz_f16_f32.*clamp/omod"):
        run1("v_cvt_pkrtz_f16_f32 v20, v10, v11 mul:2", [0], [0])


# ---- v_cvt_pknorm_* ---------------------------------------------------------------------------


def norm(x: float, signed: bool) -> int:
    x = 0.0 if np.isnan(x) else x
    if signed:
        return int(np.rint(np.clip(x, -1, 1) * 32767)) & 0xFFFF
    return int(np.rint(np.clip(x, 0, 1) * 65535))


H0 = [0x03FF, 0x83FF, 0x0200, 0x3800, 0x7E00]     # max f16 denormal, its negative, 2^-15, 0.5, NaN
H1 = [0x0001, 0x0400, 0xBC00, 0x03FF, 0x3C00]


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("d64", [0, 1, 2, 3])
def test_pknorm_f16_flushes_sources_by_the_16_64_mode(signed, d64):
    mn = "v_cvt_pknorm_i16_f16" if signed else "v_cvt_pknorm_u16_f16"
    out = run1(f"{mn} v20, v10, v11", H0, H1, mode=mode(3, d64))
    src = (lambda b: b) if d64 & 1 else flush16            # bit 0: keep input denormals
    want = [norm(h(src(a)), signed) | norm(h(src(b)), signed) << 16 for a, b in zip(H0, H1)]
    assert out == want
    # 0x03FF = 6.0976e-5: * 65535 = 3.996 -> 4 kept, 0 flushed
    assert (want[0] & 0xFFFF) == ((4 if not signed else 2) if d64 & 1 else 0)


def test_pknorm_f16_operands():
    # op_sel picks the high half, neg acts on bit 15, an inline constant is its f16 encoding
    x = 0x3800 << 16 | 0x3C00          # high 0.5, low 1.0
    assert run1("v_cvt_pknorm_i16_f16 v20, -v10, v10 op_sel:[1,0,0]", [x]) == \
        [norm(-0.5, True) | norm(1.0, True) << 16]
    assert run1("v_cvt_pknorm_u16_f16 v20, v10, 1.0", [0x3800]) == [norm(0.5, False) | 0xFFFF << 16]
    assert run1("v_cvt_pknorm_u16_f16 v20, |v10|, -0.5", [0xB400]) == [norm(0.25, False) | 0 << 16]


@pytest.mark.parametrize("d32", [0, 3])
def test_pknorm_f32_sources(d32):
    # f32 denormals (flushed or not) normalize to 0; +-1 saturate; NaN -> 0
    a = [0x00000200, 0x80400000, f32b(2.0), f32b(-0.25), 0x7FC00000]
    b = [f32b(1 / 3), f32b(-3.0), f32b(0.75), 0x807FFFFF, f32b(1.0)]
    for signed in (True, False):
        mn = "v_cvt_pknorm_i16_f32" if signed else "v_cvt_pknorm_u16_f32"
        want = [norm(float(np.array(x, np.uint32).view(np.float32)), signed)
                | norm(float(np.array(y, np.uint32).view(np.float32)), signed) << 16 for x, y in zip(a, b)]
        assert run1(f"{mn} v20, v10, v11", a, b, mode=mode(d32)) == want


# ---- output modifiers of f16 SDWA forms (GFX9 DPP has no clamp/omod: LLVM rejects them) ------

def omod_clamp(x: float, omod: float, clamp: bool, dx10: bool = True) -> int:
    """f16 bits of the ISA's output modifiers applied to the (already f16) result x."""
    with np.errstate(over="ignore"):
        y = np.float16(np.float16(x) * np.float16(omod))
    if clamp:
        y = np.float16(0.0) if (np.isnan(y) and dx10) else (y if np.isnan(y) else np.clip(y, 0, 1))
    return f16b(y)


@pytest.mark.parametrize("mods, omod, clamp", [("clamp", 1, True), ("mul:2", 2, False), ("clamp mul:4", 4, True),
                                               ("div:2", 0.5, False)])
def test_f16_sdwa_output_modifiers(mods, omod, clamp):
    a = [0x3A00, 0x3400, 0xBC00, 0x7BFF, 0x0400]           # 0.75, 0.25, -1, 65504, 2^-14
    b = [0x3800, 0x3000, 0x3400, 0x7BFF, 0x0000]           # 0.5, 0.125, 0.25, 65504, 0
    out = run1(f"v_add_f16_sdwa v20, v10, v11 {mods}" + SDWA2, a, b)
    with np.errstate(over="ignore"):
        want = [omod_clamp(np.float16(h(x) + h(y)), omod, clamp) for x, y in zip(a, b)]
    assert out == want


@pytest.mark.parametrize("dx10", [True, False])
def test_f16_sdwa_clamp_of_nan_follows_dx10(dx10):
    out = run1("v_mul_f16_sdwa v20, v10, v11 clamp" + SDWA2, [0x7E00, 0x4000], [0x3C00, 0x4000],
               mode=mode(dx10=dx10))
    assert out == [0 if dx10 else 0x7E00, 0x3C00]


def test_f16_f32_conversion_sdwa_modifiers_and_modes():
    # v_cvt_f16_f32: f32 source (neg on bit 31), f16 result with omod; v_cvt_f32_f16: f16 source
    # from WORD_1 (neg on bit 15), f32 result with clamp; the source flush follows FLOAT_DENORM_MODE_16_64
    assert run1("v_cvt_f16_f32_sdwa v20, -v10 div:2" + SDWA1, [f32b(3.0)]) == [f16b(-1.5)]
    body = "v_cvt_f32_f16_sdwa v20, -v10 clamp dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1"
    assert run1(body, [0xB800 << 16, 0x3800 << 16]) == [f32b(0.5), 0]
    den = "v_cvt_f32_f16_sdwa v20, v10 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_0"
    assert run1(den, [0x0001], mode=mode(d64=3)) == [f32b(2.0 ** -24)]
    assert run1(den, [0x8001], mode=mode(d64=0)) == [0x80000000]
    assert run1(den.replace("sdwa", "dpp").split(" dst_sel")[0] + DPP, [0x0001], mode=mode(d64=2)) == [0]


def test_f16_sources_in_vop1_vop3():
    # v_cvt_f32_f16: neg/abs on bit 15 and an inline constant in its f16 encoding
    assert run1("v_cvt_f32_f16_e64 v20, -v10", [0x3C00]) == [f32b(-1.0)]
    assert run1("v_cvt_f32_f16_e64 v20, |v10|", [0xC000]) == [f32b(2.0)]
    assert run1("v_cvt_f32_f16 v20, -2.0", [0]) == [f32b(-2.0)]
    assert run1("v_add_f16 v20, 0.5, v10", [0x3C00]) == [f16b(1.5)]
    assert run1("v_add_f16_sdwa v20, v10, 4.0" + SDWA2, [0x3C00]) == [f16b(5.0)]


# ---- packed math, dot2, fma_mix, v_pack_b32_f16, f16 compares, legacy/cube ops ------------------


@pytest.mark.parametrize("d64", [0, 1, 2, 3])
def test_packed_f16_denormals(d64):
    # lo: 2^-24 + 2^-24 = 2^-23 (f16 denormals in and out); hi: 2^-14 * 0.5 = 2^-15 (normal in,
    # denormal out)
    out = run1("v_pk_add_f16 v20, v10, v11", [0x0400 << 16 | 0x0001], [0xB800 << 16 | 0x0001],
               mode=mode(3, d64))
    lo = 0x0002 if d64 == 3 else 0                     # flushed at the input or the output
    hi = f16b(h(0x0400) - 0.5)                         # normal in and out: never flushed
    assert out == [lo | hi << 16]
    out = run1("v_pk_mul_f16 v20, v10, v11", [0x0400 << 16 | 0x0001], [0x3800 << 16 | 0x3C00],
               mode=mode(3, d64))
    lo = 0x0001 if d64 == 3 else 0
    hi = 0x0200 if d64 & 2 else 0                      # 2^-14 * 0.5 = 2^-15: an f16 denormal result
    assert out == [lo | hi << 16]


@pytest.mark.parametrize("d32, d64", [(3, 3), (3, 0), (0, 3), (0, 0)])
def test_dot2_f32_f16_modes(d32, d64):
    # f16 products 2^-24 * 1 (a denormal f16 source) plus an f32 denormal accumulator 2^-140
    out = run1("v_dot2_f32_f16 v20, v10, v11, v12", [0x0001], [0x3C00], [0x00000200], mode=mode(d32, d64))
    prod = 2.0 ** -24 if d64 & 1 else 0.0
    acc = 2.0 ** -140 if d32 & 1 else 0.0
    want = f32b(np.float32(prod + acc))
    assert out == [want]
    out = run1("v_dot2_f32_f16 v20, v10, v11, v12", [0x0000], [0x3C00], [0x00000200], mode=mode(d32, d64))
    assert out == [0x00000200 if d32 == 3 else 0]    # a denormal sum: kept only in mode 3


@pytest.mark.parametrize("d32, d64", [(3, 3), (0, 3), (3, 1), (2, 3)])
def test_fma_mix_modes(d32, d64):
    # all-f32 sources: 2^-140 * 1 + 0 follows FLOAT_DENORM_MODE_32
    assert run1("v_fma_mix_f32 v20, v10, v11, 0", [0x00000200], [f32b(1.0)], mode=mode(d32, d64)) == \
        [0x00000200 if d32 == 3 else 0]
    # f16 sources into an f16 result: 2^-24 * 1 + 0 follows FLOAT_DENORM_MODE_16_64
    body = "v_mov_b32 v20, 0\nv_fma_mixlo_f16 v20, v10, v11, 0 op_sel_hi:[1,1,0]"
    assert run1(body, [0x0001], [0x3C00], mode=mode(d32, d64)) == [0x0001 if d64 == 3 else 0]


@pytest.mark.parametrize("d64", [0, 3])
def test_pack_b32_f16_flushes_denormals(d64):
    assert run1("v_pack_b32_f16 v20, v10, v11", [0x0001], [0x8002], mode=mode(3, d64)) == \
        [0x80020001 if d64 == 3 else 0x80000000]


@pytest.mark.parametrize("form", ["v_cmp_lt_f16 vcc, v11, v10", "v_cmp_lt_f16_e64 vcc, v11, v10"])
def test_f16_compares_see_flushed_sources(form):
    body = form + "\nv_cndmask_b32 v20, 0, 1, vcc"
    assert run1(body, [0x0001], [0], mode=mode(3, 3)) == [1]     # 0 < 2^-24
    assert run1(body, [0x0001], [0], mode=mode(3, 1)) == [1]     # flush-out only: inputs kept
    assert run1(body, [0x0001], [0], mode=mode(3, 2)) == [0]     # flush-in: the source is +0
    assert run1(body, [0x0001], [0], mode=mode(3, 0)) == [0]


@pytest.mark.parametrize("d32", [0, 3])
def test_log_legacy_and_cube_ops_follow_the_f32_mode(d32):
    den = 0x00000200                                             # 2^-140
    assert run1("v_log_legacy_f32 v20, v10", [den], mode=mode(d32)) == \
        [f32b(-140.0) if d32 == 3 else f32b(-np.inf)]
    # the major axis is x (|z| = |y| = 0 < 2^-140): cubema = 2 * x
    assert run1("v_cubema_f32 v20, v10, 0, 0", [den], mode=mode(d32)) == [2 * den if d32 == 3 else 0]


# ---- SDWA/DPP forms the audit (tools/float_mode_audit.py) found without semantics --------------


def test_accumulating_dpp_forms():
    init = "v_mov_b32 v20, v12\n"
    assert run1(init + "v_fmac_f32_dpp v20, v10, v11" + DPP, [f32b(2.0)], [f32b(3.0)], [f32b(1.0)]) == \
        [f32b(7.0)]
    assert run1(init + "v_mac_f16_dpp v20, v10, v11" + DPP, [f16b(2.0)], [f16b(3.0)], [f16b(1.0)]) == \
        [f16b(7.0)]


def test_more_sdwa_forms():
    assert run1("v_ldexp_f16_sdwa v20, v10, v11" + SDWA2, [f16b(1.5)], [3]) == [f16b(12.0)]
    # BYTE_1 of 0x0900 is 9: as a signed 4-bit value -7, / 16
    body = "v_cvt_off_f32_i4_sdwa v20, v10 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:BYTE_1"
    assert run1(body, [0x0900]) == [f32b(-7 / 16)]
    assert run1("v_log_legacy_f32_sdwa v20, v10" + SDWA1, [f32b(8.0)]) == [f32b(3.0)]
    assert run1("v_exp_legacy_f32_dpp v20, v10" + DPP, [f32b(-2.0)]) == [f32b(0.25)]


@pytest.mark.parametrize("d64", [0, 3])
def test_cmp_class_sdwa_tests_the_raw_operand(d64):
    # class mask bits (ISA guide, V_CMP_CLASS): 7 = positive denormal, 8 = positive normal
    cls = "v_cmp_class_{t}_sdwa vcc, v10, v11 src0_sel:DWORD src1_sel:DWORD\nv_cndmask_b32 v20, 0, 1, vcc"
    assert run1(cls.format(t="f32"), [f32b(1.0), f32b(1.0), 0x00000200], [1 << 8, 1 << 7, 1 << 7],
                mode=mode(d64, d64)) == [1, 0, 1]
    assert run1(cls.format(t="f16"), [0x0001, 0x3C00], [1 << 7, 1 << 7], mode=mode(3, d64)) == [1, 0]


@pytest.mark.parametrize("form", ["v_cmp_class_f16 vcc, v10, v11", "v_cmp_class_f16_e64 vcc, v10, v11",
                                  "v_cmp_class_f16_sdwa vcc, v10, v11 src0_sel:DWORD src1_sel:DWORD"])
def test_cmp_class_f16_classes(form):
    # one f16 value of each class, in the order of the ISA's class mask bits 0..9
    vals = [0x7C01, 0x7E00, 0xFC00, 0xBC00, 0x8001, 0x8000, 0x0000, 0x0001, 0x3C00, 0x7C00]
    for bit in range(10):
        out = run1(form + "\nv_cndmask_b32 v20, 0, 1, vcc", vals, [1 << bit] * 10)
        assert out == [int(i == bit) for i in range(10)], bit


@pytest.mark.parametrize("r32", [1, 2, 3])
def test_exact_operations_run_under_directed_rounding(r32):
    # compares, min/max and widening conversions round nothing: any FP_ROUND mode gives the
    # IEEE result (Vega ISA guide 3.3, MODE.FP_ROUND)
    m = FloatMode(round_32=r32, round_16_64=r32).register
    assert run1("v_cvt_f32_f16 v20, v10", [0x3555], mode=m) == [f32b(h(0x3555))]
    assert run1("v_cmp_lt_f32 vcc, v10, v11\nv_cndmask_b32 v20, 0, 1, vcc", [f32b(1.0)], [f32b(2.0)],
                mode=m) == [1]
    assert run1("v_max_f32 v20, v10, v11", [f32b(-1.5)], [f32b(0.25)], mode=m) == [f32b(0.25)]


# ---- FP_ROUND on f16 results, dot2 and fma_mix (IEEE 754 directed rounding, hand-derived) -----


def rmode(r16=0, r32=0):
    return FloatMode(round_32=r32, round_16_64=r16).register


# 1 + 2^-11 lies halfway between the f16 values 1 (0x3C00) and 1 + 2^-10 (0x3C01); 65504 + 65504
# overflows: nearest and toward the overflow give inf, the others the largest finite 65504 (0x7BFF)
ROUND16 = {0: (0x3C00, 0xBC00, 0x7C00), 1: (0x3C01, 0xBC00, 0x7C00), 2: (0x3C00, 0xBC01, 0x7BFF),
           3: (0x3C00, 0xBC00, 0x7BFF)}


@pytest.mark.parametrize("r16", [0, 1, 2, 3])
@pytest.mark.parametrize("form", ["v_add_f16 v20, v10, v11", "v_add_f16_e64 v20, v10, v11",
                                  "v_add_f16_sdwa v20, v10, v11" + SDWA2, "v_add_f16_dpp v20, v10, v11" + DPP])
def test_f16_add_rounds_by_the_16_64_mode(form, r16):
    out = run1(form, [0x3C00, 0xBC00, 0x7BFF], [0x1000, 0x9000, 0x7BFF], mode=rmode(r16=r16))
    assert out == list(ROUND16[r16])


@pytest.mark.parametrize("r16", [0, 1, 2, 3])
def test_packed_f16_rounds_by_the_16_64_mode(r16):
    lo, neg, big = ROUND16[r16]
    out = run1("v_pk_add_f16 v20, v10, v11", [0xBC00 << 16 | 0x3C00, 0x7BFF], [0x9000 << 16 | 0x1000, 0x7BFF],
               mode=rmode(r16=r16))
    assert out == [neg << 16 | lo, big]


@pytest.mark.parametrize("r32, want", [(0, 0x3F800000), (1, 0x3F800001), (2, 0x3F800000), (3, 0x3F800000)])
def test_dot2_and_fma_mix_round_by_the_32_mode(r32, want):
    # 1*1 + 2^-12*2^-12 = 1 + 2^-24: halfway between the f32 values 1 and 1 + 2^-23
    a = 0x0C00 << 16 | 0x3C00                      # f16 pair (1, 2^-12)
    assert run1("v_dot2_f32_f16 v20, v10, v10, 0", [a], mode=rmode(r32=r32)) == [want]
    assert run1("v_fma_mix_f32 v20, v10, v11, v12", [f32b(1.0)], [f32b(1.0)], [0x33800000],
                mode=rmode(r32=r32)) == [want]


@pytest.mark.parametrize("r16, want", [(0, 0x3C01), (1, 0x3C02), (2, 0x3C01), (3, 0x3C01)])
def test_fma_mixlo_rounds_once_by_the_16_64_mode(r16, want):
    # f16 1 * f16 (1 + 2^-10) + f32 2^-12 = 1 + 2^-10 + 2^-12: between the f16 values
    # 1 + 2^-10 (0x3C01) and 1 + 2^-9 (0x3C02), below the halfway point
    body = "v_mov_b32 v20, 0\nv_fma_mixlo_f16 v20, v10, v11, v12 op_sel_hi:[1,1,0]"
    assert run1(body, [0x3C00], [0x3C01], [f32b(2.0 ** -12)], mode=rmode(r16=r16)) == [want]


@pytest.mark.parametrize("suffix, form", [("_sdwa", SDWA1), ("_dpp", DPP)])
def test_int_to_float_sdwa_dpp_round_by_the_mode(suffix, form):
    # 2^24 + 1 is a tie between 2^24 and 2^24 + 2: toward +inf gives 2^24 + 2 (f32 0x4B800001)
    assert run1(f"v_cvt_f32_i32{suffix} v20, v10" + form, [16777217], mode=rmode(r32=1)) == [0x4B800001]
    assert run1(f"v_cvt_f32_u32{suffix} v20, v10" + form, [16777217], mode=rmode(r32=2)) == [0x4B800000]
    # 2049 is a tie between the f16 values 2048 and 2050
    assert run1(f"v_cvt_f16_u16{suffix} v20, v10" + form, [2049], mode=rmode(r16=1)) == [f16b(2050.0)]
    assert run1(f"v_cvt_f16_i16{suffix} v20, v10" + form, [(-2049) & 0xFFFF], mode=rmode(r16=1)) == [f16b(-2048.0)]


@pytest.mark.parametrize("r32", [1, 2, 3])
def test_integral_results_run_under_directed_rounding(r32):
    m = rmode(r32=r32)
    assert run1("v_trunc_f32 v20, v10", [f32b(-2.5)], mode=m) == [f32b(-2.0)]
    assert run1("v_floor_f32_sdwa v20, v10" + SDWA1, [f32b(-2.5)], mode=m) == [f32b(-3.0)]
    assert run1("v_cvt_i32_f32 v20, v10", [f32b(2.7)], mode=m) == [2]            # truncates in any mode
    assert run1("v_max_f32_dpp v20, v10, v11" + DPP, [f32b(1.5)], [f32b(-1.0)], mode=m) == [f32b(1.5)]
    assert run1("v_cubema_f32 v20, v10, 0, 0", [f32b(3.0)], mode=m) == [f32b(6.0)]


def test_directed_rounding_refused_where_not_emulated():
    with pytest.raises(UnsupportedInstruction, match="v_div_fmas_f32.*round mode 1"):
        run1("s_mov_b64 vcc, 0\nv_div_fmas_f32 v20, v10, v10, v10", [f32b(1.0)], mode=rmode(r32=1))
    with pytest.raises(UnsupportedInstruction, match="v_exp_legacy_f32.*round mode 3"):
        run1("v_exp_legacy_f32 v20, v10", [f32b(1.0)], mode=rmode(r32=3))


@pytest.mark.parametrize("r32", [0, 1, 2, 3])
def test_unfused_mads_legacy_mul_and_ldexp_round_by_the_mode(r32):
    m = rmode(r32=r32)
    up = r32 == 1
    # v_mad_f32: 1 * 1 exact, then 1 + 2^-24 is a tie (1 or 1 + 2^-23)
    assert run1("v_mad_f32 v20, v10, v10, v11", [f32b(1.0)], [0x33800000], mode=m) == \
        [0x3F800001 if up else 0x3F800000]
    # (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46: nearest/down/zero 1 + 2^-22, up 1 + 2^-22 + 2^-23
    assert run1("v_mul_legacy_f32 v20, v10, v10", [0x3F800001], mode=m) == [0x3F800003 if up else 0x3F800002]
    assert run1("v_mov_b32 v20, 0\nv_mac_f32_dpp v20, v10, v10" + DPP, [0x3F800001], mode=m) == \
        [0x3F800003 if up else 0x3F800002]
    # 3 * 2^-149 / 2 = 1.5 * 2^-149: nearest even and up give 2 * 2^-149, down and zero 2^-149
    assert run1("v_ldexp_f32 v20, v10, -1", [3], mode=m) == [1 if r32 in (2, 3) else 2]


# ---- MODE.IEEE in the f16 min/max family (Vega ISA guide, V_MIN_F32 pseudo-code for f16) ------


def imode(ieee):
    return FloatMode(ieee=ieee).register


@pytest.mark.parametrize("ieee", [True, False])
@pytest.mark.parametrize("form", ["v_min_f16 v20, v10, v11", "v_min_f16_e64 v20, v10, v11",
                                  "v_min_f16_sdwa v20, v10, v11" + SDWA2, "v_min_f16_dpp v20, v10, v11" + DPP])
def test_f16_min_pseudo_code(form, ieee):
    # sNaN vs 1: quieted sNaN in IEEE mode, else 1; qNaN vs 1: 1; +0 vs -0: -0 (-0 < +0)
    out = run1(form, [0x7C01, 0x7E00, 0x0000], [0x3C00, 0x3C00, 0x8000], mode=imode(ieee))
    assert out == [0x7E01 if ieee else 0x3C00, 0x3C00, 0x8000]


@pytest.mark.parametrize("ieee", [True, False])
def test_f16_max3_med3_and_packed_max(ieee):
    # V_MAX3 = V_MAX(V_MAX(S0, S1), S2): the sNaN as S2 reaches the outer V_MAX
    snan_q = 0x7E01 if ieee else None
    assert run1("v_max3_f16 v20, v10, v11, v12", [0x3C00], [0x4000], [0x7C01], mode=imode(ieee)) == \
        [snan_q if ieee else 0x4000]
    # as S0, the inner V_MAX quiets it (IEEE) and the outer one then takes the other operand
    assert run1("v_max3_f16 v20, v10, v11, v12", [0x7C01], [0x3C00], [0x4000], mode=imode(ieee)) == [0x4000]
    # V_MED3 with a NaN operand is V_MIN3 of the three: min(min(1, 2), sNaN)
    assert run1("v_med3_f16 v20, v10, v11, v12", [0x3C00], [0x4000], [0x7C01], mode=imode(ieee)) == \
        [snan_q if ieee else 0x3C00]
    assert run1("v_pk_max_f16 v20, v10, v11", [0x7C01 << 16 | 0x0000], [0x3C00 << 16 | 0x8000],
                mode=imode(ieee)) == [(snan_q if ieee else 0x3C00) << 16 | 0x0000]


@pytest.mark.parametrize("dx10", [True, False])
def test_div_fixup_output_modifiers_and_f16_operands(dx10):
    # V_DIV_FIXUP_F32: a NaN quotient with finite operands gives +-inf (sign of S1 ^ S2);
    # clamp -> 1.0; 0/0 gives NaN, clamped to 0 only under DX10_CLAMP
    out = run1("v_div_fixup_f32 v20, v10, v11, v12 clamp", [0x7FC00000, f32b(1.0)], [f32b(1.0), 0],
               [f32b(1.0), 0], mode=mode(dx10=dx10))
    assert out == [f32b(1.0), 0 if dx10 else 0xFFC00000]
    # f16: inline constants in f16, neg on bit 15: quotient 1, -1.0 / 1.0 -> sign negative
    assert run1("v_div_fixup_f16 v20, v10, 1.0, 1.0", [0x3C00]) == [0x3C00]
    assert run1("v_div_fixup_f16 v20, v10, -v11, v11", [0x3C00], [0x3C00]) == [0xBC00]
    assert run1("v_div_fixup_f16 v20, v10, v11, v11 mul:2", [0x3C00], [0x4000]) == [0x4000]


# ---- v_fma_f64 under directed rounding ----------------------------------------------------------


def _fraction_fma_directed(a: float, b: float, c: float, mode: int) -> float:
    """The exact a*b + c (rational arithmetic) rounded per IEEE 754 (1 up, 2 down, 3 to zero)."""
    import math
    from fractions import Fraction
    x = Fraction(a) * Fraction(b) + Fraction(c)
    if x == 0:
        return a * b + c
    try:
        r = x.numerator / x.denominator
    except OverflowError:
        r = math.inf if x > 0 else -math.inf
    if math.isinf(r):
        fmax = float(np.finfo(np.float64).max)
        return r if (mode == 1 and x > 0) or (mode == 2 and x < 0) else (fmax if x > 0 else -fmax)
    d = x - Fraction(r)
    if (mode == 1 and d > 0) or (mode == 3 and d > 0 and r < 0):
        return float(np.nextafter(r, math.inf))
    if (mode == 2 and d < 0) or (mode == 3 and d < 0 and r > 0):
        return float(np.nextafter(r, -math.inf))
    return r


@pytest.mark.parametrize("rb", [1, 2, 3])
def test_fma_f64_directed_against_exact_rationals(rb):
    from vlpc.runtime.emulator.semantics import rounding
    rng = np.random.default_rng(rb)
    n = 400
    with np.errstate(all="ignore"):
        a = rng.standard_normal(n) * 2.0 ** rng.integers(-600, 600, n)
        b = rng.standard_normal(n) * 2.0 ** rng.integers(-600, 600, n)
        c = -(a * b) * (1 + rng.standard_normal(n) * 2.0 ** -rng.integers(1, 60, n))   # cancellation
        c[::3] = rng.standard_normal(n)[::3] * 2.0 ** rng.integers(-1074, 1000, n)[::3]
    a[:4], b[:4], c[:4] = [1e308, 1e-200, 2.0 ** -1000, 3.0], [10, 1e-200, 2.0 ** -70, 1 / 3], [0, 0, 0, 1e-17]
    ok = np.isfinite(c)
    a, b, c = a[ok], b[ok], c[ok]
    with np.errstate(all="ignore"):
        got = rounding.directed("v_fma_f64", [a.view(np.uint64), b.view(np.uint64), c.view(np.uint64)], rb)
    want = np.array([_fraction_fma_directed(float(x), float(y), float(z), rb) for x, y, z in zip(a, b, c)])
    assert got.tolist() == want.view(np.uint64).tolist()


@pytest.mark.parametrize("r64, low_word", [(0, 1), (1, 1), (2, 0), (3, 0)])
def test_fma_f64_instruction_rounds_by_the_16_64_mode(r64, low_word):
    # (1 + 2^-52) * 2^-53 + 1 = 1 + 2^-53 + 2^-105: just above the tie between 1 (low word 0)
    # and 1 + 2^-52 (low word 1); both have the high word 0x3FF00000
    a = np.array(1 + 2.0 ** -52).view(np.uint64)
    b = np.array(2.0 ** -53).view(np.uint64)
    body = "v_fma_f64 v[20:21], v[10:11], v[12:13], 1.0"
    (lo, hi), _ = run_lanes(body, [np.full(64, a & 0xFFFFFFFF, np.uint32), np.full(64, a >> 32, np.uint32),
                                   np.full(64, b & 0xFFFFFFFF, np.uint32), np.full(64, b >> 32, np.uint32)],
                            n_out=2, mode=FloatMode(round_16_64=r64).register)
    assert (int(hi[0]), int(lo[0])) == (0x3FF00000, low_word)



@pytest.mark.parametrize("r32", [0, 1, 2, 3])
def test_fract_f32_rounds_by_the_mode(r32):
    from fractions import Fraction
    x = np.float32(-0.1)
    exact = Fraction(1) + Fraction(float(x))                   # fract(-0.1f) = 1 - 0.1f, inexact in f32
    near = np.float32(float(exact))
    lo_, hi_ = (near, np.nextafter(near, np.float32(1))) if Fraction(float(near)) < exact else \
        (np.nextafter(near, np.float32(0)), near)
    want = {0: near, 1: hi_, 2: lo_, 3: lo_}[r32]
    assert run1("v_fract_f32 v20, v10", [f32b(x)], mode=rmode(r32=r32)) == [f32b(want)]


@pytest.mark.parametrize("r64, want", [(0, 2), (1, 2), (2, 1), (3, 1)])
def test_ldexp_f64_rounds_a_denormal_result_by_the_mode(r64, want):
    # 3 * 2^-1074 / 2 = 1.5 * 2^-1074: nearest even and up give 2 * 2^-1074, down and zero 2^-1074
    (lo, hi), _ = run_lanes("v_ldexp_f64 v[20:21], v[10:11], -1", [np.full(64, 3, np.uint32),
                                                                  np.zeros(64, np.uint32)],
                            n_out=2, mode=FloatMode(round_16_64=r64).register)
    assert (int(hi[0]), int(lo[0])) == (0, want)


@pytest.mark.parametrize("r64", [0, 1, 2, 3])
def test_fract_f64_rounds_by_the_mode(r64):
    from fractions import Fraction
    x = -(2.0 ** -2 + 2.0 ** -54)          # fract = 0.75 - 2^-54: a tie between two f64 values
    exact = Fraction(1) + Fraction(x)
    near = float(exact)
    lo_, hi_ = (near, float(np.nextafter(near, 1.0))) if Fraction(near) < exact else \
        (float(np.nextafter(near, 0.0)), near)
    want = {0: near, 1: hi_, 2: lo_, 3: lo_}[r64]
    assert lo_ != hi_
    bits = np.array(x).view(np.uint64)
    (lo, hi), _ = run_lanes("v_fract_f64 v[20:21], v[10:11]", [np.full(64, bits & 0xFFFFFFFF, np.uint32),
                                                               np.full(64, bits >> 32, np.uint32)],
                            n_out=2, mode=FloatMode(round_16_64=r64).register)
    assert (int(hi[0]) << 32 | int(lo[0])) == int(np.array(want).view(np.uint64))


@pytest.mark.parametrize("dx10", [True, False])
def test_clamp_of_integer_and_f16_results_of_conversions(dx10):
    # v_cvt_i32_f32: an integer result, clamp does not touch it; v_cvt_f16_f32: the f16 result
    # clamped to [0, 1] (NaN -> 0 under DX10_CLAMP); v_frexp_mant_f32 / v_rcp_iflag_f32 too
    m = mode(dx10=dx10)
    assert run1("v_cvt_i32_f32_e64 v20, v10 clamp", [f32b(-1.0), f32b(3.0)], mode=m) == [0xFFFFFFFF, 3]
    assert run1("v_cvt_f16_f32_e64 v20, v10 clamp", [f32b(3.0), 0x7FC00000, f32b(0.5)], mode=m) == \
        [0x3C00, 0 if dx10 else 0x7E00, 0x3800]
    assert run1("v_frexp_mant_f32_e64 v20, v10 clamp", [0x7FC00000, f32b(3.0)], mode=m) == \
        [0 if dx10 else 0x7FC00000, f32b(0.75)]
    assert run1("v_rcp_iflag_f32_e64 v20, v10 clamp", [0x7FC00000], mode=m) == [0 if dx10 else 0x7FC00000]


@pytest.mark.parametrize("form", [" dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD", DPP])
def test_sat_pk_u8_i16_sdwa_dpp(form):
    # each i16 half saturated to u8 (ISA: V_SAT_PK_U8_I16): (-128, 256) -> (0, 255); (32, 64) kept
    mn = "v_sat_pk_u8_i16_sdwa" if "sel" in form else "v_sat_pk_u8_i16_dpp"
    assert run1(f"{mn} v20, v10" + form, [0x0100FF80, 0x00400020]) == [0xFF00, 0x4020]
