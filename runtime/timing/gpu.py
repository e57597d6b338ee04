"""The whole GPU: which workgroups to trace, the L2 model, workgroup dispatch, launches.

How a launch's time is modeled (every figure it prints is *modeled*, not measured):

1. **Residency.**  ``R`` workgroups fit on a CU at once (occupancy from
   :meth:`vlpc.targets.Target.occupancy`: waves per SIMD x 4 SIMDs / waves per
   workgroup, at most 16 workgroups per CU).
2. **Representative CU.**  The dispatcher hands out workgroups breadth-first, so
   CU 0's first residents are workgroups 0, C, 2C, ... (C CUs).  Those ``R`` are
   traced by the emulator instruction by instruction; the CU model
   (:func:`~.cu.simulate_cu`) runs ``n`` of them together for ``n = 1..R`` and gives
   ``T(n)``, the cycles ``n`` co-resident workgroups take.
3. **L2.**  The first round of workgroups (``C x R``) records the lines each touches
   (its footprint).  A line missing a CU's L1 misses L2 with probability
   ``unique lines / sum of per-workgroup lines`` (the first of the round's sharers
   fetches it from HBM, the others hit).  The HBM bandwidth (memory clock) is shared
   by the busy CUs.
4. **Dispatch.**  A fluid model of the grid: each CU runs its resident workgroups
   at rate ``1 / T(k)`` each when ``k`` are resident; a finishing workgroup's slot
   takes the next workgroup of the grid.  This reproduces whole rounds, partial
   last rounds and the tail (e.g. 196 workgroups on 64 CUs x 3 slots: one full
   round then 4 workgroups alone).
5. **Launch.**  ``launch_overhead_us`` per kernel; a plan's kernels run one after
   another and their times add.

The shortcut's error against simulating every CU is measured by
``benchmarks/timing_shortcut.py``.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from vlpc.targets import Board

from .cu import REASONS, CuResult, simulate_cu
from .trace import KernelTrace, TraceRequest


@dataclass
class Residency:
    """How a kernel fills a CU: ``wgs_per_cu`` resident workgroups of
    ``waves_per_wg`` waves, and the occupancy (waves per SIMD) that limits it."""

    wgs_per_cu: int
    waves_per_wg: int
    waves_per_simd: int
    limited_by: str


def residency(board: Board, vgprs: int, sgprs: int, lds_bytes: int, workgroup_size: int) -> Residency:
    """Workgroups per CU for a kernel's resources (``Target.occupancy``, seed 003)."""
    t = board.target
    occ = t.occupancy(vgprs, sgprs, lds_bytes, workgroup_size)
    wpg = max(1, math.ceil(workgroup_size / t.wavefront_size))
    per_simd_slots = occ.waves_per_simd
    # waves of a workgroup spread over the 4 SIMDs
    wgs = (per_simd_slots * t.simds_per_cu) // wpg
    limit = t.max_workgroups_per_cu_single_wave if wpg == 1 else t.max_workgroups_per_cu
    if lds_bytes > 0:
        limit = min(limit, t.lds_bytes_per_cu // max(lds_bytes, 1))
    return Residency(max(1, min(wgs, limit)), wpg, occ.waves_per_simd, occ.limited_by)


def trace_request(board: Board, grid: tuple[int, int, int], res: Residency, *,
                  only: bool = False) -> TraceRequest:
    """The workgroups to trace for one launch (see the module docstring, steps 2-3)."""
    W = grid[0] * grid[1] * grid[2]
    C = board.compute_units
    traced = [j * C for j in range(res.wgs_per_cu) if j * C < W]
    footprint = tuple(range(min(W, C * res.wgs_per_cu)))
    return TraceRequest(tuple(traced), footprint, only)


@dataclass
class TimingReport:
    """Modeled time of one kernel launch (or a plan's kernels: :func:`combine`).

    ``cycles`` are engine-clock cycles at ``clock_mhz``; ``time_us`` includes the
    launch overhead.  ``breakdown`` splits ``time_us`` by where the cycles go:
    ``valu`` (SIMDs busy), waiting on ``smem``/``vmem``/``lds``, ``barrier``, ``issue``
    (other instructions and dispatch penalties), ``idle`` (SIMDs without waves
    while a CU still runs), ``tail`` (slots empty at the end of the grid),
    ``launch``.  ``cu_cycles[n]`` is T(n).  All figures are modeled.
    """

    board: str
    clock_mhz: float
    cycles: float
    time_us: float
    breakdown_us: dict[str, float]
    workgroups: int
    wgs_per_cu: int
    cu_cycles: dict[int, float] = field(default_factory=dict)
    l2_miss: float = 0.0
    hbm_bytes: float = 0.0
    kernels: list[str] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)

    def tflops(self, flops: float) -> float:
        return flops / (self.time_us * 1e-6) / 1e12

    def summary(self) -> str:
        parts = ", ".join(f"{k} {v / self.time_us * 100:.0f}%" for k, v in self.breakdown_us.items()
                          if v > 0.005 * self.time_us)
        return (f"modeled {self.time_us:.1f} us on {self.board} @ {self.clock_mhz:.0f} MHz "
                f"({self.cycles:.0f} cycles; {parts})")

    def __repr__(self) -> str:
        return f"TimingReport({self.summary()})"


def l2_miss_probability(trace: KernelTrace) -> float:
    """Unique lines of the first round over the sum of per-workgroup lines."""
    fps = list(trace.footprint.values())
    if not fps:
        return 1.0
    import numpy as np
    total = sum(int(f.size) for f in fps)
    if total == 0:
        return 1.0
    uniq = int(np.unique(np.concatenate(fps)).size)
    return uniq / total


def dispatch(W: int, C: int, R: int, T: dict[int, float]) -> tuple[float, float]:
    """Fluid model of the grid (module docstring step 4).  Returns (makespan cycles,
    slot-cycles actually used / (C x R x makespan) as a utilisation)."""
    if W <= 0:
        return 0.0, 0.0
    # initial breadth-first assignment
    per_cu = [0] * C
    for i in range(min(W, C * R)):
        per_cu[i % C] += 1
    nxt = min(W, C * R)
    # per CU: list of remaining work fractions, and the time its state was last updated
    rem = [[1.0] * k for k in per_cu]
    last = [0.0] * C
    heap = []

    def next_event(c: int, now: float):
        k = len(rem[c])
        if k:
            t_k = T[min(k, max(T))]
            heapq.heappush(heap, (now + min(rem[c]) * t_k, c))

    for c in range(C):
        next_event(c, 0.0)
    makespan = 0.0
    busy_slot_time = 0.0
    while heap:
        now, c = heapq.heappop(heap)
        k = len(rem[c])
        if k == 0:
            continue
        t_k = T[min(k, max(T))]
        dt = now - last[c]
        if dt < -1e-9:
            continue
        # stale event check: the CU's earliest finish must be now
        prog = dt / t_k
        r = [x - prog for x in rem[c]]
        if min(r) > 1e-9:
            # stale (state changed since this event was scheduled)
            continue
        busy_slot_time += k * dt
        last[c] = now
        r = [x for x in r if x > 1e-9]
        finished = k - len(r)
        for _ in range(finished):
            if nxt < W:
                r.append(1.0)
                nxt += 1
        rem[c] = r
        makespan = max(makespan, now)
        next_event(c, now)
    util = busy_slot_time / (C * R * makespan) if makespan else 0.0
    return makespan, util


def model_kernel(trace: KernelTrace, board: Board, res: Residency, name: str = "") -> TimingReport:
    """The modeled time of one traced launch (module docstring, steps 2-5)."""
    W = trace.workgroups
    C = board.compute_units
    traced = [wg for wg in trace.traced if trace.waves_of(wg)]
    if not traced:
        raise ValueError("the trace holds no traced workgroup")
    R = max(1, min(res.wgs_per_cu, len(traced), math.ceil(W / C)))
    p_miss = l2_miss_probability(trace)
    active = min(C, W)
    share = board.hbm_bytes_per_second / (board.engine_clock_mhz * 1e6) / active
    T: dict[int, float] = {}
    runs: dict[int, CuResult] = {}
    for k in range(1, R + 1):
        r = simulate_cu(trace, traced[:k], board, l2_miss=p_miss, hbm_share_bytes_per_cycle=share)
        runs[k] = r
        T[k] = max(r.cycles, 1.0)
    makespan, util = dispatch(W, C, R, T)
    mhz = board.engine_clock_mhz
    cyc_us = 1.0 / mhz
    launch = board.timing.launch_overhead_us
    ref = runs[R]
    # time the slots were full vs the tail
    full_time = (W / (C * R)) * T[R]
    tail = max(0.0, makespan - full_time)
    tot = sum(ref.breakdown.values()) or 1.0
    bd = {k: (v / tot) * min(makespan, full_time) * cyc_us for k, v in ref.breakdown.items()}
    bd["tail"] = tail * cyc_us
    bd["launch"] = launch
    time_us = makespan * cyc_us + launch
    cnt = dict(ref.counters)
    hbm = cnt.get("hbm_bytes", 0.0) / max(R, 1) * W
    return TimingReport(board=board.name, clock_mhz=mhz, cycles=makespan, time_us=time_us,
                        breakdown_us=bd, workgroups=W, wgs_per_cu=R, cu_cycles=T,
                        l2_miss=p_miss, hbm_bytes=hbm, kernels=[name] if name else [],
                        counters=cnt)


def combine(reports: list[TimingReport]) -> TimingReport:
    """Kernels of a plan run one after another: their times (and breakdowns) add."""
    if len(reports) == 1:
        return reports[0]
    first = reports[0]
    bd = dict.fromkeys(list(REASONS) + ["tail", "launch"], 0.0)
    for r in reports:
        for k, v in r.breakdown_us.items():
            bd[k] = bd.get(k, 0.0) + v
    return TimingReport(board=first.board, clock_mhz=first.clock_mhz,
                        cycles=sum(r.cycles for r in reports),
                        time_us=sum(r.time_us for r in reports), breakdown_us=bd,
                        workgroups=sum(r.workgroups for r in reports), wgs_per_cu=first.wgs_per_cu,
                        cu_cycles=first.cu_cycles, l2_miss=first.l2_miss,
                        hbm_bytes=sum(r.hbm_bytes for r in reports),
                        kernels=[k for r in reports for k in r.kernels])
