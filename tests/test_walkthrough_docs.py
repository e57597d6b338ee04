"""The docs say what the code does: claims a first reader acts on, checked against the code."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_hip_md_names_as_xfail_only_the_kernels_the_emulator_cannot_run():
    """docs/hip.md's foreign-kernel notes: a kernel said to need an instruction the emulator
    lacks must be one tests/test_foreign_kernels.py runs as an xfail (its UNSUPPORTED)."""
    from test_foreign_kernels import UNSUPPORTED

    text = (ROOT / "docs" / "hip.md").read_text()
    table = text[text.index("## Foreign kernels"):]
    kernels = set(re.findall(r"`(\w+)`", table.split("\n\n")[2]))  # the table's kernel names
    assert {"int_mix", "ddiv_sqrt", "row_dot"} <= kernels
    claimed = {k for k in kernels if re.search(rf"`{k}` \(needs", table)}
    assert claimed == set(UNSUPPORTED), (claimed, UNSUPPORTED)
