"""The import rules of docs/architecture.md ("Import rules"), as import-linter contracts in
pyproject.toml: layers (commands above the library, the library above passes and the runtime,
passes above dialects, target facts and errors at the bottom), a runtime free of passes,
dialects and xDSL, and no import cycle between the modules of a package.

Each contract is also shown to catch what it forbids: a module added to a mirror of the
package (tools/lint_imports.py; the sources are untouched) that breaks it.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("lint_imports", ROOT / "tools" / "lint_imports.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def lint():
    pytest.importorskip("importlinter", reason="import-linter is in the test extra: pip install -e '.[test]'")
    return _tool().run


def test_every_contract_is_kept(lint):
    proc = lint([])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def _appended(rel: str, line: str) -> dict[str, str]:
    """A source file of the package (``rel``: its path inside the installed vlpc) with ``line`` added."""
    src = ROOT / (rel if rel.split("/")[0] in ("dialects", "passes", "runtime") else f"vlpc/{rel}")
    return {rel: src.read_text() + f"\n{line}  # noqa\n"}


@pytest.mark.parametrize("extra, contract", [
    # a pass importing the driver: the layers upside down
    ({"passes/_probe.py": "from vlpc.compiler import compile\n"}, "layers"),
    # the library (vlpc/verify.py) importing a command (vlpc run's module)
    (_appended("verify.py", "import vlpc.commands.run"), "layers"),
    # target facts importing a dialect
    (_appended("targets/processors.py", "import vlpc.dialects.gemm"), "layers"),
    # the runtime importing a pass, and xDSL
    ({"runtime/_probe.py": "import vlpc.passes.common\n"}, "runtime"),
    ({"runtime/_probe.py": "import xdsl.ir\n"}, "runtime"),
    # a cycle come back: the base device module importing the device selection
    (_appended("runtime/device.py", "import vlpc.runtime.selection"), "acyclic"),
], ids=["pass-imports-driver", "library-imports-command", "targets-import-dialect", "runtime-imports-pass",
        "runtime-imports-xdsl", "device-cycle"])
def test_each_contract_catches_what_it_forbids(lint, extra, contract):
    proc = lint(["--contract", contract], extra)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BROKEN" in proc.stdout and "1 broken" in proc.stdout


def test_benchmarks_import_no_command_module():
    """Benchmarks take library logic from library modules (vlpc.report, vlpc.bench, vlpc.tune ...),
    never from the command line: vlpc/cli.py or a module of vlpc/commands/."""
    for path in sorted((ROOT / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            bad = {n for n in names if n == "vlpc.cli" or n == "vlpc.commands" or n.startswith("vlpc.commands.")}
            assert not bad, f"{path.name}:{node.lineno} imports {sorted(bad)}"


def test_benchmarks_share_code_through_the_library_not_sys_path():
    """Benchmark scripts import shared code from vlpc.benchmarking and tests import what they test,
    never a sibling script by putting its folder on sys.path (the xdsl wheel ships a top-level
    package named ``benchmarks``); a script another one reuses is loaded by path
    (``vlpc.benchmarking.load_script``)."""
    def edits_sys_path(node) -> bool:  # sys.path.insert(...), sys.path.append(...), ...
        f = getattr(node, "func", None)
        return (isinstance(node, ast.Call) and isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute)
                and f.value.attr == "path" and isinstance(f.value.value, ast.Name) and f.value.value.id == "sys")

    found = {path.relative_to(ROOT).as_posix() for folder in ("benchmarks", "tests")
             for path in (ROOT / folder).rglob("*.py") if any(map(edits_sys_path, ast.walk(ast.parse(path.read_text()))))}
    assert not found, sorted(found)
