"""``gemm-map-subgroups``: wavefronts of 64 lanes onto sub-tiles of the macro tile.

XeTLA's vocabulary ("Construct a High Performance GEMM", docs/references.md): ``wg_tile`` is the workgroup's tile
(the macro tile), ``sg_tile`` the tile one subgroup — here one wavefront of 64
work-items — computes (``micro_m`` rows by 64 columns, one column per lane), and
``local_range`` the number of wavefronts along M and N.  Work-item x of a
workgroup maps to column ``x % macro_n``; wavefront ``w`` covers columns
``64*w .. 64*w+63``.

Errors: a macro tile whose N extent does not divide into wavefronts of 64 lanes
(each wavefront must cover whole columns of one row block), or a macro tile with
more than one row block (the A-in-SGPR kernel keeps one set of A rows per
workgroup, as the seed).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vlpc.passes.common import matmuls, op_error, require
from vlpc.targets import get_target


@dataclass(frozen=True)
class GemmMapSubgroupsPass(ModulePass):
    """Option: ``target`` (for the wavefront size)."""

    name = "gemm-map-subgroups"

    target: str = "gfx906"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        wave = get_target(self.target).wavefront_size
        for mm in matmuls(op):
            require(mm, "workgroup_size", "gemm-map-workgroups")
            mt_m, mt_n = mm.get_int_array("macro_tile")
            mi_m, mi_n = mm.get_int_array("micro_tile")
            cols_per_wave = wave * mi_n
            if mt_n % cols_per_wave:
                raise op_error(mm, f"macro tile N={mt_n} does not divide into wavefronts: each "
                               f"wavefront of {wave} lanes covers {cols_per_wave} columns")
            if mt_m != mi_m:
                raise op_error(mm, f"macro tile M={mt_m} with micro tile M={mi_m}: more than one row "
                               "block per workgroup is not supported (A rows are shared by the "
                               "whole workgroup through SGPRs)")
            mm.set_int_array("wg_tile", (mt_m, mt_n))
            mm.set_int_array("sg_tile", (mi_m, cols_per_wave))
            mm.set_int_array("local_range", (mt_m // mi_m, mt_n // cols_per_wave))
