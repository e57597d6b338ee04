"""The f16 x GGUF Q8_0/Q4_0 GEMV (``b_format``; passes/isel/quant.py, docs/quantized.md).

The oracle is the `gguf` package: its quantizer makes the weights, its dequantizer the float64
reference (vlpc/quant_run.py; bound gamma_n(2^-24) with n = 16 + K/32 + L + 2).  Strict emulator,
exactly sized buffers: A's row gaps NaN, B's gaps after each row's last block garbage (0xB5), C's
NaN and checked bit for bit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import vlpc  # noqa: E402
from vlpc.dialects.gemm import B_FORMATS  # noqa: E402
from vlpc.errors import DiagnosticError, VlpcError  # noqa: E402
from vlpc.quant_run import B_PAD, dequantize, read_gguf_tensor, row_bytes  # noqa: E402

QT = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0,
      "q4_k": gguf.GGMLQuantizationType.Q4_K}


def source(m, n, k, fmt, ct="f32", lda=None, ldb=None, ldc=None, epilogue=()) -> str:
    """A b_format matmul: A m x k f16 (lda), B n rows of row_bytes (ldb bytes), C m x n (ldc)."""
    rb = row_bytes(fmt, k)

    def mem(rows, cols, ld, t):
        lay = f", strided<[{ld}, 1]>" if ld is not None and ld != cols else ""
        return f"memref<{rows}x{cols}x{t}{lay}>"
    ms = "?" if m is None else m
    ta, tb, tc = mem(ms, k, lda, "f16"), mem(n, rb, ldb, "i8"), mem(ms, n, ldc, ct)
    epi = f', epilogue = [{", ".join(f"{chr(34)}{x}{chr(34)}" for x in epilogue)}]' if epilogue else ""
    return (f"func.func @g(%x: {ta}, %w: {tb}, %y: {tc}, %alpha: f32, %beta: f32) {{\n"
            f'  gemm.matmul %x, %w, %y, %alpha, %beta {{layout = "NT", b_format = "{fmt}"{epi}}}\n'
            f"      : {ta}, {tb}, {tc}, f32, f32\n  func.return\n}}\n")


def sgpr(src: str) -> str:
    """``src`` with ``gemv = "sgpr"``: the SGPR kernel (a lane per weight row) where the lane-along-K
    GEMV (passes/isel/quant_lane.py, tests/quant/test_quant_lane.py) would apply."""
    return src.replace('b_format = ', 'gemv = "sgpr", b_format = ', 1)


def test_formats_are_ggufs():
    """Block sizes and bytes as gguf's table, and the row bytes the IR wants."""
    for fmt, (block, size) in B_FORMATS.items():
        if fmt.startswith("int4_"):  # vlpc's AWQ/GPTQ-style groups, not GGUF's (tests/quant/test_quant_int4.py)
            continue
        assert gguf.GGML_QUANT_SIZES[QT[fmt]] == (block, size)
        w = np.random.default_rng(0).standard_normal((3, 256)).astype(np.float32)
        if fmt != "q4_k":  # (gguf has no Q4_K quantizer: tests/quant/test_quant_k.py)
            assert gguf.quants.quantize(w, QT[fmt]).shape == (3, row_bytes(fmt, 256))


@pytest.mark.parametrize("fmt, m, n, k, ct, local, iters", [
    ("q8_0", 1, 80, 2048, "f32", 8, 4),    # 8 groups x 4 block pairs: the loop once, two pairs after it; N edge;
    ("q4_0", 1, 80, 2048, "f32", 8, 4),    # one row of A: one pair ahead
    ("q4_0", 4, 64, 3072, "f16", 8, 6),    # 48 pairs over 8 groups, the loop twice; f16 C
    ("q8_0", 16, 64, 4096, "f32", 8, 8),   # 16 rows: 4 batches of A per block; 8 groups (72 VGPRs: 16 do not fit a CU)
    ("q4_0", 2, 64, 320, "f16", 1, 5),     # 5 pairs: one before the loop (odd), no local split
    ("q8_0", 1, 64, 1024, "f32", 8, 2),    # 2 pairs a group: no loop
    ("q8_0", 3, 70, 64, "f16", 1, 1),      # one block pair
])
def test_gemv_against_gguf(fmt, m, n, k, ct, local, iters):
    """Padded A (lda), B (ldb: garbage after each row's last block) and C (NaN columns past N):
    beta = 0 over a C that is all NaN, then alpha and beta nonzero; C's padding unchanged."""
    rb = row_bytes(fmt, k)
    lda, ldb, ldc = k + 6, rb + 12, n + 3
    # (one workgroup's K; a local split given: the SGPR kernel, not passes/isel/quant_lane.py's)
    kern = vlpc.compile(source(m, n, k, fmt, ct, lda, ldb, ldc), split_k=1, local_split=local).kernel("g")
    assert kern.local_split == local and kern.launch_info["b_format"] == fmt
    asm = kern.asm
    looped = iters - iters % 2 - 2 > 0
    assert ("_block_pairs" in asm) == looped
    # B two pairs ahead (QUANT_B_AHEAD): the first two pairs' loads, an odd count's reload before the
    # loop, two in it
    sets = 1 if iters == 1 else 2 + (iters % 2) + 2 * looped
    b_loads = [ln for ln in asm.splitlines() if "; B blocks" in ln]
    assert len(b_loads) == (2 * B_FORMATS[fmt][1] // 16 + 1) * sets
    rng = np.random.default_rng(1)
    w = rng.standard_normal((n, k)).astype(np.float32)
    check_padded(kern, fmt, gguf.quants.quantize(w, QT[fmt]), ct, lda, ldb, ldc, rng)


def padded_operands(b, rb, m, k, lda, ldb, ldc, ct, a_values):
    """(A, B, C) as stored with padding: A's M x K ``a_values`` in rows of lda (the gaps NaN), B's rows of
    ``rb`` bytes (``b``) in rows of ldb (garbage ``B_PAD`` after each), C M x ldc all NaN (f32 or f16)."""
    bpad = np.full((b.shape[0], ldb), B_PAD, np.uint8)
    bpad[:, :rb] = b
    a = np.full((m, lda), np.nan, np.float16)
    a[:, :k] = a_values
    return a, bpad, np.full((m, ldc), np.nan, np.float32 if ct == "f32" else np.float16)


def check_padded(kern, fmt, b, ct, lda, ldb, ldc, rng, deq=None):
    """Run ``kern`` (M x K activations, B ``b`` of N rows) with padded A (NaN gaps), B (garbage after each
    row's last block) and C (NaN columns past N): beta = 0 over a C that is all NaN, then alpha and beta
    nonzero; every weight byte read once; C against gguf's dequantized weights (or ``deq(b)``'s)."""
    m, n, k = kern.launch_info["static_m"], kern.launch_info["static_n"], kern.launch_info["static_k"]
    rb = row_bytes(fmt, k)
    a, bpad, c = padded_operands(b, rb, m, k, lda, ldb, ldc, ct, rng.standard_normal((m, k)).astype(np.float16))
    dt = c.dtype
    r = vlpc.run(kern, a, bpad, c, alpha=1.0, beta=0.0, strict=True)
    assert r.verified and np.isfinite(r.c).all()
    # every weight byte read once (per row tile of A: the prefill GEMM's), A's tile once per workgroup, 32
    # bytes of kernel arguments per wave (beta = 0: C not read)
    st, mt = r.stats, min(m, kern.launch_info["macro_m"])
    assert st.global_bytes_read == -(-m // mt) * n * rb + st.workgroups * mt * k * 2 + st.waves * 32
    w = deq(b) if deq else gguf.quants.dequantize(b, QT[fmt])
    ref = (a[:, :k].astype(np.float64) @ w.astype(np.float64).T)
    assert np.allclose(r.c, ref, rtol=2e-3 if ct == "f16" else 1e-5, atol=1e-3)
    c[:, :n] = rng.standard_normal((m, n)).astype(dt)
    r = vlpc.run(kern, a, bpad, c, alpha=-0.75, beta=0.5, strict=True)
    assert r.verified and r.error_ratio < 1


@pytest.mark.parametrize("m, n, k, cus, plan", [
    (1, 4096, 4096, 60, (4, 4)),     # 64 workgroups on 60 CUs: K also over 4 workgroups, 4 groups each
    (4, 4096, 14336, 60, (4, 4)),
    (16, 4096, 14336, 60, (1, 16)),  # from M = 8: 16 groups, no split
    (1, 14336, 4096, 60, (1, 8)),    # 224 workgroups: no split across workgroups
    (8, 14336, 4096, 60, (1, 16)),
    (1, 4096, 4096, 30, (1, 8)),
    (1, 256, 384, 60, (2, 1)),       # 6 block pairs: L = 2 divides them, halved to 1 with S = 2
])
def test_automatic_plan(m, n, k, cus, plan):
    """quant_plan / quant_split (dialects/gemm.py): L = 8 for M < 8, 16 from 8; split-K over S = 4
    workgroups (L halved) below 2 x CUs workgroups; S x L divides the K / 64 block pairs."""
    kern = vlpc.compile(sgpr(source(m, n, k, "q4_0")), cus=cus).kernel("g")
    assert (kern.split_k, kern.local_split) == plan


def test_alpha_zero_over_nan_inputs():
    """alpha = 0 drops the products: NaN activations and a NaN block scale do not reach C."""
    m, n, k = 2, 64, 128
    kern = vlpc.compile(source(m, n, k, "q8_0")).kernel("g")
    rng = np.random.default_rng(2)
    b = gguf.quants.quantize(rng.standard_normal((n, k)).astype(np.float32), QT["q8_0"])
    b[5, 0:2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)  # row 5, block 0's scale: NaN
    check_nan_inputs(kern, b, m, n, k, rng, a_nan_at=7, nan_rows_of_b=[5])


def check_nan_inputs(kern, b, m, n, k, rng, a_nan_at: int, nan_rows_of_b: list[int]):
    """alpha = 0 over NaN activations (row 1 of A, column ``a_nan_at``) and NaN scales (the rows
    ``nan_rows_of_b`` of B) leaves beta C exactly; with alpha = 1 those NaNs reach exactly their
    columns and row 1 (shared by the quantized formats' tests)."""
    a = rng.standard_normal((m, k)).astype(np.float16)
    a[1, a_nan_at] = np.nan
    c = rng.standard_normal((m, n)).astype(np.float32)
    r = vlpc.run(kern, a, b, c, alpha=0.0, beta=2.0, strict=True)
    assert r.verified and np.array_equal(r.c, 2.0 * c)
    r = vlpc.run(kern, a, b, c, alpha=1.0, beta=0.0, strict=True, verify=False)
    assert np.isnan(r.c[:, nan_rows_of_b]).all() and np.isnan(r.c[1]).all() and np.isfinite(r.c[0, :5]).all()


@pytest.mark.parametrize("m", [1, 3, 5, 16, 19])
def test_m_at_launch(m):
    """M given at launch: the 16-row kernel (16 groups), or for M < 16 the row-narrow companion
    of the most rows not above M (8, 4, 2, 1; unsplit); a last row tile past M moved up."""
    n, k = 64, 1024
    kern = vlpc.compile(source(None, n, k, "q4_0", "f16")).kernel("g")
    assert kern.launch_info["macro_m"] == 16 and (kern.split_k, kern.local_split) == (1, 16)
    # (and the prefill GEMM's 32-row companion for M >= 32: tests/quant/test_quant_gemm.py)
    assert set(kern.companions) == {f"g_rows{r}" for r in (8, 4, 2, 1)} | {"g_rows32"}
    r = vlpc.run(kern, m=m, beta=0.5, strict=True, seed=m)
    assert r.verified and r.c.shape == (m, n)
    rows = kern.rows_kernel(m)  # the companion keeps a split of K over wavefront groups (quant_plan)
    assert (rows.local_split, rows.launch(m, n, k).block[0]) == ((8, 512) if m < 16 else (16, 1024)) if rows \
        else m >= 16


@pytest.mark.parametrize("ct", ["f32", "f16"])
def test_silu_epilogue(ct):
    """silu(alpha x.W^T + beta C) on the quantized GEMV, checked with vlpc/verify.py's silu bound;
    against x sigmoid(x) computed here too."""
    m, n, k = 2, 64, 256
    kern = vlpc.compile(source(m, n, k, "q4_0", ct, epilogue=("silu",))).kernel("g")
    assert "v_exp_f32" in kern.asm and "v_rcp_f32" in kern.asm
    rng = np.random.default_rng(3)
    b = gguf.quants.quantize(rng.standard_normal((n, k)).astype(np.float32), QT["q4_0"])
    a = rng.standard_normal((m, k)).astype(np.float16)
    r = vlpc.run(kern, a, b, np.zeros((m, n), np.float16 if ct == "f16" else np.float32), beta=0.0, strict=True)
    x = a.astype(np.float64) @ dequantize("q4_0", b).T
    assert r.verified and np.allclose(r.c, x / (1 + np.exp(-x)), rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("src, match", [
    (source(1, 64, 128, "q8_0").replace('"q8_0"', '"q5_1"'), "unsupported b_format 'q5_1'"),
    (source(1, 64, 96, "q8_0"), "K=96: vlpc's q8_0 GEMV reads blocks in pairs"),
    (source(1, 64, 128, "q8_0").replace("64x136xi8", "64x134xi8").replace("64x136", "64x134"),
     "B has rows of 134 bytes; q8_0 with K=128 needs 4 blocks of 34 bytes = 136 bytes"),
    (source(1, 64, 128, "q4_0", ldb=74), "ldb=74 bytes"),
    (source(1, 64, 128, "q4_0", lda=129), "lda=129"),
    (source(1, 64, 128, "q4_0").replace('layout = "NT"', 'layout = "NN"'), "needs layout NT"),
    (source(1, 64, 128, "q4_0").replace("x128xf16", "x128xf32"), "A of a q4_0 product holds f16"),
])
def test_located_errors(src, match):
    with pytest.raises(DiagnosticError, match=match) as e:
        vlpc.compile(src)
    assert "<input>:2:" in str(e.value).splitlines()[0]


def test_k_not_a_multiple_of_the_block():
    src = source(1, 64, 128, "q8_0").replace("1x128xf16", "1x100xf16")
    with pytest.raises(DiagnosticError, match="K=100 is not a multiple of 32: a GGUF q8_0 row is whole blocks"):
        vlpc.compile(src)


def test_refused_plans():
    src = source(4, 64, 1024, "q8_0")  # 16 block pairs
    with pytest.raises(VlpcError, match="split-k=3 x local-split=1 does not divide the 16 block pairs of K=1024"):
        vlpc.compile(src, split_k=3)
    with pytest.raises(VlpcError, match="local-split=32 makes 2048 work-items"):
        vlpc.compile(src, local_split=32)


@pytest.mark.parametrize("fmt, m, split, local", [("q4_0", 4, 2, 4), ("q8_0", 1, 4, 2)])
def test_split_k_across_workgroups(fmt, m, split, local):
    """--split-k S (workspace mode): each workgroup z takes K slice z of S x L, the dot kernels' reduce
    kernel sums the f32 partials in slice order and applies alpha, beta (beta = 0 over NaN C)."""
    n, k = 80, 2048
    kern = vlpc.compile(source(m, n, k, fmt, "f16"), split_k=split, local_split=local).kernel("g")
    assert (kern.split_k, kern.local_split) == (split, local) and set(kern.companions) == {"g_reduce"}
    r = vlpc.run(kern, c=np.full((m, n), np.nan, np.float16), beta=0.0, strict=True)
    assert r.verified and np.isfinite(r.c).all()
    r = vlpc.run(kern, beta=0.5, alpha=2.0, strict=True, seed=1)
    assert r.verified


def _write_gguf(path, tensors: dict) -> None:
    wr = gguf.GGUFWriter(str(path), "llama")
    for name, (arr, t) in tensors.items():
        wr.add_tensor(name, arr, raw_dtype=t)
    wr.write_header_to_file()
    wr.write_kv_data_to_file()
    wr.write_tensors_to_file()
    wr.close()


@pytest.fixture
def model(tmp_path):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((96, 128)).astype(np.float32)
    q8, q4 = gguf.quants.quantize(w, QT["q8_0"]), gguf.quants.quantize(w, QT["q4_0"])
    path = tmp_path / "m.gguf"
    _write_gguf(path, {"blk.0.ffn_up.weight": (q8, QT["q8_0"]), "blk.0.ffn_gate.weight": (q4, QT["q4_0"]),
                       "token_embd.weight": (w, None)})
    return path, q8, q4


def test_read_gguf_tensor_by_name(model, tmp_path):
    path, q8, q4 = model
    assert read_gguf_tensor(str(path), "blk.0.ffn_up.weight")[0] == "q8_0"
    assert np.array_equal(read_gguf_tensor(str(path), "blk.0.ffn_up.weight")[1], q8)
    assert np.array_equal(read_gguf_tensor(str(path), "blk.0.ffn_gate.weight")[1], q4)
    with pytest.raises(VlpcError, match="no tensor 'blk.1.ffn_up.weight'"):
        read_gguf_tensor(str(path), "blk.1.ffn_up.weight")
    with pytest.raises(VlpcError, match="is F32; vlpc's quantized GEMV takes Q8_0, Q4_0"):
        read_gguf_tensor(str(path), "token_embd.weight")
    data = path.read_bytes()
    for name, blob in (("trunc", data[:len(data) // 2]), ("short", data[:40]), ("magic", b"GGUX" + data[4:])):
        bad = tmp_path / f"{name}.gguf"
        bad.write_bytes(blob)
        with pytest.raises(VlpcError, match="not a readable GGUF file, truncated or corrupted"):
            read_gguf_tensor(str(bad), "blk.0.ffn_up.weight")


def test_cli_weights(model, tmp_path):
    """vlpc run --weights FILE:TENSOR runs the tensor as B; bad files and names: one line, exit 1."""
    path, _, _ = model
    src = tmp_path / "up.mlir"
    src.write_text(source(None, 96, 128, "q8_0", epilogue=("silu",)))
    cmd = [sys.executable, "-m", "vlpc.cli", "run", str(src), "--m", "3", "--strict"]
    p = subprocess.run([*cmd, "--weights", f"{path}:blk.0.ffn_up.weight"], capture_output=True, text=True)
    assert p.returncode == 0 and "verification passed" in p.stdout, p.stdout + p.stderr
    sw = tmp_path / "swiglu.mlir"  # gate and up from two tensors (here the same one twice)
    sw.write_text(_swiglu_source(1, 96, 128, "q4_0"))
    p = subprocess.run([*cmd[:4], str(sw), "--strict", "--weights",
                        f"{path}:blk.0.ffn_gate.weight,blk.0.ffn_gate.weight"], capture_output=True, text=True)
    assert p.returncode == 0 and "verification passed" in p.stdout, p.stdout + p.stderr
    p = subprocess.run([*cmd[:4], str(sw), "--weights", f"{path}:blk.0.ffn_gate.weight"], capture_output=True, text=True)
    assert p.returncode == 1 and "expected FILE.gguf:GATE,UP" in p.stderr, p.stderr
    (tmp_path / "t.gguf").write_bytes(path.read_bytes()[:300])
    for spec, match in ((f"{path}:blk.0.ffn_gate.weight", "is Q4_0, kernel g takes Q8_0"),
                        (f"{tmp_path / 't.gguf'}:blk.0.ffn_up.weight", "truncated or corrupted"),
                        (str(path), "expected FILE.gguf:TENSOR")):
        p = subprocess.run([*cmd, "--weights", spec], capture_output=True, text=True)
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and match in p.stderr, p.stderr


def _plain(m, n, k, ab, ct, epilogue, scales=False) -> str:
    s = "f32" if ab != "i8" or ct != "i32" else "i32"
    ta, tb, tc = f"memref<{m}x{k}x{ab}>", f"memref<{n}x{k}x{ab}>", f"memref<{m}x{n}x{ct}>"
    sc_args = f", %sr: memref<{m}xf32>, %sc: memref<{n}xf32>" if scales else ""
    sc_op = f" scales(%sr, %sc : memref<{m}xf32>, memref<{n}xf32>)" if scales else ""
    epi = ", ".join(f'"{x}"' for x in epilogue)
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {s}, %beta: {s}{sc_args}) {{\n"
            f'  gemm.matmul %a, %b, %c, %alpha, %beta{sc_op} {{layout = "NT", epilogue = [{epi}]}}\n'
            f"      : {ta}, {tb}, {tc}, {s}, {s}\n  func.return\n}}\n")


@pytest.mark.parametrize("m, n, k, ab, ct, scales, options", [
    (64, 128, 64, "f32", "f32", False, {}),                 # the sqc kernel
    (40, 96, 256, "f32", "f32", False, {"split_k": 2}),     # split-K: silu in the reduce kernel
    (4, 128, 128, "f16", "f16", False, {}),                 # the f16 decode GEMV, f16 C
    (32, 64, 64, "i8", "f32", True, {}),                    # dequantized int8
])
def test_silu_on_existing_kernels(m, n, k, ab, ct, scales, options):
    """epilogue = ["silu"] on the f32 and dot kernels: vlpc.run's check (vlpc/verify.py's silu
    reference x sigmoid(x) and bound), and large |x| (exp overflow: silu(-x) -> -0, silu(x) -> x)."""
    kern = vlpc.compile(_plain(m, n, k, ab, ct, ("silu",), scales), **options).kernel("g")
    r = vlpc.run(kern, beta=0.5, strict=True, seed=5)
    assert r.verified
    if ab == "f32":
        a = np.zeros((m, k), np.float32)
        a[:, 0] = 1.0
        b = np.zeros((n, k), np.float32)
        b[:, 0] = np.linspace(-300, 300, n, dtype=np.float32)
        r = vlpc.run(kern, a, b, np.zeros((m, n), np.float32), beta=0.0, strict=True)
        x = b[:, 0].astype(np.float64)
        with np.errstate(over="ignore"):
            # (the argument of v_exp_f32, -x log2 e, carries its rounding into the exponential: ~|x| 2^-24)
            assert r.verified and np.allclose(r.c[0], x / (1 + np.exp(-x)), rtol=1e-5, atol=1e-30)


def test_silu_needs_the_whole_sum():
    with pytest.raises(VlpcError, match="the silu epilogue needs the complete sum"):
        vlpc.compile(_plain(64, 128, 256, "f32", "f32", ("silu",)), split_k=2, split_mode="atomic")
    with pytest.raises(VlpcError, match="the silu epilogue computes in f32"):
        vlpc.compile(_plain(32, 64, 64, "f64", "f64", ("silu",)).replace("%alpha: f32, %beta: f32", "%alpha: f64, %beta: f64")
                     .replace(", f32, f32\n", ", f64, f64\n"))


def _with_bias(src: str, length: int, t: str = "f16") -> str:
    return (src.replace("%beta: f32) {", f"%beta: f32, %bias: memref<{length}x{t}>) {{")
               .replace("%alpha, %beta {", f"%alpha, %beta bias(%bias : memref<{length}x{t}>) {{"))


@pytest.mark.parametrize("epilogue, length, split", [(("bias_col", "silu"), 80, 1), (("bias_row", "relu"), 3, 2)])
def test_bias_epilogue(epilogue, length, split):
    """bias_row / bias_col (an f16 vector, as for the f16 dot kernels) then silu or relu, in f32
    before f16 C's rounding; with split-K in the reduce kernel."""
    kern = vlpc.compile(_with_bias(source(3, 80, 1024, "q4_0", "f16", epilogue=epilogue), length),
                        split_k=split).kernel("g")
    bias = np.linspace(-4, 4, length).astype(np.float16)
    r = vlpc.run(kern, beta=0.5, bias=bias, strict=True)
    assert r.verified and np.array_equal(r.inputs["bias"], bias)
    with pytest.raises(VlpcError, match=f"bias must be a vector of {length} float16 values"):
        vlpc.run(kern, bias=np.zeros(length, np.float32))
    with pytest.raises(DiagnosticError, match="bias must be a 1-D memref of f16, got memref<80xf32> "
                       r"\(the bias of an f16 x q4_0 product is f16"):
        vlpc.compile(_with_bias(source(3, 80, 1024, "q4_0", epilogue=("bias_col",)), 80, "f32"))


def test_api_operand_errors():
    """vlpc.run: B must be the tensor's bytes (uint8 N x row bytes), A f16; one-line errors."""
    kern = vlpc.compile(source(1, 64, 128, "q8_0")).kernel("g")
    with pytest.raises(VlpcError, match=r"B must be the tensor's bytes, uint8 of shape \(64, 136\)"):
        vlpc.run(kern, b=np.zeros((64, 128), np.float16))
    with pytest.raises(VlpcError, match=r"B must be the tensor's bytes, uint8 of shape \(64, 136\)"):
        vlpc.run(kern, b=np.zeros((64, 130), np.uint8))
    with pytest.raises(VlpcError, match="A must be f16 activations, got float32"):
        vlpc.run(kern, a=np.zeros((1, 128), np.float32))
    with pytest.raises(VlpcError, match="takes no scales"):
        vlpc.run(kern, scales=(np.ones(1, np.float32), np.ones(64, np.float32)))


def _swiglu_source(m, n, k, fmt, ct="f32", extra=()) -> str:
    rb = row_bytes(fmt, k)
    return source(m, n, k, fmt, ct, epilogue=("swiglu", *extra)).replace(f"memref<{n}x{rb}xi8>",
                                                                         f"memref<{2 * n}x{rb}xi8>")


@pytest.mark.parametrize("fmt, m, n, k, ct, extra", [
    ("q4_0", 1, 80, 2048, "f32", ()),        # the loop; N edge
    ("q8_0", 3, 64, 1024, "f16", ("relu",)),  # f16 C, another epilogue after it
    ("q4_0", None, 64, 512, "f32", ()),       # M at launch (5: the 4-row companion, two row tiles)
])
def test_swiglu(fmt, m, n, k, ct, extra):
    """epilogue = ["swiglu", ...]: B holds the gate's N rows then the up projection's N rows (as one
    tensor); C = alpha * silu(x Wg^T) * (x Wu^T) + beta * C in one launch, checked against gguf's
    dequantized weights (vlpc/quant_run.py's swiglu_reference and bound) and computed here too."""
    kern = vlpc.compile(_swiglu_source(m, n, k, fmt, ct, extra)).kernel("g")
    assert kern.split_k == 1 and "v_exp_f32" in kern.asm
    mm = 5 if m is None else m
    rng = np.random.default_rng(6)
    wg, wu = (rng.standard_normal((n, k)).astype(np.float32) for _ in range(2))
    b = np.concatenate([gguf.quants.quantize(wg, QT[fmt]), gguf.quants.quantize(wu, QT[fmt])])
    a = rng.standard_normal((mm, k)).astype(np.float16)
    dt = np.float16 if ct == "f16" else np.float32
    r = vlpc.run(kern, a, b, np.full((mm, n), np.nan, dt), beta=0.0, strict=True)
    assert r.verified
    g = a.astype(np.float64) @ dequantize(fmt, b[:n]).T
    u = a.astype(np.float64) @ dequantize(fmt, b[n:]).T
    want = g / (1 + np.exp(-g)) * u
    if extra:
        want = np.maximum(want, 0)
    assert np.allclose(r.c, want, rtol=2e-3 if ct == "f16" else 1e-4, atol=1e-3)
    r = vlpc.run(kern, a, b, np.ones((mm, n), dt), alpha=0.5, beta=-1.0, strict=True)
    assert r.verified


@pytest.mark.parametrize("src, options, match", [
    (_swiglu_source(1, 64, 128, "q4_0").replace('"swiglu"', '"relu", "swiglu"'), {},
     "swiglu fuses a gate and an up projection of quantized weights: the first epilogue operation"),
    (source(1, 64, 128, "q4_0", epilogue=("swiglu",)), {}, "swiglu: B holds the gate's N rows then the up"),
    (_swiglu_source(1, 64, 1024, "q4_0"), {"split_k": 2}, "split-k=2: a swiglu GEMV sums its gate and up"),
    (_plain(4, 64, 64, "f16", "f32", ("swiglu",)), {}, "swiglu fuses a gate and an up projection"),
])
def test_swiglu_refused(src, options, match):
    with pytest.raises(VlpcError, match=match):
        vlpc.compile(src, **options)
