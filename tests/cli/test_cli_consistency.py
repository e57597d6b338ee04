"""The subcommands answer alike (a user walkthrough of vlpc's CLI): one line for a usage mistake
(exit 2, ``vlpc CMD: error: ... (see vlpc CMD --help)``), the same size options (-m/--m ...),
the same output prefix rule, options a mode would ignore refused in one line, limits checked
before buffers are allocated."""

from __future__ import annotations

from pathlib import Path

import pytest

from vlpc.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
NT = str(ROOT / "examples" / "sgemm_nt.mlir")
DYN = str(ROOT / "examples" / "sgemm_dynamic.mlir")


def usage_error(argv, capsys) -> str:
    """Run ``vlpc argv`` expecting argparse's usage error: exit 2 and exactly one stderr line."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "usage:" not in err and "Traceback" not in err
    return err.strip()


# -- 2. one line for a usage mistake -------------------------------------------------------

@pytest.mark.parametrize("argv,want", [
    (["report", NT, "--clock", "abc"],
     "vlpc report: error: argument --clock: invalid float value: 'abc' (see vlpc report --help)"),
    (["report", NT, "--gpu", "mi70"], "vlpc report: error: argument --gpu: invalid choice: 'mi70'"),
    (["report"], "vlpc report: error: the following arguments are required: file"),
    (["run", NT, "--frob"], "vlpc run: error: unrecognized arguments: --frob (see vlpc run --help)"),
    (["bench", NT, "--iterations", "x"], "vlpc bench: error: argument -i/--iterations:"),
    (["nope"], "vlpc: error: argument COMMAND: invalid choice: 'nope'"),
])
def test_usage_mistake_is_one_line(argv, want, capsys):
    assert want in usage_error(argv, capsys)


@pytest.mark.parametrize("command", [c for c in COMMANDS])
def test_every_subcommand_answers_an_unknown_option_in_one_line(command, capsys):
    err = usage_error([command, "--no-such-option"], capsys)
    assert err.startswith(f"vlpc {command}: error: ") and err.endswith(f"(see vlpc {command} --help)")


# -- 1. the same size options --------------------------------------------------------------

@pytest.mark.parametrize("command", ["run", "bench", "report", "tune"])
def test_size_options_are_spelled_alike(command):
    from vlpc.cli import build_parser

    parser = build_parser(command)
    for spelling in (["-m", "70", "-n", "80", "-k", "90"], ["--m", "70", "--n", "80", "--k", "90"]):
        args = parser.parse_args([command, DYN, *spelling])
        assert (args.m, args.n, args.k) == (70, 80, 90)


@pytest.mark.parametrize("command", ["run", "bench", "report"])
def test_a_size_below_one_is_a_one_line_user_error(command, capsys):
    assert main([command, DYN, "-m", "0", "-n", "64", "-k", "16"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "vlpc: --m must be positive, got 0"


# -- 5. -o PREFIX given with a suffix ------------------------------------------------------

SMALL = """builtin.module {
  func.func @sgemm(%a: memref<32x16xf32>, %b: memref<256x16xf32>, %c: memref<32x256xf32>, %alpha: f32, %beta: f32) {
    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"} : memref<32x16xf32>, memref<256x16xf32>, memref<32x256xf32>, f32, f32
    func.return
  }
}
"""


def test_traffic_report_prefix_given_with_a_suffix(tmp_path, capsys):
    """vlpc report FILE -o t.md writes t.md, t.csv and t.svg (it wrote t.md.md, t.md.csv, t.md.svg)."""
    pytest.importorskip("matplotlib")
    f = tmp_path / "g.mlir"
    f.write_text(SMALL)
    assert main(["report", str(f), "--strategies", "sqc", "-o", str(tmp_path / "t.md"), "-q"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("t.")) == ["t.csv", "t.md", "t.svg"]
    assert "sqc" in (tmp_path / "t.md").read_text()


@pytest.mark.parametrize("given,want", [("t.md", "t"), ("t.CSV", "t"), ("dir.v2/t.svg", "dir.v2/t"), ("t.png", "t"),
                                        ("t", "t"), (".md", ".md"), (None, "g-report")])
def test_output_prefix_rule(given, want):
    from vlpc.cli_support import output_prefix

    assert output_prefix(given, "g-report") == want


# -- 3. vlpc bench --energy: -o PREFIX as vlpc report has it; -i/-j refused ------------------

def test_bench_energy_writes_to_the_given_prefix(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    f = tmp_path / "g.mlir"
    f.write_text(SMALL)
    out = tmp_path / "sub"
    out.mkdir()
    assert main(["bench", str(f), "--energy", "-o", str(out / "e.md"), "-q", "--split-k", "1"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["e.csv", "e.md", "e.svg"]
    assert (out / "e.md").read_text().startswith("# Modeled energy per GEMM: M=32 N=256 K=16")


@pytest.mark.parametrize("command,flags,line", [
    ("bench", ["-i", "3"], "vlpc: --iterations 3: --energy runs each variant's plan once"),
    ("bench", ["--warmup", "0"], "vlpc: --warmup 0: --energy runs each variant's plan once"),
    ("bench", ["--max-emulated", "4096"], "vlpc: --max-emulated 4096: --energy's timing-only launches run any size"),
    # 6. report's traffic-table options under --energy
    ("report", ["--beta", "0.5"], "vlpc: --beta 0.5: --energy prices every variant with alpha = 1, beta = 0 (C is "
                                  "not read): drop --beta (it is the traffic table's)"),
    ("report", ["--alpha", "2"], "vlpc: --alpha 2: --energy prices every variant with alpha = 1, beta = 0"),
    ("report", ["--seed", "7"], "vlpc: --seed 7: --energy's timing-only launches read zero-filled buffers"),
])
def test_energy_refuses_what_it_would_ignore(command, flags, line, capsys):
    assert main([command, NT, "--energy", "-o", "/nonexistent/p", *flags]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(line), err


def test_bench_output_prefix_is_for_energy(capsys):
    assert main(["bench", NT, "-o", "t"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["vlpc: -o t: -o PREFIX names --energy's outputs; the table is written with --csv FILE.csv and "
                   "--chart FILE.svg"]


def test_report_and_bench_share_the_output_option():
    from vlpc.cli import build_parser

    def output(command):
        p = build_parser(command)
        sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction").choices[command]
        return next(a for a in sub._actions if a.dest == "output")

    assert output("bench").option_strings == output("report").option_strings == ["-o", "--output"]
    assert output("bench").metavar == output("report").metavar == "PREFIX"


# -- 6. report's traffic-table options under --energy ----------------------------------------

def test_report_energy_accepts_the_values_it_prices(capsys):
    # alpha = 1 and beta = 0 are what --energy prices: not refused (the unwritable -o stops it after the check)
    assert main(["report", NT, "--energy", "-o", "/nonexistent/p", "--alpha", "1", "--beta", "0"]) == 1
    assert "cannot write report /nonexistent/p.md" in capsys.readouterr().err


def test_report_traffic_table_defaults_are_kept(monkeypatch, tmp_path):
    """Without --alpha/--beta/--seed the traffic table still runs with alpha 1, beta 0.5, seed 0."""
    import vlpc.report as report

    seen = {}

    def fake(text, filename, strategies, **kw):
        seen.update(kw)
        raise report.VlpcError("stop")

    monkeypatch.setattr(report, "build_report", fake)
    assert main(["report", NT, "-o", str(tmp_path / "r"), "-q"]) == 1
    # beta None: report.measure's default, 0.5 (2 for int8 -> i32; tests/cli/test_walkthrough_cli.py)
    assert (seen["alpha"], seen["beta"], seen["seed"]) == (1.0, None, 0)
    assert main(["report", NT, "-o", str(tmp_path / "r"), "-q", "--beta", "0", "--seed", "3"]) == 1
    assert (seen["alpha"], seen["beta"], seen["seed"]) == (1.0, 0.0, 3)


# -- 7. one resolution of a launch's problem -----------------------------------------------

def test_resolve_launch_lives_in_run_and_resolves_as_blas():
    import vlpc
    from vlpc.errors import VlpcError
    from vlpc.api import resolve_launch

    kernel = vlpc.compile(Path(DYN).read_text(), "gfx906", filename=DYN).kernel()
    p = resolve_launch(kernel, 64, 256, 32)
    # layout NT: A is M x K (lda = K), B is N x K (ldb = K), C is M x N (ldc = N); no batch
    assert (p.m, p.n, p.k, p.lda, p.ldb, p.ldc, p.batch) == (64, 256, 32, 32, 32, 256, 0)
    with pytest.raises(VlpcError, match="is not batched"):
        resolve_launch(kernel, 64, 256, 32, batch=2)
    with pytest.raises(VlpcError, match=r"K is dynamic \('\?'\) in the IR: give it with --k"):
        resolve_launch(kernel, 64, 256, None)


@pytest.mark.parametrize("argv", [["run", NT], ["bench", NT], ["report", NT, "--energy", "-o", "{d}/e"]])
def test_every_command_resolves_through_api_resolve_launch(argv, monkeypatch, tmp_path, capsys):
    import importlib

    from vlpc.errors import VlpcError

    run_module = importlib.import_module("vlpc.api")
    calls = []

    def spy(kernel, m, n, k, batch=None, *arrays):
        calls.append((kernel.name, m, n, k, batch))
        raise VlpcError("resolved")

    monkeypatch.setattr(run_module, "resolve_launch", spy)
    assert main([a.format(d=tmp_path) for a in argv]) == 1
    assert "vlpc: resolved" in capsys.readouterr().err
    assert calls and calls[0][0] == "sgemm"


# -- 4. limits checked before any buffer is allocated ---------------------------------------

HUGE = ["--m", "70000", "--n", "70000", "--k", "64"]
OFFSETS = ("vlpc: kernel 'sgemm_dyn': C spans 19600000000 bytes (70000 rows, ldc=70000): over the 32-bit byte "
           "offset limit of vlpc's kernels (2^32 bytes)")


def _no_alloc(*a, **k):
    raise AssertionError("buffers allocated for sizes the kernels cannot address")


@pytest.mark.parametrize("command,module,name", [
    ("run", "vlpc.api", "operand_buffers"),
    ("bench", "vlpc.energy_report", "host_buffers"),
    ("tune", "vlpc.commands.tune", "search_space"),  # (the name the command module bound: patching vlpc.tune would leak)
])
def test_sizes_past_the_32bit_offsets_are_refused_before_allocating(command, module, name, monkeypatch, capsys):
    """A 70000 x 70000 f32 C spans 19.6e9 bytes: one line, exit 1, before anything is allocated
    (vlpc run used to allocate and fill 19.6 GB for over 30 s and fail at launch)."""
    import importlib

    monkeypatch.setattr(importlib.import_module(module), name, _no_alloc)
    assert main([command, DYN, *HUGE, "-q"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [OFFSETS]


def test_launch_and_read_checks_offsets_before_uploading():
    import numpy as np

    import vlpc
    from vlpc.errors import VlpcError
    from vlpc.api import resolve_launch
    from vlpc.verify import launch_and_read

    kernel = vlpc.compile(Path(DYN).read_text(), "gfx906", filename=DYN).kernel()
    p = resolve_launch(kernel, 70000, 70000, 64)

    class NoUpload:
        def upload(self, x):
            raise AssertionError("uploaded")

    host = {name: np.zeros(4, np.float32) for name in "ABC"}
    with pytest.raises(VlpcError, match=r"C spans 19600000000 bytes") as e:
        launch_and_read(kernel, NoUpload(), host, p, 1.0, 0.0, np.float32)
    assert e.value.exit_code == 1
