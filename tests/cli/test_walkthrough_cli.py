"""A first walk through vlpc as a user: what the README shows must do what it says, and the
usual mistakes (an output named like the input, an unwritable output of a long run, a
truncated option, a bad clock, an empty file) must be one-line errors that lose nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import vlpc
from vlpc.cli import main

from launch_support import nt_source

ROOT = Path(__file__).resolve().parents[2]

SMALL = nt_source(64, 256, 32).replace("@sgemm", "@g")  # C 64x256, K 32


@pytest.fixture
def small(tmp_path) -> Path:
    f = tmp_path / "g.mlir"
    f.write_text(SMALL)
    return f


# -- README: `vlpc run FILE -v` also prints the modeled time ----------------------------------

def test_run_verbose_prints_the_modeled_time(small, capsys):
    assert main(["run", str(small), "-v", "-q"]) == 0
    out = capsys.readouterr().out
    line = next((x for x in out.splitlines() if "TFLOP/s modeled" in x), None)
    assert line is not None, out
    assert "modeled" in line and " us" in line  # the timing model's time and rate
    assert main(["run", str(small), "-q"]) == 0  # without -v: no timing model, no modeled line
    assert "TFLOP/s modeled" not in capsys.readouterr().out


# -- an output named like the input never replaces it -------------------------------------------

@pytest.mark.parametrize("cmd", [["compile"], ["compile", "--emit", "mlir"], ["opt", "-p", "gemm-tile"]])
def test_output_onto_the_input_is_refused(small, capsys, cmd):
    before = small.read_text()
    assert main([cmd[0], str(small), *cmd[1:], "-o", str(small)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the input file" in err and "Traceback" not in err
    assert small.read_text() == before


def test_output_onto_the_input_through_another_path_is_refused(small, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = small.read_text()
    assert main(["compile", "g.mlir", "-o", str(tmp_path / "." / "g.mlir")]) == 1
    assert "is the input file" in capsys.readouterr().err
    assert small.read_text() == before


def test_tune_checks_its_outputs_before_the_search(small, capsys, tmp_path, monkeypatch):
    import vlpc.tune

    def boom(*a, **k):
        raise AssertionError("the search ran before the outputs were checked")

    monkeypatch.setattr(vlpc.tune, "tune", boom)
    monkeypatch.setattr(vlpc.tune, "search", boom)  # (the command's search)
    assert main(["tune", str(small), "-q", "-o", str(tmp_path / "nodir" / "t.json")]) == 1
    assert "directory" in capsys.readouterr().err
    assert main(["tune", str(small), "-q", "--csv", str(tmp_path / "nodir" / "t.csv")]) == 1
    assert "directory" in capsys.readouterr().err
    before = small.read_text()
    assert main(["tune", str(small), "-q", "-o", str(small)]) == 1
    assert "is the input file" in capsys.readouterr().err and small.read_text() == before


def test_opt_dash_o_dash_is_standard_output(small, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["opt", str(small), "-p", "gemm-tile", "-o", "-"]) == 0
    assert "macro_tile" in capsys.readouterr().out
    assert not (tmp_path / "-").exists()


# -- options --------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["run", "{f}", "--see", "1"], ["compile", "{f}", "--emi", "asm"],
                                  ["bench", "{f}", "--ener"]])
def test_a_truncated_option_is_not_taken_for_another(small, capsys, argv):
    with pytest.raises(SystemExit) as e:
        main([a.format(f=small) for a in argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and err.count("\n") == 1


@pytest.mark.parametrize("cmd", ["bench", "report", "tune"])
@pytest.mark.parametrize("clock", ["0", "-5", "nan", "5000"])
def test_a_clock_outside_the_range_is_a_user_error(small, capsys, cmd, clock, monkeypatch, tmp_path):
    import vlpc.tune

    monkeypatch.chdir(tmp_path)  # (a report that ran anyway would write its files here)
    def boom(*a, **k):
        raise AssertionError("the search ran with a clock the timing model refuses")

    monkeypatch.setattr(vlpc.tune, "tune", boom)
    monkeypatch.setattr(vlpc.tune, "search", boom)  # (the command's search)
    # a user error (1), as --energy reports it, before any work: not a device fault (4)
    assert main([cmd, str(small), "--clock", clock]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"vlpc: --clock {float(clock):g}: engine clock") and "100..3000 MHz" in err
    assert err.count("\n") == 1


# -- inputs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "\n  \n", "// only a comment\n"])
def test_an_empty_input_says_so(tmp_path, capsys, text):
    f = tmp_path / "empty.mlir"
    f.write_text(text)
    assert main(["compile", str(f)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{f}:1:1: error: empty input") and "Could not parse" not in err
    with pytest.raises(vlpc.VlpcError, match="empty input"):
        vlpc.compile(text)


# -- the Python API -----------------------------------------------------------------------------------

def test_compiled_module_repr_is_short():
    mod = vlpc.compile(SMALL)
    text = repr(mod)
    assert len(text) < 4000 and "s_load_dwordx16" not in text and "\\x7fELF" not in text
    assert "target_id='gfx906'" in text


def test_save_output_onto_an_input_is_refused(small, capsys, tmp_path):
    import numpy as np

    paths = []
    for name, shape in (("A", (64, 32)), ("B", (256, 32)), ("C", (64, 256))):
        paths.append(tmp_path / f"{name}.npy")
        np.save(paths[-1], np.full(shape, 0.5, np.float32))
    c_before = paths[2].read_bytes()
    args = ["run", str(small), "-q", "--inputs", *map(str, paths)]
    assert main([*args, "--save-output", str(paths[2])]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--save-output" in err and "is the input file" in err
    assert paths[2].read_bytes() == c_before  # the user's C is kept
    assert main([*args, "--save-output", str(tmp_path / "out.npy")]) == 0
    assert np.load(tmp_path / "out.npy")[0, 0] == np.float32(0.5 * 0.5 * 32 + 0.5 * 0.5) and paths[2].read_bytes() == c_before


@pytest.mark.parametrize("opt", ["--macro-tile", "--micro-tile"])
@pytest.mark.parametrize("value", ["0x64", "32x0", "-32x64"])
def test_a_tile_below_one_is_a_usage_error_naming_the_option(small, capsys, opt, value):
    with pytest.raises(SystemExit) as e:
        main(["compile", str(small), f"{opt}={value}"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {opt}:" in err and "at least 1" in err and "_tile" not in err and err.count("\n") == 1


def test_compile_of_a_directory_path_says_it_is_a_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").mkdir()
    for given in ("examples", str(tmp_path / "examples")):
        with pytest.raises(vlpc.VlpcError, match="Is a directory") as e:
            vlpc.compile(given)
        assert "not registered" not in str(e.value)


def test_print_plan_describes_the_options_of_a_tuned_json(small, capsys, tmp_path):
    """`vlpc compile FILE --options TUNED.json --print-plan` describes the plan compiled with the
    file's options (its CU count and explicit split), as the same options given as flags do."""
    import json

    tuned = tmp_path / "t.json"
    tuned.write_text(json.dumps({"options": {"macro_tile": [32, 64], "k_step": 8, "split_k": 2, "cus": 64}}))
    assert main(["compile", str(small), "--options", str(tuned), "--print-plan"]) == 0
    from_file = capsys.readouterr().out
    assert main(["compile", str(small), "--macro-tile", "32x64", "--k-step", "8", "--split-k", "2", "--cus", "64",
                 "--print-plan"]) == 0
    from_flags = capsys.readouterr().out
    assert from_file == from_flags
    assert "64 CUs" in from_file and "split-k 2," in from_file and "(auto)" not in from_file


def test_report_of_standard_input_writes_gemm_report(capsys, tmp_path, monkeypatch):
    import io
    import sys

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SMALL.encode())))
    assert main(["report", "-", "--strategies", "sqc", "-q"]) == 0
    assert "wrote gemm-report.md" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gemm-report.csv", "gemm-report.md", "gemm-report.svg"]


def test_sweep_over_static_sizes_or_with_m_n_says_why(small, capsys):
    assert main(["bench", str(small), "--sweep", "--stop", "512", "-q"]) == 1
    err = capsys.readouterr().err
    assert "--sweep varies M = N, but the IR fixes M=64 N=256" in err and err.count("\n") == 1
    dyn = str(ROOT / "examples" / "sgemm_dynamic.mlir")
    assert main(["bench", dyn, "--sweep", "--stop", "512", "-m", "100", "-q"]) == 1
    assert "drop -m" in capsys.readouterr().err


def test_report_of_an_int8_gemm_runs_with_its_default_beta(capsys, tmp_path):
    """docs/kernels.md: `vlpc report` measures the dot kernels too; an int8 -> i32 kernel's default beta is
    an integer (2, as vlpc run), not the f32 default 0.5 it then refuses."""
    f = tmp_path / "q.mlir"
    f.write_text(SMALL.replace("f32>", "i8>").replace("64x256xi8>", "64x256xi32>").replace("f32", "i32"))
    assert main(["report", str(f), "-o", str(tmp_path / "q"), "-q"]) == 0
    out = capsys.readouterr().out
    info = vlpc.compile(f.read_text(), split_k=1).kernel().launch_info  # the compiled plan's kernel, measured
    row = next(x for x in out.splitlines() if x.startswith(f"| sqc | {info['macro_m']}x{info['macro_n']} |"))
    assert row.endswith("| yes (max abs error 0.00e+00) |")  # int8 -> i32 is exact


def test_list_passes_says_each_sentence_once(capsys):
    assert main(["opt", "--list-passes"]) == 0
    out = capsys.readouterr().out
    for block in re.split(r"\n(?=\S)", out):  # one pass: its name, then its indented text
        text = " ".join(block.split("\n", 1)[-1].split())
        openings = [" ".join(s.split()[:4]) for s in re.split(r"(?<=\.) ", text) if len(s.split()) >= 4]
        assert len(openings) == len(set(openings)), block
    assert out.count("Raise linalg matrix products") == 1


def test_an_error_naming_its_command_is_not_prefixed_twice(small, capsys):
    assert main(["tune", str(small), "--gpu", "mi25", "--target", "gfx906"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vlpc tune: --gpu mi25 is a gfx900 board") and "vlpc: vlpc" not in err


@pytest.mark.parametrize("elem, scalar, beta", [("f32", "f32", 0.5), ("i8", "i32", 2)])
def test_report_default_beta_per_element_type(tmp_path, monkeypatch, elem, scalar, beta):
    """The traffic table's default beta: 0.5, and 2 for int8 -> i32 (an integer, as vlpc run)."""
    import vlpc.report as report

    seen = {}

    def fake(kernel, code, li, p, host, alpha, beta, *a, **k):
        seen["beta"] = beta
        raise vlpc.VlpcError("stop")

    monkeypatch.setattr(report, "_launch_strict", fake)
    f = tmp_path / "q.mlir"
    c = "i32" if elem == "i8" else elem
    f.write_text(SMALL.replace("f32>", f"{elem}>").replace(f"64x256x{elem}>", f"64x256x{c}>")
                 .replace("f32", scalar))
    assert main(["report", str(f), "--strategies", "sqc", "-o", str(tmp_path / "q"), "-q"]) == 1
    assert seen["beta"] == beta and type(seen["beta"]).__name__ == ("int32" if elem == "i8" else "float32")


def test_local_split_help_says_what_one_means(capsys):
    """--local-split's help: with --split-k auto, 1 lets the plan choose L for the dot kernels;
    --split-k given as well keeps L = 1 (checked on the bundled f16 example's plan)."""
    from vlpc.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    helptext = next(a.help for a in sub.choices["compile"]._actions if "--local-split" in a.option_strings)
    assert "1 lets the plan choose L" in helptext and "give --split-k too to keep L = 1" in helptext
    hgemm = str(ROOT / "examples" / "hgemm_nt.mlir")
    assert main(["compile", hgemm, "--print-plan", "--local-split", "1"]) == 0
    auto = capsys.readouterr().out
    assert re.search(r"local split ([2-9]|1[0-6]):", auto), auto
    assert main(["compile", hgemm, "--print-plan", "--local-split", "1", "--split-k", "1"]) == 0
    assert "split-k 1, local split 1:" in capsys.readouterr().out


def _refuses_files(directory: str) -> bool:
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=directory):
            return False
    except OSError:
        return True


@pytest.mark.skipif(not (Path("/sys").is_dir() and _refuses_files("/sys")), reason="needs a directory that refuses files")
def test_outputs_in_a_directory_that_refuses_files_are_refused_before_the_run(small, capsys, monkeypatch):
    """os.access says yes to root everywhere; the check before a long run creates a file to know."""
    import vlpc.api

    def boom(*a, **k):
        raise AssertionError("the run started before its output was checked")

    monkeypatch.setattr(vlpc.api, "run", boom)
    monkeypatch.setattr("vlpc.verify.check_before_allocating", boom)
    for argv in (["run", str(small), "-q", "--save-output", "/sys/c.npy"],
                 ["bench", str(small), "-q", "--csv", "/sys/t.csv"],
                 ["report", str(small), "-q", "-o", "/sys/r"]):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert err.startswith("vlpc: cannot write ") and "/sys/" in err and err.count("\n") == 1, err


def test_coverage_tool_into_a_closed_pipe_has_no_traceback():
    """`python -m vlpc.runtime.emulator.coverage | head` (docs/runtime.md): the reader leaving early is no error."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "vlpc.runtime.emulator.coverage"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()  # before the table is printed (computing it takes a while)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Traceback" not in err and "BrokenPipe" not in err, err


@pytest.mark.parametrize("spec, want", [("gemm-tile{macro-n=abc}", "option macro-n takes an integer, got abc"),
                                        ("gemm-tile{model=maybe}", "option model takes true or false, got maybe"),
                                        ("gemm-split-k{mode=1}", "option mode takes a name, got 1")])
def test_a_pass_option_of_the_wrong_type_is_named(small, capsys, spec, want):
    assert main(["opt", str(small), "-p", spec]) == 1
    err = capsys.readouterr().err
    assert err == f"vlpc: bad pass pipeline '{spec}': {want}\n"  # no list of passes: the pass is known


def test_an_unknown_pass_lists_the_passes(small, capsys):
    assert main(["opt", str(small), "-p", "gemm-tiles"]) == 1
    err = capsys.readouterr().err
    assert "Unrecognized passes: ['gemm-tiles'] (available: convert-linalg-to-gemm, gemm-tile," in err


@pytest.mark.parametrize("option", ["-j", "--max-candidates", "--top"])
@pytest.mark.parametrize("value", ["0", "-2"])
def test_tune_counts_below_one_are_usage_errors(small, capsys, option, value):
    """--max-candidates -2 used to tune all but the last two candidates, 0 all of them."""
    with pytest.raises(SystemExit) as e:
        main(["tune", str(small), "-q", f"{option}={value}"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "expected a positive integer" in err and err.count("\n") == 1


def test_report_negative_seed_is_a_user_error(small, capsys, tmp_path):
    assert main(["report", str(small), "-q", "--seed", "-1", "-o", str(tmp_path / "r")]) == 1
    assert capsys.readouterr().err == "vlpc: --seed must be a non-negative integer, got -1\n"


@pytest.mark.parametrize("name", ["alpha", "beta"])
@pytest.mark.parametrize("value", ["inf", "nan", "1e39"])
def test_report_non_finite_alpha_beta_is_a_user_error(small, capsys, tmp_path, name, value):
    """As vlpc run: not a verification failure (exit 3) with NumPy warnings."""
    assert main(["report", str(small), "-q", f"--{name}={value}", "-o", str(tmp_path / "r")]) == 1
    assert capsys.readouterr().err == f"vlpc: --{name} {float(value)} is not a finite float32\n"
    assert not (tmp_path / "r.md").exists()


@pytest.mark.parametrize("name", ["alpha", "beta"])
@pytest.mark.parametrize("value", ["inf", "nan"])
def test_bench_non_finite_alpha_beta_is_a_user_error(small, capsys, name, value):
    """(a NaN alpha was 'C verified' with --no-model: NaN against a NaN reference)"""
    assert main(["bench", str(small), "-q", "--no-model", f"--{name}={value}"]) == 1
    assert capsys.readouterr().err == f"vlpc: --{name} {float(value)} is not a finite number\n"


@pytest.mark.parametrize("options, want", [({"foo": 1}, "unknown option(s): foo"),
                                           ({"macro_tile": "abc"}, "macro_tile must be 'MxN'")])
def test_a_bad_options_file_is_named_in_the_error(small, capsys, tmp_path, options, want):
    import json

    tuned = tmp_path / "t.json"
    tuned.write_text(json.dumps({"options": options}))
    assert main(["compile", str(small), "--options", str(tuned), "--emit", "asm"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"vlpc: --options {tuned}: {want}") and err.count("\n") == 1


@pytest.mark.parametrize("cmd", ["run", "bench", "tune", "bench --energy", "report --energy"])
def test_a_file_of_two_gemms_is_one_line_for_commands_that_run_one(tmp_path, capsys, cmd, monkeypatch):
    import vlpc.tune

    monkeypatch.setattr(vlpc.tune, "tune", lambda *a, **k: pytest.fail("tuned one of two GEMMs silently"))
    func_g = SMALL[SMALL.index("  func.func"):SMALL.rindex("}")]  # the function, without the module's braces
    f = tmp_path / "two.mlir"
    f.write_text("builtin.module {\n" + func_g + func_g.replace("@g", "@h") + "}\n")
    assert main(["compile", str(f), "-o", str(tmp_path / "two.hsaco")]) == 0  # both kernels compile
    monkeypatch.chdir(tmp_path)
    words = cmd.split()
    assert main([words[0], str(f), *words[1:], "-q"]) == 1
    name = "bench/report --energy" if "--energy" in cmd else cmd
    assert capsys.readouterr().err == (f"vlpc {name} runs one GEMM, and the module has 2 kernels (g, h): give it a "
                                       "file with one func.func holding a gemm.matmul\n")


@pytest.mark.parametrize("action", ["info", "clear"])
def test_cache_commands_say_when_the_cache_is_not_a_directory(tmp_path, capsys, monkeypatch, action):
    f = tmp_path / "cachefile"
    f.write_text("keep")
    monkeypatch.setenv("VLPC_CACHE_DIR", str(f))
    assert main(["cache", action]) == 1
    err = capsys.readouterr().err
    assert err == f"vlpc: the kernel cache {f} is not a directory: compiles cannot use it (set VLPC_CACHE_DIR to a directory)\n"
    assert f.read_text() == "keep"


@pytest.mark.parametrize("argv, option", [(["compile", "{f}", "-o", ""], "-o"),
                                          (["run", "{f}", "-q", "--save-output", ""], "--save-output"),
                                          (["bench", "{f}", "-q", "--csv", ""], "--csv"),
                                          (["report", "{f}", "-q", "-o", ""], "-o")])
def test_an_empty_output_name_is_refused(small, capsys, tmp_path, monkeypatch, argv, option):
    """(run and bench skipped an empty name silently, report wrote small-report.*, compile said
    'cannot write : it is a directory')"""
    monkeypatch.chdir(tmp_path)
    assert main([a.format(f=small) for a in argv]) == 1
    assert capsys.readouterr().err == f"vlpc: {option}: empty file name\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.mlir"]
