"""f16 instructions: IEEE half-precision results (NumPy's float16 conversions as the
reference, single rounding of the exact result), op_sel halves, f16 neg/abs on bit 15,
16-bit compares."""

from __future__ import annotations

import numpy as np
import pytest

from vlpc.runtime.emulator.testing import run_lanes


def h(*v):
    return np.array(v, np.float16).view(np.uint16).astype(np.uint32)


def run1(body, *cols):
    ins = [np.resize(np.asarray(c, np.uint32), 64) for c in cols]
    (out,), _ = run_lanes(body, ins)
    return out[: len(cols[0])]


def as_h(out):
    return (out & 0xFFFF).astype(np.uint16).view(np.float16)


RNG = np.random.default_rng(3)
X = (RNG.standard_normal(48) * 4).astype(np.float16)
Y = (RNG.standard_normal(48) * 4).astype(np.float16)
Z = (RNG.standard_normal(48) * 4).astype(np.float16)


@pytest.mark.parametrize("mn, ref", [
    ("v_add_f16", lambda a, b: a.astype(np.float64) + b),
    ("v_sub_f16", lambda a, b: a.astype(np.float64) - b),
    ("v_mul_f16", lambda a, b: a.astype(np.float64) * b),
    ("v_max_f16", np.maximum), ("v_min_f16", np.minimum),
])
def test_binary_f16_single_rounding(mn, ref):
    out = run1(f"{mn} v20, v10, v11", h(*X), h(*Y))
    want = ref(X, Y).astype(np.float16)
    assert (as_h(out).view(np.uint16) == want.view(np.uint16)).all()
    assert (out >> 16 == 0).all()     # GFX9: the high half is zeroed


def test_fma_f16_and_unfused_mad():
    out = run1("v_fma_f16 v20, v10, v11, v12", h(*X), h(*Y), h(*Z))
    want = (X.astype(np.float64) * Y + Z).astype(np.float16)
    assert (as_h(out).view(np.uint16) == want.view(np.uint16)).all()
    out = run1("v_mad_f16 v20, v10, v11, v12", h(*X), h(*Y), h(*Z))
    want = ((X.astype(np.float64) * Y).astype(np.float16).astype(np.float64) + Z).astype(np.float16)
    assert (as_h(out).view(np.uint16) == want.view(np.uint16)).all()


def test_op_sel_and_modifiers():
    # S0 = high half (2.0) of v10, S1 = -(low half (1.0) of v11); result into the high half of v20
    a = (h(2.0) << 16) | h(7.0)
    body = "v_mov_b32 v20, v12\nv_fma_f16 v20, v10, -v11, 0 op_sel:[1,0,0,1]"
    out = run1(body, [int(a[0])], h(1.0), [0x0000ABCD])
    assert int(out[0]) == (int(h(-2.0)[0]) << 16) | 0xABCD      # 2 * (-1) + 0 in the high half
    out = run1("v_mul_f16_e64 v20, |v10|, v11", h(-3.0), h(2.0))
    assert as_h(out)[0] == 6.0


def test_conversions_and_compares():
    assert [int(x) for x in run1("v_cvt_i16_f16 v20, v10", h(-3.7, 70000.0 / 2, -1e4))] == \
        [0xFFFD, 0x7FFF, (-10000) & 0xFFFF]
    assert as_h(run1("v_cvt_f16_i16 v20, v10", [0xFFFE]))[0] == -2.0
    out = run1("v_cmp_lt_f16 vcc, v10, v11\nv_cndmask_b32 v20, 0, 1, vcc", h(*X), h(*Y))
    assert (out == (X < Y)).all()
    out = run1("v_cmp_gt_i16 vcc, v10, v11\nv_cndmask_b32 v20, 0, 1, vcc", [0xFFFF, 1], [0, 0])
    assert out.tolist() == [0, 1]
    out = run1("v_max_f16 v20, v10, v11", h(np.nan), h(5.0))
    assert as_h(out)[0] == 5.0


def test_madmk_madak_f16_literal():
    # v_madmk_f16: S0 * K + S1;  v_madak_f16: S0 * S1 + K  (K = 2.0 as an f16 literal)
    out = run1("v_madmk_f16 v20, v10, 0x4000, v11", h(1.5), h(0.25))
    assert as_h(out)[0] == 3.25
    out = run1("v_madak_f16 v20, v10, v11, 0x4000", h(1.5), h(0.5))
    assert as_h(out)[0] == 2.75
