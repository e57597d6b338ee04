"""Static figures of a GEMM kernel's K loop, read from its GCN assembly text.

Works on any gfx9 assembly with one K loop (vlpc's output, or a hand-written
kernel such as the seed's), so the same measurement applies to both:

* instruction counts in the loop by mnemonic and the number of non-FMA
  instructions per 1024 FMAs;
* whether every VALU instruction in the loop is a ``v_fma_f32`` reading exactly one SGPR;
* the latency cover of A: for every scalar load in the loop whose destination
  feeds an FMA, the number of VALU instructions between the load and the first
  ``s_waitcnt`` that retires it (``lgkmcnt(0)``: SMEM returns out of order), following
  the loop around its back edge; the smallest such number is the cover.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

_REG = re.compile(r"\b([sv])(?:\[(\d+):(\d+)\]|(\d+)\b)")


def _regs(text: str, kind: str) -> set[int]:
    out: set[int] = set()
    for m in _REG.finditer(text):
        if m.group(1) != kind:
            continue
        if m.group(4) is not None:
            out.add(int(m.group(4)))
        else:
            out.update(range(int(m.group(2)), int(m.group(3)) + 1))
    return out


def _instructions(asm: str) -> list[str]:
    lines = []
    for raw in asm.splitlines():
        line = raw.split(";")[0].split("//")[0].strip()
        if line:
            lines.append(line)
    return lines


@dataclass
class LoopFigures:
    """What :func:`loop_figures` measures (counts are per loop iteration)."""

    label: str
    counts: Counter = field(default_factory=Counter)
    fma: int = 0
    non_fma: int = 0
    valu_all_fma_with_one_sgpr: bool = True
    a_cover: int | None = None
    a_loads: int = 0

    @property
    def non_fma_per_1024(self) -> float:
        return self.non_fma * 1024 / self.fma if self.fma else float("inf")


def loop_figures(asm: str, fma: str = "v_fma_f32") -> LoopFigures:
    """Figures of the K loop: of the loops (a label with a later branch back to it), the
    one with the most FMAs (a kernel with a K tail loop has two)."""
    lines = _instructions(asm)
    loop: list[str] | None = None
    label = ""
    for i, line in enumerate(lines):
        if line.endswith(":") and not line.startswith("."):  # kernel symbol
            continue
        if line.endswith(":"):
            name = line[:-1]
            for j in range(i + 1, len(lines)):
                if lines[j].startswith("s_cbranch") and lines[j].split()[-1] == name:
                    body = [x for x in lines[i + 1:j + 1] if not x.endswith(":") and not x.startswith(".")]
                    fmas = sum(1 for x in body if x.startswith(fma))
                    if loop is None or fmas > sum(1 for x in loop if x.startswith(fma)):
                        loop, label = body, name  # the K loop: the loop with the most FMAs
                    break
    if loop is None:
        raise ValueError("no loop found (a label with an s_cbranch_* back to it)")
    fig = LoopFigures(label)
    for ins in loop:
        mnemonic = ins.split()[0]
        fig.counts[mnemonic] += 1
        if mnemonic == fma:
            fig.fma += 1
            if sum(1 for m in _REG.finditer(ins.split(None, 1)[1]) if m.group(1) == "s") != 1:
                fig.valu_all_fma_with_one_sgpr = False
        else:
            fig.non_fma += 1
            if mnemonic.startswith("v_"):
                fig.valu_all_fma_with_one_sgpr = False
    # A latency cover
    fma_sgprs: set[int] = set()
    for ins in loop:
        if ins.startswith(fma):
            fma_sgprs |= _regs(ins.split(None, 1)[1], "s")
    covers = []
    n = len(loop)
    for i, ins in enumerate(loop):
        if not ins.startswith(("s_load", "s_buffer_load")):
            continue
        dst = _regs(ins.split(None, 1)[1].split(",")[0], "s")
        if not dst & fma_sgprs:
            continue
        fig.a_loads += 1
        valu = 0
        for step in range(1, n + 1):
            nxt = loop[(i + step) % n]
            if nxt.startswith("s_waitcnt") and "lgkmcnt(0)" in nxt:
                break
            if nxt.startswith("v_"):
                valu += 1
        covers.append(valu)
    fig.a_cover = min(covers) if covers else None
    return fig
