"""Helpers shared by vlpc's passes: finding ``gemm.matmul`` and ``gcn.kernel`` ops and located
diagnostics."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation

from vlpc.dialects.gcn import KernelOp
from vlpc.dialects.gemm import MatmulOp
from vlpc.errors import DiagnosticError


def op_error(op: Operation, message: str) -> DiagnosticError:
    """A ``file:line:col: error: message`` diagnostic at ``op``'s source location."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return DiagnosticError(message, loc.filename.data, loc.line.data, loc.column.data)
    return DiagnosticError(f"{message} (in '{op.name}')")


def matmuls(module: ModuleOp) -> Iterator[MatmulOp]:
    for op in list(module.walk()):
        if isinstance(op, MatmulOp):
            yield op


def kernels(module: Operation) -> list[KernelOp]:
    """The ``gcn.kernel`` ops in ``module``, in walk order, without walking their bodies (a
    kernel holds no kernel: the verifier refuses one): as ``[o for o in module.walk() if
    isinstance(o, KernelOp)]``, which visits every instruction (a millisecond per kernel set,
    asked for by every pass after convert-gemm-to-gcn)."""
    out: list[KernelOp] = []
    for region in module.regions:
        for block in region.blocks:
            for op in block.ops:
                if isinstance(op, KernelOp):
                    out.append(op)
                elif op.regions:
                    out += kernels(op)
    return out


def require(op: MatmulOp, prop: str, producer: str) -> None:
    if op.properties.get(prop) is None:
        raise op_error(op, f"'{prop}' is not set: run {producer} first")
