"""The f16 x AWQ/GPTQ-style int4 GEMV (``b_format = "int4_g32" | "int4_g64" | "int4_g128"``;
passes/isel/quant_int4.py, docs/quantized.md).

The oracle is the format's definition in NumPy: weight ``(q - z) * s`` per group of G weights along
K, the nibbles in GPTQ's ``qweight`` order (checked against a GPTQ-style packing and unpacking of
K / 8 x N int32 here).  Strict emulator, exactly sized buffers: A's row gaps NaN, B's gaps after each
row's last group garbage (0xB5), garbage in each group's ignored header byte, C's NaN and checked
bit for bit; the bound is vlpc/quant_run.py's (G / 2 dots and one FMA per group)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import vlpc
from vlpc.dialects.gemm import B_FORMATS, INT4_GROUP_FORMATS
from vlpc.errors import DiagnosticError
from vlpc.quant_run import dequantize, dequantize_int4, quantize_int4, row_bytes

from test_quant_gemv import _swiglu_source, check_nan_inputs, check_padded, source


def random_groups(n: int, k: int, group: int, rng: np.random.Generator) -> np.ndarray:
    """N rows of K / G random groups (K % G != 0: then the last, partial group of K % G weights):
    every nibble and zero point 0..15 uniform, f16 scales of either sign, the ignored header byte garbage."""
    if k % group:
        return np.concatenate([random_groups(n, k - k % group, group, rng),
                               random_groups(n, k % group, k % group, rng)], axis=1)
    g = rng.integers(0, 256, (n, k // group, 4 + group // 2), dtype=np.uint8)
    g[..., 0:2] = (rng.standard_normal((n, k // group)) * 0.05).astype(np.float16)[..., None].view(np.uint8)
    g[..., 2] = rng.integers(0, 16, (n, k // group))
    return g.reshape(n, -1)


def gptq_pack(q: np.ndarray) -> np.ndarray:
    """GPTQ's ``qweight`` of unsigned 4-bit values ``q`` (N x K): K / 8 x N int32, weight k of column n
    in bits 4 (k % 8) .. of dword k / 8 (GPTQ's pack: ``qweight[i] |= intweight[8 i + j] << 4 j``)."""
    n, k = q.shape
    qt = q.T.astype(np.uint32).reshape(k // 8, 8, n)
    return sum(qt[:, j] << (4 * j) for j in range(8)).astype(np.uint32)


@pytest.mark.parametrize("fmt", list(INT4_GROUP_FORMATS))
def test_layout(fmt):
    """Row bytes; the nibbles are GPTQ's qweight transposed to N x K (as little-endian bytes); the
    quantizer's weights read back within half a step of the weights."""
    group = INT4_GROUP_FORMATS[fmt]
    assert B_FORMATS[fmt] == (group, 4 + group // 2) and row_bytes(fmt, 256) == 256 // group * (4 + group // 2)
    rng = np.random.default_rng(group)
    w = rng.standard_normal((6, 256)).astype(np.float32)
    b = quantize_int4(w, group)
    g = b.reshape(6, -1, 4 + group // 2)
    nibbles = np.ascontiguousarray(g[..., 4:]).reshape(6, -1)  # N x K / 2 bytes
    q = np.stack([nibbles & 15, nibbles >> 4], -1).reshape(6, 256)
    qweight = gptq_pack(q)
    assert np.array_equal(np.ascontiguousarray(qweight.T).view(np.uint8).reshape(6, -1), nibbles)
    s = g[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float64)
    z = g[..., 2].astype(np.float64)
    mine = ((np.stack([(qweight.T >> (4 * j)) & 15 for j in range(8)], -1).reshape(6, -1, group)
             - z[..., None]) * s[..., None]).reshape(6, 256)
    assert np.array_equal(dequantize(fmt, b), mine)
    step = np.repeat(s, group, 1)
    assert (np.abs(dequantize(fmt, b) - w) <= 0.5 * step + 1e-3 * np.abs(w) + 1e-6).all()


@pytest.mark.parametrize("fmt, m, n, k, ct, pads", [
    ("int4_g32", 1, 80, 1024, "f32", True),    # 32 groups over 2 wavefront groups: 16 each (the loop); N edge
    ("int4_g64", 3, 64, 1536, "f16", True),    # 24 groups over 8: 3 each, one before the last two (odd); f16 C
    ("int4_g128", 16, 64, 2048, "f32", True),  # 16 rows: 4 batches of A per 32 weights; 16 groups over 16
    ("int4_g128", 2, 70, 2560, "f16", False),  # 20 groups over 2: 10 each
    ("int4_g128", 4, 64, 3584, "f32", True),   # 28 groups over 4 (the plan's halving): 7 each, one before the loop
    ("int4_g32", 2, 64, 64, "f32", True),      # 2 groups, one wavefront group
])
def test_gemv_against_numpy(fmt, m, n, k, ct, pads):
    """Padded A (NaN), B (garbage after each row's last group and in the ignored header bytes) and C (NaN
    columns past N): beta = 0 over a C that is all NaN, every weight byte read once, then alpha and beta
    nonzero."""
    group = INT4_GROUP_FORMATS[fmt]
    rb = row_bytes(fmt, k)
    lda, ldb, ldc = (k + 6, rb + 12, n + 3) if pads else (k, rb, n)
    kern = vlpc.compile(source(m, n, k, fmt, ct, lda, ldb, ldc), split_k=1).kernel("g")
    assert kern.launch_info["b_format"] == fmt
    assert ("_int4_groups" in kern.asm) == (k // group // kern.local_split >= 4)  # (2 ahead, an odd one before)
    rng = np.random.default_rng(k + m)
    check_padded(kern, fmt, random_groups(n, k, group, rng), ct, lda, ldb, ldc, rng,
                 deq=lambda b: dequantize_int4(b, group))


@pytest.mark.parametrize("fmt, k", [(f, 512) for f in INT4_GROUP_FORMATS] + [("int4_g128", 608)])
def test_exact_sums_are_bit_exact(fmt, k):
    """Small integer activations, power-of-two scales: every sum is exact in f32, C equals the
    float64 product bit for bit (every nibble and zero point occurs; K = 608: a last partial group
    of 96 weights)."""
    group = INT4_GROUP_FORMATS[fmt]
    m, n = 2, 64
    rng = np.random.default_rng(3)
    b = random_groups(n, k, group, rng)
    size = 4 + group // 2
    for j in range(-(-k // group)):  # every group's scale (the partial group's 0.5)
        b[:, j * size:j * size + 2] = np.float16(0.25 if j < k // group else 0.5).reshape(1).view(np.uint8)
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    kern = vlpc.compile(source(m, n, k, fmt)).kernel("g")
    r = vlpc.run(kern, a, b, np.zeros((m, n), np.float32), beta=0.0, strict=True)
    assert r.verified and np.array_equal(r.c.astype(np.float64), a.astype(np.float64) @ dequantize_int4(b, group).T)


def test_alpha_zero_over_nan_inputs():
    """alpha = 0 drops the products: NaN activations and a NaN group scale do not reach C."""
    m, n, k = 2, 64, 512
    kern = vlpc.compile(source(m, n, k, "int4_g64")).kernel("g")
    rng = np.random.default_rng(2)
    b = random_groups(n, k, 64, rng)
    b[5, 36:38] = np.float16(np.nan).reshape(1).view(np.uint8)  # row 5, group 1: s NaN
    check_nan_inputs(kern, b, m, n, k, rng, a_nan_at=300, nan_rows_of_b=[5])


@pytest.mark.parametrize("m", [1, 5, 16])
def test_m_at_launch(m):
    """M given at launch: the 16-row kernel or its row-narrow companions."""
    kern = vlpc.compile(source(None, 64, 1024, "int4_g128", "f16")).kernel("g")
    assert set(kern.companions) == {f"g_rows{r}" for r in (8, 4, 2, 1)}
    r = vlpc.run(kern, m=m, beta=0.5, strict=True, seed=m)
    assert r.verified and r.c.shape == (m, 64)


def test_split_k_and_silu():
    kern = vlpc.compile(source(1, 80, 4096, "int4_g32", "f16"), split_k=4, local_split=2).kernel("g")
    assert (kern.split_k, kern.local_split) == (4, 2)
    r = vlpc.run(kern, c=np.full((1, 80), np.nan, np.float16), beta=0.0, strict=True)
    assert r.verified and np.isfinite(r.c).all()
    kern = vlpc.compile(source(2, 64, 512, "int4_g128", "f32", epilogue=("silu",))).kernel("g")
    assert vlpc.run(kern, strict=True, beta=0.5).verified


@pytest.mark.parametrize("m, k", [(1, 2048), (3, 512)])
def test_swiglu(m, k):
    """The fused SwiGLU (gate rows then up rows, one B) on int4_g128 weights: silu(x Wg^T) * (x Wu^T)."""
    n = 64
    rng = np.random.default_rng(m)
    b = random_groups(2 * n, k, 128, rng)
    kern = vlpc.compile(_swiglu_source(m, n, k, "int4_g128")).kernel("g")
    a = rng.standard_normal((m, k)).astype(np.float16)
    r = vlpc.run(kern, a, b, np.full((m, n), np.nan, np.float32), beta=0.0, strict=True)
    g = a.astype(np.float64) @ dequantize_int4(b[:n], 128).T
    u = a.astype(np.float64) @ dequantize_int4(b[n:], 128).T
    assert r.verified and np.allclose(r.c, g / (1 + np.exp(-g)) * u, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("src, match", [
    (source(1, 64, 256, "int4_g128").replace("1x256xf16", "1x320xf16"),
     r"B has rows of 136 bytes; int4_g128 with K=320 needs 2 blocks of 68 bytes and a partial group of 64 "
     r"weights \(36 bytes\) = 172 bytes per row"),
    (source(1, 64, 256, "int4_g128").replace("1x256xf16", "1x336xf16"),
     "K=336: int4_g128 rows are at least one whole group of 128 weights, then a last partial group of a "
     "multiple of 32 weights"),
    (source(1, 64, 256, "int4_g128").replace("1x256xf16", "1x96xf16"), "K must be at least 128"),
    (source(1, 64, 256, "int4_g32").replace("64x160xi8", "64x128xi8"),
     "B has rows of 128 bytes; int4_g32 with K=256 needs 8 blocks of 20 bytes = 160 bytes"),
    (source(1, 64, 256, "int4_g64").replace('"int4_g64"', '"int4_g16"'), "unsupported b_format 'int4_g16'"),
])
def test_located_errors(src, match):
    with pytest.raises(DiagnosticError, match=match) as e:
        vlpc.compile(src)
    assert "<input>:2:" in str(e.value).splitlines()[0]


def test_bench(tmp_path):
    """vlpc bench (modeled) takes the int4 formats; B's bytes count in the HBM share."""
    src = tmp_path / "g.mlir"
    src.write_text(source(1, 128, 512, "int4_g128"))
    p = subprocess.run([sys.executable, "-m", "vlpc.cli", "bench", str(src)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "M=1 N=128" in p.stdout and "modeled" in p.stderr + p.stdout


def test_gguf_tensor_refused(tmp_path):
    """GGUF has no int4 group type: an int4 kernel's --weights refuses a GGUF tensor in one line."""
    gguf = pytest.importorskip("gguf")
    from test_quant_gemv import _write_gguf
    from vlpc.errors import VlpcError
    from vlpc.quant_run import weights_option

    q4 = gguf.quants.quantize(np.ones((64, 256), np.float32), gguf.GGMLQuantizationType.Q4_0)
    path = tmp_path / "m.gguf"
    _write_gguf(path, {"blk.0.ffn_up.weight": (q4, gguf.GGMLQuantizationType.Q4_0)})
    kern = vlpc.compile(source(1, 64, 256, "int4_g128")).kernel("g")
    with pytest.raises(VlpcError, match="tensor 'blk.0.ffn_up.weight' is Q4_0, kernel g takes INT4_G128"):
        weights_option(kern, f"{path}:blk.0.ffn_up.weight", None)


@pytest.mark.parametrize("fmt, m, n, k, ct, pads", [
    ("int4_g128", 2, 64, 160, "f32", True),    # one whole group and 32 weights: one K slice, no branch
    ("int4_g128", 3, 64, 320, "f16", True),    # 2 groups + 64 over 2 wavefront groups: the last adds the rest
    ("int4_g64", 1, 80, 1056, "f32", False),   # 16 groups + 32 over 2 groups; B exactly sized (no gap at all)
    ("int4_g128", 16, 64, 1120, "f32", True),  # 8 groups + 96 over 8 groups, 16 rows
])
def test_partial_group(fmt, m, n, k, ct, pads):
    """A last partial group (K % G weights): exactly its bytes read once (garbage after it), C against
    the format's definition, beta = 0 over NaN C, then alpha and beta nonzero (check_padded)."""
    group = INT4_GROUP_FORMATS[fmt]
    rb = row_bytes(fmt, k)
    assert rb == k // group * (4 + group // 2) + 4 + k % group // 2
    lda, ldb, ldc = (k + 6, rb + 12, n + 3) if pads else (k, rb, n)
    kern = vlpc.compile(source(m, n, k, fmt, ct, lda, ldb, ldc), split_k=1).kernel("g")
    assert ("_partial_group" in kern.asm) == (kern.local_split > 1)
    rng = np.random.default_rng(k + m)
    check_padded(kern, fmt, random_groups(n, k, group, rng), ct, lda, ldb, ldc, rng,
                 deq=lambda b: dequantize_int4(b, group))


def test_partial_group_layout():
    """quantize_int4 / dequantize_int4 with a partial group: its header and nibbles after the whole
    groups, the weights back within half a step."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((5, 320)).astype(np.float32)
    b = quantize_int4(w, 128)
    assert b.shape == (5, 172) and np.array_equal(b[:, 136:], quantize_int4(w[:, 256:], 64))
    back = dequantize_int4(b, 128)
    assert np.array_equal(back[:, :256], dequantize_int4(b[:, :136], 128))
    s = np.concatenate([np.repeat(b[:, 0:2].copy().view(np.float16).astype(np.float64), 128, 1),
                        np.repeat(b[:, 68:70].copy().view(np.float16).astype(np.float64), 128, 1),
                        np.repeat(b[:, 136:138].copy().view(np.float16).astype(np.float64), 64, 1)], axis=1)
    assert (np.abs(back - w) <= 0.5 * s + 1e-3 * np.abs(w) + 1e-6).all()


def test_partial_group_split_k_nan_and_launch():
    """Split-K (workspace) with the partial group in the last slice; alpha = 0 over NaN activations and a
    NaN scale in the partial group; M at launch; the fused SwiGLU."""
    kern = vlpc.compile(source(1, 64, 1056, "int4_g64", "f16"), split_k=2, local_split=2).kernel("g")
    assert (kern.split_k, kern.local_split) == (2, 2)
    r = vlpc.run(kern, c=np.full((1, 64), np.nan, np.float16), beta=0.0, strict=True)
    assert r.verified and np.isfinite(r.c).all()
    m, n, k = 2, 64, 352  # 2 groups of 128 + 96
    kern = vlpc.compile(source(m, n, k, "int4_g128")).kernel("g")
    rng = np.random.default_rng(4)
    b = random_groups(n, k, 128, rng)
    b[5, 136:138] = np.float16(np.nan).reshape(1).view(np.uint8)  # row 5, the partial group: s NaN
    check_nan_inputs(kern, b, m, n, k, rng, a_nan_at=300, nan_rows_of_b=[5])
    kern = vlpc.compile(source(None, 64, 320, "int4_g128", "f16")).kernel("g")
    for mm in (3, 17):
        r = vlpc.run(kern, m=mm, beta=0.5, strict=True, seed=mm)
        assert r.verified and r.c.shape == (mm, 64)
    b = random_groups(2 * n, 320, 128, rng)
    kern = vlpc.compile(_swiglu_source(3, n, 320, "int4_g128")).kernel("g")
    a = rng.standard_normal((3, 320)).astype(np.float16)
    r = vlpc.run(kern, a, b, np.full((3, n), np.nan, np.float32), beta=0.0, strict=True)
    g = a.astype(np.float64) @ dequantize_int4(b[:n], 128).T
    u = a.astype(np.float64) @ dequantize_int4(b[n:], 128).T
    assert r.verified and np.allclose(r.c, g / (1 + np.exp(-g)) * u, rtol=1e-4, atol=1e-3)
