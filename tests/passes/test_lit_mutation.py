"""tools/lit_mutation.py: every CHECK-NOT of the lit tests bites in the span it guards."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("lit_mutation", ROOT / "tools" / "lit_mutation.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lit_mutation"] = mod
    spec.loader.exec_module(mod)
    return mod


def check(tool, tmp_path, body: str):
    test = tmp_path / "t.mlir"
    test.write_text("// RUN: printf 'a\\nb\\nc\\n' | filecheck %s\n" + body)
    tool.warnings.clear()
    return tool.check_run_line(test, test.read_text(), tool.run_lines(test.read_text())[0], False), list(tool.warnings)


def test_a_not_in_its_span_bites(tool, tmp_path):
    problems, warnings = check(tool, tmp_path, "// CHECK: a\n// CHECK-NOT: zz\n// CHECK: b\n")
    assert problems == [] and warnings == []


def test_a_not_with_no_line_to_guard_is_reported(tool, tmp_path):
    """Between a CHECK and a CHECK-SAME on the same output line no whole line can be inserted."""
    problems, _ = check(tool, tmp_path, "// CHECK: b\n// CHECK-NOT: z\n// CHECK-SAME: {{$}}\n")
    assert len(problems) == 1 and "empty span" in problems[0]


def test_a_not_that_does_not_bite_is_reported(tool, tmp_path, monkeypatch):
    """If filecheck accepted the mutated output, the NOT is reported (filecheck stubbed to
    accept any output holding the inserted line)."""
    real = tool.run_filecheck
    monkeypatch.setattr(tool, "run_filecheck", lambda check, output, args: "zz" in output or real(check, output, args))
    problems, _ = check(tool, tmp_path, "// CHECK: a\n// CHECK-NOT: zz\n// CHECK: b\n")
    assert len(problems) == 1 and "does not bite" in problems[0] and "'zz'" in problems[0]


def test_a_tail_only_not_is_a_warning(tool, tmp_path):
    problems, warnings = check(tool, tmp_path, "// CHECK: b\n// CHECK-NOT: zz\n")
    assert problems == [] and len(warnings) == 1 and "guards only the tail" in warnings[0]
    problems, warnings = check(tool, tmp_path, "// CHECK-NOT: zz\n// CHECK: b\n// CHECK-NOT: zz\n")
    assert problems == [] and warnings == []


@pytest.mark.parametrize("name", ["passes/gcn_insert_hazard_nops.mlir", "errors/linalg_batch_matmul.mlir"])
def test_fixed_lit_tests_bite(tool, name):
    """Two of the issue's misplaced NOTs, now between the right CHECKs (the whole set:
    python tools/lit_mutation.py, about a minute)."""
    test = ROOT / "lit_tests" / name
    tool.warnings.clear()
    problems = [p for run in tool.run_lines(test.read_text())
                for p in tool.check_run_line(test, test.read_text(), run, False)]
    assert problems == [] and tool.warnings == []
