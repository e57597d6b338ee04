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

ROOT = Path(__file__).resolve().parents[2]
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


#: An f16 linalg.matmul accumulating into f32 (xDSL's own linalg body does not verify it).
LINALG_F16 = """builtin.module {
  func.func @mm16(%a: memref<32x32xf16>, %b: memref<32x64xf16>, %c: memref<32x64xf32>) {
    linalg.matmul ins(%a, %b : memref<32x32xf16>, memref<32x64xf16>) outs(%c : memref<32x64xf32>)
    func.return
  }
}
"""


@pytest.mark.parametrize("name", ["transpose_b", "f16"])
def test_xdsl_opt_reads_vlpcs_linalg_and_prints_vlpc_compiles_assembly(tmp_path, name):
    """Issue 36 item 7: xdsl-opt with the printed pipeline (`vlpc compile - --print-pipeline`) gives
    the assembly `vlpc compile --emit asm` gives, for the named linalg.matmul_transpose_b and an f16
    linalg.matmul (both failed in xDSL's linalg: not registered / a VerifyException)."""
    from fuzz_support import run_cli

    if name == "f16":
        src = tmp_path / "f16.mlir"
        src.write_text(LINALG_F16)
    else:
        src = ROOT / "examples" / "linalg_matmul_transpose_b.mlir"
    code, spec, err = run_cli(["compile", "-", "--print-pipeline"], stdin=b"")
    assert code == 0, err
    asm = xdsl_opt(src, "-p", spec.strip(), "-t", "gcn-asm")
    out = tmp_path / "v.s"
    code, _, err = run_cli(["compile", str(src), "--emit", "asm", "-o", str(out)])
    assert code == 0, err
    assert asm == out.read_text()
    if name == "f16":
        assert "v_dot2_f32_f16" in asm


def test_multiverse_linalg_is_vlpcs_superset():
    from vlpc.dialects.linalg import Linalg
    from xdsl.dialects.linalg import Linalg as XdslLinalg

    linalg = Universe.get_multiverse().all_dialects["linalg"]()
    assert linalg is Linalg
    names = {op.name for op in linalg.operations}
    assert {op.name for op in XdslLinalg.operations} <= names
    assert {"linalg.matmul_transpose_a", "linalg.matmul_transpose_b", "linalg.batch_matmul"} <= names


def test_xdsl_opt_writes_vlpcs_code_object(tmp_path):
    """-t 'gcn-hsaco{output="F"}': the code object `vlpc compile -o F.hsaco` writes, byte for byte."""
    src = tmp_path / "sgemm.mlir"
    src.write_text(GEMM)
    hsaco = tmp_path / "x.hsaco"
    asm = xdsl_opt(src, "-p", vlpc.pipeline_spec(vlpc.pipeline("gfx906", **SMALL)), "-t",
                   f'gcn-hsaco{{output="{hsaco}"}}')
    ref = vlpc.compile(GEMM, "gfx906", cache=False, **SMALL)
    assert hsaco.read_bytes() == ref.code_object
    assert hsaco.read_bytes()[:4] == b"\x7fELF"
    assert asm == ref.asm


def test_gcn_hsaco_needs_an_output_path(tmp_path):
    src = tmp_path / "sgemm.mlir"
    src.write_text(GEMM)
    with pytest.raises(vlpc.VlpcError, match="needs the code object's path"):
        xdsl_opt(src, "-p", vlpc.pipeline_spec(vlpc.pipeline("gfx906", **SMALL)), "-t", "gcn-hsaco")
    assert list(tmp_path.iterdir()) == [src]
