"""ALU semantics of the emulator, checked against NumPy/Python computations."""

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from vlpc.runtime.emulator.testing import run_lanes

RNG = np.random.default_rng(1234)
U = np.uint32


def rnd(n=64):
    return RNG.integers(0, 2**32, n, dtype=np.uint64).astype(U)


def f2u(x):
    return np.asarray(x, np.float32).view(U)


def u2f(x):
    return np.asarray(x, U).view(np.float32)


@pytest.mark.parametrize("op,ref", [
    ("v_add_u32 v20, v10, v11", lambda a, b: a + b),
    ("v_sub_u32 v20, v10, v11", lambda a, b: a - b),
    ("v_subrev_u32 v20, v10, v11", lambda a, b: b - a),
    ("v_and_b32 v20, v10, v11", lambda a, b: a & b),
    ("v_or_b32 v20, v10, v11", lambda a, b: a | b),
    ("v_xor_b32 v20, v10, v11", lambda a, b: a ^ b),
    ("v_lshlrev_b32 v20, v10, v11", lambda a, b: b << (a & 31)),
    ("v_lshrrev_b32 v20, v10, v11", lambda a, b: b >> (a & 31)),
    ("v_ashrrev_i32 v20, v10, v11", lambda a, b: (b.view(np.int32) >> (a & 31).astype(np.int32)).view(U)),
    ("v_mul_lo_u32 v20, v10, v11", lambda a, b: (a.astype(np.uint64) * b).astype(U)),
    ("v_mul_hi_u32 v20, v10, v11", lambda a, b: ((a.astype(np.uint64) * b) >> np.uint64(32)).astype(U)),
    ("v_max_i32 v20, v10, v11", lambda a, b: np.maximum(a.view(np.int32), b.view(np.int32)).view(U)),
    ("v_min_u32 v20, v10, v11", np.minimum),
    ("v_mul_u32_u24 v20, v10, v11", lambda a, b: ((a & 0xFFFFFF).astype(np.uint64) * (b & 0xFFFFFF)).astype(U)),
    ("v_lshl_add_u32 v20, v10, 3, v11", lambda a, b: (a << 3) + b),
    ("v_add_lshl_u32 v20, v10, v11, 2", lambda a, b: (a + b) << 2),
    ("v_bfe_u32 v20, v10, 5, 7", lambda a, b: (a >> 5) & 0x7F),
])
def test_vector_integer_ops(op, ref):
    a, b = rnd(), rnd()
    with np.errstate(over="ignore"):
        (out,), _ = run_lanes(op, [a, b])
        want = np.asarray(ref(a, b), U)
    np.testing.assert_array_equal(out, want)


def test_mad_u32_u24_and_mad_u64_u32():
    a, b, c = rnd(), rnd(), rnd()
    body = """
    v_mad_u32_u24 v20, v10, v11, v12
    v_mov_b32 v31, 0
    v_mov_b32 v30, v12
    v_mad_u64_u32 v[24:25], s[8:9], v10, v11, v[30:31]
    v_mov_b32 v21, v24
    v_mov_b32 v22, v25
    """
    (o0, lo, hi), _ = run_lanes(body, [a, b, c], 3)
    np.testing.assert_array_equal(o0, ((a & 0xFFFFFF).astype(np.uint64) * (b & 0xFFFFFF) + c).astype(U))
    full = [int(x) * int(y) + int(z) for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(lo, np.array([v & 0xFFFFFFFF for v in full], U))
    np.testing.assert_array_equal(hi, np.array([(v >> 32) & 0xFFFFFFFF for v in full], U))


def test_carry_chain_64bit_add_and_sub():
    a = rnd()
    b = rnd()
    a[:4] = [0xFFFFFFFF, 0xFFFFFFFF, 0, 5]
    b[:4] = [1, 0xFFFFFFFF, 1, 5]
    # 64-bit (a:a) + (b:b) with carry, and (a:0) - (b:0) with borrow
    body = """
    v_add_co_u32 v20, vcc, v10, v11
    v_addc_co_u32 v21, vcc, v10, v11, vcc
    v_sub_co_u32 v22, s[8:9], v10, v11
    v_subb_co_u32 v23, s[8:9], 0, 0, s[8:9]
    """
    (lo, hi, d, borrow), _ = run_lanes(body, [a, b], 4)
    for i in range(64):
        s = ((int(a[i]) << 32) | int(a[i])) + ((int(b[i]) << 32) | int(b[i]))
        assert lo[i] == s & 0xFFFFFFFF and hi[i] == (s >> 32) & 0xFFFFFFFF
        diff = int(a[i]) - int(b[i])
        assert d[i] == diff & 0xFFFFFFFF
        assert borrow[i] == (0xFFFFFFFF if diff < 0 else 0)


def test_inline_constants_and_literals():
    body = """
    v_mov_b32 v20, -16
    v_mov_b32 v21, 64
    v_add_f32 v22, 0.5, -4.0
    v_mov_b32 v23, 0x12345678
    v_add_u32 v23, 0xabcdef, v23
    """
    (a, b, c, d), _ = run_lanes(body, [], 4)
    assert np.all(a == U(0xFFFFFFF0)) and np.all(b == 64)
    assert np.all(u2f(c) == np.float32(-3.5))
    assert np.all(d == U(0x12345678 + 0xABCDEF))
    (e,), _ = run_lanes("v_mul_f32 v20, 0.15915494, 2.0", [])
    assert np.all(e == f2u(np.float32(2.0) * np.float32(0.15915494309189535)))


def test_f32_arithmetic_random():
    a = RNG.standard_normal(64).astype(np.float32)
    b = RNG.standard_normal(64).astype(np.float32)
    body = """
    v_add_f32 v20, v10, v11
    v_mul_f32 v21, v10, v11
    v_max_f32 v22, v10, v11
    v_sub_f32 v23, v10, |v11|
    """
    (s, m, mx, d), _ = run_lanes(body, [f2u(a), f2u(b)], 4)
    np.testing.assert_array_equal(u2f(s), a + b)
    np.testing.assert_array_equal(u2f(m), a * b)
    np.testing.assert_array_equal(u2f(mx), np.maximum(a, b))
    np.testing.assert_array_equal(u2f(d), a - np.abs(b))


def _fma32_exact(a, b, c):
    """Single rounding of a*b+c to f32 via exact rationals (reference)."""
    x = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    # round to f32: find nearest representable with ties-to-even by brute force on neighbours
    f = np.float32(float(x))  # f64 -> f32 may double-round; fix by checking neighbours
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    best = min(cands, key=lambda v: (abs(Fraction(float(v)) - x),
                                     int(np.float32(v).view(U)) & 1))
    return np.float32(best)


def test_fma_f32_single_rounding_double_rounding_case():
    xs = RNG.standard_normal(64).astype(np.float32)
    ys = RNG.standard_normal(64).astype(np.float32)
    zs = RNG.standard_normal(64).astype(np.float32)
    # lane 0: a*b = 2^-24 - 2^-70 exactly, c = 1 + 2^-23.  The exact sum lies just below the
    # halfway point 1 + 3*2^-24, so one rounding gives 1 + 2^-23; rounding first to f64 lands
    # exactly on the halfway point and the second rounding (ties to even) gives 1 + 2^-22.
    xs[0] = np.float32(2.0 ** -12 * (1 + 2.0 ** -23))
    ys[0] = np.float32(2.0 ** -12 * (1 - 2.0 ** -23))
    zs[0] = np.float32(1 + 2.0 ** -23)
    # lane 1: exact sum just above a halfway point
    xs[1] = np.float32(-(2.0 ** -12) * (1 + 2.0 ** -23))
    ys[1] = ys[0]
    zs[1] = np.float32(1 + 2.0 ** -22)
    # lane 2: subnormal result range
    xs[2] = np.float32(2.0 ** -70)
    ys[2] = np.float32(2.0 ** -70 * (1 + 2.0 ** -23))
    zs[2] = np.float32(-(2.0 ** -140))
    (out, mac), _ = run_lanes("v_fma_f32 v20, v10, v11, v12\nv_mov_b32 v21, v12\nv_fmac_f32 v21, v10, v11",
                              [f2u(xs), f2u(ys), f2u(zs)], 2)
    want = np.array([_fma32_exact(x, y, z) for x, y, z in zip(xs, ys, zs)], np.float32)
    np.testing.assert_array_equal(u2f(out), want)
    np.testing.assert_array_equal(u2f(mac), want)
    assert want[0] == np.float32(1 + 2.0 ** -23)
    # lane 0 really is a double-rounding case: the naive f64 path differs
    for i in (0,):
        naive = np.float32(np.float64(xs[i]) * np.float64(ys[i]) + np.float64(zs[i]))
        assert naive != want[i]


def test_fma_f64_exact():
    a = RNG.standard_normal(64)
    b = RNG.standard_normal(64)
    c = RNG.standard_normal(64)
    # a lane where the naive a*b+c differs from the exact fma
    a[0], b[0], c[0] = 1 + 2.0 ** -30, 1 + 2.0 ** -30, -(1 + 2.0 ** -29)
    body = """
    v_fma_f64 v[24:25], v[10:11], v[12:13], v[24:25]
    v_mov_b32 v20, v24
    v_mov_b32 v21, v25
    """
    # pack: v10:v11 = a, v12:v13 = b, v24:25 = c (loaded via lanes: split halves)
    au, bu, cu = a.view(np.uint64), b.view(np.uint64), c.view(np.uint64)
    lo = lambda x: (x & 0xFFFFFFFF).astype(U)  # noqa: E731
    hi = lambda x: (x >> np.uint64(32)).astype(U)  # noqa: E731
    pre = "v_mov_b32 v24, v14\nv_mov_b32 v25, v15\n"
    # inputs: v10 lo(a), v11 hi(a), v12 lo(b), v13 hi(b); c via a second launch field
    body2 = """
    v_mov_b32 v30, v10
    v_mov_b32 v31, v11
    """
    (r_lo, r_hi), _ = run_lanes(
        "v_mov_b32 v24, v12\nv_mov_b32 v25, v13\nv_mov_b32 v12, v10\nv_mov_b32 v13, v11\n"
        "v_fma_f64 v[24:25], v[12:13], v[12:13], v[24:25]\nv_mov_b32 v20, v24\nv_mov_b32 v21, v25",
        [lo(au), hi(au), lo(cu), hi(cu)], 2)
    got = (r_lo.astype(np.uint64) | (r_hi.astype(np.uint64) << np.uint64(32))).view(np.float64)
    for i in range(64):
        x = Fraction(a[i]) * Fraction(a[i]) + Fraction(c[i])
        assert got[i] == x.numerator / x.denominator, i
    naive0 = a[0] * a[0] + c[0]
    assert got[0] != naive0


def test_exec_masking_and_cmpx():
    a = np.arange(64, dtype=U)
    body = """
    v_mov_b32 v20, 7
    v_cmp_gt_u32 vcc, 10, v10
    v_cndmask_b32 v21, 1, 2, vcc
    s_mov_b64 s[8:9], exec
    v_cmpx_lt_u32 s[10:11], v10, 20
    v_mov_b32 v20, v10
    s_mov_b64 exec, s[8:9]
    v_mov_b32 v22, s10
    """
    (o, sel, m), _ = run_lanes(body, [a], 3)
    np.testing.assert_array_equal(o, np.where(a < 20, a, 7))
    np.testing.assert_array_equal(sel, np.where(a < 10, 2, 1))
    assert np.all(m == U((1 << 20) - 1))


def test_scalar_ops_and_scc():
    body = """
    s_mov_b32 s8, 0xfffffff0
    s_add_u32 s9, s8, 0x20
    s_cselect_b32 s10, 1, 0
    s_addc_u32 s11, 0, 0
    s_sub_u32 s12, 3, 5
    s_subb_u32 s13, 0, 0
    s_lshl2_add_u32 s32, 5, 7
    s_mov_b32 s40, 0x12345678
    s_bfe_u32 s33, s40, 0x80004
    s_mov_b64 s[34:35], -1
    s_lshr_b64 s[34:35], s[34:35], 40
    s_movk_i32 s36, 0x8000
    s_cmpk_eq_u32 s36, 0x8000
    s_cselect_b32 s37, 5, 6
    s_mul_i32 s38, -3, 7
    s_ashr_i32 s39, s38, 1
    v_mov_b32 v20, s9
    v_mov_b32 v21, s10
    v_mov_b32 v22, s11
    v_mov_b32 v23, s13
    v_mov_b32 v24, s32
    v_mov_b32 v25, s33
    v_mov_b32 v26, s34
    v_mov_b32 v27, s35
    v_mov_b32 v28, s36
    v_mov_b32 v29, s37
    v_mov_b32 v30, s39
    v_add_u32 v20, v20, v21
    v_lshl_or_b32 v20, v22, 8, v20
    v_lshl_or_b32 v20, v23, 16, v20
    v_mov_b32 v21, v24
    v_lshl_or_b32 v21, v25, 8, v21
    v_mov_b32 v22, v26
    v_mov_b32 v23, v27
    """
    (o0, o1, o2, o3), _ = run_lanes(body, [], 4)
    # s9 = 0x10 (carry 1) -> s10 = 1, s11 = 1; 3-5 borrows -> s13 = 0 - 0 - 1 = 0xffffffff
    assert o0[0] == ((0x10 + 1) | (1 << 8) | (0xFFFFFFFF << 16)) & 0xFFFFFFFF
    assert o1[0] == ((5 << 2) + 7) | (((0x12345678 >> 4) & 0xFF) << 8)
    assert o2[0] == 0x00FFFFFF and o3[0] == 0


def test_readlane_writelane_readfirstlane():
    a = rnd()
    body = """
    v_readlane_b32 s8, v10, 37
    v_mov_b32 v20, s8
    s_mov_b64 exec, 0xff00
    v_readfirstlane_b32 s9, v10
    s_mov_b64 exec, s[14:15]
    v_mov_b32 v21, s9
    v_mov_b32 v22, 0
    v_writelane_b32 v22, s8, 5
    """
    (r, f, w), _ = run_lanes(body, [a], 3)
    assert np.all(r == a[37]) and np.all(f == a[8])
    want = np.zeros(64, U)
    want[5] = a[37]
    np.testing.assert_array_equal(w, want)


def test_conversions():
    x = (RNG.standard_normal(64) * 1000).astype(np.float32)
    body = """
    v_cvt_i32_f32 v20, v10
    v_cvt_f32_i32 v21, v20
    v_cvt_u32_f32 v22, v10
    v_rcp_f32 v23, v10
    """
    (i, f, u, r), _ = run_lanes(body, [f2u(x)], 4)
    np.testing.assert_array_equal(i.view(np.int32), np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(u2f(f), np.trunc(x).astype(np.int32).astype(np.float32))
    np.testing.assert_array_equal(u, np.where(x < 0, 0, np.trunc(x)).astype(U))
    np.testing.assert_allclose(u2f(r), 1 / x, rtol=1e-6)
