"""The A-transpose pre-kernel of the f16/int8 dot kernels (passes/isel/transpose.py):
A stored K x M (layouts TN, TT) copied into an M x K workspace by ``<name>_transpose``, then
the NT/NN dot kernel reading the copy.  Strict emulator, exactly sized buffers with NaN /
garbage padding (A's odd leading dimensions included), a workspace the device hands out full
of garbage (0xFF bytes: f16 NaN, int8 -1), expected values from NumPy (tests/dot_support.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vlpc
from vlpc.runtime import get_device, load_code_object

from dot_support import PAD, NP, check_strided_batch, garbage_device, layout_source, check_c as check, exact, launch_dot, reference, rows_of

def src(layout, m, n, k, lda, ldb, ldc, ab, ct, dequant=False, batch=None):
    """gemm.matmul with A stored K x M (layouts T?); a None size is '?' (given at launch); a
    batch gets :func:`batch_strides`."""
    strides = None if batch is None else batch_strides(m, n, k, lda, ldb, ldc, layout)
    return layout_source(layout, m, n, k, lda, ldb, ldc, ab, ct, dequant=dequant, batch=batch, strides=strides)


def batch_strides(m, n, k, lda, ldb, ldc, layout):
    """Odd gaps between the batch entries (A's stride not a multiple of 2 or 4)."""
    b_rows = n if layout[1] == "T" else k
    return k * lda + 3, b_rows * ldb + 4, m * ldc + 5


def operands(layout, m, n, k, ab, ct, rng, nb=None):
    shape = (lambda *s: s) if nb is None else (lambda *s: (nb, *s))
    if ab == "i8":
        at = rng.integers(-128, 128, shape(k, m)).astype(np.int8)
        b = rng.integers(-128, 128, shape(n, k) if layout[1] == "T" else shape(k, n)).astype(np.int8)
    else:
        at = rng.standard_normal(shape(k, m)).astype(np.float16)
        b = rng.standard_normal(shape(n, k) if layout[1] == "T" else shape(k, n)).astype(np.float16)
    if ct == "i32":
        c = rng.integers(-2**31, 2**31, shape(m, n)).astype(np.int32)
    else:
        c = rng.standard_normal(shape(m, n)).astype(NP[ct])
    return at, b, c


CASES = [  # layout, M, N, K, lda, ldb, ldc, A/B, C, dequant, options, sizes at launch
    ("TT", 37, 70, 45, 39, 48, 70, "f16", "f32", False, {}, False),   # odd M, odd lda, K odd
    ("TN", 35, 64, 33, 37, 66, 67, "f16", "f16", False, {}, False),   # f16 C, B K x N
    ("TT", 37, 70, 45, 39, 48, 70, "f16", "f32", False, {}, True),    # memref<?x?xf16>
    ("TN", 70, 100, 37, 71, 103, 101, "f16", "f32", False, {"split_k": 3}, False),  # + split-K
    ("TT", 37, 70, 45, 39, 48, 70, "i8", "i32", False, {}, False),    # M % 4 = 1, lda odd
    ("TN", 50, 64, 70, 53, 64, 64, "i8", "i32", False, {}, True),     # sizes at launch, B K x N
    ("TT", 38, 64, 41, 41, 44, 64, "i8", "f32", True, {}, False),     # W8A8, C f32
    ("TN", 36, 64, 203, 37, 64, 65, "i8", "i32", False, {"split_k": 2}, False),  # + split-K
    ("TT", 68, 100, 37, 72, 40, 101, "i8", "i32", False, {}, False),  # packable: the rule copies
    ("TT", 5, 64, 1030, 7, 1032, 64, "f16", "f32", False, {}, False),  # the decode GEMV plan (local split)
]


@pytest.mark.parametrize("layout, m, n, k, lda, ldb, ldc, ab, ct, dequant, opts, dynamic", CASES)
def test_transpose_plan(layout, m, n, k, lda, ldb, ldc, ab, ct, dequant, opts, dynamic):
    """alpha/beta against NumPy, C's padding kept bit for bit; alpha = 0 over NaN (f16) A;
    beta = 0 over a NaN / garbage C; the workspace handed out full of garbage."""
    dims = (None,) * 6 if dynamic else (m, n, k, lda, ldb, ldc)
    kern = vlpc.compile(src(layout, *dims, ab, ct, dequant), **opts).kernel("g")
    assert kern.launch_info["plan"].startswith("g_transpose,g") and kern.transpose_kernel() is not None
    assert kern.split_k == opts.get("split_k", 1)
    steps = kern.plan(m, n, k)
    assert steps[0].kernel == "g_transpose" and steps[0].grid == (-(-m // 64), -(-k // 64), 1)
    split = kern.split_k
    p = 2 if ab == "f16" else 4
    assert kern.workspace_bytes(m, ldc, k) == (split * m * ldc * 4 if split > 1 else 0) + m * -(-k // p) * p * (
        2 if ab == "f16" else 1)
    rng = np.random.default_rng(21)
    at, b, c = operands(layout, m, n, k, ab, ct, rng)
    scales = ((rng.uniform(0.01, 0.1, m).astype(np.float32), rng.uniform(0.01, 0.1, n).astype(np.float32))
              if dequant else None)
    af, bf = exact(at, lda, PAD[ab]), exact(b, ldb, PAD[ab])
    bt = b if layout[1] == "T" else b.T.copy()
    dev = garbage_device()
    cases = [(0.75 if ct != "i32" else 3, -1.5 if ct != "i32" else -2, c),
             (1 if ct == "i32" else 1.0, 0, np.full_like(c, PAD[ct]))]  # beta = 0 over NaN / garbage C
    for alpha, beta, c0 in cases:
        cf = exact(c0, ldc, PAD[ct])
        out, _ = launch_dot(kern, af, bf, cf, alpha, beta, m, n, k, lda, ldb, ldc, device=dev, scales=scales)
        exp, bound = reference(at.T.copy(), bt, c0, alpha, beta, split * kern.local_split, scales=scales)
        check(out, exp, bound, ct, m, n, ldc, cf)
    if dequant:  # alpha = 0 over NaN scales: C = beta C
        nan_scales = (np.full(m, np.nan, np.float32), scales[1])
        cf = exact(c, ldc, PAD[ct])
        out, _ = launch_dot(kern, af, bf, cf, 0.0, 0.5, m, n, k, lda, ldb, ldc, device=dev, scales=nan_scales)
        exp, bound = reference(at.T.copy(), bt, c, 0.0, 0.5, scales=nan_scales)
        check(out, exp, bound, ct, m, n, ldc, cf)
    if ab == "f16":  # alpha = 0 over NaN A and B: C = beta C
        an, bn = at.copy(), b.copy()
        an[1, 2], bn[0, 1] = np.nan, np.nan
        cf = exact(c, ldc, PAD[ct])
        out, _ = launch_dot(kern, exact(an, lda, PAD[ab]), exact(bn, ldb, PAD[ab]), cf, 0.0, 0.5,
                            m, n, k, lda, ldb, ldc, device=dev)
        exp, bound = reference(at.T.copy(), bt, c, 0.0, 0.5)
        check(out, exp, bound, ct, m, n, ldc, cf)
        # alpha = 1: one NaN of A reaches its row m of C and no other (the copy moved the value, not its row)
        out, _ = launch_dot(kern, exact(an, lda, PAD[ab]), bf, exact(c, ldc, PAD[ct]), 1.0, 0.0, m, n, k, lda, ldb, ldc, device=dev)
        got = rows_of(out, m, n, ldc)
        assert np.isnan(got[2]).all() and np.isfinite(np.delete(got, 2, axis=0)).all()


def test_transpose_plan_small_m_at_launch():
    """M given at launch below the macro tile's rows: the transpose, then a row-narrow companion
    (unsplit, finding the copy after the split-K plan's partials)."""
    kern = vlpc.compile(src("TT", None, 64, 45, None, 48, 64, "f16", "f32"), split_k=2).kernel("g")
    dev = garbage_device()
    rng = np.random.default_rng(22)
    for m, lda in ((5, 7), (40, 41)):
        steps = kern.plan(m, 64, 45)
        assert steps[0].kernel == "g_transpose"
        if m == 5:
            assert [s.kernel for s in steps] == ["g_transpose", "g_rows1"]
        at, b, c = operands("TT", m, 64, 45, "f16", "f32", rng)
        cf = exact(c, 64, PAD["f32"])
        out, _ = launch_dot(kern, exact(at, lda, PAD["f16"]), exact(b, 48, PAD["f16"]), cf, 1.25, 0.5,
                            m, 64, 45, lda, 48, 64, device=dev)
        exp, bound = reference(at.T.copy(), b, c, 1.25, 0.5, 2)
        check(out, exp, bound, "f32", m, 64, 64, cf)


@pytest.mark.parametrize("layout, ab, ct, dynamic", [("TT", "f16", "f32", False), ("TN", "i8", "i32", True)])
def test_transpose_plan_batch(layout, ab, ct, dynamic):
    """A strided batch: grid z of the transpose is the batch, the copies back to back; odd batch
    strides (A's not a multiple of P), garbage between the matrices kept in C."""
    nb, m, n, k, lda, ldb, ldc = 3, 21, 64, 19, 23, 20 if layout[1] == "T" else 66, 64
    sa, sb, sc = batch_strides(m, n, k, lda, ldb, ldc, layout)
    dims = (None,) * 6 if dynamic else (m, n, k, lda, ldb, ldc)
    kern = vlpc.compile(src_batch(layout, dims, ab, ct, nb, dynamic)).kernel("g")
    assert kern.plan(m, n, k, nb)[0].grid == (1, 1, nb)
    rng = np.random.default_rng(23)
    at, b, c = operands(layout, m, n, k, ab, ct, rng, nb)
    check_strided_batch(kern, layout, at, b, c, ab, ct, m, n, k, lda, ldb, ldc, (sa, sb, sc))


def src_batch(layout, dims, ab, ct, nb, dynamic):
    m, n, k, lda, ldb, ldc = dims
    if dynamic:
        return src(layout, m, n, k, lda, ldb, ldc, ab, ct, batch=None).replace("memref<", "memref<?x").replace(
            "strided<[", "strided<[?, ")
    return src(layout, m, n, k, lda, ldb, ldc, ab, ct, batch=nb)


@pytest.mark.parametrize("ab, k, split", [("f16", 45, 1), ("i8", 70, 3)])
def test_the_copy(ab, k, split):
    """``<name>_transpose`` alone, over a workspace of 0xFF bytes: W[m, k] = A[k, m], the pad
    k = K..ldw-1 zero, nothing outside the copy written (the split-K partials before it, the
    bytes after it); A's NaN/garbage padding not copied."""
    m, lda = 70, 73
    p = 2 if ab == "f16" else 4
    ldw = -(-k // p) * p
    kern = vlpc.compile(src("TT", m, 64, k, lda, ldw + 4, 64, ab, "f32" if ab == "f16" else "i32"),
                        split_k=split).kernel("g")
    assert kern.transpose_kernel().launch_info["tile_m"] == 64
    dev = get_device("emulator", strict=True)
    rng = np.random.default_rng(24)
    at, _, _ = operands("TT", m, 64, k, ab, "f32", rng)
    af = exact(at, lda, PAD[ab])
    ws_bytes = kern.workspace_bytes(m, 64, k)
    part = split * m * 64 * 4 if split > 1 else 0
    assert ws_bytes == part + m * ldw * at.itemsize
    host = [af, np.zeros(64 * (ldw + 4), at.dtype), np.zeros(m * 64, np.float32)]
    bufs = [dev.upload(x) for x in host]
    ws = dev.upload(np.full(ws_bytes, 0xFF, np.uint8))
    scalar = np.float32 if ab == "f16" else np.int32
    args = [*bufs, *(np.int32(v) for v in (m, 64, k, lda, ldw + 4, 64)), scalar(1), scalar(0), ws]
    step = kern.plan(m, 64, k)[0]
    dev.launch(load_code_object(kern.code_object), step.kernel, grid=step.grid, block=step.block, args=args,
               buffer_sizes={0: host[0].nbytes, 1: host[1].nbytes, 2: host[2].nbytes, 11: ws_bytes})
    raw = dev.download(ws, np.uint8, (ws_bytes,))
    assert (raw[:part] == 0xFF).all(), "the transpose wrote into the split-K partials"
    w = raw[part:].view(at.dtype).reshape(m, ldw)
    assert np.array_equal(w[:, :k].view(np.uint8), np.ascontiguousarray(at.T).view(np.uint8))
    assert (w[:, k:].view(np.uint8) == 0).all(), "the pad of the copy is not zero"


def test_rule():
    """The choice (module docstring of isel/transpose.py): f16 TN with sizes the kernel can
    pack keeps the in-kernel SALU packing (one kernel, no workspace); f16 TT and int8 copy A;
    forcing in-kernel where it cannot be used still copies."""
    tn = vlpc.compile(src("TN", 64, 256, 64, 64, 256, 256, "f16", "f32")).kernel("g")
    assert tn.transpose_kernel() is None and "s_pack_ll_b32_b16" in tn.asm
    assert tn.workspace_bytes(64, 256, 64) == 0
    tt = vlpc.compile(src("TT", 64, 256, 64, 64, 64, 256, "f16", "f32")).kernel("g")
    assert tt.transpose_kernel() is not None and "s_pack_ll_b32_b16" not in tt.asm
    inside = vlpc.compile(src("TT", 64, 256, 64, 64, 64, 256, "i8", "i32"), a_transpose="in-kernel").kernel("g")
    odd = vlpc.compile(src("TT", 63, 256, 64, 63, 64, 256, "i8", "i32"), a_transpose="in-kernel").kernel("g")
    assert inside.transpose_kernel() is None and "s_xor_b64" in inside.asm
    assert odd.transpose_kernel() is not None
    pre = vlpc.compile(src("TN", 64, 256, 64, 64, 256, 256, "f16", "f32"), a_transpose="pre").kernel("g")
    assert pre.transpose_kernel() is not None


def test_cli_plan_and_report(tmp_path, capsys):
    """``vlpc compile --print-plan`` names the copy kernel, its workspace and why; ``vlpc run``
    runs the plan and verifies C; ``vlpc report`` (single kernels) refuses the plan in one line."""
    from vlpc.cli import main

    f = tmp_path / "tt.mlir"
    f.write_text(src("TT", 37, 70, 45, 39, 48, 70, "i8", "i32"))
    assert main(["compile", str(f), "--print-plan"]) == 0
    out = capsys.readouterr().out
    assert "kernels: g_transpose (grid 1x1x1, LDS 4352 bytes), then g (grid z 1)" in out
    assert "A copy (A stored K x M -> M x ceil(K/4)*4 i8, after any split-K partials): 1776 bytes" in out
    assert main(["compile", str(f), "--print-plan", "--split-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "kernels: g_transpose (grid 1x1x1, LDS 4352 bytes), then g (grid z 2), then g_reduce (grid z 1)" in out
    assert main(["run", str(f)]) == 0
    out = capsys.readouterr().out
    # (g's grid is the automatic tile's: 16-row tiles weighed since issue 33)
    assert re.search(r"plan: g_transpose grid \(1, 1, 1\), then g grid \(\d+, \d+, 1\); workspace 1776 bytes", out), out
    assert "verification passed" in out
    assert main(["report", str(f), "--strategies", "sqc"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "this plan copies its operands into a padded workspace first (g_transpose;" in err[0]
