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
    occ = GFX906.occupancy(default_kernel.kernel().vgprs, default_kernel.kernel().sgprs, 0, 256)
    assert occ.waves_per_simd == 3


def test_no_lds_no_barrier(default_kernel):
    asm = default_kernel.asm
    assert not re.search(r"^\s*ds_", asm, re.M)
    assert "s_barrier" not in asm


def test_loop_is_fma_with_one_sgpr(default_kernel):
    f = loop_figures(default_kernel.asm)
    assert f.fma == 1024
    assert f.valu_all_fma_with_one_sgpr
    # A in SGPRs: the FMA's scalar operand comes from s_load_dwordx16 results
    assert f.counts["s_load_dwordx16"] == 64


def test_non_fma_budget_is_half_the_seed(default_kernel):
    f = loop_figures(default_kernel.asm)
    assert f.non_fma_per_1024 <= 150
    assert f.non_fma_per_1024 <= SEED_NON_FMA_PER_1024 / 2


def test_a_latency_cover(default_kernel):
    f = loop_figures(default_kernel.asm)
    assert f.a_loads == 64
    assert f.a_cover is not None and f.a_cover >= 32


def test_descriptor_fields(default_kernel):
    co = load_code_object(default_kernel.code_object)
    d = co.kernels["sgemm"].descriptor
    md = co.kernels["sgemm"].metadata
    assert d.kernarg_size == 56
    assert d.enable_sgpr_kernarg_segment_ptr and not d.enable_sgpr_dispatch_ptr
    assert d.user_sgpr_count == 2
    assert d.enable_sgpr_workgroup_id_x and d.enable_sgpr_workgroup_id_y and not d.enable_sgpr_workgroup_id_z
    assert d.enable_vgpr_workitem_id == 0
    assert md.max_flat_workgroup_size == 256
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
    r = vlpc.compile(src, "gfx906", macro_tile=macro, k_step=k_step)
    co = load_code_object(r.code_object)
    assert co.kernels["sgemm"].descriptor.vgpr_count <= 84
    f = loop_figures(r.asm)
    assert f.valu_all_fma_with_one_sgpr and f.a_cover >= 32
