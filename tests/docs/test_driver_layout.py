"""The driver's layout (issue 17): the command modules depend on vlpc/cli_support.py, never on
vlpc/cli.py; the compiled kernel's launch planning and execution live in vlpc/kernel.py, apart
from the pass pipeline."""

from __future__ import annotations

import ast
from pathlib import Path

VLPC = Path(__file__).resolve().parents[2] / "vlpc"


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (at any depth: function-level imports count too)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_no_module_imports_the_command_line_parser():
    for path in sorted(VLPC.rglob("*.py")):
        if path.name in ("cli.py", "docs.py", "__main__.py"):  # docs.py documents the parser
            continue
        assert not {m for m in _imports(path) if m == "vlpc.cli" or m.startswith("vlpc.cli.")}, path.name


def test_shared_helpers_import_no_command():
    commands = {"vlpc.cli", "vlpc.commands.run", "vlpc.bench", "vlpc.report"}
    assert not _imports(VLPC / "cli_support.py") & commands


def test_kernel_module_is_apart_from_the_pipeline():
    assert not {m for m in _imports(VLPC / "kernel.py") if m.startswith(("vlpc.compiler", "vlpc.passes", "xdsl"))}
    import vlpc.kernel
    from vlpc.compiler import CompiledKernel, CompiledModule, LaunchConfig

    assert CompiledKernel is vlpc.kernel.CompiledKernel and CompiledModule is vlpc.kernel.CompiledModule
    assert LaunchConfig is vlpc.kernel.LaunchConfig
    assert CompiledKernel.__module__ == "vlpc.kernel"


def test_one_module_per_command_and_the_library_imports_none():
    """Every subcommand is a module of vlpc/commands/ with add_parser and main (vlpc/cli.py is the
    dispatch table); no library module imports a command module, and no command module imports
    vlpc/cli.py."""
    import importlib

    from vlpc.cli import COMMANDS

    for name in COMMANDS:
        mod = importlib.import_module(f"vlpc.commands.{name}")
        assert callable(mod.add_parser) and callable(mod.main), name
    for path in sorted(VLPC.glob("*.py")):
        if path.name in ("cli.py", "docs.py", "__main__.py"):
            continue
        assert not {m for m in _imports(path) if m.startswith("vlpc.commands")}, path.name
    for path in sorted((VLPC / "commands").glob("*.py")):
        assert not {m for m in _imports(path) if m == "vlpc.cli" or m.startswith("vlpc.cli.")}, path.name
