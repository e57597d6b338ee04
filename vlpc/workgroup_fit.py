"""Whether one workgroup can be resident on a CU: the single check the compiler, the plan
choosers and the timing model share.

All wavefronts of a workgroup run on one CU at once, spread over its SIMDs ("AMD Graphics
Cores Next (GCN) Architecture" whitepaper, "Compute Unit"; LLVM AMDGPUUsage, "Memory Model
GFX9": "all wavefronts of a work-group are on the same CU").  A workgroup of ``W`` work-items
has ``ceil(W / 64)`` waves, so each SIMD must hold ``ceil(waves / 4)`` of them at once; how
many waves a SIMD can hold for the kernel's VGPR/SGPR use is
:meth:`vlpc.targets.Target.occupancy` (``by_vgprs``: 256 VGPRs per lane per SIMD over the
allocation rounded up to the granule of 4; ``by_sgprs``: the SGPR table).  The workgroup's
LDS must fit the CU's 64 KiB, and ``W`` at most 1024 work-items.  A workgroup that fails any
of these cannot be launched (the dispatcher would wait for ever; LLVM refuses such a
register budget for ``amdgpu-flat-work-group-size``), so it is refused, never modeled.

Worked example (gfx906): 16 waves (1024 work-items) need 4 waves per SIMD; at 64 VGPRs a
SIMD holds 256 // 64 = 4: it fits; at 68 VGPRs (68 is already a multiple of 4) 256 // 68 = 3
waves per SIMD, 12 per CU < 16: it does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vlpc.errors import WorkgroupFitError
from vlpc.targets import Target

__all__ = ["WorkgroupFitError", "WorkgroupMisfit", "check_workgroup_fits", "workgroup_misfit"]


@dataclass(frozen=True)
class WorkgroupMisfit:
    """Why a workgroup does not fit on a CU: the ``resource`` that is short (``"work-items"``,
    ``"VGPRs"``, ``"SGPRs"`` or ``"LDS"``) and a one-line ``reason`` with the numbers."""

    resource: str
    reason: str

    def __str__(self) -> str:
        return self.reason


def workgroup_misfit(target: Target, vgprs: int, sgprs: int, lds_bytes: int,
                     workgroup_size: int) -> WorkgroupMisfit | None:
    """``None`` when a workgroup of ``workgroup_size`` work-items, each wave using ``vgprs``
    VGPRs and ``sgprs`` SGPRs (as counted for the descriptor), with ``lds_bytes`` of LDS per
    workgroup, can be resident on one CU of ``target``; else which resource is short and by
    how much (module docstring for the rule and its sources)."""
    if workgroup_size > target.max_workitems_per_workgroup:
        return WorkgroupMisfit("work-items", f"a workgroup of {workgroup_size} work-items exceeds "
                               f"{target.name}'s {target.max_workitems_per_workgroup}")
    if lds_bytes > target.lds_bytes_per_cu:
        return WorkgroupMisfit("LDS", f"a workgroup needs {lds_bytes} bytes of LDS; a {target.name} CU "
                               f"has {target.lds_bytes_per_cu}")
    waves = max(1, math.ceil(workgroup_size / target.wavefront_size))
    per_simd = math.ceil(waves / target.simds_per_cu)
    occ = target.occupancy(vgprs, sgprs, lds_bytes, workgroup_size)
    if occ.by_vgprs < per_simd:
        alloc = target.allocated_vgprs(vgprs)
        return WorkgroupMisfit("VGPRs", f"a workgroup of {waves} waves needs {per_simd} waves per SIMD, "
                               f"but at {vgprs} VGPRs ({alloc} allocated) a SIMD holds "
                               f"{target.vgprs_per_simd_lane} // {alloc} = {occ.by_vgprs} "
                               f"({occ.by_vgprs * target.simds_per_cu} waves per CU)")
    if occ.by_sgprs < per_simd:
        return WorkgroupMisfit("SGPRs", f"a workgroup of {waves} waves needs {per_simd} waves per SIMD, "
                               f"but at {sgprs} SGPRs a SIMD holds {occ.by_sgprs}")
    return None


def check_workgroup_fits(target: Target, vgprs: int, sgprs: int, lds_bytes: int,
                         workgroup_size: int, what: str = "kernel") -> None:
    """Raise :class:`vlpc.errors.WorkgroupFitError` (``"<what>: workgroup does not fit on one CU
    (<resource>): ..."``) when :func:`workgroup_misfit` finds a short resource."""
    bad = workgroup_misfit(target, vgprs, sgprs, lds_bytes, workgroup_size)
    if bad is not None:
        raise WorkgroupFitError(f"{what}: workgroup does not fit on one CU ({bad.resource}): {bad}",
                                resource=bad.resource)
