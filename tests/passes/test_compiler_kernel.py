"""The default f32 kernel's figures (issue: compiler core) and the assembler grid.

Each figure is measured from the generated assembly with vlpc.analysis (the same
code benchmarks/kernel_figures.py prints) or from the code object's descriptor.
"""

from __future__ import annotations

import itertools
import re

import pytest

import vlpc
from vlpc.analysis import loop_figures
from vlpc.runtime import load_code_object
from vlpc.targets import GFX906

SEED_NON_FMA_PER_1024 = 293  # the seed's hand-written loop (issue text)


def gemm_source(m: int, n: int, k: int, lda: int | None = None) -> str:
    a_type = f"memref<{m}x{k}xf32>" if lda is None else f"memref<{m}x{k}xf32, strided<[{lda}, 1]>>"
    return f"""
builtin.module {{
  func.func @sgemm(%a: {a_type}, %b: memref<{n}x{k}xf32>, %c: memref<{m}x{n}xf32>, %alpha: f32, %beta: f32) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "NT"}} : {a_type}, memref<{n}x{k}xf32>, memref<{m}x{n}xf32>, f32, f32
    func.return
  }}
}}
"""


@pytest.fixture(scope="module")
def default_kernel():
    return vlpc.compile(gemm_source(4096, 4096, 640), "gfx906")


def test_register_budget_and_occupancy(default_kernel):
    co = load_code_object(default_kernel.code_object)
    k = co.kernels["sgemm"]
    assert k.descriptor.vgpr_count <= 84
    assert default_kernel.kernel().vgprs <= 84
    assert default_kernel.kernel().sgprs <= GFX906.addressable_sgprs
    assert k.descriptor.group_segment_fixed_size == 0
    # 32-row tiles fit 64 VGPRs: gcn-allocate-registers' automatic occupancy gives 4 waves per SIMD
    assert default_kernel.kernel().vgprs <= 64
    li = default_kernel.kernel().launch_info
    occ = GFX906.occupancy(default_kernel.kernel().vgprs, default_kernel.kernel().sgprs, 0, li["workgroup_size"])
    assert occ.waves_per_simd == 4


def test_no_lds_no_barrier(default_kernel):
    asm = default_kernel.asm
    assert not re.search(r"^\s*ds_", asm, re.M)
    assert "s_barrier" not in asm


def test_loop_is_fma_with_one_sgpr(default_kernel):
    f = loop_figures(default_kernel.asm)
    li = default_kernel.kernel().launch_info
    assert (li["macro_m"], li["k_step"]) == (32, 16)
    assert f.fma == 32 * 16  # one FMA per A value of a K step (32 rows x 16 k)
    assert f.valu_all_fma_with_one_sgpr
    # A in SGPRs: the FMA's scalar operand comes from s_load_dwordx16 results, one per row
    assert f.counts["s_load_dwordx16"] == 32


def test_non_fma_budget_is_half_the_seed(default_kernel):
    f = loop_figures(default_kernel.asm)
    assert f.non_fma_per_1024 <= 150
    assert f.non_fma_per_1024 <= SEED_NON_FMA_PER_1024 / 2


def test_a_batches_one_wait_per_64_fmas(default_kernel):
    """The default A schedule: batches of 64 SGPRs (4 rows) loaded together after the previous
    batch's FMAs, so one lgkmcnt(0) per 64 FMAs (no cover); schedule cover: batches of 32
    SGPRs, each load covered by the previous batch's 32 FMAs, twice the waits."""
    f = loop_figures(default_kernel.asm)
    assert f.a_loads == 32
    lgkm = len(re.findall(r"s_waitcnt[^\n]*lgkmcnt\(0\)", _loop(default_kernel.asm)))
    assert lgkm == f.fma // 64
    cover = vlpc.compile(gemm_source(4096, 4096, 640), "gfx906", schedule="cover")
    fc = loop_figures(cover.asm)
    assert fc.a_cover is not None and fc.a_cover >= 32
    assert len(re.findall(r"s_waitcnt[^\n]*lgkmcnt\(0\)", _loop(cover.asm))) == fc.fma // 32


def _loop(asm: str) -> str:
    return asm[asm.index("_k_loop:"):asm.index("s_cbranch_scc1 .L", asm.index("_k_loop:"))]


def test_descriptor_fields(default_kernel):
    co = load_code_object(default_kernel.code_object)
    d = co.kernels["sgemm"].descriptor
    md = co.kernels["sgemm"].metadata
    assert d.kernarg_size == 56
    assert d.enable_sgpr_kernarg_segment_ptr and not d.enable_sgpr_dispatch_ptr
    assert d.user_sgpr_count == 2
    assert d.enable_sgpr_workgroup_id_x and d.enable_sgpr_workgroup_id_y and not d.enable_sgpr_workgroup_id_z
    assert d.enable_vgpr_workitem_id == 0
    assert md.max_flat_workgroup_size == default_kernel.kernel().launch_info["workgroup_size"]
    assert md.wavefront_size == 64
    assert [a.name for a in md.args] == ["A", "B", "C", "M", "N", "K", "lda", "ldb", "ldc", "alpha", "beta"]
    assert [a.offset for a in md.args] == [0, 8, 16, 24, 28, 32, 36, 40, 44, 48, 52]


def test_target_ids_in_elf_flags():
    src = gemm_source(64, 256, 32)
    any_ = load_code_object(vlpc.compile(src, "gfx906").code_object).target_id
    assert str(any_) == "gfx906"
    on = load_code_object(vlpc.compile(src, "gfx906:sramecc+").code_object).target_id
    assert on.settings["sramecc"] is True and on.settings["xnack"] is None
    off = load_code_object(vlpc.compile(src, "gfx906:sramecc-:xnack-").code_object).target_id
    assert off.settings == {"sramecc": False, "xnack": False}


# The assembler must accept every kernel the pipeline can produce for the supported options.
GRID = list(itertools.product([(64, 64), (64, 128), (64, 256)], [16, 8], ["static", "dynamic", "wide-lda"]))


@pytest.mark.parametrize("macro,k_step,shape", GRID, ids=[f"{m[0]}x{m[1]}-k{k}-{s}" for m, k, s in GRID])
def test_assembler_accepts_configuration(macro, k_step, shape):
    if shape == "static":
        src = gemm_source(128, 512, 64)
    elif shape == "wide-lda":
        src = gemm_source(128, 512, 64, lda=70000)  # row offsets beyond the SMEM immediate range
    else:
        src = gemm_source(128, 512, 64).replace("128x64xf32", "?x?xf32").replace("512x64xf32", "?x?xf32").replace("128x512xf32", "?x?xf32")
    r = vlpc.compile(src, "gfx906", macro_tile=macro, k_step=k_step,
                     schedule="cover" if k_step == 8 else "default")
    co = load_code_object(r.code_object)
    assert co.kernels["sgemm"].descriptor.vgpr_count <= 84
    f = loop_figures(r.asm)
    assert f.valu_all_fma_with_one_sgpr and (k_step != 8 or f.a_cover >= 32)
