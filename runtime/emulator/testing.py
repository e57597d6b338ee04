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
