"""Documentation stays true: docs/cli.md matches the argument parser, and the examples run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from vlpc.cli import main
from vlpc.docs import cli_markdown

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_is_up_to_date():
    current = (ROOT / "docs" / "cli.md").read_text()
    assert current == cli_markdown(), "docs/cli.md is stale: run `python -m vlpc.docs` and commit it"


def test_cli_reference_covers_every_option():
    from vlpc.cli import build_parser

    text = cli_markdown()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        assert f"## vlpc {name}" in text
        for action in p._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help"):
                    assert f"`{opt}`" in text, (name, opt)


def test_example_embed_py():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "embed.py")], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "vlpc.run: verified" in proc.stdout and "layout NT, alpha 1.0, beta 1.0" in proc.stdout


def test_example_linalg_mlir_runs(capsys):
    path = str(ROOT / "examples" / "linalg_matmul_transpose_b.mlir")
    assert main(["run", path, "--seed", "1"]) == 0
    assert "verification passed" in capsys.readouterr().out
