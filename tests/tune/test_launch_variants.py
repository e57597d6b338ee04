"""Launch-time plan variants (vlpc/launch_variants.py): a kernel compiled with sizes given at launch
carries a few plans (macro tile N, split-K S) and the host picks one per launch by the plan model.

Every variant is run on its own on the strict emulator with exactly sized buffers: NaN (garbage for
int8/i32) padding between rows, a general alpha/beta, beta = 0 over a NaN C, alpha = 0 over NaN A
and B; expected values from NumPy (tests/reference.py, tests/dot_support.py)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import vlpc
from vlpc import launch_variants
from vlpc.plan_model import estimate, plan_board

import dot_support as ds
from launch_support import launch
from reference import assert_gemm_close, gemm_reference


def dyn_source(dtype: str) -> str:
    if dtype in ds.SCALAR:
        return ds.source(None, None, None, None, None, None, dtype, {"f16": "f32", "i8": "i32"}[dtype])
    t = f"memref<?x?x{dtype}>"
    return (f"func.func @g(%a: {t}, %b: {t}, %c: {t}, %alpha: {dtype}, %beta: {dtype}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {t}, {t}, {t}, {dtype}, {dtype}\n"
            "  func.return\n}\n")


@functools.lru_cache(maxsize=None)
def compiled(dtype: str, **options):
    return vlpc.compile(dyn_source(dtype), "gfx906", **options)


def kernels_of(dtype: str):
    """The first kernel and its variants, by name."""
    kern = compiled(dtype).kernel()
    return kern, {n: kern.companions[n] for n in kern.launch_info["variants"].split(",")}


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "i8"])
def test_variants_are_built_with_their_plans(dtype):
    kern, variants = kernels_of(dtype)
    assert set(compiled(dtype).kernels) == {"g"}  # variants are reached through the first kernel
    plans = {(v.launch_info["macro_n"], v.launch_info.get("split_k", 1), v.launch_info.get("local_split", 1))
             for v in variants.values() if v.launch_info.get("static_m", -1) < 0}
    own = (kern.launch_info["macro_n"], kern.launch_info.get("split_k", 1), kern.launch_info.get("local_split", 1))
    assert plans | {own} == {p + (1,) * (3 - len(p)) for p in launch_variants.VARIANT_PLANS[dtype]} | {own}
    for v in variants.values():
        assert v.launch_info["role"] == "variant"
        assert v.launch_info["macro_m"] == kern.launch_info["macro_m"]
        names = [a[".name"] for a in v.kernargs]
        assert names[:len(kern.kernargs)] == [a[".name"] for a in kern.kernargs]  # then the workspace, if split


def test_no_variants_with_a_plan_option_or_static_sizes():
    assert "variants" not in compiled("f32", macro_tile=(32, 64)).kernel().launch_info
    assert "variants" not in compiled("f32", split_k=1).kernel().launch_info
    static = vlpc.compile(dyn_source("f32").replace("?x?", "80x80"), "gfx906").kernel()
    assert "variants" not in static.launch_info


@pytest.mark.parametrize("m,n,k", [(1024, 1024, 1024), (4096, 4096, 640), (4096, 4096, 4096), (64, 70, 40),
                                   (2048, 256, 8192)])
@pytest.mark.parametrize("gpu", ["mi50", "mi60"])
def test_the_plan_model_picks_the_variant(m, n, k, gpu):
    """The kernel launched is the one of smallest plan-model estimate (the first on ties)."""
    kern = compiled("f32", gpu=gpu).kernel()
    board = plan_board("gfx906", gpu)
    cands = [kern, *(kern.companions[x] for x in kern.launch_info["variants"].split(","))]

    def us(c):
        li = c.launch_info
        return estimate(m, n, k, "f32", 4, (li["macro_m"], li["macro_n"]), li["k_step"], li.get("split_k", 1), 1,
                        "workspace", board).seconds
    best = min(us(c) for c in cands)
    chosen = kern.variant_for(m, n, k)
    assert us(chosen) == best
    assert kern.plan(m, n, k)[0].kernel == chosen.name
    assert kern.launch(m, n, k).grid == chosen.launch(m, n, k).grid
    split = chosen.launch_info.get("split_k", 1)
    assert kern.workspace_bytes(m, n, k, n=n) == (split * m * n * 4 if split > 1 else 0)


@pytest.mark.parametrize("m,n,k", [(1024, 1024, 1024), (512, 512, 4096), (256, 256, 8192), (4096, 4096, 640)])
@pytest.mark.parametrize("ab", ["f16", "i8"])
def test_the_plan_model_picks_the_dot_variant_local_split_included(m, n, k, ab):
    """f16/int8: the kernel launched is the one of smallest plan-model estimate, local split L counted
    (its LDS hand-over and occupancy); a few tiles of deep K take a local-split variant (L = 8 at
    512x512x4096 and 256x256x8192 on MI60, modeled)."""
    from vlpc.dialects.gemm import ELEMENT_BYTES

    ct = {"f16": "f32", "i8": "i32"}[ab]
    kern = compiled(ab, gpu="mi60").kernel()
    board = plan_board("gfx906", "mi60")
    cands = [kern, *(kern.companions[x] for x in kern.launch_info["variants"].split(","))]

    def us(c):
        li = c.launch_info
        return estimate(m, n, k, ab, ELEMENT_BYTES[ab], (li["macro_m"], li["macro_n"]), li["k_step"],
                        li.get("split_k", 1), li.get("local_split", 1), "workspace", board,
                        c_esize=ELEMENT_BYTES[ct]).seconds
    chosen = kern.variant_for(m, n, k)
    assert us(chosen) == min(us(c) for c in cands)
    if (m, n, k) in ((512, 512, 4096), (256, 256, 8192)):
        assert chosen.local_split == 8 and kern.plan(m, n, k)[0].kernel == chosen.name


def test_small_m_keeps_the_row_companions():
    kern = compiled("f32").kernel()
    assert kern.variant_for(7, 4096, 4096) is kern
    assert kern.plan(7, 4096, 4096)[0].kernel == "g_rows1"


def _check_float(v, dtype: str, m: int, n: int, k: int):
    rng = np.random.default_rng(7)
    np_t = np.float32 if dtype == "f32" else np.float64
    ld = k + 3, k + 5, n + 2  # padding after every row: NaN, must stay as it was
    a = np.full((m, ld[0]), np.nan, np_t)
    b = np.full((n, ld[1]), np.nan, np_t)
    c = np.full((m, ld[2]), np.nan, np_t)
    a[:, :k] = rng.standard_normal((m, k))
    b[:, :k] = rng.standard_normal((n, k))
    c[:, :n] = rng.standard_normal((m, n))
    # exactly sized buffers: the last row ends at its last element
    a, b, c = a.ravel()[:(m - 1) * ld[0] + k], b.ravel()[:(n - 1) * ld[1] + k], c.ravel()[:(m - 1) * ld[2] + n]

    def rows(x, r, cols, ldx):
        return np.lib.stride_tricks.as_strided(x, (r, cols), (ldx * x.itemsize, x.itemsize))

    def go(a_, b_, c_, alpha, beta):
        out = launch(v, a_.reshape(1, -1), b_.reshape(1, -1), c_.reshape(1, -1), alpha, beta, m, n, k, lds=ld)
        return out.ravel()

    for alpha, beta, cc in [(1.5, -0.5, c), (1.0, 0.0, np.full_like(c, np.nan))]:
        out = go(a, b, cc, alpha, beta)
        exp, bound = gemm_reference(rows(a, m, k, ld[0]).copy(), rows(b, n, k, ld[1]).copy(),
                                    rows(cc, m, n, ld[2]).copy(), alpha, beta, layout="NT", dtype=dtype)
        assert_gemm_close(rows(out, m, n, ld[2]), exp, bound)
        pm = ds.pad_mask(cc.size, m, n, ld[2])
        assert np.array_equal(out[pm].view(np.uint8), cc[pm].view(np.uint8)), "C's padding changed"
    # alpha = 0 over NaN inputs: C <- beta C, A and B not read
    nan_a, nan_b = np.full_like(a, np.nan), np.full_like(b, np.nan)
    out = go(nan_a, nan_b, c, 0.0, 2.0)
    exp, bound = gemm_reference(None, None, rows(c, m, n, ld[2]).copy(), 0.0, 2.0, layout="NT", m=m, n=n, k=k,
                                dtype=dtype)
    assert_gemm_close(rows(out, m, n, ld[2]), exp, bound)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_every_variant_computes_the_product(dtype):
    kern, variants = kernels_of(dtype)
    m = kern.launch_info["macro_m"] + 3
    for v in (kern, *variants.values()):
        _check_float(v, dtype, m, 70, 40)


@pytest.mark.parametrize("ab", ["f16", "i8"])
def test_every_dot_variant_computes_the_product(ab):
    ct = {"f16": "f32", "i8": "i32"}[ab]
    kern, variants = kernels_of(ab)
    m, n, k = kern.launch_info["macro_m"] + 3, 70, 136
    lda, ldb, ldc = k + 4, k + 8, n + 2
    rng = np.random.default_rng(3)
    a, b, c = ds.operands(m, n, k, ab, ct, rng)[:3]
    af, bf = ds.exact(a, lda, ds.PAD[ab]), ds.exact(b, ldb, ds.PAD[ab])
    for v in (kern, *variants.values()):
        ds.check_general_and_beta0(v, af, bf, a, b, c, ct, m, n, k, lda, ldb, ldc, ds.garbage_device())
        if ab == "f16":  # alpha = 0 over NaN A and B: C <- beta C
            nan_a, nan_b = np.full_like(af, np.nan), np.full_like(bf, np.nan)
            cf = ds.exact(c, ldc, ds.PAD[ct])
            out, _ = ds.launch_dot(v, nan_a, nan_b, cf, 0.0, 2.0, m, n, k, lda, ldb, ldc)
            ds.check_c(out, 2.0 * c.astype(np.float64), np.zeros((m, n)), ct, m, n, ldc, cf)


@pytest.mark.parametrize("ab", ["f16", "i8"])
def test_decode_gemv_variants_run_their_exact_m(ab):
    """M given at launch, K static: the decode GEMV compiled for each of GEMV_ROWS runs a launch of
    exactly that M (the static kernel's plan), checked as the other variants; other M keep the first
    kernel (row-narrow companions below its macro tile M, else the tile variants)."""
    ct = {"f16": "f32", "i8": "i32"}[ab]
    n, k = 70, 136
    lda, ldb, ldc = k + 4, k + 8, n + 2
    mod = vlpc.compile(ds.source(None, n, k, lda, ldb, ldc, ab, ct), "gfx906")
    kern = mod.kernel()
    gemvs = {v.launch_info["static_m"]: v for v in (kern.companions[x] for x in kern.launch_info["variants"].split(","))
             if v.launch_info["static_m"] >= 0}
    assert sorted(gemvs) == sorted(launch_variants.GEMV_ROWS)
    rng = np.random.default_rng(11)
    for m, v in gemvs.items():
        assert kern.variant_for(m, n, k) is v and kern.plan(m, n, k)[0].kernel == v.name
        assert v.local_split > 1  # the decode GEMV plan: K over the wavefront groups
        a, b, c = ds.operands(m, n, k, ab, ct, rng)[:3]
        af, bf = ds.exact(a, lda, ds.PAD[ab]), ds.exact(b, ldb, ds.PAD[ab])
        ds.check_general_and_beta0(v, af, bf, a, b, c, ct, m, n, k, lda, ldb, ldc, ds.garbage_device())
        if ab == "f16":  # alpha = 0 over NaN A and B: C <- beta C
            cf = ds.exact(c, ldc, ds.PAD[ct])
            out, _ = ds.launch_dot(v, np.full_like(af, np.nan), np.full_like(bf, np.nan), cf, 0.0, 2.0,
                                   m, n, k, lda, ldb, ldc)
            ds.check_c(out, 2.0 * c.astype(np.float64), np.zeros((m, n)), ct, m, n, ldc, cf)
    assert kern.variant_for(2, n, k) is kern
