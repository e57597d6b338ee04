"""The GCN (gfx906, wave64) functional emulator core: dispatch, scheduling, execution.

:func:`run_dispatch` runs a grid of workgroups on a :class:`~.memory.Memory`
and returns :class:`LaunchStats`.

How it runs
-----------
Workgroups are executed in *batches* (all of them, or ``max_waves_in_flight``
waves at a time); batches run on a small thread pool (NumPy releases the GIL).
A batch keeps its registers as NumPy arrays: ``V[reg, wave, lane]`` (uint32),
``S[code, wave]`` (uint32, indexed by the hardware's scalar operand code:
s0..s101, vcc_lo=106, m0=124, exec_lo=126, ...), ``SCC[wave]`` and the lane
mask ``EM[wave, lane]`` mirroring EXEC.

Waves that share a PC form a *group* and execute each instruction together as
one NumPy operation.  A branch that goes both ways splits a group; the
scheduler always runs the group with the lowest PC, so split groups meet again
(and merge) at the re-convergence point.  ``s_barrier`` parks waves until every
non-ended wave of their workgroup has arrived.

Each instruction is decoded once per PC and compiled into a closure with its
operands pre-resolved.  The checkers (waitcnt, uninitialised reads, register
ranges, memory bounds, LDS bounds, instruction budget) cost a set test per
instruction in the common case.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from vlpc.targets import GFX906

from . import isa
from . import ops as O
from . import semantics
from .decode import Decoder, Instr, Operand
from .errors import (EmulatorFault, LdsOutOfRange, MisalignedRegisterTuple, OutOfBoundsAccess,
                     RegisterRangeError, RunawayKernel, UninitializedRegisterRead,
                     UninitializedRegisterWarning, UnsupportedInstruction, WaitcntViolation)
from .memory import Memory

U32, U64, I32, I64, F32, F64 = O.U32, O.U64, O.I32, O.I64, O.F32, O.F64

#: Aperture bases reported by ``src_shared_base``/``src_private_base`` (hidden kernargs too).
SHARED_APERTURE_BASE = 0x1000_0000_0000_0000
PRIVATE_APERTURE_BASE = 0x2000_0000_0000_0000

WAVE = GFX906.wavefront_size
TARGET = GFX906

_END, _BARRIER, _SPLIT = -1, -2, -3
_INF = 1 << 62


# ---------------------------------------------------------------------------
# public dataclasses

@dataclass
class DispatchConfig:
    kernel_name: str
    code: bytes                 # the loaded code image (e.g. the ELF's executable segment bytes)
    code_address: int           # device address where `code` is mapped (for s_getpc_b64 etc.)
    entry_address: int          # device address of the kernel's first instruction
    grid: tuple[int, int, int]  # workgroups in x, y, z
    block: tuple[int, int, int]  # work-items per workgroup in x, y, z
    user_sgpr_private_segment_buffer: bool = False
    user_sgpr_dispatch_ptr: bool = False
    user_sgpr_queue_ptr: bool = False
    user_sgpr_kernarg_segment_ptr: bool = False
    user_sgpr_dispatch_id: bool = False
    user_sgpr_flat_scratch_init: bool = False
    user_sgpr_private_segment_size: bool = False
    user_sgpr_count: int | None = None
    sgpr_workgroup_id_x: bool = True
    sgpr_workgroup_id_y: bool = False
    sgpr_workgroup_id_z: bool = False
    sgpr_workgroup_info: bool = False
    sgpr_private_segment_wave_offset: bool = False
    vgpr_workitem_id: int = 0
    vgpr_count: int = 256
    sgpr_count: int = 102
    lds_bytes: int = 0
    kernarg_address: int = 0
    dispatch_ptr: int = 0
    queue_ptr: int = 0
    strict: bool = False
    instruction_budget: int = 10**9
    max_waves_in_flight: int | None = None
    #: run only these workgroups ``(x, y, z)`` of the grid (None: all); the others are skipped
    #: as if they had run and done nothing (``vlpc tune``'s sampled correctness check)
    workgroups: frozenset | None = None
    #: the MODE register at wave launch (FP_ROUND [3:0], FP_DENORM [7:4], DX10_CLAMP [8],
    #: IEEE [9]; vlpc.isa.modes), from compute_pgm_rsrc1; default: IEEE, denormals kept
    mode: int = 0x3F0
    #: a missing s_waitcnt (unless strict): "raise" (WaitcntViolation) or "report" (warn once per
    #: kernel, pc and register, take the loaded value and go on); semantics/race.py
    waitcnt: str = "raise"
    #: the processor the code is for (``gfx906``, ``gfx900``): instructions it lacks are refused by name
    target: str = "gfx906"
    #: A :class:`vlpc.runtime.timing.trace.TraceRequest`: record instruction streams and
    #: memory lines of some workgroups for the timing model (``None``: no trace).
    trace: object = None


#: Entries of the scalar register file array (operand codes 0..127: SGPRs, VCC, TTMPs, M0, EXEC).
SCALAR_FILE = 128

CLASSES = ("valu", "salu", "smem", "vmem", "lds", "branch", "waitcnt", "nop", "barrier", "other")


@dataclass
class LaunchStats:
    """What one launch executed.  Units:

    * ``instructions``: wave-instructions (one instruction executed by one wave counts 1);
      ``by_class`` / ``by_mnemonic`` split the same count.
    * ``vgpr_reads`` / ``vgpr_writes``: 32-bit VGPR accesses x active lanes
      (a 64-bit operand counts 2; VMEM/LDS address and data VGPRs count too).
    * ``vgpr_reads_forwarded``: the part of ``vgpr_reads`` by VALU instructions of
      a VGPR that the wave's previous VALU instruction wrote (data forwarding).
    * ``sgpr_reads`` / ``sgpr_writes``: 32-bit SGPR (incl. VCC, EXEC, M0) accesses per
      wave-instruction (a VALU reading one SGPR counts 1 per wave, not per lane).
    * ``lds_bytes_read`` / ``lds_bytes_written``: bytes moved between LDS and VGPRs
      (active lanes only).
    * ``global_bytes_read`` / ``global_bytes_written``: bytes moved by VMEM (global, flat,
      buffer, atomics) and SMEM; ``smem_bytes_read`` is the SMEM part.
    * ``barriers``: wave arrivals at ``s_barrier``; ``waves``/``workgroups`` launched.
    * ``by_pc``: the same counters per instruction, keyed by its byte offset in the
      code image: ``[mnemonic, wave executions, lane executions, VGPR reads, VGPR
      writes, SGPR reads, SGPR writes, forwarded VGPR reads]`` (lane executions are
      counted for instructions that access VGPRs).  ``vlpc report`` attributes
      traffic to the matrices with it.
    """

    instructions: int = 0
    by_class: dict = field(default_factory=lambda: {c: 0 for c in CLASSES})
    by_mnemonic: Counter = field(default_factory=Counter)
    vgpr_reads: int = 0
    vgpr_writes: int = 0
    vgpr_reads_forwarded: int = 0
    sgpr_reads: int = 0
    sgpr_writes: int = 0
    lds_bytes_read: int = 0
    lds_bytes_written: int = 0
    global_bytes_read: int = 0
    global_bytes_written: int = 0
    smem_bytes_read: int = 0
    barriers: int = 0
    waves: int = 0
    workgroups: int = 0
    wall_seconds: float = 0.0
    by_pc: dict = field(default_factory=dict)
    #: The :class:`vlpc.runtime.timing.trace.KernelTrace` when the launch was traced.
    trace: object = field(default=None, repr=False)
    #: The timing model's :class:`vlpc.runtime.timing.TimingReport` (modeled, not measured).
    timing: object = field(default=None, repr=False)

    @property
    def cycles(self) -> float | None:
        """Modeled engine-clock cycles of the launch (``None`` without a timing model)."""
        return None if self.timing is None else self.timing.cycles

    @property
    def time_us(self) -> float | None:
        """Modeled microseconds of the launch (``None`` without a timing model)."""
        return None if self.timing is None else self.timing.time_us

    def __repr__(self) -> str:  # short: by_pc and by_mnemonic can hold thousands of entries
        c = self.by_class
        return (f"LaunchStats(workgroups={self.workgroups}, waves={self.waves}, instructions={self.instructions}, "
                f"valu={c.get('valu', 0)}, salu={c.get('salu', 0)}, smem={c.get('smem', 0)}, vmem={c.get('vmem', 0)}, "
                f"lds={c.get('lds', 0)}, vgpr_reads={self.vgpr_reads}, vgpr_writes={self.vgpr_writes}, "
                f"sgpr_reads={self.sgpr_reads}, global_bytes_read={self.global_bytes_read}, "
                f"global_bytes_written={self.global_bytes_written}, barriers={self.barriers}, "
                f"wall_seconds={self.wall_seconds:.3f}, by_pc=<{len(self.by_pc)} PCs>)")

    def merge(self, o: "LaunchStats") -> None:
        for k in ("instructions", "vgpr_reads", "vgpr_writes", "vgpr_reads_forwarded", "sgpr_reads",
                  "sgpr_writes", "lds_bytes_read", "lds_bytes_written", "global_bytes_read",
                  "global_bytes_written", "smem_bytes_read", "barriers", "waves", "workgroups"):
            setattr(self, k, getattr(self, k) + getattr(o, k))
        for c, v in o.by_class.items():
            self.by_class[c] = self.by_class.get(c, 0) + v
        self.by_mnemonic.update(o.by_mnemonic)
        for pc, row in o.by_pc.items():
            mine = self.by_pc.get(pc)
            if mine is None:
                self.by_pc[pc] = list(row)
            else:
                for i in range(1, len(row)):
                    mine[i] += row[i]
        if self.timing is not None or o.timing is not None:
            # finished launches of a plan (different kernels): modeled times add
            from vlpc.runtime.timing import combine
            parts = [t for t in (self.timing, o.timing) if t is not None]
            self.timing = combine(parts)
            self.trace = None
        elif o.trace is not None:  # chunks of one launch
            if self.trace is None:
                self.trace = o.trace
            else:
                self.trace.merge(o.trace)


# ---------------------------------------------------------------------------
# groups of waves

class Group:
    """Waves of one batch that share a PC (executed together)."""

    __slots__ = ("idx", "sel", "n", "pc", "contig", "_em", "_full", "_active", "known", "pending",
                 "vm_n", "lds_n", "lgkm_n", "count", "base", "last_valu", "traced")

    def __init__(self, idx: np.ndarray, pc: int):
        self.idx = idx
        self.n = int(idx.size)
        lo, hi = int(idx[0]), int(idx[-1])
        self.contig = hi - lo + 1 == self.n
        self.sel = slice(lo, hi + 1) if self.contig else idx
        self.pc = pc
        self._em = None
        self._full = None
        self._active = None
        self.known: set = set()
        self.pending: dict = {}
        self.vm_n = 0
        self.lds_n = 0
        self.lgkm_n = 0
        self.count = 0
        self.base = 0
        self.last_valu = frozenset()
        self.traced = None  # (position, batch wave id) of traced waves, when tracing

    def exec_changed(self):
        self._em = None
        self._full = None
        self._active = None

    def child(self, idx: np.ndarray, pc: int) -> "Group":
        g = Group(idx, pc)
        g.known = set(self.known)
        g.pending = dict(self.pending)
        g.vm_n, g.lds_n, g.lgkm_n = self.vm_n, self.lds_n, self.lgkm_n
        g.count, g.base = self.count, self.base
        g.last_valu = self.last_valu
        return g


def _merge(a: Group, b: Group) -> Group:
    idx = np.union1d(a.idx, b.idx)
    g = Group(idx, a.pc)
    g.known = a.known & b.known
    # keep each pending entry's age (ops issued after it) so per-wave retirement is unchanged
    g.vm_n = max(a.vm_n, b.vm_n)
    g.lds_n = max(a.lds_n, b.lds_n)
    g.lgkm_n = max(a.lgkm_n, b.lgkm_n)
    for src in (a, b):
        for k, (kind, seq) in src.pending.items():
            if kind == "vm":
                s = g.vm_n - (src.vm_n - seq)
            elif kind == "lds":
                s = g.lds_n - (src.lds_n - seq)
            else:
                s = seq
            old = g.pending.get(k)
            if old is None or (old[0] == kind and s > old[1]):
                g.pending[k] = (kind, s)
    g.count = max(a.count + a.base, b.count + b.base)
    g.base = 0
    g.last_valu = frozenset()
    return g


class _Ctl(Exception):
    pass


# ---------------------------------------------------------------------------
# compiled instruction

class Prepared:
    __slots__ = ("ins", "fn", "next_pc", "cls", "rkeys", "wkeys", "keys", "load_kind",
                 "nvr", "nvw", "nsr", "nsw", "vsrc", "vdst", "valu", "waves", "lanes", "fwd",
                 "text")

    def __init__(self, ins: Instr, cls: str):
        self.ins = ins
        self.cls = cls
        self.next_pc = ins.pc + ins.size
        self.fn = None
        self.rkeys = frozenset()
        self.wkeys = frozenset()
        self.keys = frozenset()
        self.load_kind = None
        self.nvr = self.nvw = self.nsr = self.nsw = 0
        self.vsrc = ()
        self.vdst = frozenset()
        self.valu = cls == "valu"
        self.waves = 0
        self.lanes = 0
        self.fwd = 0
        self.text = ins.text


def _reg_keys(op: Operand) -> list[int]:
    if op.kind == "v":
        return [isa.VGPR0 + op.reg + i for i in range(op.width)]
    if op.kind == "s":
        return [op.reg + i for i in range(op.width)]
    if op.kind == "scc":
        return [isa.SCC]
    if op.kind in ("vccz",):
        return [isa.VCC_LO, isa.VCC_HI]
    return []


def classify(ins: Instr) -> str:
    mn, enc = ins.mnemonic, ins.encoding
    if enc in ("VOP1", "VOP2", "VOPC", "VOP3", "VOP3P"):
        return "nop" if mn == "v_nop" else "valu"
    if enc == "SMEM":
        return "smem"
    if enc in ("FLAT", "MUBUF", "MTBUF", "MIMG"):
        return "vmem"
    if enc == "DS":
        return "lds"
    if enc == "SOPP":
        if mn == "s_waitcnt":
            return "waitcnt"
        if mn in ("s_nop", "s_sleep", "s_setprio"):
            return "nop"
        if mn == "s_barrier":
            return "barrier"
        if mn == "s_branch" or mn.startswith("s_cbranch"):
            return "branch"
        return "other"
    if mn in ("s_setpc_b64", "s_swappc_b64", "s_call_b64"):
        return "branch"
    if enc in ("SOP1", "SOP2", "SOPK", "SOPC"):
        return "salu"
    return "other"


# ---------------------------------------------------------------------------
# the batch (state of many waves) and its executor

class Batch:
    def __init__(self, run: "_Run", wg_list: list[tuple[int, int, int]]):
        cfg = run.cfg
        self.run = run
        self.cfg = cfg
        self.mem = run.mem
        self.wgs = wg_list
        wpg = run.waves_per_wg
        nw = len(wg_list) * wpg
        self.nw = nw
        self.nv = max(1, min(cfg.vgpr_count, TARGET.addressable_vgprs))
        self.V = np.zeros((self.nv, nw, WAVE), U32)
        self.S = np.zeros((SCALAR_FILE, nw), U32)
        self.Vf = self.V.view(F32)
        self.Sf = self.S.view(F32)
        self.SCC = np.zeros(nw, bool)
        self.EM = np.zeros((nw, WAVE), bool)
        self.VI = np.zeros((self.nv, nw), bool)
        self.SI = np.zeros((256, nw), bool)
        self.wg_of_wave = np.repeat(np.arange(len(wg_list)), wpg)
        self.wave_in_wg = np.tile(np.arange(wpg), len(wg_list))
        self.lds_bytes = int(cfg.lds_bytes)
        words = max(1, -(-self.lds_bytes // 4))
        self.LDS = np.zeros((len(wg_list), words), U32)
        self.lds_words = words
        self.ended = np.zeros(nw, bool)
        self.at_barrier = np.zeros(nw, bool)
        self.barrier_pc = np.zeros(nw, np.int64)
        self.prepared: dict[int, Prepared] = {}
        self.scr: dict = {}
        self.split: list | None = None
        self.st = LaunchStats()
        self.rec = None
        if cfg.trace is not None:
            from vlpc.runtime.timing.trace import Recorder
            gx, gy, _ = cfg.grid
            lin = np.array([x + gx * (y + gy * z) for (x, y, z) in wg_list], np.int64)[self.wg_of_wave]
            self.rec = Recorder(cfg.trace, lin, self.wave_in_wg, cfg.grid, wpg)
        self._setup()

    # -- initial state -----------------------------------------------------------

    def _setup(self):
        cfg, run = self.cfg, self.run
        S, SI = self.S, self.SI
        i = 0

        def put(vals, n):
            nonlocal i
            for k in range(n):
                S[i + k] = vals[k] if not np.isscalar(vals) else vals
                SI[i + k] = True
            i += n

        def put64(v, n=2):
            put([v & 0xFFFFFFFF, (v >> 32) & 0xFFFFFFFF] + [0] * (n - 2), n)

        if cfg.user_sgpr_private_segment_buffer:
            put([0, 0, 0, 0], 4)
        if cfg.user_sgpr_dispatch_ptr:
            put64(cfg.dispatch_ptr)
        if cfg.user_sgpr_queue_ptr:
            put64(cfg.queue_ptr)
        if cfg.user_sgpr_kernarg_segment_ptr:
            put64(cfg.kernarg_address)
        if cfg.user_sgpr_dispatch_id:
            put64(0)
        if cfg.user_sgpr_flat_scratch_init:
            put64(0)
        if cfg.user_sgpr_private_segment_size:
            put([0], 1)
        if cfg.user_sgpr_count is not None:
            i = int(cfg.user_sgpr_count)
        wgid = np.array(self.wgs, np.int64)[self.wg_of_wave]
        for axis, on in enumerate((cfg.sgpr_workgroup_id_x, cfg.sgpr_workgroup_id_y,
                                   cfg.sgpr_workgroup_id_z)):
            if on:
                S[i] = wgid[:, axis].astype(U32)
                SI[i] = True
                i += 1
        if cfg.sgpr_workgroup_info:
            put([0], 1)
        if cfg.sgpr_private_segment_wave_offset:
            put([0], 1)
        # work-item ids
        bx, by, bz = cfg.block
        t = self.wave_in_wg[:, None] * WAVE + np.arange(WAVE)[None, :]
        total = bx * by * bz
        active = t < total
        ids = (t % bx, (t // bx) % by, t // (bx * by))
        for k in range(min(cfg.vgpr_workitem_id, 2) + 1):
            if k < self.nv:
                self.V[k] = np.where(active, ids[k], 0).astype(U32)
                self.VI[k] = True
        self.EM[:] = active
        ex = O.bits_of(active)
        S[isa.EXEC_LO], S[isa.EXEC_HI] = O.split64(ex)
        SI[isa.EXEC_LO] = SI[isa.EXEC_HI] = True

    # -- helpers used by compiled instructions ---------------------------------------

    def scratch(self, shape, dt, k):
        key = (shape, dt, k)
        a = self.scr.get(key)
        if a is None:
            a = np.empty(shape, dt)
            self.scr[key] = a
        return a

    def em(self, g: Group) -> np.ndarray:
        if g._em is None:
            g._em = self.EM[g.sel]
        return g._em

    def full(self, g: Group) -> bool:
        if g._full is None:
            g._full = bool(self.em(g).all())
        return g._full

    def active(self, g: Group) -> int:
        if g._active is None:
            g._active = WAVE * g.n if self.full(g) else int(np.count_nonzero(self.em(g)))
        return g._active

    def refresh_exec(self, g: Group):
        ex = O.u64_of(self.S[isa.EXEC_LO][g.sel], self.S[isa.EXEC_HI][g.sel])
        self.EM[g.sel] = O.mask_of(ex)
        g.exec_changed()

    def vwrite(self, g: Group, r: int, val):
        """Write a VGPR under EXEC (val broadcastable to (n, 64), uint32)."""
        dst = self.V[r]
        if self.full(g):
            dst[g.sel] = val
        elif g.contig:
            np.copyto(dst[g.sel], val, where=self.em(g), casting="unsafe")
        else:
            cur = dst[g.sel]
            dst[g.sel] = np.where(self.em(g), val, cur)

    def swrite(self, g: Group, r: int, val):
        self.S[r][g.sel] = val

    def exec64(self, g: Group) -> np.ndarray:
        return O.u64_of(self.S[isa.EXEC_LO][g.sel], self.S[isa.EXEC_HI][g.sel])

    def wave_of(self, g: Group, k: int = 0) -> tuple:
        w = int(g.idx[k])
        return (self.wgs[self.wg_of_wave[w]], int(self.wave_in_wg[w]))

    # -- preparation -------------------------------------------------------------------

    def prepare(self, pc: int) -> Prepared:
        ins = self.run.decoder(pc)
        p = compile_instr(ins, self)
        self.prepared[pc] = p
        return p

    # -- checks -----------------------------------------------------------------------

    def fault(self, exc: EmulatorFault, g: Group, p: Prepared | Instr, k: int = 0) -> EmulatorFault:
        ins = p.ins if isinstance(p, Prepared) else p
        off = ins.pc - (self.cfg.entry_address - self.cfg.code_address)
        return exc.locate(kernel=self.cfg.kernel_name, pc=off, address=self.cfg.code_address + ins.pc,
                          wave=self.wave_of(g, k), instruction=ins.text)

    def check_pending(self, g: Group, p: Prepared):
        pend = g.pending
        for k in p.rkeys:
            if k in pend:
                semantics.waitcnt_violation(self, g, k, self.fault(WaitcntViolation(
                    f"{_key_name(k)} is read while the {_kind_name(pend[k][0])} that writes it may still "
                    f"be outstanding (no sufficient s_waitcnt)", register=_key_name(k)), g, p))
        for k in p.wkeys:
            if k in pend:
                kind = pend[k][0]
                if p.load_kind is not None and p.load_kind == kind and kind in ("vm", "lds"):
                    continue  # in-order return: the later load lands last
                semantics.waitcnt_violation(self, g, k, self.fault(WaitcntViolation(
                    f"{_key_name(k)} is overwritten while the {_kind_name(kind)} that writes it may still "
                    f"be outstanding (no sufficient s_waitcnt)", register=_key_name(k)), g, p))

    def check_init(self, g: Group, p: Prepared):
        known = g.known
        sel = g.sel
        for k in p.rkeys:
            if k in known:
                continue
            if k >= isa.VGPR0:
                ok = self.VI[k - isa.VGPR0][sel]
            else:
                ok = self.SI[k][sel]
            if ok.all():
                known.add(k)
                continue
            bad = int(np.flatnonzero(~ok)[0])
            msg = f"{_key_name(k)} is read before anything wrote it"
            if self.cfg.strict:
                raise self.fault(UninitializedRegisterRead(msg, register=_key_name(k)), g, p, bad)
            key = (self.cfg.kernel_name, p.ins.pc)
            with self.run.lock:
                first = key not in self.run.warned
                self.run.warned.add(key)
            if first:
                f = self.fault(UninitializedRegisterRead(msg, register=_key_name(k)), g, p, bad)
                warnings.warn(UninitializedRegisterWarning(str(f)), stacklevel=2)
            known.add(k)
        for k in p.wkeys:
            if k not in known:
                if k >= isa.VGPR0:
                    self.VI[k - isa.VGPR0][sel] = True
                else:
                    self.SI[k][sel] = True
                known.add(k)

    # -- scheduling --------------------------------------------------------------------

    def execute(self):
        run = self.run
        allw = np.arange(self.nw)
        start_pc = self.cfg.entry_address - self.cfg.code_address
        runnable: dict[int, Group] = {}
        g0 = Group(allw, start_pc)
        g0.known = {k for k in range(256) if self.SI[k].all()} | \
                   {isa.VGPR0 + k for k in range(self.nv) if self.VI[k].all()}
        runnable[start_pc] = g0
        waiting: list[Group] = []
        while True:
            if run.stop.is_set():
                return
            if not runnable:
                if not waiting:
                    return
                released = self._release_barriers(waiting)
                if not released:
                    g = waiting[0]
                    raise self.fault(EmulatorFault(
                        "barrier deadlock: waves wait at s_barrier while others of their workgroup "
                        "can never arrive"), g, self.run.decoder(g.pc))
                for g in released:
                    _add(runnable, g)
                continue
            pc = min(runnable)
            g = runnable.pop(pc)
            limit = min(runnable) if runnable else _INF
            r = self._run_group(g, limit)
            if r == _END:
                continue
            if r == _BARRIER:
                waiting.append(g)
                continue
            if r == _SPLIT:
                for child in self.split:
                    _add(runnable, child)
                self.split = None
                continue
            _add(runnable, g)

    def _release_barriers(self, waiting: list[Group]) -> list[Group]:
        alive = ~self.ended
        nwg = len(self.wgs)
        need = np.bincount(self.wg_of_wave[alive], minlength=nwg)
        have = np.bincount(self.wg_of_wave[self.at_barrier & alive], minlength=nwg)
        ready = (need == have) & (have > 0)
        if not ready.any():
            return []
        out = []
        keep = []
        for g in waiting:
            rel = ready[self.wg_of_wave[g.idx]]
            if rel.all():
                parts = [(g.idx, g)]
            elif rel.any():
                parts = [(g.idx[rel], g)]
                keep.append(g.child(g.idx[~rel], g.pc))
            else:
                keep.append(g)
                continue
            for idx, src in parts:
                c = src.child(idx, src.pc + 4)
                self.at_barrier[idx] = False
                out.append(c)
        waiting[:] = keep
        return out

    def _run_group(self, g: Group, limit: int) -> int:
        P = self.prepared
        budget = self.cfg.instruction_budget
        stop = self.run.stop
        pc = g.pc
        steps = 0
        tw = ()
        rec = self.rec
        if rec is not None:
            if g.traced is None:
                g.traced = rec.traced_of(g.idx)
            tw = [rec.lists[w] for _, w in g.traced]
        while pc < limit:
            p = P.get(pc)
            if p is None:
                p = self.prepare(pc)
            for lst in tw:
                lst.append(pc)
            if g.pending and not g.pending.keys().isdisjoint(p.keys):
                self.check_pending(g, p)
            if not g.known.issuperset(p.keys):
                self.check_init(g, p)
            g.count += 1
            if g.count + g.base > budget:
                raise self.fault(RunawayKernel(
                    f"a wave executed more than {budget} instructions (instruction_budget)"), g, p)
            p.waves += g.n
            if p.valu:
                act = self.active(g)
                p.lanes += act
                if g.last_valu:
                    f = 0
                    for k in p.vsrc:
                        if k in g.last_valu:
                            f += 1
                    if f:
                        p.fwd += f * act
                g.last_valu = p.vdst
            elif p.nvr or p.nvw:
                p.lanes += self.active(g)
            g.pc = pc
            try:
                r = p.fn(self, g)
            except EmulatorFault as e:
                if e.kernel is None:
                    k = getattr(e, "wave_index", 0)
                    raise self.fault(e, g, p, k)
                raise
            if r is None:
                pc = p.next_pc
            elif r >= 0:
                pc = r
            else:
                return r
            steps += 1
            if not steps & 4095 and stop.is_set():
                break
        g.pc = pc
        return 0

    # -- stats ---------------------------------------------------------------------------

    def collect(self) -> LaunchStats:
        st = self.st
        for p in self.prepared.values():
            if not p.waves:
                continue
            st.instructions += p.waves
            st.by_class[p.cls] = st.by_class.get(p.cls, 0) + p.waves
            st.by_mnemonic[p.ins.mnemonic] += p.waves
            st.vgpr_reads += p.nvr * p.lanes
            st.vgpr_writes += p.nvw * p.lanes
            st.sgpr_reads += p.nsr * p.waves
            st.sgpr_writes += p.nsw * p.waves
            st.vgpr_reads_forwarded += p.fwd
            row = [p.ins.mnemonic, p.waves, p.lanes, p.nvr * p.lanes, p.nvw * p.lanes, p.nsr * p.waves,
                   p.nsw * p.waves, p.fwd]
            mine = st.by_pc.get(p.ins.pc)
            if mine is None:
                st.by_pc[p.ins.pc] = row
            else:
                for i in range(1, len(row)):
                    mine[i] += row[i]
        st.waves += self.nw
        st.workgroups += len(self.wgs)
        if self.rec is not None:
            st.trace = self.rec.finish(self.prepared)
        return st


def _add(runnable: dict, g: Group):
    other = runnable.get(g.pc)
    runnable[g.pc] = g if other is None else _merge(other, g)


def _key_name(k: int) -> str:
    if k >= isa.VGPR0:
        return f"v{k - isa.VGPR0}"
    if k == isa.SCC:
        return "scc"
    from .decode import reg_text
    return reg_text(k, 1)


def _kind_name(kind: str) -> str:
    return {"vm": "vector memory load (vmcnt)", "lds": "LDS read (lgkmcnt)",
            "smem": "scalar memory load (lgkmcnt; SMEM returns out of order: needs lgkmcnt(0))"}[kind]


# ---------------------------------------------------------------------------
# instruction compilation

def _raise(exc):
    def fn(b, g):
        raise exc
    return fn


def _check_regs(ins: Instr, b: Batch):
    """Register range / alignment checks (returns an exception or None)."""
    nv = b.cfg.vgpr_count
    ns = b.cfg.sgpr_count
    for op in list(ins.dst) + list(ins.src) + [v for v in ins.f.values() if isinstance(v, Operand)]:
        if op.kind == "v":
            if op.reg + op.width > nv or op.reg + op.width > TARGET.addressable_vgprs:
                return RegisterRangeError(
                    f"{op.text} is beyond the {nv} VGPRs the kernel descriptor allocates",
                    register=op.text)
        elif op.kind == "s":
            if op.reg < 0 or op.reg + op.width > SCALAR_FILE:
                return RegisterRangeError(f"{op.text or op.reg}: not a scalar register (operand code "
                                          f"{op.reg}, width {op.width}; an invalid encoding)",
                                          register=op.text or str(op.reg))
            if op.reg < isa.SGPR_LIMIT:
                if op.reg + op.width > ns:
                    return RegisterRangeError(
                        f"{op.text} is beyond the {ns} SGPRs the kernel descriptor allocates",
                        register=op.text)
            if op.width == 2 and op.reg % 2:
                return MisalignedRegisterTuple(f"{op.text}: a 64-bit SGPR pair must start at an even register",
                                               register=op.text)
            if op.width >= 4 and op.reg % 4:
                return MisalignedRegisterTuple(
                    f"{op.text}: an SGPR tuple of {op.width} dwords must start at a multiple of 4",
                    register=op.text)
    return None


def compile_instr(ins: Instr, b: Batch) -> Prepared:
    cls = classify(ins)
    p = Prepared(ins, cls)
    if not ins.supported:
        p.fn = _raise(UnsupportedInstruction(ins.f.get("target_lacks") or
                                             f"{ins.mnemonic} (raw encoding {ins.raw.hex()}) is not supported",
                                             mnemonic=ins.mnemonic))
        return p
    err = _check_regs(ins, b)
    if err is not None:
        p.fn = _raise(err)
        return p
    for o in ins.src:
        if o.kind == "unsupported":
            p.fn = _raise(UnsupportedInstruction(f"operand {o.text} is not supported", mnemonic=ins.mnemonic))
            return p
    rk, wk = [], []
    for o in ins.src:
        rk += _reg_keys(o)
    for o in ins.dst:
        wk += _reg_keys(o)
    p.rkeys = frozenset(rk)
    p.wkeys = frozenset(wk)
    p.keys = p.rkeys | p.wkeys
    p.nvr = sum(o.width for o in ins.src if o.kind == "v")
    p.nvw = sum(o.width for o in ins.dst if o.kind == "v")
    p.nsr = sum(o.width for o in ins.src if o.kind == "s")
    p.nsw = sum(o.width for o in ins.dst if o.kind == "s")
    p.vsrc = tuple(k for k in rk if k >= isa.VGPR0)
    p.vdst = frozenset(k for k in wk if k >= isa.VGPR0)
    try:
        builder = semantics.builder_for(ins, _BUILDERS)
        fn = builder(ins, b, p) if builder else None
    except _Unsupported as e:
        fn = _raise(UnsupportedInstruction(f"{ins.mnemonic}: {e}", mnemonic=ins.mnemonic))
    if fn is None:
        fn = _raise(UnsupportedInstruction(f"{ins.mnemonic} has no semantics in the emulator",
                                           mnemonic=ins.mnemonic))
    p.fn = fn
    return p


class _Unsupported(Exception):
    pass


# -- operand readers -------------------------------------------------------------

def _mods(f, op: Operand):
    if not (op.neg or op.abs):
        return f
    if op.width == 2:
        sign, absm = O.SIGN64, U64(0x7FFFFFFFFFFFFFFF)
    else:
        sign, absm = O.SIGN32, U32(0x7FFFFFFF)
    if op.abs and op.neg:
        return lambda b, g: (f(b, g) & absm) | sign
    if op.abs:
        return lambda b, g: f(b, g) & absm
    return lambda b, g: f(b, g) ^ sign


def vsrc_reader(op: Operand):
    """VALU source -> array broadcastable to (n, 64) (uint32 or uint64)."""
    k, r, w = op.kind, op.reg, op.width
    if k == "v":
        if w == 1:
            f = lambda b, g: b.V[r][g.sel]  # noqa: E731
        else:
            f = lambda b, g: O.u64_of(b.V[r][g.sel], b.V[r + 1][g.sel])  # noqa: E731
    elif k == "s":
        if w == 1:
            f = lambda b, g: b.S[r][g.sel][:, None]  # noqa: E731
        else:
            f = lambda b, g: O.u64_of(b.S[r][g.sel], b.S[r + 1][g.sel])[:, None]  # noqa: E731
    elif k in ("const", "lit"):
        c = np.array(op.value, U64 if w == 2 else U32)
        f = lambda b, g: c  # noqa: E731
    elif k == "scc":
        f = lambda b, g: b.SCC[g.sel].astype(U32)[:, None]  # noqa: E731
    elif k == "vccz":
        f = lambda b, g: ((b.S[isa.VCC_LO][g.sel] | b.S[isa.VCC_HI][g.sel]) == 0).astype(U32)[:, None]  # noqa: E731
    elif k == "execz":
        f = lambda b, g: ((b.S[isa.EXEC_LO][g.sel] | b.S[isa.EXEC_HI][g.sel]) == 0).astype(U32)[:, None]  # noqa: E731
    else:
        raise _Unsupported(f"operand {op.text}")
    return _mods(f, op)


def ssrc_reader(op: Operand):
    """Scalar source -> per-wave array (n,) (uint32 or uint64) or 0-d constant."""
    k, r, w = op.kind, op.reg, op.width
    if k == "s":
        if w == 1:
            return lambda b, g: b.S[r][g.sel]
        return lambda b, g: O.u64_of(b.S[r][g.sel], b.S[r + 1][g.sel])
    if k in ("const", "lit"):
        c = np.array(op.value, U64 if w == 2 else U32)
        return lambda b, g: c
    if k == "scc":
        return lambda b, g: b.SCC[g.sel].astype(U32)
    if k == "vccz":
        return lambda b, g: ((b.S[isa.VCC_LO][g.sel] | b.S[isa.VCC_HI][g.sel]) == 0).astype(U32)
    if k == "execz":
        return lambda b, g: ((b.S[isa.EXEC_LO][g.sel] | b.S[isa.EXEC_HI][g.sel]) == 0).astype(U32)
    if k == "v":
        raise _Unsupported("VGPR operand in a scalar position")
    raise _Unsupported(f"operand {op.text}")


def swriter(op: Operand):
    r, w = op.reg, op.width
    touches_exec = r <= isa.EXEC_HI < r + w or r <= isa.EXEC_LO < r + w

    def write(b, g, val):
        val = np.asarray(val)
        if w == 1:
            b.S[r][g.sel] = np.broadcast_to(val.astype(U32, copy=False), (g.n,))
        else:
            v = np.broadcast_to(val.astype(U64, copy=False), (g.n,))
            lo, hi = O.split64(v)
            b.S[r][g.sel] = lo
            b.S[r + 1][g.sel] = hi
        if touches_exec:
            b.refresh_exec(g)
    return write


def vwriter(op: Operand):
    r, w = op.reg, op.width
    if w == 1:
        def write(b, g, val):
            b.vwrite(g, r, val)
    else:
        def write(b, g, val):
            lo, hi = O.split64(val)
            b.vwrite(g, r, lo)
            b.vwrite(g, r + 1, hi)
    return write


# -- VALU --------------------------------------------------------------------------

def _f(fn):
    """Wrap an f32 function of float arrays into a bits -> bits function."""
    return lambda *a: O.b32(fn(*[O.f32(x) for x in a]))


def _d(fn):
    return lambda *a: O.b64(fn(*[O.f64(x) for x in a]))


def _i(x):
    return np.asarray(x, U32).view(I32)


def _shift(x):
    return np.asarray(x, U32) & U32(31)


def _mul_lo(a, b):
    return (np.asarray(a, U32).astype(U64) * np.asarray(b, U32).astype(U64)).astype(U32)


def _mul_hi_u(a, b):
    return ((np.asarray(a, U32).astype(U64) * np.asarray(b, U32).astype(U64)) >> U64(32)).astype(U32)


def _mul_hi_i(a, b):
    p = np.asarray(a, U32).view(I32).astype(I64) * np.asarray(b, U32).view(I32).astype(I64)
    return (p >> 32).astype(I64).astype(U32)


def _u24(x):
    return np.asarray(x, U32) & U32(0xFFFFFF)


def _i24(x):
    return O.sext(x, 24)


def _mad_f32(a, b, c):
    # legacy mad: product rounded to f32, then the sum (two roundings)
    return O.b32(O.f32(a) * O.f32(b) + O.f32(c))


def _minmax3(kind, fn):
    if kind == "f":
        return lambda a, b, c: O.b32(fn(fn(O.f32(a), O.f32(b)), O.f32(c)))
    if kind == "i":
        return lambda a, b, c: fn(fn(_i(a), _i(b)), _i(c)).view(U32)
    return lambda a, b, c: fn(fn(np.asarray(a, U32), b), c)


def _med3(kind):
    def f(a, b, c):
        if kind == "f":
            x = np.stack(np.broadcast_arrays(O.f32(a), O.f32(b), O.f32(c)))
            return O.b32(np.median(x, axis=0).astype(F32))
        if kind == "i":
            x = np.stack(np.broadcast_arrays(_i(a), _i(b), _i(c)))
            return np.sort(x, axis=0)[1].view(U32)
        x = np.stack(np.broadcast_arrays(np.asarray(a, U32), np.asarray(b, U32), np.asarray(c, U32)))
        return np.sort(x, axis=0)[1]
    return f


def _rcp32(a):
    return O.b32((1.0 / O.f32(a).astype(F64)).astype(F32))


def _ldexp32(a, e):
    v = O.f32(a).astype(F64) * np.exp2(_i(e).astype(F64).clip(-400, 400))
    return O.b32(v.astype(F32))


def _cvt_f16_f32(a):
    return O.f32(a).astype(np.float16).view(np.uint16).astype(U32)


def _cvt_f32_f16(a):
    return O.b32((np.asarray(a, U32) & U32(0xFFFF)).astype(np.uint16).view(np.float16).astype(F32))


def _alignbit(a, b, c):
    v = (O.u64_of(b, a) >> (np.asarray(c, U32) & U32(31)).astype(U64))
    return (v & U64(0xFFFFFFFF)).astype(U32)


def _alignbyte(a, b, c):
    v = (O.u64_of(b, a) >> ((np.asarray(c, U32) & U32(3)) * U32(8)).astype(U64))
    return (v & U64(0xFFFFFFFF)).astype(U32)


def _floor_div(x):
    return x


def _fract32(a):
    x = O.f32(a)
    return O.b32(np.where(np.isinf(x), F32(np.nan), np.minimum(x - np.floor(x), F32(0.99999994))))


def _fract64(a):
    x = O.f64(a)
    return O.b64(np.where(np.isinf(x), np.nan, np.minimum(x - np.floor(x), 0.9999999999999999)))


def _rndne(x):
    return np.rint(x)


def _ffbh_i32(a):
    x = _i(a).astype(I64)
    y = np.where(x < 0, ~x, x).astype(U32)
    r = O.ffbh_u32(y)
    # count of leading bits equal to the sign bit, minus one -> position of first differing bit
    return np.where((x == 0) | (x == -1), U32(0xFFFFFFFF), r - U32(0) if False else r)


def _ubyte(n):
    return lambda a: O.b32(((np.asarray(a, U32) >> U32(8 * n)) & U32(0xFF)).astype(F32))


#: mnemonic -> function(src bits...) -> result bits   (plain vector results)
VALU: dict = {
    "v_mov_b32": lambda a: np.asarray(a, U32),
    "v_not_b32": lambda a: ~np.asarray(a, U32),
    "v_bfrev_b32": O.brev32,
    "v_ffbh_u32": O.ffbh_u32,
    "v_ffbl_b32": O.ffbl_b32,
    "v_ffbh_i32": _ffbh_i32,
    "v_cvt_f32_i32": lambda a: O.b32(_i(a).astype(F32)),
    "v_cvt_f32_u32": lambda a: O.b32(np.asarray(a, U32).astype(F32)),
    "v_cvt_u32_f32": O.f32_to_u32,
    "v_cvt_i32_f32": O.f32_to_i32,
    "v_cvt_f64_f32": lambda a: O.b64(O.f32(a).astype(F64)),
    "v_cvt_f32_f64": lambda a: O.b32(O.f64(a).astype(F32)),
    "v_cvt_f64_i32": lambda a: O.b64(_i(a).astype(F64)),
    "v_cvt_f64_u32": lambda a: O.b64(np.asarray(a, U32).astype(F64)),
    "v_cvt_i32_f64": O.f64_to_i32,
    "v_cvt_u32_f64": O.f64_to_u32,
    "v_cvt_f16_f32": _cvt_f16_f32,
    "v_cvt_f32_f16": _cvt_f32_f16,
    "v_cvt_rpi_i32_f32": lambda a: O.f32_to_i32(O.b32(np.floor(O.f32(a) + F32(0.5)))),
    "v_cvt_flr_i32_f32": lambda a: O.f32_to_i32(O.b32(np.floor(O.f32(a)))),
    "v_cvt_f32_ubyte0": _ubyte(0), "v_cvt_f32_ubyte1": _ubyte(1),
    "v_cvt_f32_ubyte2": _ubyte(2), "v_cvt_f32_ubyte3": _ubyte(3),
    "v_trunc_f32": _f(np.trunc), "v_ceil_f32": _f(np.ceil), "v_floor_f32": _f(np.floor),
    "v_rndne_f32": _f(_rndne), "v_fract_f32": _fract32,
    "v_trunc_f64": _d(np.trunc), "v_ceil_f64": _d(np.ceil), "v_floor_f64": _d(np.floor),
    "v_rndne_f64": _d(_rndne), "v_fract_f64": _fract64,
    "v_rcp_f32": _rcp32, "v_rcp_iflag_f32": _rcp32,
    "v_rsq_f32": lambda a: O.b32((1.0 / np.sqrt(O.f32(a).astype(F64))).astype(F32)),
    "v_sqrt_f32": _f(np.sqrt),
    "v_exp_f32": _f(np.exp2), "v_log_f32": _f(np.log2),
    "v_sin_f32": lambda a: O.b32(np.sin(O.f32(a).astype(F64) * 2 * np.pi).astype(F32)),
    "v_cos_f32": lambda a: O.b32(np.cos(O.f32(a).astype(F64) * 2 * np.pi).astype(F32)),
    "v_rcp_f64": _d(lambda x: 1.0 / x), "v_rsq_f64": _d(lambda x: 1.0 / np.sqrt(x)),
    "v_sqrt_f64": _d(np.sqrt),
    "v_frexp_mant_f32": _f(lambda x: np.frexp(x)[0]),
    "v_frexp_exp_i32_f32": lambda a: np.frexp(O.f32(a))[1].astype(I32).view(U32),
    "v_frexp_mant_f64": _d(lambda x: np.frexp(x)[0]),
    "v_frexp_exp_i32_f64": lambda a: np.frexp(O.f64(a))[1].astype(I32).view(U32),
    # VOP2
    "v_add_f32": _f(lambda a, b: a + b), "v_sub_f32": _f(lambda a, b: a - b),
    "v_subrev_f32": _f(lambda a, b: b - a), "v_mul_f32": _f(lambda a, b: a * b),
    "v_mul_legacy_f32": _f(lambda a, b: np.where((a == 0) | (b == 0), F32(0), a * b)),
    "v_min_f32": _f(np.fmin), "v_max_f32": _f(np.fmax),
    "v_mul_i32_i24": lambda a, b: (_i24(a) * _i24(b)).astype(U32),
    "v_mul_hi_i32_i24": lambda a, b: ((_i24(a) * _i24(b)) >> 32).astype(U32),
    "v_mul_u32_u24": lambda a, b: (_u24(a).astype(U64) * _u24(b).astype(U64)).astype(U32),
    "v_mul_hi_u32_u24": lambda a, b: ((_u24(a).astype(U64) * _u24(b).astype(U64)) >> U64(32)).astype(U32),
    "v_min_i32": lambda a, b: np.minimum(_i(a), _i(b)).view(U32),
    "v_max_i32": lambda a, b: np.maximum(_i(a), _i(b)).view(U32),
    "v_min_u32": lambda a, b: np.minimum(np.asarray(a, U32), b),
    "v_max_u32": lambda a, b: np.maximum(np.asarray(a, U32), b),
    "v_lshrrev_b32": lambda a, b: np.asarray(b, U32) >> _shift(a),
    "v_ashrrev_i32": lambda a, b: (_i(b) >> _shift(a).astype(I32)).view(U32),
    "v_lshlrev_b32": lambda a, b: np.asarray(b, U32) << _shift(a),
    "v_and_b32": lambda a, b: np.asarray(a, U32) & b,
    "v_or_b32": lambda a, b: np.asarray(a, U32) | b,
    "v_xor_b32": lambda a, b: np.asarray(a, U32) ^ b,
    "v_xnor_b32": lambda a, b: ~(np.asarray(a, U32) ^ b),
    "v_add_u32": lambda a, b: np.asarray(a, U32) + b,
    "v_sub_u32": lambda a, b: np.asarray(a, U32) - b,
    "v_subrev_u32": lambda a, b: np.asarray(b, U32) - a,
    "v_mac_f32": _mad_f32, "v_mad_f32": _mad_f32, "v_mad_legacy_f32": _mad_f32,
    "v_madmk_f32": _mad_f32, "v_madak_f32": _mad_f32,
    # VOP3
    "v_mad_i32_i24": lambda a, b, c: (_i24(a) * _i24(b) + _i(c)).astype(U32),
    "v_mad_u32_u24": lambda a, b, c: (_u24(a).astype(U64) * _u24(b).astype(U64) + np.asarray(c, U32)).astype(U32),
    "v_bfe_u32": O.bfe_u32, "v_bfe_i32": O.bfe_i32,
    "v_bfi_b32": lambda a, b, c: (np.asarray(a, U32) & b) | (~np.asarray(a, U32) & c),
    "v_alignbit_b32": _alignbit, "v_alignbyte_b32": _alignbyte,
    "v_min3_f32": _minmax3("f", np.fmin), "v_max3_f32": _minmax3("f", np.fmax),
    "v_min3_i32": _minmax3("i", np.minimum), "v_max3_i32": _minmax3("i", np.maximum),
    "v_min3_u32": _minmax3("u", np.minimum), "v_max3_u32": _minmax3("u", np.maximum),
    "v_med3_f32": _med3("f"), "v_med3_i32": _med3("i"), "v_med3_u32": _med3("u"),
    "v_fma_f64": O.fma64,
    "v_xad_u32": lambda a, b, c: (np.asarray(a, U32) ^ b) + np.asarray(c, U32),
    "v_lshl_add_u32": lambda a, b, c: (np.asarray(a, U32) << _shift(b)) + np.asarray(c, U32),
    "v_add_lshl_u32": lambda a, b, c: (np.asarray(a, U32) + b) << _shift(c),
    "v_add3_u32": lambda a, b, c: np.asarray(a, U32) + b + c,
    "v_lshl_or_b32": lambda a, b, c: (np.asarray(a, U32) << _shift(b)) | c,
    "v_and_or_b32": lambda a, b, c: (np.asarray(a, U32) & b) | c,
    "v_or3_b32": lambda a, b, c: np.asarray(a, U32) | b | c,
    "v_add_f64": _d(lambda a, b: a + b), "v_mul_f64": _d(lambda a, b: a * b),
    "v_min_f64": _d(np.fmin), "v_max_f64": _d(np.fmax),
    "v_ldexp_f64": lambda a, e: O.b64(np.ldexp(O.f64(a), _i(e).clip(-2200, 2200))),
    "v_ldexp_f32": _ldexp32,
    "v_mul_lo_u32": _mul_lo, "v_mul_hi_u32": _mul_hi_u, "v_mul_hi_i32": _mul_hi_i,
    "v_bcnt_u32_b32": lambda a, b: O.popcount32(a) + np.asarray(b, U32),
    "v_bfm_b32": lambda a, b: (((U64(1) << (np.asarray(a, U32) & U32(31)).astype(U64)) - U64(1))
                               << (np.asarray(b, U32) & U32(31)).astype(U64)).astype(U32),
    "v_lshlrev_b64": lambda a, b: np.asarray(b, U64) << (np.asarray(a, U32) & U32(63)).astype(U64),
    "v_lshrrev_b64": lambda a, b: np.asarray(b, U64) >> (np.asarray(a, U32) & U32(63)).astype(U64),
    "v_ashrrev_i64": lambda a, b: (np.asarray(b, U64).view(I64) >> (np.asarray(a, U32) & U32(63)).astype(I64)).view(U64),
}

_CARRY = {
    # mnemonic: fn(a, b, carry_in bool or None) -> (result u32, carry bool)
    "v_add_co_u32": lambda a, b, c: _addc(a, b, None),
    "v_sub_co_u32": lambda a, b, c: _subb(a, b, None),
    "v_subrev_co_u32": lambda a, b, c: _subb(b, a, None),
    "v_addc_co_u32": lambda a, b, c: _addc(a, b, c),
    "v_subb_co_u32": lambda a, b, c: _subb(a, b, c),
    "v_subbrev_co_u32": lambda a, b, c: _subb(b, a, c),
}


def _addc(a, b, c):
    s = np.asarray(a, U32).astype(U64) + np.asarray(b, U32).astype(U64)
    if c is not None:
        s = s + c.astype(U64)
    return (s & U64(0xFFFFFFFF)).astype(U32), s > U64(0xFFFFFFFF)


def _subb(a, b, c):
    s = np.asarray(a, U32).astype(I64) - np.asarray(b, U32).astype(I64)
    if c is not None:
        s = s - c.astype(I64)
    return s.astype(U32), s < 0


def _post_f32(ins: Instr):
    om, cl = ins.f.get("omod", 0), ins.f.get("clamp", 0)
    if not om and not cl:
        return None
    mul = {0: None, 1: F32(2.0), 2: F32(4.0), 3: F32(0.5)}[om]

    def post(bits):
        x = O.f32(bits)
        if mul is not None:
            x = x * mul
        if cl:
            x = np.where(np.isnan(x), F32(0), np.clip(x, F32(0), F32(1)))
        return O.b32(x)
    return post


def _post_f64(ins: Instr):
    om, cl = ins.f.get("omod", 0), ins.f.get("clamp", 0)
    if not om and not cl:
        return None
    mul = {0: None, 1: 2.0, 2: 4.0, 3: 0.5}[om]

    def post(bits):
        x = O.f64(bits)
        if mul is not None:
            x = x * mul
        if cl:
            x = np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0))
        return O.b64(x)
    return post


def build_valu(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    enc = ins.encoding
    if mn in ("v_nop", "v_clrexcp"):
        return lambda b, g: None
    if mn.startswith(("v_cmp_", "v_cmpx_")):
        return _build_cmp(ins)
    readers = [vsrc_reader(o) for o in ins.src]
    if mn == "v_readfirstlane_b32":
        rd, wr = readers[0], swriter(ins.dst[0])

        def fn(b, g):
            v = np.broadcast_to(rd(b, g), (g.n, WAVE))
            em = b.em(g)
            lane = np.where(em.any(axis=1), em.argmax(axis=1), 0)
            wr(b, g, v[np.arange(g.n), lane])
        return fn
    if mn == "v_readlane_b32":
        rd = readers[0]
        ls = ssrc_reader(ins.src[1])
        wr = swriter(ins.dst[0])

        def fn(b, g):
            v = np.broadcast_to(rd(b, g), (g.n, WAVE))
            lane = np.broadcast_to(ls(b, g), (g.n,)).astype(np.int64) & 63
            wr(b, g, v[np.arange(g.n), lane])
        return fn
    if mn == "v_writelane_b32":
        sv = ssrc_reader(ins.src[0])
        ls = ssrc_reader(ins.src[1])
        r = ins.dst[0].reg

        def fn(b, g):
            val = np.broadcast_to(sv(b, g), (g.n,))
            lane = np.broadcast_to(ls(b, g), (g.n,)).astype(np.int64) & 63
            rows = g.idx
            b.V[r][rows, lane] = val
        return fn
    if mn == "v_cndmask_b32":
        ra, rb_, rm = readers
        wr = vwriter(ins.dst[0])

        def fn(b, g):
            m = O.mask_of(np.broadcast_to(rm(b, g), (g.n, 1)).reshape(-1))
            wr(b, g, np.where(m, rb_(b, g), ra(b, g)))
        return fn
    if mn in _CARRY:
        sem = _CARRY[mn]
        rd = readers[:2]
        rc = readers[2] if len(readers) > 2 else None
        wr = vwriter(ins.dst[0])
        cw = swriter(ins.dst[1])
        clamp = ins.f.get("clamp", 0)

        def fn(b, g):
            cin = None
            if rc is not None:
                cin = O.mask_of(np.broadcast_to(rc(b, g), (g.n, 1)).reshape(-1))
            res, carry = sem(rd[0](b, g), rd[1](b, g), cin)
            if clamp:
                res = np.where(carry, U32(0) if "sub" in mn else U32(0xFFFFFFFF), res)
            res = np.broadcast_to(res, (g.n, WAVE))
            wr(b, g, res)
            carry = np.broadcast_to(carry, (g.n, WAVE)) & b.em(g)
            cw(b, g, O.bits_of(carry))
        return fn
    if mn in ("v_mad_u64_u32", "v_mad_i64_i32"):
        ra, rb_, rc = readers
        wr = vwriter(ins.dst[0])
        cw = swriter(ins.dst[1])
        signed = mn == "v_mad_i64_i32"

        def fn(b, g):
            a, bb, c = ra(b, g), rb_(b, g), rc(b, g)
            if signed:
                prod = (_i(a).astype(I64) * _i(bb).astype(I64)).view(U64)
                res = prod + np.asarray(c, U64)
                pi = prod.view(I64)
                ci = np.asarray(c, U64).view(I64)
                carry = ((pi >= 0) == (ci >= 0)) & ((res.view(I64) >= 0) != (pi >= 0))
            else:
                prod = np.asarray(a, U32).astype(U64) * np.asarray(bb, U32).astype(U64)
                res = prod + np.asarray(c, U64)
                carry = res < prod
            wr(b, g, np.broadcast_to(res, (g.n, WAVE)))
            cw(b, g, O.bits_of(np.broadcast_to(carry, (g.n, WAVE)) & b.em(g)))
        return fn
    if mn in ("v_mbcnt_lo_u32_b32", "v_mbcnt_hi_u32_b32"):
        ra, rb_ = readers
        wr = vwriter(ins.dst[0])
        hi = mn == "v_mbcnt_hi_u32_b32"
        lanes = np.arange(WAVE)
        lo_mask = np.where(lanes < 32, (np.uint64(1) << lanes.clip(0, 31).astype(U64)) - U64(1),
                           U64(0xFFFFFFFF)).astype(U64)
        hi_mask = np.where(lanes >= 32, (np.uint64(1) << (lanes - 32).clip(0, 31).astype(U64)) - U64(1),
                           U64(0)).astype(U64)
        m = (hi_mask if hi else lo_mask).astype(U32)

        def fn(b, g):
            a = np.asarray(ra(b, g), U32)
            wr(b, g, O.popcount32(a & m) + np.asarray(rb_(b, g), U32))
        return fn
    if mn in ("v_fma_f32", "v_fmac_f32"):
        return _build_fma32(ins, readers)
    if mn == "v_swap_b32":
        r0, r1 = ins.dst[0].reg, ins.dst[1].reg

        def fn(b, g):
            x = b.V[r0][g.sel].copy()
            y = b.V[r1][g.sel].copy()
            b.vwrite(g, r0, y)
            b.vwrite(g, r1, x)
        return fn
    sem = VALU.get(mn)
    if sem is None:
        return None
    wr = vwriter(ins.dst[0])
    w = ins.dst[0].width
    post = None
    if "_f32" in mn and w == 1:
        post = _post_f32(ins)
    elif "_f64" in mn and w == 2:
        post = _post_f64(ins)
    elif ins.f.get("clamp") and mn in ("v_add_u32", "v_sub_u32", "v_subrev_u32"):
        base = sem

        def sem(a, b_, _base=base):
            a64, b64 = np.asarray(a, U32).astype(I64), np.asarray(b_, U32).astype(I64)
            if mn == "v_add_u32":
                return np.minimum(a64 + b64, 0xFFFFFFFF).astype(U32)
            if mn == "v_sub_u32":
                return np.maximum(a64 - b64, 0).astype(U32)
            return np.maximum(b64 - a64, 0).astype(U32)
    n = len(readers)
    if n == 1:
        r0 = readers[0]

        def fn(b, g):
            v = sem(r0(b, g))
            if post is not None:
                v = post(v)
            wr(b, g, v)
    elif n == 2:
        r0, r1 = readers

        def fn(b, g):
            v = sem(r0(b, g), r1(b, g))
            if post is not None:
                v = post(v)
            wr(b, g, v)
    else:
        r0, r1, r2 = readers[:3]

        def fn(b, g):
            v = sem(r0(b, g), r1(b, g), r2(b, g))
            if post is not None:
                v = post(v)
            wr(b, g, v)
    return fn


def _build_fma32(ins: Instr, readers):
    ra, rb_, rc = readers[:3]
    d = ins.dst[0].reg
    post = _post_f32(ins)
    srcs = ins.src[:3]
    simple = post is None and all(o.kind in ("v", "s", "const", "lit") and not (o.neg or o.abs)
                                  and o.width == 1 for o in srcs)
    kinds = tuple(o.kind for o in srcs)
    regs = tuple(o.reg for o in srcs)
    consts = tuple(np.array(o.value, U32).view(F32) for o in srcs)
    # the vector operand to cast first (fast path needs at least one VGPR source)
    vec = [i for i, k in enumerate(kinds) if k == "v"]

    def generic(b, g):
        a, bb, c = ra(b, g), rb_(b, g), rc(b, g)
        t = O.fma32_into(a, bb, c, b.scratch)
        r = np.array(np.broadcast_to(t.astype(F32).view(U32), t.shape))
        O.fma32_fix(t, a, bb, c, r)
        if post is not None:
            r = post(r)
        b.vwrite(g, d, r)

    if not simple or not vec:
        return generic

    def opnd(b, g, i):
        k = kinds[i]
        if k == "v":
            return b.Vf[regs[i]][g.sel]
        if k == "s":
            return b.Sf[regs[i]][g.sel].astype(F64)[:, None]
        return consts[i]

    first = vec[0]
    others = [i for i in (0, 1) if i != first] if first in (0, 1) else [0, 1]
    mul_other = others[0] if first in (0, 1) else None

    def fn(b, g):
        if not (g.contig and b.full(g)):
            return generic(b, g)
        n = g.n
        shape = (n, WAVE)
        t = b.scratch(shape, F64, 0)
        u = b.scratch(shape, F64, 1)
        if first in (0, 1):
            np.copyto(t, opnd(b, g, first))
            np.copyto(u, np.broadcast_to(opnd(b, g, mul_other), shape))
            np.multiply(t, u, out=t)
            y = opnd(b, g, 2)
            if kinds[2] == "v":
                np.copyto(u, y)
                y = u
            np.add(t, y, out=t)
        else:
            # only src2 is a vector: the product is a per-wave scalar (exact in f64)
            prod = opnd(b, g, 0) * opnd(b, g, 1)
            np.copyto(t, opnd(b, g, 2))
            np.add(t, prod, out=t)
        # Double rounding is possible only where the f64 sum sits on an f32 halfway
        # point: low 29 mantissa bits == 0x10000000 (normal range) or == 0 (subnormal
        # f32 range, and zeros); one AND + compare finds both patterns.
        uu = u.view(U64)
        np.bitwise_and(t.view(U64), _CAND_MASK, out=uu)
        hit = b.scratch(shape, bool, 3)
        np.equal(uu, 0, out=hit)
        if not hit.any():
            np.copyto(b.Vf[d][g.sel], t, casting="same_kind")
            return None
        a, bb, c = ra(b, g), rb_(b, g), rc(b, g)
        r = t.astype(F32).view(U32)
        O.fma32_fix(t, a, bb, c, r)
        b.V[d][g.sel] = r
        return None
    return fn


_CAND_MASK = U64(0x1FFFFFFF ^ 0x10000000)
_MINNORM64 = F64(2.0 ** -126)


def _build_cmp(ins: Instr):
    mn = ins.mnemonic
    parts = mn.split("_")
    x = parts[1] == "cmpx"
    ra, rb_ = [vsrc_reader(o) for o in ins.src[:2]]
    ty = parts[-1]
    if parts[2] == "class":
        is64 = ty == "f64"
        test = lambda a, m: O.cmp_class(a, m, is64)  # noqa: E731
    else:
        cond = parts[2]
        if ty == "f32":
            test = lambda a, c: O.f32_cmp(cond, a, c)  # noqa: E731
        elif ty == "f64":
            test = lambda a, c: O.f64_cmp(cond, a, c)  # noqa: E731
        elif ty == "i32":
            test = lambda a, c: O.int_cmp(cond, _i(a), _i(c))  # noqa: E731
        elif ty == "u32":
            test = lambda a, c: O.int_cmp(cond, np.asarray(a, U32), np.asarray(c, U32))  # noqa: E731
        elif ty == "i64":
            test = lambda a, c: O.int_cmp(cond, np.asarray(a, U64).view(I64), np.asarray(c, U64).view(I64))  # noqa: E731
        elif ty == "u64":
            test = lambda a, c: O.int_cmp(cond, np.asarray(a, U64), np.asarray(c, U64))  # noqa: E731
        else:
            return None
    wr = swriter(ins.dst[0])

    def fn(b, g):
        res = np.broadcast_to(test(ra(b, g), rb_(b, g)), (g.n, WAVE)) & b.em(g)
        bits = O.bits_of(res)
        wr(b, g, bits)
        if x:
            lo, hi = O.split64(bits)
            b.S[isa.EXEC_LO][g.sel] = lo
            b.S[isa.EXEC_HI][g.sel] = hi
            b.refresh_exec(g)
    return fn


# -- SALU ---------------------------------------------------------------------------

def _s_i(x):
    return np.asarray(x, U32).view(I32).astype(I64)


def _sbfe(x, s, signed, w64):
    s = np.asarray(s, U32)
    off = (s & U32(63 if w64 else 31)).astype(U64)
    width = ((s >> U32(16)) & U32(0x7F)).astype(U64)
    x = np.asarray(x, U64 if w64 else U32).astype(U64)
    bits = U64(64 if w64 else 32)
    width = np.minimum(width, bits)
    mask = np.where(width >= U64(64), U64(0xFFFFFFFFFFFFFFFF), (U64(1) << np.minimum(width, U64(63))) - U64(1))
    v = (x >> off) & mask
    if signed:
        sh = (U64(64) - width) & U64(63)
        v = np.where(width == 0, U64(0), ((v << sh).view(I64) >> sh.astype(I64)).view(U64))
    if not w64:
        v = (v & U64(0xFFFFFFFF)).astype(U32)
    return v


def _nz(x):
    return np.asarray(x) != 0


_M32 = U64(0xFFFFFFFF)


def _salu_table():
    t = {}

    def u(x):
        return np.asarray(x, U32)

    def q(x):
        return np.asarray(x, U64)
    # SOP2: fn(a, b, scc) -> (res, scc|None)
    t["s_add_u32"] = lambda a, b, s: ((u(a).astype(U64) + u(b)) & _M32, (u(a).astype(U64) + u(b)) > _M32)
    t["s_sub_u32"] = lambda a, b, s: (u(a) - u(b), u(b) > u(a))
    t["s_addc_u32"] = lambda a, b, s: ((u(a).astype(U64) + u(b) + s) & _M32, (u(a).astype(U64) + u(b) + s) > _M32)
    t["s_subb_u32"] = lambda a, b, s: ((u(a).astype(I64) - u(b) - s).astype(U32), (u(a).astype(I64) - u(b) - s) < 0)

    def add_i(a, b, s):
        r = _s_i(a) + _s_i(b)
        return r.astype(U32), (r > 0x7FFFFFFF) | (r < -0x80000000)

    def sub_i(a, b, s):
        r = _s_i(a) - _s_i(b)
        return r.astype(U32), (r > 0x7FFFFFFF) | (r < -0x80000000)
    t["s_add_i32"] = add_i
    t["s_sub_i32"] = sub_i
    t["s_min_i32"] = lambda a, b, s: (np.minimum(_s_i(a), _s_i(b)).astype(U32), _s_i(a) < _s_i(b))
    t["s_max_i32"] = lambda a, b, s: (np.maximum(_s_i(a), _s_i(b)).astype(U32), _s_i(a) > _s_i(b))
    t["s_min_u32"] = lambda a, b, s: (np.minimum(u(a), u(b)), u(a) < u(b))
    t["s_max_u32"] = lambda a, b, s: (np.maximum(u(a), u(b)), u(a) > u(b))
    t["s_cselect_b32"] = lambda a, b, s: (np.where(s != 0, u(a), u(b)), None)
    t["s_cselect_b64"] = lambda a, b, s: (np.where(s != 0, q(a), q(b)), None)
    for w, cast in (("b32", u), ("b64", q)):
        t[f"s_and_{w}"] = lambda a, b, s, c=cast: (c(a) & c(b), _nz(c(a) & c(b)))
        t[f"s_or_{w}"] = lambda a, b, s, c=cast: (c(a) | c(b), _nz(c(a) | c(b)))
        t[f"s_xor_{w}"] = lambda a, b, s, c=cast: (c(a) ^ c(b), _nz(c(a) ^ c(b)))
        t[f"s_andn2_{w}"] = lambda a, b, s, c=cast: (c(a) & ~c(b), _nz(c(a) & ~c(b)))
        t[f"s_orn2_{w}"] = lambda a, b, s, c=cast: (c(a) | ~c(b), _nz(c(a) | ~c(b)))
        t[f"s_nand_{w}"] = lambda a, b, s, c=cast: (~(c(a) & c(b)), _nz(~(c(a) & c(b))))
        t[f"s_nor_{w}"] = lambda a, b, s, c=cast: (~(c(a) | c(b)), _nz(~(c(a) | c(b))))
        t[f"s_xnor_{w}"] = lambda a, b, s, c=cast: (~(c(a) ^ c(b)), _nz(~(c(a) ^ c(b))))
    t["s_lshl_b32"] = lambda a, b, s: (u(a) << (u(b) & U32(31)), _nz(u(a) << (u(b) & U32(31))))
    t["s_lshr_b32"] = lambda a, b, s: (u(a) >> (u(b) & U32(31)), _nz(u(a) >> (u(b) & U32(31))))
    t["s_ashr_i32"] = lambda a, b, s: ((u(a).view(I32) >> (u(b) & U32(31)).astype(I32)).view(U32),
                                       _nz(u(a).view(I32) >> (u(b) & U32(31)).astype(I32)))
    sh64 = lambda b: (u(b) & U32(63)).astype(U64)  # noqa: E731
    t["s_lshl_b64"] = lambda a, b, s: (q(a) << sh64(b), _nz(q(a) << sh64(b)))
    t["s_lshr_b64"] = lambda a, b, s: (q(a) >> sh64(b), _nz(q(a) >> sh64(b)))
    t["s_ashr_i64"] = lambda a, b, s: ((q(a).view(I64) >> sh64(b).astype(I64)).view(U64),
                                       _nz(q(a).view(I64) >> sh64(b).astype(I64)))
    t["s_bfm_b32"] = lambda a, b, s: ((((U64(1) << (u(a) & U32(31)).astype(U64)) - U64(1))
                                       << (u(b) & U32(31)).astype(U64)).astype(U32), None)
    t["s_mul_i32"] = lambda a, b, s: ((_s_i(a) * _s_i(b)).astype(U32), None)
    t["s_mul_hi_u32"] = lambda a, b, s: (_mul_hi_u(a, b), None)
    t["s_mul_hi_i32"] = lambda a, b, s: (_mul_hi_i(a, b), None)
    t["s_bfe_u32"] = lambda a, b, s: (_sbfe(a, b, False, False), _nz(_sbfe(a, b, False, False)))
    t["s_bfe_i32"] = lambda a, b, s: (_sbfe(a, b, True, False), _nz(_sbfe(a, b, True, False)))
    t["s_bfe_u64"] = lambda a, b, s: (_sbfe(a, b, False, True), _nz(_sbfe(a, b, False, True)))
    t["s_bfe_i64"] = lambda a, b, s: (_sbfe(a, b, True, True), _nz(_sbfe(a, b, True, True)))
    t["s_absdiff_i32"] = lambda a, b, s: (np.abs(_s_i(a) - _s_i(b)).astype(U32), _nz(np.abs(_s_i(a) - _s_i(b))))
    for n in (1, 2, 3, 4):
        t[f"s_lshl{n}_add_u32"] = lambda a, b, s, n=n: (
            (((u(a).astype(U64) << U64(n)) & _M32) + u(b)) & _M32,
            ((((u(a).astype(U64) << U64(n)) & _M32) + u(b)) > _M32) | ((u(a) >> U32(32 - n)) != 0))
    t["s_pack_ll_b32_b16"] = lambda a, b, s: ((u(a) & U32(0xFFFF)) | (u(b) << U32(16)), None)
    t["s_pack_lh_b32_b16"] = lambda a, b, s: ((u(a) & U32(0xFFFF)) | (u(b) & U32(0xFFFF0000)), None)
    t["s_pack_hh_b32_b16"] = lambda a, b, s: ((u(a) >> U32(16)) | (u(b) & U32(0xFFFF0000)), None)
    # SOP1: fn(a, scc) -> (res, scc|None)
    t["s_mov_b32"] = lambda a, s: (u(a), None)
    t["s_mov_b64"] = lambda a, s: (q(a), None)
    t["s_not_b32"] = lambda a, s: (~u(a), _nz(~u(a)))
    t["s_not_b64"] = lambda a, s: (~q(a), _nz(~q(a)))
    t["s_brev_b32"] = lambda a, s: (O.brev32(a), None)
    t["s_bcnt0_i32_b32"] = lambda a, s: (U32(32) - O.popcount32(a), _nz(U32(32) - O.popcount32(a)))
    t["s_bcnt1_i32_b32"] = lambda a, s: (O.popcount32(a), _nz(O.popcount32(a)))
    t["s_bcnt0_i32_b64"] = lambda a, s: (U32(64) - O.popcount64(a), _nz(U32(64) - O.popcount64(a)))
    t["s_bcnt1_i32_b64"] = lambda a, s: (O.popcount64(a), _nz(O.popcount64(a)))
    t["s_ff1_i32_b32"] = lambda a, s: (O.ffbl_b32(a), None)
    t["s_ff0_i32_b32"] = lambda a, s: (O.ffbl_b32(~u(a)), None)
    t["s_flbit_i32_b32"] = lambda a, s: (O.ffbh_u32(a), None)
    t["s_ff1_i32_b64"] = lambda a, s: (_ff1_64(q(a)), None)
    t["s_sext_i32_i8"] = lambda a, s: (O.sext(a, 8).astype(U32), None)
    t["s_sext_i32_i16"] = lambda a, s: (O.sext(a, 16).astype(U32), None)
    t["s_abs_i32"] = lambda a, s: (np.abs(_s_i(a)).astype(U32), _nz(np.abs(_s_i(a)).astype(U32)))
    return t


def _ff1_64(x):
    lo, hi = O.split64(x)
    a, b = O.ffbl_b32(lo), O.ffbl_b32(hi)
    return np.where(lo != 0, a, np.where(hi != 0, b + U32(32), U32(0xFFFFFFFF)))


SALU = _salu_table()

_SAVEEXEC = {
    "s_and_saveexec_b64": lambda s, e: s & e, "s_or_saveexec_b64": lambda s, e: s | e,
    "s_xor_saveexec_b64": lambda s, e: s ^ e, "s_andn2_saveexec_b64": lambda s, e: s & ~e,
    "s_orn2_saveexec_b64": lambda s, e: s | ~e, "s_nand_saveexec_b64": lambda s, e: ~(s & e),
    "s_nor_saveexec_b64": lambda s, e: ~(s | e), "s_xnor_saveexec_b64": lambda s, e: ~(s ^ e),
    "s_andn1_saveexec_b64": lambda s, e: ~s & e, "s_orn1_saveexec_b64": lambda s, e: ~s | e,
}


def build_salu(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    enc = ins.encoding
    code_addr = b.cfg.code_address
    if mn == "s_getpc_b64":
        wr = swriter(ins.dst[0])
        val = np.array(code_addr + ins.pc + ins.size, U64)
        return lambda b, g: wr(b, g, val)
    if mn in ("s_setpc_b64", "s_swappc_b64"):
        rd = ssrc_reader(ins.src[0])
        wr = swriter(ins.dst[0]) if mn == "s_swappc_b64" else None
        ret = np.array(code_addr + ins.pc + ins.size, U64)

        def fn(b, g):
            tgt = np.broadcast_to(np.asarray(rd(b, g), U64), (g.n,)).astype(np.int64) - code_addr
            if wr is not None:
                wr(b, g, ret)
            return _jump(b, g, tgt)
        return fn
    if mn in _SAVEEXEC:
        rd = ssrc_reader(ins.src[0])
        wr = swriter(ins.dst[0])
        op = _SAVEEXEC[mn]

        def fn(b, g):
            s = np.asarray(rd(b, g), U64)
            e = b.exec64(g)
            new = op(s, e)
            wr(b, g, e)
            lo, hi = O.split64(np.broadcast_to(new, (g.n,)))
            b.S[isa.EXEC_LO][g.sel] = lo
            b.S[isa.EXEC_HI][g.sel] = hi
            b.refresh_exec(g)
            b.SCC[g.sel] = new != 0
        return fn
    if enc == "SOPC":
        return _build_sopc(ins)
    if enc == "SOPK":
        return _build_sopk(ins, b)
    if mn in ("s_cmov_b32", "s_cmov_b64"):
        rd = ssrc_reader(ins.src[0])
        wr = swriter(ins.dst[0])
        r0, w = ins.dst[0].reg, ins.dst[0].width

        def fn(b, g):
            cur = O.u64_of(b.S[r0][g.sel], b.S[r0 + 1][g.sel]) if w == 2 else b.S[r0][g.sel]
            wr(b, g, np.where(b.SCC[g.sel], rd(b, g), cur))
        return fn
    sem = SALU.get(mn)
    if sem is None:
        return None
    readers = [ssrc_reader(o) for o in ins.src]
    wr = swriter(ins.dst[0]) if ins.dst else None
    if len(readers) == 1:
        r0 = readers[0]

        def fn(b, g):
            res, scc = sem(r0(b, g), b.SCC[g.sel])
            wr(b, g, res)
            if scc is not None:
                b.SCC[g.sel] = scc
    else:
        r0, r1 = readers
        needs_scc = mn in ("s_addc_u32", "s_subb_u32", "s_cselect_b32", "s_cselect_b64")

        def fn(b, g):
            s = b.SCC[g.sel].astype(U64 if mn != "s_subb_u32" else I64) if needs_scc else None
            res, scc = sem(r0(b, g), r1(b, g), s)
            wr(b, g, res)
            if scc is not None:
                b.SCC[g.sel] = scc
    if mn in ("s_addc_u32", "s_subb_u32", "s_cselect_b32", "s_cselect_b64", "s_cmov_b32"):
        p.rkeys = p.rkeys | {isa.SCC}
        p.keys = p.rkeys | p.wkeys
    if mn not in ("s_mov_b32", "s_mov_b64", "s_cselect_b32", "s_cselect_b64", "s_mul_i32",
                  "s_bfm_b32", "s_mul_hi_u32", "s_mul_hi_i32", "s_brev_b32", "s_ff1_i32_b32",
                  "s_ff0_i32_b32", "s_flbit_i32_b32", "s_ff1_i32_b64", "s_sext_i32_i8",
                  "s_sext_i32_i16", "s_pack_ll_b32_b16", "s_pack_lh_b32_b16", "s_pack_hh_b32_b16"):
        p.wkeys = p.wkeys | {isa.SCC}
        p.keys = p.rkeys | p.wkeys
    return fn


def _build_sopc(ins: Instr):
    mn = ins.mnemonic
    ra, rb_ = [ssrc_reader(o) for o in ins.src]
    parts = mn.split("_")
    if mn.startswith("s_bitcmp"):
        want = 1 if parts[1] == "bitcmp1" else 0
        w64 = parts[2] == "b64"

        def fn(b, g):
            a = np.asarray(ra(b, g), U64 if w64 else U32).astype(U64)
            bit = (a >> (np.asarray(rb_(b, g), U32) & U32(63 if w64 else 31)).astype(U64)) & U64(1)
            b.SCC[g.sel] = np.broadcast_to(bit == want, (g.n,))
        return fn
    if len(parts) != 4:
        return None
    cond, ty = parts[2], parts[3]
    cond = {"lg": "ne"}.get(cond, cond)

    def fn(b, g):
        a, c = ra(b, g), rb_(b, g)
        if ty == "i32":
            a, c = np.asarray(a, U32).view(I32), np.asarray(c, U32).view(I32)
        elif ty == "u64":
            a, c = np.asarray(a, U64), np.asarray(c, U64)
        else:
            a, c = np.asarray(a, U32), np.asarray(c, U32)
        b.SCC[g.sel] = np.broadcast_to(O.int_cmp(cond, a, c), (g.n,))
    return fn


def _build_sopk(ins: Instr, b: Batch):
    mn = ins.mnemonic
    simm = ins.f["simm16"]
    simm_s = simm - 0x10000 if simm & 0x8000 else simm
    if mn == "s_movk_i32":
        wr = swriter(ins.dst[0])
        v = np.array(simm_s & 0xFFFFFFFF, U32)
        return lambda b, g: wr(b, g, v)
    if mn == "s_cmovk_i32":
        r = ins.dst[0].reg
        v = U32(simm_s & 0xFFFFFFFF)

        def fn(b, g):
            b.S[r][g.sel] = np.where(b.SCC[g.sel], v, b.S[r][g.sel])
        return fn
    if mn.startswith("s_cmpk_"):
        r = ins.src[0].reg
        cond, ty = mn.split("_")[2], mn.split("_")[3]
        cond = {"lg": "ne"}.get(cond, cond)

        def fn(b, g):
            a = b.S[r][g.sel]
            if ty == "i32":
                res = O.int_cmp(cond, a.view(I32).astype(I64), np.int64(simm_s))
            else:
                res = O.int_cmp(cond, a.astype(U64), U64(simm))
            b.SCC[g.sel] = res
        return fn
    if mn == "s_addk_i32":
        r = ins.dst[0].reg

        def fn(b, g):
            x = b.S[r][g.sel].view(I32).astype(I64) + simm_s
            b.S[r][g.sel] = x.astype(U32)
            b.SCC[g.sel] = (x > 0x7FFFFFFF) | (x < -0x80000000)
        return fn
    if mn == "s_mulk_i32":
        r = ins.dst[0].reg

        def fn(b, g):
            b.S[r][g.sel] = (b.S[r][g.sel].view(I32).astype(I64) * simm_s).astype(U32)
        return fn
    if mn == "s_call_b64":
        wr = swriter(ins.dst[0])
        ret = np.array(b.cfg.code_address + ins.pc + 4, U64)
        tgt = ins.pc + 4 + 4 * simm_s

        def fn(b, g):
            wr(b, g, ret)
            return tgt
        return fn
    if mn in ("s_getreg_b32",):
        wr = swriter(ins.dst[0])
        z = np.array(0, U32)
        return lambda b, g: wr(b, g, z)
    if mn in ("s_setreg_b32", "s_setreg_imm32_b32"):
        return lambda b, g: None
    return None


def _jump(b: Batch, g: Group, tgt: np.ndarray):
    """Per-wave jump targets (byte offsets in the code image)."""
    t0 = int(tgt[0])
    if (tgt == t0).all():
        return t0
    children = []
    for t in np.unique(tgt):
        children.append(g.child(g.idx[tgt == t], int(t)))
    b.split = children
    return _SPLIT


# -- SOPP ---------------------------------------------------------------------------

def build_sopp(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    if mn in ("s_nop", "s_setprio", "s_sleep", "s_icache_inv", "s_incperflevel", "s_decperflevel",
              "s_ttracedata", "s_setkill", "s_set_gpr_idx_off", "s_set_gpr_idx_mode",
              "s_cbranch_cdbgsys", "s_cbranch_cdbguser", "s_cbranch_cdbgsys_or_user",
              "s_cbranch_cdbgsys_and_user", "s_wakeup"):
        return lambda b, g: None
    if mn in ("s_endpgm", "s_endpgm_saved"):
        def fn(b, g):
            b.ended[g.sel] = True
            return _END
        return fn
    if mn == "s_barrier":
        def fn(b, g):
            b.at_barrier[g.sel] = True
            b.st.barriers += g.n
            return _BARRIER
        return fn
    if mn == "s_waitcnt":
        vm, lgkm = ins.f["vmcnt"], ins.f["lgkmcnt"]

        def fn(b, g):
            if not g.pending:
                return None
            drop = []
            for k, (kind, seq) in g.pending.items():
                if kind == "vm":
                    if g.vm_n - seq >= vm:
                        drop.append(k)
                elif kind == "lds":
                    if g.lds_n - seq >= lgkm or lgkm == 0:
                        drop.append(k)
                elif lgkm == 0:
                    drop.append(k)
            for k in drop:
                del g.pending[k]
            return None
        return fn
    if mn == "s_branch":
        tgt = ins.f["target"]
        return lambda b, g: tgt
    if mn.startswith("s_cbranch_"):
        tgt = ins.f["target"]
        nxt = ins.pc + 4
        kind = mn[len("s_cbranch_"):]
        if kind in ("scc0", "scc1"):
            want = kind == "scc1"
            cond = lambda b, g: b.SCC[g.sel] == want  # noqa: E731
            p.rkeys = frozenset({isa.SCC})
        elif kind in ("vccz", "vccnz"):
            z = kind == "vccz"
            cond = lambda b, g: ((b.S[isa.VCC_LO][g.sel] | b.S[isa.VCC_HI][g.sel]) == 0) == z  # noqa: E731
            p.rkeys = frozenset({isa.VCC_LO, isa.VCC_HI})
        elif kind in ("execz", "execnz"):
            z = kind == "execz"
            cond = lambda b, g: (~b.em(g).any(axis=1)) == z  # noqa: E731
        else:
            return None
        p.keys = p.rkeys

        def fn(b, g):
            c = cond(b, g)
            if c.all():
                return tgt
            if not c.any():
                return nxt
            b.split = [g.child(g.idx[c], tgt), g.child(g.idx[~c], nxt)]
            return _SPLIT
        return fn
    if mn in ("s_sendmsg", "s_sendmsghalt", "s_trap", "s_sethalt"):
        return None
    return None


# -- memory instructions -------------------------------------------------------------

def _issue(g: Group, p: Prepared, kind: str):
    """Record an issued memory op; its destinations become pending."""
    if kind == "vm":
        g.vm_n += 1
        seq = g.vm_n
        lim = TARGET.vmcnt_max
        # the hardware stalls issue at the counter's maximum: older ops have returned
        if len(g.pending) > 0:
            for k in [k for k, (kd, s) in g.pending.items() if kd == "vm" and g.vm_n - s >= lim + 1]:
                del g.pending[k]
    elif kind == "lds":
        g.lds_n += 1
        g.lgkm_n += 1
        seq = g.lds_n
    else:
        g.lgkm_n += 1
        seq = g.lgkm_n
    for k in p.wkeys:
        g.pending[k] = (kind, seq)


def _oob(b: Batch, g: Group, e: OutOfBoundsAccess, lane_waves: np.ndarray, lanes: np.ndarray,
         addr: np.ndarray):
    bad = getattr(e, "bad_elements", None)
    if bad is None or len(bad) == 0:
        bad = np.flatnonzero(np.ones(len(addr), bool))[:1]
    i = int(bad[0])
    e.wave_index = int(np.searchsorted(g.idx, lane_waves[i])) if lane_waves.size else 0
    lanes_bad = sorted({int(lanes[j]) for j in bad[:16]})
    e.lanes = lanes_bad
    e.detail = f"{e.detail}; lane(s) {lanes_bad}"
    e.args = (e._format(),)
    return e


def _site(b: Batch, ins: Instr):
    """The per-instruction buffer check's key (see memory.Memory.check): the dispatch (its
    kernarg segment, freed when the dispatch ends) and the pc; None without a kernarg segment."""
    key = b.cfg.kernarg_address
    return (key, ins.pc) if key else None


def _lane_addrs(b: Batch, g: Group, addr: np.ndarray):
    """Active lanes' addresses (flat), with wave ids and lane numbers for diagnostics."""
    em = b.em(g)
    addr = np.broadcast_to(addr, (g.n, WAVE))
    if b.full(g):
        return addr.reshape(-1), None
    return addr[em], em


def build_smem(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    if mn in ("s_dcache_wb", "s_dcache_inv", "s_dcache_wb_vol", "s_dcache_inv_vol"):
        return lambda b, g: None
    if mn in ("s_memtime", "s_memrealtime"):
        wr = swriter(ins.dst[0])
        p.load_kind = "smem"

        def fn(b, g):
            wr(b, g, np.array(0, U64))
            _issue(g, p, "smem")
        return fn
    if "load" not in mn:
        return None
    nd = ins.f["ndwords"]
    base_op = ins.src[0]
    rbase = ssrc_reader(Operand("s", base_op.reg, 2))
    r4 = base_op.reg
    off = ins.f["offset"]
    so = ins.f["soffset"]
    rso = ssrc_reader(ins.src[-1]) if so is not None else None
    dst = ins.dst[0].reg
    buffer = ins.f["buffer"]
    p.load_kind = "smem"

    def fn(b, g):
        base = rbase(b, g)
        if buffer:
            base = base & U64(0xFFFFFFFFFFFF)
        o = np.full(g.n, off, np.int64)
        if rso is not None:
            o = o + np.broadcast_to(rso(b, g), (g.n,)).astype(np.int64)
        addr = ((base.astype(np.int64) + o).astype(U64)) & ~U64(3)
        if buffer:
            nrec = b.S[r4 + 2][g.sel].astype(np.int64)
            data = np.zeros((g.n, nd), U32)
            for i in range(nd):
                ok = (o + 4 * i + 4) <= nrec
                if ok.any():
                    try:
                        data[ok, i] = b.mem.load(addr[ok] + U64(4 * i), 4, "s_buffer_load")[:, 0]
                    except OutOfBoundsAccess as e:
                        raise _oob(b, g, e, g.idx[ok], np.zeros(int(ok.sum()), int), addr[ok])
        else:
            try:
                data = b.mem.load(addr, 4 * nd, mn, _site(b, ins))
            except OutOfBoundsAccess as e:
                raise _oob(b, g, e, g.idx, np.zeros(g.n, int), addr)
        for i in range(nd):
            b.S[dst + i][g.sel] = data[:, i]
        if b.rec is not None:
            b.rec.memory(g, addr[:, None], None, 4 * nd)
        nbytes = 4 * nd * g.n
        b.st.smem_bytes_read += nbytes
        b.st.global_bytes_read += nbytes
        _issue(g, p, "smem")
    return fn


_SUB = {"ubyte": (1, False), "sbyte": (1, True), "ushort": (2, False), "sshort": (2, True),
        "byte": (1, False), "short": (2, False)}


def _vmem_access(b: Batch, g: Group, p: Prepared, ins: Instr, addr: np.ndarray, valid=None):
    """Do the load/store/atomic of a FLAT/GLOBAL/MUBUF instruction at per-lane ``addr`` (n,64) u64.

    ``valid`` (n,64) bool: lanes in range (MUBUF bounds); others read 0 / drop writes.
    """
    name = ins.f["op"]
    mn = ins.mnemonic
    em = b.em(g)
    full = b.full(g)
    act = em if valid is None else (em & valid)
    use_all = full and valid is None
    if use_all:
        flat = addr.reshape(-1)
        sel_lanes = None
    else:
        flat = addr[act]
        sel_lanes = act
    m = flat.size
    if b.rec is not None:
        b.rec.memory(g, addr, None if use_all else act, 4 * max(1, ins.dst[0].width if ins.dst else 1))

    def diag(e):
        if sel_lanes is None:
            w = np.repeat(g.idx, WAVE)
            ln = np.tile(np.arange(WAVE), g.n)
        else:
            wi, ln = np.nonzero(sel_lanes)
            w = g.idx[wi]
        return _oob(b, g, e, w, ln, flat)

    if name.startswith("load"):
        dst = ins.dst[0].reg
        nd = ins.dst[0].width
        sub = name.split("_", 1)[1]
        try:
            if sub in _SUB:
                nb, signed = _SUB[sub]
                raw = b.mem.load_bytes(flat, nb, mn, _site(b, ins))
                v = raw[:, 0].astype(np.int64) if nb == 1 else raw.view("<u2")[:, 0].astype(np.int64)
                if signed:
                    v = np.where(v >= (1 << (8 * nb - 1)), v - (1 << (8 * nb)), v)
                data = v.astype(U32)[:, None]
                nbytes = nb
            else:
                data = b.mem.load(flat, 4 * nd, mn, _site(b, ins)) if m else np.zeros((0, nd), U32)
                nbytes = 4 * nd
        except OutOfBoundsAccess as e:
            raise diag(e)
        b.st.global_bytes_read += nbytes * m
        for i in range(nd):
            if use_all:
                b.V[dst + i][g.sel] = data[:, i].reshape(g.n, WAVE)
            else:
                cur = b.V[dst + i][g.sel]
                if not g.contig:
                    cur = cur.copy()
                # lanes active but out of range read 0
                if valid is not None:
                    cur[em & ~valid] = 0
                cur[act] = data[:, i]
                if not g.contig:
                    b.V[dst + i][g.sel] = cur
        _issue(g, p, "vm")
        return
    if name.startswith("store"):
        data_op = ins.src[1] if ins.encoding == "FLAT" else ins.src[-1]
        r = data_op.reg
        nd = data_op.width
        sub = name.split("_", 1)[1]
        vals = np.stack([b.V[r + i][g.sel] for i in range(nd)], axis=-1)
        vals = vals.reshape(-1, nd) if use_all else vals[act]
        try:
            if sub in _SUB:
                nb = _SUB[sub][0]
                by = vals[:, 0].astype("<u4").view(np.uint8).reshape(-1, 4)[:, :nb]
                b.mem.store_bytes(flat, by, mn, _site(b, ins))
                b.st.global_bytes_written += nb * m
            else:
                b.mem.store(flat, vals, mn, _site(b, ins))
                b.st.global_bytes_written += 4 * nd * m
        except OutOfBoundsAccess as e:
            raise diag(e)
        _issue(g, p, "vm")
        return
    # atomics
    op = name[len("atomic_"):]
    wide = ins.f["width"]
    if op.endswith("_x2"):
        op = op[:-3]
    data_op = ins.src[1] if ins.encoding == "FLAT" else ins.src[-1]
    r = data_op.reg
    nd = data_op.width
    vals = np.stack([b.V[r + i][g.sel] for i in range(nd)], axis=-1)
    vals = vals.reshape(-1, nd) if use_all else vals[act]
    if op == "cmpswap":
        d, c = vals[:, :wide], vals[:, wide:]
    else:
        d, c = vals, None
    try:
        old = b.mem.atomic(op, flat, d, c, wide, site=_site(b, ins))
    except OutOfBoundsAccess as e:
        raise diag(e)
    b.st.global_bytes_read += 4 * wide * m
    b.st.global_bytes_written += 4 * wide * m
    if ins.dst:
        dst = ins.dst[0].reg
        for i in range(wide):
            if use_all:
                b.V[dst + i][g.sel] = old[:, i].reshape(g.n, WAVE)
            else:
                cur = b.V[dst + i][g.sel]
                if not g.contig:
                    cur = cur.copy()
                cur[act] = old[:, i]
                if not g.contig:
                    b.V[dst + i][g.sel] = cur
    _issue(g, p, "vm")


def build_flat(ins: Instr, b: Batch, p: Prepared):
    f = ins.f
    addr_op = f["addr"]
    ra = addr_op.reg
    off = f["offset"]
    saddr = f["saddr"]
    if ins.mnemonic.split("_", 1)[1].startswith("load") or (ins.dst and "atomic" in ins.mnemonic):
        p.load_kind = "vm"
    rs = ssrc_reader(Operand("s", saddr, 2)) if saddr is not None else None
    offv = np.int64(off)

    def fn(b, g):
        if rs is not None:
            base = np.asarray(rs(b, g), U64)[:, None]
            addr = base + b.V[ra][g.sel].astype(U64)
        else:
            addr = O.u64_of(b.V[ra][g.sel], b.V[ra + 1][g.sel])
        if offv:
            addr = (addr.astype(np.int64) + offv).astype(U64)
        _vmem_access(b, g, p, ins, addr)
    return fn


def build_mubuf(ins: Instr, b: Batch, p: Prepared):
    f = ins.f
    rs = f["srsrc"].reg
    rso = ssrc_reader(f["soffset"])
    va = f["vaddr"]
    offen, idxen = f["offen"], f["idxen"]
    inst_off = f["offset"]
    name = f["op"]
    if name.startswith("load") or (ins.dst and name.startswith("atomic")):
        p.load_kind = "vm"
    if name.startswith(("load", "store")):
        sub = name.split("_", 1)[1]
        nbytes = _SUB[sub][0] if sub in _SUB else 4 * (ins.dst[0].width if ins.dst else ins.src[-1].width)
    else:
        nbytes = 4 * f["width"]

    def fn(b, g):
        S = b.S
        d0 = S[rs][g.sel].astype(U64)
        d1 = S[rs + 1][g.sel].astype(U64)
        base = d0 | ((d1 & U64(0xFFFF)) << U64(32))
        stride = ((d1 >> U64(16)) & U64(0x3FFF)).astype(np.int64)
        nrec = S[rs + 2][g.sel].astype(np.int64)
        so = np.broadcast_to(rso(b, g), (g.n,)).astype(np.int64)
        vi = 0
        index = np.zeros((g.n, 1), np.int64)
        offset = np.full((g.n, 1), inst_off, np.int64)
        if idxen:
            index = b.V[va.reg][g.sel].astype(np.int64)
            vi = 1
        if offen:
            offset = offset + b.V[va.reg + vi][g.sel].astype(np.int64)
        st = stride[:, None]
        if (stride == 0).all():
            valid = (offset + nbytes) <= nrec[:, None]
        else:
            valid = np.where(st == 0, (offset + nbytes) <= nrec[:, None], index < nrec[:, None])
        addr = (base.astype(np.int64)[:, None] + so[:, None] + offset + st * index).astype(U64)
        addr = np.broadcast_to(addr, (g.n, WAVE))
        valid = np.broadcast_to(valid, (g.n, WAVE))
        _vmem_access(b, g, p, ins, addr, None if valid.all() else valid)
    return fn


def lds_bank_cycles(a: np.ndarray, em: np.ndarray, dwords: int) -> np.ndarray:
    """LDS cycles per wave for one DS access: (n, 64) byte addresses -> (n,) cycles.

    GCN's LDS has 32 banks of 4 bytes and serves half a wave (32 lanes) per pass;
    lanes that hit the same bank at different dword addresses serialise (the same
    address is a broadcast).  Each dword of a wider access is one more pass.
    Source: AMD "Vega" ISA guide, "Local Data Share"; gfx906.md "Memory".
    """
    words = np.asarray(a, np.int64) >> 2
    n = words.shape[0]
    out = np.zeros(n, np.int64)
    for w in range(n):
        total = 0
        for half in (slice(0, 32), slice(32, 64)):
            ws = words[w, half][em[w, half]]
            if ws.size == 0:
                continue
            uniq = np.unique(ws)
            total += int(np.bincount(uniq % 32, minlength=32).max())
        out[w] = total * max(1, dwords)
    return out


def build_ds(ins: Instr, b: Batch, p: Prepared):
    mn = ins.mnemonic
    f = ins.f
    if mn == "ds_nop":
        return lambda b, g: None
    ra = ins.src[0].reg
    sz = f["dwords"]
    lds_limit = b.lds_bytes
    if mn.startswith("ds_read"):
        p.load_kind = "lds"
    elif "_rtn_" in mn:
        p.load_kind = "lds"
    two = "read2" in mn or "write2" in mn
    st64 = "st64" in mn
    if two:
        unit = 4 * sz * (64 if st64 else 1)
        offs = [f["offset0"] * unit, f["offset1"] * unit]
    else:
        offs = [f["offset"]]
    sub_bytes = {"ds_read_u8": (1, False), "ds_read_i8": (1, True), "ds_read_u16": (2, False),
                 "ds_read_i16": (2, True), "ds_write_b8": (1, False), "ds_write_b16": (2, False)}.get(mn)

    def lane_index(b, g, extra):
        a = b.V[ra][g.sel].astype(np.int64) + extra
        em = b.em(g)
        nb = sub_bytes[0] if sub_bytes else 4 * sz
        bad = em & ((a < 0) | (a + nb > lds_limit))
        if bad.any():
            wi, ln = np.nonzero(bad)
            e = LdsOutOfRange(
                f"lane {int(ln[0])} accesses LDS bytes [{int(a[wi[0], ln[0]])}, {int(a[wi[0], ln[0]]) + nb}) "
                f"but the workgroup has {lds_limit} bytes (lanes {sorted(set(ln[:16].tolist()))})",
                lds_address=int(a[wi[0], ln[0]]))
            e.wave_index = int(wi[0])
            raise e
        return a

    def wgbase(b, g):
        return (b.wg_of_wave[g.idx].astype(np.int64) * b.lds_words * 4)[:, None]

    if mn.startswith("ds_read"):
        dst = ins.dst[0].reg

        def fn(b, g):
            em = b.em(g)
            full = b.full(g)
            base = wgbase(b, g)
            flat8 = b.LDS.reshape(-1).view(np.uint8)
            col = 0
            for o in offs:
                a = lane_index(b, g, o) + base
                aa = a.reshape(-1) if full else a[em]
                if sub_bytes:
                    nb, signed = sub_bytes
                    raw = flat8[aa[:, None] + np.arange(nb)]
                    v = raw[:, 0].astype(np.int64) if nb == 1 else raw.view("<u2")[:, 0].astype(np.int64)
                    if signed:
                        v = np.where(v >= (1 << (8 * nb - 1)), v - (1 << (8 * nb)), v)
                    data = v.astype(U32)[:, None]
                    b.st.lds_bytes_read += nb * aa.size
                else:
                    if not (aa & 3).any():
                        data = b.LDS.reshape(-1)[(aa >> 2)[:, None] + np.arange(sz)]
                    else:
                        data = flat8[aa[:, None] + np.arange(4 * sz)].view(U32).reshape(-1, sz)
                    b.st.lds_bytes_read += 4 * sz * aa.size
                for i in range(data.shape[1]):
                    if full:
                        b.V[dst + col + i][g.sel] = data[:, i].reshape(g.n, WAVE)
                    else:
                        cur = b.V[dst + col + i][g.sel]
                        if not g.contig:
                            cur = cur.copy()
                        cur[em] = data[:, i]
                        if not g.contig:
                            b.V[dst + col + i][g.sel] = cur
                col += sz
            if b.rec is not None and g.traced:
                b.rec.memory(g, a, em, 0, lds_bank_cycles(a, em, sz))
            _issue(g, p, "lds")
        return fn
    if mn.startswith("ds_write"):
        datas = [o.reg for o in ins.src[1:]]

        def fn(b, g):
            em = b.em(g)
            full = b.full(g)
            base = wgbase(b, g)
            flat8 = b.LDS.reshape(-1).view(np.uint8)
            for o, dr in zip(offs, datas):
                a = lane_index(b, g, o) + base
                aa = a.reshape(-1) if full else a[em]
                vals = np.stack([b.V[dr + i][g.sel] for i in range(sz)], axis=-1)
                vals = vals.reshape(-1, sz) if full else vals[em]
                if sub_bytes:
                    nb = sub_bytes[0]
                    flat8[aa[:, None] + np.arange(nb)] = vals[:, 0].astype("<u4").view(np.uint8).reshape(-1, 4)[:, :nb]
                    b.st.lds_bytes_written += nb * aa.size
                elif not (aa & 3).any():
                    b.LDS.reshape(-1)[(aa >> 2)[:, None] + np.arange(sz)] = vals
                    b.st.lds_bytes_written += 4 * sz * aa.size
                else:
                    flat8[aa[:, None] + np.arange(4 * sz)] = np.ascontiguousarray(vals).view(np.uint8).reshape(-1, 4 * sz)
                    b.st.lds_bytes_written += 4 * sz * aa.size
            if b.rec is not None and g.traced:
                b.rec.memory(g, a, em, 0, lds_bank_cycles(a, em, sz))
            _issue(g, p, "lds")
        return fn
    # LDS atomics (32-bit)
    opname = mn[3:].replace("_rtn", "")
    op = opname.rsplit("_", 1)[0]
    amap = {"add": "add", "sub": "sub", "min": None, "max": None, "and": "and", "or": "or", "xor": "xor",
            "inc": "inc", "dec": "dec", "wrxchg": "swap", "rsub": "rsub"}
    if op in ("min", "max"):
        signed = opname.endswith("i32")
        kind = ("s" if signed else "u") + op
    else:
        kind = amap.get(op)
    if kind is None or sz != 1:
        return None
    dr = ins.src[1].reg
    rtn = ins.dst[0].reg if ins.dst else None

    def fn(b, g):
        em = b.em(g)
        base = wgbase(b, g)
        a = lane_index(b, g, offs[0]) + base
        aa = a[em]
        if (aa & 3).any():
            raise LdsOutOfRange("misaligned LDS atomic")
        vals = b.V[dr][g.sel][em]
        mem = b.LDS.reshape(-1)
        widx = aa >> 2
        old = np.empty(widx.size, U32)
        for i in range(widx.size):  # lane order
            o = mem[widx[i]]
            old[i] = o
            if kind == "rsub":
                nv = np.array([vals[i] - o], U32)
            else:
                from .memory import _rmw
                nv = _rmw(kind, np.array([o], U32), vals[i:i + 1], None, U32)
            mem[widx[i]] = nv[0]
        b.st.lds_bytes_read += 4 * widx.size
        b.st.lds_bytes_written += 4 * widx.size
        if rtn is not None:
            cur = b.V[rtn][g.sel]
            if not g.contig:
                cur = cur.copy()
            cur[em] = old
            if not g.contig:
                b.V[rtn][g.sel] = cur
        _issue(g, p, "lds")
    return fn


def build_vop(ins, b, p):
    return build_valu(ins, b, p)


_BUILDERS = {
    "VOP1": build_vop, "VOP2": build_vop, "VOPC": build_vop, "VOP3": build_vop,
    "SOP1": build_salu, "SOP2": build_salu, "SOPK": build_salu, "SOPC": build_salu,
    "SOPP": build_sopp, "SMEM": build_smem, "FLAT": build_flat, "MUBUF": build_mubuf, "DS": build_ds,
}


# ---------------------------------------------------------------------------
# dispatch

class _Run:
    def __init__(self, mem: Memory, cfg: DispatchConfig):
        self.mem = mem
        self.cfg = cfg
        self.decoder = Decoder(cfg.code, cfg.target)
        self.lock = threading.Lock()
        self.warned: set = set()
        self.stop = threading.Event()
        bx, by, bz = cfg.block
        self.waves_per_wg = max(1, -(-(bx * by * bz) // WAVE))


def _validate(cfg: DispatchConfig):
    if any(int(x) <= 0 for x in cfg.grid) or any(int(x) <= 0 for x in cfg.block):
        raise ValueError(f"grid {cfg.grid} and block {cfg.block} must be positive")
    if math.prod(cfg.block) > TARGET.max_workitems_per_workgroup:
        raise ValueError(f"a workgroup of {math.prod(cfg.block)} work-items exceeds "
                         f"{TARGET.max_workitems_per_workgroup}")
    off = cfg.entry_address - cfg.code_address
    if off < 0 or off >= len(cfg.code) or off % 4:
        raise ValueError(f"entry address 0x{cfg.entry_address:x} is not inside the code image "
                         f"[0x{cfg.code_address:x}, 0x{cfg.code_address + len(cfg.code):x})")


def default_batch_waves(cfg: DispatchConfig, waves_per_wg: int, total_waves: int, workers: int) -> int:
    if cfg.max_waves_in_flight:
        return max(waves_per_wg, int(cfg.max_waves_in_flight))
    # bound one batch's register file (~128 MiB) and keep every worker busy; batches of
    # ~1k waves keep NumPy's working set cache-friendly
    per_wave = (min(cfg.vgpr_count, 256) * WAVE + 256) * 4
    cap = max(waves_per_wg, (128 << 20) // per_wave)
    want = -(-total_waves // workers)
    return max(waves_per_wg, min(cap, want, 1024))


def _workers() -> int:
    """Worker processes for big launches (``VLPC_EMU_PROCS`` overrides; 1 disables)."""
    env = os.environ.get("VLPC_EMU_PROCS")
    if env:
        return max(1, int(env))
    if not hasattr(os, "fork"):
        return 1
    return max(1, min(8, os.cpu_count() or 1))


#: launches with fewer waves than this run in-process (forking costs more than it saves)
PARALLEL_MIN_WAVES = 512


def _run_forked(run: "_Run", chunks: list, nprocs: int, work, poll=None) -> list:
    """Run ``chunks`` in ``nprocs`` forked workers sharing the device memory mapping."""
    import multiprocessing as mp
    import pickle
    import selectors
    import signal

    mem = run.mem
    old_lock = mem.lock
    mem.lock = mp.get_context("fork").Lock()
    parts = [chunks[i::nprocs] for i in range(nprocs)]
    children = {}
    try:
        for part in parts:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # worker
                os.close(r)
                try:
                    with warnings.catch_warnings(record=True) as wl:
                        warnings.simplefilter("always")
                        stats = [work(c) for c in part]
                    msgs = [str(x.message) for x in wl if issubclass(x.category, UninitializedRegisterWarning)]
                    payload = ("ok", stats, msgs)
                except BaseException as e:  # noqa: BLE001
                    payload = ("err", e, [])
                try:
                    data = pickle.dumps(payload)
                except Exception:  # noqa: BLE001
                    data = pickle.dumps(("err", EmulatorFault(f"worker failed: {payload[1]!r}"), []))
                try:
                    with os.fdopen(w, "wb") as f:
                        f.write(data)
                finally:
                    os._exit(0)
            os.close(w)
            children[r] = [pid, bytearray()]
        sel = selectors.DefaultSelector()
        for r in children:
            sel.register(r, selectors.EVENT_READ)
        results, first_err, open_n = [], None, len(children)
        while open_n:
            if poll is not None:
                poll()
            for key, _ in sel.select(None if poll is None else 0.25):
                r = key.fd
                chunk = os.read(r, 1 << 20)
                if chunk:
                    children[r][1] += chunk
                    continue
                sel.unregister(r)
                os.close(r)
                open_n -= 1
                pid, data = children[r]
                os.waitpid(pid, 0)
                children[r][0] = None
                try:
                    kind, val, msgs = pickle.loads(bytes(data))
                except Exception:  # noqa: BLE001
                    kind, val, msgs = "err", EmulatorFault("an emulator worker process died"), []
                for m in dict.fromkeys(msgs):
                    warnings.warn(UninitializedRegisterWarning(m), stacklevel=3)
                if kind == "ok":
                    results.extend(val)
                elif first_err is None:
                    first_err = val
                    for other in children.values():  # stop the rest early
                        if other[0] is not None:
                            try:
                                os.kill(other[0], signal.SIGTERM)
                            except ProcessLookupError:
                                pass
        if first_err is not None:
            raise first_err
        return results
    finally:
        mem.lock = old_lock
        for r, (pid, _) in children.items():
            if pid is not None:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass


def run_dispatch(memory: Memory, config: DispatchConfig, progress=None) -> LaunchStats:
    """Run ``config``'s grid on ``memory``; returns the launch's :class:`LaunchStats`.

    ``progress``, if given, is called with the number of workgroups done so far (after each
    batch; from the parent process, a few times a second, when batches run in workers).

    Raises an :class:`~.errors.EmulatorFault` subclass when a checker fires.
    """
    import time
    t0 = time.perf_counter()
    cfg = config
    _validate(cfg)
    run = _Run(memory, cfg)
    gx, gy, gz = (int(v) for v in cfg.grid)
    wgs = [(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
    if cfg.trace is not None and getattr(cfg.trace, "only", False):
        keep = cfg.trace.selected()  # a timing-only launch: just the traced workgroups
        wgs = [w for i, w in enumerate(wgs) if i in keep]
    if cfg.workgroups is not None:
        wgs = [w for w in wgs if w in cfg.workgroups]
    wpg = run.waves_per_wg
    total_waves = len(wgs) * wpg
    workers = _workers() if total_waves >= PARALLEL_MIN_WAVES else 1
    bw = default_batch_waves(cfg, wpg, total_waves, workers)
    per_batch = max(1, bw // wpg)
    chunks = [wgs[i:i + per_batch] for i in range(0, len(wgs), per_batch)]
    total = LaunchStats()

    def work(chunk):
        with np.errstate(all="ignore"):
            b = Batch(run, chunk)
            b.execute()
            r = b.collect()
        if done is not None:  # progress: workgroups done, shared with forked workers
            with done.get_lock():
                done.value += len(chunk)
            if nprocs <= 1:
                progress(done.value)
        return r

    nprocs = min(workers, len(chunks))
    done = None if progress is None else __import__("multiprocessing").get_context("fork").Value("q", 0)
    if nprocs <= 1:
        results = [work(c) for c in chunks]
    else:
        results = _run_forked(run, chunks, nprocs, work, None if done is None else lambda: progress(done.value))
    for r in results:
        if r is not None:
            total.merge(r)
    total.wall_seconds = time.perf_counter() - t0
    return total
