"""The prefill GEMM on int8 activations (passes/isel/quant_gemm.py, QuantGemmInt8Builder; docs/quantized.md,
"Prefill"): the plan's pre-kernel ``g_quant_a`` quantizes A once into the workspace, the GEMM multiplies
its int8 blocks with ``v_dot4_i32_i8``.

Strict emulator, exactly sized and padded buffers (A's row gaps NaN, B's bytes after each row's last
block garbage, C's columns past N NaN), checked two ways with NumPy: against gguf's float64 dequantized
weights times the *quantized* activations (``vlpc.quant_run.quantize_activations``, the kernel's exact
operands) within f32 accumulation's bound, and against the f16 activations within that bound plus
``sum_k |w_k| d_a(k)`` (each activation within its block's step)."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import vlpc  # noqa: E402
from vlpc.dialects.gemm import QUANT_GEMM_TILE_ROWS  # noqa: E402
from vlpc.passes.isel.quant_act import A_QUANT, QUANT_A_BLOCK_BYTES, QUANT_A_PAIR_STEP_BYTES, QUANT_A_TILE_K  # noqa: E402
from vlpc.quant_run import activation_step, dequantize, quantize_activations, row_bytes  # noqa: E402
from vlpc.verify import U32, gamma  # noqa: E402

from test_quant_gemv import QT, check_nan_inputs, padded_operands, source  # noqa: E402
from test_quant_lane_int8 import scaled_activations  # noqa: E402


def gemm_kernel(m, n, k, fmt, ct="f32", lda=None, ldb=None, ldc=None):
    kern = vlpc.compile(source(m, n, k, fmt, ct, lda, ldb, ldc)).kernel("g")
    assert kern.launch_info["macro_m"] == QUANT_GEMM_TILE_ROWS[fmt]
    assert kern.launch_info.get("a_quant") == A_QUANT and "v_dot4_i32_i8" in kern.asm
    assert [s.kernel for s in kern.plan(m, n, k)] == ["g_quant_a", "g"]
    assert kern.workspace_bytes(m, n, k) == m * k // 32 * (QUANT_A_BLOCK_BYTES + QUANT_A_PAIR_STEP_BYTES)
    return kern


def bounds(a, w, k, local):
    """(the f32 bound against the quantized activations, the bound against the f16 ones): one rounding
    per block's FMA, the L groups' sums, alpha and beta (vlpc.quant_run.quant_verdict's n)."""
    aq = quantize_activations(a)
    n = 16 + k // 32 + local + 2
    fb = gamma(n, U32) * (np.abs(aq) @ np.abs(w).T)
    return aq, fb, fb + activation_step(a) @ np.abs(w).T


@pytest.mark.parametrize("fmt, m, n, k, ct, padded", [
    ("q8_0", 64, 64, 256, "f32", True),    # two row tiles; 1 pair a group (4 groups)
    ("q4_0", 70, 80, 1024, "f16", True),   # the last tile moved up; an N edge (80); f16 C
    ("q8_0", 48, 64, 2048, "f32", False),  # exact sizes; 2 pairs a group: the loop
    ("q4_0", 96, 64, 3072, "f32", True),   # 3 pairs a group
    ("q8_0", 33, 64, 1088, "f16", True),   # 17 block pairs (K not a multiple of 128): one group
])
def test_gemm_against_gguf(fmt, m, n, k, ct, padded):
    if m < QUANT_GEMM_TILE_ROWS[fmt]:
        pytest.skip("M below the tile's rows")
    rb = row_bytes(fmt, k)
    lda, ldb, ldc = (k + 8, rb + 12, n + 3) if padded else (k, rb, n)
    kern = gemm_kernel(m, n, k, fmt, ct, lda, ldb, ldc)
    rng = np.random.default_rng(m * 1000 + k)
    b = gguf.quants.quantize(rng.standard_normal((n, k)).astype(np.float32), QT[fmt])
    a, bpad, c = padded_operands(b, rb, m, k, lda, ldb, ldc, ct, scaled_activations(rng, m, k))
    dt = c.dtype
    r = vlpc.run(kern, a, bpad, c, alpha=1.0, beta=0.0, strict=True)
    assert r.verified and np.isfinite(r.c).all()
    st, mt = r.stats, kern.launch_info["macro_m"]
    pre = m * -(-k // QUANT_A_TILE_K)  # the pre-kernel's workgroups, 4 waves each (A and the workspace pointer)
    # every weight byte once per row tile; A's f16 once (the pre-kernel); per GEMM workgroup its tile's int8
    # rows and per row and block pair its two steps d_a (8 bytes); 32 bytes of kernel arguments a GEMM wave
    assert st.global_bytes_read == (-(-m // mt) * n * rb + m * k * 2 + pre * 4 * 16
                                    + (st.workgroups - pre) * mt * (k + k // 64 * 8) + (st.waves - 4 * pre) * 32)
    w = dequantize(fmt, b).astype(np.float64)
    aq, fb, ab = bounds(a[:, :k], w, k, kern.local_split)
    got = r.c[:, :n].astype(np.float64)
    c16 = (lambda x: 2.0 ** -11 * np.abs(x) + 2.0 ** -24) if ct == "f16" else (lambda x: 0)
    assert (np.abs(got - aq @ w.T) <= fb + c16(aq @ w.T)).all()  # the kernel's operands, f32 accumulation
    ref = a[:, :k].astype(np.float64) @ w.T
    assert (np.abs(got - ref) <= ab + c16(ref)).all()  # the f16 activations: their quantization's bound
    assert (np.abs(got - ref) > fb + c16(ref)).any()  # (which the int8 activations do need)
    assert np.isnan(r.c[:, n:]).all()  # C's columns past N untouched
    c[:, :n] = rng.standard_normal((m, n)).astype(dt)
    r = vlpc.run(kern, a, bpad, c, alpha=-0.75, beta=0.5, strict=True)
    assert r.verified and r.error_ratio < 1


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
def test_bit_exact_where_exact(fmt):
    """Activations in [1, 2) (block step 2^-6) and every weight scale 1: each block's integer dot, its
    product with d_w d_a and every sum are exact in f32, so C is NumPy's value on the quantized
    activations bit for bit."""
    m, n, k = QUANT_GEMM_TILE_ROWS[fmt] + 5, 64, 2048
    kern = gemm_kernel(m, n, k, fmt)
    rng = np.random.default_rng(7)
    b = gguf.quants.quantize(rng.standard_normal((n, k)).astype(np.float32), QT[fmt])
    one = np.frombuffer(np.float16(1.0).tobytes(), np.uint8)
    bb = {"q8_0": 34, "q4_0": 18}[fmt]
    for blk in range(k // 32):
        b[:, blk * bb:blk * bb + 2] = one
    a = (rng.uniform(1, 2, (m, k)) * rng.choice([-1, 1], (m, k))).astype(np.float16)
    r = vlpc.run(kern, a, b, np.full((m, n), np.nan, np.float32), beta=0.0, strict=True)
    exact = quantize_activations(a) @ dequantize(fmt, b).astype(np.float64).T
    assert np.array_equal(exact, exact.astype(np.float32))
    assert r.verified and np.array_equal(r.c, exact.astype(np.float32))


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
def test_alpha_zero_over_nan_inputs(fmt):
    """alpha = 0 drops the products: a NaN activation (its block's step NaN) and a NaN block scale do not
    reach C; with alpha = 1 they reach exactly their row and column."""
    m, n, k = QUANT_GEMM_TILE_ROWS[fmt] + 1, 64, 256
    kern = gemm_kernel(m, n, k, fmt)
    rng = np.random.default_rng(3)
    b = gguf.quants.quantize(rng.standard_normal((n, k)).astype(np.float32), QT[fmt])
    b[5, 0:2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)  # row 5, block 0's scale: NaN
    check_nan_inputs(kern, b, m, n, k, rng, a_nan_at=7, nan_rows_of_b=[5])


def test_split_k_keeps_f16_activations():
    """--split-k 2: the split's workspace holds its partials, so the f16-activation GEMM runs (one plan
    of the GEMM and the reduce kernel, no pre-kernel)."""
    kern = vlpc.compile(source(48, 64, 1024, "q4_0"), split_k=2).kernel("g")
    assert "a_quant" not in kern.launch_info and "v_dot2_f32_f16" in kern.asm
    assert [s.kernel for s in kern.plan(48, 64, 1024)] == ["g", "g_reduce"]


@pytest.mark.parametrize("m", [96, None])
def test_grouped_workgroup_order(monkeypatch, m):
    """The grouped workgroup order (INT8_WG_GROUP tile rows a group; 8 in the plan, 2 here so that 96
    rows make a whole group of 2 tile rows and a last group of one): static M and M given at launch (the
    companion), every element within the bound (the verdict against the quantized activations)."""
    from vlpc.passes.isel import quant_gemm

    monkeypatch.setattr(quant_gemm, "INT8_WG_GROUP", 2)
    n, k = 128, 512
    kern = vlpc.compile(source(m, n, k, "q4_0"), cache=False).kernel("g")
    ran = kern.rows_kernel(96) or kern
    assert ran.launch_info.get("a_quant") == A_QUANT and "first tile row of the group of 2" in kern.asm
    r = vlpc.run(kern, m=96, beta=0.5, strict=True, seed=5)
    assert r.verified and r.c.shape == (96, n)


def test_pre_kernel_pair_steps():
    """The GEMM plan's ``g_quant_a`` alone (passes/isel/quant_act.py with ``pair_steps``) over a workspace of
    0xFF bytes with 64 more after it: the int8 rows and (d_a, sum q) words as the lane GEMV's pre-kernel
    writes them, and the steps once more pair-major (block pair p of row m at M K + 8 M K / 32 + 8 (p M + m))
    equal to NumPy's (vlpc.quant_run.activation_step) bit for bit, an inf block's NaN; K past a tile of the
    pre-kernel (2176 = 2048 + 128); nothing written past the workspace."""
    from vlpc.runtime import get_device, load_code_object

    m, n, k, lda = 33, 64, 2176, 2184
    rb = row_bytes("q4_0", k)
    kern = gemm_kernel(m, n, k, "q4_0", "f32", lda, rb, n)
    step = kern.plan(m, n, k)[0]
    rng = np.random.default_rng(11)
    a = np.full((m, lda), np.nan, np.float16)
    a[:, :k] = scaled_activations(rng, m, k)
    a[3, 100] = np.inf  # block 3 of row 3
    ws_bytes = kern.workspace_bytes(m, n, k)
    dev = get_device("emulator", strict=True)
    host = [a.reshape(-1), np.zeros(n * rb, np.uint8), np.zeros(m * n, np.float32)]
    bufs = [dev.upload(x) for x in host]
    ws = dev.upload(np.full(ws_bytes + 64, 0xFF, np.uint8))
    args = [*bufs, *(np.int32(v) for v in (m, n, k, lda, rb, n)), np.float32(1), np.float32(0), ws]
    dev.launch(load_code_object(kern.code_object), step.kernel, grid=step.grid, block=step.block,
               args=args, buffer_sizes={0: a.nbytes, 1: host[1].nbytes, 2: host[2].nbytes, 11: ws_bytes + 64})
    raw = dev.download(ws, np.uint8, (ws_bytes + 64,))
    assert (raw[ws_bytes:] == 0xFF).all(), "the pre-kernel wrote past its workspace"
    nb = k // 32
    meta = raw[m * k:m * k + 8 * m * nb].reshape(m, nb, 8)[..., :4].copy().view(np.float32)[..., 0]
    pair = raw[m * k + 8 * m * nb:ws_bytes].copy().view(np.float32).reshape(nb // 2, m, 2)
    want = activation_step(a[:, :k]).reshape(m, nb, 32)[..., 0].astype(np.float32)
    got = pair.transpose(1, 0, 2).reshape(m, nb)
    assert np.isnan(got[3, 3]) and np.isnan(meta[3, 3])
    got[3, 3] = want[3, 3] = meta[3, 3] = 0
    assert np.array_equal(got, want) and np.array_equal(meta, want)


def test_k_not_whole_block_pairs_refused():
    """K not a multiple of 64 at a GEMM's M: the block-pair kernels' located error (no pre-kernel built)."""
    from vlpc.errors import DiagnosticError

    with pytest.raises(DiagnosticError, match="K=96: vlpc's q4_0 GEMV reads blocks in pairs") as e:
        vlpc.compile(source(40, 64, 96, "q4_0"))
    assert "<input>:2:" in str(e.value).splitlines()[0]


@pytest.mark.parametrize("epilogue, length", [(("bias_row", "silu"), 40), (("bias_col", "relu"), 80)])
def test_bias_and_epilogue(epilogue, length):
    """bias_row / bias_col (f16) then silu or relu on the int8 GEMM (the GEMV's output code), f16 C:
    within the verdict's bound against the quantized activations."""
    from test_quant_gemv import _with_bias

    kern = vlpc.compile(_with_bias(source(40, 80, 1024, "q4_0", "f16", epilogue=epilogue), length)).kernel("g")
    assert kern.launch_info.get("a_quant") == A_QUANT and kern.launch_info["macro_m"] == QUANT_GEMM_TILE_ROWS["q4_0"]
    bias = np.linspace(-4, 4, length).astype(np.float16)
    r = vlpc.run(kern, beta=0.5, bias=bias, strict=True, seed=2)
    assert r.verified and np.array_equal(r.inputs["bias"], bias)
