"""``gemm-split-k``: divide the K range among workgroups (XeTLA's num_global_splitk).

IR contract: after this pass every ``gemm.matmul`` carries ``split_k = S``.  With
S = 1 (the default and, for now, the only value) each workgroup walks the whole K
range, the grid is unchanged, and no workspace or second kernel is needed: the
pass is a documented no-op apart from recording S.  S > 1 (workspace and atomic
modes, local split) is a later issue and is rejected with a diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vlpc.passes.common import matmuls, op_error, require


@dataclass(frozen=True)
class GemmSplitKPass(ModulePass):
    """Options: ``split-k`` (S, the number of K slices; 1 = no split), ``mode``."""

    name = "gemm-split-k"

    split_k: int = 1
    mode: str = "workspace"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for mm in matmuls(op):
            require(mm, "grid", "gemm-map-workgroups")
            if self.split_k < 1:
                raise op_error(mm, f"split-k must be at least 1, got {self.split_k}")
            if self.mode not in ("workspace", "atomic"):
                raise op_error(mm, f"unknown split-k mode '{self.mode}' (workspace or atomic)")
            if self.split_k != 1:
                raise op_error(mm, f"split-k={self.split_k}: splitting K is not implemented yet; use split-k=1")
            mm.set_int("split_k", 1)
