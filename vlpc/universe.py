"""vlpc as an ``xdsl-opt`` plugin (the ``xdsl.universe`` entry point ``vlpc``).

With vlpc installed, ``xdsl-opt`` knows vlpc's dialects (``gemm``, ``gcn``), its
passes (``convert-linalg-to-gemm``, ``gemm-tile`` ... ``gcn-emit-descriptor``: the
names ``vlpc opt --list-passes`` shows) and the ``gcn-asm`` output target, which
prints GCN assembly after the full pipeline::

    xdsl-opt examples/sgemm_nt.mlir -p "$(vlpc compile - --print-pipeline)" -t gcn-asm
    xdsl-opt gemm.mlir -p gemm-tile,gemm-map-workgroups          # IR after two passes
    xdsl-opt gemm.mlir -p ... -t 'gcn-asm{target=gfx906:xnack-}'   # another target id

The ``pyproject.toml`` entry::

    [project.entry-points.'xdsl.universe']
    vlpc = 'vlpc.universe:VLPC_UNIVERSE'

``xdsl-opt`` reads the same linalg as ``vlpc compile``: importing this module (which
``Universe.get_multiverse()`` does when it loads the entry point, before it merges the
universes) makes xDSL's own universe's ``linalg`` entry load vlpc's superset of xDSL's linalg
(``vlpc.dialects.linalg.Linalg``: the named ``linalg.matmul_transpose_a/_b``,
``linalg.batch_matmul``, upstream's unbraced ``indexing_maps = ...`` syntax and mixed element
types such as f16 x f16 -> f32, whose xDSL body does not verify).  A plugin may not add a
second ``linalg`` (xDSL raises "Duplicate definition"), so the one entry is replaced; every
operation of xDSL's linalg is kept (vlpc's dialect is a drop-in replacement).

``-t 'gcn-hsaco{output="FILE.hsaco"}'`` (the value quoted: xDSL's option syntax does not read
``/`` or ``.`` unquoted) also assembles and links the code object, the bytes ``vlpc compile -o
FILE.hsaco`` writes, into that file; xdsl-opt's own output stream is text, so it cannot carry
the binary and gets the assembly::

    xdsl-opt gemm.mlir -p "$(vlpc compile - --print-pipeline)" -t 'gcn-hsaco{output="gemm.hsaco"}' > gemm.s

Errors from vlpc's passes reach ``xdsl-opt`` as Python exceptions
(``vlpc.errors.DiagnosticError``), as for any xDSL pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Dialect
from xdsl.universe import Universe
from xdsl.utils.target import Target


@dataclass(frozen=True)
class GcnAsmTarget(Target):
    """``-t gcn-asm``: GCN assembly (``.s``) of every ``gcn.kernel``, for a target id (default gfx906)."""

    name = "gcn-asm"

    target: str = "gfx906"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from vlpc.dialects.gcn_asm import print_assembly
        from vlpc.compiler import header_lines
        from vlpc.targets import TargetId

        tid = TargetId.parse(self.target)
        output.write(print_assembly(module, tid, header_lines(module, tid.target.name)))


@dataclass(frozen=True)
class GcnHsacoTarget(Target):
    """``-t 'gcn-hsaco{output=FILE.hsaco}'``: assemble and link every ``gcn.kernel`` into one
    code object (ELF ``.hsaco``, the bytes ``vlpc compile`` writes) at ``output``, for a target id
    (default gfx906).  xdsl-opt's own output stream is text (``xdsl_opt_main.prepare_output``
    opens ``-o`` in text mode), so the binary goes to the file the option names and the stream
    gets the assembly it was linked from.  Errors: :class:`vlpc.errors.VlpcError` without
    ``output`` or when the file cannot be written; :class:`vlpc.errors.AssemblerError` when
    LLVM rejects the assembly (a vlpc bug)."""

    name = "gcn-hsaco"

    output: str = ""
    target: str = "gfx906"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from vlpc.cli_support import write_atomic
        from vlpc.dialects.gcn_asm import print_assembly
        from vlpc.errors import VlpcError
        from vlpc.compiler import header_lines
        from vlpc.runtime.toolchain import find_toolchain
        from vlpc.targets import TargetId

        if not self.output:
            raise VlpcError("-t gcn-hsaco needs the code object's path, -t 'gcn-hsaco{output=FILE.hsaco}': "
                            "xdsl-opt's output stream is text")
        tid = TargetId.parse(self.target)
        asm = print_assembly(module, tid, header_lines(module, tid.target.name))
        tc = find_toolchain()
        write_atomic(self.output, tc.link(tc.assemble(asm, tid, "<xdsl-opt>")))
        output.write(asm)


def _gemm() -> Dialect:
    from vlpc.dialects.gemm import Gemm

    return Gemm


def _gcn() -> Dialect:
    from vlpc.dialects.gcn import GCN

    return GCN


def _passes():
    from vlpc.passes import get_all_passes

    return get_all_passes()


def _gcn_asm() -> type[Target]:
    return GcnAsmTarget


def _gcn_hsaco() -> type[Target]:
    return GcnHsacoTarget


def _linalg() -> Dialect:
    from vlpc.dialects.linalg import Linalg

    return Linalg


def _replace_xdsl_linalg() -> None:
    """Make xDSL's universe (the ``xdsl`` entry point, merged with this one by
    ``Universe.get_multiverse``) load vlpc's linalg, a superset of xDSL's: see the module
    docstring (a second ``linalg`` entry would be a "Duplicate definition")."""
    import xdsl.universe

    xdsl.universe.XDSL_UNIVERSE.all_dialects["linalg"] = _linalg


_replace_xdsl_linalg()

#: The entry point object xDSL's ``Universe.get_multiverse()`` loads.
VLPC_UNIVERSE = Universe(
    all_dialects={"gemm": _gemm, "gcn": _gcn},
    all_passes=_passes(),
    all_targets={"gcn-asm": _gcn_asm, "gcn-hsaco": _gcn_hsaco},
)

__all__ = ["GcnAsmTarget", "GcnHsacoTarget", "VLPC_UNIVERSE"]
