"""Run the lit/FileCheck tests in lit_tests/ as part of the pytest suite.

One pytest case per lit test file (``lit -q FILE``), so pytest-xdist spreads them over its
workers; a lit test file that the list below misses fails ``test_every_lit_test_has_a_case``.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIT_DIR = ROOT / "lit_tests"
# lit.cfg.py's config.suffixes and config.excludes.
SUFFIXES = (".mlir", ".s")
LIT_FILES = sorted(p.relative_to(LIT_DIR).as_posix() for p in LIT_DIR.rglob("*")
                   if p.suffix in SUFFIXES and p.is_file() and "Inputs" not in p.relative_to(LIT_DIR).parts)


def _lit() -> str:
    lit = shutil.which("lit", path=os.path.dirname(sys.executable)) or shutil.which("lit")
    assert lit, "lit is not installed: pip install 'vlpc[test]'"
    return lit


def test_every_lit_test_has_a_case():
    """The cases below are exactly the tests lit itself discovers in lit_tests/."""
    proc = subprocess.run([_lit(), "--show-tests", str(LIT_DIR)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = sorted(line.split("::", 1)[1].strip() for line in proc.stdout.splitlines() if "::" in line)
    assert found == LIT_FILES


@functools.lru_cache(maxsize=None)
def _lit_env() -> dict:
    """The environment of the lit runs: VLPC_LIT_GFX906 says whether a gfx906 is reachable through
    HIP (lit.cfg.py's `REQUIRES: gfx906`), asked once here instead of by every lit run (importing
    and probing HIP took two thirds of a lit start)."""
    try:
        from vlpc.runtime.hip import hip_available
        ok, _ = hip_available()
    except Exception:  # noqa: BLE001 - as lit.cfg.py: no HIP, no gfx906
        ok = False
    return dict(os.environ, VLPC_LIT_GFX906="1" if ok else "0")


@pytest.mark.parametrize("name", LIT_FILES)
def test_lit_file(name):
    proc = subprocess.run([_lit(), "-q", "-j", "1", str(LIT_DIR / name)], capture_output=True, text=True,
                          env=_lit_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_lit_takes_the_gfx906_answer_it_is_given():
    """lit.cfg.py's `gfx906` feature follows VLPC_LIT_GFX906: told "1", lit runs the hardware test
    (here it then fails, there being no gfx906) instead of reporting it unsupported, as the runs
    above do without a gfx906."""
    proc = subprocess.run([_lit(), "-v", "-j", "1", str(LIT_DIR / "hardware/run_on_gfx906.mlir")],
                          capture_output=True, text=True, env=dict(_lit_env(), VLPC_LIT_GFX906="1"))
    assert "UNSUPPORTED" not in proc.stdout and ("PASS" in proc.stdout or "FAIL" in proc.stdout), proc.stdout
