"""The command line's conventions (docs/cli_conventions.md): explicit flags win over an
options file; one default board for every command and the Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlpc.cli import build_parser, main
from vlpc.cli_support import codegen_options

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "sgemm_nt.mlir"


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
