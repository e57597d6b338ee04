"""alpha and beta of a ``gemm.matmul`` given as ``arith.constant`` values (as ``convert-linalg-to-gemm`` writes them).

The kernel ABI does not change: the kernel still takes alpha and beta as kernel
arguments.  ``convert-gemm-to-gcn`` accepts constant operands for them and records
their values in the kernel's ``launch`` attribute (keys ``alpha``/``beta``, f64),
so that ``CompiledKernel.launch_info`` has them and ``vlpc.run`` passes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, f64
from xdsl.ir import Operation

from vlpc.dialects.gemm import MatmulOp


@dataclass
class ScalarConstants:
    """The ``arith.constant`` operations feeding alpha/beta of one matmul, and their values."""

    ops: set[Operation] = field(default_factory=set)
    values: dict[str, float] = field(default_factory=dict)

    def allows(self, op: Operation) -> bool:
        """``op`` is one of these constants (so it may sit in the kernel function)."""
        return op in self.ops

    def record(self, kernel: Operation) -> None:
        """Add ``alpha``/``beta`` to ``kernel``'s ``launch`` dictionary attribute."""
        if not self.values:
            return
        launch = kernel.attributes.get("launch")
        entries = dict(launch.data) if isinstance(launch, DictionaryAttr) else {}
        for name, value in self.values.items():
            entries[name] = FloatAttr(value, f64)
        kernel.attributes["launch"] = DictionaryAttr(entries)


def scalar_constants(mm: MatmulOp) -> ScalarConstants:
    """alpha/beta operands of ``mm`` that are float ``arith.constant`` results."""
    found = ScalarConstants()
    for name, value in (("alpha", mm.alpha), ("beta", mm.beta)):
        owner = value.owner
        if getattr(owner, "name", None) != "arith.constant":  # (xDSL's arith is imported only when it is there)
            continue
        from xdsl.dialects import arith

        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr | IntegerAttr):  # i32: int8
            found.ops.add(owner)
            found.values[name] = float(owner.value.value.data)
    return found
