"""The M = 16 decode GEMV with A read from LDS in half rows (passes/isel/gemv.py, plan element
``a_ahead`` = 2: ``ds_read_b64`` two halves ahead, A's step in LDS as two 8-byte planes, 64
VGPRs: four workgroups a CU), on the strict emulator: exactly sized buffers with NaN (f16/f32) or
garbage (int8/i32) in the row gaps and C's padding compared bit for bit (tests/kernels/
test_dot_gemm.py ``run_case``: int8 exact, f16 within the f32-accumulation bound of float64
math), beta = 0 over a NaN C, alpha = 0 over NaN activations and Inf weights; the loop, the
peeled last steps, a partial last step, two LDS buffers, B two steps ahead; the same with B in
two ``global_load_dwordx2`` halves (plan element ``b_split``, the automatic plan's); where the
automatic plan takes it (:func:`~vlpc.passes.isel.gemv.fewer_rounds_at_four`, for no board and for
the board named at compile) and that it fits four a CU."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.dialects.gemm import ELEMENT_BYTES
from vlpc.passes.isel.gemv import fewer_rounds_at_four
from vlpc.runtime import timing
from vlpc.targets import get_board

from dot_support import source
from test_dot_gemm import NP, run_case
from test_lane_gemv import alpha_zero_over_nan

HALF = (2, 1, 1, 64, 4, 1, 1, 2)  # the automatic plan's half-row variant (lane_gemv_plan)
SPLIT = (*HALF, True)  # ... with B loaded in two halves (plan element ``b_split``)


def half_kernel(monkeypatch, plan, m, n, k, lda, ldb, ldc, ab, ct):
    import vlpc.passes.isel.gemv as lane

    monkeypatch.setattr(lane, "lane_gemv_plan", lambda mm: plan)
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc, ab, ct), cache=False).kernel("g")
    assert kern.launch_info["workgroup_size"] == 256 and kern.launch_info["macro_n"] == 8
    return kern


@pytest.mark.parametrize("plan, m, n, k, pads, ab, ct", [
    (HALF, 16, 16, 4096, (16, 16, 3), "f16", "f32"),    # 8 K steps: the loop, the last steps peeled
    (HALF, 16, 8, 4096, (0, 0, 0), "i8", "i32"),        # int8 exact, 4 steps, no padding at all
    (HALF, 16, 8, 2048, (8, 0, 5), "f16", "f16"),       # two steps: no loop; f16 C
    (HALF, 16, 24, 3 * 1024, (0, 16, 1), "i8", "i32"),  # three steps, three workgroups
    (HALF, 16, 8, 2000, (8, 8, 2), "f16", "f32"),       # 3 whole steps, then 976 bytes (A from memory)
    ((2, 1, 1, 64, 4, 1, 2, 2), 16, 8, 4096, (16, 0, 3), "f16", "f32"),  # two LDS buffers (offset carried)
    ((2, 2, 1, 64, 4, 1, 1, 2), 16, 8, 8192, (0, 16, 0), "i8", "i32"),   # B two steps ahead
    ((2, 1, 1, 64, 4, 1, 1, 2), 12, 8, 4096, (8, 8, 1), "f16", "f32"),   # M = 12: 3 staged rows a wave
    # B in two dwordx2 halves (the next step's low half loaded between the passes)
    (SPLIT, 16, 16, 4096, (16, 16, 3), "f16", "f32"),   # the loop and the peeled steps
    (SPLIT, 16, 8, 4096, (0, 0, 0), "i8", "i32"),       # int8 exact, no padding at all
    (SPLIT, 16, 8, 2000, (8, 8, 2), "f16", "f16"),      # a partial last step (A from memory); f16 C
    ((2, 1, 1, 64, 4, 1, 2, 2, True), 16, 8, 4096, (16, 0, 3), "i8", "i32"),   # two LDS buffers
    ((2, 2, 1, 64, 4, 1, 1, 2, True), 16, 8, 8192, (0, 16, 0), "i8", "i32"),   # B two steps ahead
    ((2, 1, 1, 64, 4, 1, 1, 2, True), 12, 24, 3 * 1024, (8, 8, 1), "f16", "f32"),  # M = 12, three steps
])
def test_half_rows_exact_buffers(monkeypatch, plan, m, n, k, pads, ab, ct):
    """Padded rows never read, C's padding untouched; beta = 0 over a C of NaN (f16/f32), then
    alpha and beta nonzero."""
    lda, ldb, ldc = k + pads[0], k + pads[1], n + pads[2]
    kern = half_kernel(monkeypatch, plan, m, n, k, lda, ldb, ldc, ab, ct)
    nan_c = np.full((m, n), np.nan, NP[ct]) if ct != "i32" else None
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, 1 if ab == "i8" else 0.75, 0 if ab == "i8" else 0.0, c=nan_c)
    run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, -3 if ab == "i8" else 1.25, 2 if ab == "i8" else -0.5, seed=3)


@pytest.mark.parametrize("plan", [HALF, SPLIT])
@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("i8", "i32")])
def test_half_rows_alpha_zero_over_nan_inputs(monkeypatch, plan, ab, ct):
    """alpha = 0: the products are dropped (f16: NaN in A, Inf in B do not reach C); C = beta C."""
    m, n = 16, 8
    k = 4096 // ELEMENT_BYTES[ab]
    alpha_zero_over_nan(half_kernel(monkeypatch, plan, m, n, k, k, k, n, ab, ct), m, n, k, ab, ct)


def test_fewer_rounds_at_four():
    """CU 0 of MI50 (60 CUs) and MI60 (64) runs ceil(W / C) workgroups: four a CU only where that
    is fewer rounds on both (worked by hand)."""
    assert not fewer_rounds_at_four(512)    # N = 4096: MI50 9 a CU, 3 rounds either way
    assert fewer_rounds_at_four(1376)       # N = 11008: MI50 23 (6 rounds, not 8), MI60 22 (6, not 8)
    assert not fewer_rounds_at_four(60)     # one each: one round either way
    assert fewer_rounds_at_four(1024)       # N = 8192: 18 (5 < 6) and 16 (4 < 6)
    assert fewer_rounds_at_four(512, "mi60")    # compiled for MI60: 8 a CU, 2 rounds instead of 3
    assert not fewer_rounds_at_four(512, "mi50")


@pytest.mark.parametrize("gpu, half", [(None, False), ("mi50", False), ("mi60", True)])
def test_plan_for_the_named_board(gpu, half):
    """f16 16 x 4096 x 4096: half rows (64 VGPRs, B in halves) when compiled for MI60, whose 64 CUs
    take the 512 workgroups in two rounds of four; the 77-VGPR plan for MI50 and for no board."""
    kern = vlpc.compile(source(16, 4096, 4096, 4096, 4096, 4096, "f16", "f32"), gpu=gpu, cache=False).kernel("g")
    assert (kern.vgprs <= 64) == half
    assert ("global_load_dwordx2" in kern.asm) == half


@pytest.mark.parametrize("n, k, ab, half, per_cu", [
    (11008, 4096, "f16", True, 4),    # Llama-2's gate/up projection: four a CU
    (11008, 4096, "i8", True, 4),
    (4096, 4096, "f16", False, 3),    # 512 workgroups: three a CU (the 77-VGPR plan)
    (4096, 11008, "f16", False, 2),   # a partial last K step: A from memory there (108 VGPRs), no half rows
])
def test_automatic_plan_and_fit(n, k, ab, half, per_cu):
    """The automatic M = 16 plan: half rows where :func:`fewer_rounds_at_four` says so, and then
    64 VGPRs and 16 KiB of LDS: the workgroup fits a CU four times on MI50 and MI60 (the timing
    model's residency, from the target's occupancy rules)."""
    ct = "f32" if ab == "f16" else "i32"
    kern = vlpc.compile(source(16, n, k, k, k, n, ab, ct)).kernel("g")
    assert kern.launch_info["workgroup_size"] == 256
    lds = kern.metadata[".group_segment_fixed_size"]
    assert lds == 16384
    for gpu in ("mi50", "mi60"):
        res = timing.residency(get_board(gpu), kern.vgprs, kern.sgprs, lds, 256)
        assert res.wgs_per_cu == per_cu, (gpu, kern.vgprs, res)
    assert (kern.vgprs <= 64) == half
    assert ("ds_read_b64" in kern.asm) == half
    assert ("global_load_dwordx2" in kern.asm) == half  # B in two halves (plan element b_split)
