"""Issue 9, compiler side: every mistake in the input or the command line gets one clear
error and the documented exit code; outputs are never half-written; internal errors
say so, name the pass and are told apart from user errors by their exit code.

(The located diagnostics for IR mistakes are in ``test_compiler_errors.py``; this file
adds files that are not MLIR at all, hangs and parser crashes, option conflicts,
output handling and ``vlpc run``'s own arguments.)
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fuzz_support import memoised_compiler, run_cli
from vlpc.errors import EXIT_INTERNAL, EXIT_USAGE, EXIT_USER

SMALL = """builtin.module {
  func.func @sgemm(%a: memref<64x16xf32>, %b: memref<256x16xf32>, %c: memref<64x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<64x16xf32>, memref<256x16xf32>, memref<64x256xf32>, f32, f32
    func.return
  }
}
"""
DYNAMIC = SMALL.replace("64x16xf32", "?x?xf32").replace("256x16xf32", "?x?xf32").replace("64x256xf32", "?x?xf32")


@pytest.fixture
def small(tmp_path):
    f = tmp_path / "small.mlir"
    f.write_text(SMALL)
    return f


def one_line_error(rc, err, code=EXIT_USER, match=None):
    assert rc == code, err
    assert "Traceback" not in err, err
    assert ("internal error" in err) == (code == EXIT_INTERNAL), err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    if match is not None:
        assert match in lines[0], err
    return lines[0]


# -- targets and options ---------------------------------------------------------------------


@pytest.mark.parametrize("target", ["gfx908", "gfx96", "GFX906x", "", "sm_80"])
@pytest.mark.parametrize("cmd", [["compile", "--emit", "asm"], ["opt", "--emit", "asm", "-p", "gemm-tile"], ["run"]])
def test_unknown_target_lists_targets(small, cmd, target):
    rc, _, err = run_cli([cmd[0], str(small), *cmd[1:], "--target", target])
    one_line_error(rc, err, match="supported targets: gfx900, gfx906")


@pytest.mark.parametrize("argv,match", [
    (["--waves-per-simd", "0"], "waves-per-simd=0: gfx906 runs 1 to 10 waves per SIMD"),
    (["--waves-per-simd", "11"], "waves-per-simd=11"),
    (["--emit", "asm", "-o", "k.hsaco"], "--emit asm conflicts with -o"),
    (["--emit", "hsaco", "-o", "k.s"], "--emit hsaco conflicts with -o"),
    (["--emit", "mlir", "-o", "k.o"], "--emit mlir conflicts with -o"),
])
def test_option_mistakes_are_user_errors(small, tmp_path, argv, match):
    argv = [a if a not in ("k.hsaco", "k.s", "k.o") else str(tmp_path / a) for a in argv]
    rc, _, err = run_cli(["compile", str(small), *argv])
    one_line_error(rc, err, match=match)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("k.")]


@pytest.mark.parametrize("argv", [["--macro-tile", "64x"], ["--k-step", "12"], ["--waves-per-simd", "x"],
                                  ["--emit", "ll"], ["--bogus"]])
def test_malformed_options_are_usage_errors(small, argv):
    rc, _, err = run_cli(["compile", str(small), *argv])
    assert rc == EXIT_USAGE and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(("vlpc compile: error:", "vlpc: error:")), err


def test_opt_asm_without_lowering_says_nothing_to_compile(small):
    rc, _, err = run_cli(["opt", str(small), "-p", "gemm-tile", "--emit", "asm"])
    one_line_error(rc, err, match="nothing to compile")


# -- files that are not (valid) MLIR ---------------------------------------------------------


def test_unreadable_inputs(tmp_path):
    binary = tmp_path / "bin.mlir"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    cases = [
        (tmp_path / "missing.mlir", "No such file or directory"),
        (tmp_path, "Is a directory"),
        (binary, "not UTF-8 text (byte 0xff at offset 0)"),
    ]
    for cmd in ("compile", "opt", "run"):
        for path, match in cases:
            rc, _, err = run_cli([cmd, str(path)])
            one_line_error(rc, err, match=f"vlpc: cannot read {path}: {match}")
    rc, _, err = run_cli(["compile", "-", "--emit", "mlir"], stdin=b"\x80abc")
    one_line_error(rc, err, match="cannot read standard input: not UTF-8")


def test_empty_and_non_mlir_text(tmp_path):
    for text in ("", "\n", "hello world", "int main() { return 0; }", "\x00\x01"):
        f = tmp_path / "t.mlir"
        f.write_text(text)
        rc, _, err = run_cli(["compile", str(f), "--emit", "asm"])
        assert rc == EXIT_USER and "Traceback" not in err, err
        assert err.startswith(f"{f}:") and ": error: " in err.splitlines()[0], err


def test_module_without_matmul(tmp_path):
    f = tmp_path / "e.mlir"
    f.write_text("builtin.module {\n  func.func @f(%x: f32) {\n    func.return\n  }\n}\n")
    rc, _, err = run_cli(["compile", str(f), "--emit", "asm"])
    one_line_error(rc, err, match="nothing to compile: the module has no gcn.kernel")


def test_unterminated_string_does_not_hang(tmp_path):
    """xDSL's string regex backtracked exponentially on an unclosed string (a hang)."""
    f = tmp_path / "u.mlir"
    f.write_text(SMALL.replace('layout = "NT"}', 'layout = "NT} : memref<64x16xf32>, memref<256x16xf32>, xx'))
    rc, _, err = run_cli(["compile", str(f), "--emit", "asm"], timeout=20)
    assert rc == EXIT_USER and f"{f}:3:" in err and "closing string literal" in err, err


def test_deeply_nested_input(tmp_path):
    f = tmp_path / "deep.mlir"
    f.write_text("builtin.module {" * 3000 + "}" * 3000)
    rc, _, err = run_cli(["opt", str(f)])
    assert rc == EXIT_USER and "nested too deeply" in err and "Traceback" not in err, err


def test_xdsl_parser_crash_is_a_located_error(tmp_path):
    """xDSL's linalg parser raises IndexError when outs(...) is missing: a located error."""
    f = tmp_path / "l.mlir"
    f.write_text("builtin.module {\n  func.func @m(%a: memref<64x16xf32>, %b: memref<256x16xf32>) {\n"
                 "    linalg.matmul_transpose_b ins(%a, %b : memref<64x16xf32>, memref<256x16xf32>)\n"
                 "    func.return\n  }\n}\n")
    rc, _, err = run_cli(["opt", str(f)])
    assert rc == EXIT_USER and "Traceback" not in err and "internal error" not in err, err
    assert err.startswith(f"{f}:3:") and ": error: " in err, err


# -- outputs ---------------------------------------------------------------------------------


def test_unwritable_outputs(small, tmp_path):
    (tmp_path / "adir").mkdir()
    for out, match in [(tmp_path / "nodir" / "k.s", "No such file or directory"),
                       (tmp_path / "adir", "it is a directory")]:
        rc, _, err = run_cli(["compile", str(small), "--emit", "asm", "-o", str(out)])
        one_line_error(rc, err, match=f"vlpc: cannot write {out}: {match}")


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root can write anywhere")
def test_read_only_directory(small, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        rc, _, err = run_cli(["compile", str(small), "--emit", "asm", "-o", str(ro / "k.s")])
        one_line_error(rc, err, match="cannot write")
    finally:
        ro.chmod(0o755)


def test_output_mode_follows_umask_and_existing_file(small, tmp_path):
    """Atomic writes go through mkstemp (mode 0600): the result must still get the usual mode."""
    out = tmp_path / "k.s"
    old = os.umask(0o022)
    try:
        assert run_cli(["compile", str(small), "--emit", "asm", "-o", str(out)])[0] == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o644
        out.chmod(0o640)
        assert run_cli(["compile", str(small), "--emit", "asm", "-o", str(out)])[0] == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_failure_while_writing_keeps_the_old_output(small, tmp_path, monkeypatch):
    out = tmp_path / "k.s"
    out.write_text("previous good output")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    rc, _, err = run_cli(["compile", str(small), "--emit", "asm", "-o", str(out)])
    one_line_error(rc, err, match="cannot write")
    assert out.read_text() == "previous good output"
    assert [p.name for p in tmp_path.iterdir()] == sorted(["small.mlir", "k.s"]) or \
        sorted(p.name for p in tmp_path.iterdir()) == ["k.s", "small.mlir"]


def test_assembler_failure_writes_nothing(small, tmp_path, monkeypatch):
    """LLVM rejecting vlpc's output is an internal error (exit 70) and writes no file."""
    from vlpc.errors import AssemblerError
    import vlpc.runtime.toolchain as tcmod

    real = tcmod.find_toolchain

    class Broken:
        def __init__(self, tc):
            self.tc = tc

        def describe(self):
            return "broken"

        def assemble(self, asm, tid, name=""):
            raise AssemblerError("kernel.s:12:3: error: invalid operand for instruction")

    monkeypatch.setattr(tcmod, "find_toolchain", lambda *a, **k: Broken(real()))
    out = tmp_path / "k.hsaco"
    out.write_bytes(b"previous good output")
    rc, _, err = run_cli(["compile", str(small), "-o", str(out)])
    assert rc == EXIT_INTERNAL and "invalid operand" in err and "Traceback" not in err, err
    assert out.read_bytes() == b"previous good output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.hsaco", "small.mlir"]


# -- internal errors -------------------------------------------------------------------------


def test_internal_error_names_the_pass_and_how_to_report(small, monkeypatch):
    from vlpc.passes.gemm_map_subgroups import GemmMapSubgroupsPass

    def boom(self, ctx, op):
        raise KeyError("wg_tile")

    monkeypatch.setattr(GemmMapSubgroupsPass, "apply", boom)
    rc, _, err = run_cli(["compile", str(small), "--emit", "asm"])
    line = one_line_error(rc, err, code=EXIT_INTERNAL)
    assert "internal error in pass 'gemm-map-subgroups': KeyError" in line
    assert "this is a bug in vlpc" in line and "please report it" in line
    monkeypatch.setenv("VLPC_DEBUG", "1")
    rc, _, err = run_cli(["compile", str(small), "--emit", "asm"])
    assert rc == EXIT_INTERNAL and "Traceback" in err  # VLPC_DEBUG=1 shows where


def test_internal_error_outside_passes(small, monkeypatch):
    import vlpc.dialects.gcn_asm as asm

    monkeypatch.setattr(asm, "print_assembly", lambda *a, **k: 1 / 0)
    rc, _, err = run_cli(["compile", str(small), "--emit", "asm"])
    line = one_line_error(rc, err, code=EXIT_INTERNAL)
    assert "internal error: ZeroDivisionError" in line and "please report" in line


def test_no_traceback_at_the_top_level(tmp_path):
    """A real process: user errors and usage errors print no traceback."""
    bad = tmp_path / "bad.mlir"
    bad.write_bytes(b"\xff\xfe")
    unterminated = tmp_path / "u.mlir"
    unterminated.write_text('builtin.module { "' + "x" * 200 + "\n}\n")
    for argv, code in [(["compile", str(bad)], EXIT_USER),
                       (["compile", str(unterminated), "--emit", "asm"], EXIT_USER),
                       (["run", str(bad), "--target", "gfx908"], EXIT_USER),
                       (["compile", str(bad), "--k-step", "3"], EXIT_USAGE)]:
        proc = subprocess.run([sys.executable, "-m", "vlpc.cli", *argv], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == code, proc.stderr
        assert "Traceback" not in proc.stderr and proc.stderr.strip(), proc.stderr


# -- vlpc run: its own arguments ---------------------------------------------------------------


@pytest.fixture
def dyn(tmp_path):
    f = tmp_path / "dyn.mlir"
    f.write_text(DYNAMIC)
    return f


@pytest.mark.parametrize("argv,match", [
    (["--iterations", "0"], "--iterations must be at least 1, got 0"),
    (["--iterations", "-3"], "--iterations must be at least 1, got -3"),
    (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
    (["--m", "0", "--n", "256", "--k", "16"], "--m must be positive, got 0"),
    (["--m", "64", "--n", "-256", "--k", "16"], "--n must be positive, got -256"),
    (["--m", "64", "--n", "256", "--k", "0"], "--k must be positive, got 0"),
])
def test_run_size_and_iteration_mistakes(dyn, argv, match):
    rc, _, err = run_cli(["run", str(dyn), *argv])
    one_line_error(rc, err, match=match)


def test_run_dynamic_size_missing(dyn):
    with memoised_compiler():
        rc, _, err = run_cli(["run", str(dyn), "--m", "64", "--n", "256"])
        one_line_error(rc, err, match="K is dynamic ('?') in the IR: give it with --k")


def test_run_bad_inputs(small, tmp_path):
    good = {n: tmp_path / f"{n}.npy" for n in "abc"}
    for (name, shape), path in zip((("a", (64, 16)), ("b", (256, 16)), ("c", (64, 256))), good.values()):
        np.save(path, np.ones(shape, np.float32))
    np.save(tmp_path / "f64.npy", np.ones((64, 16)))
    np.save(tmp_path / "short.npy", np.ones((32, 16), np.float32))
    np.save(tmp_path / "vec.npy", np.ones(16, np.float32))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object))
    np.savez(tmp_path / "arch.npz", a=np.ones(3))
    (tmp_path / "text.npy").write_text("not numpy")
    (tmp_path / "trunc.npy").write_bytes((tmp_path / "a.npy").read_bytes()[:100])
    cases = [
        ("f64.npy", "input A has dtype float64, expected float32"),
        ("short.npy", "input A has shape (32, 16), expected (64, 16)"),
        ("vec.npy", "input A has shape (16,), expected (64, 16)"),
        ("objects.npy", "cannot read input A from"),
        ("arch.npz", "is an .npz archive"),
        ("text.npy", "not a NumPy .npy file"),
        ("trunc.npy", "cannot read input A from"),
        ("missing.npy", "No such file or directory"),
    ]
    with memoised_compiler():
        for a, match in cases:
            rc, _, err = run_cli(["run", str(small), "--inputs", str(tmp_path / a), str(good["b"]), str(good["c"])])
            one_line_error(rc, err, match=match)
        out = tmp_path / "out" / "c.npy"
        rc, _, err = run_cli(["run", str(small), "--inputs", *map(str, good.values()), "--save-output", str(out)])
        one_line_error(rc, err, match=f"cannot write {out}: directory {out.parent} does not exist")
        out.parent.mkdir()
        rc, stdout, err = run_cli(["run", str(small), "--inputs", *map(str, good.values()),
                                   "--save-output", str(out), "--alpha", "1", "--beta", "0"])
        assert rc == 0, err
        assert "verification passed" in stdout
        np.testing.assert_allclose(np.load(out), np.full((64, 256), 16.0, np.float32))
        assert sorted(p.name for p in out.parent.iterdir()) == ["c.npy"]  # no temporary left


def test_run_device_fault_exit_code(small, monkeypatch):
    """A fault on the device is exit 4 with the fault's one-paragraph description."""
    from vlpc.runtime.emulator.device import EmulatorDevice
    from vlpc.runtime.emulator.errors import OutOfBoundsAccess

    def fault(self, co, kernel, launch, args):
        raise OutOfBoundsAccess("load of 4 bytes at 0x100000000: 4096 bytes past the end of allocation",
                                kernel=kernel.name, pc=0x40, address=0x7f0040, wave=((0, 0, 0), 1),
                                instruction="global_load_dword v1, v0, s[4:5]")

    monkeypatch.setattr(EmulatorDevice, "_run", fault)
    with memoised_compiler():
        rc, _, err = run_cli(["run", str(small)])
    line = one_line_error(rc, err, code=4)
    assert "out-of-bounds memory access in kernel 'sgemm' at pc +0x40" in line
    assert "workgroup (0, 0, 0) wave 1" in line and "global_load_dword" in line


@pytest.mark.parametrize("flag,value,match", [("--alpha", "nan", "--alpha nan is not a finite float32"),
                                              ("--beta", "inf", "--beta inf is not a finite float32"),
                                              ("--alpha", "1e39", "--alpha 1e+39 is not a finite float32")])
def test_run_non_finite_scalars(small, flag, value, match):
    with memoised_compiler():
        rc, _, err = run_cli(["run", str(small), flag, value])
    one_line_error(rc, err, match=match)
