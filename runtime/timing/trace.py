"""Instruction traces recorded by the functional emulator for the timing model.

The emulator executes waves in lock-step groups (``runtime/emulator/core.py``);
when a launch asks for a trace (:class:`TraceRequest` in ``DispatchConfig.trace``)
it also records, for a few *representative* workgroups, each wave's dynamic
instruction stream and the cache lines its memory instructions touch, and for a
larger set of workgroups only the set of lines each one touches (its
*footprint*, used for the L2 model).  Execution and timing stay apart, as in
Accel-Sim's trace-driven mode: the timing model (:mod:`vlpc.runtime.timing.cu`)
replays a :class:`KernelTrace` and never looks at register values.

Units: addresses are byte addresses; lines are ``address >> LINE_SHIFT``
(64-byte lines, the L1/L2 line size of gfx906: GCN whitepaper, ROCm GPU specs; docs/references.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: log2 of the cache line size in bytes (64 B lines: GCN whitepaper, docs/references.md).
LINE_SHIFT = 6


@dataclass(frozen=True)
class TraceRequest:
    """What a launch should record.

    ``workgroups``: linear workgroup ids (x fastest, then y, then z) whose waves
    are traced instruction by instruction.  ``footprint``: linear ids whose
    touched lines are recorded (a superset is fine).  ``only``: run only the
    union of both sets (a timing-only launch: the other workgroups' results are
    not computed).
    """

    workgroups: tuple[int, ...]
    footprint: tuple[int, ...] = ()
    only: bool = False

    def selected(self) -> set[int]:
        return set(self.workgroups) | set(self.footprint)


@dataclass
class StaticInstr:
    """What the timing model needs to know of the instruction at one PC."""

    mnemonic: str
    encoding: str
    size: int          # bytes (4 or 8)
    cls: str           # the emulator's class (vlpc.isa.classes.EXECUTION_CLASSES)
    vmcnt: int = 63    # s_waitcnt thresholds
    lgkmcnt: int = 15
    nop: int = 0       # s_nop: wait states - 1
    store: bool = False  # VMEM/LDS store (no data returns)
    ends: bool = False  # s_endpgm


@dataclass
class KernelTrace:
    """Traced waves of one launch.

    ``streams[(wg, wave)]``: the PCs the wave executed, in order (np.int64).
    ``mem[(wg, wave)]``: ``{stream index: (lines (np.int64 array), bank_cycles)}`` for
    memory instructions (``bank_cycles`` is the LDS conflict cost in cycles, else 0).
    ``footprint[wg]``: the unique lines the workgroup touched.  ``static[pc]``:
    :class:`StaticInstr`.  ``grid``/``waves_per_wg`` describe the launch;
    ``traced`` lists the traced workgroups in request order.
    """

    grid: tuple[int, int, int]
    waves_per_wg: int
    traced: tuple[int, ...]
    streams: dict = field(default_factory=dict)
    mem: dict = field(default_factory=dict)
    footprint: dict = field(default_factory=dict)
    static: dict = field(default_factory=dict)

    @property
    def workgroups(self) -> int:
        gx, gy, gz = self.grid
        return gx * gy * gz

    def merge(self, other: "KernelTrace") -> None:
        self.streams.update(other.streams)
        self.mem.update(other.mem)
        for wg, lines in other.footprint.items():
            mine = self.footprint.get(wg)
            self.footprint[wg] = lines if mine is None else np.union1d(mine, lines)
        self.static.update(other.static)

    def waves_of(self, wg: int) -> list[tuple[int, int]]:
        return [(wg, w) for w in range(self.waves_per_wg) if (wg, w) in self.streams]


class Recorder:
    """Per-batch recorder the emulator core calls (kept cheap when nothing is traced)."""

    def __init__(self, request: TraceRequest, wg_linear: np.ndarray, wave_in_wg: np.ndarray,
                 grid: tuple[int, int, int], waves_per_wg: int):
        traced = set(request.workgroups)
        fp = set(request.footprint) | traced
        self.wg_linear = wg_linear            # per batch wave: linear workgroup id
        self.wave_in_wg = wave_in_wg
        self.traced_mask = np.array([int(w) in traced for w in wg_linear], bool)
        self.fp_mask = np.array([int(w) in fp for w in wg_linear], bool)
        self.any_fp = bool(self.fp_mask.any())
        self.lists: dict[int, list] = {int(w): [] for w in np.flatnonzero(self.traced_mask)}
        self.mem: dict[int, dict] = {w: {} for w in self.lists}
        self.fp_keys: list[np.ndarray] = []
        self.trace = KernelTrace(tuple(int(v) for v in grid), waves_per_wg,
                                 tuple(w for w in request.workgroups))

    def traced_of(self, idx: np.ndarray) -> tuple:
        """Batch wave ids of ``idx`` that are traced (positions in ``idx`` and ids)."""
        m = self.traced_mask[idx]
        if not m.any():
            return ()
        pos = np.flatnonzero(m)
        return tuple(zip(pos.tolist(), idx[pos].tolist()))

    def memory(self, g, addr_by_wave, active_by_wave, nbytes: int, bank_cycles=None) -> None:
        """Record lines touched by group ``g`` (``addr_by_wave``: (n, lanes) byte addresses)."""
        tw = g.traced
        if tw:
            for pos, w in tw:
                a = addr_by_wave[pos]
                if active_by_wave is not None:
                    a = a[active_by_wave[pos]]
                lines = _lines(a, nbytes)
                bc = 0 if bank_cycles is None else int(bank_cycles[pos])
                self.mem[w][len(self.lists[w]) - 1] = (lines, bc)
        if self.any_fp and nbytes:
            m = self.fp_mask[g.idx]
            if m.any():
                a = np.asarray(addr_by_wave)[m].astype(np.int64)
                wg = self.wg_linear[g.idx[m]].astype(np.int64)[:, None]
                wg = np.broadcast_to(wg, a.shape)
                if active_by_wave is not None:
                    act = np.asarray(active_by_wave)[m]
                    a, wg = a[act], wg[act]
                first = a >> LINE_SHIFT
                last = (a + nbytes - 1) >> LINE_SHIFT
                keys = (wg << 40) | first
                if not np.array_equal(first, last):
                    keys = np.concatenate([keys.ravel(), ((wg << 40) | last).ravel()])
                self.fp_keys.append(sorted_unique(keys))

    def finish(self, prepared: dict) -> KernelTrace:
        t = self.trace
        for w, pcs in self.lists.items():
            key = (int(self.wg_linear[w]), int(self.wave_in_wg[w]))
            t.streams[key] = np.asarray(pcs, np.int64)
            t.mem[key] = self.mem[w]
        if self.fp_keys:
            keys = sorted_unique(np.concatenate(self.fp_keys))
            wgs = keys >> 40
            lines = keys & ((1 << 40) - 1)
            cut = np.flatnonzero(np.diff(wgs)) + 1
            for part_w, part_l in zip(np.split(wgs, cut), np.split(lines, cut)):
                if part_w.size:
                    t.footprint[int(part_w[0])] = part_l
        for pc, p in prepared.items():
            t.static[pc] = static_of(p.ins, p.cls)
        return t


def sorted_unique(a) -> np.ndarray:
    """``np.unique(a)`` (the sorted distinct values, flattened) by one sort and a comparison of
    neighbours.  NumPy >= 2.3 answers a plain ``np.unique`` of integers with a hash table, which
    on the timing model's arrays of line keys (millions of 40-bit values, few repeats) is one
    to two orders of magnitude slower than sorting (measured on this project's 2-core machine
    with NumPy 2.4: 1 M random keys 20 s against 1 s)."""
    s = np.sort(np.asarray(a).ravel())
    if s.size < 2:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def _lines(addr: np.ndarray, nbytes: int) -> np.ndarray:
    a = np.asarray(addr, np.uint64).astype(np.int64).reshape(-1)
    if a.size == 0:
        return np.zeros(0, np.int64)
    first = a >> LINE_SHIFT
    last = (a + max(nbytes, 1) - 1) >> LINE_SHIFT
    if np.array_equal(first, last):
        return sorted_unique(first)
    return sorted_unique(np.concatenate([first, last]))


def static_of(ins, cls: str) -> StaticInstr:
    """The timing-relevant facts of a decoded instruction (``runtime/emulator/decode.Instr``)."""
    mn = ins.mnemonic
    s = StaticInstr(mnemonic=mn, encoding=ins.encoding, size=int(ins.size), cls=cls)
    if mn == "s_waitcnt":
        s.vmcnt = int(ins.f["vmcnt"])  # the decoder's (vlpc.isa.encodings.WAITCNT fields)
        s.lgkmcnt = int(ins.f["lgkmcnt"])
    elif mn == "s_nop":
        s.nop = int(ins.f.get("simm16", 0)) & 0xF
    elif mn == "s_endpgm":
        s.ends = True
    if cls in ("vmem", "lds"):
        s.store = "store" in mn or ("write" in mn and mn.startswith("ds_"))
    return s
