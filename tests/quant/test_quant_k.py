"""The f16 x GGUF Q4_K GEMV (``b_format = "q4_k"``; passes/isel/quant_k.py, docs/quantized.md).

The oracle is the `gguf` package's Q4_K dequantizer (gguf has no Q4_K quantizer: the weights are
random valid super-blocks, every 6-bit scale and minimum and nibble drawn uniformly, or
vlpc.quant_run.quantize_q4_k's, always read back by gguf).  Strict emulator, exactly sized buffers:
A's row gaps NaN, B's gaps after each row's last super-block garbage (0xB5), C's NaN and checked
bit for bit; the bound is vlpc/quant_run.py's split_reference (the kernel sums d sc q and dmin m as
two terms)."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import vlpc  # noqa: E402
from vlpc.errors import DiagnosticError, VlpcError  # noqa: E402
from vlpc.quant_run import dequantize, quantize_q4_k, read_gguf_tensor, row_bytes  # noqa: E402

from test_quant_gemv import _swiglu_source, _write_gguf, check_nan_inputs, check_padded, sgpr, source  # noqa: E402

Q4K = gguf.GGMLQuantizationType.Q4_K


def random_blocks(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """N rows of K / 256 random valid Q4_K super-blocks: d and dmin f16 of either sign, the 12 scale
    bytes and 128 nibble bytes uniform (all 6-bit scales/minimums and nibbles occur)."""
    blocks = rng.integers(0, 256, (n * k // 256, 144), dtype=np.uint8)
    blocks[:, 0:2] = (rng.standard_normal(len(blocks)) * 0.01).astype(np.float16).reshape(-1, 1).view(np.uint8)
    blocks[:, 2:4] = (rng.standard_normal(len(blocks)) * 0.02).astype(np.float16).reshape(-1, 1).view(np.uint8)
    return blocks.reshape(n, -1)


def test_layout_is_ggufs():
    """Block geometry as gguf's table; the quantizer's blocks read back by gguf near the weights;
    the scale packing as ggml's get_scale_min_k4 (gguf's get_scale_min)."""
    assert gguf.GGML_QUANT_SIZES[Q4K] == (256, 144) and row_bytes("q4_k", 512) == 288
    rng = np.random.default_rng(0)
    w = rng.standard_normal((5, 512)).astype(np.float32)
    q = quantize_q4_k(w)
    assert q.shape == (5, 288) and q.dtype == np.uint8
    back = dequantize("q4_k", q)
    # the error is the format's: half a step of 15 per sub-block's range, plus the 6-bit scales'
    # rounding (each sub-block's step within 1/2 of d, d = max step / 63)
    rngs = (w.reshape(-1, 8, 32).max(-1) - np.minimum(w.reshape(-1, 8, 32).min(-1), 0))
    assert np.abs(back - w).max() < 0.1 * rngs.max()
    sc, m = gguf.quants.Q4_K.get_scale_min(q.reshape(-1, 144)[:, 4:16])
    d = q.reshape(-1, 144)[:, 0:2].copy().view(np.float16).astype(np.float64)
    dm = q.reshape(-1, 144)[:, 2:4].copy().view(np.float16).astype(np.float64)
    nib = q.reshape(-1, 144)[:, 16:].reshape(-1, 4, 32)
    qs = np.stack([nib & 15, nib >> 4], 2).reshape(-1, 8, 32)
    mine = (d[..., None] * sc[..., None] * qs - dm[..., None] * m[..., None]).reshape(5, 512)
    assert np.allclose(mine, back, rtol=0, atol=1e-6)
    with pytest.raises(VlpcError, match="whole super-blocks of 256"):
        quantize_q4_k(w[:, :300])


@pytest.mark.parametrize("m, n, k, ct, pads", [
    (1, 80, 2048, "f32", True),   # 8 super-blocks over 4 groups: 2 each, no loop; the N edge; A a chunk ahead
    (1, 64, 8192, "f16", True),   # 32 super-blocks over 4 groups: the loop 3 times; f16 C
    (2, 64, 5120, "f32", False),  # 20 super-blocks over 4 groups: 5 each, one before the loop (odd)
    (4, 70, 1536, "f16", True),   # 4 rows: A per sub-block, not ahead; 2 groups of 3
    (16, 64, 2048, "f32", True),  # 16 rows: 4 batches of A per sub-block; 8 groups of 1
    (3, 64, 256, "f32", True),    # one super-block
])
def test_gemv_against_gguf(m, n, k, ct, pads):
    """Random valid super-blocks; padded A (NaN), B (garbage after each row's last super-block) and
    C (NaN columns past N): beta = 0 over a C that is all NaN, then alpha and beta nonzero; every
    weight byte read once."""
    rb = row_bytes("q4_k", k)
    lda, ldb, ldc = (k + 6, rb + 12, n + 3) if pads else (k, rb, n)
    # (the SGPR kernel: the lane-along-K one is tests/quant/test_quant_lane.py's)
    kern = vlpc.compile(sgpr(source(m, n, k, "q4_k", ct, lda, ldb, ldc)), split_k=1).kernel("g")
    assert kern.launch_info["b_format"] == "q4_k"
    assert kern.asm.count("; B super-block") % 9 == 0
    assert ("_super_blocks" in kern.asm) == (k // 256 // kern.local_split >= 4)  # (2 ahead, an odd one before)
    rng = np.random.default_rng(k + m)
    check_padded(kern, "q4_k", random_blocks(n, k, rng), ct, lda, ldb, ldc, rng)


def test_exact_sums_are_bit_exact():
    """Small integer activations and scales: every sum is exact in f32, so C equals gguf's float64
    product bit for bit."""
    m, n, k = 2, 64, 512
    rng = np.random.default_rng(7)
    b = random_blocks(n, k, rng)
    b.reshape(-1, 144)[:, 0:2] = np.frombuffer(np.float16(0.25).tobytes(), np.uint8)
    b.reshape(-1, 144)[:, 2:4] = np.frombuffer(np.float16(-0.5).tobytes(), np.uint8)
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    kern = vlpc.compile(source(m, n, k, "q4_k")).kernel("g")
    r = vlpc.run(kern, a, b, np.zeros((m, n), np.float32), beta=0.0, strict=True)
    ref = a.astype(np.float64) @ dequantize("q4_k", b).T
    assert r.verified and np.array_equal(r.c.astype(np.float64), ref)


def test_alpha_zero_over_nan_inputs():
    """alpha = 0 drops the products: NaN activations and a NaN d or dmin do not reach C."""
    m, n, k = 2, 64, 512
    kern = vlpc.compile(source(m, n, k, "q4_k")).kernel("g")
    rng = np.random.default_rng(2)
    b = random_blocks(n, k, rng)
    b[5, 0:2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)      # row 5: d NaN
    b[9, 144 + 2:144 + 4] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)  # row 9, super-block 1: dmin
    check_nan_inputs(kern, b, m, n, k, rng, a_nan_at=300, nan_rows_of_b=[5, 9])


@pytest.mark.parametrize("m", [1, 3, 5, 16])
def test_m_at_launch(m):
    """M given at launch: the 16-row kernel or its row-narrow companions, each with its split of K."""
    kern = vlpc.compile(source(None, 64, 2048, "q4_k", "f16")).kernel("g")
    assert set(kern.companions) == {f"g_rows{r}" for r in (8, 4, 2, 1)}
    r = vlpc.run(kern, m=m, beta=0.5, strict=True, seed=m)
    assert r.verified and r.c.shape == (m, 64)


@pytest.mark.parametrize("m, split, local", [(1, 4, 2), (3, 2, 4)])
def test_split_k_across_workgroups(m, split, local):
    kern = vlpc.compile(source(m, 80, 4096, "q4_k", "f16"), split_k=split, local_split=local).kernel("g")
    assert (kern.split_k, kern.local_split) == (split, local)
    r = vlpc.run(kern, c=np.full((m, 80), np.nan, np.float16), beta=0.0, strict=True)
    assert r.verified and np.isfinite(r.c).all()


def test_swiglu_and_silu():
    """The fused SwiGLU (gate rows then up rows) and the silu epilogue on Q4_K weights."""
    n, k = 64, 1024
    rng = np.random.default_rng(6)
    b = random_blocks(2 * n, k, rng)
    kern = vlpc.compile(_swiglu_source(2, n, k, "q4_k")).kernel("g")
    a = rng.standard_normal((2, k)).astype(np.float16)
    r = vlpc.run(kern, a, b, np.full((2, n), np.nan, np.float32), beta=0.0, strict=True)
    g = a.astype(np.float64) @ dequantize("q4_k", b[:n]).T
    u = a.astype(np.float64) @ dequantize("q4_k", b[n:]).T
    assert r.verified and np.allclose(r.c, g / (1 + np.exp(-g)) * u, rtol=1e-4, atol=1e-3)
    kern = vlpc.compile(source(1, n, k, "q4_k", "f16", epilogue=("silu",))).kernel("g")
    assert vlpc.run(kern, strict=True, beta=0.5).verified


@pytest.mark.parametrize("src, match", [
    (source(1, 64, 256, "q4_k").replace("1x256xf16", "1x320xf16"),
     "K=320 is not a multiple of 256: a GGUF q4_k row is whole blocks of 256 weights"),
    (source(1, 64, 256, "q4_k").replace("64x144xi8", "64x140xi8"),
     "B has rows of 140 bytes; q4_k with K=256 needs 1 blocks of 144 bytes = 144 bytes"),
    (source(1, 64, 256, "q4_k").replace('"q4_k"', '"q5_k"'), r"unsupported b_format 'q5_k' \(supported: q8_0, q4_0, q4_k, int4_g32, int4_g64, int4_g128\)"),
])
def test_located_errors(src, match):
    with pytest.raises(DiagnosticError, match=match) as e:
        vlpc.compile(src)
    assert "<input>:2:" in str(e.value).splitlines()[0]


def test_gguf_file(tmp_path):
    """A Q4_K tensor written by gguf's writer, read back by name and run; a truncated file refused."""
    rng = np.random.default_rng(4)
    q = quantize_q4_k(rng.standard_normal((96, 512)).astype(np.float32))
    path = tmp_path / "m.gguf"
    _write_gguf(path, {"blk.0.attn_q.weight": (q, Q4K)})
    fmt, rows = read_gguf_tensor(str(path), "blk.0.attn_q.weight")
    assert fmt == "q4_k" and np.array_equal(rows, q)
    kern = vlpc.compile(source(1, 96, 512, "q4_k")).kernel("g")
    assert vlpc.run(kern, b=rows, strict=True).verified
    from vlpc.quant_run import weights_option

    with pytest.raises(VlpcError, match="tensor 'blk.0.attn_q.weight' is Q4_K, kernel g takes Q4_0"):
        weights_option(vlpc.compile(source(1, 96, 512, "q4_0")).kernel("g"), f"{path}:blk.0.attn_q.weight", None)
    assert weights_option(kern, f"{path}:blk.0.attn_q.weight", None)[1] == 96
    bad = tmp_path / "t.gguf"
    bad.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(VlpcError, match="truncated"):
        read_gguf_tensor(str(bad), "blk.0.attn_q.weight")


@pytest.mark.parametrize("fmt, m, args", [("q4_k", 1, []), ("q4_0", None, ["-m", "5"]), ("q8_0", None, ["-m", "16"])])
def test_bench_and_profile(tmp_path, fmt, m, args):
    """vlpc bench (modeled) and vlpc profile take the quantized formats; an M given at launch keeps the
    plan (the row-narrow companion for M = 5); B's bytes count in the HBM share."""
    import subprocess
    import sys

    src = tmp_path / "g.mlir"
    src.write_text(source(m, 128, 512, fmt))
    p = subprocess.run([sys.executable, "-m", "vlpc.cli", "bench", str(src), *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = m or int(args[1])
    assert f"M={rows} N=128" in p.stdout and "modeled" in p.stderr + p.stdout
    if rows == 5:
        assert "g_rows4" in p.stderr + p.stdout  # the 4-row companion, on two row tiles
    p = subprocess.run([sys.executable, "-m", "vlpc.cli", "profile", str(src), *args], capture_output=True, text=True)
    assert p.returncode == 0 and f"M={rows} N=128 K=512" in p.stdout and "findings: none" in p.stdout, p.stdout + p.stderr


def test_bytes_to_move_counts_the_quantized_b():
    from vlpc.bench import bytes_to_move
    from vlpc.energy_report import host_buffers
    from vlpc.verify import Problem

    kern = vlpc.compile(source(2, 64, 512, "q4_k")).kernel("g")
    p = Problem(m=2, n=64, k=512, lda=512, ldb=288, ldc=64)
    host = host_buffers(kern, p)[0]
    assert host["B"].dtype == np.uint8 and host["B"].size == 64 * 288
    assert bytes_to_move(host, p, 0.0) == 2 * 512 * 2 + 64 * 288 + 2 * 64 * 4


@pytest.mark.parametrize("ct", ["f32", "f16"])
def test_residual_add(ct):
    """The residual add of an LLM layer: beta = 1 with C the residual stream, C <- x W^T + C."""
    m, n, k = 1, 64, 512
    rng = np.random.default_rng(9)
    b = random_blocks(n, k, rng)
    dt = np.float32 if ct == "f32" else np.float16
    x = rng.standard_normal((m, k)).astype(np.float16)
    res = rng.standard_normal((m, n)).astype(dt)
    kern = vlpc.compile(source(m, n, k, "q4_k", ct)).kernel("g")
    r = vlpc.run(kern, x, b, res, alpha=1.0, beta=1.0, strict=True)
    want = x.astype(np.float64) @ dequantize("q4_k", b).T + res
    assert r.verified and np.allclose(r.c, want, rtol=2e-3 if ct == "f16" else 1e-5, atol=1e-3)


def test_bench_energy(tmp_path):
    """vlpc bench --energy prices a quantized plan (the GEMV and its reduce kernel)."""
    import subprocess
    import sys

    src = tmp_path / "g.mlir"
    src.write_text(source(1, 128, 512, "q4_k"))
    p = subprocess.run([sys.executable, "-m", "vlpc.cli", "bench", str(src), "--energy"], capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode == 0 and (tmp_path / "g-energy.csv").exists(), p.stderr
    assert "g (grid" in p.stdout
