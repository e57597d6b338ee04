"""The decode GEMV plan's kernel paths (dialects/gemm.py ``gemv_plan``, passes/isel/dot.py):
K steps of 8 dwords for M = 5..15 (16 for M <= 4 and M = 16), A's K-major pieces of
``gemv_a_width`` dwords (a whole step per s_load_dwordx16 for M <= 4, s_load_dwordx8 for
M = 16 and for one-batch steps of 8, s_load_dwordx4 otherwise), the peeled last K step, and
the one-pass LDS reduction after which wavefront group g < M stores row g itself.  Strict emulator, exactly
sized buffers with NaN (f16/f32) or garbage (i8/i32) padding, C's padding checked bit for bit;
int8 exact, f16 against float64 math with the f32-accumulation bound (tests/dot_support.py)."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.dialects.gemm import GemmShape, gemv_a_width, gemv_plan

from test_dot_gemm import NP, run_case, source
from test_dot_epilogue import run_case as run_epilogue_case


def ld_of(k: int, p: int) -> int:
    """A leading dimension past K, a multiple of the packing p (rows start on 4-byte boundaries)."""
    return k + 1 + (p - (k + 1) % p) % p


@pytest.mark.parametrize("m, n, ab, ct, ks, width", [
    (16, 100, "i8", "i32", 16, 8),  # M = 16: 16 groups, one row each; N edge (two workgroups, the second 36 wide)
    (16, 64, "f16", "f16", 16, 8),  # f16 C
    (5, 70, "i8", "i32", 8, 8),     # groups 5..15 only add partials, then end; a step in one batch
    (7, 64, "f16", "f32", 8, 8),
    (12, 64, "f16", "f32", 8, 4),   # two batches a step (48 + 48 SGPRs as 64 + 32), 4-dword pieces
    (4, 70, "i8", "i32", 16, 16),   # a step of A in one batch: one s_load_dwordx16 per row
    (4, 64, "f16", "f32", 16, 16),
])
def test_gemv_peeled_step_and_row_per_group(m, n, ab, ct, ks, width):
    """Two K steps per group (the last one peeled: no load of a next step), K % P values left
    over; one store per group.  A's pieces: ``width`` dwords of a row per scalar load, K-major
    (M = 16: batches of 8 rows x 8 dwords, two per 8 dwords of K, each reading two B quads).
    f16: the groups' partial rows in 16 x M rows of LDS, one barrier, group g adds row g's 16
    partials in group order.  int8: M rows of LDS zeroed before the K loop (a barrier), each
    group's ds_add_u32 of its M partial rows, a barrier, one read.  beta = 0 over a NaN C,
    then alpha and beta both nonzero."""
    p = 2 if ab == "f16" else 4
    k = 16 * 2 * ks * p + p - 1  # 16 groups x 2 steps x ks dwords, and p - 1 values left over
    ld = ld_of(k, p)
    kern = vlpc.compile(source(m, n, k, ld, ld, n, ab, ct)).kernel("g")
    assert (kern.local_split, kern.launch_info["k_step"], kern.launch_info["macro_n"]) == (16, ks, 64)
    assert gemv_a_width(m, ks) == width
    asm = kern.asm
    assert "last step re-reads itself" not in asm
    a_loads = [ln.split()[0] for ln in asm.splitlines() if "; A row" in ln]
    # two steps of m rows x ks dwords in pieces of `width` (the leftover K % P values: one load each)
    assert a_loads.count(f"s_load_dwordx{width}") == 2 * m * ks // width
    assert not any(x.startswith("s_load_dwordx") and x != f"s_load_dwordx{width}" for x in a_loads)
    assert asm.count("global_store") == 1
    if ab == "i8":
        assert (asm.count("s_barrier"), asm.count("ds_add_u32"), asm.count("ds_read_b32")) == (2, m, 1)
        assert f".amdhsa_group_segment_fixed_size {m * 64 * 4}" in asm
    else:
        assert asm.count("s_barrier") == 1 and "ds_add" not in asm
        assert f".amdhsa_group_segment_fixed_size {16 * m * 64 * 4}" in asm
    nan_c = np.full((m, n), np.nan, NP[ct]) if ct != "i32" else None
    run_case(kern, m, n, k, ld, ld, n, ab, ct, 1 if ab == "i8" else 0.75, 0 if ab == "i8" else 0.0, local=16, c=nan_c)
    run_case(kern, m, n, k, ld, ld, n, ab, ct, -3 if ab == "i8" else 1.25, 2 if ab == "i8" else -0.5, seed=3, local=16)


@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("i8", "i32")])
def test_gemv_alpha_zero_over_nan_inputs(ab, ct):
    """alpha = 0: the products are dropped (f16: NaN in A and B does not reach C); C = beta C."""
    m, n, p = 16, 64, 2 if ab == "f16" else 4
    k = 16 * 16 * p
    kern = vlpc.compile(source(m, n, k, k, k, n, ab, ct)).kernel("g")
    if ab == "f16":
        a, b = np.full((m, k), np.nan, np.float16), np.full((n, k), np.inf, np.float16)
    else:
        rng = np.random.default_rng(7)
        a, b = (rng.integers(-128, 128, s).astype(np.int8) for s in ((m, k), (n, k)))
    got = run_case(kern, m, n, k, k, k, n, ab, ct, 0, 1.5 if ab == "f16" else 3, a=a, b=b, local=16)
    assert np.isfinite(got.astype(np.float64)).all()


@pytest.mark.parametrize("m, want", [(1, 16), (4, 16), (5, 8), (15, 8), (16, 16)])
def test_gemv_k_step_rule(m, want):
    """gemv_plan: 16-dword K steps while a step of A (M rows x 16 dwords, K-major) fits one
    64-SGPR batch, 8 above up to 15 rows, 16 for 16 rows (with 8-dword pieces: gemv_a_width);
    gemm-tile takes it unless the K step is given."""
    shape = GemmShape(m, 4096, 4096, 4096, 4096, 4096, "i8", c_dtype="i32")
    assert gemv_plan(shape)[2] == want
    assert gemv_plan(shape, 16)[2] == 16
    kern = vlpc.compile(source(m, 128, 4096, 4096, 4096, 128, "i8", "i32")).kernel("g")
    assert kern.launch_info["k_step"] == want


def test_gemv_given_k_step_and_single_step_slices():
    """A K step of 8 given for M = 16 (two batches of 4-dword pieces a step, the last step
    peeled), and slices of one K step each (no peel: the loop runs once)."""
    m, n = 16, 64
    k = 16 * 8 * 4 * 2 + 2  # int8: two 8-dword steps per group, 2 values left over
    kern = vlpc.compile(source(m, n, k, k + 2, k + 2, n, "i8", "i32"), k_step=8).kernel("g")
    assert (kern.local_split, kern.launch_info["k_step"]) == (16, 8)
    assert "s_load_dwordx8" not in kern.asm and kern.asm.count("s_load_dwordx4") >= 2 * m * 2
    run_case(kern, m, n, k, k + 2, k + 2, n, "i8", "i32", 2, -1, local=16)
    k = 16 * 16 * 2  # f16: one 16-dword step per group (gemv = "sgpr": not the lane-along-K GEMV)
    kern = vlpc.compile(source(m, n, k, k, k, n, "f16", "f32", gemv="sgpr")).kernel("g")
    assert (kern.local_split, kern.launch_info["k_step"]) == (16, 16)
    assert "last step re-reads itself" in kern.asm
    run_case(kern, m, n, k, k, k, n, "f16", "f32", 1.0, 0.0, local=16, c=np.full((m, n), np.nan, np.float32))


@pytest.mark.parametrize("m, ab, ct, epi", [
    (16, "f16", "f32", ("bias_row", "relu")),  # bias[row0 + g] in each group's own output
    (8, "i8", "f32", ("bias_row",)),           # W8A8: scale_row[row0 + g]
    (6, "i8", "f16", ("bias_col",)),
])
def test_gemv_row_per_group_epilogues(m, ab, ct, epi):
    """The row a group stores (row0 + g) also indexes the row bias and the row scales."""
    p = 2 if ab == "f16" else 4
    k = 16 * 16 * p + 1
    run_epilogue_case(m, 128, k, ld_of(k, p), 128, ab, ct, epi, 0.75, 0.5)


@pytest.mark.parametrize("m, ab, ct, ks", [(16, "i8", "i32", 16), (16, "f16", "f16", 16), (15, "i8", "i32", 8)])
def test_gemv_uneven_slices(m, ab, ct, ks):
    """K dwords not a multiple of 16 groups x the K step (as at K = 11008): 261 dwords in
    slices of 32 (K step 16: 8 groups of 32, one of 5, seven empty) or 24 (K step 8: 10 groups
    of 24, one of 21, five empty), the empty groups adding zero partial rows; the slice lengths
    are computed in the kernel, so the loop is not peeled."""
    n, p = 64, 2 if ab == "f16" else 4
    k = p * 261 + p - 1  # 261 dwords, and p - 1 values left over
    ld = ld_of(k, p)
    kern = vlpc.compile(source(m, n, k, ld, ld, n, ab, ct)).kernel("g")
    assert (kern.local_split, kern.launch_info["k_step"]) == (16, ks)
    assert ("ds_add_u32" in kern.asm) == (ab == "i8")
    nan_c = np.full((m, n), np.nan, NP[ct]) if ct != "i32" else None
    run_case(kern, m, n, k, ld, ld, n, ab, ct, 1 if ab == "i8" else 1.0, 0 if ab == "i8" else 0.0, local=16, c=nan_c)
    run_case(kern, m, n, k, ld, ld, n, ab, ct, 5 if ab == "i8" else -0.5, -1 if ab == "i8" else 2.0, seed=9, local=16)
