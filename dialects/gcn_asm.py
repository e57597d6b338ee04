"""The GCN assembly printer: the only place vlpc produces assembly text.

``print_assembly(module, target_id)`` prints every ``gcn.kernel`` of a module as a
file LLVM's AMDGPU assembler accepts: each instruction op prints its own line
(:meth:`GCNInstruction.assembly_line`), each loop its label, followed by the
``.amdhsa_kernel`` block and one ``.amdgpu_metadata`` document (code object v5)
built from the attributes ``gcn-emit-descriptor`` filled in.

Every instruction line's mnemonic is checked against the gfx906 table (``vlpc.isa``,
with its ``_e32``/``_e64``/``_sdwa``/``_dpp`` form): an op that printed anything else is
an internal error named here, not a line for the assembler to reject.
"""

from __future__ import annotations

import json

from xdsl.dialects.builtin import ModuleOp

from vlpc import isa
from vlpc.dialects import gcn
from vlpc.errors import VlpcError
from vlpc.targets import TargetId

CODE_OBJECT_VERSION = 5
#: ``amdhsa.version`` of each code object version vlpc writes (AMDGPUUsage "Code Object V4/V5 Metadata").
METADATA_VERSIONS = {4: (1, 1), 5: (1, 2)}


def code_object_version(kernels) -> int:
    """The code object version of ``kernels`` (``gcn-emit-descriptor{code-object-version=N}``
    records a version other than the default, 5)."""
    versions = {k.attributes["code_object_version"].value.data if "code_object_version" in k.attributes
                else CODE_OBJECT_VERSION for k in kernels}
    if len(versions) != 1:
        raise VlpcError(f"kernels of one module disagree on the code object version: {sorted(versions)}")
    return versions.pop()


def _yaml_scalar(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    return s if s.replace("_", "").replace(".", "").isalnum() and not s[0].isdigit() else json.dumps(s)


def _yaml(value: object, indent: int = 0) -> list[str]:
    """A small YAML emitter for the metadata map (dicts, lists, scalars)."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict | list) and v and not (isinstance(v, list) and all(isinstance(x, int) for x in v)):
                lines.append(f"{pad}{k}:")
                lines.extend(_yaml(v, indent + 2))
            elif isinstance(v, list):
                lines.append(f"{pad}{k}: [ {', '.join(_yaml_scalar(x) for x in v)} ]")
            else:
                lines.append(f"{pad}{k}: {_yaml_scalar(v)}")
    elif isinstance(value, list):
        for item in value:
            sub = _yaml(item, indent + 2)
            first = sub[0].lstrip()
            lines.append(f"{pad}- {first}")
            lines.extend(sub[1:])
    return lines


def kernel_lines(kernel: gcn.KernelOp) -> list[str]:
    name = kernel.sym_name.data
    if kernel.descriptor is None:
        raise VlpcError(f"kernel {name} has no descriptor: run gcn-emit-descriptor first")
    lines = ["  .text", f"  .globl {name}", "  .p2align 8", f"  .type {name},@function", f"{name}:"]
    for op in kernel.body.walk():
        if isinstance(op, gcn.GCNInstruction):
            line = op.assembly_line()
            if line is not None:
                if not line.endswith(":"):  # not a label
                    _check_mnemonic(op, line)
                lines.append(line)
    lines += [f".L{name}_end:", f"  .size {name}, .L{name}_end-{name}", "",
              "  .rodata", "  .p2align 6", f"  .amdhsa_kernel {name}"]
    for key, attr in kernel.descriptor.data.items():
        lines.append(f"    .{key} {attr.value.data}")  # type: ignore[union-attr]
    lines.append("  .end_amdhsa_kernel")
    return lines


def _check_mnemonic(op: gcn.GCNInstruction, line: str) -> None:
    mnemonic = line.split(None, 1)[0]
    try:
        isa.lookup_form(mnemonic)
    except KeyError as e:
        raise VlpcError(f"internal error: {op.name} printed {line.strip()!r}: {e.args[0]}") from None


def print_assembly(module: ModuleOp, target_id: TargetId | str, header: list[str] | None = None) -> str:
    """Assembly text for every kernel in ``module`` (after allocation and descriptor emission)."""
    if isinstance(target_id, str):
        target_id = TargetId.parse(target_id)
    kernels = [o for o in module.walk() if isinstance(o, gcn.KernelOp)]
    if not kernels:
        raise VlpcError("nothing to compile: the module has no gcn.kernel (the input has no gemm.matmul, "
                        "or convert-gemm-to-gcn has not run)")
    out = [f"; {line}" for line in (header or [])]
    version = code_object_version(kernels)
    out += [f'  .amdgcn_target "{target_id.directive}"',
            f"  .amdhsa_code_object_version {version}", ""]
    for k in kernels:
        out += kernel_lines(k)
        out.append("")
    meta = {"amdhsa.version": list(METADATA_VERSIONS[version]),
            "amdhsa.target": target_id.directive,
            "amdhsa.kernels": [gcn.metadata_json(k) for k in kernels]}
    out += ["  .amdgpu_metadata", "---"] + _yaml(meta) + ["...", "  .end_amdgpu_metadata", ""]
    return "\n".join(out)
