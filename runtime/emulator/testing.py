"""Helpers to run small hand-written programs on the emulator (tests, benchmarks).

``assemble_text(asm)`` assembles GFX9 assembly with vlpc's toolchain and returns the
``.text`` bytes of the relocatable object; ``run_program(asm, ...)`` maps them into a
:class:`~.memory.Memory` and runs one dispatch with a hand-built
:class:`~.core.DispatchConfig`.
"""

from __future__ import annotations

import functools
import io

from .core import DispatchConfig, LaunchStats, run_dispatch
from .memory import Memory


_KERNEL = """\
.amdgcn_target "amdgcn-amd-amdhsa--{target}"
.amdhsa_code_object_version 5
.text
.globl {name}
.p2align 8
.type {name},@function
{name}:
{body}
.L{name}_end:
.size {name}, .L{name}_end-{name}

.rodata
.p2align 6
.amdhsa_kernel {name}
  .amdhsa_next_free_vgpr {vgprs}
  .amdhsa_next_free_sgpr {sgprs}
  .amdhsa_kernarg_size {kernarg_size}
  .amdhsa_group_segment_fixed_size {lds}
  .amdhsa_reserve_flat_scratch 0
{directives}
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [ 1, 2 ]
amdhsa.target: amdgcn-amd-amdhsa--{target}
amdhsa.kernels:
  - .name: {name}
    .symbol: {name}.kd
    .kernarg_segment_size: {kernarg_size}
    .kernarg_segment_align: 8
    .group_segment_fixed_size: {lds}
    .private_segment_fixed_size: 0
    .wavefront_size: 64
    .sgpr_count: {sgprs}
    .vgpr_count: {vgprs}
    .max_flat_workgroup_size: {max_wg}
{extra_md}    .args:{args_md}
...
.end_amdgpu_metadata
"""


def kernel_source(name: str, body: str, *, vgprs: int, sgprs: int, lds: int = 0, kernarg_size: int = 0,
                  directives: str = "", args_md: str | None = None, extra_md: str = "", max_wg: int = 256,
                  target: str = "gfx906") -> str:
    """Assembly of one hand-written kernel with its descriptor and code object v5 metadata:
    ``body`` (instructions ending in ``s_endpgm``), ``vgprs``/``sgprs`` (next free
    register), ``lds`` bytes of static LDS, ``directives`` (more ``.amdhsa_*`` lines),
    ``args_md`` (the metadata ``.args`` rows, YAML lines; None: an empty list),
    ``extra_md`` (more metadata lines of the kernel).  Assemble it with
    :func:`vlpc.runtime.toolchain.assemble_and_link`."""
    args = " []" if args_md is None else "\n" + args_md.rstrip("\n")
    return _KERNEL.format(name=name, body=body, vgprs=vgprs, sgprs=sgprs, lds=lds,
                          kernarg_size=kernarg_size, directives=directives, args_md=args,
                          extra_md=extra_md, max_wg=max_wg, target=target)


@functools.lru_cache(maxsize=256)
def assemble_text(asm: str) -> bytes:
    from elftools.elf.elffile import ELFFile

    from vlpc.runtime.toolchain import find_toolchain
    from vlpc.targets import TargetId

    obj = find_toolchain().assemble(asm, TargetId.parse("gfx906"))
    elf = ELFFile(io.BytesIO(obj))
    sec = elf.get_section_by_name(".text")
    return sec.data()


def run_program(asm: str, mem: Memory | None = None, *, grid=(1, 1, 1), block=(64, 1, 1),
                kernarg: int = 0, name: str = "test", **cfg) -> tuple[Memory, LaunchStats]:
    """Assemble ``asm`` (a body ending in ``s_endpgm``) and run it.

    By default the kernarg pointer is in s[0:1] and workgroup id x in s2
    (``user_sgpr_kernarg_segment_ptr``); pass DispatchConfig fields to change that.
    """
    code = assemble_text(asm)
    mem = mem or Memory()
    code_addr = mem.alloc(len(code) + 64, align=256, tag="code")
    mem.write(code_addr, code)
    opts = dict(user_sgpr_kernarg_segment_ptr=True, kernarg_address=kernarg)
    opts.update(cfg)
    conf = DispatchConfig(kernel_name=name, code=code, code_address=code_addr,
                          entry_address=code_addr, grid=tuple(grid), block=tuple(block), **opts)
    stats = run_dispatch(mem, conf)
    return mem, stats


def run_lanes(body: str, inputs=(), n_out: int = 1, *, block: int = 64, grid: int = 1,
              mem: Memory | None = None, **cfg):
    """Run a per-work-item ``body`` over ``grid * block`` work-items.

    Conventions: input ``j`` (a 32-bit array, one value per work-item) is in
    ``v{10+j}``; the body leaves output ``k`` in ``v{20+k}``; ``v1`` holds the
    work-item's byte offset (4 * global id), ``s2`` the workgroup id; the body may
    use s3..s13 and s32..s101, v2..v9, v14..v19 and v24+.  Returns
    ``(list of uint32 output arrays, LaunchStats)``.
    """
    import numpy as np

    total = block * grid
    mem = mem or Memory()
    ins = [np.ascontiguousarray(np.asarray(a).reshape(-1)[:total]).view(np.uint32) for a in inputs]
    assert len(ins) <= 4 and n_out <= 4
    ptrs = []
    for a in ins:
        p = mem.alloc(4 * total, tag="in")
        mem.write(p, a)
        ptrs.append(p)
    ptrs += [0] * (4 - len(ptrs))
    outs = [mem.alloc(4 * total, tag=f"out{k}") for k in range(n_out)]
    karg = mem.alloc(64, tag="kernargs")
    mem.write(karg, np.array(ptrs + outs + [0] * (4 - n_out), np.uint64))
    pro = ["s_load_dwordx16 s[16:31], s[0:1], 0x0", "s_waitcnt lgkmcnt(0)",
           f"s_mul_i32 s3, s2, {block}", "v_add_u32 v1, s3, v0", "s_mov_b64 s[14:15], exec", "v_lshlrev_b32 v1, 2, v1"]
    for j in range(len(ins)):
        pro.append(f"global_load_dword v{10 + j}, v1, s[{16 + 2 * j}:{17 + 2 * j}]")
    if ins:
        pro.append("s_waitcnt vmcnt(0)")
    epi = ["s_mov_b64 exec, s[14:15]"] + [f"global_store_dword v1, v{20 + k}, s[{24 + 2 * k}:{25 + 2 * k}]"
                                    for k in range(n_out)] + ["s_endpgm"]
    asm = "\n".join(pro + [body] + epi) + "\n"
    mem, stats = run_program(asm, mem, grid=(grid, 1, 1), block=(block, 1, 1), kernarg=karg, **cfg)
    return [mem.read(o, 4 * total).view(np.uint32) for o in outs], stats
