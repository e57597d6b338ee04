"""B stored K x N (layouts NN, TN) for f16 / int8 with a static M of at least
``B_TRANSPOSE_MIN_M`` (64 int8, 256 f16): the plan transposes B into an N x ceil(K / P) P workspace region first
(``<name>_copy_b``, passes/isel/transpose.py), then the dot kernel reads that copy as it
reads a B stored N x K (quads along K).  Strict emulator, exactly sized buffers with NaN /
garbage padding, a workspace handed out full of garbage, NumPy reference (int8 exact, f16 within
the f32-accumulation bound of tests/dot_support.py); beta = 0 over NaN C, alpha = 0 over NaN A
and B.  Below the threshold, with M given at launch and with ``--a-transpose in-kernel`` the
kernel keeps gathering B itself."""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.passes.isel.transpose import B_TRANSPOSE_MIN_M

from dot_support import (PAD, NP, check_c as check, check_copies_workspace, check_general_and_beta0,
                         check_strided_batch, exact, garbage_device, launch_dot, layout_source, reference, rows_of)

M0 = max(B_TRANSPOSE_MIN_M.values())


def operands(layout, m, n, k, ab, ct, rng, nb=None):
    """A (M x K), B (K x N), C as the NumPy reference wants them (A stored K x M is ``a.T``)."""
    shape = (lambda *s: s) if nb is None else (lambda *s: (nb, *s))
    if ab == "i8":
        a = rng.integers(-128, 128, shape(m, k)).astype(np.int8)
        b = rng.integers(-128, 128, shape(k, n)).astype(np.int8)
    else:
        a = rng.standard_normal(shape(m, k)).astype(np.float16)
        b = rng.standard_normal(shape(k, n)).astype(np.float16)
    if ct == "i32":
        c = rng.integers(-2**31, 2**31, shape(m, n)).astype(np.int32)
    else:
        c = rng.standard_normal(shape(m, n)).astype(NP[ct])
    return a, b, c


CASES = [  # layout, M, N, K, lda, ldb, ldc, A/B, C, options, copies
    ("NN", M0, 100, 37, 38, 103, 101, "f16", "f32", {}, ("B",)),        # N edge, odd ldb, K odd
    ("NN", M0 + 4, 70, 70, 72, 70, 73, "i8", "i32", {}, ("B",)),        # moved-up row tile, K = 2 mod 4
    ("NN", M0, 64, 41, 41, 64, 64, "i8", "i32", {}, ("A", "B")),        # A's odd lda copied too
    ("TN", M0, 64, 45, M0, 66, 64, "f16", "f16", {}, ("B",)),           # A K x M packed in the kernel, C f16
    ("NN", M0, 100, 133, 134, 100, 101, "f16", "f32", {"split_k": 3}, ("B",)),  # + split-K
]


@pytest.mark.parametrize("layout, m, n, k, lda, ldb, ldc, ab, ct, opts, copies", CASES)
def test_b_k_by_n_is_transposed(layout, m, n, k, lda, ldb, ldc, ab, ct, opts, copies):
    """``<name>_copy_b`` first (after A's copy when A is copied too), the dot kernel reading B as
    N x K; alpha/beta and beta = 0 over NaN / garbage C against NumPy; f16: alpha = 0 over a NaN
    of B leaves C = beta C, and that NaN reaches its column of C and no other."""
    kern = vlpc.compile(layout_source(layout, m, n, k, lda, ldb, ldc, ab, ct), **opts).kernel("g")
    want = [x for x, c in (("g_transpose", "A"), ("g_copy_b", "B")) if c in copies]
    assert [s.kernel for s in kern.plan(m, n, k)][:len(want) + 1] == want + ["g"]
    check_copies_workspace(kern, m, n, k, ldc, ab, copies)
    asm = kern.asm  # (a plan of one K step, e.g. a 16-row tile since issue 33, has no loop: the kernel g)
    loop = (asm.split(".Lg_k_loop:")[1].split("s_cbranch_scc1 .Lg_k_loop")[0] if ".Lg_k_loop:" in asm
            else asm.split("\ng:")[1].split("s_endpgm")[0])
    assert "global_load_dwordx4" in loop and "_d16_hi" not in loop  # quads along K of the copy
    rng = np.random.default_rng(41)
    a, b, c = operands(layout, m, n, k, ab, ct, rng)
    a_st = a.T.copy() if layout[0] == "T" else a  # as stored
    af, bf = exact(a_st, lda, PAD[ab]), exact(b, ldb, PAD[ab])
    dev = garbage_device()
    check_general_and_beta0(kern, af, bf, a, b.T.copy(), c, ct, m, n, k, lda, ldb, ldc, dev)
    if ab == "f16":
        bn = b.copy()
        bn[1, 3] = np.nan
        an = a_st.copy()
        an[0, 0] = np.nan
        cf = exact(c, ldc, PAD[ct])
        out, _ = launch_dot(kern, exact(an, lda, PAD[ab]), exact(bn, ldb, PAD[ab]), cf, 0.0, 0.5,
                            m, n, k, lda, ldb, ldc, device=dev)
        exp, bound = reference(a, b.T.copy(), c, 0.0, 0.5)
        check(out, exp, bound, ct, m, n, ldc, cf)
        out, _ = launch_dot(kern, af, exact(bn, ldb, PAD[ab]), exact(c, ldc, PAD[ct]), 1.0, 0.0,
                            m, n, k, lda, ldb, ldc, device=dev)
        got = rows_of(out, m, n, ldc)
        assert np.isnan(got[:, 3]).all() and np.isfinite(np.delete(got, 3, axis=1)).all()


@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("i8", "i32")])
def test_b_transposed_batch(ab, ct):
    """A strided batch: each entry's B copy in its region, every C matrix checked and the gaps kept."""
    nb, m, n, k, lda, ldb, ldc = 2, M0, 64, 19, 20, 67, 64
    sa, sb, sc = m * lda + 3, k * ldb + 5, m * ldc + 5
    kern = vlpc.compile(layout_source("NN", m, n, k, lda, ldb, ldc, ab, ct, batch=nb, strides=(sa, sb, sc))).kernel("g")
    assert kern.b_copy_kernel() is not None
    a, b, c = operands("NN", m, n, k, ab, ct, np.random.default_rng(42), nb)
    check_strided_batch(kern, "NN", a, b, c, ab, ct, m, n, k, lda, ldb, ldc, (sa, sb, sc))


def test_dequantized_int8_b_transposed():
    """W8A8 (int8, C f32, scales) with B K x N: the copy, then the dequantizing output."""
    m, n, k = M0, 64, 36
    kern = vlpc.compile(layout_source("NN", m, n, k, k, n, n, "i8", "f32", dequant=True)).kernel("g")
    assert kern.b_copy_kernel() is not None
    rng = np.random.default_rng(43)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    c = np.full((m, n), np.nan, np.float32)  # beta = 0: C is not read
    sr = rng.uniform(1e-3, 2e-2, m).astype(np.float32)
    scl = rng.uniform(1e-3, 2e-2, n).astype(np.float32)
    cf = exact(c, n, np.nan)
    out, _ = launch_dot(kern, exact(a, k, PAD["i8"]), exact(b, n, PAD["i8"]), cf, 2.0, 0.0, m, n, k, k, n, n,
                        scales=(sr, scl), device=garbage_device())
    exp, bound = reference(a, b.T.copy(), np.zeros((m, n), np.float32), 2.0, 0.0, scales=(sr, scl))
    check(out, exp, bound, "f32", m, n, n, cf)


@pytest.mark.parametrize("m, ab, ct, opts", [
    (B_TRANSPOSE_MIN_M["f16"] - 1, "f16", "f32", {}), (B_TRANSPOSE_MIN_M["i8"] - 1, "i8", "i32", {}),
    (None, "f16", "f32", {}), (M0, "i8", "i32", {"a_transpose": "in-kernel"})])
def test_b_gathered_in_the_kernel(m, ab, ct, opts):
    """Below the threshold, with M given at launch, or asked for: no copy, B gathered by rows."""
    kern = vlpc.compile(layout_source("NN", m, 64, 37, 40, 64, 64, ab, ct), **opts).kernel("g")
    assert kern.b_copy_kernel() is None and kern.transpose_kernel() is None
    mm = m or 8
    rng = np.random.default_rng(44)
    a, b, c = operands("NN", mm, 64, 37, ab, ct, rng)
    check_general_and_beta0(kern, exact(a, 40, PAD[ab]), exact(b, 64, PAD[ab]), a, b.T.copy(), c, ct,
                            mm, 64, 37, 40, 64, 64, garbage_device())


@pytest.mark.parametrize("m, ab", [(B_TRANSPOSE_MIN_M["i8"], "i8"), (8, "f16")])
def test_b_transposed_from_the_threshold_or_asked(m, ab):
    """int8 from its smaller threshold on; ``--a-transpose pre`` copies B whatever M."""
    opts = {} if ab == "i8" else {"a_transpose": "pre"}
    ct = "i32" if ab == "i8" else "f32"
    kern = vlpc.compile(layout_source("NN", m, 70, 37, 40, 71, 70, ab, ct), **opts).kernel("g")
    assert kern.b_copy_kernel() is not None
    a, b, c = operands("NN", m, 70, 37, ab, ct, np.random.default_rng(45))
    check_general_and_beta0(kern, exact(a, 40, PAD[ab]), exact(b, 71, PAD[ab]), a, b.T.copy(), c, ct,
                            m, 70, 37, 40, 71, 70, garbage_device())


def test_print_plan_names_the_b_transpose(tmp_path, capsys):
    from vlpc.cli import main

    f = tmp_path / "nn.mlir"
    f.write_text(layout_source("NN", M0, 64, 40, 40, 64, 64, "i8", "i32"))
    assert main(["compile", str(f), "--print-plan"]) == 0
    out = capsys.readouterr().out
    assert "kernels: g_copy_b (grid 1x1x1, LDS 4352 bytes), then g" in out
    assert f"B copy (B stored K x N -> N x ceil(K/4)*4 i8, after A's copy if any): {64 * 40} bytes" in out
