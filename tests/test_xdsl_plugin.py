"""vlpc as an xdsl-opt plugin: the xdsl.universe entry point, and xdsl-opt producing vlpc's assembly.

(lit_tests/plugin/ runs the xdsl-opt executable itself.)
"""

from __future__ import annotations

import contextlib
import io
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from xdsl.universe import Universe
from xdsl.xdsl_opt_main import xDSLOptMain

import vlpc
from vlpc.passes import get_all_passes
from vlpc.universe import VLPC_UNIVERSE, GcnAsmTarget

ROOT = Path(__file__).resolve().parent.parent
SMALL = dict(macro_tile=(16, 64), micro_tile=(16, 1), k_step=8)

GEMM = """builtin.module {
  func.func @sgemm(%a: memref<16x32xf32>, %b: memref<64x32xf32>, %c: memref<16x64xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<16x32xf32>, memref<64x32xf32>, memref<16x64xf32>, f32, f32
    func.return
  }
}
"""


def xdsl_opt(path: Path, *args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        xDSLOptMain(args=[str(path), *args]).run()
    return out.getvalue()


def test_entry_point_is_installed():
    eps = {ep.name: ep for ep in entry_points(group="xdsl.universe")}
    assert "vlpc" in eps, "reinstall vlpc (pip install -e .) to register the xdsl.universe entry point"
    assert eps["vlpc"].value == "vlpc.universe:VLPC_UNIVERSE"
    assert eps["vlpc"].load() is VLPC_UNIVERSE


def test_multiverse_has_vlpc_dialects_passes_target():
    multiverse = Universe.get_multiverse()
    assert {"gemm", "gcn"} <= set(multiverse.all_dialects)
    assert set(get_all_passes()) <= set(multiverse.all_passes)
    assert "convert-linalg-to-gemm" in multiverse.all_passes
    assert multiverse.all_targets["gcn-asm"]() is GcnAsmTarget
    assert multiverse.all_dialects["gemm"]().name == "gemm"


def test_xdsl_opt_emits_the_same_assembly_as_vlpc(tmp_path):
    src = tmp_path / "sgemm.mlir"
    src.write_text(GEMM)
    passes = vlpc.pipeline("gfx906:xnack-", **SMALL)
    asm = xdsl_opt(src, "-p", vlpc.pipeline_spec(passes), "-t", 'gcn-asm{target="gfx906:xnack-"}')
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx906:xnack-"' in asm
    assert asm == vlpc.compile(GEMM, "gfx906:xnack-", **SMALL).asm


def test_xdsl_opt_runs_single_passes(tmp_path):
    src = tmp_path / "sgemm.mlir"
    src.write_text(GEMM)
    out = xdsl_opt(src, "-p", "gemm-tile{macro-m=16 macro-n=64 micro-m=16 micro-n=1 k-step=8},gemm-map-workgroups")
    assert "macro_tile = array<i64: 16, 64>" in out and "grid = array<i64: 1, 1, 1>" in out


def test_gcn_asm_needs_a_lowered_module(tmp_path):
    src = tmp_path / "sgemm.mlir"
    src.write_text(GEMM)
    with pytest.raises(vlpc.VlpcError, match="gcn.kernel"):
        xdsl_opt(src, "-t", "gcn-asm")
