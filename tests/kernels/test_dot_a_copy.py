"""A stored M x K (layouts NT, NN) with a static lda (or batch stride) that is not a multiple of
P = 2 (f16) / 4 (int8): the plan copies A into the padded M x ceil(K / P) P workspace first
(``<name>_transpose`` with A's strides swapped, passes/isel/transpose.py), then the dot
kernel reads the copy; likewise B stored N x K (NT, TT) with a static odd ldb / batch stride
(``<name>_copy_b``, its copy after A's).  Strict emulator, exactly sized buffers with NaN / garbage padding, a
workspace handed out full of garbage (tests/kernels/test_dot_transpose.py's device), NumPy reference;
an odd lda given at launch stays refused, naming the fixes."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.errors import VlpcError

from dot_support import PAD, NP, check_copies_workspace, check_general_and_beta0, check_strided_batch, garbage_device, layout_source, assert_close, check_c as check, exact, flat_batch, launch_dot, reference, rows_of


def src(layout, m, n, k, lda, ldb, ldc, ab, ct, batch=None, strides=None):
    """gemm.matmul (A stored M x K, or K x M for layouts T?); a None size is '?' (given at launch)."""
    return layout_source(layout, m, n, k, lda, ldb, ldc, ab, ct, batch=batch, strides=strides)


def operands(layout, m, n, k, ab, ct, rng, nb=None):
    shape = (lambda *s: s) if nb is None else (lambda *s: (nb, *s))
    bshape = shape(n, k) if layout[1] == "T" else shape(k, n)
    if ab == "i8":
        a = rng.integers(-128, 128, shape(m, k)).astype(np.int8)
        b = rng.integers(-128, 128, bshape).astype(np.int8)
    else:
        a = rng.standard_normal(shape(m, k)).astype(np.float16)
        b = rng.standard_normal(bshape).astype(np.float16)
    if ct == "i32":
        c = rng.integers(-2**31, 2**31, shape(m, n)).astype(np.int32)
    else:
        c = rng.standard_normal(shape(m, n)).astype(NP[ct])
    return a, b, c


CASES = [  # layout, M, N, K, lda, ldb, ldc, A/B, C, options
    ("NT", 37, 64, 45, 45, 46, 65, "f16", "f32", {}),     # contiguous rows, K odd
    ("NN", 70, 64, 33, 35, 66, 64, "f16", "f32", {}),     # lda odd past K, B K x N
    ("NT", 37, 64, 41, 41, 44, 64, "i8", "i32", {}),      # lda = K = 1 mod 4
    ("NN", 66, 64, 70, 70, 64, 67, "i8", "i32", {"a_transpose": "in-kernel"}),  # lda = K = 2 mod 4 (B gathered: no B copy)
    ("NT", 70, 100, 37, 37, 40, 101, "f16", "f32", {"split_k": 3}),  # + split-K
]


@pytest.mark.parametrize("layout, m, n, k, lda, ldb, ldc, ab, ct, opts", CASES)
def test_unaligned_a_is_copied(layout, m, n, k, lda, ldb, ldc, ab, ct, opts):
    """alpha/beta against NumPy, C's padding kept bit for bit; beta = 0 over NaN / garbage C;
    alpha = 0 over NaN A and B (f16); one NaN of A reaches its row of C and no other."""
    kern = vlpc.compile(src(layout, m, n, k, lda, ldb, ldc, ab, ct), **opts).kernel("g")
    assert kern.launch_info["plan"].startswith("g_transpose,g") and kern.transpose_kernel() is not None
    p = 2 if ab == "f16" else 4
    split = kern.split_k
    assert kern.workspace_bytes(m, ldc, k) == (split * m * ldc * 4 if split > 1 else 0) + m * -(-k // p) * p * (
        2 if ab == "f16" else 1)
    rng = np.random.default_rng(31)
    a, b, c = operands(layout, m, n, k, ab, ct, rng)
    bt = b if layout[1] == "T" else b.T.copy()
    af, bf = exact(a, lda, PAD[ab]), exact(b, ldb, PAD[ab])
    dev = garbage_device()
    check_general_and_beta0(kern, af, bf, a, bt, c, ct, m, n, k, lda, ldb, ldc, dev)
    if ab == "f16":
        an, bn = a.copy(), b.copy()
        an[2, 1], bn[0, 1] = np.nan, np.nan
        cf = exact(c, ldc, PAD[ct])
        out, _ = launch_dot(kern, exact(an, lda, PAD[ab]), exact(bn, ldb, PAD[ab]), cf, 0.0, 0.5,
                            m, n, k, lda, ldb, ldc, device=dev)
        exp, bound = reference(a, bt, c, 0.0, 0.5)
        check(out, exp, bound, ct, m, n, ldc, cf)
        out, _ = launch_dot(kern, exact(an, lda, PAD[ab]), bf, exact(c, ldc, PAD[ct]), 1.0, 0.0,
                            m, n, k, lda, ldb, ldc, device=dev)
        got = rows_of(out, m, n, ldc)
        assert np.isnan(got[2]).all() and np.isfinite(np.delete(got, 2, axis=0)).all()


@pytest.mark.parametrize("layout, ab, ct", [("NT", "f16", "f32"), ("NN", "i8", "i32")])
def test_unaligned_a_batch(layout, ab, ct):
    """A strided batch with an odd A batch stride (and lda): the copies back to back, grid z the
    batch; the garbage between C's matrices kept."""
    nb, m, n, k, lda, ldc = 3, 21, 64, 19, 19, 64
    ldb = 20 if layout[1] == "T" else 66
    sa, sb, sc = m * lda + 3, (n if layout[1] == "T" else k) * ldb + 4, m * ldc + 5
    kern = vlpc.compile(src(layout, m, n, k, lda, ldb, ldc, ab, ct, batch=nb, strides=(sa, sb, sc))).kernel("g")
    assert kern.transpose_kernel() is not None and kern.plan(m, n, k, nb)[0].grid == (1, 1, nb)
    rng = np.random.default_rng(32)
    a, b, c = operands(layout, m, n, k, ab, ct, rng, nb)
    check_strided_batch(kern, layout, a, b, c, ab, ct, m, n, k, lda, ldb, ldc, (sa, sb, sc))


def test_aligned_a_is_not_copied():
    """lda a multiple of P: the dot kernel reads A itself (no pre-kernel, no workspace)."""
    kern = vlpc.compile(src("NT", 64, 64, 45, 46, 46, 64, "f16", "f32")).kernel("g")
    assert kern.transpose_kernel() is None and kern.workspace_bytes(64, 64, 45) == 0


def test_odd_lda_at_launch_is_refused_naming_the_fix():
    """lda given at launch: still refused before any launch, in one line that names the fixes."""
    kern = vlpc.compile(src("NT", None, None, None, None, None, None, "f16", "f32")).kernel("g")
    assert kern.transpose_kernel() is None
    with pytest.raises(VlpcError) as e:
        vlpc.run(kern, np.zeros((8, 45), np.float16), np.zeros((64, 46), np.float16),
                 np.zeros((8, 64), np.float32), k=45, lda=45, ldb=46)
    msg = str(e.value)
    assert "\n" not in msg.strip()
    assert "lda=45" in msg and "pad the rows, e.g. lda=46, or give lda and A's batch stride at compile time" in msg


def test_unaligned_a_small_m_at_launch():
    """M given at launch (lda static, odd): the copy, then a row-narrow companion or the main
    kernel, each reading the copy."""
    kern = vlpc.compile(src("NT", None, 64, 45, 45, 46, 64, "f16", "f32")).kernel("g")
    dev = garbage_device()
    rng = np.random.default_rng(33)
    for m in (5, 40):
        steps = kern.plan(m, 64, 45)
        run = kern.variant_for(m, 64, 45)  # (a launch-time plan variant may run: vlpc/launch_variants.py)
        assert steps[0].kernel == f"{run.name}_transpose" and len(steps) == 2 + (run.split_k > 1)
        a, b, c = operands("NT", m, 64, 45, "f16", "f32", rng)
        cf = exact(c, 64, PAD["f32"])
        out, _ = launch_dot(kern, exact(a, 45, PAD["f16"]), exact(b, 46, PAD["f16"]), cf, 1.25, 0.5,
                            m, 64, 45, 45, 46, 64, device=dev)
        exp, bound = reference(a, b, c, 1.25, 0.5, run.split_k * run.local_split)
        check(out, exp, bound, "f32", m, 64, 64, cf)


@pytest.mark.parametrize("ab, k", [("f16", 45), ("i8", 70)])
def test_the_copy_of_a_stored_m_by_k(ab, k):
    """``<name>_transpose`` alone over a workspace of 0xFF bytes, A stored M x K: W[m, k] =
    A[m, k], the pad k = K..ldw-1 zero, nothing past the copy written; A's padding not copied."""
    from vlpc.runtime import get_device, load_code_object

    m, lda = 70, k + 2 if ab == "f16" else k + 3
    p = 2 if ab == "f16" else 4
    ldw = -(-k // p) * p
    assert lda % p
    kern = vlpc.compile(src("NT", m, 64, k, lda, ldw + 4, 64, ab, "f32" if ab == "f16" else "i32")).kernel("g")
    dev = get_device("emulator", strict=True)
    a, _, _ = operands("NT", m, 64, k, ab, "f32", np.random.default_rng(34))
    af = exact(a, lda, PAD[ab])
    ws_bytes = kern.workspace_bytes(m, 64, k)
    assert ws_bytes == m * ldw * a.itemsize
    host = [af, np.zeros(64 * (ldw + 4), a.dtype), np.zeros(m * 64, np.float32)]
    bufs = [dev.upload(x) for x in host]
    ws = dev.upload(np.full(ws_bytes + 64, 0xFF, np.uint8))
    scalar = np.float32 if ab == "f16" else np.int32
    args = [*bufs, *(np.int32(v) for v in (m, 64, k, lda, ldw + 4, 64)), scalar(1), scalar(0), ws]
    step = kern.plan(m, 64, k)[0]
    assert step.kernel == "g_transpose"
    dev.launch(load_code_object(kern.code_object), step.kernel, grid=step.grid, block=step.block, args=args,
               buffer_sizes={0: host[0].nbytes, 1: host[1].nbytes, 2: host[2].nbytes, 11: ws_bytes + 64})
    raw = dev.download(ws, np.uint8, (ws_bytes + 64,))
    assert (raw[ws_bytes:] == 0xFF).all(), "the copy wrote past its rows"
    w = raw[:ws_bytes].view(a.dtype).reshape(m, ldw)
    assert np.array_equal(w[:, :k].view(np.uint8), a.view(np.uint8))
    assert (w[:, k:].view(np.uint8) == 0).all(), "the pad of the copy is not zero"


@pytest.mark.parametrize("lda, ldb, lines, report_err", [
    (41, 44, ["g_transpose (grid 1x1x1, LDS 4352 bytes)",
              f"A copy (A stored M x K -> M x ceil(K/4)*4 i8, after any split-K partials): {37 * 44} bytes",
              "lda=41"], None),
    (44, 41, ["kernels: g_copy_b (grid 1x1x1, LDS 4352 bytes), then g",
              f"B copy (B stored N x K -> N x ceil(K/4)*4 i8, after A's copy if any): {64 * 44} bytes",
              "  workspace: the B copy only"], "padded workspace first (g_copy_b;"),
])
def test_print_plan_names_the_copy(lda, ldb, lines, report_err, tmp_path, capsys):
    """An odd static lda (ldb): --print-plan names the copy kernel and its workspace, and the
    plan runs and verifies."""
    from vlpc.cli import main

    f = tmp_path / "nt.mlir"
    f.write_text(src("NT", 37, 64, 41, lda, ldb, 64, "i8", "i32"))
    assert main(["compile", str(f), "--print-plan"]) == 0
    out = capsys.readouterr().out
    for line in lines:
        assert line in out
    assert main(["run", str(f)]) == 0
    assert "verification passed" in capsys.readouterr().out
    if report_err:  # the traffic report: one line naming the copy, not "2 kernels"
        assert main(["report", str(f), "--strategies", "sqc"]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and report_err in err[0]


B_CASES = [  # layout, M, N, K, lda, ldb, ldc, A/B, C, options, copies
    ("NT", 37, 64, 45, 46, 45, 65, "f16", "f32", {}, ("B",)),            # B's rows odd, A aligned
    ("NT", 37, 70, 41, 41, 41, 70, "i8", "i32", {}, ("A", "B")),         # both contiguous, K odd
    ("TT", 37, 64, 45, 39, 47, 64, "f16", "f32", {}, ("A", "B")),        # A K x M transposed, B odd
    ("NT", 70, 100, 37, 40, 37, 101, "f16", "f32", {"split_k": 3}, ("B",)),  # + split-K
    ("NT", None, 64, 45, 45, 45, 64, "f16", "f32", {}, ("A", "B")),      # M at launch
]


@pytest.mark.parametrize("layout, m, n, k, lda, ldb, ldc, ab, ct, opts, copies", B_CASES)
def test_unaligned_b_is_copied(layout, m, n, k, lda, ldb, ldc, ab, ct, opts, copies):
    """B stored N x K with a static ldb not a multiple of P: ``<name>_copy_b`` into the region
    after A's copy, the dot kernel reading it; beta = 0 over NaN C, alpha = 0 over NaN A and B."""
    kern = vlpc.compile(src(layout, m, n, k, lda, ldb, ldc, ab, ct), **opts).kernel("g")
    m = m or 40
    top = kern
    kern = kern.variant_for(m, n, k)  # (M at launch: a launch-time plan variant may run, vlpc/launch_variants.py)
    assert [s.kernel for s in top.plan(m, n, k)] == [s.kernel for s in kern.plan(m, n, k)]
    want = [x.replace("g", kern.name, 1) for x, c in (("g_transpose", "A"), ("g_copy_b", "B")) if c in copies]
    assert kern.launch_info["plan"].startswith(",".join(want + [kern.name]))
    assert [s.kernel for s in kern.plan(m, n, k)][:len(want)] == want
    check_copies_workspace(kern, m, n, k, ldc, ab, copies)
    rng = np.random.default_rng(35)
    at = layout[0] == "T"
    a, b, c = operands(layout, m, n, k, ab, ct, rng)
    a_st = a.T.copy() if at else a  # as stored
    af, bf = exact(a_st, lda, PAD[ab]), exact(b, ldb, PAD[ab])
    dev = garbage_device()
    check_general_and_beta0(kern, af, bf, a, b, c, ct, m, n, k, lda, ldb, ldc, dev)
    if ab == "f16":
        bn = b.copy()
        bn[3, 1] = np.nan
        cf = exact(c, ldc, PAD[ct])
        out, _ = launch_dot(kern, af, exact(bn, ldb, PAD[ab]), cf, 0.0, 0.5, m, n, k, lda, ldb, ldc, device=dev)
        exp, bound = reference(a, b, c, 0.0, 0.5)
        check(out, exp, bound, ct, m, n, ldc, cf)
        out, _ = launch_dot(kern, af, exact(bn, ldb, PAD[ab]), exact(c, ldc, PAD[ct]), 1.0, 0.0,
                            m, n, k, lda, ldb, ldc, device=dev)
        got = rows_of(out, m, n, ldc)
        assert np.isnan(got[:, 3]).all() and np.isfinite(np.delete(got, 3, axis=1)).all()


@pytest.mark.parametrize("layout, lda, ab, ct", [("NT", 19, "f16", "f32"), ("NT", 20, "i8", "i32")])
def test_unaligned_b_batch(layout, lda, ab, ct):
    """A strided batch with odd B (and A) batch strides: each entry's copies back to back."""
    nb, m, n, k, ldb, ldc = 3, 21, 64, 19, 19, 64
    sa, sb, sc = m * lda + 3, n * ldb + 5, m * ldc + 5
    kern = vlpc.compile(src(layout, m, n, k, lda, ldb, ldc, ab, ct, batch=nb, strides=(sa, sb, sc))).kernel("g")
    assert kern.b_copy_kernel() is not None
    rng = np.random.default_rng(36)
    a, b, c = operands(layout, m, n, k, ab, ct, rng, nb)
    cf = flat_batch(c, ldc, sc, PAD[ct])
    alpha, beta = (3, -2) if ct == "i32" else (0.5, 2.0)
    out, _ = launch_dot(kern, flat_batch(a, lda, sa, PAD[ab]), flat_batch(b, ldb, sb, PAD[ab]), cf, alpha, beta,
                        m, n, k, lda, ldb, ldc, batch=nb, strides=(sa, sb, sc), device=garbage_device())
    for z in range(nb):
        exp, bound = reference(a[z], b[z], c[z], alpha, beta)
        got = rows_of(out[z * sc:], m, n, ldc)
        if ct == "i32":
            np.testing.assert_array_equal(got.astype(np.int64), exp)
        else:
            assert_close(got, exp, bound)


def test_odd_ldb_at_launch_is_refused_naming_the_fix():
    kern = vlpc.compile(src("NT", None, None, None, None, None, None, "i8", "i32")).kernel("g")
    with pytest.raises(VlpcError, match=r"ldb=45: .*pad the rows, e.g. ldb=48, or give ldb and B's batch stride at "
                                        r"compile time"):
        vlpc.run(kern, np.zeros((8, 48), np.int8), np.zeros((64, 45), np.int8), np.zeros((8, 64), np.int32), k=45)
