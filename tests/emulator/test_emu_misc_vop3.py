"""Cube-map, masked/quad SAD and pkaccum instructions against the Vega ISA guide's
pseudo-code (values by hand); s_trap faults; buffer_wbinvl1 runs."""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.runtime.emulator.errors import EmulatorFault
from vlpc.runtime.emulator.testing import run_lanes


def f(x):
    return int(np.array(x, np.float32).view(np.uint32))


def run1(body, *cols, n_out=1):
    ins = [np.resize(np.asarray(c, np.uint32), 64) for c in cols]
    outs, _ = run_lanes(body, ins, n_out=n_out)
    return [[int(x) for x in o[: len(cols[0])]] for o in outs]


def test_cube_ops():
    # (x, y, z) = (1, -3, 2): y major, negative -> face 3; sc = x = 1; tc = y < 0 ? -z : z = -2; ma = 2 * y
    # (0.5, 0.25, -4): z major, negative -> face 5; sc = z < 0 ? -x : x = -0.5; tc = -y; ma = -8
    x, y, z = [f(1.0), f(0.5)], [f(-3.0), f(0.25)], [f(2.0), f(-4.0)]
    ops = ("v_cubeid_f32", "v_cubesc_f32", "v_cubetc_f32", "v_cubema_f32")
    body = "\n".join(f"{op} v{20 + i}, v10, v11, v12" for i, op in enumerate(ops))
    out = run1(body, x, y, z, n_out=4)
    assert [o[0] for o in out] == [f(3.0), f(1.0), f(-2.0), f(-6.0)]
    assert [o[1] for o in out] == [f(5.0), f(-0.5), f(-0.25), f(-8.0)]


def test_msad_qsad_pkaccum():
    # msad: bytes where S1 is 0 are skipped: |1-4| + |3-0 (skipped)| + |5-5| + |9-1| = 11, + 2
    assert run1("v_msad_u8 v20, v10, v11, 2", [0x09050301], [0x01050004])[0] == [13]
    # qsad: 16-bit accumulators of SAD(S0.u64 >> 8k, S1) + S2.u16[k]
    body = ("v_mov_b32 v30, v10\nv_mov_b32 v31, v11\nv_mov_b32 v32, 0\nv_mov_b32 v33, 0\n"
            "v_qsad_pk_u16_u8 v[34:35], v[30:31], v12, v[32:33]\nv_mov_b32 v20, v34\nv_mov_b32 v21, v35")
    lo, hi = run1(body, [0x04030201], [0x08070605], [0x04030201], n_out=2)
    s = lambda w: sum(abs(((w >> (8 * i)) & 0xFF) - (i + 1)) for i in range(4))  # noqa: E731
    q = 0x0807060504030201
    assert lo == [s(q & 0xFFFFFFFF) | (s((q >> 8) & 0xFFFFFFFF) << 16)]
    assert hi == [s((q >> 16) & 0xFFFFFFFF) | (s((q >> 24) & 0xFFFFFFFF) << 16)]
    body = "v_mov_b32 v20, v11\nv_cvt_pkaccum_u8_f32 v20, v10, 2"
    assert run1(body, [f(300.0)], [0x11223344])[0] == [0x11FF3344]


def test_s_trap_faults_and_wbinvl1_runs():
    with pytest.raises(EmulatorFault, match="s_trap 2"):
        run_lanes("s_trap 2", [])
    run_lanes("buffer_wbinvl1\ns_waitcnt vmcnt(0)\nv_mov_b32 v20, 0", [])


def test_trig_preop_segments_sum_to_two_over_pi():
    from fractions import Fraction
    one = np.float64(1.0).view(np.uint64)
    lo, hi = int(one) & 0xFFFFFFFF, int(one) >> 32
    body = ("v_mov_b32 v30, v10\nv_mov_b32 v31, v11\n"
            "v_trig_preop_f64 v[32:33], v[30:31], 0\nv_trig_preop_f64 v[34:35], v[30:31], 1\n"
            "v_mov_b32 v20, v32\nv_mov_b32 v21, v33\nv_mov_b32 v22, v34\nv_mov_b32 v23, v35")
    a, b_, c, d = run1(body, [lo], [hi], n_out=4)
    s0 = np.array([a[0] | (b_[0] << 32)], np.uint64).view(np.float64)[0]
    s1 = np.array([c[0] | (d[0] << 32)], np.uint64).view(np.float64)[0]
    # segment 0 is 2/pi truncated to 53 bits: within one ulp below the rounded double
    assert 0 <= 2 / np.pi - s0 <= np.spacing(2 / np.pi)
    # segment 1 carries the next 53 bits: s0 + s1 is 2/pi to ~106 bits (check with pi's digits)
    pi_106 = Fraction(3141592653589793238462643383279502884197, 10 ** 39)
    assert abs(Fraction(s0) + Fraction(s1) - 2 / pi_106) < Fraction(1, 2 ** 104)


def test_ds_addtid_and_endpgm_ordered():
    body = ("s_mov_b32 m0, 64\nds_write_addtid_b32 v10\ns_waitcnt lgkmcnt(0)\n"
            "v_lshlrev_b32 v21, 2, v0\nds_read_b32 v20, v21 offset:64\ns_waitcnt lgkmcnt(0)\n"
            "ds_read_addtid_b32 v22 offset:0\ns_waitcnt lgkmcnt(0)\nv_mov_b32 v21, v22")
    vals = (np.arange(64) * 5 + 1).astype(np.uint32)
    outs, _ = run_lanes(body, [vals], n_out=2, lds_bytes=1024)
    assert [int(x) for x in outs[0]] == [int(v) for v in vals]
    assert [int(x) for x in outs[1]] == [int(v) for v in vals]
    # ends the wave like s_endpgm (nothing follows it in the code)
    from vlpc.runtime.emulator.testing import run_program
    _, stats = run_program("s_nop 0\ns_endpgm_ordered_ps_done\n")
    assert stats.instructions == 2
