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
operands pre-resolved (both kept for later launches of the same code image: see
"The program cache" below), by the builder its mnemonic registers in
:mod:`.semantics` (one module per instruction family: ``valu``, ``salu``,
``control``, ``memory``, ``smem``, ``ds``, ...; this module keeps the wave state,
scheduling, operand access and checking machinery only).  The checkers (waitcnt, uninitialised reads, register
ranges, memory bounds, LDS bounds, instruction budget) cost a set test per
instruction in the common case.

The program cache
-----------------
Decoding and compiling a kernel's instructions costs about as much as running a small
launch, and the same code object is launched again and again (a plan's kernels, a
kernel on several inputs, every batch of a big launch).  :func:`program` keeps, per code
image (its bytes) and target, the decoded instructions and, per *compile key*
(:func:`compile_key`: the launch configuration minus what changes from launch to launch:
grid, kernarg segment, dispatch packet, queue, trace request, workgroup selection,
instruction budget, batch size), a snapshot of each compiled instruction: shared by the
batches of a launch, and kept for later launches from the image's second launch on (the
last :data:`PROGRAM_CACHE_SIZE` images).  A batch takes a fresh copy of the snapshot
(:meth:`Prepared.fresh`: its own counters; the closure shared, as it takes the batch and
the group as arguments and binds only the instruction and the compile key's fields);
an instruction whose closure depends on the MODE register at the time is specialized
again for the batch (:func:`.semantics.float_mode.specialize`).  Instructions compiled
into a fault (unsupported, out-of-range registers) are not kept: the fault object is
located once, for one launch.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from collections import Counter, OrderedDict
from dataclasses import dataclass, field

import numpy as np

from vlpc.gc_pause import paused_gc
from vlpc.targets import GFX906

from . import isa
from . import ops as O
from . import semantics
from .semantics import float_mode as _float_mode
from .decode import Decoder, Instr, Operand
from .errors import (EmulatorFault, EmulatorFindingWarning, MisalignedRegisterTuple,
                     RegisterRangeError, RunawayKernel, UninitializedRegisterRead,
                     UninitializedRegisterWarning, UnsupportedInstruction, WaitcntViolation)
from .memory import Memory

# The state the semantics share with the core (constants, control codes, operand readers and
# writers, the LDS bank model) is .state's; re-exported here for the core's other users.
from .state import (F32, F64, I32, I64, PRIVATE_APERTURE_BASE, SHARED_APERTURE_BASE, TARGET, U32,  # noqa: F401
                    U64, WAVE, _BARRIER, _END, _SPLIT, _Unsupported, lds_bank_cycles, ssrc_reader, swriter,
                    vsrc_reader, vwriter)

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
    #: the mode of each check whose outcome the hardware defines, ``{"waitcnt" | "lds_range" |
    #: "buffer_range": "raise" | "report"}``; missing entries take semantics/findings.py's
    #: defaults (``waitcnt`` above for "waitcnt")
    checks: dict | None = None
    #: private segment (scratch) bytes per work-item (the code object's
    #: ``.amdhsa_private_segment_fixed_size``): each wave gets 64 x this many bytes of device
    #: memory, addressed through the private segment buffer / flat scratch SGPRs
    private_segment_size: int = 0
    #: the processor the code is for (``gfx906``, ``gfx900``): instructions it lacks are refused by name
    target: str = "gfx906"
    #: A :class:`vlpc.runtime.timing.trace.TraceRequest`: record instruction streams and
    #: memory lines of some workgroups for the timing model (``None``: no trace).
    trace: object = None


#: Entries of the scalar register file array (operand codes 0..127: SGPRs, VCC, TTMPs, M0, EXEC).
SCALAR_FILE = 128

#: The classes ``LaunchStats.by_class`` counts: the ISA table's (vlpc.isa.classes).
CLASSES = isa.EXECUTION_CLASSES


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
    * ``code_id``: a digest of the code image the launch ran (``by_pc``'s offsets are offsets
      in it); :meth:`merge` refuses statistics of another code image.
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
    #: Digest of the code image run (:func:`code_id`); None for a chunk of a launch not yet merged.
    code_id: str | None = field(default=None, repr=False)

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
        """Add ``o``'s counters to these: chunks of one launch, or the launches of one plan (its
        kernels share one code object, so their ``by_pc`` offsets are distinct).  Statistics of
        launches from different code images are refused (ValueError): ``by_pc`` is keyed by the
        byte offset in the code image, and the same offset in another image is another
        instruction whose counts would be added to this one's silently.  No vlpc path merges
        them (a plan runs from one code object, :meth:`vlpc.kernel.CompiledKernel.execute`)."""
        if (self.code_id is not None and o.code_id is not None and self.code_id != o.code_id
                and (self.by_pc or o.by_pc)):
            raise ValueError("LaunchStats.merge: the two launches ran different code objects (code images "
                             f"{self.code_id} and {o.code_id}); by_pc is keyed by the byte offset in one code "
                             "image, so their rows would collide: keep each code object's statistics apart "
                             "(e.g. price each launch with launch_energy and add them with combine_energy)")
        if self.code_id is None:
            self.code_id = o.code_id
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


# ---------------------------------------------------------------------------
# compiled instruction

class Prepared:
    """A compiled instruction (its closure ``fn(batch, group)`` and operand keys) and the
    counters of its executions in one batch (``waves``, ``lanes``, ``fwd``)."""

    __slots__ = ("ins", "fn", "next_pc", "cls", "rkeys", "wkeys", "keys", "load_kind",
                 "nvr", "nvw", "nsr", "nsw", "vsrc", "vdst", "valu", "waves", "lanes", "fwd",
                 "text", "modal")

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
        #: ``(fast, checking)`` closures when ``fn`` depends on the batch's MODE register
        #: (:func:`.semantics.float_mode.specialize`), else None
        self.modal = None

    def fresh(self) -> "Prepared":
        """A copy with its counters at zero, sharing the compiled closure and operand keys."""
        q = Prepared.__new__(Prepared)
        for name in _STATIC_SLOTS:
            setattr(q, name, getattr(self, name))
        q.waves = q.lanes = q.fwd = 0
        return q


#: the slots of a :class:`Prepared` that :meth:`Prepared.fresh` shares (all but the counters)
_STATIC_SLOTS = tuple(n for n in Prepared.__slots__ if n not in ("waves", "lanes", "fwd"))


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
    """The execution class of a decoded instruction: the ISA table's (:func:`vlpc.isa.classes.execution_class`)."""
    return isa.execution_class(ins.mnemonic)


# ---------------------------------------------------------------------------
# the batch (state of many waves) and its executor

class Batch:
    def __init__(self, run: "_Run", wg_list: list[tuple[int, int, int]], scratch_base: int = 0):
        cfg = run.cfg
        self.run = run
        #: device address of this batch's private segment (scratch) memory: wave w owns
        #: [scratch_base + w * scratch_wave_bytes, + scratch_wave_bytes); 0: none
        self.scratch_base = int(scratch_base)
        self.scratch_wave_bytes = scratch_wave_bytes(cfg)
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
            put(private_segment_buffer(self.scratch_base), 4)
        if cfg.user_sgpr_dispatch_ptr:
            put64(cfg.dispatch_ptr)
        if cfg.user_sgpr_queue_ptr:
            put64(cfg.queue_ptr)
        if cfg.user_sgpr_kernarg_segment_ptr:
            put64(cfg.kernarg_address)
        if cfg.user_sgpr_dispatch_id:
            put64(0)
        if cfg.user_sgpr_flat_scratch_init:  # gfx9: the scratch base; the kernel adds its wave offset
            put64(self.scratch_base)
        if cfg.user_sgpr_private_segment_size:
            put([int(cfg.private_segment_size)], 1)
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
            S[i] = (np.arange(self.nw, dtype=np.int64) * self.scratch_wave_bytes).astype(U32)
            SI[i] = True
            i += 1
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

    def write_exec(self, g: Group, bits):
        """EXEC := ``bits`` (uint64 lane masks, one per wave of ``g``), lane masks included."""
        lo, hi = O.split64(bits)
        self.S[isa.EXEC_LO][g.sel] = lo
        self.S[isa.EXEC_HI][g.sel] = hi
        self.refresh_exec(g)

    def write_compare(self, g: Group, wr, res, lanes, to_exec: bool):
        """A VOPC result: the per-lane booleans ``res`` (broadcastable to (n, 64)) of the
        ``lanes`` to write (EXEC, or a DPP form's write mask) as 64-bit masks through the
        SDST writer ``wr``, and to EXEC as well when ``to_exec`` (``v_cmpx_*``)."""
        bits = O.bits_of(np.broadcast_to(res, (g.n, WAVE)) & lanes)
        wr(self, g, bits)
        if to_exec:
            self.write_exec(g, bits)

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

    def exec64(self, g: Group) -> np.ndarray:
        return O.u64_of(self.S[isa.EXEC_LO][g.sel], self.S[isa.EXEC_HI][g.sel])

    def wave_of(self, g: Group, k: int = 0) -> tuple:
        w = int(g.idx[k])
        return (self.wgs[self.wg_of_wave[w]], int(self.wave_in_wg[w]))

    # -- preparation -------------------------------------------------------------------

    def prepare(self, pc: int) -> Prepared:
        """The batch's prepared instruction at ``pc``: a fresh copy of the program cache's
        snapshot, or compiled now (and a snapshot kept unless it compiled into a fault)."""
        kept = self.run.compiled.get(pc)
        if kept is None:
            p = compile_instr(self.run.decoder(pc), self)
            if getattr(p.fn, "fault", None) is None:
                self.run.compiled[pc] = p.fresh()
        else:
            p = kept.fresh()
            if p.modal is not None:
                p.fn = _float_mode.specialize(self, p, *p.modal)
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
    fn.fault = exc  # (never kept in the program cache: the fault is located for one launch)
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
        builder = semantics.builder_for(ins)
        fn = builder(ins, b, p) if builder else None
    except _Unsupported as e:
        fn = _raise(UnsupportedInstruction(f"{ins.mnemonic}: {e}", mnemonic=ins.mnemonic))
    if fn is None:
        fn = _raise(UnsupportedInstruction(f"{ins.mnemonic} has no semantics in the emulator",
                                           mnemonic=ins.mnemonic))
    # implicit SCC operands from the one table (isa.SCC_WRITERS / SCC_READERS), after the
    # builder so no builder's own key bookkeeping can drop them
    if ins.mnemonic in isa.SCC_READERS:
        p.rkeys = p.rkeys | {isa.SCC}
    if ins.mnemonic in isa.SCC_WRITERS:
        p.wkeys = p.wkeys | {isa.SCC}
    p.keys = p.rkeys | p.wkeys
    p.fn = fn
    return p


# ---------------------------------------------------------------------------
# private segment (scratch)

def scratch_wave_bytes(cfg: DispatchConfig) -> int:
    """Scratch bytes per wave: 64 lanes x the private segment size, in 1 KiB granules (the
    SPI allocates scratch per wave in units of 256 dwords: AMDGPUUsage, COMPUTE_TMPRING_SIZE
    WAVESIZE)."""
    n = WAVE * max(0, int(cfg.private_segment_size))
    return -(-n // 1024) * 1024


def private_segment_buffer(base: int) -> list[int]:
    """The private segment buffer V# (4 SGPRs) the HSA runtime gives a gfx9 wave: the scratch
    base, swizzled (SWIZZLE_ENABLE), stride 0, ADD_TID_ENABLE, INDEX_STRIDE 64 (AMDGPUUsage,
    "Private Segment Buffer"; LLVM SIInstrInfo::getScratchRsrcWords23); num_records is not
    checked for this (ADD_TID, no idxen) form.  ``base`` 0: the all-zero descriptor of a
    kernel without scratch."""
    if not base:
        return [0, 0, 0, 0]
    w1 = ((base >> 32) & 0xFFFF) | (1 << 31)
    w3 = (4 << 15) | (3 << 21) | (1 << 23)  # DATA_FORMAT 32, INDEX_STRIDE 64, ADD_TID_ENABLE
    return [base & 0xFFFFFFFF, w1, 0xFFFFFFFF, w3]


# ---------------------------------------------------------------------------
# dispatch

#: code images whose decoded and compiled instructions :func:`program` keeps (the least
#: recently launched is dropped first), each from its second launch on.  A kept image holds
#: ~100k small objects (closures and their cells) that the garbage collector walks, so a kernel
#: launched once (most of the test suite's) is not kept and only the few launched last are: a
#: repeated ``vlpc.run`` of a 64x256x64 SGEMM takes 100 instead of 205 ms CPU (measured)
PROGRAM_CACHE_SIZE = 4
#: code images launched once (digests of their bytes and target) that :func:`program` remembers
#: to keep the image at its next launch
SEEN_SIZE = 64

#: the DispatchConfig fields that change from launch to launch of one kernel and that no
#: instruction builder reads (the closures read them from the batch when they run)
_PER_LAUNCH = frozenset({"code", "grid", "kernarg_address", "dispatch_ptr", "queue_ptr", "trace",
                         "workgroups", "instruction_budget", "max_waves_in_flight"})


class Program:
    """One code image's instructions for one target: the :class:`~.decode.Decoder` (its
    decoded instructions) and, per :func:`compile_key`, ``{pc: Prepared}`` snapshots of the
    compiled ones (see the module docstring, "The program cache")."""

    __slots__ = ("decoder", "compiled")

    def __init__(self, code: bytes, target: str):
        self.decoder = Decoder(code, target)
        self.compiled: dict = {}


_PROGRAMS: OrderedDict = OrderedDict()
_SEEN: OrderedDict = OrderedDict()
_PROGRAMS_LOCK = threading.Lock()


def compile_key(cfg: DispatchConfig) -> tuple:
    """The launch configuration an instruction's compiled closure may depend on: every
    :class:`DispatchConfig` field but the per-launch ones (:data:`_PER_LAUNCH`), e.g. the
    code address (``s_getpc_b64``), VGPR/SGPR counts (register range checks), LDS size, MODE
    (float-mode specialization), strictness and check modes."""
    out = []
    for name in DispatchConfig.__dataclass_fields__:
        if name not in _PER_LAUNCH:
            v = getattr(cfg, name)
            if isinstance(v, dict):
                v = tuple(sorted(v.items()))
            elif isinstance(v, list):
                v = tuple(v)
            out.append(v)
    return tuple(out)


def program(code: bytes, target: str) -> Program:
    """The :class:`Program` of ``code`` (the image's bytes) for ``target``: the kept one, else a
    new one, which is kept when the image was launched before (:data:`SEEN_SIZE` images are
    remembered; the batches of one launch share its program whether kept or not)."""
    key = (bytes(code), target)
    with _PROGRAMS_LOCK:
        prog = _PROGRAMS.get(key)
        if prog is not None:
            _PROGRAMS.move_to_end(key)
            return prog
        prog = Program(key[0], target)
        if PROGRAM_CACHE_SIZE <= 0:
            return prog
        seen = (code_id(key[0]), len(key[0]), target)
        if _SEEN.pop(seen, None) is not None:  # its second launch: keep it
            _PROGRAMS[key] = prog
            while len(_PROGRAMS) > PROGRAM_CACHE_SIZE:
                _PROGRAMS.popitem(last=False)
        else:
            _SEEN[seen] = True
            while len(_SEEN) > SEEN_SIZE:
                _SEEN.popitem(last=False)
        return prog


def clear_program_cache() -> None:
    """Forget every kept :class:`Program` (decoded and compiled instructions) and every image
    launched once."""
    with _PROGRAMS_LOCK:
        _PROGRAMS.clear()
        _SEEN.clear()


class _Run:
    def __init__(self, mem: Memory, cfg: DispatchConfig):
        self.mem = mem
        self.cfg = cfg
        prog = program(cfg.code, cfg.target)
        self.decoder = prog.decoder
        #: ``{pc: Prepared}`` snapshots shared with other launches of this compile key
        key = compile_key(cfg)
        with _PROGRAMS_LOCK:
            self.compiled = prog.compiled.pop(key, None) or {}
            prog.compiled[key] = self.compiled  # (the most recent last)
            while len(prog.compiled) > PROGRAM_CACHE_SIZE:
                del prog.compiled[next(iter(prog.compiled))]
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
                    msgs = [(x.category, str(x.message), getattr(x.message, "ident", None)) for x in wl
                            if issubclass(x.category, (UninitializedRegisterWarning, EmulatorFindingWarning))]
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
        seen: set = set()
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
                for cat, m, ident in dict.fromkeys(msgs):
                    if ident is not None:  # a finding: once per kernel, pc and key over all workers
                        if ident in seen:
                            continue
                        seen.add(ident)
                    warnings.warn(cat(m), stacklevel=3)
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


def _gc_paused():
    """The cyclic garbage collector off while a batch runs (restored after): compiling and
    running instructions allocates many small containers (:func:`vlpc.gc_pause.paused_gc`)."""
    return paused_gc()


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
        with np.errstate(all="ignore"), _gc_paused():
            b = Batch(run, chunk, scratch_of.get(id(chunk), 0))
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
    # scratch: one region per batch running at a time (worker k runs chunks k, k + nprocs, ...)
    per_wave = scratch_wave_bytes(cfg)
    slots, scratch_of = [], {}
    try:
        if per_wave:
            slot_bytes = per_wave * per_batch * wpg
            slots = [memory.alloc(slot_bytes, align=1024, tag=f"private segment (scratch) of {cfg.kernel_name}")
                     for _ in range(max(1, nprocs))]
            scratch_of = {id(c): slots[i % len(slots)] for i, c in enumerate(chunks)}
        if nprocs <= 1:
            results = [work(c) for c in chunks]
        else:
            results = _run_forked(run, chunks, nprocs, work, None if done is None else lambda: progress(done.value))
    finally:
        for a in slots:
            memory.free(a)
    results = [r for r in results if r is not None]
    if len(results) == 1:  # one batch: its statistics are the launch's (no copy of every by_pc row)
        total = results[0]
    else:
        for r in results:
            total.merge(r)
    total.code_id = code_id(cfg.code)
    total.wall_seconds = time.perf_counter() - t0
    return total


def code_id(code) -> str:
    """A short digest of a code image's bytes (:attr:`LaunchStats.code_id`): launches of the same
    code object have the same one."""
    import hashlib

    return hashlib.blake2b(bytes(code), digest_size=8).hexdigest()
