"""``gemm-map-workgroups``: macro tiles onto the grid, and the workgroup size.

As in the seed (*An Alternative SGEMM on VEGA* section 2.1, docs/references.md): workgroup id x runs over the N
tiles and y over the M tiles, so the waves of a workgroup share the A rows they
read through the scalar cache.  ``grid`` (workgroups in x, y, z; -1 where the size
is known only at launch: then x = ceil(N / macro_n), y = ceil(M / macro_m)) and
``workgroup_size`` (work-items in x, y, z) are written on the op.

Errors: more work-items per workgroup than the target allows (1024 on gfx906).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vlpc.passes.common import matmuls, op_error, require
from vlpc.targets import get_target


@dataclass(frozen=True)
class GemmMapWorkgroupsPass(ModulePass):
    """Option: ``target`` (processor name, for the workgroup size limit)."""

    name = "gemm-map-workgroups"

    target: str = "gfx906"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = get_target(self.target)
        for mm in matmuls(op):
            require(mm, "macro_tile", "gemm-tile")
            mt_m, mt_n = mm.get_int_array("macro_tile")
            mi_m, mi_n = mm.get_int_array("micro_tile")
            items = (mt_m // mi_m) * (mt_n // mi_n)
            if items > target.max_workitems_per_workgroup:
                raise op_error(mm, f"macro tile {mt_m}x{mt_n} with micro tile {mi_m}x{mi_n} needs "
                               f"{items} work-items per workgroup; {target.name} allows at most "
                               f"{target.max_workitems_per_workgroup}")
            shape = mm.shape()
            gx = -(-shape.n // mt_n) if shape.n >= 0 else -1
            gy = -(-shape.m // mt_m) if shape.m >= 0 else -1
            mm.set_int_array("grid", (gx, gy, 1))
            mm.set_int_array("workgroup_size", (items, 1, 1))
