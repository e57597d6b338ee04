#!/usr/bin/env python3
"""Check the import contracts of pyproject.toml (``[tool.importlinter]``) with import-linter.

import-linter (through grimp) finds a package's modules by walking the folder of its
``__init__.py``.  The repository keeps ``dialects/``, ``passes/`` and ``runtime/`` beside
``vlpc/`` and installs them as ``vlpc.dialects``, ``vlpc.passes`` and ``vlpc.runtime``
(pyproject's ``package-dir``), so this script first lays out the installed tree as symbolic
links in a temporary folder (``vlpc/`` with the three folders inside; grimp follows links),
then runs ``lint-imports`` on pyproject.toml with only that folder on ``PYTHONPATH``.

Usage: ``python tools/lint_imports.py [--verbose] [--contract ID ...]`` (the arguments go to
``lint-imports``).  Exit status: lint-imports' (0 when every contract is kept, 1 when one is
broken); 2 when import-linter is not installed (``pip install -e '.[test]'``).
The contracts and the layers they enforce: docs/architecture.md, section "Import rules".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The root folders installed inside the vlpc namespace (pyproject's ``package-dir``).
SUBPACKAGES = ("dialects", "passes", "runtime")


def _link_children(source: Path, into: Path) -> None:
    into.mkdir()
    for entry in source.iterdir():
        if entry.name != "__pycache__":
            (into / entry.name).symlink_to(entry)


def mirror(into: Path, extra: dict[str, str] | None = None) -> Path:
    """Lay out the installed ``vlpc`` package under ``into`` as symbolic links to the sources;
    ``extra`` adds files (path inside the package -> text) without touching the sources (the
    folders on their way are made real folders of links).  Returns the package folder."""
    pkg = into / "vlpc"
    _link_children(ROOT / "vlpc", pkg)
    for name in SUBPACKAGES:
        (pkg / name).symlink_to(ROOT / name)
    for rel, text in (extra or {}).items():
        here = pkg
        for part in Path(rel).parts[:-1]:
            here = here / part
            if here.is_symlink():
                target = here.resolve()
                here.unlink()
                _link_children(target, here)
        dest = here / Path(rel).name
        if dest.is_symlink():  # replace the link, never write through it into the sources
            dest.unlink()
        dest.write_text(text)
    return pkg


def run(argv: list[str], extra: dict[str, str] | None = None) -> subprocess.CompletedProcess | None:
    """``lint-imports`` over the mirrored package (:func:`mirror`, with ``extra``), its output
    captured; None when import-linter is not installed."""
    exe = shutil.which("lint-imports", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                             os.environ.get("PATH", "")]))
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="vlpc-imports-") as tmp:
        mirror(Path(tmp), extra)
        env = {**os.environ, "PYTHONPATH": tmp}
        env.pop("PYTHONSAFEPATH", None)
        return subprocess.run([exe, "--no-cache", *argv, str(ROOT / "pyproject.toml")], cwd=tmp, env=env,
                              capture_output=True, text=True, timeout=600)


def main(argv: list[str]) -> int:
    proc = run(argv)
    if proc is None:
        print("lint_imports: error: import-linter is not installed (pip install -e '.[test]')", file=sys.stderr)
        return 2
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
