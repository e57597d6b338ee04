"""The legacy LDS-tiled kernel (convert-gemm-to-gcn{strategy=lds}): correctness on the
strict emulator, its resources and traffic, and the errors it reports."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vlpc
from vlpc.cli import main
from vlpc.errors import DiagnosticError, VlpcError
from vlpc.runtime import get_device, load_code_object

from reference import assert_gemm_close, assert_padding_untouched, gemm_reference
from vlpc.targets import get_target


def source(m, n, k, lda=None, ldb=None, ldc=None, dynamic=False, dtype="f32"):
    def mt(rows, cols, ld):
        if dynamic:
            return f"memref<?x?x{dtype}>" if ld is None else f"memref<?x?x{dtype}, strided<[?, 1]>>"
        return (f"memref<{rows}x{cols}x{dtype}>" if ld is None
                else f"memref<{rows}x{cols}x{dtype}, strided<[{ld}, 1]>>")
    a, b, c = mt(m, k, lda), mt(n, k, ldb), mt(m, n, ldc)
    return f"""builtin.module {{
  func.func @sgemm(%a: {a}, %b: {b}, %c: {c}, %alpha: {dtype}, %beta: {dtype}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : {a}, {b}, {c}, {dtype}, {dtype}
    func.return
  }}
}}
"""


def run_lds(m, n, k, lda=None, ldb=None, ldc=None, alpha=1.25, beta=-0.75, dynamic=False, seed=0,
            strategy="lds", dtype="f32", **opts):
    lda_, ldb_, ldc_ = lda or k, ldb or k, ldc or n
    r = vlpc.compile(source(m, n, k, lda, ldb, ldc, dynamic, dtype), "gfx906", strategy=strategy, **opts)
    kern = r.kernel()
    launch = kern.launch(m, n, k)
    np_t = np.float32 if dtype == "f32" else np.float64
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, lda_)).astype(np_t)
    b = rng.standard_normal((n, ldb_)).astype(np_t)
    c0 = rng.standard_normal((m, ldc_)).astype(np_t)
    dev = get_device("emulator", strict=True)
    bufs = [dev.upload(x) for x in (a, b, c0)]  # exactly-sized buffers: any overrun faults
    stats = dev.launch(load_code_object(r.code_object), "sgemm", grid=launch.grid, block=launch.block,
                       args=[*bufs, np.int32(m), np.int32(n), np.int32(k), np.int32(lda_), np.int32(ldb_),
                             np.int32(ldc_), np_t(alpha), np_t(beta)])
    out = dev.download(bufs[2], np_t, (m, ldc_))
    assert_gemm_close(out[:, :n], *gemm_reference(a, b, c0, alpha, beta, layout="NT", m=m, n=n, k=k))
    assert_padding_untouched(out, c0, n)
    return stats, r


def test_default_tile_traffic_and_resources():
    m, n, k = 64, 256, 48
    stats, r = run_lds(m, n, k)
    kern = r.kernel()
    d = 16 // 2  # LDS stage depth: half the K step
    stages = k // d
    assert kern.metadata[".group_segment_fixed_size"] == 2 * (64 + 256) * d * 4 == 20480
    assert kern.vgprs <= 128
    occ = get_target("gfx906").occupancy(kern.vgprs, kern.sgprs, 20480, 256)
    assert (occ.waves_per_simd, occ.limited_by) == (2, "VGPRs")
    # one barrier per stage and one in the prologue, for each of the 4 waves
    assert stats.barriers == 4 * (stages + 1)
    # every work-item reads 8 A and 8 B values from LDS per k
    assert stats.lds_bytes_read == 256 * k * 16 * 4
    # every stage is written once (plus the re-loaded last one: the clamped prefetch)
    assert stats.lds_bytes_written == (stages + 1) * (64 + 256) * d * 4
    assert stats.by_mnemonic["v_fma_f32"] == 4 * k * 64 + 4 * 64  # K loop + epilogue (per wave)
    assert stats.by_class["lds"] > 0
    asm = r.asm
    for mnemonic in ("ds_read_b128", "ds_write2st64_b32", "s_barrier", "global_store_dwordx4"):
        assert mnemonic in asm
    # FMAs in the K loop read VGPRs only (the legacy kernel: no SGPR operand)
    loop = asm[asm.index(".Lsgemm_k_loop:"):asm.index("s_cbranch_scc1")]
    fmas = [line for line in loop.splitlines() if "v_fma_f32" in line]
    assert len(fmas) == 2 * d * 64
    assert all(", s" not in line for line in fmas)


@pytest.mark.parametrize("macro,k_step", [((64, 64), 16), ((64, 128), 8), ((64, 256), 8)])
def test_tiles_and_k_steps(macro, k_step):
    stats, r = run_lds(128, 2 * macro[1], 48, macro_tile=macro, k_step=k_step)
    d = k_step // 2
    assert r.kernel().metadata[".group_segment_fixed_size"] == 2 * (64 + macro[1]) * d * 4


def test_dynamic_sizes_and_leading_dimensions():
    run_lds(128, 128, 64, lda=80, ldb=72, ldc=136, dynamic=True, macro_tile=(64, 128))


def test_alpha_beta_zero():
    run_lds(64, 64, 16, alpha=0.0, beta=2.0, macro_tile=(64, 64))
    run_lds(64, 64, 16, alpha=3.0, beta=0.0, macro_tile=(64, 64))


def test_same_result_class_as_sqc_on_the_same_problem():
    lds_stats, _ = run_lds(64, 256, 32, seed=3)
    sqc_stats, _ = run_lds(64, 256, 32, seed=3, strategy="sqc", split_k=1)  # (auto would split K in LDS: L2)
    assert sqc_stats.lds_bytes_read == sqc_stats.barriers == 0
    assert lds_stats.by_mnemonic["v_fma_f32"] == sqc_stats.by_mnemonic["v_fma_f32"]
    # the legacy kernel moves every FMA operand through VGPRs
    assert lds_stats.vgpr_reads > sqc_stats.vgpr_reads


def test_f64_default_tile_traffic_and_resources():
    """DGEMM: the default f64 tile 32x256 (k-step 8, LDS stages of 4 k), 4x8 doubles per work-item."""
    m, n, k = 32, 256, 32
    stats, r = run_lds(m, n, k, dtype="f64")
    kern = r.kernel()
    d = 8 // 2
    stages = k // d
    assert kern.launch(m, n, k).block == (256, 1, 1)
    assert kern.metadata[".group_segment_fixed_size"] == 2 * (32 + 256) * d * 8 == 18432
    # 64 accumulator VGPRs (32 pairs) + 24 of fragments alone exceed the 84 of 3 waves per SIMD
    assert 88 <= kern.vgprs <= 128
    occ = get_target("gfx906").occupancy(kern.vgprs, kern.sgprs, 18432, 256)
    assert (occ.waves_per_simd, occ.limited_by) == (2, "VGPRs")
    assert get_target("gfx906").occupancy(64, 32, 18432, 256).waves_per_simd == 3  # LDS would allow 3
    assert stats.barriers == 4 * (stages + 1)
    # every work-item reads 4 A and 8 B doubles from LDS per k
    assert stats.lds_bytes_read == 256 * k * (4 + 8) * 8
    assert stats.lds_bytes_written == (stages + 1) * (32 + 256) * d * 8
    assert stats.by_mnemonic["v_fma_f64"] == 4 * k * 32 + 4 * 32  # K loop + epilogue (per wave)
    assert "v_fma_f32" not in stats.by_mnemonic
    asm = r.asm
    for mnemonic in ("ds_read_b128", "ds_write2st64_b64", "ds_write_b32", "s_barrier", "global_load_dwordx4",
                     "v_mul_f64", "global_store_dwordx4"):
        assert mnemonic in asm
    # alpha and beta: 8 bytes at 48 and 56 (kernarg_layout("f64"))
    assert re.search(r"s_load_dwordx2 s\[\d+:\d+\], s\[0:1\], 0x30 +; kernarg alpha", asm)
    assert re.search(r"s_load_dwordx2 s\[\d+:\d+\], s\[0:1\], 0x38 +; kernarg beta", asm)
    loop = asm[asm.index(".Lsgemm_k_loop:"):asm.index("s_cbranch_scc1")]
    fmas = [line for line in loop.splitlines() if "v_fma_f64" in line]
    assert len(fmas) == 2 * d * 32
    assert all(", s" not in line for line in fmas)  # VGPR pairs only


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("shape", [(64, 256, 32), (128, 256, 16)])
def test_both_types_two_shapes(dtype, shape):
    stats, r = run_lds(*shape, dtype=dtype, seed=sum(shape))
    assert r.kernel().launch(*shape).block == (256, 1, 1)
    assert stats.by_mnemonic["v_fma_" + dtype] > 0 and stats.barriers > 0


@pytest.mark.parametrize("macro,k_step", [((32, 64), 8), ((32, 128), 16)])
def test_f64_tiles_and_k_steps(macro, k_step):
    stats, r = run_lds(64, 2 * macro[1], 32, macro_tile=macro, k_step=k_step, dtype="f64")
    d = k_step // 2
    assert r.kernel().metadata[".group_segment_fixed_size"] == 2 * (32 + macro[1]) * d * 8
    assert r.kernel().vgprs <= 128


def test_f64_dynamic_sizes_leading_dimensions_and_scalars():
    run_lds(64, 256, 32, lda=40, ldb=48, ldc=264, dynamic=True, dtype="f64")
    run_lds(32, 64, 16, alpha=0.0, beta=2.0, dtype="f64")
    run_lds(32, 64, 16, alpha=3.0, beta=0.0, dtype="f64")


def _compile_error(text, **opts) -> str:
    with pytest.raises(VlpcError) as e:
        vlpc.compile(text, "gfx906", strategy="lds", **opts)
    return str(e.value)


def test_errors():
    assert "not a multiple of 64" in _compile_error(source(100, 256, 32))
    assert "not a multiple of 256" in _compile_error(source(64, 300, 32))
    assert "not a multiple of 16" in _compile_error(source(64, 256, 40))
    msg = _compile_error(source(64, 256, 32, dtype="f64"), macro_tile=(64, 256))
    assert "macro tile 64x256" in msg and "f64 needs M = 32" in msg and "4x8" in msg
    assert "not a multiple of 32" in _compile_error(source(48, 256, 32, dtype="f64"))
    assert "not a multiple of 8" in _compile_error(source(32, 256, 36, dtype="f64"))
    msg = _compile_error(source(32, 256, 32), macro_tile=(32, 256), micro_tile=(32, 1))
    assert "macro tile 32x256" in msg and "8x8" in msg
    with pytest.raises(DiagnosticError, match="unknown strategy 'nope' .*sqc, lds"):
        vlpc.compile(source(64, 256, 32), "gfx906", strategy="nope")
    # a budget the kernel cannot meet is a located allocation error
    assert "register allocation failed" in _compile_error(source(64, 256, 32), waves_per_simd=3)
    # what only the sqc kernel does: other layouts, strided batches, fused epilogues
    assert "layout 'NN'" in _compile_error(source(64, 256, 32).replace('"NT"', '"NN"')
                                           .replace("memref<256x32xf32>", "memref<32x256xf32>"))
    t3 = "memref<2x64x32xf32>", "memref<2x256x32xf32>", "memref<2x64x256xf32>"
    batched = source(64, 256, 32)
    for old, new in zip(("memref<64x32xf32>", "memref<256x32xf32>", "memref<64x256xf32>"), t3):
        batched = batched.replace(old, new)
    assert "strided batch" in _compile_error(batched)
    relu = source(64, 256, 32).replace('{layout = "NT"}', '{layout = "NT", epilogue = ["relu"]}')
    assert "fused epilogues (relu)" in _compile_error(relu)


def test_dynamic_sizes_must_be_whole_tiles():
    r = vlpc.compile(source(64, 256, 32, dynamic=True), "gfx906", strategy="lds")
    with pytest.raises(VlpcError, match="M=100 is not a multiple of 64.*strategy lds"):
        r.kernel().launch(100, 256, 32)
    with pytest.raises(VlpcError, match="K=40 is not a multiple of 16"):
        r.kernel().launch(64, 256, 40)


def test_cli_compile_verbose_and_run(tmp_path, capsys):
    f = tmp_path / "g.mlir"
    f.write_text(source(64, 256, 32))
    assert main(["compile", str(f), "--strategy", "lds", "-v", "-o", str(tmp_path / "g.hsaco")]) == 0
    err = capsys.readouterr().err
    assert "LDS 20480 bytes; occupancy 2 waves/SIMD (limited by VGPRs)" in err
    assert main(["run", str(f), "--strategy", "lds", "--strict"]) == 0
    out = capsys.readouterr().out
    assert "verification passed" in out and "barriers 20" in out
