"""f16 and int8 GEMM through gfx906's dot instructions (passes/isel/dot.py), end to end
on the strict emulator: exactly sized buffers with NaN (f16/f32) or garbage (i8/i32) padding,
K not a multiple of the packing (2 f16 / 4 int8 values per dword), edges in M and N, sizes
given at launch, BLAS's alpha = 0 and beta = 0 rules.  References: float64 math on the f16
inputs with the f32-accumulation bound of tests/dot_support.py; int8 exact (int64 math)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vlpc
from vlpc.errors import VlpcError

from dot_support import (NP, SCALAR, assert_close, batch_memref, exact, f16_batch, flat_batch, launch_dot,
                         memref, operands, pad_mask, reference, rows_of, source)


def run_case(kern, m, n, k, lda, ldb, ldc, ab, ct, alpha, beta, seed=0, a=None, b=None, c=None, local=1):
    rng = np.random.default_rng(seed)
    a0, b0, c0, pad_ab, pad_c = operands(m, n, k, ab, ct, rng)
    a = a0 if a is None else a
    b = b0 if b is None else b
    c = c0 if c is None else c
    af, bf, cf = exact(a, lda, pad_ab), exact(b, ldb, pad_ab), exact(c, ldc, pad_c)
    out, _ = launch_dot(kern, af, bf, cf, alpha, beta, m, n, k, lda, ldb, ldc)
    got = rows_of(out, m, n, ldc)
    exp, bound = reference(a, b, c, alpha, beta, local)
    if ab == "i8":
        np.testing.assert_array_equal(got.astype(np.int64), exp)
    else:
        assert_close(got, exp, bound)
    pm = pad_mask(cf.size, m, n, ldc)  # C's padding is not written
    assert np.array_equal(out[pm].view(np.uint8), cf[pm].view(np.uint8))
    return got


@pytest.mark.parametrize("m, n, k, lda, ldb, ldc, ct", [
    (64, 256, 64, 64, 64, 256, "f32"),     # whole tiles, whole K steps (32 f16 values each)
    (64, 256, 41, 42, 42, 256, "f32"),     # K odd: 20 dwords (a K step of 16 + a tail of 4) + 1 value
    (70, 300, 37, 38, 40, 301, "f32"),     # edges in M (moved-up tile) and N (EXEC), padded rows
    (5, 70, 3, 4, 4, 70, "f32"),           # a tile of 5 rows; K = 3: one dword and one value
    (64, 256, 41, 42, 42, 256, "f16"),     # f16 output
    (33, 100, 1, 2, 2, 100, "f16"),        # K = 1: only the one-value step
])
def test_f16_static(m, n, k, lda, ldb, ldc, ct):
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc, "f16", ct)).kernel("g")
    run_case(kern, m, n, k, lda, ldb, ldc, "f16", ct, 1.5, 0.5)


@pytest.mark.parametrize("m, n, k, lda, ldb, ldc", [
    (64, 256, 128, 128, 128, 256),   # whole K steps of 64 int8 values
    (70, 100, 71, 72, 76, 101),      # K % 4 = 3, edges, padded rows
    (3, 65, 2, 4, 4, 65),            # K < 4: only values, no whole dword
    (9, 64, 4 * 16 + 5, 72, 72, 64),  # K % 4 = 1 after one whole K step
])
def test_i8_static_exact(m, n, k, lda, ldb, ldc):
    kern = vlpc.compile(source(m, n, k, lda, ldb, ldc, "i8", "i32")).kernel("g")
    run_case(kern, m, n, k, lda, ldb, ldc, "i8", "i32", 3, -2)
    run_case(kern, m, n, k, lda, ldb, ldc, "i8", "i32", -1, 0, seed=1)  # beta = 0


@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("f16", "f16"), ("i8", "i32")])
def test_sizes_at_launch(ab, ct):
    """One kernel, sizes and leading dimensions given at launch: K with every remainder
    mod the packing, the dword tail loop, M below the macro tile (row-narrow companions)."""
    kern = vlpc.compile(source(None, None, None, None, None, None, ab, ct)).kernel("g")
    p = 2 if ab == "f16" else 4
    for i, (m, n, k) in enumerate([(64, 256, 35 * p + 1), (66, 70, 16 * p + p - 1), (3, 65, 5), (9, 64, 1)]):
        lda = -(-k // p) * p + p
        run_case(kern, m, n, k, lda, lda + p, n + 3, ab, ct, 2 if ab == "i8" else 0.75, 1 if ab == "i8" else -1.25,
                 seed=i)


@pytest.mark.parametrize("ct", ["f32", "f16"])
def test_f16_alpha_zero_over_nan_and_beta_zero_over_nan(ct):
    """BLAS: alpha = 0 gives beta * C even with NaN/Inf in A and B; beta = 0 never reads C."""
    m, n, k = 20, 70, 9
    kern = vlpc.compile(source(m, n, k, 10, 10, n, "f16", ct)).kernel("g")
    rng = np.random.default_rng(3)
    a, b, c, _, _ = operands(m, n, k, "f16", ct, rng)
    a[1, 2], a[4, 8], b[3, 0], b[7, 8] = np.nan, np.inf, -np.inf, np.nan
    got = run_case(kern, m, n, k, 10, 10, n, "f16", ct, 0.0, 0.5, a=a, b=b, c=c)
    assert np.isfinite(got).all()
    c_nan = np.full_like(c, np.nan)
    a2, b2, _, _, _ = operands(m, n, k, "f16", ct, rng)
    got = run_case(kern, m, n, k, 10, 10, n, "f16", ct, 1.0, 0.0, a=a2, b=b2, c=c_nan)
    assert np.isfinite(got).all()


def test_f16_nan_in_inputs_propagates():
    """alpha != 0: a NaN in A reaches exactly its row of C (also from the one-value step)."""
    m, n, k = 16, 64, 7
    kern = vlpc.compile(source(m, n, k, 8, 8, n, "f16", "f32")).kernel("g")
    a, b, c, _, _ = operands(m, n, k, "f16", "f32", np.random.default_rng(5))
    a[5, 6] = np.nan  # k = 6: the value after the last whole dword
    got = run_case(kern, m, n, k, 8, 8, n, "f16", "f32", 1.0, 1.0, a=a, b=b, c=c)
    assert np.isnan(got[5]).all() and np.isfinite(np.delete(got, 5, axis=0)).all()


def test_local_split_and_small_m():
    """The GEMV shape: M = 4, K split over 4 wavefront groups (LDS reduction), K odd."""
    m, n, k = 4, 128, 4 * 32 * 2 + 3
    src = source(m, n, k, k + 1, k + 1, n, "f16", "f32")
    kern = vlpc.compile(src, macro_tile=(4, 64), micro_tile=(4, 1), local_split=4).kernel("g")
    assert kern.local_split == 4
    run_case(kern, m, n, k, k + 1, k + 1, n, "f16", "f32", 1.0, 0.0, local=4)
    src = source(m, n, 259, 260, 260, n, "i8", "i32")
    kern = vlpc.compile(src, macro_tile=(4, 64), micro_tile=(4, 1), local_split=4).kernel("g")
    run_case(kern, m, n, 259, 260, 260, n, "i8", "i32", 1, 0)


def test_selected_instructions():
    """The K loop is dot instructions with the A operand in an SGPR, nothing else on the VALU."""
    for ab, ct, mnem in (("f16", "f32", "v_dot2_f32_f16"), ("i8", "i32", "v_dot4_i32_i8")):
        kern = vlpc.compile(source(64, 256, 256, 256, 256, 256, ab, ct)).kernel("g")
        loop = kern.asm.split(".Lg_k_loop:")[1].split("s_cbranch_scc1 .Lg_k_loop")[0]
        valu = [ln.split()[0] for ln in loop.splitlines() if ln.strip().startswith("v_")]
        rows, k_step = kern.launch_info["macro_m"], kern.launch_info["k_step"]
        assert set(valu) == {mnem} and len(valu) == rows * k_step  # one dot per row and dword of the step
        assert all(re.search(rf"{mnem} v\d+, v\d+, s\d+, v\d+", ln) for ln in loop.splitlines() if mnem in ln)


@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("i8", "i32")])
def test_a_schedules(ab, ct):
    """The default tile is 32 rows (as f32's) and A's schedule (passes/isel/sqc_k_step.py) loads
    batches of 64 SGPRs after the previous batch's dots: one lgkmcnt(0) wait per 64 dots,
    each followed by exactly 64 dots; ``cover`` double-buffers batches of 32 (one wait per 32
    dots).  Both give the reference on three K steps, a dword tail and a value left over,
    with edges in M and N."""
    p = 2 if ab == "f16" else 4
    m, n, k = 70, 300, (3 * 16 + 5) * p + p - 1
    lda = ldb = -(-k // p) * p + p
    for schedule, per_wait in (("default", 64), ("cover", 32)):
        # (K step 16 given: the automatic plan weighs 8 too, gemm-tile's DOT_AUTO_K_STEPS)
        kern = vlpc.compile(source(m, n, k, lda, ldb, n + 1, ab, ct), schedule=schedule, k_step=16).kernel("g")
        rows, ks = kern.launch_info["macro_m"], kern.launch_info["k_step"]
        assert (rows, ks) == (32, 16)
        loop = kern.asm.split(".Lg_k_loop:")[1].split("s_cbranch_scc1 .Lg_k_loop")[0]
        dots_between = re.split(r"s_waitcnt[^\n]*lgkmcnt\(0\)", loop)[1:]
        assert len(dots_between) == rows * ks // per_wait
        counts = [chunk.count("v_dot") for chunk in dots_between]
        assert sum(counts) == rows * ks and all(c <= per_wait for c in counts)
        if schedule == "default":
            assert counts == [per_wait] * len(counts)
        run_case(kern, m, n, k, lda, ldb, n + 1, ab, ct, 2 if ab == "i8" else 0.75, -1 if ab == "i8" else 1.5)


@pytest.mark.parametrize("text, words", [
    # (int8 TN/TT with M = lda = 50 compile now: A is copied first, tests/kernels/test_dot_transpose.py)
    # (a static lda = 31 compiles now: A is copied into a padded workspace first, tests/kernels/test_dot_a_copy.py)
    # (a static ldb = 34 compiles now: B is copied into a padded workspace first, tests/kernels/test_dot_a_copy.py)
    (source(64, 64, 32, 32, 32, 64, "i8", "f64"), "C of an i8 product is i32"),
    (source(64, 64, 32, 32, 32, 64, "f16", "f32").replace("%alpha: f32", "%alpha: f16").replace("f32, f32\n", "f16, f32\n"),
     "alpha must have type f32"),
])
def test_refused_with_location(text, words):
    with pytest.raises(VlpcError) as e:
        vlpc.compile(text, filename="t.mlir")
    assert words in str(e.value) and "t.mlir:" in str(e.value)


def test_odd_leading_dimension_at_launch_is_refused():
    kern = vlpc.compile(source(None, None, None, None, None, None, "f16", "f32")).kernel("g")
    a = np.zeros(64 * 33, np.float16)
    with pytest.raises(Exception, match="lda=33: f16 rows"):
        launch_dot(kern, a, a, np.zeros(64 * 64, np.float32), 1.0, 0.0, 64, 64, 32, 33, 34, 64)


def test_decode_gemv_plan_is_chosen_and_exact():
    """M <= 16 (f16/i8, static): macro tile M x 64 and K over 16 wavefront groups, automatically
    (where the lane-along-K GEMV does not apply, or with ``gemv = "sgpr"``)."""
    m, n, k = 5, 128, 4 * 16 * 16 + 2  # 16 slices of one K step each, plus a K % 4 of 2
    kern = vlpc.compile(source(m, n, k, k + 2, k + 2, n, "i8", "i32")).kernel("g")
    assert (kern.local_split, kern.launch_info["macro_m"], kern.launch_info["macro_n"]) == (16, 5, 64)
    run_case(kern, m, n, k, k + 2, k + 2, n, "i8", "i32", 1, 1)
    kern = vlpc.compile(source(1, 64, 64, 64, 64, 64, "f16", "f32", gemv="sgpr")).kernel("g")
    assert kern.local_split == 2  # M < 4: 4 groups, but 32 dwords of K are two groups of one K step
    kern = vlpc.compile(source(3, 64, 1024, 1024, 1024, 64, "f16", "f32", gemv="sgpr")).kernel("g")
    assert kern.local_split == 4


def test_gemv_k_major_batches():
    """The decode GEMV (M = 16) reads A K-major: K steps of 16 dwords (gemv_plan) in 8-dword
    pieces (gemv_a_width: s_load_dwordx8), each 64-SGPR batch 8 dwords of 8 rows, its 64 dots
    (k-major) after one lgkmcnt(0) wait; the batches of rows 8..15 are the last to read their
    two B quads, which are reloaded for the next step right after their last dots.  Four batches
    and four quads a step.  The last step is peeled: its other three batches of A, its 256 dots,
    and no load of a next step."""
    kern = vlpc.compile(source(16, 128, 2 * 16 * 16 * 2 * 2, 2048, 2048, 128, "f16", "f32", gemv="sgpr")).kernel("g")
    assert kern.launch_info["k_step"] == 16
    loop = kern.asm.split(".Lg_k_loop:")[1].split("s_cbranch_scc1 .Lg_k_loop")[0]
    batches = re.split(r"s_waitcnt[^\n]*lgkmcnt\(0\)", loop)[1:]
    assert [(c.count("v_dot2"), c.count("B next slot"), c.count("s_load_dwordx8"), c.count("s_load_dwordx4"))
            for c in batches] == [(64, 0, 8, 0), (64, 2, 8, 0)] * 2
    last = kern.asm.split("s_cbranch_scc1 .Lg_k_loop")[1].split("ds_write")[0]
    assert (last.count("v_dot2"), last.count("global_load"), last.count("s_load_dwordx8")) == (256, 0, 24)
    assert "last step re-reads itself" not in kern.asm


@pytest.mark.parametrize("m, ab, ct", [(16, "i8", "i32"), (11, "f16", "f32"), (16, "f16", "f16")])
def test_gemv_parallel_local_reduction(m, ab, ct):
    """The decode GEMV's 16 wavefront groups sum their partial rows through LDS in one pass:
    f16, every group writes its M rows (16 x M x 64 lanes x 4 bytes of LDS), one barrier,
    group j < M adds row j's 16 partials; int8, every group adds its rows into M zeroed rows
    (ds_add_u32), a barrier, group j reads row j.  Group j stores row j itself (one store in
    the kernel; groups j >= M branch to the end).  Results against the reference; beta = 0
    over a NaN C."""
    p = 2 if ab == "f16" else 4
    k = 16 * 16 * p * 2 + p - 1  # two K steps for each of the 16 groups, and p - 1 values left over
    n, ld = 128, k + 1 + (p - (k + 1) % p) % p
    kern = vlpc.compile(source(m, n, k, ld, ld, n, ab, ct)).kernel("g")
    assert kern.local_split == 16
    groups = 1 if ab == "i8" else 16  # LDS rows per row of C
    assert kern.asm.count("s_barrier") == (2 if ab == "i8" else 1)
    assert f".amdhsa_group_segment_fixed_size {groups * m * 64 * 4}" in kern.asm
    assert kern.asm.count("global_store") == 1 and "s_cbranch_scc0 .Lg_groups_done" in kern.asm
    run_case(kern, m, n, k, ld, ld, n, ab, ct, 1 if ab == "i8" else 0.5, 0 if ab == "i8" else 0.0, local=16,
             c=None if ab == "i8" else np.full((m, n), np.nan, NP[ct]))
    run_case(kern, m, n, k, ld, ld, n, ab, ct, -3 if ab == "i8" else 1.25, 2 if ab == "i8" else -0.5, seed=4, local=16)


@pytest.mark.parametrize("local", [2, 4])
def test_local_split_more_rows_than_groups(local):
    """A local split of the default 32 x 256 tile: 16 rows per LDS chunk summed by 2 (4)
    groups, each adding the rows j = g, g + L, ...; f16 with edges, i8 exact.  (The tile given:
    the automatic plan weighs 16-row tiles since issue 33.)"""
    m, n, k = 64, 256, 71
    tile = {"macro_tile": (32, 256), "micro_tile": (32, 1)}
    kern = vlpc.compile(source(m, n, k, 72, 74, n, "f16", "f32"), local_split=local, **tile).kernel("g")
    assert (kern.local_split, kern.launch_info["macro_m"]) == (local, 32)
    run_case(kern, m, n, k, 72, 74, n, "f16", "f32", 0.75, -1.25, local=local)
    kern = vlpc.compile(source(70, 300, 261, 264, 268, 301, "i8", "i32"), local_split=local, **tile).kernel("g")
    run_case(kern, 70, 300, 261, 264, 268, 301, "i8", "i32", 3, -2, local=local)


@pytest.mark.parametrize("ab, ct, split, local, at_launch", [
    ("f16", "f32", 3, 1, False),   # K = 301: slices of 48 dwords, a dword tail and a value left over
    ("f16", "f16", 3, 1, False),
    ("i8", "i32", 3, 1, False),
    ("f16", "f32", 2, 2, True),    # sizes at launch, 2 workgroups x 2 wavefront groups per tile
    ("i8", "i32", 2, 2, True),
])
def test_split_k_workspace(ab, ct, split, local, at_launch):
    """Split-K across workgroups (workspace mode): slice z of the main kernel stores its raw
    f32 / i32 partial tile, ``g_reduce`` sums the S slices in slice order and applies alpha,
    beta and the output conversion; the workspace is S x M x ldc x 4 bytes."""
    p = 2 if ab == "f16" else 4
    src = (source(None, None, None, None, None, None, ab, ct) if at_launch else
           source(70, 100, 301, 304, 304, 101, ab, ct))
    kern = vlpc.compile(src, split_k=split, local_split=local).kernel("g")
    assert (kern.split_k, kern.split_mode, kern.local_split) == (split, "workspace", local)
    assert [st.kernel for st in kern.plan(70, 100, 301)] == ["g", "g_reduce"]
    assert kern.workspace_bytes(70, 101) == split * 70 * 101 * 4
    alpha, beta = (2, -1) if ab == "i8" else (0.75, 1.5)
    cases = [(70, 100, 301)] + ([(64, 256, 35 * p + 1), (40, 65, 5)] if at_launch else [])
    for i, (m, n, k) in enumerate(cases):
        ld = 304 if (m, n, k) == (70, 100, 301) else -(-k // p) * p + p
        run_case(kern, m, n, k, ld, ld, n + 1, ab, ct, alpha, beta, seed=i, local=split * local)


def test_split_k_blas_rules_and_dequant():
    """Split-K: alpha = 0 over NaN/Inf in A and B gives beta * C (the reduce drops the partials),
    beta = 0 over a NaN C never reads C; a W8A8 dequantizing product split in 3."""
    m, n, k = 40, 70, 99
    kern = vlpc.compile(source(m, n, k, 100, 100, n, "f16", "f32"), split_k=4).kernel("g")
    rng = np.random.default_rng(3)
    a, b, c, _, _ = operands(m, n, k, "f16", "f32", rng)
    a[1, 2], b[3, 0] = np.nan, np.inf
    assert np.isfinite(run_case(kern, m, n, k, 100, 100, n, "f16", "f32", 0.0, 0.5, a=a, b=b, c=c, local=4)).all()
    got = run_case(kern, m, n, k, 100, 100, n, "f16", "f32", 1.0, 0.0, c=np.full((m, n), np.nan, np.float32), local=4)
    assert np.isfinite(got).all()
    m, n, k, lda = 70, 100, 71, 72
    kern = vlpc.compile(dequant_source(m, n, k, lda, lda, "f16"), split_k=3).kernel("g")
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (n, k)).astype(np.int8)
    c = rng.standard_normal((m, n)).astype(np.float16)
    sr = rng.uniform(1e-3, 2e-2, m).astype(np.float32)
    sc = rng.uniform(1e-3, 2e-2, n).astype(np.float32)
    cf = exact(c, n, np.nan)
    out, _ = launch_dot(kern, exact(a, lda, -7), exact(b, lda, -7), cf, 2.0, 0.25, m, n, k, lda, lda, n,
                        scales=(sr, sc))
    exp, bound = reference(a, b, c, 2.0, 0.25, scales=(sr, sc))
    assert_close(rows_of(out, m, n, n), exp, bound)


def test_split_k_atomic_mode_is_refused():
    with pytest.raises(VlpcError, match="split across workgroups in workspace mode only"):
        vlpc.compile(source(64, 64, 256, 256, 256, 64, "f16", "f32"), split_k=2, split_mode="atomic",
                     filename="t.mlir")


@pytest.mark.parametrize("path, types", [("hgemm_nt.mlir", ("f16", "f32")), ("gemv_int8.mlir", ("i8", "i32"))])
def test_examples_run(path, types):
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "examples" / path).read_text()
    kern = vlpc.compile(text).kernel()
    li = kern.launch_info
    m, n, k, lda, ldb, ldc = (li[f"static_{x}"] for x in ("m", "n", "k", "lda", "ldb", "ldc"))
    run_case(kern, m, n, k, lda, ldb, ldc, *types, 1 if types[0] == "i8" else 1.0, 0 if types[0] == "i8" else 0.0,
             local=kern.local_split)


def test_f16_strided_batch():
    """A strided batch (3-D memrefs, batch index = workgroup id z), gaps between matrices NaN."""
    nb, m, n, k, lda, ldb = 3, 20, 70, 13, 14, 14
    sa, sb, sc = m * lda + 6, n * ldb + 2, m * n + 5
    ta, tb = batch_memref(nb, m, k, lda, sa, "f16"), batch_memref(nb, n, k, ldb, sb, "f16")
    tc = batch_memref(nb, m, n, n, sc, "f32")
    kern = vlpc.compile(f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: f32, %beta: f32) {{\n"
                        f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {ta}, {tb}, {tc}, f32, f32\n"
                        "  func.return\n}\n").kernel("g")
    rng = np.random.default_rng(0)
    a, b, c = f16_batch(nb, m, n, k, np.float32, rng)
    cf = flat_batch(c, n, sc)
    out, _ = launch_dot(kern, flat_batch(a, lda, sa), flat_batch(b, ldb, sb), cf, 1.25, -0.5, m, n, k, lda, ldb, n,
                        batch=nb, strides=(sa, sb, sc))
    for z in range(nb):
        exp, bound = reference(a[z], b[z], c[z], 1.25, -0.5)
        assert_close(rows_of(out[z * sc:], m, n, n), exp, bound)
    gaps = np.ones(cf.size, bool)
    for z in range(nb):
        for i in range(m):
            gaps[z * sc + i * n:z * sc + i * n + n] = False
    assert np.isnan(out[gaps]).all()


F16_GENERIC = """func.func @f(%a: memref<16x37xf16, strided<[38, 1]>>, %b: memref<64x37xf16, strided<[38, 1]>>,
                  %c: memref<16x64xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<16x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<16x37xf16, strided<[38, 1]>>, memref<64x37xf16, strided<[38, 1]>>)
      outs(%c : memref<16x64xf32>) {
  ^bb0(%x: f16, %y: f16, %z: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %z, %p : f32
    linalg.yield %s : f32
  }
  func.return
}
"""


def test_linalg_generic_mixed_types_raised_and_run():
    """f16 x f16 -> f32 (arith.extf) and i8 x i8 -> i32 (arith.extsi, muli, addi) linalg.generic
    products become gemm.matmul with f32 / i32 alpha = 1 and beta (0 after a zero fill)."""
    kern = vlpc.compile(F16_GENERIC).kernel("f")
    assert (kern.alpha, kern.beta, kern.launch_info["dtype"]) == (1.0, 0.0, "f16")
    rng = np.random.default_rng(0)
    c = np.full((16, 64), np.nan, np.float32)  # the zero fill became beta = 0: C is not read
    a, b = rng.standard_normal((16, 37)).astype(np.float16), rng.standard_normal((64, 37)).astype(np.float16)
    run_case(kern, 16, 64, 37, 38, 38, 64, "f16", "f32", 1.0, 0.0, a=a, b=b, c=c)
    i8 = (F16_GENERIC.replace("xf16", "xi8").replace("xf32", "xi32").replace("0.0 : f32", "0 : i32")
          .replace("(%zero : f32)", "(%zero : i32)").replace("%x: f16, %y: f16, %z: f32", "%x: i8, %y: i8, %z: i32")
          .replace("arith.extf %x : f16 to f32", "arith.extsi %x : i8 to i32")
          .replace("arith.extf %y : f16 to f32", "arith.extsi %y : i8 to i32")
          .replace("arith.mulf %xe, %ye : f32", "arith.muli %xe, %ye : i32")
          .replace("arith.addf %z, %p : f32", "arith.addi %z, %p : i32").replace("yield %s : f32", "yield %s : i32")
          .replace("37x", "40x").replace("[38, 1]", "[40, 1]"))
    kern = vlpc.compile(i8).kernel("f")
    assert (kern.alpha, kern.beta, kern.launch_info["dtype"]) == (1.0, 0.0, "i8")
    run_case(kern, 16, 64, 40, 40, 40, 64, "i8", "i32", 1, 0)


@pytest.mark.parametrize("ab, ct, opts", [("f16", "f32", {}), ("f16", "f16", {}), ("i8", "i32", {}),
                                           ("f16", "f32", {"split_k": 3})])
def test_vlpc_run_dot_kernels(ab, ct, opts):
    """vlpc.run runs the dot kernels (vlpc/api.py, vlpc/verify.py): random inputs in exactly sized buffers with
    NaN/garbage padding on the strict emulator, checked against NumPy (int8 exact); the result
    equals the independent check of tests/dot_support.py."""
    kern = vlpc.compile(source(70, 100, 301, 304, 304, 101, ab, ct), **opts).kernel("g")
    alpha, beta = (2, -1) if ab == "i8" else (0.75, 1.5)
    r = vlpc.run(kern, alpha=alpha, beta=beta, strict=True)
    assert r.verified and r.c.shape == (70, 100) and r.c.dtype == NP[ct]
    a, b, c0 = r.inputs["A"], r.inputs["B"], r.inputs["C"]
    exp, bound = reference(rows_of(a, 70, 301, 304), rows_of(b, 100, 301, 304), rows_of(c0, 70, 100, 101),
                           alpha, beta, kern.split_k * kern.local_split)
    if ab == "i8":
        np.testing.assert_array_equal(r.c.astype(np.int64), exp)
    else:
        assert_close(r.c, exp, bound)


def test_vlpc_run_dot_given_arrays_and_errors():
    """Given operands (f16 A, B; beta = 0 over a NaN C), dequantizing scales, and one-line errors:
    wrong dtypes, a fractional alpha for int8 -> i32, scales for a kernel that does not take them."""
    kern = vlpc.compile(source(16, 64, 37, 38, 38, 64, "f16", "f32")).kernel("g")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 38)).astype(np.float16)
    b = rng.standard_normal((64, 38)).astype(np.float16)
    r = vlpc.run(kern, a, b, np.full((16, 64), np.nan, np.float32), alpha=1.0, beta=0.0)
    exp, bound = reference(a[:, :37], b[:, :37], np.zeros((16, 64), np.float32), 1.0, 0.0, kern.local_split)
    assert_close(r.c, exp, bound)
    with pytest.raises(VlpcError, match="operand A has dtype float32, the kernel takes float16"):
        vlpc.run(kern, a.astype(np.float32), b)
    with pytest.raises(VlpcError, match="does not dequantize"):
        vlpc.run(kern, scales=(np.ones(16, np.float32), np.ones(64, np.float32)))
    ki = vlpc.compile(source(9, 64, 40, 40, 40, 64, "i8", "i32")).kernel("g")
    with pytest.raises(VlpcError, match="takes 32-bit integer alpha and beta"):
        vlpc.run(ki, alpha=1, beta=0.5)
    kd = vlpc.compile(dequant_source(20, 64, 33, 36, 36, "f16")).kernel("g")
    sr, sc = np.full(20, 0.01, np.float32), np.full(64, 0.02, np.float32)
    r = vlpc.run(kd, alpha=2.0, beta=0.25, scales=(sr, sc))
    assert r.verified and np.array_equal(r.inputs["scale_row"], sr)


def test_cli_run_and_bench_dot_examples(capsys):
    from vlpc.cli import main
    from pathlib import Path
    ex = Path(__file__).resolve().parents[2] / "examples"
    assert main(["run", str(ex / "gemv_int8.mlir")]) == 0
    assert "int8 -> i32 results exact" in capsys.readouterr().out
    assert main(["run", str(ex / "gemv_int8.mlir"), "--beta", "0.5"]) != 0
    assert "takes 32-bit integer alpha and beta" in capsys.readouterr().err
    assert main(["bench", str(ex / "gemv_int8.mlir")]) == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| M=4 N=1024")]
    assert len(row) == 1
    us, tops, share = (float(x) for x in row[0].split("|")[2:5])
    from vlpc.targets import board_for, get_board
    board = get_board(board_for("gfx906"))  # the default board bench models
    peak = 64 * 8 * board.compute_units * board.engine_clock_mhz * 1e6  # v_dot4_i32_i8: 8 ops per lane
    assert abs(tops - 2.0 * 4 * 1024 * 4096 / (us * 1e-6) / 1e12) < 0.01 * tops
    assert abs(share - 100 * tops * 1e12 / peak) < 0.1


def test_cli_run_dynamic_int8_rounds_leading_dimensions(tmp_path, capsys):
    """Sizes at launch with K = 35: lda and ldb default to whole dwords (36), not K."""
    from vlpc.cli import main
    path = tmp_path / "q.mlir"
    path.write_text(source(None, None, None, None, None, None, "i8", "i32"))
    assert main(["run", str(path), "--m", "70", "--n", "100", "--k", "35", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "(lda=36 ldb=36 ldc=100)" in out and "int8 -> i32 results exact" in out


def epilogue_source(m, n, k, ct, epi, bias_len, ab="f16"):
    ta, tb, tc = f"memref<{m}x{k}x{ab}>", f"memref<{n}x{k}x{ab}>", f"memref<{m}x{n}x{ct}>"
    attrs = 'layout = "NT", epilogue = [' + ", ".join(f'"{x}"' for x in epi) + "]"
    s = SCALAR[ab] if ct != "f32" or ab != "i8" else "f32"
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {s}, %beta: {s}, %bias: memref<{bias_len}x{ab}>) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta bias(%bias : memref<{bias_len}x{ab}>) {{{attrs}}}"
            f" : {ta}, {tb}, {tc}, {s}, {s}\n  func.return\n}}\n")


@pytest.mark.parametrize("epi, split", [(("bias_col", "relu"), 1), (("relu", "bias_row"), 1), (("bias_row", "relu"), 3)])
def test_f16_bias_relu_epilogue(epi, split):
    """f16 products fuse bias_row / bias_col (an f16 vector) and relu, in order, on
    alpha * A B^T + beta * C in f32 before the store (split-K: in the reduce kernel).  C f32
    against NumPy (bias add: one more rounding, relu(NaN) = 0); C f16 through vlpc.run's check."""
    m, n, k = 70, 100, 38
    blen = m if "bias_row" in epi else n
    kern = vlpc.compile(epilogue_source(m, n, k, "f32", epi, blen), split_k=split).kernel("g")
    assert kern.launch_info["epilogue"] == ",".join(epi)
    rng = np.random.default_rng(11)
    a, b = (rng.standard_normal(x).astype(np.float16) for x in ((m, k), (n, k)))
    c = rng.standard_normal((m, n)).astype(np.float32)
    bias = rng.standard_normal(blen).astype(np.float16)
    r = vlpc.run(kern, a, b, c, alpha=0.75, beta=1.5, bias=bias, strict=True)
    exp, bound = reference(a, b, c, 0.75, 1.5, split)
    for x in epi:
        if x == "relu":
            exp = np.maximum(exp, 0.0)
        else:
            exp = exp + (bias.astype(np.float64)[:, None] if x == "bias_row" else bias.astype(np.float64)[None, :])
            bound = bound * (1 + 2.0 ** -24) + 2.0 ** -24 * np.abs(exp)
    assert_close(r.c, exp, bound)
    assert epi[-1] != "relu" or (r.c.min() >= 0 and (r.c == 0).any())
    k16 = vlpc.compile(epilogue_source(m, n, k, "f16", epi, blen), split_k=split).kernel("g")
    r16 = vlpc.run(k16, alpha=0.75, beta=1.5, strict=True)
    assert r16.verified and r16.c.dtype == np.float16


@pytest.mark.parametrize("text, words", [
    (epilogue_source(64, 64, 32, "i32", ("gelu",), 64, ab="i8").replace(", %bias: memref<64xi8>", "").replace(
        " bias(%bias : memref<64xi8>)", ""), "fused epilogue gelu: the dot kernels fuse"),
    (epilogue_source(64, 64, 32, "i32", ("bias_col",), 64, ab="i8"), "this is an i8 product with C i32"),
])
def test_dot_epilogues_refused_with_location(text, words):
    with pytest.raises(VlpcError) as e:
        vlpc.compile(text, filename="t.mlir")
    assert words in str(e.value) and "t.mlir:" in str(e.value)


def dequant_source(m, n, k, lda, ldb, ct="f32"):
    ta, tb, tc = (f"memref<{m}x{k}xi8, strided<[{lda}, 1]>>", f"memref<{n}x{k}xi8, strided<[{ldb}, 1]>>",
                  f"memref<{m}x{n}x{ct}>")
    sr, sc = f"memref<{m}xf32>", f"memref<{n}xf32>"
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: f32, %beta: f32, %sr: {sr}, %sc: {sc}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta scales(%sr, %sc : {sr}, {sc}) {{layout = \"NT\"}}"
            f" : {ta}, {tb}, {tc}, f32, f32\n  func.return\n}}\n")


@pytest.mark.parametrize("m, n, k, ct, alpha, beta", [
    (70, 100, 71, "f32", 0.5, -1.5),   # edges, K % 4 = 3
    (4, 128, 259, "f32", 1.0, 0.0),    # the GEMV plan (local split), beta = 0 over a NaN C
    (20, 64, 33, "f16", 2.0, 0.25),    # f16 output
    (9, 70, 16, "f32", 0.0, 1.0),      # alpha = 0 over an Inf scale: C <- beta * C
])
def test_w8a8_dequant_epilogue(m, n, k, ct, alpha, beta):
    """W8A8: C <- alpha * scale_row[m] * scale_col[n] * (A B^T)[m, n] + beta * C, A and B int8."""
    lda = ldb = -(-k // 4) * 4
    kern = vlpc.compile(dequant_source(m, n, k, lda, ldb, ct)).kernel("g")
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (n, k)).astype(np.int8)
    c = rng.standard_normal((m, n)).astype(NP[ct]) if beta != 0 else np.full((m, n), np.nan, NP[ct])
    sr = rng.uniform(1e-3, 2e-2, m).astype(np.float32)
    sc = rng.uniform(1e-3, 2e-2, n).astype(np.float32)
    if alpha == 0:
        sc[3] = np.inf
    cf = exact(c, n, np.nan)
    out, _ = launch_dot(kern, exact(a, lda, -7), exact(b, ldb, -7), cf, alpha, beta, m, n, k, lda, ldb, n,
                        scales=(sr, sc))
    got = rows_of(out, m, n, n)
    exp, bound = reference(a, b, c, alpha, beta, scales=(sr, sc))
    assert_close(got, exp, bound)
    assert np.isfinite(got).all()


def test_dequant_arguments_out_of_order_name_the_scales():
    text = dequant_source(64, 64, 32, 32, 32).replace("%sr: memref<64xf32>, %sc: memref<64xf32>",
                                                      "%sc: memref<64xf32>, %sr: memref<64xf32>")
    with pytest.raises(VlpcError) as e:
        vlpc.compile(text, filename="t.mlir")
    assert "t.mlir:2:" in str(e.value)
    assert "A, B, C, alpha, beta, then bias, scale_row, scale_col when used, in that order" in str(e.value)


def test_dequant_needs_its_scales():
    text = source(64, 64, 32, 32, 32, 64, "i8", "f32").replace("%alpha: i32, %beta: i32", "%alpha: f32, %beta: f32") \
        .replace("i32, i32\n", "f32, f32\n")
    with pytest.raises(VlpcError, match="an i8 product with f32 or f16 C dequantizes: give scales"):
        vlpc.compile(text, filename="t.mlir")


def nn_source(m, n, k, lda, ldb, ldc, ct="f32", ab="f16"):
    ta, tb, tc = memref(m, k, lda, ab), memref(k, n, ldb, ab), memref(m, n, ldc, ct)
    s = SCALAR[ab]
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {s}, %beta: {s}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NN\"}} : {ta}, {tb}, {tc}, {s}, {s}\n"
            "  func.return\n}\n")


@pytest.mark.parametrize("m, n, k, lda, ldb, ldc, ct, sizes_at_launch", [
    (64, 256, 67, 68, 256, 256, "f32", False),   # K odd: two K steps, a dword tail, one value
    (70, 100, 37, 38, 103, 101, "f16", False),   # edges, odd ldb (B rows need no 4-byte alignment)
    (3, 64, 1031, 1032, 65, 64, "f32", False),   # the GEMV plan (local split) on B stored K x N
    (66, 70, 35, 36, 71, 73, "f32", True),       # sizes at launch: the dword tail loop
])
def test_f16_nn_layout(m, n, k, lda, ldb, ldc, ct, sizes_at_launch):
    """B stored K x N: each VGPR of B packs rows k and k + 1 (global_load_ushort + _short_d16_hi)."""
    dims = (None,) * 6 if sizes_at_launch else (m, n, k, lda, ldb, ldc)
    kern = vlpc.compile(nn_source(*dims, ct=ct)).kernel("g")
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, k)).astype(np.float16)
    bkn = rng.standard_normal((k, n)).astype(np.float16)
    c = rng.standard_normal((m, n)).astype(NP[ct])
    cf = exact(c, ldc, np.nan)
    out, _ = launch_dot(kern, exact(a, lda, np.nan), exact(bkn, ldb, np.nan), cf, -0.75, 1.5, m, n, k, lda, ldb, ldc)
    exp, bound = reference(a, bkn.T.copy(), c, -0.75, 1.5, kern.local_split)
    assert_close(rows_of(out, m, n, ldc), exp, bound)
    pm = pad_mask(cf.size, m, n, ldc)
    assert np.array_equal(out[pm].view(np.uint8), cf[pm].view(np.uint8))


@pytest.mark.parametrize("m, n, k, lda, ldb, ldc, sizes_at_launch", [
    (64, 256, 67 * 4 + 3, 272, 256, 256, False),  # K % 4 = 3: four K steps, a dword tail, three values
    (70, 100, 37, 40, 103, 101, False),           # edges, odd ldb (B rows are read byte by byte)
    (3, 64, 4127, 4128, 65, 64, False),           # the GEMV plan (local split) on B stored K x N
    (66, 70, 35, 36, 71, 73, True),               # sizes at launch: the dword tail loop
])
def test_i8_nn_layout(m, n, k, lda, ldb, ldc, sizes_at_launch):
    """int8 with B stored K x N: each B dword packs rows k..k+3 of the lane's column, rows k, k+2
    and k+1, k+3 into bytes 0 and 2 of two VGPRs (global_load_ubyte + _ubyte_d16_hi) joined by
    v_lshl_add_u32; exact against NumPy int64, garbage padding, C's padding kept."""
    dims = (None,) * 6 if sizes_at_launch else (m, n, k, lda, ldb, ldc)
    # (the gather in the kernel: from M = 64 on the plan transposes B first, tests/kernels/test_dot_b_transpose.py)
    kern = vlpc.compile(nn_source(*dims, ct="i32", ab="i8"), a_transpose="in-kernel").kernel("g")
    if ".Lg_k_loop:" in kern.asm and not sizes_at_launch:
        loop = kern.asm.split(".Lg_k_loop:")[1].split("s_cbranch_scc1 .Lg_k_loop")[0]
        ks = kern.launch_info["k_step"]
        assert loop.count("global_load_ubyte_d16_hi") == loop.count("global_load_ubyte ") == 2 * ks
        assert loop.count("v_lshl_add_u32") == ks  # one join per slot and step
    rng = np.random.default_rng(12)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    bkn = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = rng.integers(-2**31, 2**31, (m, n)).astype(np.int32)
    cf = exact(c, ldc, np.int32(0x5A5A5A5A))
    out, _ = launch_dot(kern, exact(a, lda, np.int8(-77)), exact(bkn, ldb, np.int8(-77)), cf, 3, -2, m, n, k,
                        lda, ldb, ldc)
    exp, _ = reference(a, bkn.T.copy(), c, 3, -2)
    np.testing.assert_array_equal(rows_of(out, m, n, ldc).astype(np.int64), exp)
    pm = pad_mask(cf.size, m, n, ldc)
    assert np.array_equal(out[pm].view(np.uint8), cf[pm].view(np.uint8))


def t_source(layout, m, n, k, lda, ldb, ldc, ct="f32", ab="f16"):
    ta = memref(k, m, lda, ab)  # A stored K x M
    tb = memref(n, k, ldb, ab) if layout[1] == "T" else memref(k, n, ldb, ab)
    tc = memref(m, n, ldc, ct)
    sc = SCALAR[ab] if ct != "f32" or ab != "i8" else "f32"
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {sc}, %beta: {sc}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"{layout}\"}} : {ta}, {tb}, {tc}, {sc}, {sc}\n"
            "  func.return\n}\n")


@pytest.mark.parametrize("layout, m, n, k, lda, ldb, ldc, ct, opts", [
    ("TT", 64, 256, 67, 64, 68, 256, "f32", {}),    # K odd: two K steps, a dword tail, one value
    ("TN", 70, 100, 37, 70, 103, 101, "f32", {}),   # edges (M even), B stored K x N
    ("TT", 70, 100, 37, 72, 38, 101, "f16", {}),    # padded rows, f16 output
    ("TT", 16, 128, 1031, 16, 1032, 128, "f32", {}),  # the GEMV plan (16 wavefront groups)
    ("TN", 64, 256, 301, 66, 256, 256, "f32", {"split_k": 3}),
])
def test_f16_a_stored_k_by_m(layout, m, n, k, lda, ldb, ldc, ct, opts):
    """f16 with A stored K x M (layouts TN, TT): rows 2kk and 2kk+1 of A are loaded into SGPRs
    (one scalar load per row of the tile's M values) and each dot's A operand is packed from
    their halves by s_pack_ll_b32_b16 (even m) / s_pack_hh_b32_b16 (odd m): one SALU op per dot."""
    # (the rule copies A first for TT: tests/kernels/test_dot_transpose.py)
    kern = vlpc.compile(t_source(layout, m, n, k, lda, ldb, ldc, ct), a_transpose="in-kernel", **opts).kernel("g")
    if ".Lg_k_loop:" in kern.asm:
        loop = kern.asm.split(".Lg_k_loop:")[1].split("s_cbranch_scc1 .Lg_k_loop")[0]
        assert loop.count("s_pack_ll_b32_b16") + loop.count("s_pack_hh_b32_b16") == loop.count("v_dot2_f32_f16") > 0
    rng = np.random.default_rng(13)
    at = rng.standard_normal((k, m)).astype(np.float16)  # A as stored, K x M
    b = rng.standard_normal((n, k) if layout[1] == "T" else (k, n)).astype(np.float16)
    c = rng.standard_normal((m, n)).astype(NP[ct])
    cf = exact(c, ldc, np.nan)
    out, _ = launch_dot(kern, exact(at, lda, np.nan), exact(b, ldb, np.nan), cf, 0.75, -1.5, m, n, k, lda, ldb, ldc)
    bt = b if layout[1] == "T" else b.T.copy()
    exp, bound = reference(at.T.copy(), bt, c, 0.75, -1.5, kern.split_k * kern.local_split)
    assert_close(rows_of(out, m, n, ldc), exp, bound)
    pm = pad_mask(cf.size, m, n, ldc)
    assert np.array_equal(out[pm].view(np.uint8), cf[pm].view(np.uint8))
    # BLAS: alpha = 0 over NaN A, beta = 0 over a NaN C
    at[3, 1] = np.nan
    out, _ = launch_dot(kern, exact(at, lda, np.nan), exact(b, ldb, np.nan), exact(c, ldc, np.nan), 0.0, 0.5,
                        m, n, k, lda, ldb, ldc)
    assert np.isfinite(rows_of(out, m, n, ldc)).all()
    out, _ = launch_dot(kern, exact(at, lda, np.nan), exact(b, ldb, np.nan), exact(np.full_like(c, np.nan), ldc, np.nan),
                        1.0, 0.0, m, n, k, lda, ldb, ldc)
    got = rows_of(out, m, n, ldc)
    assert np.isnan(got[1]).all() and np.isfinite(np.delete(got, 1, axis=0)).all()  # A[1, 3] (m = 1) is NaN


@pytest.mark.parametrize("args, words", [
    (("TT", 70, 100, 37, 71, 38, 101), "not static multiples of 2"),
    (("TT", 71, 100, 37, 72, 38, 101), "not static multiples of 2"),
    (("TT", 6, 64, 37, 6, 38, 64), "a tile of 6 rows"),
])
def test_f16_a_stored_k_by_m_unpackable_is_copied(args, words):
    """What the SALU packing cannot take (odd M or lda, a tile of 6 rows) goes through the
    A-transpose pre-kernel even when the in-kernel packing is asked for (it used to be refused)."""
    kern = vlpc.compile(t_source(*args), filename="t.mlir", a_transpose="in-kernel").kernel("g")
    assert kern.transpose_kernel() is not None and "s_pack_ll_b32_b16" not in kern.asm


@pytest.mark.parametrize("layout, m, n, k, lda, ldb, ldc, opts", [
    ("TT", 64, 256, 67 * 4 + 3, 64, 272, 256, {}),  # K % 4 = 3: four K steps, a dword tail, three values
    ("TN", 68, 100, 37, 72, 103, 101, {}),          # edges (moved-up row tile, EXEC), padded rows, B K x N
    ("TT", 8, 70, 5, 12, 8, 71, {}),                # a tile of 8 rows, K = 5: one dword and one value
    ("TT", 16, 128, 4127, 16, 4128, 128, {}),       # the GEMV plan (16 wavefront groups, LDS reduction)
    ("TT", 4, 64, 1030, 8, 1032, 64, {}),           # the GEMV plan with 4 rows (one 4x4 byte block)
    ("TN", 64, 256, 301, 68, 256, 256, {"split_k": 3}),  # split-K, workspace mode
])
def test_i8_a_stored_k_by_m(layout, m, n, k, lda, ldb, ldc, opts):
    """int8 with A stored K x M (layouts TN, TT): rows 4kk..4kk+3 of A are loaded into SGPRs
    (one scalar load per row of the tile's M values) and each dot's A operand A[m][4kk..4kk+3]
    is a 4x4 byte transpose in SALU ops (s_pack_ll/hh_b32_b16, then a delta swap with
    s_lshr/s_xor/s_and/s_lshl: 64-bit, 10 ops per four rows; 32-bit for a 4-row tile, 8 per two).  Exact against NumPy int64 math, garbage
    padding bytes, C's padding kept; beta = 0 over a garbage C, alpha = 0."""
    # (the rule copies A first: tests/kernels/test_dot_transpose.py)
    kern = vlpc.compile(t_source(layout, m, n, k, lda, ldb, ldc, "i32", "i8"), a_transpose="in-kernel", **opts).kernel("g")
    if ".Lg_k_loop:" in kern.asm:
        loop = kern.asm.split(".Lg_k_loop:")[1].split("s_cbranch_scc1 .Lg_k_loop")[0]
        dots = loop.count("v_dot4_i32_i8")
        assert dots > 0 and loop.count("s_pack_ll_b32_b16") + loop.count("s_pack_hh_b32_b16") == dots
        if kern.launch_info["macro_m"] > 4:  # 64-bit delta swaps: 10 SALU instructions per 4 dots
            assert loop.count("s_xor_b64") == 3 * dots // 4 and loop.count("s_lshr_b64") == dots // 4
            assert "s_xor_b32" not in loop
        else:  # a tile of 4 rows: 32-bit swaps, 8 per 2 dots
            assert loop.count("s_xor_b32") == 3 * dots // 2 and loop.count("0xff00ff") == dots // 2
    rng = np.random.default_rng(14)
    at = rng.integers(-128, 128, (k, m)).astype(np.int8)  # A as stored, K x M
    b = rng.integers(-128, 128, (n, k) if layout[1] == "T" else (k, n)).astype(np.int8)
    c = rng.integers(-2**31, 2**31, (m, n)).astype(np.int32)
    bt = b if layout[1] == "T" else b.T.copy()
    af, bf = exact(at, lda, np.int8(-77)), exact(b, ldb, np.int8(-77))
    garbage = np.int32(0x5A5A5A5A)
    for alpha, beta, c0 in ((3, -2, c), (-1, 0, np.full_like(c, garbage)), (0, 5, c)):
        cf = exact(c0, ldc, garbage)
        out, _ = launch_dot(kern, af, bf, cf, alpha, beta, m, n, k, lda, ldb, ldc)
        exp, _ = reference(at.T.copy(), bt, c0, alpha, beta)
        np.testing.assert_array_equal(rows_of(out, m, n, ldc).astype(np.int64), exp)
        pm = pad_mask(cf.size, m, n, ldc)
        assert np.array_equal(out[pm].view(np.uint8), cf[pm].view(np.uint8))


def test_i8_a_stored_k_by_m_batch_and_dequant():
    """int8 TT with a strided batch (A's batch stride a multiple of 4, garbage between the
    matrices) exact per batch; and W8A8 dequantization (scales, C f32) with A stored K x M
    against float64 math on the exact int32 sums (tests/dot_support.py bound)."""
    nb, m, n, k, lda, ldb, sa, sb, sc = 3, 36, 70, 45, 40, 48, 45 * 40 + 8, 70 * 48 + 4, 36 * 70 + 5
    ta, tb = batch_memref(nb, k, m, lda, sa, "i8"), batch_memref(nb, n, k, ldb, sb, "i8")
    tc = batch_memref(nb, m, n, n, sc, "i32")
    # (the rule copies A first: tests/kernels/test_dot_transpose.py)
    kern = vlpc.compile(f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: i32, %beta: i32) {{\n"
                        f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"TT\"}} : {ta}, {tb}, {tc}, i32, i32\n"
                        "  func.return\n}\n", a_transpose="in-kernel").kernel("g")
    assert kern.transpose_kernel() is None
    rng = np.random.default_rng(15)
    at = rng.integers(-128, 128, (nb, k, m)).astype(np.int8)
    b = rng.integers(-128, 128, (nb, n, k)).astype(np.int8)
    c = rng.integers(-2**31, 2**31, (nb, m, n)).astype(np.int32)

    cf = flat_batch(c, n, sc, np.int32(0x5A5A5A5A))
    out, _ = launch_dot(kern, flat_batch(at, lda, sa, np.int8(-77)), flat_batch(b, ldb, sb, np.int8(-77)), cf, -3, 2,
                        m, n, k, lda, ldb, n, batch=nb, strides=(sa, sb, sc))
    for z in range(nb):
        exp, _ = reference(at[z].T.copy(), b[z], c[z], -3, 2)
        np.testing.assert_array_equal(rows_of(out[z * sc:], m, n, n).astype(np.int64), exp)
    gaps = np.ones(cf.size, bool)
    for z in range(nb):
        for i in range(m):
            gaps[z * sc + i * n:z * sc + i * n + n] = False
    assert np.array_equal(out[gaps], cf[gaps])

    m, n, k, lda = 40, 100, 71, 44
    ta, tb, tc = (f"memref<{k}x{m}xi8, strided<[{lda}, 1]>>", f"memref<{n}x{k}xi8, strided<[72, 1]>>", f"memref<{m}x{n}xf32>")
    sr, scl = f"memref<{m}xf32>", f"memref<{n}xf32>"
    kern = vlpc.compile(f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: f32, %beta: f32, %sr: {sr}, %sc: {scl}) {{\n"
                        f"  gemm.matmul %a, %b, %c, %alpha, %beta scales(%sr, %sc : {sr}, {scl}) {{layout = \"TT\"}}"
                        f" : {ta}, {tb}, {tc}, f32, f32\n  func.return\n}}\n", a_transpose="in-kernel").kernel("g")
    assert kern.transpose_kernel() is None
    at = rng.integers(-128, 128, (k, m)).astype(np.int8)
    b = rng.integers(-128, 128, (n, k)).astype(np.int8)
    c = rng.standard_normal((m, n)).astype(np.float32)
    scales = (rng.uniform(0.01, 0.1, m).astype(np.float32), rng.uniform(0.01, 0.1, n).astype(np.float32))
    out, _ = launch_dot(kern, exact(at, lda, np.int8(-77)), exact(b, 72, np.int8(-77)), c.ravel().copy(), 0.5, -1.5,
                        m, n, k, lda, 72, n, scales=scales)
    exp, bound = reference(at.T.copy(), b, c, 0.5, -1.5, scales=scales)
    assert_close(out.reshape(m, n), exp, bound)


@pytest.mark.parametrize("args", [
    ("TT", 70, 100, 37, 72, 40, 101),
    ("TN", 68, 100, 37, 70, 100, 101),
    ("TT", 12, 64, 37, 12, 40, 64),
    ("TT", None, 64, 37, 12, 40, 64),
])
def test_i8_a_stored_k_by_m_unpackable_is_copied(args):
    """M, lda not static multiples of 4 or a tile of 12 rows: the A-transpose pre-kernel
    (it used to be refused), even when the in-kernel packing is asked for."""
    text = t_source(*args, ct="i32", ab="i8").replace("None", "?")
    kern = vlpc.compile(text, filename="t.mlir", a_transpose="in-kernel").kernel("g")
    assert kern.transpose_kernel() is not None and "s_xor_b64" not in kern.asm


def test_report_counters_for_dot_kernels():
    """vlpc report measures the dot kernels (strategy sqc): C verified, and per k value the A
    (SMEM) and B (VMEM) dwords are 1/2 (f16) and 1/4 (int8) of the same f32 GEMM's: one
    register holds 2 or 4 values of K (within 5 %: each kernel's last K step re-reads itself, one
    step in 64, 32, 16).  The seed's columns are left empty (they are SGEMM's)."""
    from vlpc.report import build_report

    def text(t, ct):
        s = "i32" if t == "i8" else "f32"
        ta, tb, tc = f"memref<64x1024x{t}>", f"memref<256x1024x{t}>", f"memref<64x256x{ct}>"
        return (f"func.func @h(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {s}, %beta: {s}) {{\n"
                f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {ta}, {tb}, {tc}, {s}, {s}\n"
                "  func.return\n}\n")
    rows = {}
    for t, ct in (("f32", "f32"), ("f16", "f32"), ("i8", "i32")):
        # one macro tile for the three (the seed's 64x256): the dot kernels' own plan would pick
        # its own, and B's traffic per k grows with the number of tile rows
        rep = build_report(text(t, ct), "h.mlir", ["sqc"], beta=2.0,
                           options={"macro_tile": (64, 256), "micro_tile": (64, 1)})
        ms = rep.measurements[0]
        assert ms.verified and ms.dtype == ("f32" if t == "f32" else f"{t}>{ct}")
        rows[t] = ms.rows
        if t != "f32":
            assert all(r["sqc"]["seed"] is None for r in rep.table_rows())
            assert f"{t}>{ct} (units: 32-bit registers per k value" in rep.markdown()
    for t, share in (("f16", 2), ("i8", 4)):
        for key in ("a_l2l1", "b_l2l1", "a_sgpr_w"):
            assert rows[t][key] == pytest.approx(rows["f32"][key] / share, rel=0.05), key
    with pytest.raises(VlpcError, match="compiled by the dot kernels .strategy sqc. only"):
        build_report(text("f16", "f32"), "h.mlir", ["lds"])
