"""The lane-along-K quantized GEMV at M = 2 .. 16 with int8 activations (passes/isel/quant_lane.py,
QuantLaneInt8Builder; docs/quantized.md, "int8 activations").

Every case on the strict emulator with exactly sized or padded buffers (A's row gaps NaN, B's bytes
after each row's last block garbage, C's columns past N NaN), beta = 0 over a C that is all NaN, then
alpha and beta nonzero; checked two ways, both computed here with NumPy: against gguf's float64
dequantization times the *quantized* activations (the kernel's exact operands:
``vlpc.quant_run.quantize_activations``, a power-of-two step per block of 32) within f32 accumulation's
bound, and against float64 math on the f16 activations within the stated bound
``sum_k |w_k| d_a(k)`` (each activation within its block's step d_a) plus that f32 bound."""

from __future__ import annotations

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import vlpc  # noqa: E402
from vlpc.passes.isel.quant_act import A_QUANT, QUANT_A_BLOCK_BYTES, QUANT_A_TILE_K  # noqa: E402
from vlpc.passes.isel.quant_lane import (LANE_INT8_LONG_K, LANE_INT8_PRE_FROM_M,  # noqa: E402
                                         LANE_INT8_PRE_FROM_M_OF, LANE_UNITS, quant_lane_plan)
from vlpc.quant_run import (activation_step, dequantize, quantize_activations, random_weights,  # noqa: E402
                            row_bytes, weight_magnitudes)
from vlpc.verify import U32, gamma  # noqa: E402

from test_quant_gemv import check_nan_inputs, padded_operands, sgpr, source  # noqa: E402


def scaled_activations(rng, m, k):
    """M x K f16 activations whose blocks of 32 are scaled by 1e-3, 1 or 30 (blocks of very different
    steps; shared with tests/quant/test_quant_gemm_int8.py)."""
    return (rng.standard_normal((m, k)) * rng.choice([1e-3, 1.0, 30.0], (m, k // 32)).repeat(32, 1)).astype(np.float16)


def int8_kernel(m, n, k, fmt, ct="f32", lda=None, ldb=None, ldc=None):
    kern = vlpc.compile(source(m, n, k, fmt, ct, lda, ldb, ldc)).kernel("g")
    assert kern.launch_info.get("a_quant") == A_QUANT and "v_dot4_i32_i8" in kern.asm  # the int8 lane kernel
    return kern


def a_traffic(st, fmt, m, k):
    """Global bytes the plan reads but B's (the emulator's counts summed over its two kernels): the
    pre-kernel reads A's f16 once (and A and the workspace pointer a wave), each GEMV workgroup the
    int8 rows and per block d_a (Q4_0, int4: and sum q) and its waves 40 bytes of kernel arguments."""
    pre = m * -(-k // QUANT_A_TILE_K)  # the pre-kernel's workgroups, 4 waves each
    meta = 4 if fmt == "q8_0" else 8
    return m * k * 2 + pre * 4 * 16 + (st.workgroups - pre) * (m * k + m * k // 32 * meta) + (st.waves - 4 * pre) * 40


def bounds(a, w, k, mag=None):
    """(the f32 bound against the quantized activations, the bound against the f16 ones): n = 16 +
    K / 32 + 16 + 2 roundings (vlpc.quant_run.quant_verdict's, the lane kernel's reduction within it;
    Q4_K: 2 K / 32, on its two terms' magnitudes ``mag``)."""
    aq = quantize_activations(a)
    n = 16 + (1 if mag is None else 2) * (k // 32) + 16 + 2
    mag = np.abs(w) if mag is None else mag
    fb = gamma(n, U32) * (np.abs(aq) @ mag.T) + U32 * (np.abs(aq) @ np.abs(w).T)
    return aq, fb, fb + activation_step(a) @ np.abs(w).T


@pytest.mark.parametrize("fmt, m, n, k, ct, padded", [
    ("q4_0", 2, 32, 1024, "f32", True),      # 16 pairs: span 16, one unit a lane
    ("q4_0", 2, 32, 7168, "f16", False),     # 112 pairs: span 16, 7 units a lane, one phase; exact sizes
    ("q8_0", 3, 32, 2048, "f16", True),      # span 32
    ("q8_0", 4, 64, 1024, "f32", False),     # span 16, 4 rows of A
    ("q4_0", 4, 16, 8192, "f32", True),      # N = 16: one wave of 2 rows a lane x 4 slots... two phases
    ("q4_0", 5, 64, 4096, "f32", False),     # M = 5: 4 rows a lane, span 16 (from M = 4)
    ("q8_0", 2, 32, 4096, "f32", True),      # M = 2: span 64
    ("q8_0", 16, 32, 1088, "f32", True),     # 17 pairs: span 16 then 1 (lanes past the units: zero B), 2 phases
    ("q4_0", 16, 32, 4096, "f16", True),     # M = 16: span 16, four phases of A
    ("q4_0", 2, 16, 1088, "f16", False),     # 17 pairs
    ("q8_0", 5, 32, 3584, "f16", True),      # 56 pairs: span 32, then 24
    # int4 groups: sum (q - z) q_a = dot(q, q_a) - z sum q_a per block of 32, the staged sum (f32)
    ("int4_g128", 2, 32, 2048, "f32", True),   # 16 groups of 4 blocks: span 16
    ("int4_g64", 3, 32, 4096, "f16", False),   # 64 groups: span 64
    ("int4_g32", 5, 32, 2048, "f32", True),    # 64 groups of one block: span 16 (the 2-piece swizzle)
    ("int4_g128", 4, 16, 2176, "f16", True),   # 17 groups: span 16, then 1
    ("int4_g128", 16, 64, 4096, "f32", True),  # M = 16: rounds of 40 KiB, each phase loaded at its end
    ("q4_0", 8, 64, 4160, "f32", True),        # M = 8 (the pre-kernel from it): 65 pairs, span 16 then 1
    ("int4_g32", 12, 32, 2048, "f16", False),  # M = 12: int4 with the pre-kernel
    # Q4_K: per sub-block d sc_j dot(q, q_a) - dmin m_j sum q_a (the pre-kernel's block sums), span 16
    ("q4_k", 2, 16, 4096, "f32", True),        # 16 super-blocks: one a lane
    ("q4_k", 3, 32, 4352, "f16", False),       # 17: span 16, then 1 (lanes past the units: zero B)
    ("q4_k", 4, 16, 14336, "f32", True),       # 56: span 16, then 8; K above 8192
])
def test_int8_lane_gemv(fmt, m, n, k, ct, padded):
    rb = row_bytes(fmt, k)
    lda, ldb, ldc = (k + 8, rb + 12, n + 3) if padded else (k, rb, n)
    kern = int8_kernel(m, n, k, fmt, ct, lda, ldb, ldc)
    rng = np.random.default_rng(m * 1000 + k)
    b = random_weights(fmt, n, k, rng)
    a, bpad, c = padded_operands(b, rb, m, k, lda, ldb, ldc, ct, scaled_activations(rng, m, k))
    dt = c.dtype
    if m == 16:  # span 16, a round of the lanes' units a phase (16 rows x 16 units x 80 or 160 bytes of LDS)
        assert kern.asm.count("A's phase in LDS") == -(-(k // LANE_UNITS[fmt][0]) // 16)
    r = vlpc.run(kern, a, bpad, c, alpha=1.0, beta=0.0, strict=True)
    assert r.verified and np.isfinite(r.c).all()
    st = r.stats
    if m >= LANE_INT8_PRE_FROM_M_OF.get(fmt, LANE_INT8_PRE_FROM_M) or k > LANE_INT8_LONG_K:  # A quantized once
        assert [x.kernel for x in kern.plan(m, n, k)] == ["g_quant_a", "g"]
        assert kern.workspace_bytes(m, ldc, k) == m * k // 32 * QUANT_A_BLOCK_BYTES
        # every weight byte once; A once (the pre-kernel), its int8 blocks and meta words once per GEMV workgroup
        assert st.global_bytes_read == n * rb + a_traffic(st, fmt, m, k)
    else:  # quantized by each workgroup: every weight byte once, A once per workgroup, 32 bytes of kernargs a wave
        assert [x.kernel for x in kern.plan(m, n, k)] == ["g"] and kern.workspace_bytes(m, ldc, k) == 0
        assert st.global_bytes_read == n * rb + st.workgroups * m * k * 2 + st.waves * 32
    w = dequantize(fmt, b).astype(np.float64)
    a16 = a[:, :k]
    aq, fb, ab = bounds(a16, w, k, weight_magnitudes(fmt, b))
    got = r.c[:, :n].astype(np.float64)
    c16 = (lambda x: 2.0 ** -11 * np.abs(x) + 2.0 ** -24) if ct == "f16" else (lambda x: 0)
    assert (np.abs(got - aq @ w.T) <= fb + c16(aq @ w.T)).all()  # the kernel's operands, f32 accumulation
    ref = a16.astype(np.float64) @ w.T
    assert (np.abs(got - ref) <= ab + c16(ref)).all()  # the f16 activations: their quantization's bound
    assert (np.abs(got - ref) > fb + c16(ref)).any()  # (which the int8 activations do need)
    c[:, :n] = rng.standard_normal((m, n)).astype(dt)
    r = vlpc.run(kern, a, bpad, c, alpha=-0.75, beta=0.5, strict=True)
    assert r.verified and r.error_ratio < 1


@pytest.mark.parametrize("fmt, m", [("q8_0", 3), ("q4_0", 3), ("q4_0", 8), ("q4_k", 2)])
def test_bit_exact_where_exact(fmt, m):
    """Activations in [1, 2) (block step 2^-6) and every weight scale 1 (Q4_K: d = 1, every 6-bit scale
    1 and minimum 0, dmin 0): each block's integer dot, its product with d_w d_a and every sum are exact
    in f32, so C is NumPy's value on the quantized activations bit for bit (M = 8: the pre-kernel's
    plan; Q4_K: with it always)."""
    n, k = 32, 2048 if fmt != "q4_k" else 4096
    kern = int8_kernel(m, n, k, fmt)
    rng = np.random.default_rng(7)
    b = random_weights(fmt, n, k, rng)
    one = np.frombuffer(np.float16(1.0).tobytes(), np.uint8)
    if fmt == "q4_k":  # d = 1, dmin = 0, scales[0..3] = 1 (sc 0..3), [4..7] = 0 (m 0..3), [8..11] = 1 (sc 4..7)
        for sb in range(k // 256):
            o = sb * 144
            b[:, o:o + 2], b[:, o + 2:o + 4] = one, 0
            b[:, o + 4:o + 16] = np.array([1] * 4 + [0] * 4 + [1] * 4, np.uint8)
    bb = {"q8_0": 34, "q4_0": 18}.get(fmt, 0)
    for blk in range(k // 32 if bb else 0):
        b[:, blk * bb:blk * bb + 2] = one
    a = (rng.uniform(1, 2, (m, k)) * rng.choice([-1, 1], (m, k))).astype(np.float16)
    r = vlpc.run(kern, a, b, np.zeros((m, n), np.float32), strict=True)
    exact = quantize_activations(a) @ dequantize(fmt, b).astype(np.float64).T
    assert r.verified and np.array_equal(r.c, exact.astype(np.float32))
    assert np.array_equal(exact, exact.astype(np.float32))


def test_quantizer():
    """The reference quantizer: q = rint(a 2^(7 - e)) clamped to [-128, 127], e frexp's exponent of the
    block's max |a| (at least -13); exact multiples of the step; within a step of a; blocks with an
    inf or NaN are NaN."""
    a = np.zeros((2, 64), np.float16)
    a[0, :32] = np.linspace(-1.5, 1.99, 32)
    a[0, 32:] = 2.0 ** -20  # subnormal f16: the step 2^-20
    a[1, 5] = np.inf
    aq = quantize_activations(a)
    assert np.all(np.isnan(aq[1, :32])) and np.all(aq[1, 32:] == 0)
    assert np.all(aq[0, 32:] == 2.0 ** -20)
    step = activation_step(a)[0, :32]
    assert np.all(step == 2.0 ** -6)  # max |a| 1.99 < 2 = 2^1: step 2^(1 - 7)
    q = aq[0, :32] / step
    assert np.array_equal(q, np.rint(q)) and q.max() <= 127 and q.min() >= -128
    assert np.all(np.abs(aq[0, :32] - a[0, :32].astype(np.float64)) <= step)
    assert quantize_activations(np.full((1, 32), 1.999, np.float16)).max() == 127 * 2.0 ** -6  # clamped at 127


@pytest.mark.parametrize("fmt", ["q8_0", "int4_g64", "q4_k"])
def test_alpha_zero_over_nan_inputs(fmt):
    """alpha = 0 drops the products (NaN activations and a NaN weight scale do not reach C); with
    alpha = 1 a block's NaN activation makes its step NaN: its row of C is NaN, as the NaN scale's
    column."""
    m, n, k = 3, 32, 2048 if fmt != "q4_k" else 4096
    kern = int8_kernel(m, n, k, fmt)
    rng = np.random.default_rng(5)
    b = random_weights(fmt, n, k, rng)
    b[5, 0:2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)
    check_nan_inputs(kern, b, m, n, k, rng, a_nan_at=7, nan_rows_of_b=[5])


def test_plan_choices():
    """M = 2 .. 16 of Q8_0 / Q4_0 / int4 take the int8 kernel (K above 8192: from M = 5); M = 1 the f16 one;
    span 16 from M = 4, else the
    largest whose round of the M rows fits a phase of LDS; M above 16, gemv = "sgpr" and an int4 format
    with a partial group do not; Q4_K at M = 2 .. 4 only (one weight row a lane)."""
    from vlpc.compiler import parse
    from vlpc.dialects.gemm import MatmulOp

    def plan(m, fmt="q4_0", k=4096, n=64, edit=lambda s: s):
        mod = parse(edit(source(m, n, k, fmt)))
        return quant_lane_plan(next(op for op in mod.walk() if isinstance(op, MatmulOp)))

    assert plan(16) == (2, 16, 4) and plan(2) == (2, 64, 1) and plan(5) == (4, 16, 4) and plan(4) == (2, 16, 4)
    assert plan(17) is None and plan(4, edit=sgpr) is None
    k1 = vlpc.compile(source(1, 64, 4096, "q4_0")).kernel("g")
    assert "a_quant" not in k1.launch_info
    # K above 8192: the f16 lane kernel up to M = 4 (modeled faster there), int8 from M = 5
    long_k = [vlpc.compile(source(m, 64, 14336, "q8_0")).kernel("g") for m in (4, 5)]
    assert "a_quant" not in long_k[0].launch_info and "A row 0 to LDS" in long_k[0].asm
    assert long_k[1].launch_info["a_quant"] == A_QUANT
    k3 = vlpc.compile(source(3, 64, 4160, "int4_g128")).kernel("g")  # a partial group: the f16 lane kernel
    assert "a_quant" not in k3.launch_info and "A row 0 to LDS" in k3.asm
    # Q4_K: int8 at M = 2 .. 4 (any K), the f16 lane kernel at M = 1, the SGPR kernel from M = 5
    assert vlpc.compile(source(2, 64, 14336, "q4_k")).kernel("g").launch_info["a_quant"] == A_QUANT
    assert plan(4, "q4_k") == (1, 16, 1) and plan(5, "q4_k") is None
    assert "a_quant" not in vlpc.compile(source(1, 64, 4096, "q4_k")).kernel("g").launch_info


@pytest.mark.parametrize("m, k, lda", [(8, 2112, 2120), (9, 1024, 1032), (16, 4096, 4096)])
def test_quant_a_pre_kernel(m, k, lda):
    """``<name>_quant_a`` alone (passes/isel/quant_act.py) over a workspace of 0xFF bytes with 64 more
    after it, A's row gaps NaN: per row and block of 32 the int8 q, the f32 step d_a and the i32 sum of q
    equal NumPy's (vlpc.quant_run.quantize_activations, activation_step) bit for bit, a block holding
    an inf or a NaN has d_a NaN, K past a tile of the pre-kernel (2112 = 2048 + 64) and nothing
    written past the workspace; the workspace is M ceil(K / 32) 40 bytes."""
    from vlpc.runtime import get_device, load_code_object

    n = 32
    rb = row_bytes("q4_0", k)
    kern = vlpc.compile(source(m, n, k, "q4_0", "f32", lda, rb, n)).kernel("g")
    step = kern.plan(m, n, k)[0]
    assert step.kernel == "g_quant_a" and step.block == (256, 1, 1)
    rng = np.random.default_rng(k + m)
    a = np.full((m, lda), np.nan, np.float16)
    a[:, :k] = (rng.standard_normal((m, k)) * rng.choice([2.0 ** -20, 1e-3, 1.0, 1e4], (m, k // 32)).repeat(32, 1)
                ).astype(np.float16)
    a[0, 40] = np.inf  # block 1 of row 0
    a[1, 70] = np.nan  # block 2 of row 1
    a[-1, k - 32:k] = 1.999  # clamped at 127
    ws_bytes = m * k // 32 * QUANT_A_BLOCK_BYTES
    assert kern.workspace_bytes(m, n, k) == ws_bytes
    dev = get_device("emulator", strict=True)
    host = [a.reshape(-1), np.zeros(n * rb, np.uint8), np.zeros(m * n, np.float32)]
    bufs = [dev.upload(x) for x in host]
    ws = dev.upload(np.full(ws_bytes + 64, 0xFF, np.uint8))
    args = [*bufs, *(np.int32(v) for v in (m, n, k, lda, rb, n)), np.float32(1), np.float32(0), ws]
    assert step.grid == (m, -(-k // QUANT_A_TILE_K), 1)
    dev.launch(load_code_object(kern.code_object), step.kernel, grid=step.grid, block=step.block,
               args=args, buffer_sizes={0: a.nbytes, 1: host[1].nbytes, 2: host[2].nbytes, 11: ws_bytes + 64})
    raw = dev.download(ws, np.uint8, (ws_bytes + 64,))
    assert (raw[ws_bytes:] == 0xFF).all(), "the pre-kernel wrote past its workspace"
    q = raw[:m * k].view(np.int8).reshape(m, k // 32, 32).astype(np.float64)
    meta = raw[m * k:ws_bytes].reshape(m, k // 32, 8)
    d_a = meta[..., :4].copy().view(np.float32)[..., 0].astype(np.float64)
    sums = meta[..., 4:].copy().view(np.int32)[..., 0]
    aq = quantize_activations(a[:, :k]).reshape(m, k // 32, 32)
    step_np = activation_step(a[:, :k]).reshape(m, k // 32, 32)[..., 0]
    finite = np.isfinite(aq[..., 0])
    assert not finite[0, 1] and not finite[1, 2] and finite.sum() == finite.size - 2
    assert np.isnan(d_a[~finite]).all()
    assert np.array_equal(d_a[finite], step_np[finite])
    assert np.array_equal(q[finite], (aq / step_np[..., None])[finite])
    assert np.array_equal(sums[finite], q.sum(-1)[finite].astype(np.int32))
    assert q[-1, -1].max() == 127


def test_plan_in_the_hip_launcher_and_run_output(tmp_path, capsys):
    """M = 8: the C launcher (``vlpc compile --emit hip-launcher``) plans the pre-kernel first with the
    workspace ``CompiledKernel.workspace_bytes`` gives (M ceil(K / 32) 40 bytes); ``vlpc run`` names
    the plan and its workspace, and verifies."""
    from vlpc.cli import main
    from vlpc.hip_launcher import generate

    m, n, k = 8, 64, 2112
    module = vlpc.compile(source(m, n, 4160, "q4_0"))
    _, c_src = generate(module, str(tmp_path / "launch"), "test")
    assert 'steps[s].kernel = "g_quant_a"' in c_src
    assert "ws = (size_t)(m) * (size_t)((k + 32 - 1) / 32) * 40;" in c_src
    assert c_src.index('"g_quant_a"; steps[s].grid[0]') < c_src.index('"g"; steps[s].grid[0]')
    f = tmp_path / "g.mlir"
    f.write_text(source(m, n, k * 2, "q8_0"))
    assert main(["run", str(f)]) == 0
    out = capsys.readouterr().out
    assert f"plan: g_quant_a grid ({m}, 3, 1), then g grid" in out
    assert f"workspace {m * 2 * k // 32 * 40} bytes" in out and "verification passed" in out
