"""Bad input gets a located diagnostic or a one-line error and a non-zero exit code."""

from __future__ import annotations

import subprocess
import sys

import pytest

import vlpc
from vlpc.cli import main
from vlpc.errors import DiagnosticError, VlpcError

GOOD = """builtin.module {
  func.func @sgemm(%a: memref<128x64xf32>, %b: memref<256x64xf32>, %c: memref<128x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<128x64xf32>, memref<256x64xf32>, memref<128x256xf32>, f32, f32
    func.return
  }
}
"""


def with_matmul(types: str, layout: str = "NT", args: str | None = None) -> str:
    a, b, c, al, be = [t.strip() for t in types.split(",")]
    args = args or f"%a: {a}, %b: {b}, %c: {c}, %alpha: {al}, %beta: {be}"
    return f"""builtin.module {{
  func.func @sgemm({args}) {{
    gemm.matmul %a, %b, %c, %alpha, %beta {{layout = "{layout}"}} : {types}
    func.return
  }}
}}
"""


CASES = [
    ("inconsistent K", with_matmul("memref<128x64xf32>, memref<256x32xf32>, memref<128x256xf32>, f32, f32"),
     "3:5: error: inconsistent K"),
    ("inconsistent M", with_matmul("memref<128x64xf32>, memref<256x64xf32>, memref<64x256xf32>, f32, f32"),
     "3:5: error: inconsistent M"),
    ("element types", with_matmul("memref<128x64xf32>, memref<256x64xf64>, memref<128x256xf32>, f32, f32"),
     "3:5: error: element types differ"),
    ("integer elements", with_matmul("memref<128x64xi32>, memref<256x64xi32>, memref<128x256xi32>, i32, i32"),
     "3:5: error: element type must be f32 or f64"),
    ("bad layout", with_matmul("memref<128x64xf32>, memref<256x64xf32>, memref<128x256xf32>, f32, f32", layout="XY"),
     "3:5: error: layout must be one of"),
    ("mixed scalar type", with_matmul("memref<128x64xf64>, memref<256x64xf64>, memref<128x256xf64>, f32, f64"),
     "3:5: error: alpha must have the element type f64"),
    ("NN shapes inconsistent", with_matmul("memref<128x64xf32>, memref<256x64xf32>, memref<128x256xf32>, f32, f32", layout="NN"),
     "3:5: error: inconsistent K: A (M x K) has 64 but B (K x N) has 256"),
    ("zero size", GOOD.replace("128x", "0x"), "error: operand A has a zero-sized dimension"),
    ("leading dimension too small", GOOD.replace("memref<128x64xf32>", "memref<128x64xf32, strided<[32, 1]>>"),
     "error: operand A: leading dimension 32 is smaller than the row length 64"),
    ("memref offset", GOOD.replace("memref<128x64xf32>", "memref<128x64xf32, strided<[64, 1], offset: 8>>"),
     "3:5: error: operand A: memrefs with an offset are not supported"),
    ("syntax", GOOD.replace("func.return", "func.return %"), "4:17: error:"),
    ("unknown op", GOOD.replace("func.return", "gemm.bogus"), "4:5: error:"),
]


@pytest.mark.parametrize("name,src,expected", CASES, ids=[c[0] for c in CASES])
def test_located_diagnostics(tmp_path, capsys, name, src, expected):
    f = tmp_path / "bad.mlir"
    f.write_text(src)
    out = tmp_path / "out.hsaco"
    out.write_bytes(b"previous good output")
    rc = main(["compile", str(f), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"{f}:" in err and expected in err, err
    assert "Traceback" not in err
    # a failed compile does not clobber an existing output
    assert out.read_bytes() == b"previous good output"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


@pytest.mark.parametrize("argv,expected", [
    (["--target", "gfx908"], "unknown target 'gfx908' (supported targets: gfx900, gfx906)"),
    (["--target", "gfx906:foo+"], "bad feature 'foo+'"),
    (["--macro-tile", "64x96"], "does not divide into wavefronts"),
    (["--macro-tile", "128x256", "--micro-tile", "64x1"], "more than one row block per workgroup is not supported"),
    (["--macro-tile", "64x2048"], "2048 work-items per workgroup; gfx906 allows at most 1024"),
    (["--micro-tile", "64x2"], "one column per work-item"),
    (["--split-k", "2", "--strategy", "lds"], "the lds strategy does not split K"),
    (["--waves-per-simd", "4", "--macro-tile", "64x256", "--micro-tile", "64x1"], "register allocation failed"),
])
def test_option_errors(tmp_path, capsys, argv, expected):
    f = tmp_path / "g.mlir"
    f.write_text(GOOD)
    rc = main(["compile", str(f), "--emit", "asm", *argv])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert expected in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_is_one_line(capsys):
    assert main(["compile", "/nonexistent/g.mlir"]) == 1
    assert capsys.readouterr().err.strip() == "vlpc: cannot read /nonexistent/g.mlir: No such file or directory"


def test_api_raises_diagnostic_with_location():
    with pytest.raises(DiagnosticError) as e:
        vlpc.compile(GOOD.replace("256x64xf32", "256x32xf32"), filename="g.mlir")
    assert (e.value.file, e.value.line, e.value.col) == ("g.mlir", 3, 5)
    with pytest.raises(VlpcError, match="unknown option"):
        vlpc.compile(GOOD, tile=3)


def test_usage_error_exit_code():
    proc = subprocess.run([sys.executable, "-m", "vlpc.cli", "compile"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
