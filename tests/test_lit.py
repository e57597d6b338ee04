"""Run the lit/FileCheck tests in lit_tests/ as part of the pytest suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_lit_suite():
    lit = shutil.which("lit", path=os.path.dirname(sys.executable)) or shutil.which("lit")
    assert lit, "lit is not installed: pip install 'vlpc[test]'"
    proc = subprocess.run([lit, "-q", "-j", "2", str(ROOT / "lit_tests")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
