"""Compile with vlpc, execute on the emulator (strict checkers), compare with NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vlpc
from vlpc.cli import main
from vlpc.analysis import loop_figures
from vlpc.runtime import get_device, load_code_object

from launch_support import gemm_source as source
from reference import assert_gemm_close, assert_padding_untouched, gemm_reference


def run_gemm(m, n, k, lda=None, ldb=None, ldc=None, alpha=1.25, beta=-0.75, dynamic=False, seed=0,
             layout="NT", dtype="f32", **opts):
    """Compile, run on the strict emulator with exactly-sized buffers, compare with NumPy."""
    a_rows, a_cols = (m, k) if layout[0] == "N" else (k, m)
    b_rows, b_cols = (k, n) if layout[1] == "N" else (n, k)
    lda_, ldb_, ldc_ = lda or a_cols, ldb or b_cols, ldc or n
    r = vlpc.compile(source(m, n, k, lda, ldb, ldc, dynamic, layout, dtype), "gfx906", **opts)
    npt = np.float32 if dtype == "f32" else np.float64
    kern = r.kernel()
    launch = kern.launch(m, n, k)
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((a_rows, lda_)).astype(npt)
    b = rng.standard_normal((b_rows, ldb_)).astype(npt)
    c0 = rng.standard_normal((m, ldc_)).astype(npt)
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(x) for x in (a, b, c0)]   # exactly-sized buffers: any overrun faults
    stats = dev.launch(load_code_object(r.code_object), "sgemm", grid=launch.grid, block=launch.block,
                       args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(lda_), np.int32(ldb_),
                             np.int32(ldc_), npt(alpha), npt(beta)])
    out = dev.download(bufs[2], npt, (m, ldc_))
    assert_gemm_close(out[:, :n], *gemm_reference(a, b, c0, alpha, beta, layout=layout, m=m, n=n, k=k))
    assert_padding_untouched(out, c0, n)
    return stats, r


def test_default_tile_small():
    stats, _ = run_gemm(64, 256, 32, split_k=1)  # (the automatic plan splits K over 2 groups in LDS here)
    assert stats.lds_bytes_read == stats.lds_bytes_written == stats.barriers == 0
    assert stats.by_mnemonic["s_load_dwordx16"] > 0


@pytest.mark.parametrize("macro,k_step", [((64, 64), 16), ((64, 128), 8), ((64, 256), 8)])
def test_tiles_and_k_steps(macro, k_step):
    run_gemm(128, 2 * macro[1], 48, macro_tile=macro, k_step=k_step)


def test_dynamic_sizes_and_leading_dimensions():
    run_gemm(128, 128, 64, lda=80, ldb=72, ldc=136, dynamic=True, macro_tile=(64, 128))


def test_static_wide_leading_dimension_uses_row_chain():
    # lda*4*63 exceeds the 21-bit SMEM offset: rows are addressed by an SGPR chain
    stats, r = run_gemm(64, 64, 16, lda=4200, macro_tile=(64, 64))
    assert "offset:0x" not in "".join(l for l in r.asm.splitlines() if "s_load_dwordx16" in l)


EDGE_SIZES = [(1, 1, 1), (7, 7, 7), (63, 63, 63), (64, 64, 64), (65, 65, 65), (257, 257, 33)]


@pytest.mark.parametrize("m,n,k", EDGE_SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in EDGE_SIZES])
def test_any_size_exact_buffers(m, n, k):
    # Exactly-sized buffers: the emulator's bounds checker faults on any access past an edge.
    # Edges: lanes past N are off in EXEC, a row tile past M moves up and stores only its
    # own rows, K steps are followed by an unrolled tail of 8/4/2/1 values.
    run_gemm(m, n, k, macro_tile=(64, 64))


LAYOUT_CASES = [(lay, size) for lay in ("NN", "NT", "TN", "TT") for size in ((7, 9, 5), (65, 70, 37))]


@pytest.mark.parametrize("layout,size", LAYOUT_CASES, ids=[f"{l}-{s[0]}x{s[1]}x{s[2]}" for l, s in LAYOUT_CASES])
def test_layouts(layout, size):
    m, n, k = size
    run_gemm(m, n, k, layout=layout, macro_tile=(64, 64))


@pytest.mark.parametrize("layout", ["NN", "TN", "TT"])
def test_layouts_dynamic_with_leading_dimensions(layout):
    m, n, k = 70, 66, 48
    lds = {"lda": (k if layout[0] == "N" else m) + 3, "ldb": (n if layout[1] == "N" else k) + 5, "ldc": n + 1}
    run_gemm(m, n, k, layout=layout, dynamic=True, macro_tile=(64, 64), **lds)


F64_CASES = [(lay, size) for lay in ("NN", "NT", "TN", "TT") for size in ((7, 9, 5), (65, 70, 21))]


@pytest.mark.parametrize("layout,size", F64_CASES, ids=[f"{l}-{s[0]}x{s[1]}x{s[2]}" for l, s in F64_CASES])
def test_dgemm(layout, size):
    # DGEMM: v_fma_f64 with A as an SGPR pair; 32 rows per tile keep 82 VGPRs (3 waves/SIMD).
    m, n, k = size
    stats, r = run_gemm(m, n, k, layout=layout, dtype="f64", macro_tile=(32, 64))
    assert stats.by_mnemonic["v_fma_f64"] > 0 and "v_fma_f32" not in stats.by_mnemonic
    assert r.kernel().vgprs <= 84


def test_dgemm_default_kernel_figures():
    r = vlpc.compile(source(4096, 4096, 640, dtype="f64"), "gfx906")
    k = r.kernel()
    assert k.launch_info["macro_m"] == 16 and k.launch_info["k_step"] == 8  # 16 rows: 4 waves per SIMD
    assert k.vgprs <= 64 and k.sgprs <= 102
    f = loop_figures(r.asm, fma="v_fma_f64")
    assert f.fma == 16 * 8 and f.valu_all_fma_with_one_sgpr
    assert f.a_loads == 16 and f.a_cover == 0  # batches of 4 rows loaded after the previous batch's FMAs


@pytest.mark.parametrize("k", [1, 15, 37], ids=lambda k: f"K={k}")
@pytest.mark.parametrize("layout", ["NT", "TN"])
def test_dynamic_k_tail(layout, k):
    # K given at launch: K < k_step skips the main loop; the rest runs in a loop of single k
    run_gemm(65, 70, k, dynamic=True, layout=layout, macro_tile=(64, 64))


def test_dynamic_sizes_with_edges():
    run_gemm(65, 70, 48, lda=50, ldb=49, ldc=71, dynamic=True, macro_tile=(64, 64))


def test_beta_zero_does_not_read_c():
    """BLAS: with beta == 0, C is not read, so NaN or Inf in C does not propagate."""
    m, n, k = 65, 70, 21
    r = vlpc.compile(source(m, n, k), "gfx906", macro_tile=(64, 64))
    launch = r.kernel().launch(m, n, k)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((n, k), dtype=np.float32)
    c0 = np.full((m, n), np.nan, np.float32)
    c0[::2] = np.inf
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(x) for x in (a, b, c0)]
    dev.launch(load_code_object(r.code_object), "sgemm", grid=launch.grid, block=launch.block,
               args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(k), np.int32(k), np.int32(n),
                     np.float32(2.0), np.float32(0.0)])
    out = dev.download(bufs[2], np.float32, (m, n))
    assert np.isfinite(out).all()
    assert_gemm_close(out, *gemm_reference(a, b, c0, 2.0, 0.0, layout="NT"))


def test_alpha_zero_and_beta_zero():
    run_gemm(64, 64, 16, alpha=0.0, beta=2.0, macro_tile=(64, 64))
    run_gemm(64, 64, 16, alpha=3.0, beta=0.0, macro_tile=(64, 64))


def test_data_forwarding_counted():
    stats, _ = run_gemm(64, 256, 64)
    fma_lanes = stats.by_mnemonic["v_fma_f32"] * 64
    # Row-by-row order: the accumulator of 15 of every 16 FMAs of a row (31 of 32
    # batches) was written by the FMA just before it; a K-major order would give ~0.
    assert stats.vgpr_reads_forwarded >= 0.8 * fma_lanes


def test_vlpc_run_main_job(capsys):
    rc = main(["run", str(Path(__file__).resolve().parents[2] / "examples" / "sgemm_nt.mlir"), "--seed", "3"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "verification passed" in out
    assert "emulator counts (what the kernel did, not how long it took" in out


def test_vlpc_run_dynamic_needs_sizes(tmp_path, capsys):
    f = tmp_path / "d.mlir"
    f.write_text(source(0, 0, 0, dynamic=True))
    assert main(["run", str(f), "--m", "64"]) == 1
    assert "N is dynamic ('?') in the IR: give it with --n" in capsys.readouterr().err
    assert main(["run", str(f), "--m", "64", "--n", "256", "--k", "0"]) == 1
    assert "--k must be positive" in capsys.readouterr().err
    assert main(["run", str(f), "--m", "64", "--n", "256", "--k", "32", "--strict"]) == 0


def test_vlpc_run_inputs_and_save(tmp_path, capsys):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 32), dtype=np.float32)
    b = rng.standard_normal((64, 32), dtype=np.float32)
    c = rng.standard_normal((64, 64), dtype=np.float32)
    paths = []
    for name, x in zip("abc", (a, b, c)):
        p = tmp_path / f"{name}.npy"
        np.save(p, x)
        paths.append(str(p))
    f = tmp_path / "g.mlir"
    f.write_text(source(64, 64, 32))
    outp = tmp_path / "out.npy"
    rc = main(["run", str(f), "--macro-tile", "64x64", "--inputs", *paths, "--alpha", "2", "--beta", "0",
               "--save-output", str(outp)])
    assert rc == 0, capsys.readouterr().err
    np.testing.assert_allclose(np.load(outp), 2 * a.astype(np.float64) @ b.T, rtol=1e-4, atol=1e-4)
