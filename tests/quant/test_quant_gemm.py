"""The prefill GEMM's plans (passes/isel/quant_gemm.py, docs/quantized.md "Prefill"): M static above 16
rows runs the int8-activation GEMM (its kernel: tests/quant/test_quant_gemm_int8.py); the f16-activation
GEMM runs for an M given at launch (the companion ``g_rows<R>``) and under a split of K across workgroups.

The oracle is the `gguf` package: its quantizer makes the weights, its dequantizer the float64
reference, within the GEMV's f32-accumulation bound (vlpc/quant_run.py).  Strict emulator, exactly
sized buffers: A's row gaps NaN, B's bytes after each row's last block garbage (0xB5), C's columns
past N NaN and compared bit for bit after the launch."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import vlpc  # noqa: E402
from vlpc.dialects.gemm import QUANT_GEMM_F16_TILE_ROWS, QUANT_GEMM_LOCAL, QUANT_GEMM_TILE_ROWS  # noqa: E402
from vlpc.passes.isel.quant_act import A_QUANT, QUANT_A_BLOCK_BYTES, QUANT_A_PAIR_STEP_BYTES  # noqa: E402
from vlpc.quant_run import row_bytes  # noqa: E402
from vlpc.targets import get_target  # noqa: E402

from test_quant_gemv import QT, _swiglu_source, padded_operands, source  # noqa: E402


@pytest.mark.parametrize("fmt, m, n, k, rows, local", [
    ("q8_0", 512, 4096, 4096, 32, QUANT_GEMM_LOCAL),
    ("q4_0", 512, 14336, 4096, 32, QUANT_GEMM_LOCAL),
    ("q4_0", 40, 64, 4096, 32, QUANT_GEMM_LOCAL),
    ("q8_0", 64, 64, 256, 32, 4),  # 4 block pairs: L halved until it divides them
])
def test_plan(fmt, m, n, k, rows, local):
    """The int8 GEMM's plan: 32-row tiles, K over 8 groups, and a workgroup that fits a CU at the
    kernel's occupancy (waves per workgroup <= 4 SIMDs x waves per SIMD by VGPRs)."""
    kern = vlpc.compile(source(m, n, k, fmt)).kernel("g")
    assert (kern.launch_info["macro_m"], kern.local_split, kern.split_k) == (rows, local, 1)
    t = get_target("gfx906")
    assert kern.local_split <= t.simds_per_cu * t.occupancy(kern.vgprs, kern.sgprs, 0, 64).waves_per_simd


@pytest.mark.parametrize("shape, epilogue, rows", [
    ((16, 64, 256, "q8_0"), (), 0),       # M <= 16: the decode GEMV
    ((300, 64, 256, "q4_k"), (), 0),      # Q4_K: the GEMV's 16-row tiles
    ((300, 64, 256, "int4_g128"), (), 0),
    ((300, 64, 256, "q4_0"), ("swiglu",), 0),
    ((31, 64, 256, "q4_0"), (), 0),       # below the tile's rows: 16-row tiles
    ((32, 64, 256, "q4_0"), (), 32),
    ((31, 64, 256, "q8_0"), (), 0),
    ((32, 64, 256, "q8_0"), (), 32),
    ((None, 64, 256, "q8_0"), (), 0),     # M at launch: 16 rows, the row-narrow companions and the GEMM's
])
def test_gemv_keeps_the_rest(shape, epilogue, rows):
    m, n, k, fmt = shape
    src = _swiglu_source(m, n, k, fmt, "f32", ()) if epilogue else source(m, n, k, fmt)
    kern = vlpc.compile(src).kernel("g")
    assert kern.launch_info["macro_m"] == (rows or min(16, m or 16))


@pytest.mark.parametrize("fmt, m, ct", [("q8_0", 64, "f32"), ("q4_0", 40, "f16")])
def test_f16_companion_padded(fmt, m, ct):
    """The f16-activation GEMM, the companion for an M given at launch where lda is too (no pre-kernel:
    it needs a static lda), with padded buffers: A's row gaps NaN, garbage after each weight row, C's
    columns past N NaN and untouched, beta = 0 over NaN C; 28-row (Q8_0) or 32-row (Q4_0) tiles, the
    last moved up; an N edge (80); against gguf's float64 weights."""
    n, k = 80, 1024
    rb = row_bytes(fmt, k)
    lda, ldb, ldc = k + 6, rb + 12, n + 3
    src = source(None, n, k, fmt, ct, lda, ldb, ldc).replace(f"strided<[{lda}, 1]>", "strided<[?, 1]>")
    kern = vlpc.compile(src).kernel("g")
    rk = kern.rows_kernel(m)
    assert rk.launch_info["macro_m"] == QUANT_GEMM_F16_TILE_ROWS[fmt] and "a_quant" not in rk.launch_info
    assert [s.kernel for s in kern.plan(m, n, k)] == [rk.name]
    rng = np.random.default_rng(m)
    b = gguf.quants.quantize(rng.standard_normal((n, k)).astype(np.float32), QT[fmt])
    a, bpad, c = padded_operands(b, rb, m, k, lda, ldb, ldc, ct, rng.standard_normal((m, k)).astype(np.float16))
    r = vlpc.run(kern, a, bpad, c, m=m, lda=lda, alpha=1.0, beta=0.0, strict=True)
    assert r.verified and np.isfinite(r.c[:, :n]).all() and np.isnan(r.c[:, n:]).all()
    ref = a[:, :k].astype(np.float64) @ gguf.quants.dequantize(b, QT[fmt]).astype(np.float64).T
    assert np.allclose(r.c[:, :n], ref, rtol=2e-3 if ct == "f16" else 1e-5, atol=1e-3)


@pytest.mark.parametrize("fmt, m", [("q4_0", 31), ("q4_0", 32), ("q4_0", 70), ("q8_0", 31), ("q8_0", 50)])
def test_m_at_launch(fmt, m):
    """M given at launch: the GEMV's 16-row kernel below the GEMM's rows, from there the int8 GEMM's
    companion ``g_rows<R>`` with its own plan, the pre-kernel ``g_rows<R>_quant_a`` first (M from the
    kernel arguments) and its workspace (M K / 32 x 44 bytes); 8 groups; a last tile moved up; checked on
    the strict emulator against the quantized activations (the companion's launch fact ``a_quant``)."""
    n, k = 64, 1024
    kern = vlpc.compile(source(None, n, k, fmt, "f16")).kernel("g")
    rows = QUANT_GEMM_TILE_ROWS[fmt]
    assert kern.launch_info["macro_m"] == 16 and f"g_rows{rows}" in kern.companions
    rk = kern.rows_kernel(m)
    if m >= rows:
        assert (rk.name, rk.local_split, rk.launch_info["a_quant"]) == (f"g_rows{rows}", QUANT_GEMM_LOCAL, A_QUANT)
        assert [s.kernel for s in kern.plan(m, n, k)] == [f"g_rows{rows}_quant_a", f"g_rows{rows}"]
        assert kern.workspace_bytes(m, n, k) == m * k // 32 * (QUANT_A_BLOCK_BYTES + QUANT_A_PAIR_STEP_BYTES)
    else:
        assert rk is None and [s.kernel for s in kern.plan(m, n, k)] == ["g"] and kern.workspace_bytes(m, n, k) == 0
    r = vlpc.run(kern, m=m, beta=0.5, strict=True, seed=m)
    assert r.verified and r.c.shape == (m, n)


@pytest.mark.parametrize("fmt", ["q4_0", "q8_0"])
def test_split_k_across_workgroups(fmt):
    """--split-k 2 (workspace mode, the dot kernels' reduce kernel) with the GEMM's tiles."""
    kern = vlpc.compile(source(48, 64, 1024, fmt), split_k=2).kernel("g")
    assert (kern.launch_info["macro_m"], kern.split_k) == (QUANT_GEMM_TILE_ROWS[fmt], 2)
    assert [s.kernel for s in kern.plan(48, 64, 1024)] == ["g", "g_reduce"]
    r = vlpc.run(kern, beta=0.5, strict=True, seed=3)
    assert r.verified and r.error_ratio < 1
