"""``gcn-emit-descriptor``: fill each kernel's descriptor and code object v5 metadata.

From the allocated registers and the kernel's ``kernargs``/``launch``/``arg_roles``
attributes this pass computes the ``.amdhsa_kernel`` directive values
(``descriptor``: next_free_vgpr/sgpr, kernarg pointer and workgroup-id enables,
work-item id VGPRs, reserve flags, float modes) and the AMDGPU metadata map (``metadata``, JSON:
``.args`` with names, offsets, sizes and kinds, ``.sgpr_count``, ``.vgpr_count``,
``.wavefront_size``, ``.max_flat_workgroup_size``...), as AMDGPUUsage "Code Object
V5 Metadata" and "Kernel Descriptor" describe.  The printer turns both into text.

Target: an instruction the target lacks (``vlpc.isa.availability``; gfx900 has no
``v_fmac_f32``, ``v_fma_mix*`` or dot instructions) is a located error naming it; the
descriptor itself is the same on gfx900 and gfx906 (both GFX9, AMDGPUUsage "Kernel
Descriptor"), and ``.amdhsa_reserve_xnack_mask`` follows the target id's xnack setting.

Float modes: every kernel requests IEEE results (``vlpc.isa.modes.IEEE_DEFAULT``, the
same as hipcc for gfx906): f32 and f64/f16 denormals kept (FLOAT_DENORM_MODE_32 =
FLOAT_DENORM_MODE_16_64 = 3), round to nearest even, DX10 clamp and IEEE mode on.
Without these directives the assembler's default FLOAT_DENORM_MODE_32 is 0, which
flushes f32 denormal inputs and results of every FMA to zero.

LDS: a kernel that uses LDS carries an ``lds_bytes`` attribute (bytes per
workgroup, set by instruction selection); it becomes ``group_segment_fixed_size``
in the descriptor and the metadata (0 without the attribute).

Residency: a kernel whose workgroup cannot be resident on one CU (its waves' VGPRs/SGPRs over
the 4 SIMDs, its LDS, at most 1024 work-items: :func:`vlpc.workgroup_fit.workgroup_misfit`) is
a located error naming the short resource and the numbers; every kernel is finalised here, so
no such code object is ever written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from vlpc.dialects import gcn
from vlpc.errors import VlpcError, WorkgroupFitError
from vlpc.isa import base_mnemonic
from vlpc.isa.availability import missing, unavailable_reason
from vlpc.isa.modes import IEEE_DEFAULT
from vlpc.passes.common import kernels, op_error
from vlpc.targets import TargetId, get_target
from vlpc.workgroup_fit import workgroup_misfit

#: The order of user SGPRs the dispatcher initialises (AMDGPUUsage "Initial Kernel Execution State").
USER_SGPR_ROLES = (("private_segment_buffer", 4), ("dispatch_ptr", 2), ("queue_ptr", 2),
                   ("kernarg_segment_ptr", 2), ("dispatch_id", 2), ("flat_scratch_init", 2),
                   ("private_segment_size", 1))
SYSTEM_SGPR_ROLES = ("workgroup_id_x", "workgroup_id_y", "workgroup_id_z", "workgroup_info",
                     "private_segment_wave_offset")


def kernel_lds_bytes(kernel: gcn.KernelOp) -> int:
    """LDS bytes per workgroup the kernel uses (its ``lds_bytes`` attribute, else 0)."""
    attr = kernel.attributes.get("lds_bytes")
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def kernel_resources(kernel: gcn.KernelOp) -> tuple[int, int, bool]:
    """(next free VGPR, next free SGPR, uses VCC) from the allocated registers."""
    nv = ns = 0
    vcc = False
    # the register types of every value the kernel defines or uses (a few hundred distinct
    # objects: allocated types are shared), then each type once; by identity (equal types are
    # mostly one object, and an id is cheaper to hash than a type's parameters)
    types = {id(a.type): a.type for a in kernel.body.block.args}
    for op in kernel.body.walk():
        uses_vcc, is_loop = _class_facts(type(op))
        for v in op.results:
            t = v.type
            types[id(t)] = t
        for v in op.operands:
            t = v.type
            types[id(t)] = t
        if uses_vcc:
            vcc = True
        if is_loop:
            types.update((id(a.type), a.type) for a in op.body.block.args)
    for t in types.values():
        if isinstance(t, gcn.VGPRType):
            nv = max(nv, t.first + t.n)
        elif isinstance(t, gcn.SGPRType):
            ns = max(ns, t.first + t.n)
        elif isinstance(t, gcn.SpecialRegType) and t.reg.data == "vcc":
            vcc = True
    return nv, ns, vcc


_CLASS_FACTS: dict[type, tuple[bool, bool]] = {}


def _class_facts(cls: type) -> tuple[bool, bool]:
    """(an instruction reading or writing VCC implicitly, a loop) for ops of ``cls``."""
    got = _CLASS_FACTS.get(cls)
    if got is None:
        got = _CLASS_FACTS[cls] = (issubclass(cls, gcn.GCNInstruction) and "vcc" in (cls.IMPLICIT_DEFS + cls.IMPLICIT_USES),
                                   issubclass(cls, gcn.LoopOp))
    return got


def check_instructions(kernel: gcn.KernelOp, target) -> None:
    """Refuse, located, an instruction ``target`` does not have (``vlpc.isa.availability``:
    gfx900 lacks gfx906's ``v_fmac_f32``, ``v_xnor_b32``, ``v_fma_mix*`` and dot instructions)."""
    lacks = missing(target)
    if not lacks:
        return
    for o in kernel.body.walk():
        mn = getattr(o, "MNEMONIC", None)
        if isinstance(o, gcn.GCNInstruction) and mn and base_mnemonic(mn) in lacks:
            raise op_error(kernel, f"kernel '{kernel.sym_name.data}': {unavailable_reason(mn, target)}; "
                              f"it needs gfx906")


#: Hidden kernel-argument kinds that code object v5 introduced: a v4 runtime never fills them
#: (LLVM's AMDGPUUsage, "Code Object V5 Metadata", the ``.value_kind`` table).
V5_ONLY_VALUE_KINDS = frozenset({
    "hidden_block_count_x", "hidden_block_count_y", "hidden_block_count_z",
    "hidden_group_size_x", "hidden_group_size_y", "hidden_group_size_z",
    "hidden_remainder_x", "hidden_remainder_y", "hidden_remainder_z",
    "hidden_grid_dims", "hidden_heap_v1", "hidden_dynamic_lds_size",
    "hidden_private_base", "hidden_shared_base", "hidden_queue_ptr"})


@dataclass(frozen=True)
class GcnEmitDescriptorPass(ModulePass):
    """Options: ``target`` — a target id such as ``gfx906`` or ``gfx906:sramecc+:xnack-``;
    ``code-object-version`` — 5 (default) or 4 (ROCm releases before 5.3 load only v4; the
    printer writes ``.amdhsa_code_object_version`` and the metadata version from it)."""

    name = "gcn-emit-descriptor"

    target: str = "gfx906"
    code_object_version: int = 5

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        tid = TargetId.parse(self.target)
        target = get_target(self.target)
        if self.code_object_version not in (4, 5):
            raise VlpcError(f"gcn-emit-descriptor: code-object-version must be 4 or 5, got {self.code_object_version}")
        for kernel in kernels(op):
            check_instructions(kernel, target)
            nv, ns, vcc = kernel_resources(kernel)
            roles = [s.data for s in kernel.attributes["arg_roles"].data]  # type: ignore[union-attr]
            launch = kernel.launch
            assert launch is not None
            wg_size = launch.data["workgroup_size"].value.data  # type: ignore[union-attr]
            args = [{k: (v.data if isinstance(v, StringAttr) else v.value.data) for k, v in d.data.items()}
                    for d in kernel.kernargs.data]  # type: ignore[union-attr]
            v5_only = sorted({a["value_kind"] for a in args} & V5_ONLY_VALUE_KINDS)
            if self.code_object_version == 4 and v5_only:
                raise op_error(kernel, f"kernel '{kernel.sym_name.data}' reads the hidden kernel argument "
                                       f"{', '.join(v5_only)}, which only code object v5 defines; "
                                       f"compile it with code object version 5")
            kernarg_size = max(a["offset"] + a["size"] for a in args)
            kernarg_size = -(-kernarg_size // 8) * 8
            xnack = tid.settings.get("xnack") is not False
            lds_bytes = kernel_lds_bytes(kernel)
            desc: dict[str, int] = {
                "amdhsa_next_free_vgpr": max(nv, 1),
                "amdhsa_next_free_sgpr": max(ns, 1),
                "amdhsa_reserve_vcc": int(vcc),
                "amdhsa_reserve_flat_scratch": 0,
                "amdhsa_reserve_xnack_mask": int(xnack),
                "amdhsa_kernarg_size": kernarg_size,
                "amdhsa_group_segment_fixed_size": lds_bytes,
                "amdhsa_private_segment_fixed_size": 0,
                "amdhsa_system_vgpr_workitem_id": 2 if "workitem_id_z" in roles else (1 if "workitem_id_y" in roles else 0),
                **IEEE_DEFAULT.directives(),
            }
            for role, _ in USER_SGPR_ROLES:
                if role in roles:
                    desc[f"amdhsa_user_sgpr_{role}"] = 1
            for role in SYSTEM_SGPR_ROLES[:3]:
                desc[f"amdhsa_system_sgpr_{role}"] = int(role in roles)
            sgpr_count = ns + (target.vcc_sgprs if vcc else 0) + (target.xnack_mask_sgprs if xnack else 0)
            misfit = workgroup_misfit(target, nv, sgpr_count, lds_bytes, wg_size)
            if misfit is not None:  # the hardware never launches it (vlpc.workgroup_fit)
                d = op_error(kernel, f"kernel '{kernel.sym_name.data}': workgroup does not fit on one CU "
                             f"({misfit.resource}): {misfit}")
                lsplit = launch.data.get("local_split")
                raise WorkgroupFitError(d.message, d.file, d.line, d.col, resource=misfit.resource,
                                        local_split=lsplit.value.data if isinstance(lsplit, IntegerAttr) else 1)
            meta_args = []
            for a in args:
                entry = {".name": a["name"], ".offset": a["offset"], ".size": a["size"],
                         ".value_kind": a["value_kind"], ".type_name": a["type"]}
                if a["value_kind"] == "global_buffer":
                    entry[".address_space"] = "global"
                    entry[".actual_access"] = a.get("access", "read_write" if a["name"] == "C" else "read_only")
                meta_args.append(entry)
            meta = {
                ".name": kernel.sym_name.data,
                ".symbol": f"{kernel.sym_name.data}.kd",
                ".kernarg_segment_size": kernarg_size,
                ".kernarg_segment_align": 8,
                ".group_segment_fixed_size": lds_bytes,
                ".private_segment_fixed_size": 0,
                ".wavefront_size": target.wavefront_size,
                ".sgpr_count": sgpr_count,
                ".vgpr_count": nv,
                ".max_flat_workgroup_size": wg_size,
                ".reqd_workgroup_size": [wg_size, 1, 1],
                ".args": meta_args,
            }
            kernel.descriptor = DictionaryAttr({k: IntegerAttr(v, i64) for k, v in desc.items()})
            kernel.metadata = StringAttr(json.dumps(meta))
            if self.code_object_version != 5:  # the printer's default is v5
                kernel.attributes["code_object_version"] = IntegerAttr(self.code_object_version, i64)
