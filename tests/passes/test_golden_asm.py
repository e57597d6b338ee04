"""The emitted assembly does not change when the compiler is made faster (issue 18).

``tests/data/golden_asm/`` holds the assembly (and, for single passes, the IR) of the
bundled examples, the lit inputs and a grid of options, written by the compiler before
verification moved to the end of the pipeline, the register allocator's interference
check became a per-register summary and the kernel cache appeared
(``tests/golden_asm_cases.py`` lists the cases).  Each is compiled again here and
compared byte for byte.
"""

import difflib
import gzip
import sys
from pathlib import Path

import pytest

import golden_asm_cases as cases  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "golden_asm"
BY_NAME = {name: (source, options) for name, source, options in cases.CASES}


def test_every_golden_file_is_a_case():
    files = {p.name.split(".")[0] for p in DATA.glob("*.gz")}
    assert files == set(cases.GOLDEN), "tests/data/golden_asm/ and GOLDEN disagree"


@pytest.mark.parametrize("name", cases.GOLDEN)
def test_output_unchanged(name):
    source, options = BY_NAME[name]
    suffix, text = cases.compile_case(source, options)
    want = gzip.decompress((DATA / f"{name}{suffix}.gz").read_bytes()).decode()
    if text != want:
        diff = "".join(list(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                 "golden", "now", n=2))[:60])
        pytest.fail(f"{name}: the output differs from tests/data/golden_asm/{name}{suffix}.gz (a change to the "
                    "generated code that is meant: regenerate with `python tests/golden_asm_cases.py "
                    f"tests/data/golden_asm --gzip` and commit the files with it):\n{diff}")
