"""gemm-split-k's automatic S for the f16 / int8 dot kernels (passes/gemm_split_k.py, the plan
surrogate's dot variants in vlpc/plan_model.json fitted by benchmarks/plan_surrogate.py).

Skinny shapes get S > 1 and the split plan's result on the strict emulator matches NumPy
(exactly sized buffers, NaN / garbage padding, beta = 0 over a NaN C, alpha = 0 over NaN
inputs); square shapes and the decode GEMV keep S = 1.  The surrogate's error against the
timing model and the auto plan against the model's best S: benchmarks/dot_split_k_auto.py."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vlpc
from vlpc.errors import VlpcError

from dot_support import assert_close, exact, launch_dot, operands, reference, rows_of, source


def check(kern, m, n, k, lda, ldb, ldc, ab, a, b, c, alpha, beta):
    pad_ab, pad_c = (np.int8(-77), np.int32(-0x5A5A5A5A)) if ab == "i8" else (np.nan, np.nan)
    out, _ = launch_dot(kern, exact(a, lda, pad_ab), exact(b, ldb, pad_ab), exact(c, ldc, pad_c), alpha, beta,
                        m, n, k, lda, ldb, ldc)
    got = rows_of(out, m, n, ldc)
    # the padding between C's rows is left as it was
    assert np.array_equal(np.delete(out, [i * ldc + j for i in range(m) for j in range(n)]),
                          np.delete(exact(c, ldc, pad_c), [i * ldc + j for i in range(m) for j in range(n)]),
                          equal_nan=ab != "i8")
    exp, bound = reference(a, b, c, alpha, beta, kern.split_k * kern.local_split)
    if ab == "i8":
        np.testing.assert_array_equal(got.astype(np.int64), exp)
    else:
        assert_close(got, exp, bound)
    return got


def modeled_best(m, n, k, ab, ct, macro, gpu="", cus=60, locals_=(1,)):
    """The surrogate's cheapest (S, L) for the tile; ``locals_``: the local splits weighed (the
    automatic plan's: AUTO_LOCAL_SPLITS)."""
    from vlpc.dialects.gemm import ELEMENT_BYTES
    from vlpc.passes.gemm_split_k import MAX_AUTO_SPLIT, MIN_K_PER_SPLIT
    from vlpc.plan_model import choose, plan_board

    return choose(m, n, k, ab, ELEMENT_BYTES[ab], macro[0], (macro[1],), 16, tuple(range(1, MAX_AUTO_SPLIT + 1)), 1,
                  "workspace", plan_board("gfx906", gpu, cus), min_k_per_split=MIN_K_PER_SPLIT,
                  c_esize=ELEMENT_BYTES[ct], locals_=locals_, max_workitems=1024)


@pytest.mark.parametrize("m, n, k, ab, ct", [(256, 256, 32768, "f16", "f32"), (128, 128, 65536, "i8", "i32")])
def test_skinny_shapes_split_by_the_fitted_dot_variants(m, n, k, ab, ct):
    """The issue's skinny shapes: the automatic (S, L) is the surrogate's cheapest candidate over S
    and the local split L (since the surrogate models L for the dot kernels; this pin changed from
    L = 1 because the new plans model faster on the timing model, MI50 60 CUs: f16 S15 L2 240.1 us
    vs the former S30 L1 248.9, int8 S29 L4 92.6 vs S32 L1 206.9), S > 1, modeled several times
    faster than S = 1 L = 1; the fit has the dot kernels' own variants."""
    from vlpc.passes.gemm_split_k import AUTO_LOCAL_SPLITS
    from vlpc import plan_model

    fit = plan_model.fitted()
    assert f"{ab} 32x256 k16" in fit["variants"] and 0 < fit["reduce_efficiency_dot"] <= 1
    kern = vlpc.compile(source(m, n, k, k, k, n, ab, ct)).kernel("g")
    li = kern.launch_info
    # the estimate uses the dot kernel's own fitted variant (not the f32 one of the same tile)
    v = plan_model.variant(ab, (li["macro_m"], li["macro_n"]), 16, plan_model.plan_board("gfx906"))
    own = fit["variants"][f"{ab} {li['macro_m']}x{li['macro_n']} k16"]
    assert (v.fixed, v.latency, v.wgs_per_cu) == (own["fixed"], own["latency"], own["wgs_per_cu"])
    best, cands = modeled_best(m, n, k, ab, ct, (li["macro_m"], li["macro_n"]), locals_=AUTO_LOCAL_SPLITS)
    one = next(c for c in cands if c.split_k == 1 and c.local_split == 1)
    assert (kern.split_k, kern.local_split) == (best.split_k, best.local_split)
    assert kern.split_k > 1 and kern.split_mode == "workspace"
    assert best.seconds * 3 < one.seconds
    # S slices of at least MIN_K_PER_SPLIT = 256 values of K (whole dwords of 2 f16 / 4 int8 values)
    p = 2 if ab == "f16" else 4
    assert all(c.split_k == 1 or -(-(k // p) // c.split_k) * p >= 256 for c in cands)
    assert {c.local_split for c in cands} >= {1, 2, 4}
    assert [s.kernel for s in kern.plan(m, n, k)] == ["g", "g_reduce"]
    assert kern.workspace_bytes(m, n) == kern.split_k * m * n * 4  # f32 / i32 partials


@pytest.mark.parametrize("m, n, k, lda, ldc, ab, ct", [
    (32, 64, 4095, 4098, 65, "f16", "f32"),   # one tile, K odd: a value past the last dword
    (40, 70, 3001, 3002, 70, "f16", "f16"),   # edges in M and N, uneven slices, C f16
    (40, 70, 8191, 8196, 71, "i8", "i32"),    # K = 4 x 2047 + 3
])
def test_auto_split_plan_matches_numpy(m, n, k, lda, ldc, ab, ct):
    # the automatic plan (S > 1; its local split L, when the surrogate adds one, is checked too)
    kern = vlpc.compile(source(m, n, k, lda, lda, ldc, ab, ct)).kernel("g")
    assert kern.split_k > 1 and kern.split_mode == "workspace"
    a, b, c, _, _ = operands(m, n, k, ab, ct, np.random.default_rng(7))
    alpha, beta = (3, -2) if ab == "i8" else (0.75, -1.25)
    check(kern, m, n, k, lda, lda, ldc, ab, a, b, c, alpha, beta)


@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("i8", "i32")])
def test_auto_split_blas_rules(ab, ct):
    """On the automatically split plan: alpha = 0 over NaN/Inf inputs gives beta * C (the
    reduce drops the partials); beta = 0 over a NaN (garbage) C never reads C."""
    m, n, k, lda, ldc = 32, 64, 4095 if ab == "f16" else 8190, 8200, 64
    kern = vlpc.compile(source(m, n, k, lda, lda, ldc, ab, ct)).kernel("g")
    assert kern.split_k > 1
    a, b, c, _, _ = operands(m, n, k, ab, ct, np.random.default_rng(11))
    if ab == "f16":
        a[3, 100], b[5, 4000], a[31, 0] = np.nan, np.inf, -np.inf
        got = check(kern, m, n, k, lda, lda, ldc, ab, a, b, c, 0.0, 0.5)
        assert np.isfinite(got).all()
        a, b, c, _, _ = operands(m, n, k, ab, ct, np.random.default_rng(12))
        got = check(kern, m, n, k, lda, lda, ldc, ab, a, b, np.full((m, n), np.nan, np.float32), 1.5, 0.0)
        assert np.isfinite(got).all()
    else:
        got = check(kern, m, n, k, lda, lda, ldc, ab, a, b, c, 0, 3)
        np.testing.assert_array_equal(got, (c.astype(np.int64) * 3 + 2**31) % 2**32 - 2**31)
        check(kern, m, n, k, lda, lda, ldc, ab, a, b, c, -1, 0)  # garbage C, beta = 0


@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("i8", "i32"), ("f16", "f16")])
def test_square_and_decode_gemv_keep_one_slice(ab, ct):
    """4096^3 (2048 tiles: a full GPU) keeps S = 1, the surrogate's cheapest candidate among several;
    the decode GEMV keeps S = 1 (the timing model runs it slower split: benchmarks/dot_split_k_auto.py)."""
    for gpu in ("", "mi60"):
        kern = vlpc.compile(source(4096, 4096, 4096, 4096, 4096, 4096, ab, ct), gpu=gpu).kernel("g")
        li = kern.launch_info
        assert kern.split_k == 1 and len(kern.plan(4096, 4096, 4096)) == 1
        best, cands = modeled_best(4096, 4096, 4096, ab, ct, (li["macro_m"], li["macro_n"]), gpu,
                                   64 if gpu else 60)
        assert best.split_k == 1 and len(cands) > 1
    # the decode GEMV (M <= 16): the lane-along-K kernel (passes/isel/gemv.py), one wave per
    # workgroup at M = 1, four (A staged in LDS) at M = 16, or (gemv = "sgpr") K split over 16 (M >= 4) or 4 wavefront groups, one workgroup per tile
    for m, local in ((16, 16), (1, 4)):
        kern = vlpc.compile(source(m, 4096, 4096, 4096, 4096, 4096, ab, ct)).kernel("g")
        assert (kern.split_k, kern.local_split, kern.launch_info["workgroup_size"]) == (1, 1, 64 if m == 1 else 256)
        kern = vlpc.compile(source(m, 4096, 4096, 4096, 4096, 4096, ab, ct, gemv="sgpr")).kernel("g")
        assert (kern.split_k, kern.local_split, kern.launch_info["macro_n"]) == (1, local, 64)


def test_print_plan_shows_the_dot_choice(tmp_path, capsys):
    from vlpc.cli import main

    f = tmp_path / "g.mlir"
    f.write_text(source(256, 256, 32768, 32768, 32768, 256, "f16", "f32"))
    S = vlpc.compile(f.read_text(), gpu="mi60").kernel("g").split_k
    assert S > 1
    assert main(["compile", str(f), "--print-plan", "--gpu", "mi60"]) == 0
    out = capsys.readouterr().out
    assert f"split-k {S} (auto), mode workspace" in out and "f16" in out
    assert f"workspace: {S * 256 * 256 * 4} bytes ({S} x M x ldc x 4)" in out
    assert re.search(rf"\n +{S}: 1 rounds, .* <- chosen", out) and re.search(r"\n +1: \d+ rounds", out)
    assert "modeled candidates on mi60 (64 CUs, 1800 MHz" in out


def test_workspace_offset_limit_counts_four_byte_partials():
    """The workspace holds f32 / i32 partials (4 bytes) whatever A's element size: S x M x ldc x 4
    bytes must stay under the 32-bit byte offsets (f16: 2 x 65536 x 8192 x 4 = 2^32 is refused)."""
    src = source(65536, 8192, 64, 64, 64, 8192, "f16", "f32")
    with pytest.raises(VlpcError, match=r"workspace of 2 x M x ldc x 4 = 4294967296 bytes"):
        vlpc.compile(src, split_k=2, filename="t.mlir")
