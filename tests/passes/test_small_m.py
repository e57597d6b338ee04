"""M given at launch below the macro tile's M: the row-narrow companions ``<name>_rows8`` and
``<name>_rows1`` replace the plan (convert-gemm-to-gcn, CompiledKernel.plan/launch)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

import vlpc
from vlpc.errors import VlpcError

from launch_support import launch
from reference import assert_gemm_close, assert_padding_untouched, check_run, gemm_reference


from seed_tile_support import compile_, run_  # noqa: E402  (the seed's tile: see there)


def source(layout="NT", dtype="f32", k="?", bias_row=False, name="g"):
    a = f"memref<?x{k}x{dtype}>" if layout[0] == "N" else f"memref<{k}x?x{dtype}>"
    b = f"memref<{k}x?x{dtype}>" if layout[1] == "N" else f"memref<?x{k}x{dtype}>"
    c = f"memref<?x?x{dtype}>"
    bias_arg = f", %bias: memref<?x{dtype}>" if bias_row else ""
    bias_use = f" bias(%bias : memref<?x{dtype}>)" if bias_row else ""
    epi = ', epilogue = ["bias_row"]' if bias_row else ""
    return f"""builtin.module {{
  func.func @{name}(%a: {a}, %b: {b}, %c: {c}, %alpha: {dtype}, %beta: {dtype}{bias_arg}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta{bias_use} {{layout = "{layout}"{epi}}} : {a}, {b}, {c}, {dtype}, {dtype}
    func.return
  }}
}}
"""


@functools.lru_cache(maxsize=None)
def compiled(layout="NT", dtype="f32", k="?", bias_row=False, **options):
    return compile_(source(layout, dtype, k, bias_row), "gfx906", **options)


def run(module, **kw) -> vlpc.RunResult:
    """vlpc.run on the strict emulator, C checked against tests/reference.py (not vlpc's own checker)."""
    r = run_(module, strict=True, verify=False, **kw)
    check_run(r)
    return r


def ran(r: vlpc.RunResult) -> str:
    """The kernel that computed the result (the plan's only or main step)."""
    steps = r.kernel.plan(r.problem.m, r.problem.n, r.problem.k)
    return steps[0].kernel if len(steps) == 1 else r.kernel.name


@pytest.mark.parametrize("m,expect", [(1, "g_rows1"), (7, "g_rows1"), (31, "g_rows8"), (63, "g_rows8")])
def test_f32_small_m(m, expect):
    r = run(compiled(), m=m, n=300, k=70, alpha=1.5, beta=-0.5)
    assert ran(r) == expect
    rows = int(expect[len("g_rows"):])
    assert r.launch.grid == (2, -(-m // rows), 1) and r.launch.block == (256, 1, 1)


@pytest.mark.parametrize("m,expect", [(1, "g_rows1"), (31, "g_rows8")])
def test_f64_small_m(m, expect):
    kern = compiled(dtype="f64").kernel()
    assert kern.launch_info["macro_m"] == 32
    r = run(kern, m=m, n=100, k=37, alpha=0.75, beta=2.0)
    assert ran(r) == expect


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("m", [5, 20])
def test_layouts(layout, m):
    r = run(compiled(layout), m=m, n=70, k=45, alpha=1.25, beta=0.5)
    assert ran(r) == ("g_rows1" if m < 8 else "g_rows8")


@pytest.mark.parametrize("m", [3, 40])
def test_static_k(m):
    """K known at compile time (with a tail past the K steps), M at launch."""
    r = run(compiled(k="70"), m=m, n=260, alpha=1.0, beta=1.0)
    assert r.problem.k == 70


def test_k_below_k_step():
    r = run(compiled(), m=9, n=64, k=5)
    assert ran(r) == "g_rows8"


@pytest.mark.parametrize("m", [2, 33])
def test_beta_zero_does_not_read_c(m):
    c = np.full((m, 90), np.nan, np.float32)
    r = run(compiled(), c=c, m=m, n=90, k=33, alpha=2.0, beta=0.0)
    assert np.isfinite(r.c).all()


def test_ldc_wider_than_n_keeps_the_padding():
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((6, 20), (70, 20)))
    c = rng.standard_normal((6, 80)).astype(np.float32)
    c[:, 70:] = np.nan  # padding: must come back bit for bit
    out = launch(compiled().kernel(), a, b, c, 1.0, 1.0, 6, 70, 20)
    assert_gemm_close(out[:, :70], *gemm_reference(a, b, c, 1.0, 1.0, layout="NT", m=6, n=70, k=20))
    assert_padding_untouched(out, c, 70)


@pytest.mark.parametrize("m", [4, 12])
def test_bias_row(m):
    r = run(compiled(bias_row=True), m=m, n=70, k=24, beta=0.5)
    assert r.inputs["bias"].shape == (m,)


@pytest.mark.parametrize("m", [64, 100])
def test_large_m_runs_the_main_kernel(m):
    r = run(compiled(), m=m, n=300, k=40)
    kern = r.kernel
    assert ran(r) == "g"
    assert kern.rows_kernel(m) is None
    assert r.launch.grid == (2, -(-m // 64), 1)


def test_companions_and_launch_info():
    kern = compiled().kernel()
    assert set(compiled().kernels) == {"g"}  # the companions are reached through the main kernel
    assert kern.launch_info["small_m"] == "g_rows8,g_rows1"
    for name, rows in (("g_rows8", 8), ("g_rows1", 1)):
        comp = kern.companions[name]
        assert comp.launch_info["role"] == "rows" and comp.launch_info["macro_m"] == rows
        assert comp.launch_info["macro_n"] == 256 and comp.launch_info["workgroup_size"] == 256
        assert "plan" not in comp.launch_info and "split_k" not in comp.launch_info
        assert comp.kernargs == kern.kernargs  # the same arguments: the runtime passes them unchanged
        assert comp.vgprs < kern.vgprs
    assert kern.launch(7, 300, 70).grid == (2, 7, 1)
    assert kern.launch(8, 300, 70).grid == (2, 1, 1)
    assert kern.launch(63, 257, 70).grid == (2, 8, 1)
    with pytest.raises(VlpcError, match="M=0"):
        kern.launch(0, 300, 70)


def test_small_macro_tile_has_only_the_one_row_companion():
    kern = compiled(macro_tile=(8, 64), micro_tile=(8, 1), k_step=8).kernel()
    assert kern.launch_info["small_m"] == "g_rows1"
    r = run(kern, m=7, n=100, k=19)
    assert ran(r) == "g_rows1"
    assert "small_m" not in compiled(macro_tile=(1, 64), micro_tile=(1, 1), k_step=8).kernel().launch_info


def test_static_m_has_no_companion():
    text = source().replace("memref<?x?xf32>, %b", "memref<5x?xf32>, %b").replace(
        "%b, %c, %alpha, %beta {layout = \"NT\"} : memref<?x?xf32>", "%b, %c, %alpha, %beta {layout = \"NT\"} : memref<5x?xf32>")
    kern = compile_(text).kernel()
    assert kern.launch_info["static_m"] == 5 and "small_m" not in kern.launch_info and not kern.companions


@pytest.mark.parametrize("m", [1, 2])
def test_static_m_one_batch_of_a(m):
    """A static M of 1 or 2 (one tile of M rows): one batch of A SGPRs per K step, whose next
    step is loaded after the step's FMAs (this used to fail in register allocation)."""
    t = (f"memref<{m}x40xf32>", "memref<130x40xf32>", f"memref<{m}x130xf32>")
    text = f"""builtin.module {{
  func.func @s(%a: {t[0]}, %b: {t[1]}, %c: {t[2]}, %alpha: f32, %beta: f32) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : {t[0]}, {t[1]}, {t[2]}, f32, f32
    func.return
  }}
}}"""
    r = run(text, alpha=1.5, beta=0.25)
    assert r.launch.grid == (1, 1, 1)


@pytest.mark.parametrize("mode", ["workspace", "atomic"])
def test_split_k_plan_is_replaced_for_small_m(mode):
    kern = compiled(split_k=2, split_mode=mode).kernel()
    assert kern.split_k == 2 and len(kern.plan(64, 300, 256)) == 2
    steps = kern.plan(5, 300, 256)
    assert [s.kernel for s in steps] == ["g_rows1"] and steps[0].grid == (2, 5, 1)
    assert kern.workspace_bytes(5, 300) == 0
    assert kern.workspace_bytes(64, 300) == (2 * 64 * 300 * 4 if mode == "workspace" else 0)
    for m in (5, 20, 70):  # small M: the companion alone; M >= 64: the split plan
        r = run(kern, m=m, n=300, k=256, beta=0.5)


def test_local_split_plan_is_replaced_for_small_m():
    kern = compiled(local_split=2).kernel()
    assert kern.local_split == 2 and kern.launch(64, 256, 64).block == (512, 1, 1)
    assert kern.launch(9, 256, 64).block == (256, 1, 1)
    r = run(kern, m=9, n=256, k=64)
    assert ran(r) == "g_rows8"


def test_lds_strategy_still_refuses_a_small_m():
    kern = compiled(strategy="lds").kernel()
    assert not kern.companions
    with pytest.raises(VlpcError, match="smaller than the macro tile's 64 rows.*no row-narrow companion"):
        kern.launch(16, 256, 64)


def test_cli_run_small_m(capsys):
    from vlpc.cli import main

    example = str(Path(__file__).resolve().parents[2] / "examples" / "sgemm_dynamic.mlir")
    assert main(["run", example, "--m", "5", "--n", "300", "--k", "70", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "verification passed" in out and "grid (2, 5, 1)" in out


@pytest.mark.parametrize("m", [3, 11])
def test_strided_batch_small_m(m):
    """A batch with M at launch: the companion runs the batch in grid z as the main kernel does."""
    from vlpc.runtime import get_device, load_code_object

    t = "memref<?x?x?xf32, strided<[?, ?, 1]>>"
    text = f"""builtin.module {{
  func.func @bg(%a: {t}, %b: {t}, %c: {t}, %alpha: f32, %beta: f32) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : {t}, {t}, {t}, f32, f32
    func.return
  }}
}}"""
    kern = compile_(text, macro_tile=(64, 64)).kernel()
    batch, n, k = 3, 70, 21
    sa, sb, sc = m * k + 3, n * k + 4, m * n + 5
    steps = kern.plan(m, n, k, batch)
    assert [(s.kernel, s.grid) for s in steps] == [(kern.rows_kernel(m).name, (2, -(-m // (1 if m < 8 else 8)), batch))]
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal((batch - 1) * s + rows * cols).astype(np.float32)
               for s, rows, cols in ((sa, m, k), (sb, n, k), (sc, m, n)))
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(x) for x in (a, b, c)]  # exactly sized: reads past the last matrix fault
    kern.execute(dev, load_code_object(kern.code_object),
                 [*bufs, *(np.int32(v) for v in (m, n, k, k, k, n)), np.float32(1.5), np.float32(-0.5),
                  *(np.int32(v) for v in (sa, sb, sc))], m, n, k, n, batch,
                 buffer_sizes={i: x.nbytes for i, x in enumerate((a, b, c))})
    out = dev.download(bufs[2], np.float32, c.shape)
    for z in range(batch):
        az, bz, cz = (x[z * s:z * s + rows * cols].reshape(rows, cols)
                      for x, s, rows, cols in ((a, sa, m, k), (b, sb, n, k), (c, sc, m, n)))
        assert_gemm_close(out[z * sc:z * sc + m * n].reshape(m, n),
                          *gemm_reference(az, bz, cz, 1.5, -0.5, layout="NT"), what=f"C[batch {z}]")
        if z + 1 < batch:
            np.testing.assert_array_equal(out[z * sc + m * n:(z + 1) * sc], c[z * sc + m * n:(z + 1) * sc])
