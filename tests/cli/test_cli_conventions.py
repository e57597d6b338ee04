"""The command line's conventions (docs/cli_conventions.md): explicit flags win over an
options file; one default board for every command and the Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlpc.cli import build_parser, main
from vlpc.cli_support import codegen_options

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sgemm_nt.mlir"


def _tuned(tmp_path: Path, **options) -> str:
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"options": options}))
    return str(path)


@pytest.mark.parametrize("command", ["compile", "run", "bench", "report"])
def test_explicit_flags_win_over_the_options_file(tmp_path, command):
    tuned = _tuned(tmp_path, macro_tile=[4, 256], split_k=2, local_split=2, forwarding=True, cus=64)
    argv = [command, str(EXAMPLE), "--options", tuned, "--macro-tile", "4x64", "--split-k", "1",
            "--no-forwarding"]
    opts = codegen_options(build_parser(command).parse_args(argv))
    assert opts["macro_tile"] == (4, 64) and opts["split_k"] == 1 and opts["forwarding"] is False
    # what the command line left out comes from the file
    assert opts["local_split"] == 2 and opts["cus"] == 64


def test_an_explicit_default_value_still_wins(tmp_path):
    tuned = _tuned(tmp_path, split_k=4, schedule="cover")
    args = build_parser("compile").parse_args(["compile", str(EXAMPLE), "--options", tuned, "--split-k", "auto",
                                               "--schedule", "default"])
    opts = codegen_options(args)
    assert opts["split_k"] == "auto" and opts["schedule"] == "default"
    args = build_parser("compile").parse_args(["compile", str(EXAMPLE), "--options", tuned])
    assert codegen_options(args)["split_k"] == 4


def test_compiled_plan_uses_the_explicit_macro_tile(tmp_path, capsys):
    tuned = _tuned(tmp_path, macro_tile=[4, 256])
    assert main(["compile", str(EXAMPLE), "--options", tuned, "--macro-tile", "4x64", "--print-plan"]) == 0
    out = capsys.readouterr().out
    assert "macro tile 4x64," in out and "macro tile 4x256" not in out


# -- one default board -----------------------------------------------------------------------

from test_walkthrough_cli import small  # noqa: E402, F401 (the fixture: C 64x256, K 32)


def test_one_default_board_for_plans_models_and_the_api():
    from vlpc.plan_model import plan_board
    from vlpc.targets import board_for, get_board
    from vlpc.tune import board_and_target

    assert board_for("gfx906") == "mi50" and board_for("gfx906:sramecc+:xnack-") == "mi50"
    assert board_for("gfx900") == "mi25"
    # the plan's board (compile, run, vlpc.compile) is the models' board (bench, tune, report, run -v)
    assert plan_board("gfx906") == get_board(board_for("gfx906"))
    assert plan_board("gfx900") == get_board(board_for("gfx900"))
    assert board_and_target(None, None) == ("gfx906", "mi50")
    assert board_and_target("gfx900", None) == ("gfx900", "mi25")


def test_print_plan_is_made_for_the_mi50_by_default(small, capsys):
    assert main(["compile", str(small), "--print-plan"]) == 0
    assert ", 60 CUs" in capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("extra, board", [([], "mi50"), (["--gpu", "mi60"], "mi60")])
def test_run_verbose_models_the_board_the_plan_was_made_for(small, capsys, extra, board):
    assert main(["run", str(small), "-v", "-q", *extra]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "TFLOP/s modeled" in x)
    assert f" on {board} @ " in line


def test_run_verbose_models_the_board_of_an_options_file(small, capsys, tmp_path):
    tuned = _tuned(tmp_path, gpu="mi60", cus=64)
    assert main(["run", str(small), "-v", "-q", "--options", tuned]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "TFLOP/s modeled" in x)
    assert " on mi60 @ " in line


@pytest.mark.parametrize("extra, board, cus", [([], "mi50", 60), (["--gpu", "mi60"], "mi60", 64)])
def test_bench_models_the_default_board(small, capsys, extra, board, cus):
    assert main(["bench", str(small), "-q", *extra]) == 0
    err = capsys.readouterr().err
    assert f"timing model of {board} ({cus} CUs" in err
