"""A cycle-approximate model of one gfx906 compute unit replaying traced waves.

What it models (parameters in :class:`vlpc.targets.TimingParams`, sources there):

* **Issue.**  4 SIMD16 units; the CU's arbiter gives SIMD ``t mod 4`` the issue turn
  at cycle ``t`` (each SIMD a turn every 4 cycles).  In its turn a SIMD issues at
  most one instruction of each category — VALU, scalar (SALU or SMEM), VMEM, LDS,
  branch, internal (``s_waitcnt``, ``s_nop``, ``s_barrier``, ``s_endpgm``) — each
  from a different wave (AMD GCN whitepaper); the wave considered first rotates
  every turn (fair sharing: with strict oldest-first priority the seed's measured
  dips, e.g. M = N = 1792 below 1536, do not appear, because co-resident
  workgroups would finish one after another instead of together).  A wave issues
  in order, at most one instruction per turn; an 8-byte instruction may cost
  ``long_instruction_extra_cycles`` more before the wave's next issue (CLRX),
  a taken branch ``branch_taken_extra_cycles``.
* **VALU.**  A wave64 VALU instruction occupies its SIMD for its issue cycles in the
  ISA table (:func:`vlpc.isa.issue_cycles`: 4 at full rate; 8 for half-rate
  ``v_mul_lo/hi_u32``, ``v_swap_b32`` and gfx906's f64; 16 for transcendentals; gfx900's
  f64 64).
* **Counters.**  ``s_waitcnt`` holds the wave until its outstanding VMEM (vmcnt, in
  order) and SMEM/LDS (lgkmcnt) operations have completed down to the thresholds.
* **Scalar memory.**  A scalar cache (LRU, 64-byte lines, ``scalar_cache_bytes``
  shared by ``cus_per_scalar_cache`` CUs: this CU's share) hits in
  ``smem_hit_cycles``; a miss goes to L2.  Results may return out of order.  A hit
  on a line whose fill is outstanding returns with that fill (hit-on-miss), so one
  wave's L2 (or HBM) latency is also seen by the waves that ask for the line after it.
* **Vector memory.**  Per instruction, the texture/L1 path handles one 64-byte line
  per cycle (``l1_bytes_per_cycle``); lines hit an LRU L1 (``l1_bytes``) or go to L2.
* **L2 by address** (``l2_miss_rule = "address"``).  A set-associative LRU simulation
  (``l2_ways`` ways, the set index hashed as the L2's channel hash: :class:`_SetAssoc`)
  of this CU's share of the L2 (``l2_bytes`` / busy CUs x their
  overlap, :func:`_line_sharers`: the others fill the rest at the same rate, a line
  several CUs read in one slot) holds the lines this CU brought in: reused data hits.
  A line it does not hold is a miss for a line no other workgroup of the first round
  touches (streamed data, or one evicted); a line ``n`` first-round workgroups share
  (their footprints), ``own`` of them on this CU, is fetched by this CU for ``own / n``
  of the lines and copies and waits for a sharer's fill otherwise (hit-on-miss).
* **HBM.**  A miss adds the HBM latency (ns) and queues on this CU's share of the HBM
  bandwidth (pin rate x ``hbm_refresh_fraction`` lost x ``hbm_bus_efficiency``, shared
  by the busy CUs); each DRAM page (``hbm_page_bytes``) one instruction's misses open
  costs ``hbm_activate_ns`` of one of the ``hbm_channels`` channels: a wave's
  ``global_load_dword`` (4 lines) opens a page per 256 bytes, a ``global_load_dwordx4``
  (16 lines) one per kilobyte (a 1 KiB pseudo-channel page), so narrow loads stream slower
  and no pattern streams faster than ``dwordx4``.  Loads return in order.
* **Clock domains.**  The scalar cache, L1 and L2 run on the engine clock (their
  latencies are engine cycles: ROCm Compute Profiler counts L2 and sL1D cycles as
  kernel cycles x units); what lies beyond an L2 miss -- Infinity Fabric (FCLK), memory
  controller and HBM2 (UCLK), DPM domains of their own on Vega 20 (amdgpu
  ``vega20_print_clk_levels``: ``PP_FCLK``, ``PP_SOCCLK``, ``PP_MCLK`` beside ``PP_SCLK``) -- is fixed
  in time (``hbm_latency_ns``).  A line another CU's workgroup is fetching for the same
  round (``l2_shared_fill``) costs this CU that fixed time as well.
* **LDS.**  One LDS pipeline per CU (128 bytes per clock) busy for each instruction's
  cycles as the emulator records them (``core.lds_bank_cycles``: 32-dword passes per
  address set, a pass as long as its worst bank conflict; a conflict-free access of W
  dwords per lane 2W cycles), plus ``lds_latency_cycles``.
* **Barriers.**  ``s_barrier`` releases a workgroup's waves when all have arrived.

The result (:class:`CuResult`) gives each workgroup's finish cycle and where each
SIMD's cycles went: ``valu`` (busy), ``smem``/``vmem``/``lds`` (no VALU could
issue because the waves wait on that counter), ``barrier``, ``issue`` (waves
ready but issuing other instructions or paying dispatch penalties), ``idle``
(no wave left on the SIMD).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from vlpc.isa import issue_cycles
from vlpc.isa.classes import category_of
from vlpc.targets import Board

from .trace import KernelTrace, sorted_unique

REASONS = ("valu", "smem", "vmem", "lds", "barrier", "issue", "idle")

_INF = float("inf")


@lru_cache(maxsize=None)
def valu_issue_cycles(mnemonic: str, target: str) -> int:
    """Issue cycles of VALU ``mnemonic`` on processor ``target`` (a name: ``gfx906``), the ISA
    table's; 4 for a mnemonic the table does not know (the emulator only runs instructions
    it decodes from the table)."""
    try:
        return issue_cycles(mnemonic, target)
    except KeyError:
        return 4


@dataclass
class CuResult:
    """One CU simulation.  ``cycles``: engine cycles until the last wave ended;
    ``wg_finish``: cycle each resident workgroup finished, in placement order;
    ``breakdown``: cycles per reason summed over the 4 SIMDs (divide by 4 for a
    per-SIMD view); ``counters``: cache and memory event counts."""

    cycles: float
    wg_finish: list[float]
    breakdown: dict[str, float]
    counters: dict[str, float] = field(default_factory=dict)
    instructions: int = 0
    #: Engine cycles this CU's share of the HBM was busy serving its misses (lines and page
    #: activations): no stretch of the run moves its bytes faster than that share serves them.
    hbm_busy_cycles: float = 0.0


class _Lru:
    __slots__ = ("cap", "d")

    def __init__(self, lines: int):
        self.cap = max(1, int(lines))
        self.d: OrderedDict = OrderedDict()

    def access(self, line: int) -> bool:
        d = self.d
        if line in d:
            d.move_to_end(line)
            return True
        d[line] = None
        if len(d) > self.cap:
            d.popitem(last=False)
        return False


class _SetAssoc:
    """A set-associative LRU cache of lines: ``sets`` sets (each an :class:`_Lru` of ``ways``
    lines).  The set index is hashed as the L2 hashes addresses over its channels (ROCm Compute
    Profiler, "L2 cache (TCC)": requests are mapped to channels at a 256 B address interleave "by
    a hashing mechanism that attempts to evenly distribute requests across the L2 channels"):
    consecutive lines still take consecutive sets (every block of ``sets`` consecutive lines
    fills each set once), and each such block starts at a set given by a hash of its upper
    address bits (:func:`l2_set_index`).  So lines a power of two apart (the rows of a matrix
    whose leading dimension is a power of two) spread over the sets instead of aliasing into
    the few a plain ``line mod sets`` index gives them."""
    __slots__ = ("sets", "ways", "d")

    def __init__(self, lines: int, ways: int):
        self.ways = max(1, int(ways))
        self.sets = max(1, int(lines) // self.ways)
        self.d: dict[int, _Lru] = {}

    def access(self, line: int) -> bool:
        """True on a hit; on a miss the line is filled (evicting the set's LRU line)."""
        k = l2_set_index(line, self.sets)
        st = self.d.get(k)
        if st is None:
            st = self.d[k] = _Lru(self.ways)
        return st.access(line)


def l2_set_index(line: int, sets: int) -> int:
    """The set of ``line`` (a 64-byte line number) in a cache of ``sets`` sets: the line's
    offset within its block of ``sets`` consecutive lines, rotated by a multiplicative
    (Fibonacci) hash of the block number, so that a block's lines cover every set once and
    blocks a power of two apart start at unrelated sets (:class:`_SetAssoc`)."""
    block, low = divmod(line, sets)
    return (low + (((block * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF) >> 32)) % sets


_SHARER_CACHE: dict[tuple, tuple[object, dict[int, tuple[int, int]], float]] = {}


def _line_sharers(trace: KernelTrace, cus: int) -> tuple[dict[int, tuple[int, int]], float]:
    """``(sharers, overlap)`` from the trace's footprints (the first round of workgroups).
    ``sharers``: line -> (workgroups of the first round touching it, of those on this CU)
    for the traced workgroups' lines.  Breadth-first dispatch puts workgroup ``w`` on CU
    ``w mod cus``; the traced ones (CU 0's) are ``0, C, 2C, ...``.  ``overlap``: the sum
    over CUs of the lines each touches over the lines all touch (>= 1; a line several CUs
    read takes one L2 slot, so each CU's share of the L2 holds ``overlap`` times the
    lines of an even split).  Cached per footprint and CU count."""
    fp = trace.footprint
    key = (id(fp), cus)
    hit = _SHARER_CACHE.get(key)
    if hit is not None and hit[0] is fp:
        return hit[1], hit[2]
    out: dict[int, tuple[int, int]] = {}
    overlap = 1.0
    if fp:
        wgs = sorted(fp)
        ncu = max(1, cus)
        bits = max(1, (ncu - 1).bit_length())
        lines = np.concatenate([np.asarray(fp[w], dtype=np.int64) for w in wgs])
        cu = np.concatenate([np.full(len(fp[w]), w % ncu, dtype=np.int64) for w in wgs])
        if lines.size and (int(lines.min()) < 0 or int(lines.max()) >= 1 << (62 - bits)):
            raise ValueError("timing model: a footprint line beyond the 62-bit key range")
        # one sort of (line, CU) keys gives the distinct lines, each line's sharers (its run
        # length: a workgroup's footprint holds a line once) and those on this CU (CU 0), and
        # the distinct (CU, line) pairs
        keys = np.sort((lines << bits) | cu)
        line_of = keys >> bits
        new_line = np.empty(keys.size, dtype=bool)
        new_line[:1] = True
        np.not_equal(line_of[1:], line_of[:-1], out=new_line[1:])
        starts = np.flatnonzero(new_line)
        uniq = line_of[starts]
        count = np.diff(np.append(starts, keys.size))
        mine = (keys & ((1 << bits) - 1)) == 0
        own = np.add.reduceat(mine.astype(np.int64), starts) if starts.size else starts
        per_cu = int(np.count_nonzero(keys[1:] != keys[:-1])) + 1 if keys.size else 0
        overlap = max(1.0, per_cu / max(1, uniq.size))
        traced = [np.asarray(fp[w], dtype=np.int64) for w in trace.traced if w in fp]
        want = sorted_unique(np.concatenate(traced)) if traced else np.zeros(0, np.int64)
        pos = np.searchsorted(uniq, want)  # the traced lines are among the footprints' lines
        out = dict(zip(uniq[pos].tolist(), zip(count[pos].tolist(), own[pos].tolist())))
    if len(_SHARER_CACHE) > 8:
        _SHARER_CACHE.clear()
    _SHARER_CACHE[key] = (fp, out, overlap)
    return out, overlap


def _l2_misses(line: int, p_miss: float) -> bool:
    """Deterministic per-line L2 miss decision with probability ``p_miss``."""
    if p_miss <= 0.0:
        return False
    if p_miss >= 1.0:
        return True
    h = (line * 2654435761 + 0x9E3779B9) & 0xFFFFFFFF
    return h < p_miss * 4294967296.0


_GOLDEN = 0.6180339887498949
_GROUP_CACHE: dict[int, tuple[object, dict[int, int]]] = {}


def _group_draw(group: int, copy: int) -> float:
    """A uniform number in [0, 1) for one sharing group of one workgroup copy: a hash of
    the group plus ``copy`` times the golden ratio (mod 1), so that over the copies a
    CU runs the fraction of groups drawn below ``p`` is close to ``p`` (a
    low-discrepancy sequence) rather than a binomial sample."""
    h = ((group * 2654435761 + 0x9E3779B9) & 0xFFFFFFFF) / 4294967296.0
    return (h + copy * _GOLDEN) % 1.0


def _sharing_groups(trace: KernelTrace) -> dict[int, int]:
    """Line -> sharing group of the traced workgroups' lines: lines touched by the same
    workgroups of the first round (the trace's footprints) form one group (in a tiled
    GEMM: a workgroup's A panel, shared along its tile row, and its B panel, shared along
    its tile column).  A group is keyed by its first sharer's linear id and its sharer
    count.  Cached per footprint (the calibration reuses one trace at many grids)."""
    fp = trace.footprint
    hit = _GROUP_CACHE.get(id(fp))
    if hit is not None and hit[0] is fp:
        return hit[1]
    out: dict[int, int] = {}
    if fp:
        wgs = sorted(fp)
        lines = np.concatenate([np.asarray(fp[w], dtype=np.int64) for w in wgs])
        ids = np.concatenate([np.full(len(fp[w]), w, dtype=np.int64) for w in wgs])
        order = np.lexsort((ids, lines))
        lines, ids = lines[order], ids[order]
        uniq, start, count = np.unique(lines, return_index=True, return_counts=True)
        first = ids[start]
        key = dict(zip(uniq.tolist(), (first * 1_000_003 + count).tolist()))
        for w in trace.traced:
            if w in fp:
                for line in np.asarray(fp[w]).tolist():
                    out[line] = key[line]
    if len(_GROUP_CACHE) > 8:
        _GROUP_CACHE.clear()
    _GROUP_CACHE[id(fp)] = (fp, out)
    return out


def simulate_cu(trace: KernelTrace, workgroups: list[int], board: Board, *, recorder=None,
                resident: int | None = None, l2_miss: float = 0.0,
                hbm_share_bytes_per_cycle: float | None = None, sqc_sharers: int = 1,
                l2_shared_fill: float = 0.0, active_cus: int = 1, l2_sharers: bool = True) -> CuResult:
    """Run ``workgroups`` (linear ids present in ``trace``; an id may repeat: each
    repetition is a fresh workgroup on distinct addresses) on one CU, at most
    ``resident`` at a time (default: all at once); when one ends the next starts, as
    the dispatcher refills a CU's slot.  ``l2_miss``: probability that a line missing
    L1 / the scalar cache also misses L2.  ``hbm_share_bytes_per_cycle``: this CU's
    share of the HBM bandwidth in bytes per engine cycle (``None``: unlimited).
    ``sqc_sharers``: busy CUs sharing this CU's scalar cache (its capacity and
    bandwidth are split between them).  ``l2_shared_fill``: probability that a line
    this CU finds in L2 (not its own miss) is still being fetched from HBM for a
    sharer on another CU, so that this CU waits for that fill (hit-on-miss); 0 (the
    default): other CUs' fills completed long before.  ``active_cus``: busy CUs (under
    the ``"address"`` L2 rule: this CU's share of the L2 capacity and of the HBM channels,
    and which of a line's sharers are on this CU).  ``l2_sharers``: under ``"address"``,
    find each line's sharers in the trace's footprints (False: the footprints hold CU 0's
    workgroups only, as in a shortcut launch; a line not resident in the L2 simulation
    then misses with probability ``l2_miss``, and the overlap of the CUs' lines is
    taken as ``1 / l2_miss``, the workgroups' lines over the unique ones).

    A cache hit on a line whose fill is still outstanding (scalar cache, L1, or L2 for a
    line this CU requested before) completes when the fill does, not after the hit
    latency (hit-on-miss: AMD's L2 counts it as a hit, ROCm Compute Profiler "L2 cache
    (TCC)"; the data cannot return before it arrives).

    ``recorder``: an optional :class:`~.recorder.IssueRecorder` that receives every issue and
    wait (per-instruction stall accounting for ``vlpc profile``); None (default): the one
    :func:`~.recorder.recording` installs around a :func:`~.gpu.model_kernel` call, if any, else
    none (no cost)."""
    if recorder is None:
        from .recorder import current_recorder
        recorder = current_recorder()
    P = board.timing
    ghz = board.engine_clock_mhz / 1000.0
    hbm_cycles = P.hbm_latency_ns * ghz
    turn = P.issue_turn_cycles
    static = trace.static
    # static facts per pc, in flat tuples for the hot loop
    info = {}
    cat_bits: dict[str, int] = {}
    for pc, s in static.items():
        cat = category_of(s.cls)
        if s.cls == "valu":
            busy = valu_issue_cycles(s.mnemonic, board.target.name)
        else:
            busy = 0
        extra = P.long_instruction_extra_cycles if s.size == 8 else 0.0
        cbit = cat_bits.setdefault(cat, 1 << len(cat_bits))  # the category as a bit (one per turn)
        info[pc] = (cat, s.cls, busy, extra, s.vmcnt, s.lgkmcnt, s.nop, s.store, s.ends, s.size,
                    s.mnemonic, cbit)
    resident = len(workgroups) if resident is None else max(1, int(resident))
    pending_wgs = deque(enumerate(workgroups))
    seen: dict[int, int] = {}
    as_lists: dict = {}

    # per-wave state (lists grow as workgroups start)
    stream: list[list] = []
    memev: list[dict] = []
    off: list[int] = []
    simd_of: list[int] = []
    wg_of: list[int] = []
    ptr: list[int] = []
    ready: list[float] = []
    done: list[bool] = []
    vmq: list[deque] = []
    lgkm: list[list] = []
    reason: list[str] = []
    at_barrier: list[bool] = []
    simd_waves: list[list[int]] = [[] for _ in range(4)]
    simd_live = [0, 0, 0, 0]
    wg_waves: list[list[int]] = []
    wg_left: list[int] = []
    wg_finish: list[float] = [0.0] * len(workgroups)
    first_set: list[bool] = [False] * len(workgroups)  # started at cycle 0 (in phase)

    def start_wg(now: float) -> None:
        j, wg = pending_wgs.popleft()
        first_set[j] = now == 0.0
        copy = seen.get(wg, 0)
        seen[wg] = copy + 1
        ids = []
        for key in trace.waves_of(wg):
            s_ = min(range(4), key=lambda i: (simd_live[i], i))
            w = len(stream)
            got = as_lists.get(key)
            if got is None:  # a wave's stream and lines as Python lists, once per traced wave
                got = as_lists[key] = (trace.streams[key].tolist(),
                                       {i: (ev[0].tolist(), ev[1]) for i, ev in trace.mem.get(key, {}).items()})
            stream.append(got[0])
            memev.append(got[1])
            off.append(copy << 36)
            simd_of.append(s_)
            wg_of.append(j)
            ptr.append(0)
            ready.append(now)
            done.append(False)
            vmq.append(deque())
            lgkm.append([])
            reason.append("issue")
            at_barrier.append(False)
            simd_waves[s_].append(w)
            simd_live[s_] += 1
            ids.append(w)
            if recorder is not None:
                recorder.start(w, now, s_, j, key, turn)
        while len(wg_waves) <= j:
            wg_waves.append([])
            wg_left.append(0)
        wg_waves[j] = ids
        wg_left[j] = len(ids)

    for _ in range(min(resident, len(pending_wgs))):
        start_wg(0.0)
    valu_free = [0.0] * 4
    rr = [0, 0, 0, 0]  # round-robin start per SIMD
    ta_free = 0.0
    fill_free = 0.0
    lds_free = 0.0
    hbm_free = 0.0
    smem_free = 0.0
    sharers = max(1, int(sqc_sharers))
    l1 = _Lru(P.l1_bytes // P.line_bytes)
    sc = _Lru(P.scalar_cache_bytes // sharers // P.line_bytes)
    smem_cycles_per_line = P.line_bytes / P.scalar_bytes_per_cycle * sharers
    line_cycles = P.line_bytes / P.l1_bytes_per_cycle
    hbm_per_line = (P.line_bytes / hbm_share_bytes_per_cycle) if hbm_share_bytes_per_cycle else 0.0
    # a DRAM page (row) activation the channel's other banks do not hide, in this CU's
    # share of the channels' time (the whole GPU's channels serve ``active_cus`` CUs)
    hbm_per_row = (P.hbm_activate_ns * ghz * max(1, active_cus) / P.hbm_channels
                   if hbm_share_bytes_per_cycle else 0.0)
    row_shift = max(0, int(P.hbm_page_bytes // P.line_bytes).bit_length() - 1)
    rows_open: set = set()  # DRAM pages opened by the instruction being issued
    cnt = {"l1_hits": 0, "l1_misses": 0, "scalar_hits": 0, "scalar_misses": 0, "l2_misses": 0,
           "l2_shared_fills": 0, "hbm_bytes": 0, "hbm_activations": 0, "vmem_instructions": 0, "smem_instructions": 0,
           "lds_instructions": 0}
    # completion time of each line's fill, per cache (hit-on-miss waits for it)
    sc_ready: dict[int, float] = {}
    l1_ready: dict[int, float] = {}
    l2_ready: dict[int, float] = {}
    group_rule = P.l2_miss_rule == "group"
    address_rule = P.l2_miss_rule == "address"
    if P.l2_miss_rule not in ("line", "group", "address"):
        raise ValueError(f"TimingParams.l2_miss_rule must be 'address', 'line' or 'group', "
                         f"not {P.l2_miss_rule!r}")
    groups = _sharing_groups(trace) if group_rule else {}
    sharers, overlap = (_line_sharers(trace, max(1, active_cus)) if address_rule and l2_sharers
                        else ({}, 1.0 / max(l2_miss, 1e-9) if address_rule else 1.0))
    # this CU's share of the L2: the other busy CUs fill the rest at the same rate, the lines
    # they share with this CU counted once (overlap)
    l2 = _SetAssoc(int(P.l2_bytes // P.line_bytes * min(1.0, overlap / max(1, active_cus))), P.l2_ways)
    bd = dict.fromkeys(REASONS, 0.0)
    live = len(stream)
    t = 0.0
    last_issue = 0.0
    issued_total = 0

    def l2_path(line: int, now: float, in_phase: bool) -> float:
        """Cycles from ``now`` until ``line`` is back from L2 (or from HBM through it).
        Under ``TimingParams.l2_miss_rule == "address"`` (the default) the line is looked
        up in a set-associative LRU simulation of this CU's share of the L2; a line it does
        not hold is fetched from HBM by this CU when no other workgroup of the first round
        touches it (streamed data) or when it was evicted, else by whichever of its
        sharers asks first (this CU with probability own / sharers, per line and
        workgroup copy), the others waiting for that fill (``l2_shared_fill``).
        Under ``"line"`` each line draws
        miss and shared fill on its own, in every round.  Under ``"group"``, whether this CU
        fetches the line from HBM or a sharer did is decided once per
        sharing group and workgroup copy (:func:`_sharing_groups`), not per line.  A
        sharer's fill is still in flight (``l2_shared_fill``) only for a workgroup of the
        first resident set (``in_phase``: dispatched at the start with the other CUs'
        first residents); a refilled slot starts when its predecessor ends, at a time
        that differs from CU to CU, so its sharers are out of phase and it hits."""
        nonlocal hbm_free
        copy = line >> 36
        if address_rule:
            ready = l2_ready.get(line)
            if l2.access(line):  # resident in this CU's share of the L2 (or on its way)
                return max(P.l2_hit_cycles, (ready or 0.0) - now)
            sh = sharers.get(line - (copy << 36)) if sharers else (0, 0)
            if ready is not None or sh is None:
                # evicted and asked for again, or touched by no workgroup of the first
                # round but this one's (streamed): this CU fetches it
                miss, shared = True, False
            elif sh[0] == 0:  # no footprints recorded: the probability given
                miss = _l2_misses(line, l2_miss)
                shared = not miss and _l2_misses(line * 7 + 3, l2_shared_fill)
            else:
                n, own = sh
                # whichever of the n in-phase sharers asks first fetches it: this CU for
                # own of n (a low-discrepancy draw per line and workgroup copy)
                miss = _group_draw(line - (copy << 36), copy) * n < own
                shared = not miss and _l2_misses(line * 7 + 3, l2_shared_fill)
        else:
            ready = l2_ready.get(line)
            if ready is not None:  # this CU asked for it before: in L2, or still on its way
                return max(P.l2_hit_cycles, ready - now)
            g = groups.get(line - (copy << 36)) if group_rule else None
            if not group_rule:  # the 'line' rule: every line draws on its own
                miss = _l2_misses(line, l2_miss)
                shared = _l2_misses(line * 7 + 3, l2_shared_fill)
            elif g is None:  # not in the footprint: decided per line
                miss = _l2_misses(line, l2_miss)
                shared = in_phase and _l2_misses(line * 7 + 3, l2_shared_fill)
            else:
                miss = _group_draw(g, copy) < l2_miss
                shared = in_phase and _group_draw(g * 7 + 3, copy) < l2_shared_fill
        if miss:
            cnt["l2_misses"] += 1
            cnt["hbm_bytes"] += P.line_bytes
            start = max(now, hbm_free)
            row = line >> row_shift
            if row not in rows_open:  # the first line of this instruction in a DRAM page
                rows_open.add(row)
                cnt["hbm_activations"] += 1
                hbm_free = start + hbm_per_line + hbm_per_row
            else:
                hbm_free = start + hbm_per_line
            lat = (start - now) + P.l2_hit_cycles + hbm_cycles
        elif shared:
            cnt["l2_shared_fills"] += 1  # a sharer's fill in flight: wait for it
            lat = P.l2_hit_cycles + hbm_cycles
        else:
            lat = P.l2_hit_cycles
        l2_ready[line] = now + lat
        return lat

    def simd_reason(s: int, now: float) -> str:
        best = None
        any_live = False
        for w in simd_waves[s]:
            if done[w]:
                continue
            any_live = True
            if ready[w] <= now:
                return "issue"
            r = reason[w]
            if best is None or _PRIO[r] < _PRIO[best]:
                best = r
        if not any_live:
            return "idle"
        return best or "issue"

    while live:
        s = int(t) & 3
        prune = False
        used = 0  # categories issued this turn (their bits)
        valu_issued = False
        sw = simd_waves[s]
        k = rr[s] % len(sw) if sw else 0
        rr[s] = k + 1
        for w in (sw[k:] + sw[:k]) if k else sw:
            if done[w] or ready[w] > t:
                continue
            pc = stream[w][ptr[w]]
            cat, cls, busy, extra, vmc, lgc, nop, store, ends, size, mn, cbit = info[pc]
            if used & cbit:
                continue
            if cat == "valu":
                if valu_free[s] > t:
                    continue
                valu_free[s] = t + busy
                valu_issued = True
                bd["valu"] += busy
            elif cls == "waitcnt":
                # counters in force now; loads issued before cannot change
                need = t
                q = vmq[w]
                while q and q[0] <= t:
                    q.popleft()
                why = None
                if len(q) > vmc:
                    need = max(need, q[len(q) - vmc - 1])
                    why = "vmem"
                lg = [x for x in lgkm[w] if x[0] > t]
                lgkm[w] = lg
                if len(lg) > lgc:
                    srt = sorted(lg)
                    c, kind = srt[len(lg) - lgc - 1]
                    if c > need:
                        need = c
                        why = kind
                if need > t:
                    if recorder is not None:
                        recorder.wait(w, t)
                    ready[w] = need
                    reason[w] = why
                    continue
            elif cls == "barrier":
                at_barrier[w] = True
                j = wg_of[w]
                group = wg_waves[j]
                if all(at_barrier[x] or done[x] for x in group):
                    for x in group:
                        if at_barrier[x] and x != w:  # parked past their s_barrier already
                            at_barrier[x] = False
                            ready[x] = t + turn
                            reason[x] = "issue"
                    at_barrier[w] = False
                else:
                    if recorder is not None:
                        recorder.issue(w, pc, cls, t, ready[w], reason[w], t + turn, 0)
                    ready[w] = _INF
                    reason[w] = "barrier"
                    ptr[w] += 1
                    used |= cbit
                    issued_total += 1
                    last_issue = t
                    continue
            elif cat == "scalar" and cls == "smem":
                rows_open.clear()
                start = max(t, smem_free)
                ev = memev[w].get(ptr[w])
                lat = P.smem_hit_cycles
                if ev is not None:
                    miss_lat = 0.0
                    o = off[w]
                    nl = len(ev[0])
                    smem_free = start + max(P.smem_issue_cycles, nl * smem_cycles_per_line)
                    pending = 0.0
                    for line in ev[0]:
                        line += o
                        if sc.access(line):
                            cnt["scalar_hits"] += 1
                            pending = max(pending, sc_ready.get(line, 0.0) - start)
                        else:
                            cnt["scalar_misses"] += 1
                            ml = l2_path(line, start, first_set[wg_of[w]])
                            sc_ready[line] = start + P.smem_hit_cycles + ml
                            miss_lat = max(miss_lat, ml)
                    lat = max(lat, P.smem_hit_cycles + miss_lat) if miss_lat else lat
                    lat = max(lat, pending)
                cnt["smem_instructions"] += 1
                lgkm[w].append((start + lat, "smem"))
            elif cat == "vmem":
                rows_open.clear()
                ev = memev[w].get(ptr[w])
                lines = ev[0] if ev is not None else ()
                start = max(t, ta_free)
                occ = max(turn, len(lines) * line_cycles)
                ta_free = start + occ
                atomic = "_atomic" in mn
                worst = P.store_latency_cycles if store and not atomic else P.l1_hit_cycles
                if atomic:  # executed at the L2: past the L1, its result returns from there
                    o = off[w]
                    for line in lines:
                        fs = max(start, fill_free)
                        fill_free = fs + line_cycles
                        worst = max(worst, (fs - start) + P.l1_hit_cycles + l2_path(line + o, fs, first_set[wg_of[w]]))
                elif not store:
                    o = off[w]
                    for line in lines:
                        line += o
                        if l1.access(line):
                            cnt["l1_hits"] += 1
                            r_ = l1_ready.get(line)
                            if r_ is not None and r_ - start > worst:
                                worst = r_ - start
                        else:
                            cnt["l1_misses"] += 1
                            fs = max(start, fill_free)
                            fill_free = fs + line_cycles
                            fill = (fs - start) + P.l1_hit_cycles + l2_path(line, fs, first_set[wg_of[w]])
                            l1_ready[line] = start + fill
                            worst = max(worst, fill)
                done_t = start + occ + worst
                q = vmq[w]
                if q and q[-1] > done_t:
                    done_t = q[-1]  # in-order return
                q.append(done_t)
                cnt["vmem_instructions"] += 1
            elif cat == "lds":
                ev = memev[w].get(ptr[w])
                bank = ev[1] if ev is not None else 2   # unrecorded (permute, atomics): b32's 2
                start = max(t, lds_free)
                occ = max(1, bank)
                lds_free = start + occ
                lgkm[w].append((start + occ + P.lds_latency_cycles, "lds"))
                cnt["lds_instructions"] += 1
            # issue it
            used |= cbit
            issued_total += 1
            last_issue = t
            p = ptr[w] + 1
            ptr[w] = p
            nxt = t + turn + extra
            if cls == "nop":
                nxt = max(nxt, t + nop + 1)
            if cat == "branch" and p < len(stream[w]) and stream[w][p] != pc + size:
                nxt += P.branch_taken_extra_cycles
            if recorder is not None:
                recorder.issue(w, pc, cls, t, ready[w], reason[w], nxt, busy)
            ready[w] = nxt
            reason[w] = "issue"
            if ends or p >= len(stream[w]):
                done[w] = True
                simd_live[s] -= 1
                live -= 1
                j = wg_of[w]
                wg_left[j] -= 1
                if wg_left[j] == 0:
                    wg_finish[j] = t + turn
                    prune = True
                    if pending_wgs:
                        start_wg(t + turn)
                        live += len(wg_waves[wg_of[len(stream) - 1]])
                # a barrier may now be complete without this wave
                group = wg_waves[j]
                if any(at_barrier[x] for x in group) and all(at_barrier[x] or done[x] for x in group):
                    for x in group:
                        if at_barrier[x]:
                            at_barrier[x] = False
                            ready[x] = t + turn
                            reason[x] = "issue"
        if prune:
            for s2 in range(4):
                simd_waves[s2] = [x for x in simd_waves[s2] if not done[x]]
        # accounting for this SIMD's turn
        if not valu_issued and valu_free[s] <= t:
            bd[simd_reason(s, t)] += turn
        t += 1
        if t - last_issue > 4 and live:
            # nothing issued for a whole rotation: jump to the next time something can
            nt = _INF
            for sw2 in simd_waves:  # the live waves (pruned when a workgroup ends)
                for w in sw2:
                    if done[w]:
                        continue
                    r = ready[w]
                    if r < nt:
                        nt = r
            if nt == _INF:
                raise RuntimeError("timing model: waves wait forever (barrier deadlock in the trace)")
            nt = float(int(nt))
            if nt > t:
                span = nt - t
                for s2 in range(4):
                    if valu_free[s2] <= t:
                        bd[simd_reason(s2, t)] += span
                    else:
                        busy_left = max(0.0, valu_free[s2] - t)
                        if span > busy_left:
                            bd[simd_reason(s2, t)] += span - busy_left
                t = nt
                last_issue = t - 1
    cycles = max(wg_finish) if wg_finish else 0.0
    return CuResult(cycles=cycles, wg_finish=wg_finish, breakdown=bd, counters=cnt,
                    instructions=issued_total,
                    hbm_busy_cycles=cnt["l2_misses"] * hbm_per_line + cnt["hbm_activations"] * hbm_per_row)


_PRIO = {"vmem": 0, "smem": 1, "lds": 2, "barrier": 3, "issue": 4, "idle": 5, None: 6}
