"""What the dot kernels (passes/isel/dot.py) refuse at launch, and what --print-plan says
about their split.

A leading dimension or batch stride fixed by the memref type is compiled into the kernel,
which then ignores the argument: a launch passing another value would compute a silently
wrong C, so ``CompiledKernel.execute`` refuses it (one line naming both values) before any
launch, for the dot kernels as for f32; ``vlpc.run`` refuses an array whose row length is
not the static leading dimension.  Launches use exactly sized buffers on the strict
emulator; the values come from NumPy (float64 on the f16 inputs, int8 exact).
"""

from __future__ import annotations

import numpy as np
import pytest

import vlpc
from vlpc.errors import VlpcError

from dot_support import assert_close, exact, launch_dot, reference, rows_of


def source(m, n, k, lda, ldb, ldc, ab="f16", ct="f32", batch=None, strides=(None, None, None)) -> str:
    """gemm.matmul NT (A M x K, B N x K); None sizes are '?'; a batch makes 3-D memrefs."""
    def mt(rows, cols, ld, t, st):
        dims = "x".join("?" if x is None else str(x) for x in (rows, cols))
        ld_s = "?" if ld is None else str(ld)
        if batch is None:
            return f"memref<{dims}x{t}, strided<[{ld_s}, 1]>>"
        return f"memref<{batch}x{dims}x{t}, strided<[{'?' if st is None else st}, {ld_s}, 1]>>"
    ta, tb, tc = mt(m, k, lda, ab, strides[0]), mt(n, k, ldb, ab, strides[1]), mt(m, n, ldc, ct, strides[2])
    s = "i32" if ab == "i8" and ct == "i32" else "f32"
    return (f"func.func @g(%a: {ta}, %b: {tb}, %c: {tc}, %alpha: {s}, %beta: {s}) {{\n"
            f"  gemm.matmul %a, %b, %c, %alpha, %beta {{layout = \"NT\"}} : {ta}, {tb}, {tc}, {s}, {s}\n"
            "  func.return\n}\n")


@pytest.mark.parametrize("ab, ct, bad", [
    ("f16", "f32", "lda"), ("f16", "f16", "ldc"), ("i8", "i32", "ldb"),
    ("f32", "f32", "lda"),  # the f32 kernel: the same check
])
def test_static_leading_dimension_differing_at_launch_is_refused(ab, ct, bad):
    """Static lda = ldb = 40, ldc = 64: launching with 48 for one of them is a one-line error
    naming both values, raised before any launch; the static values run and give NumPy's result."""
    m, n, k = 16, 64, 37
    lds = {"lda": 40, "ldb": 40, "ldc": 64}
    kern = vlpc.compile(source(m, n, k, lds["lda"], lds["ldb"], lds["ldc"], ab, ct)).kernel("g")
    rng = np.random.default_rng(1)
    if ab == "i8":
        a, b = (rng.integers(-128, 128, (r, k)).astype(np.int8) for r in (m, n))
        pad = np.int8(-77)
    else:
        npt = np.float16 if ab == "f16" else np.float32
        a, b = (rng.standard_normal((r, k)).astype(npt) for r in (m, n))
        pad = np.nan
    c_np = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[ct]
    wrong = dict(lds, **{bad: 48})
    af, bf = exact(a, wrong["lda"], pad), exact(b, wrong["ldb"], pad)
    cf = np.full((m - 1) * wrong["ldc"] + n, 0x7A7A7A7A if ct == "i32" else np.nan, c_np)
    with pytest.raises(VlpcError) as e:
        launch_dot(kern, af, bf, cf, 1, 0, m, n, k, wrong["lda"], wrong["ldb"], wrong["ldc"])
    msg = str(e.value)
    assert msg == f"g was compiled for {bad}={lds[bad]} (static in the IR), got {bad}=48", msg
    af, bf = exact(a, 40, pad), exact(b, 40, pad)
    out, _ = launch_dot(kern, af, bf, np.zeros((m - 1) * 64 + n, c_np), 1, 0, m, n, k, 40, 40, 64)
    exp, bound = reference(a, b, np.zeros((m, n), c_np), 1, 0)
    if ab == "i8":
        np.testing.assert_array_equal(rows_of(out, m, n, 64).astype(np.int64), exp)
    elif ab == "f16":
        assert_close(rows_of(out, m, n, 64), exp, bound)
    else:
        np.testing.assert_allclose(rows_of(out, m, n, 64), exp, rtol=1e-4, atol=1e-4)


def test_static_batch_stride_differing_at_launch_is_refused():
    """A strided f16 batch whose stride_a the IR fixes (20 x 14 + 6): another stride_a at launch
    is refused by name; a dynamic stride (stride_b '?') is taken from the launch."""
    nb, m, n, k, ld = 2, 20, 70, 13, 14
    sa = m * ld + 6
    kern = vlpc.compile(source(m, n, k, ld, ld, n, batch=nb, strides=(sa, None, m * n))).kernel("g")
    a = np.full((nb - 1) * sa + (m - 1) * ld + k, 0.5, np.float16)
    b = np.full((nb - 1) * (n * ld) + (n - 1) * ld + k, 0.25, np.float16)
    c = np.zeros(nb * m * n, np.float32)
    with pytest.raises(VlpcError, match=rf"compiled for stride_a={sa} \(static in the IR\), got stride_a={m * ld}$"):
        launch_dot(kern, a, b, c, 1.0, 0.0, m, n, k, ld, ld, n, batch=nb, strides=(m * ld, n * ld, m * n))
    out, _ = launch_dot(kern, a, b, c, 1.0, 0.0, m, n, k, ld, ld, n, batch=nb, strides=(sa, n * ld, m * n))
    assert np.array_equal(out, np.full(out.shape, k * 0.125, np.float32))  # exact: 13 products of 1/8


@pytest.mark.parametrize("ab, ct", [("f16", "f32"), ("i8", "i32"), ("f32", "f32")])
def test_vlpc_run_array_wider_than_static_lda_is_refused(ab, ct):
    """vlpc.run with an A of 48 columns for a static lda of 40: one line naming both shapes
    (the dot kernels as f32)."""
    kern = vlpc.compile(source(16, 64, 37, 40, 40, 64, ab, ct)).kernel("g")
    npt = {"f16": np.float16, "i8": np.int8, "f32": np.float32}[ab]
    with pytest.raises(VlpcError, match=r"operand A has shape \(16, 48\), the kernel expects \(16, 40\)"):
        vlpc.run(kern, np.zeros((16, 48), npt), np.zeros((64, 40), npt))


def _plan(tmp_path, capsys, text: str) -> str:
    from vlpc.cli import main
    f = tmp_path / "p.mlir"
    f.write_text(text)
    assert main(["compile", str(f), "--print-plan"]) == 0
    return capsys.readouterr().out


def test_print_plan_says_why_a_dot_kernel_is_not_split(tmp_path, capsys):
    """--print-plan names the actual reason S stays 1 without modeled candidates: the decode GEMV
    plan's local split, sizes given at launch, a strided batch; never 'sizes known only at
    launch' for static sizes."""
    out = _plan(tmp_path, capsys, source(4, 1024, 4096, 4096, 4096, 1024, "i8", "i32"))
    assert "local split 16" in out
    assert ("(not split across workgroups automatically: the decode GEMV plan splits K across the 16 "
            "wavefront groups of each workgroup instead)") in out
    out = _plan(tmp_path, capsys, source(None, None, None, None, None, None, "f16", "f32"))
    assert "(not split across workgroups automatically: sizes known only at launch)" in out
    out = _plan(tmp_path, capsys, source(20, 70, 13, 14, 14, 70, batch=2, strides=(286, 980, 1400)))
    assert "(not split across workgroups automatically: a strided batch)" in out
    out = _plan(tmp_path, capsys, source(256, 512, 640, 640, 640, 512, "f16", "f16"))
    assert "sizes known only at launch" not in out and "a strided batch" not in out
    assert "modeled candidates" in out or "the plan surrogate models no f16 kernel" in out
