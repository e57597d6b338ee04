"""What a first run prints must read plainly (issue 36 item 10): the emulator's counts are
labelled, a passing check says it is within the error bound and how much of it is used, an
int8 product's rate is in TOP/s, and a value never defined is reported where it is used."""

from __future__ import annotations

import math
import re

import pytest

from dot_support import source
from launch_support import nt_source
from vlpc.cli import main
from vlpc.verify import worst_error_text


@pytest.mark.parametrize("worst, text", [
    (0.835, "within the error bound (84 % of it used)"),  # round(83.5) in binary is 84
    (0.25, "within the error bound (25 % of it used)"),
    (0.0036, "within the error bound (0.36 % of it used)"),
    (1.0, "within the error bound (100 % of it used)"),
    (1.5, "1.5 x the error bound"),
    (math.inf, "a wrong NaN/Inf"),
])
def test_worst_error_in_words(worst, text):
    assert worst_error_text(worst) == text


def test_run_labels_the_emulator_counts(tmp_path, capsys):
    f = tmp_path / "g.mlir"
    f.write_text(nt_source(64, 256, 32))
    assert main(["run", str(f), "-q"]) == 0
    out = capsys.readouterr().out
    assert "emulator counts (what the kernel did, not how long it took" in out
    assert re.search(r"instructions: [\d,]+ run, counted once per wavefront of 64 work-items \(vector ALU \[VALU\]", out)
    assert "vector [VGPR] reads" in out and "scalar [SGPR] reads" in out and "global memory" in out
    assert re.search(r"max error within the error bound \([\d.]+ % of it used\)", out)
    assert "x the bound" not in out and "wave-instructions" not in out


def test_int8_run_verbose_prints_tops(tmp_path, capsys):
    f = tmp_path / "g8.mlir"
    f.write_text(source(16, 64, 256, 256, 256, 64, "i8", "i32"))
    assert main(["run", str(f), "-v", "-q"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if " modeled" in x and "us on" in x)
    assert line.endswith("TOP/s modeled") and "TFLOP/s" not in line


def test_undefined_value_is_reported_at_its_use(tmp_path, capsys):
    f = tmp_path / "bta.mlir"
    text = nt_source(64, 256, 32).replace("%alpha, %beta {", "%alpha, %bta {")
    f.write_text(text)
    line, col = next((i + 1, x.index("%bta") + 1) for i, x in enumerate(text.splitlines()) if "%bta" in x)
    assert main(["compile", str(f), "-o", str(tmp_path / "g.s")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"{f}:{line}:{col}: error: value %bta is used but never defined"
    assert not (tmp_path / "g.s").exists()
