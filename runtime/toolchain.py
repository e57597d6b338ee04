"""Assemble and link GCN assembly into an HSA code object with LLVM's tools.

vlpc never encodes instructions itself: LLVM's AMDGPU assembler turns the text
into a relocatable ELF object and lld links it into the shared-object code
object (``.hsaco``) the HIP runtime loads.

Which tools are used, in order of preference:

1. ``VLPC_TOOLCHAIN`` set to ``zig``, ``rocm`` or ``llvm`` forces one kind;
   ``VLPC_LLVM_DIR`` names a directory holding ``clang`` (or ``llvm-mc``) and ``ld.lld``.
2. A ROCm installation (``$ROCM_PATH/llvm/bin`` or ``/opt/rocm/llvm/bin``).
3. An LLVM on ``PATH`` whose ``llvm-mc`` knows the ``amdgcn`` target, with ``ld.lld``.
4. The ``ziglang`` wheel (a dependency of vlpc), which bundles clang and lld with
   the AMDGPU target: always available after ``pip install``.

Errors: :class:`~vlpc.errors.ToolchainError` when no tool runs,
:class:`~vlpc.errors.AssemblerError` when the assembler rejects a line (the
message quotes the line).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from vlpc.errors import AssemblerError, ToolchainError

if TYPE_CHECKING:  # (imported when used: a kernel-cache hit needs the toolchain's name, not the targets)
    from vlpc.targets import TargetId


@dataclass(frozen=True)
class Toolchain:
    """How to run an AMDGPU assembler and lld.

    ``kind`` is ``zig``, ``rocm`` or ``llvm``; ``assembler`` is the argv prefix
    of an assembler that reads a ``.s`` file, ``linker`` the argv prefix of ld.lld.
    """

    kind: str
    assembler: tuple[str, ...]
    assembler_style: str  # "cc1as" (clang -cc1as) or "llvm-mc"
    linker: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.kind}: assembler {' '.join(self.assembler)}; linker {' '.join(self.linker)}"

    def assemble(self, asm: str, target_id: TargetId, source_name: str = "kernel.s") -> bytes:
        """Assemble ``asm`` for ``target_id``; returns the relocatable ELF object bytes."""
        with tempfile.TemporaryDirectory(prefix="vlpc-as-") as tmp:
            src = Path(tmp) / Path(source_name).name
            if src.suffix != ".s":
                src = src.with_suffix(".s")
            obj = Path(tmp) / "kernel.o"
            src.write_text(asm)
            if self.assembler_style == "cc1as":
                argv = [*self.assembler, "-cc1as", "-triple", "amdgcn-amd-amdhsa",
                        "-target-cpu", target_id.target.name]
                for feat in target_id.assembler_features():
                    argv += ["-target-feature", feat]
                argv += ["-filetype", "obj", str(src), "-o", str(obj)]
            else:
                attrs = ",".join(target_id.assembler_features())
                argv = [*self.assembler, "-triple=amdgcn-amd-amdhsa",
                        f"-mcpu={target_id.target.name}", "-filetype=obj", str(src), "-o", str(obj)]
                if attrs:
                    argv.insert(-3, f"-mattr={attrs}")
            proc = _run(argv)
            if proc.returncode != 0:
                raise AssemblerError(_explain_assembler_error(proc.stderr, asm, source_name))
            return obj.read_bytes()

    def link(self, obj: bytes) -> bytes:
        """Link a relocatable object into a shared-object code object (``.hsaco``)."""
        with tempfile.TemporaryDirectory(prefix="vlpc-ld-") as tmp:
            o = Path(tmp) / "kernel.o"
            out = Path(tmp) / "kernel.hsaco"
            o.write_bytes(obj)
            proc = _run([*self.linker, "-shared", "--no-undefined", str(o), "-o", str(out)])
            if proc.returncode != 0:
                raise AssemblerError(f"ld.lld failed: {proc.stderr.strip()}")
            return out.read_bytes()

    def disassemble_encodings(self, asm: str, target_id: TargetId) -> str:
        """Assembly with ``; encoding: [...]`` comments (an oracle for decoders)."""
        with tempfile.TemporaryDirectory(prefix="vlpc-as-") as tmp:
            src = Path(tmp) / "k.s"
            src.write_text(asm)
            if self.assembler_style == "cc1as":
                argv = [*self.assembler, "-cc1as", "-triple", "amdgcn-amd-amdhsa",
                        "-target-cpu", target_id.target.name, "-filetype", "asm",
                        "-show-encoding", str(src)]
            else:
                argv = [*self.assembler, "-triple=amdgcn-amd-amdhsa",
                        f"-mcpu={target_id.target.name}", "-show-encoding", str(src)]
            proc = _run(argv)
            if proc.returncode != 0:
                raise AssemblerError(_explain_assembler_error(proc.stderr, asm, "k.s"))
            return proc.stdout


def assemble_and_link(asm: str, target_id: TargetId | str, source_name: str = "kernel.s",
                      toolchain: Toolchain | None = None) -> bytes:
    """Assembly text -> code object bytes (``.hsaco``), with the default toolchain."""
    if isinstance(target_id, str):
        from vlpc.targets import TargetId

        target_id = TargetId.parse(target_id)
    tc = toolchain or find_toolchain()
    return tc.link(tc.assemble(asm, target_id, source_name))


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except FileNotFoundError as e:
        raise ToolchainError(f"cannot run {argv[0]}: {e.strerror}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{argv[0]} did not finish within 600 s") from None


_ERR_RE = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>.*)$", re.M)


def _explain_assembler_error(stderr: str, asm: str, source_name: str) -> str:
    lines = asm.splitlines()
    out = []
    for m in _ERR_RE.finditer(stderr):
        n = int(m["line"])
        text = lines[n - 1].strip() if 0 < n <= len(lines) else ""
        out.append(f"{source_name}:{n}:{m['col']}: error: LLVM assembler: {m['msg']}\n    {text}")
    if not out:
        out.append(f"LLVM assembler failed: {stderr.strip()}")
    return "\n".join(out)


def _probe(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout + proc.stderr if proc.returncode == 0 else None


def _from_dir(kind: str, d: Path) -> Toolchain | None:
    lld = d / "ld.lld"
    if not lld.exists():
        return None
    clang = d / "clang"
    if clang.exists():
        return Toolchain(kind, (str(clang),), "cc1as", (str(lld),))
    mc = d / "llvm-mc"
    if mc.exists() and "amdgcn" in (_probe([str(mc), "--version"]) or ""):
        return Toolchain(kind, (str(mc),), "llvm-mc", (str(lld),))
    return None


def _zig() -> Toolchain | None:
    """The ``ziglang`` wheel's ``zig`` executable, run directly (``python -m ziglang`` only
    execs it, after starting a Python for every assembly and link)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("ziglang")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        return None
    for d in spec.submodule_search_locations or []:
        for name in ("zig", "zig.exe"):
            exe = os.path.join(d, name)
            if os.path.isfile(exe) and os.access(exe, os.X_OK):
                return Toolchain("zig", (exe, "clang"), "cc1as", (exe, "ld.lld"))
    py = sys.executable
    return Toolchain("zig", (py, "-m", "ziglang", "clang"), "cc1as", (py, "-m", "ziglang", "ld.lld"))


def _rocm() -> Toolchain | None:
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root:
            tc = _from_dir("rocm", Path(root) / "llvm" / "bin")
            if tc:
                return tc
    return None


def _llvm_on_path() -> Toolchain | None:
    mc = shutil.which("llvm-mc")
    lld = shutil.which("ld.lld")
    if mc and lld and "amdgcn" in (_probe([mc, "--version"]) or ""):
        return Toolchain("llvm", (mc,), "llvm-mc", (lld,))
    return None


@functools.cache
def find_toolchain(kind: str | None = None) -> Toolchain:
    """Pick the assembler/linker (see the module docstring for the order).

    ``kind`` (or ``$VLPC_TOOLCHAIN``) forces ``zig``, ``rocm`` or ``llvm``.
    Raises :class:`ToolchainError` when nothing usable is found.
    """
    kind = kind or os.environ.get("VLPC_TOOLCHAIN") or None
    llvm_dir = os.environ.get("VLPC_LLVM_DIR")
    if llvm_dir:
        tc = _from_dir("llvm", Path(llvm_dir))
        if tc is None:
            raise ToolchainError(f"VLPC_LLVM_DIR={llvm_dir} has no ld.lld with clang or llvm-mc")
        return tc
    finders = {"rocm": _rocm, "llvm": _llvm_on_path, "zig": _zig}
    if kind is not None:
        if kind not in finders:
            raise ToolchainError(f"unknown toolchain '{kind}' (choose zig, rocm or llvm)")
        tc = finders[kind]()
        if tc is None:
            raise ToolchainError(f"toolchain '{kind}' was asked for but is not installed")
        return tc
    for finder in (_rocm, _llvm_on_path, _zig):
        tc = finder()
        if tc is not None:
            return tc
    raise ToolchainError("no AMDGPU assembler found: install vlpc's dependencies "
                         "(pip install ziglang) or a ROCm/LLVM toolchain")
