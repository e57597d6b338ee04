"""The command line as mlir-opt and rocblas-bench users meet it (issue 17): one spelling of
options, pass pipelines, IR dumps, --list-passes, outputs checked before the work, progress
bars, rocblas-bench's flags and CSV, code object v4."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

import vlpc
from vlpc.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
NT = str(ROOT / "examples" / "sgemm_nt.mlir")
DYN = str(ROOT / "examples" / "sgemm_dynamic.mlir")

SMALL = """builtin.module {
  func.func @g(%a: memref<64x32xf32>, %b: memref<256x32xf32>, %c: memref<64x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
        : memref<64x32xf32>, memref<256x32xf32>, memref<64x256xf32>, f32, f32
    func.return
  }
}
"""


# -- one spelling -------------------------------------------------------------------------

def test_every_option_is_spelled_with_hyphens():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        for action in p._actions:
            for opt in action.option_strings:
                # rocblas-bench's own camelCase spellings are accepted beside the hyphenated ones
                if opt in ("--transposeA", "--transposeB", "--a_type", "--b_type", "--c_type", "--d_type",
                           "--compute_type"):
                    continue
                assert "_" not in opt and opt == opt.lower(), (name, opt)


def test_list_passes_needs_no_file_and_is_plain_text(capsys):
    assert main(["opt", "--list-passes"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and ":class:" not in out
    assert "gemm-tile\n" in out and "macro-n=0" in out and "waves-per-simd=0" in out
    assert not re.search(r"\b[a-z]+_[a-z_]+=", out)  # no underscored option names
    # every line of a pass's text ends a sentence or an option list: nothing cut mid-sentence
    assert "options (defaults): split-k=0 mode=workspace local-split=1" in out


def test_pipeline_spec_uses_hyphens_and_round_trips(capsys):
    assert main(["compile", NT, "--macro-tile", "64x128", "--print-pipeline"]) == 0
    spec = capsys.readouterr().out.strip()
    assert "gemm-tile{macro-m=64 macro-n=128}" in spec
    assert main(["opt", NT, "-p", spec.split(",gemm-map-workgroups")[0]]) == 0  # vlpc opt reads it back
    assert re.search(r"macro_tile = array<i64: 64, 128>", capsys.readouterr().out)


def test_option_errors_use_hyphens(capsys):
    assert main(["opt", NT, "-p", "gemm-tile{macro-x=1}"]) == 1
    err = capsys.readouterr().err
    assert '"macro-x"' in err and '"macro-n"' in err and "macro_" not in err


# -- mlir-opt habits ------------------------------------------------------------------------

def test_pass_pipeline_builtin_module_is_accepted(capsys):
    assert main(["opt", NT, "-p", "gemm-tile{macro-n=128},gemm-map-workgroups"]) == 0
    plain = capsys.readouterr().out
    assert main(["opt", NT, "--pass-pipeline=builtin.module(gemm-tile{macro-n=128},gemm-map-workgroups)"]) == 0
    assert capsys.readouterr().out == plain


@pytest.mark.parametrize("spec, col", [("gemm-tile{macro-n=128", 22),
                                       ("builtin.module(gemm-tile{macro-n=128},,x)", 39)])
def test_bad_pipeline_keeps_xdsl_caret(spec, col, capsys):
    assert main(["opt", NT, "-p", spec]) == 1
    lines = capsys.readouterr().err.rstrip("\n").splitlines()
    assert lines[0].startswith(f"vlpc: bad pass pipeline at column {col}: ")
    assert lines[1] == f"  {spec}"
    assert lines[2] == " " * (col + 1) + "^"  # two spaces of indent, then the column (1-based)


def test_print_ir_after_and_before_one_pass(capsys):
    assert main(["compile", NT, "--emit", "asm", "--print-ir-after=gemm-tile",
                 "--print-ir-before", "gcn-insert-waitcnt,gcn-emit-descriptor"]) == 0
    err = capsys.readouterr().err
    headers = re.findall(r"^// -----// IR Dump (\w+) (\S+) //----- //$", err, re.M)
    assert headers == [("After", "gemm-tile"), ("Before", "gcn-insert-waitcnt"), ("Before", "gcn-emit-descriptor")]
    after_tile = err.split("IR Dump After gemm-tile")[1].split("// -----//")[0]
    assert "macro_tile" in after_tile and "gcn.kernel" not in after_tile  # the IR right after gemm-tile
    assert "s_waitcnt" not in err.split("IR Dump Before gcn-insert-waitcnt")[1].split("// -----//")[0]


def test_print_ir_after_all_uses_mlir_header(capsys):
    assert main(["opt", NT, "-p", "gemm-tile,gemm-map-workgroups", "--print-ir-after-all"]) == 0
    err = capsys.readouterr().err
    assert re.findall(r"// -----// IR Dump After (\S+) //----- //", err) == ["gemm-tile", "gemm-map-workgroups"]


def test_print_ir_after_unknown_pass(capsys):
    assert main(["opt", NT, "-p", "gemm-tile", "--print-ir-after=gemm-tiel"]) == 1
    assert "gemm-tiel is not a pass of this pipeline (passes: gemm-tile)" in capsys.readouterr().err


def test_opt_without_file(capsys):
    assert main(["opt", "-p", "gemm-tile"]) == 1
    assert "needs an input file" in capsys.readouterr().err


# -- outputs checked before the work -----------------------------------------------------

@pytest.fixture
def no_emulation(monkeypatch):
    """Fail the test if a command starts compiling or running."""
    import vlpc.report

    def boom(*a, **k):
        raise AssertionError("the work started before the outputs were checked")

    monkeypatch.setattr(vlpc.report, "build_report", boom)
    monkeypatch.setattr(vlpc, "compile", boom)


def test_report_checks_outputs_first(tmp_path, capsys, no_emulation):
    f = tmp_path / "g.mlir"
    f.write_text(SMALL)
    assert main(["report", str(f), "-o", str(tmp_path / "nodir" / "rep")]) == 1
    assert "directory" in capsys.readouterr().err and not (tmp_path / "nodir").exists()
    assert main(["report", str(f), "-o", str(tmp_path / "r"), "--chart", str(tmp_path / "r3.jpg")]) == 1
    assert ".svg or .png" in capsys.readouterr().err
    assert not (tmp_path / "r3.jpg").exists() and not (tmp_path / "r.md").exists()


def test_bench_checks_outputs_first(tmp_path, capsys, no_emulation):
    assert main(["bench", DYN, "--m", "64", "--n", "256", "--chart", str(tmp_path / "b.jpeg")]) == 1
    assert ".svg or .png" in capsys.readouterr().err
    assert main(["bench", DYN, "--m", "64", "--n", "256", "--csv", str(tmp_path / "no" / "b.csv")]) == 1
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".png", b"\x89PNG")])
def test_report_chart_format_follows_suffix(tmp_path, suffix, magic):
    f = tmp_path / "g.mlir"
    f.write_text(SMALL)
    chart = tmp_path / f"c{suffix}"
    assert main(["report", str(f), "--strategies", "sqc", "-o", str(tmp_path / "r"), "--chart", str(chart)]) == 0
    assert chart.read_bytes().startswith(magic)


# -- progress --------------------------------------------------------------------------------

class _TTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_counts_workgroups_of_a_split_plan():
    from vlpc.cli_support import Progress
    from vlpc.runtime import get_device, load_code_object

    kernel = vlpc.compile(SMALL.replace("64x32", "64x512").replace("256x32", "256x512"), split_k=2,
                          macro_tile=(64, 256), micro_tile=(64, 1)).kernel()  # one tile: 3 workgroups
    steps = kernel.plan(64, 256, 512)
    assert len(steps) == 2  # the slices, then the reduce kernel
    total = kernel.plan_workgroups(64, 256, 512)
    assert total == sum(s.grid[0] * s.grid[1] * s.grid[2] for s in steps) == 3
    dev = get_device("emulator")
    co = load_code_object(kernel.code_object)
    rng = np.random.default_rng(0)
    bufs = [dev.upload(rng.standard_normal(s, dtype=np.float32)) for s in ((64, 512), (256, 512), (64, 256))]
    seen: list[int] = []
    stream = _TTY()
    with Progress(total, "test", stream=stream) as bar:
        def record(done):
            seen.append(done)
            bar(done)
        kernel.execute(dev, co, [*bufs, np.int32(64), np.int32(256), np.int32(512), np.int32(512), np.int32(512),
                                 np.int32(256), np.float32(1), np.float32(0)], 64, 256, 512, 256, progress=record)
        assert bar.bar.n == total
    assert seen == sorted(seen) and seen[-1] == total
    assert "0/3 workgroups [" in stream.getvalue()  # drawn on the terminal (tqdm throttles the redraws)


def test_progress_is_silent_without_a_terminal_or_with_quiet():
    from vlpc.cli_support import Progress

    for stream, quiet in ((io.StringIO(), False), (_TTY(), True)):
        with Progress(10, "x", quiet=quiet, stream=stream) as bar:
            bar(5)
        assert stream.getvalue() == "" and bar.bar is None


def test_run_prints_the_header_before_the_launch(monkeypatch, capsys):
    import vlpc.cli_support as cs

    monkeypatch.setattr(cs, "_isatty", lambda stream: True)
    out = io.StringIO()
    at_first_progress: list[str] = []
    real_call = cs.Progress.__call__

    def spy(self, done):
        if not at_first_progress:
            at_first_progress.append(out.getvalue())
        real_call(self, done)

    monkeypatch.setattr(cs.Progress, "__call__", spy)
    with contextlib.redirect_stdout(out):
        assert main(["run", DYN, "--m", "64", "--n", "256", "--k", "32"]) == 0
    assert at_first_progress and at_first_progress[0].startswith("sgemm_dyn: M=64 N=256 K=32")
    assert "verification passed" not in at_first_progress[0]
    assert "workgroups" in capsys.readouterr().err  # the bar, on stderr
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", DYN, "--m", "64", "--n", "256", "--k", "32", "-q"]) == 0
    assert capsys.readouterr().err == ""


# -- rocblas-bench ---------------------------------------------------------------------------

def _rocblas_args(*extra):
    return build_parser().parse_args(["bench", "-f", "gemm", *extra])


@pytest.mark.parametrize("ta, tb", [("N", "N"), ("N", "T"), ("T", "N"), ("T", "T")])
def test_rocblas_problem_is_computed_with_column_major_semantics(ta, tb):
    """The IR bench builds from rocblas-bench's flags computes BLAS's column-major
    C = alpha op(A) op(B) + beta C over the same bytes (checked against NumPy)."""
    from vlpc.bench import rocblas_problem

    m, n, k = 40, 72, 24
    lda = (m if ta == "N" else k) + 3
    ldb = (k if tb == "N" else n) + 5
    ldc = m + 2
    rb = rocblas_problem(_rocblas_args("-r", "f32_r", "--transposeA", ta, "--transposeB", tb, "-m", str(m),
                                       "-n", str(n), "-k", str(k), "--lda", str(lda), "--ldb", str(ldb),
                                       "--ldc", str(ldc), "--alpha", "2", "--beta", "0.5"))
    rng = np.random.default_rng(1)
    # column-major storage: element (i, j) of a rows x cols matrix at i + j * ld
    a_cm = rng.standard_normal(lda * (k if ta == "N" else m)).astype(np.float32)
    b_cm = rng.standard_normal(ldb * (n if tb == "N" else k)).astype(np.float32)
    c_cm = rng.standard_normal(ldc * n).astype(np.float32)

    def mat(buf, rows, cols, ld):
        return buf.reshape(cols, ld)[:, :rows].T.astype(np.float64)

    op_a = mat(a_cm, m, k, lda) if ta == "N" else mat(a_cm, k, m, lda).T
    op_b = mat(b_cm, k, n, ldb) if tb == "N" else mat(b_cm, n, k, ldb).T
    want = 2 * op_a @ op_b + 0.5 * mat(c_cm, m, n, ldc)
    kernel = vlpc.compile(rb.mlir()).kernel()
    # vlpc's row-major view of the same bytes: A is rocblas's B, B is rocblas's A, C is C^T
    a_rm = b_cm.reshape(-1, ldb)
    b_rm = a_cm.reshape(-1, lda)
    c_rm = c_cm.reshape(n, ldc)
    r = vlpc.run(kernel, a_rm, b_rm, c_rm, alpha=2.0, beta=0.5)
    got = r.c[:, :m].T  # C^T back to rocblas's m x n
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4)


def test_rocblas_bench_command_and_csv(capsys):
    argv = ["bench", "-f", "gemm", "-r", "f32_r", "--transposeA", "N", "--transposeB", "T", "-m", "256", "-n", "64",
            "-k", "32", "--alpha", "1", "--beta", "0", "-i", "10", "-j", "1", "--rocblas-csv"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# modeled: ")  # the emulator's times are the timing model's (issue 36)
    out = out[1:]
    assert out[0] == "transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,rocblas-Gflops,us"
    # rocblas-bench's defaults: lda = m (N), ldb = n (T), ldc = m; then Gflops and us (no hardware
    # time on the emulator: empty, or the timing model's figures)
    fields = out[1].split(",")
    assert fields[:10] == ["N", "T", "256", "64", "32", "1", "256", "0", "64", "256"] and len(fields) == 12


def test_rocblas_flags_errors(capsys):
    assert main(["bench", "-f", "gemm", "-m", "64", "-n", "64"]) == 1
    assert "-m, -n and -k" in capsys.readouterr().err
    assert main(["bench", "-f", "gemm", "-m", "64", "-n", "64", "-k", "8", "--lda", "8"]) == 1
    assert "--lda 8 is smaller than 64" in capsys.readouterr().err
    assert main(["bench", DYN, "-r", "f64_r"]) == 1
    assert "--precision" in capsys.readouterr().err
    assert main(["bench"]) == 1
    assert "rocblas-bench's problem flags" in capsys.readouterr().err


def test_bench_defaults_to_the_emulator_like_run():
    args = build_parser().parse_args(["bench", DYN])
    assert args.device == build_parser().parse_args(["run", DYN]).device == "emulator"


# -- code object v4 ----------------------------------------------------------------------------

def test_code_object_v4_assembles_loads_and_runs(tmp_path, capsys):
    from vlpc.runtime import load_code_object

    out = tmp_path / "v4.hsaco"
    assert main(["compile", NT, "--code-object-version", "4", "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data[:4] == b"\x7fELF" and data[7] == 64 and data[8] == 2  # ELFOSABI_AMDGPU_HSA, ABI version 2 = v4
    assert load_code_object(data).code_object_version == 4
    assert main(["compile", NT, "--emit", "asm"]) == 0
    asm5 = capsys.readouterr().out
    assert ".amdhsa_code_object_version 5" in asm5 and "amdhsa.version: [ 1, 2 ]" in asm5
    k4 = vlpc.compile(SMALL, code_object_version=4).kernel()
    assert ".amdhsa_code_object_version 4" in k4.asm and "amdhsa.version: [ 1, 1 ]" in k4.asm
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 32), dtype=np.float32)
    b = rng.standard_normal((256, 32), dtype=np.float32)
    c = np.full((64, 256), np.nan, np.float32)  # beta = 0 must not read C
    r = vlpc.run(k4, a, b, c, alpha=1.0, beta=0.0)
    assert np.allclose(r.c, a.astype(np.float64) @ b.T.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_code_object_version_is_checked():
    with pytest.raises(vlpc.VlpcError, match="code_object_version must be 4 or 5"):
        vlpc.compile(SMALL, code_object_version=3)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["compile", NT, "--code-object-version", "6"])
