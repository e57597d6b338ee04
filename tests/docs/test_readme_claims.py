"""Figures and claims of the manual (docs/kernels.md, docs/plans.md), asserted exactly
against what vlpc measures now.

The expected numbers are read from the docs themselves, so a change to the kernels that
moves a figure fails here until the docs say the new figure (and a docs edit that does not
match the product fails too).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import vlpc
from vlpc.analysis import loop_figures
from vlpc.targets import GFX906

ROOT = Path(__file__).resolve().parents[2]
KERNELS = (ROOT / "docs" / "kernels.md").read_text()
PLANS = (ROOT / "docs" / "plans.md").read_text()
EXAMPLE = ROOT / "examples" / "sgemm_nt.mlir"

SGEMM = """builtin.module {
  func.func @sgemm(%a: memref<4096x640xf32>, %b: memref<4096x640xf32>, %c: memref<4096x4096xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<4096x640xf32>, memref<4096x640xf32>, memref<4096x4096xf32>, f32, f32
    func.return
  }
}
"""
DGEMM = SGEMM.replace("xf32", "xf64").replace(": f32", ": f64").replace("f32, f32", "f64, f64")


def table_row(title: str) -> list[str]:
    """The cells of the row of docs/kernels.md's "The default kernels" table that starts with ``title``."""
    section = KERNELS.split("## The default kernels", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].startswith(title):
            return cells[1:]
    raise AssertionError(f"docs/kernels.md's figures table has no row '{title}'")


def first_int(cell: str) -> int:
    return int(re.match(r"\d+", cell).group())


@pytest.fixture(scope="module")
def kernels():
    """(SGEMM, DGEMM) default kernels for 4096x4096x640, as benchmarks/kernel_figures.py builds them."""
    out = []
    for src, fma in ((SGEMM, "v_fma_f32"), (DGEMM, "v_fma_f64")):
        r = vlpc.compile(src, "gfx906")
        k = r.kernel()
        out.append((k, loop_figures(r.asm, fma=fma), GFX906.occupancy(k.vgprs, k.sgprs, 0, k.launch_info["workgroup_size"])))
    return out


def test_vgprs_and_occupancy(kernels):
    row = table_row("VGPRs / occupancy")
    for (k, _, occ), cell in zip(kernels, row[:2]):
        vgprs, waves = (int(x) for x in re.findall(r"\d+", cell)[:2])
        assert (k.vgprs, occ.waves_per_simd) == (vgprs, waves), cell


def test_sgprs(kernels):
    row = table_row("SGPRs")
    for (k, _, _), cell in zip(kernels, row[:2]):
        assert k.sgprs == first_int(cell), f"docs/kernels.md says {cell} SGPRs, the kernel has {k.sgprs}"


def test_non_fma_per_1024_fmas(kernels):
    row = table_row("non-FMA instructions per 1024 FMAs")
    for (_, f, _), cell in zip(kernels, row[:2]):
        assert f.non_fma_per_1024 == first_int(cell), f"docs/kernels.md {cell}, measured {f.non_fma_per_1024}"
    assert first_int(row[2]) == 293  # the seed's published loop, not measured here


def test_a_latency_cover_and_loop_valu(kernels):
    row = table_row("A latency cover")
    for (_, f, _), cell in zip(kernels, row[:2]):
        assert f.a_cover == first_int(cell)
        assert f.valu_all_fma_with_one_sgpr


def test_lds_and_barriers(kernels):
    assert table_row("LDS, barriers")[:2] == ["0, 0", "0, 0"]
    for src in (SGEMM, DGEMM):
        asm = vlpc.compile(src, "gfx906").asm
        assert not re.search(r"^\s*ds_", asm, re.M) and "s_barrier" not in asm


def test_bundled_example_gets_split_k_2():
    m = re.search(r"bundled 256x512x640 example gets \S+ tiles and S = (\d+)", PLANS)
    assert m, "docs/plans.md no longer states the bundled example's split"
    assert "memref<256x640xf32>" in EXAMPLE.read_text() and "memref<512x640xf32>" in EXAMPLE.read_text()
    k = vlpc.compile(EXAMPLE.read_text(), filename=str(EXAMPLE)).kernel()
    assert k.split_k == int(m.group(1)) == 2
    li = k.launch_info
    assert k.launch(256, 512, 640).grid == (-(-512 // li["macro_n"]), -(-256 // li["macro_m"]), 2)


def test_report_ratios_on_the_bundled_example():
    """docs/kernels.md: "On 256x512x640 the VGPR read/write ratio legacy/sqc is 2.06 (forwarded reads
    excluded), and 3.60 with the seed's accounting of forwarded accumulator chains"."""
    from vlpc.report import build_report

    m = re.search(r"On 256x512x640 the VGPR read/write ratio legacy/sqc is (\d+\.\d\d).*?and (\d+\.\d\d) with the seed's "
                  r"accounting", KERNELS, re.S)
    assert m, "docs/kernels.md no longer states the report's ratios"
    rep = build_report(EXAMPLE.read_text(), str(EXAMPLE), ["lds", "sqc"])
    assert f"{rep.ratio('vgpr_rw'):.2f}" == m.group(1)
    assert f"{rep.ratio('vgpr_rw_elided'):.2f}" == m.group(2)
    assert rep.by("sqc").rows["lds_rw"] == 0  # "LDS traffic is 0 for sqc"


def test_print_ir_after_all_prints_each_pass(capsys):
    """README quickstart: ``--print-ir-after-all`` prints the IR after each pass: one header per pass of
    the pipeline, in order, each followed by that pass's effect."""
    from vlpc.cli import main

    assert main(["compile", str(EXAMPLE), "--emit", "mlir", "--print-ir-after-all"]) == 0
    err = capsys.readouterr().err
    assert main(["compile", str(EXAMPLE), "--print-pipeline"]) == 0
    passes = capsys.readouterr().out.strip().split(",")
    parts = re.split(r"^// -----// IR Dump After (\S+) //----- //$", err, flags=re.M)
    names, dumps = parts[1::2], dict(zip(parts[1::2], parts[2::2]))
    assert names == passes and len(passes) == 10
    assert all(d.lstrip().startswith("builtin.module") for d in dumps.values())
    tile = re.search(r"macro_tile = array<i64: (\d+), (\d+)>", dumps["gemm-tile"])
    assert "macro_tile" not in dumps["convert-linalg-to-gemm"] and tile
    gx, gy = 512 // int(tile.group(2)), 256 // int(tile.group(1))
    assert f"grid = array<i64: {gx}, {gy}, 1>" in dumps["gemm-map-workgroups"]
    assert "sg_tile" in dumps["gemm-map-subgroups"] and "sg_tile" not in dumps["gemm-map-workgroups"]
    assert "split_k = 2" in dumps["gemm-split-k"] and f"grid = array<i64: {gx}, {gy}, 2>" in dumps["gemm-split-k"]
    assert "gcn.kernel" in dumps["convert-gemm-to-gcn"] and "!gcn.sgpr<x16>" in dumps["convert-gemm-to-gcn"]
    assert "!gcn.sgpr<x" not in dumps["gcn-allocate-registers"] and "!gcn.sgpr<s[" in dumps["gcn-allocate-registers"]
    assert "gcn.s_waitcnt" not in dumps["gcn-allocate-registers"] and "gcn.s_waitcnt" in dumps["gcn-insert-waitcnt"]
    assert "amdhsa" not in dumps["gcn-insert-hazard-nops"] and "amdhsa_next_free_vgpr" in dumps["gcn-emit-descriptor"]


def test_k_loop_scalar_overhead(kernels):
    """docs/kernels.md: "the K loop is 6 SALU instructions and the branch" (besides the A loads and waits)."""
    m = re.search(r"the K loop is (\d+) SALU instructions and the branch", KERNELS)
    assert m, "docs/kernels.md no longer states the K loop's scalar overhead"
    _, f, _ = kernels[0]
    salu = sum(c for mn, c in f.counts.items()
               if mn.startswith("s_") and not mn.startswith(("s_load", "s_waitcnt", "s_cbranch", "s_branch")))
    assert salu == int(m.group(1))
    assert sum(c for mn, c in f.counts.items() if mn.startswith(("s_cbranch", "s_branch"))) == 1


def test_lds_kernel_resources():
    """docs/kernels.md: "The default 64x256 lds kernel uses 112 VGPRs and 20 KiB of LDS per workgroup
    and runs 2 waves per SIMD, limited by VGPRs"."""
    m = re.search(r"The default 64x256 lds kernel uses (\d+) VGPRs and (\d+) KiB of LDS per workgroup\s+and runs "
                  r"(\d+) waves per SIMD, limited by VGPRs", KERNELS)
    assert m, "docs/kernels.md no longer states the lds kernel's resources"
    r = vlpc.compile(SGEMM, "gfx906", strategy="lds")
    k = r.kernel()
    from vlpc.runtime import load_code_object

    lds = load_code_object(r.code_object).kernels["sgemm"].descriptor.group_segment_fixed_size
    occ = GFX906.occupancy(k.vgprs, k.sgprs, lds, k.launch_info["workgroup_size"])
    assert (k.vgprs, lds, occ.waves_per_simd, occ.limited_by) == (
        int(m.group(1)), int(m.group(2)) * 1024, int(m.group(3)), "VGPRs")
