"""v_div_scale / v_div_fmas / v_div_fixup: LLVM's correctly rounded division sequences
(what hipcc emits for `a / b` on gfx906) against NumPy's IEEE division, bit for bit,
over random operands and the edge cases (denormals, huge and tiny quotients, zeros,
infinities, NaN); special cases of v_div_fixup from the ISA guide's pseudo-code.
"""

from __future__ import annotations

import numpy as np

from vlpc.runtime.emulator.testing import run_lanes

# LLVM 15's AMDGPU f32 fdiv expansion with f32 denormals enabled (hipcc -O3, gfx906)
F32_DIV = """
v_div_scale_f32 v2, s[40:41], v11, v11, v10
v_div_scale_f32 v3, vcc, v10, v11, v10
v_rcp_f32 v4, v2
v_fma_f32 v5, -v2, v4, 1.0
v_fma_f32 v4, v5, v4, v4
v_mul_f32 v5, v3, v4
v_fma_f32 v6, -v2, v5, v3
v_fma_f32 v5, v6, v4, v5
v_fma_f32 v2, -v2, v5, v3
v_div_fmas_f32 v2, v2, v4, v5
v_div_fixup_f32 v20, v2, v11, v10
"""

# ... and the f64 one (numerator in v[10:11]... assembled from two dword inputs each)
F64_DIV = """
v_mov_b32 v30, v10
v_mov_b32 v31, v11
v_mov_b32 v32, v12
v_mov_b32 v33, v13
v_div_scale_f64 v[34:35], s[40:41], v[32:33], v[32:33], v[30:31]
v_rcp_f64 v[36:37], v[34:35]
v_fma_f64 v[38:39], -v[34:35], v[36:37], 1.0
v_fma_f64 v[36:37], v[36:37], v[38:39], v[36:37]
v_fma_f64 v[38:39], -v[34:35], v[36:37], 1.0
v_fma_f64 v[36:37], v[36:37], v[38:39], v[36:37]
v_div_scale_f64 v[38:39], vcc, v[30:31], v[32:33], v[30:31]
v_mul_f64 v[40:41], v[38:39], v[36:37]
v_fma_f64 v[34:35], -v[34:35], v[40:41], v[38:39]
v_div_fmas_f64 v[34:35], v[34:35], v[36:37], v[40:41]
v_div_fixup_f64 v[42:43], v[34:35], v[32:33], v[30:31]
v_mov_b32 v20, v42
v_mov_b32 v21, v43
"""


def _f32_cases():
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(40) * 10.0 ** rng.integers(-30, 30, 40)).astype(np.float32)
    b = (rng.standard_normal(40) * 10.0 ** rng.integers(-30, 30, 40)).astype(np.float32)
    edge_a = np.array([1, 1e-40, 3e38, 1e-38, 0, 0, np.inf, 1, -7, np.nan, 1, 2, 5e-45, 1e30,
                       -0.0, 1, 3, 1e-30, 3.4e38, 1e-45, 7, 1, 9, 6], np.float32)
    edge_b = np.array([3, 3, 1e-5, 1e30, 0, 5, np.inf, 0, np.inf, 1, np.nan, -0.0, 3, 1e-30,
                       2, 3e38, 1e-40, 1e30, 0.5, 2, 7, 1e-38, 2e-38, 3], np.float32)
    return np.concatenate([a, edge_a]), np.concatenate([b, edge_b])


def test_f32_division_sequence_matches_ieee_division():
    a, b = _f32_cases()
    (out,), _ = run_lanes(F32_DIV, [a.view(np.uint32), b.view(np.uint32)])
    with np.errstate(all="ignore"):
        want = (a / b).astype(np.float32)
    got = out[: a.size].view(np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(a[~same], b[~same], got[~same], want[~same]))


def test_f64_division_sequence_matches_ieee_division():
    rng = np.random.default_rng(11)
    a = rng.standard_normal(32) * 10.0 ** rng.integers(-300, 300, 32)
    b = rng.standard_normal(32) * 10.0 ** rng.integers(-300, 300, 32)
    a = np.concatenate([a, [1.0, 5e-324, 1e308, 0.0, 1.0, np.inf, -3.0, 1e-310, 2.0, 1e300]])
    b = np.concatenate([b, [3.0, 3.0, 1e-10, 0.0, 0.0, 2.0, np.inf, 3.0, 1e-310, 1e-300]])
    au, bu = a.view(np.uint64), b.view(np.uint64)
    lo = lambda x: (x & 0xFFFFFFFF).astype(np.uint32)  # noqa: E731
    hi = lambda x: (x >> 32).astype(np.uint32)  # noqa: E731
    n = a.size
    outs, _ = run_lanes(F64_DIV, [np.resize(lo(au), 64), np.resize(hi(au), 64), np.resize(lo(bu), 64),
                                  np.resize(hi(bu), 64)], n_out=2)
    got = (outs[0][:n].astype(np.uint64) | (outs[1][:n].astype(np.uint64) << 32)).view(np.float64)
    with np.errstate(all="ignore"):
        want = a / b
    same = (got.view(np.uint64) == want.view(np.uint64)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), list(zip(a[~same], b[~same], got[~same], want[~same]))


def test_div_fixup_special_cases():
    # (quotient, denominator, numerator) -> ISA guide V_DIV_FIXUP_F32
    q = np.float32(0.25)
    cases = [(q, 0.0, 0.0, np.nan), (q, np.inf, -np.inf, np.nan), (q, 0.0, -2.0, -np.inf),
             (q, -3.0, np.inf, -np.inf), (q, np.inf, 2.0, 0.0), (q, -2.0, 0.0, -0.0),
             (q, -2.0, 1.0, -0.25), (q, np.nan, 1.0, np.nan)]
    s0 = np.array([c[0] for c in cases], np.float32)
    s1 = np.array([c[1] for c in cases], np.float32)
    s2 = np.array([c[2] for c in cases], np.float32)
    want = np.array([c[3] for c in cases], np.float32)
    (out,), _ = run_lanes("v_div_fixup_f32 v20, v10, v11, v12",
                          [np.resize(x.view(np.uint32), 64) for x in (s0, s1, s2)])
    got = out[: len(cases)].view(np.float32)
    for g, w in zip(got, want):
        assert (np.isnan(g) and np.isnan(w)) or (g == w and np.signbit(g) == np.signbit(w)), (g, w)


def test_div_scale_zero_denominator_is_nan_and_flags():
    # S1 == 0 -> NaN; S2/S1 denormal with S0 == S2 -> VCC set, S0 scaled by 2^64
    body = ("v_div_scale_f32 v20, vcc, v10, v11, v10\n"
            "v_cndmask_b32 v21, 0, 1, vcc")
    a = np.array([1.0, 1e-30], np.float32)
    b = np.array([0.0, 1e10], np.float32)
    outs, _ = run_lanes(body, [np.resize(a.view(np.uint32), 64), np.resize(b.view(np.uint32), 64)],
                        n_out=2)
    d = outs[0][:2].view(np.float32)
    assert np.isnan(d[0]) and outs[1][0] == 0
    assert d[1] == np.float32(np.ldexp(np.float64(np.float32(1e-30)), 64)) and outs[1][1] == 1
