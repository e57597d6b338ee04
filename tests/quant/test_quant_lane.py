"""The lane-along-K quantized GEMV (passes/isel/quant_lane.py, docs/quantized.md).

Every format on the strict emulator against float64 math on the weights as `gguf` dequantizes them
(the int4 group formats: vlpc.quant_run.dequantize_int4, NumPy from the format's definition), within
vlpc/quant_run.py's bound: exactly sized and padded buffers (A's row gaps NaN, B's bytes after each
row's last unit garbage, C's columns past N NaN and unchanged), beta = 0 over a C that is all NaN,
alpha = 0 over NaN activations and scales, every weight byte read once."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import vlpc  # noqa: E402
from vlpc.dialects.gemm import B_FORMATS  # noqa: E402
from vlpc.passes.isel.quant_lane import LANE_UNITS, LANE_WAVES  # noqa: E402
from vlpc.quant_run import dequantize, random_weights, row_bytes  # noqa: E402

from test_quant_gemv import check_nan_inputs, check_padded, sgpr, source  # noqa: E402


def lane_kernel(m, n, k, fmt, ct="f32", lda=None, ldb=None, ldc=None):
    kern = vlpc.compile(source(m, n, k, fmt, ct, lda, ldb, ldc)).kernel("g")
    assert "A row 0 to LDS" in kern.asm and kern.launch_info["b_format"] == fmt  # the lane-along-K kernel
    return kern


@pytest.mark.parametrize("fmt, m, n, k, ct, padded", [
    # (Q8_0 / Q4_0 / int4 at M = 2 .. 16 (K above 8192: 5 .. 16) without a partial group: the
    # int8-activation kernel, tests/quant/test_quant_lane_int8.py)
    ("q4_0", 1, 64, 4096, "f32", True),      # 64 pairs: span 64, one unit a lane, 4 waves a workgroup
    ("q4_k", 1, 32, 4096, "f32", True),      # 16 super-blocks: span 16
    ("q4_k", 1, 16, 8192, "f16", False),     # 32 super-blocks: span 16 (Q4_K's), 2 a lane
    ("q4_k", 1, 64, 4608, "f32", True),      # 18 super-blocks: span 16, then 2 (a last round of zero units)
    ("q4_k", 1, 16, 10240, "f16", False),    # 40: span 16, then 8
    ("int4_g32", 1, 32, 2048, "f32", True),  # 64 groups of 4 pieces of A (the 4-piece swizzle)
    ("int4_g64", 1, 32, 4096, "f16", False),
    ("int4_g128", 1, 16, 6144, "f32", True),  # 48 groups: span 16, 3 units a lane; phases of 2 (small)
    # units not a multiple of the span: a last round where lanes past the row's units load zeros
    ("int4_g128", 1, 16, 2176, "f16", True),  # 17 groups: span 16, the second round 1 lane a row
    ("int4_g32", 1, 32, 1056, "f32", True),  # 33 groups: span 32, then 1
    ("int4_g128", 3, 32, 8320, "f16", True),  # M = 3 above K = 8192 (not the int8 kernel): 65 groups, span 64 then 1
    # a last, partial int4 group (K % G weights): lane tail - 1 of the last round loads exactly its bytes
    ("int4_g128", 2, 32, 2080, "f32", True),  # 16 groups + 32 weights: span 16, then the partial group alone
    ("int4_g128", 3, 32, 2144, "f16", False),  # 16 + 96 weights, exact sizes
    ("int4_g64", 1, 16, 4128, "f32", True),   # 64 groups + 32: span 64, then 1
    ("int4_g128", 1, 32, 4064, "f16", True),  # 31 groups + 96: 32 units, span 32 (the partial group in a whole round)
    ("q8_0", 1, 32, 3584, "f16", True),      # 56 pairs: span 32, then 24
    # Q4_0 at M = 1 with A longer than a phase of 8 KiB: LANE_SMALL_PHASES (2 waves, B 1 unit ahead)
    ("q4_0", 1, 32, 7168, "f32", True),      # 112 pairs: span 16, 7 units a lane, phases of 4
    ("q4_0", 1, 16, 9536, "f16", True),      # 149 pairs: span 64, then 21; a phase a round
    ("q8_0", 1, 32, 7168, "f16", False),     # 112 pairs: span 16, phases of 4 units
])
def test_lane_gemv(fmt, m, n, k, ct, padded):
    """beta = 0 over an all-NaN C, then alpha = -0.75, beta = 0.5 (check_padded), against the
    dequantized weights; every weight byte read once, A once per workgroup."""
    rb = row_bytes(fmt, k)
    lda, ldb, ldc = (k + 8, rb + 12, n + 3) if padded else (k, rb, n)
    kern = lane_kernel(m, n, k, fmt, ct, lda, ldb, ldc)
    rng = np.random.default_rng(3)
    b = random_weights(fmt, n, k, rng)
    check_padded(kern, fmt, b, ct, lda, ldb, ldc, rng, deq=lambda x: dequantize(fmt, x))


def test_units_are_the_sgpr_kernels():
    """A lane's unit is the SGPR kernels' K step (whole dwords: 4-byte aligned loads)."""
    for fmt, (weights, nbytes) in LANE_UNITS.items():
        block, block_bytes = B_FORMATS[fmt]
        assert nbytes == weights // block * block_bytes and nbytes % 4 == 0


@pytest.mark.parametrize("fmt", ["q4_0", "q4_k"])
def test_same_as_sgpr_kernel_within_bound(fmt):
    """The lane kernel and the SGPR kernel on the same data agree within twice the bound."""
    m, n, k = 1, 32, 4096
    lane = lane_kernel(m, n, k, fmt)
    old = vlpc.compile(sgpr(source(m, n, k, fmt))).kernel("g")
    assert "A row 0 to LDS" not in old.asm
    rng = np.random.default_rng(4)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = random_weights(fmt, n, k, rng)
    c = np.zeros((m, n), np.float32)
    r1 = vlpc.run(lane, a, b, c, strict=True)
    r2 = vlpc.run(old, a, b, c, strict=True)
    assert r1.verified and r2.verified
    ref = a.astype(np.float64) @ dequantize(fmt, b).T
    assert np.allclose(r1.c, ref, rtol=1e-5, atol=1e-3) and np.allclose(r1.c, r2.c, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("fmt, k, a_nan_at", [("int4_g128", 9216, 7), ("int4_g128", 2080, 2070)])
def test_alpha_zero_over_nan_inputs(fmt, k, a_nan_at):
    """alpha = 0 drops the products: NaN activations and a NaN scale do not reach C (Q8_0's kernel at
    M = 2: tests/quant/test_quant_lane_int8.py; K = 2080: the NaN activation in the partial group)."""
    m, n = 2, 16 * LANE_WAVES
    kern = lane_kernel(m, n, k, fmt)
    rng = np.random.default_rng(5)
    b = random_weights(fmt, n, k, rng)
    b[5, 0:2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)  # row 5, first block's scale
    check_nan_inputs(kern, b, m, n, k, rng, a_nan_at=a_nan_at, nan_rows_of_b=[5])


@pytest.mark.parametrize("edit, why", [
    (lambda s: s.replace("memref<1x1024xf16>", "memref<2x1024xf16>").replace("memref<1x64xf32>", "memref<2x64xf32>")
     .replace('"q4_0"', '"q4_k"'), "Q4_K with M = 2"),
    (lambda s: s.replace('b_format = ', 'gemv = "sgpr", b_format = '), "gemv = sgpr"),
    (lambda s: s.replace("memref<1x1024xf16>", "memref<1x1024xf16, strided<[1028, 1]>>"), "lda not a multiple of 8"),
])
def test_sgpr_kernel_kept(edit, why):
    """Where the lane kernel does not apply the SGPR kernel runs (and is right)."""
    n, k = 64, 1024
    m, fmt = (2 if "M = 2" in why else 1, "q4_k") if "Q4_K" in why else (1, "q4_0")
    kern = vlpc.compile(edit(source(1, n, k, "q4_0"))).kernel("g")
    assert "A row 0 to LDS" not in kern.asm, why
    rng = np.random.default_rng(6)
    lda = 1028 if "lda" in why else k
    a = np.full((m, lda), np.nan, np.float16)
    a[:, :k] = rng.standard_normal((m, k)).astype(np.float16)
    r = vlpc.run(kern, a, random_weights(fmt, n, k, rng), np.zeros((m, n), np.float32), strict=True)
    assert r.verified


def test_split_k_given_keeps_the_sgpr_kernel():
    """split-k above 1 given as an option is the SGPR kernel's plan (its located errors kept)."""
    kern = vlpc.compile(source(1, 64, 4096, "q4_0"), split_k=2).kernel("g")
    assert "A row 0 to LDS" not in kern.asm and kern.split_k == 2


def test_a_staged_by_phases(monkeypatch):
    """A in LDS by phases of 3, 3 and 3 of the lanes' 9 units (a barrier after each), exact sizes."""
    import vlpc.passes.isel.quant_lane as lane

    monkeypatch.setattr(lane, "LANE_A_PHASE_BYTES", 12288)  # 2 rows x 3 units x 16 lanes x 128 bytes (int4_g64: 64 weights a unit)
    fmt, m, n, k = "int4_g64", 2, 32, 9216  # (K above 8192: not the int8 kernel, whose phases test_quant_lane_int8.py tests)
    kern = lane_kernel(m, n, k, fmt)
    assert kern.asm.count("A's phase in LDS") == 3
    rng = np.random.default_rng(7)
    rb = row_bytes(fmt, k)
    check_padded(kern, fmt, random_weights(fmt, n, k, rng), "f32", k, rb, n, rng, deq=lambda x: dequantize(fmt, x))


def test_q4k_alpha_zero_over_nan_inputs():
    """Q4_K (M = 1; 17 super-blocks: a last round of zero units): alpha = 0 over a NaN activation (so
    a NaN staged sum) and a NaN d leaves beta C exactly; with alpha = 1 the NaNs reach C."""
    m, n, k = 1, 32, 4352
    kern = lane_kernel(m, n, k, "q4_k")
    rng = np.random.default_rng(9)
    b = random_weights("q4_k", n, k, rng)
    b[5, 0:2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)  # row 5, first super-block's d
    a = rng.standard_normal((m, k)).astype(np.float16)
    c = rng.standard_normal((m, n)).astype(np.float32)
    r = vlpc.run(kern, a, b, c, alpha=0.0, beta=2.0, strict=True)
    assert r.verified and np.array_equal(r.c, 2.0 * c)
    r = vlpc.run(kern, a, b, c, alpha=1.0, beta=0.0, strict=True, verify=False)
    assert np.isnan(r.c[0, 5]) and np.isfinite(np.delete(r.c[0], 5)).all()
    a[0, 4351] = np.nan  # the last super-block's last activation
    r = vlpc.run(kern, a, b, c, alpha=0.0, beta=2.0, strict=True)
    assert r.verified and np.array_equal(r.c, 2.0 * c)
    r = vlpc.run(kern, a, b, c, alpha=1.0, beta=0.0, strict=True, verify=False)
    assert np.isnan(r.c).all()


def test_q4k_sums_staged_by_phases(monkeypatch):
    """Q4_K: A and its 32-activation sums in LDS by phases of one of the lanes' 3 units (a barrier
    after each), the sums computed once per workgroup (not one dot per activation pair and lane)."""
    import vlpc.passes.isel.quant_lane as lane

    monkeypatch.setattr(lane, "LANE_A_PHASE_BYTES", 9000)  # one round: 16 lanes x 512 bytes of A + 512 of sums
    fmt, m, n, k = "q4_k", 1, 16, 12288  # 48 super-blocks: span 16, 3 units a lane
    kern = lane_kernel(m, n, k, fmt)
    assert kern.asm.count("A's sums in LDS") == 3
    # per lane and sub-block the 16 dots of a q alone; the sums' 16 per chunk and work-item at staging
    assert kern.asm.count("v_dot2_f32_f16") == 3 * 8 * 16 + 3 * 16
    rng = np.random.default_rng(8)
    rb = row_bytes(fmt, k)
    check_padded(kern, fmt, random_weights(fmt, n, k, rng), "f32", k + 8, rb + 4, n, rng,
                 deq=lambda x: dequantize(fmt, x))


@pytest.mark.parametrize("fmt, k, phases", [("q4_0", 7168, 2), ("q4_0", 9536, 3), ("q4_0", 4096, 1),
                                           ("q8_0", 14336, 4), ("int4_g128", 14336, 4), ("int4_g64", 14336, 1)])
def test_small_phases(fmt, k, phases):
    """Q4_0, Q8_0, int4_g128 at M = 1: A in phases of 8 KiB with two waves a workgroup where A's row
    is longer (int4_g64: 32 KiB, 4 waves)."""
    kern = lane_kernel(1, 64, k, fmt)
    assert kern.asm.count("A's phase in LDS") == phases
    assert kern.launch(1, 64, k).block[0] == (128 if phases > 1 else 64 * LANE_WAVES)
