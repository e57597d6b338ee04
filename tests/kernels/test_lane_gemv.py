"""The lane-along-K decode GEMV (passes/isel/gemv.py): f16 and int8, M = 1..16, on the
strict emulator with exactly sized buffers (the gaps between rows NaN for f16/f32, garbage for
int8/i32; C's padding compared bit for bit after the launch), int8 exact, f16 against float64
math within the f32-accumulation bound (tests/dot_support.py), beta = 0 over a NaN C, alpha = 0
over NaN/Inf inputs; the K loop with B and A loaded a batch ahead, a partial last K step, the LDS
reduction in chunks of 8 sums, the plan's applicability and the ``gemv`` attribute."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.dialects.gemm import ELEMENT_BYTES

from dot_support import source
from test_dot_gemm import NP, run_case


def lane_kernel(m, n, k, lda, ldb, ldc, ab, ct):
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc, ab, ct)).kernel("g")
    li = kern.launch_info
    # one wave per workgroup (M <= 8), two in step (M > 8) or four sharing A in LDS (M = 12, 16), a
    # few weight rows each
    a_lds = m % 4 == 0 and n % 8 == 0 and k * ELEMENT_BYTES[ab] >= 2048
    wg = 64 if m <= 8 else 256 if a_lds else 128
    assert (li["workgroup_size"], kern.local_split, li["macro_m"]) == (wg, 1, m), "not the lane-along-K GEMV"
    assert n % li["macro_n"] == 0 and li["macro_n"] < 64
    return kern


@pytest.mark.parametrize("m, n, k, pad_a, pad_b, pad_c, ab, ct", [
    (1, 16, 4096, 8, 16, 3, "f16", "f32"),     # 8 K steps: the loop, one row of A
    (3, 24, 2048, 8, 0, 1, "f16", "f16"),      # f16 C; 3 sums: one partial LDS chunk
    (16, 8, 4096, 0, 8, 5, "f16", "f32"),      # A in LDS, four waves a workgroup, 8 steps; 32 sums: one LDS chunk
    (5, 12, 8192, 16, 16, 2, "i8", "i32"),     # int8: exact; 8 steps
    (16, 4, 2048, 0, 16, 0, "i8", "i32"),      # 16 x 2 sums, two steps
    (2, 6, 1024, 0, 0, 0, "f16", "f32"),       # one K step: no loop
    (3, 8, 1000, 8, 8, 1, "f16", "f32"),       # a whole step, then 976 bytes: 61 lanes of a partial step
    (1, 4, 40, 0, 8, 0, "f16", "f16"),         # only a partial step (80 bytes: 5 lanes)
    (5, 12, 11008, 16, 0, 2, "i8", "i32"),     # 10 whole steps and 768 bytes (Llama-2's down projection K)
    (16, 8, 2000, 8, 0, 3, "f16", "f32"),      # A in LDS, 3 steps and a partial one (A from memory)
    (16, 4, 2000, 8, 0, 3, "f16", "f32"),      # two waves a workgroup (N / 4 not even), 3 steps and a partial one
])
def test_lane_gemv_exact_buffers(m, n, k, pad_a, pad_b, pad_c, ab, ct):
    """Padded rows (NaN / garbage in the gaps, never read), C's padding untouched; beta = 0 over a
    C of NaN (f16/f32; never read), then alpha and beta nonzero."""
    lda, ldb, ldc = k + pad_a, k + pad_b, n + pad_c
    kern = lane_kernel(m, n, k, lda, ldb, ldc, ab, ct)
    nan_c = np.full((m, n), np.nan, NP[ct]) if ct != "i32" else None
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, 1 if ab == "i8" else 0.75, 0 if ab == "i8" else 0.0, c=nan_c)
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, -3 if ab == "i8" else 1.25, 2 if ab == "i8" else -0.5, seed=3)


@pytest.mark.parametrize("m", [4, 16])  # one wave; A in LDS (C read before the reduction)
@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("i8", "i32")])
def test_lane_gemv_alpha_zero_over_nan_inputs(ab, ct, m):
    """alpha = 0: the products are dropped (f16: NaN in A, Inf in B do not reach C); C = beta C."""
    n = 8
    k = 2048 // ELEMENT_BYTES[ab]
    alpha_zero_over_nan(lane_kernel(m, n, k, k, k, n, ab, ct), m, n, k, ab, ct)


def alpha_zero_over_nan(kern, m, n, k, ab, ct):
    """``kern`` (unpadded M x K, N x K, M x N) under alpha = 0 with NaN activations and Inf weights
    (f16; random int8): C = beta C, finite."""
    if ab == "f16":
        a, b = np.full((m, k), np.nan, np.float16), np.full((n, k), np.inf, np.float16)
    else:
        rng = np.random.default_rng(7)
        a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in ((m, k), (n, k)))
    got = run_case(kern, m, n, k, k, k, n, ab, ct, 0, 1.5 if ab == "f16" else 3, a=a, b=b)
    assert np.isfinite(got.astype(np.float64)).all()


@pytest.mark.parametrize("m, n, k, lda, ab, epi", [
    (4, 64, 1004, 1008, "f16", ""),           # K x 2 bytes not a multiple of 16
    (4, 64, 1024, 1028, "f16", ""),           # A's rows not on 16-byte boundaries
    (17, 64, 1024, 1024, "f16", ""),          # M above 16
    (4, 64, 1024, 1024, "f16", ', epilogue = ["relu"]'),  # a fused epilogue
])
def test_lane_gemv_applies_only_where_it_can(m, n, k, lda, ab, epi):
    """Elsewhere the dot kernels' decode GEMV (or GEMM) compiles it, as before."""
    text = source(m, n, k, lda, k, n, ab, "f32").replace('layout = "NT"', f'layout = "NT"{epi}')
    kern = vlpc.compile(text).kernel("g")
    assert kern.launch_info["workgroup_size"] != 64 or kern.launch_info["macro_n"] == 64


def test_gemv_attribute():
    """``gemv = "sgpr"`` keeps the SGPR decode GEMV; an unknown value is a located error."""
    kern = vlpc.compile(source(4, 64, 1024, 1024, 1024, 64, "f16", "f32", gemv="sgpr")).kernel("g")
    assert kern.local_split > 1 and kern.launch_info["macro_n"] == 64
    with pytest.raises(Exception, match=r"<input>:2:3: error: gemv = \"lanes\": the decode GEMV kernel is one of"):
        vlpc.compile(source(4, 64, 1024, 1024, 1024, 64, "f16", "f32", gemv="lanes"))


@pytest.mark.parametrize("plan, m, n, k, ab, ct", [
    ((2, 1, 8, 32), 16, 8, 4096, "f16", "f32"),   # 2 rows per load (32 lanes a row), 4 rows a wave
    ((2, 2, 4, 16), 5, 16, 2048, "f16", "f16"),   # 4 rows per load, 8 rows a wave, B two steps ahead
    ((1, 2, 1, 32), 1, 6, 1024, "i8", "i32"),     # int8, 2 rows per load
    ((2, 1, 8, 16), 16, 24, 4096, "i8", "i32"),
    ((1, 2, 4, 32, 2), 5, 16, 2048, "f16", "f16"),  # two waves a workgroup, 2 rows per load
    ((1, 2, 1, 64, 4), 1, 300, 4096, "f16", "f32"),  # four waves, 75 workgroups (64 and more)
])
def test_lane_gemv_rows_spread_over_a_load(monkeypatch, plan, m, n, k, ab, ct):
    """Plans the automatic choice does not take (LaneGemvBuilder's ``span`` < 64: each load reads
    16 x span bytes of 64 / span rows; ``waves``: several waves a workgroup, each its own rows and
    LDS): the same exactness, padding and beta = 0 rules."""
    import vlpc.passes.isel.gemv as lane

    monkeypatch.setattr(lane, "lane_gemv_plan", lambda mm: plan)
    lda, ldb, ldc = k + 16, k + 16, n + 3
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc, ab, ct), cache=False).kernel("g")
    waves = plan[4] if len(plan) > 4 else 1
    assert kern.launch_info["macro_n"] == plan[0] * 64 // plan[3] * waves
    assert kern.launch_info["workgroup_size"] == 64 * waves
    nan_c = np.full((m, n), np.nan, NP[ct]) if ct != "i32" else None
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, 1 if ab == "i8" else 0.75, 0 if ab == "i8" else 0.0, c=nan_c)
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, -3 if ab == "i8" else 1.25, 2 if ab == "i8" else -0.5, seed=3)


@pytest.mark.parametrize("plan, m, n, k, ab, ct", [
    ((2, 2, 2, 64, 4, 2), 16, 16, 4096, "f16", "f32"),     # A in LDS: 8 steps, the loop of 2 steps
    ((2, 2, 4, 64, 4, 2), 16, 8, 2000, "f16", "f16"),      # 3 steps and a partial one (A from memory)
    ((2, 1, 4, 64, 4, 1), 16, 8, 11008, "i8", "i32"),      # 10 steps, one a loop iteration, a partial step
    ((2, 3, 8, 64, 2, 2), 16, 8, 7 * 1024, "i8", "i32"),   # B three steps ahead, two waves stage 8 rows each
    ((2, 2, 4, 64, 4, 3), 16, 8, 3 * 1024 + 64, "i8", "i32"),  # A three steps ahead: fewer steps than that
    ((4, 2, 4, 64, 1, 1), 16, 8, 4096, "f16", "f16"),      # one wave stages all of A
    ((1, 2, 4, 64, 2, 2), 4, 4, 1024, "f16", "f32"),       # one step: no loop, no barrier inside
    ((2, 1, 2, 64, 4, 1, 1), 12, 24, 4096, "i8", "i32"),  # one buffer (two barriers a step); M = 12: 3 rows a wave
    ((2, 1, 2, 64, 4, 1, 1), 16, 8, 2000, "f16", "f16"),  # one buffer, a partial last step
    ((2, 2, 2, 64, 4, 2, 1), 16, 8, 8192, "f16", "f32"),  # one buffer, A two steps ahead, B two
])
def test_lane_gemv_a_in_lds(monkeypatch, plan, m, n, k, ab, ct):
    """A staged in LDS once per workgroup and K step (LaneGemvBuilder's ``a_lds``, two buffers, a
    barrier a step; the reduction's larger chunks in their place): the same exactness, padding and
    beta = 0 rules, every schedule edge (loop or none, the last steps peeled, a partial step)."""
    import vlpc.passes.isel.gemv as lane

    monkeypatch.setattr(lane, "lane_gemv_plan", lambda mm: plan)
    lda, ldb, ldc = k + 16, k + 16, n + 3
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc, ab, ct), cache=False).kernel("g")
    assert kern.launch_info["workgroup_size"] == 64 * plan[4]
    nan_c = np.full((m, n), np.nan, NP[ct]) if ct != "i32" else None
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, 1 if ab == "i8" else 0.75, 0 if ab == "i8" else 0.0, c=nan_c)
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, -3 if ab == "i8" else 1.25, 2 if ab == "i8" else -0.5, seed=3)


@pytest.mark.parametrize("m, swizzles", [(16, 31), (12, 31), (4, 0)])
def test_lane_gemv_reduction_by_lane_exchanges(m, swizzles):
    """A in LDS (M = 12, 16): the sums are added by five halvings through ``ds_swizzle_b32`` (d
    bit-mask swaps at partner distance d = 16, 8, 4, 2, 1; AMD Vega ISA DS_SWIZZLE_B32: offset
    0x1f | d << 10 reads lane l ^ d) and one LDS add of the half-waves, not by the chunked LDS
    reduction; the one-wave M <= 8 kernel keeps the LDS reduction (the results: the tests above)."""
    r = vlpc.compile(source(m, 8, 2048, 2048, 2048, 8, "f16", "f32"))
    asm = r.asm
    assert asm.count("ds_swizzle_b32") == swizzles
    for d in (16, 8, 4, 2, 1) if swizzles else ():
        assert asm.count(f"offset:{0x1F | d << 10}") == d  # d values cross at distance d
    assert ("8 lanes' partials" in asm) == (swizzles == 0)
