"""LLVM's encodings of assembly lines, for the ISA tests (vlpc.isa's table and layouts)."""

from __future__ import annotations

import re

import pytest

from vlpc.runtime.code_object import TargetId
from vlpc.runtime.toolchain import ToolchainError, find_toolchain


def llvm_encodings(lines: list[str], target: str = "gfx906") -> list[bytes]:
    """The machine code LLVM's assembler (``-show-encoding``) gives each line, in order
    (one assembler call); skips the test when no toolchain is found."""
    try:
        tc = find_toolchain()
    except ToolchainError as e:  # pragma: no cover - the ziglang wheel is a dependency
        pytest.skip(str(e))
    out = tc.disassemble_encodings("\n".join(lines) + "\n", TargetId.parse(target))
    return [bytes(int(x, 16) for x in m.group(1).split(","))
            for m in re.finditer(r"encoding: \[([0-9a-fx,]+)\]", out)]
