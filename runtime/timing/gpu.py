"""The whole GPU: which workgroups to trace, the L2 model, workgroup dispatch, launches.

How a launch's time is modeled (every figure it prints is *modeled*, not measured):

1. **Residency.**  ``R`` workgroups fit on a CU at once (occupancy from
   :meth:`vlpc.targets.Target.occupancy`: waves per SIMD x 4 SIMDs / waves per
   workgroup, at most 16 workgroups per CU).  A workgroup that cannot be resident at all
   (:mod:`vlpc.workgroup_fit`) is refused, not modeled.
2. **Representative CU.**  The dispatcher hands out workgroups breadth-first, so
   CU 0's first residents are workgroups 0, C, 2C, ... (C CUs).  Those ``R`` are
   traced by the emulator instruction by instruction and replayed by the CU model
   (:func:`~.cu.simulate_cu`).
3. **L2.**  The first round of workgroups (``C x R``) records the lines each touches
   (its footprint).  Under ``TimingParams.l2_miss_rule = "address"`` (the default) CU
   0's share of the L2 is simulated set by set (:func:`~.cu.simulate_cu`): reused lines
   hit, lines no other workgroup of the round touches miss, and a line ``n`` workgroups
   share is fetched by one of them (this CU for its share of the sharers).  Under the
   earlier rules a line missing L1 misses L2 with probability ``unique lines / sum of
   per-workgroup lines`` (:func:`l2_miss_probability`, still reported as ``l2_miss``).
   The HBM bandwidth (memory clock, less refresh and bus overheads:
   :attr:`vlpc.targets.Board.hbm_data_bytes_per_second`) is shared by the busy CUs.  The sharers run in phase (identical CUs, breadth-first dispatch),
   so a sharer's hit lands on the first one's fill still in flight and waits for it
   (``TimingParams.l2_shared_fill_wait``): the HBM latency, fixed in ns, is seen by all
   of them while the HBM traffic is counted once.
4. **Dispatch.**  Workgroups go breadth-first over identical CUs, so CU 0 receives
   ``ceil(W / C)`` of them, ``R`` resident at a time, each freed slot refilled at once.
   The CU model runs exactly that (with fresh addresses for each repeated trace), up
   to ``4 R`` workgroups; beyond, it extrapolates the steady-state completion
   interval (:func:`model_kernel`).  This reproduces whole rounds, partial last
   rounds and the tail (e.g. 196 workgroups on 64 CUs x 3 slots: 3 together, then a
   4th alone: the seed's measured dip at M = N = 1792).
5. **Launch.**  ``launch_overhead_us`` per kernel; a plan's kernels run one after
   another and their times add.

The shortcut's error against simulating every CU is measured by
``benchmarks/timing_shortcut.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vlpc.targets import Board
from vlpc.workgroup_fit import check_workgroup_fits

from . import sampling
from .cu import REASONS, simulate_cu
from .recorder import current_recorder
from .trace import KernelTrace, TraceRequest, sorted_unique


@dataclass
class Residency:
    """How a kernel fills a CU: ``wgs_per_cu`` resident workgroups of
    ``waves_per_wg`` waves, and the occupancy (waves per SIMD) that limits it."""

    wgs_per_cu: int
    waves_per_wg: int
    waves_per_simd: int
    limited_by: str


def residency(board: Board, vgprs: int, sgprs: int, lds_bytes: int, workgroup_size: int) -> Residency:
    """Workgroups per CU for a kernel's resources (``Target.occupancy``, "AMD GPU Hardware Basics").

    Raises :class:`vlpc.workgroup_fit.WorkgroupFitError` when not even one workgroup can be
    resident (:func:`vlpc.workgroup_fit.check_workgroup_fits`): such a launch never runs, so it
    has no modeled time."""
    t = board.target
    check_workgroup_fits(t, vgprs, sgprs, lds_bytes, workgroup_size, what="timing model")
    occ = t.occupancy(vgprs, sgprs, lds_bytes, workgroup_size)
    wpg = max(1, math.ceil(workgroup_size / t.wavefront_size))
    per_simd_slots = occ.waves_per_simd
    # waves of a workgroup spread over the 4 SIMDs
    wgs = (per_simd_slots * t.simds_per_cu) // wpg
    limit = t.max_workgroups_per_cu_single_wave if wpg == 1 else t.max_workgroups_per_cu
    if lds_bytes > 0:
        limit = min(limit, t.lds_bytes_per_cu // max(lds_bytes, 1))
    # one workgroup fits (checked above); the per-SIMD average may round a lone LDS-bound one to 0
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
    #: The per-kernel reports a plan's report adds up (:func:`combine`); empty for one kernel.
    parts: list = field(default_factory=list)
    #: The L2 miss probability the caller gave :func:`model_kernel` (``l2_miss``), or ``None``
    #: when the board's L2 rule (``TimingParams.l2_miss_rule``) decided; a re-timing of the
    #: same trace passes it on to model the launch under the same rule.
    l2_miss_given: float | None = None

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
    uniq = int(sorted_unique(np.concatenate(fps)).size)
    return uniq / total


def sqc_sharers(board: Board, active_cus: int) -> int:
    """Busy CUs sharing CU 0's scalar cache: workgroups go round-robin over the shader
    engines, then over the CUs of each; a scalar cache serves ``cus_per_scalar_cache``
    neighbouring CUs of one shader engine (ROCm GPU specs; AMD Vega whitepaper)."""
    se = board.shader_engines
    per_se = max(1, board.compute_units // se)
    busy_in_se = min(per_se, math.ceil(active_cus / se))
    return max(1, min(board.timing.cus_per_scalar_cache, busy_in_se))


def model_kernel(trace: KernelTrace, board: Board, res: Residency, name: str = "",
                 max_simulated: int | None = None, l2_miss: float | None = None,
                 loop_sample: bool | None = None) -> TimingReport:
    """The modeled time of one traced launch.

    ``loop_sample``: True: when the traced waves run one main loop for more than
    ``sampling.MIN_ITERATIONS`` iterations, model two short samples of the loop and extrapolate
    (:mod:`.sampling`, a shortcut with a known error: off by default); None (default): as
    ``VLPC_TIMING_SAMPLE`` says; never with a per-instruction recorder installed.  The rest of
    this docstring is the model of one trace.

    CU 0 receives ``n0 = ceil(W / C)`` of the ``W`` workgroups (breadth-first dispatch
    over identical CUs), at most ``R`` resident at once, each freed slot refilled
    at once.  The CU model runs exactly that when ``n0 <= max_simulated`` (default
    ``4 R``); otherwise it runs ``max_simulated`` workgroups and extrapolates the
    steady state: the mean interval between completions after the first ``R`` and
    before the last ``R`` (at least the CU's HBM share's busy time per simulated workgroup:
    no steady state streams faster than that share) times the workgroups not simulated (the
    ramp-up and the drain are kept as simulated).  ``benchmarks/timing_shortcut.py`` measures this
    shortcut against a full simulation.  ``l2_miss`` overrides the miss probability
    the trace's footprints give (under the "address" L2 rule: a line the L2 simulation
    does not hold misses with that probability instead of by its sharers, for traces
    whose footprints hold CU 0's workgroups only).
    """
    loop = sampling.plan(trace, loop_sample) if loop_sample is not False and current_recorder() is None else None
    if loop is not None:
        a, b = (model_kernel(sampling.truncate(trace, loop, j), board, res, name, max_simulated, l2_miss,
                             loop_sample=False) for j in sampling.SAMPLES)
        return _extrapolated(a, b, loop, board)
    W = trace.workgroups
    C = board.compute_units
    traced = [wg for wg in trace.traced if trace.waves_of(wg)]
    if not traced:
        raise ValueError("the trace holds no traced workgroup")
    R = max(1, res.wgs_per_cu)
    n0 = max(1, math.ceil(W / C))
    cap = max_simulated or 4 * R
    n_sim = min(n0, max(cap, R))
    p_miss = l2_miss_probability(trace) if l2_miss is None else l2_miss
    active = min(C, W)
    share = board.hbm_data_bytes_per_second / (board.engine_clock_mhz * 1e6) / active
    wgs = [traced[i % len(traced)] for i in range(n_sim)]
    # lines shared with other CUs (p_miss < 1) are fetched by whichever sharer asks first;
    # the others, in phase on identical CUs, wait for that fill (TimingParams.l2_shared_fill_wait)
    shared_fill = board.timing.l2_shared_fill_wait if p_miss < 1.0 else 0.0
    r = simulate_cu(trace, wgs, board, resident=R, l2_miss=p_miss, hbm_share_bytes_per_cycle=share,
                    sqc_sharers=sqc_sharers(board, active), l2_shared_fill=shared_fill,
                    active_cus=active, l2_sharers=l2_miss is None)
    fin = sorted(r.wg_finish)
    cycles = fin[-1]
    if n0 > n_sim:
        lo, hi = R - 1, n_sim - R - 1
        if hi <= lo:
            lo, hi = 0, n_sim - 1
        period = (fin[hi] - fin[lo]) / max(1, hi - lo)
        # a steady state cannot drain this CU's HBM share faster than it serves: the interval
        # between completions is at least the share's busy time per simulated workgroup (the
        # window above can end on a workgroup whose last line the share served early)
        period = max(period, r.hbm_busy_cycles / n_sim)
        cycles += (n0 - n_sim) * period
    mhz = board.engine_clock_mhz
    cyc_us = 1.0 / mhz
    launch = board.timing.launch_overhead_us
    tot = sum(r.breakdown.values()) or 1.0
    bd = {k: (v / tot) * cycles * cyc_us for k, v in r.breakdown.items()}
    bd["launch"] = launch
    time_us = cycles * cyc_us + launch
    cnt = dict(r.counters)
    hbm = cnt.get("hbm_bytes", 0.0) / max(n_sim, 1) * W
    return TimingReport(board=board.name, clock_mhz=mhz, cycles=cycles, time_us=time_us,
                        breakdown_us=bd, workgroups=W, wgs_per_cu=R, cu_cycles={n_sim: fin[-1]},
                        l2_miss=p_miss, hbm_bytes=hbm, kernels=[name] if name else [],
                        counters=cnt, l2_miss_given=l2_miss)


def _extrapolated(a: TimingReport, b: TimingReport, loop, board: Board) -> TimingReport:
    """The report of the whole loop from the reports ``a``, ``b`` of its two samples
    (:func:`.sampling.extrapolate` on the cycles, each breakdown share and each counter)."""
    ex = lambda x, y: sampling.extrapolate(x, y, loop)  # noqa: E731
    cycles = ex(a.cycles, b.cycles)
    launch = board.timing.launch_overhead_us
    bd = {k: ex(a.breakdown_us.get(k, 0.0), v) for k, v in b.breakdown_us.items() if k != "launch"}
    bd["launch"] = launch
    cnt = {k: ex(a.counters.get(k, 0.0), v) for k, v in b.counters.items()}
    return TimingReport(board=b.board, clock_mhz=b.clock_mhz, cycles=cycles,
                        time_us=cycles / b.clock_mhz + launch, breakdown_us=bd, workgroups=b.workgroups,
                        wgs_per_cu=b.wgs_per_cu,
                        cu_cycles={n: ex(a.cu_cycles.get(n, 0.0), v) for n, v in b.cu_cycles.items()},
                        l2_miss=b.l2_miss, hbm_bytes=ex(a.hbm_bytes, b.hbm_bytes), kernels=b.kernels,
                        counters=cnt, l2_miss_given=b.l2_miss_given)


def combine(reports: list[TimingReport]) -> TimingReport:
    """Kernels of a plan run one after another: their times (and breakdowns) add."""
    if len(reports) == 1:
        return reports[0]
    flat = []
    for r in reports:
        flat.extend(r.parts or [r])
    reports = flat
    first = reports[0]
    bd = dict.fromkeys(list(REASONS) + ["launch"], 0.0)
    for r in reports:
        for k, v in r.breakdown_us.items():
            bd[k] = bd.get(k, 0.0) + v
    return TimingReport(board=first.board, clock_mhz=first.clock_mhz,
                        cycles=sum(r.cycles for r in reports),
                        time_us=sum(r.time_us for r in reports), breakdown_us=bd,
                        workgroups=sum(r.workgroups for r in reports), wgs_per_cu=first.wgs_per_cu,
                        cu_cycles=first.cu_cycles, l2_miss=first.l2_miss,
                        hbm_bytes=sum(r.hbm_bytes for r in reports),
                        kernels=[k for r in reports for k in r.kernels], parts=reports)
