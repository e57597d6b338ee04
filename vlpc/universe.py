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

In ``xdsl-opt`` the ``linalg`` dialect is xDSL's own (a plugin may not redefine a
dialect), so linalg input there is ``linalg.matmul`` (default maps, or the braced
``{indexing_maps = [...]}`` form) or ``linalg.generic``; the named
``linalg.matmul_transpose_a/_b``, ``linalg.batch_matmul`` and upstream's unbraced
``indexing_maps = ...`` syntax parse in vlpc's own tools (``vlpc compile``,
``vlpc opt``, ``vlpc.parse``).  Errors from vlpc's passes reach ``xdsl-opt`` as
Python exceptions (``vlpc.errors.DiagnosticError``), as for any xDSL pass.
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
        from vlpc.pipeline import header_lines
        from vlpc.targets import TargetId

        tid = TargetId.parse(self.target)
        output.write(print_assembly(module, tid, header_lines(module, tid.target.name)))


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


#: The entry point object xDSL's ``Universe.get_multiverse()`` loads.
VLPC_UNIVERSE = Universe(
    all_dialects={"gemm": _gemm, "gcn": _gcn},
    all_passes=_passes(),
    all_targets={"gcn-asm": _gcn_asm},
)

__all__ = ["GcnAsmTarget", "VLPC_UNIVERSE"]
