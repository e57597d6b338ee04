"""``import vlpc`` works where users paste the README: at the repository root (where the source
folder ./vlpc shadows the installed package and dialects/, passes/, runtime/ sit beside it) and
anywhere else.

The root case is checked twice: as installed here, and with setuptools' editable-install finder
removed from ``sys.meta_path`` (what a non-editable ``pip install .``, the CI's, leaves: only the
``vlpc`` folder on ``sys.path`` from the current directory, which before the fix failed with
``ModuleNotFoundError: No module named 'vlpc.dialects'``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Drops setuptools' editable finder so that only sys.path (cwd first) resolves vlpc.
NON_EDITABLE = ("import sys\n"
                "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
                "str(getattr(f, '__module__', '') or type(f).__module__)]\n")


def _readme_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no ```python block"
    return blocks[0]


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess:
    # As a user's shell would: the current directory first on sys.path (conftest sets
    # PYTHONSAFEPATH=1 for the other tests' subprocesses, which would hide the shadowing).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env=env)


@pytest.mark.parametrize("editable_finder", [True, False], ids=["as-installed", "non-editable"])
def test_readme_python_snippet_runs_at_the_root(editable_finder):
    snippet = _readme_snippet()
    assert 'open("examples/' in snippet  # the snippet implies the repository root as cwd
    check = ("\nimport numpy as _np\n"
             "assert r.c.shape == (128, 256) and r.max_abs_error < 1e-3, r.max_abs_error\n"
             "_ref = a.astype(_np.float64) @ b.astype(_np.float64).T\n"
             "assert _np.allclose(r.c, _ref, rtol=1e-4, atol=1e-4)\n"
             "print('vlpc from', vlpc.__file__)\n")
    proc = _run(("" if editable_finder else NON_EDITABLE) + snippet + check, ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ModuleNotFoundError" not in proc.stderr


def test_mlir_header_python_line_runs_at_the_root():
    header = (ROOT / "examples" / "linalg_matmul_transpose_b.mlir").read_text()
    line = next(x for x in header.splitlines() if x.lstrip("/ ").startswith("python -c"))
    code = re.search(r'python -c "(.*)"', line).group(1)
    proc = _run(NON_EDITABLE + code, ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert float(proc.stdout.strip().splitlines()[-1]) < 1e-3  # max_abs_error of a verified 128x256x64 product


@pytest.mark.parametrize("where", ["root", "elsewhere"])
def test_every_subpackage_imports(where, tmp_path):
    code = ("import importlib, vlpc\n"
            "for name in ('vlpc.dialects', 'vlpc.passes', 'vlpc.runtime', 'vlpc.runtime.emulator',\n"
            "             'vlpc.dialects.gcn', 'vlpc.passes.gemm_tile', 'vlpc.runtime.emulator.core'):\n"
            "    importlib.import_module(name)\n"
            "print(vlpc.__file__)\n")
    proc = _run(NON_EDITABLE + code if where == "root" else code, ROOT if where == "root" else tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if where == "root":  # the source folder, with the root folders as its submodules
        assert Path(proc.stdout.strip()).resolve() == ROOT / "vlpc" / "__init__.py"
