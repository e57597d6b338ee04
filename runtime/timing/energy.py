"""The energy model of gfx906 boards: joules and average watts of a kernel launch (modeled).

    energy = sum over events (count x energy per event)  +  idle power x modeled time

in the style of GPUWattch/AccelWattch (per-event energies times activity counts plus
static power).  Coefficients and their sources: :class:`vlpc.targets.EnergyParams`,
:data:`vlpc.targets.ENERGY_SOURCES`; two of them are calibrated on the seed's 1700 MHz
power pair (``benchmarks/energy_calibration.py``), the rest are published or assumed.

Events and where their counts come from (:func:`events_from_stats`):

=====================  =======================================================================
event                  count (unit)
=====================  =======================================================================
vgpr_read              ``LaunchStats.vgpr_reads - vgpr_reads_forwarded`` (32-bit x lanes)
forwarded_read         ``LaunchStats.vgpr_reads_forwarded`` (the previous VALU's result)
vgpr_write             ``LaunchStats.vgpr_writes``
sgpr_read / _write     ``LaunchStats.sgpr_reads`` / ``sgpr_writes`` (32-bit x wave-instructions)
fma_f32 / fma_f64      active lanes of ``v_fma/v_fmac/v_mac/v_mad`` f32 / ``v_fma_f64`` (``by_pc``)
dot2_f32_f16           active lanes of ``v_dot2_f32_f16`` (``v_dot2c``): 2 f16 products + f32 sum
dot4_i32_i8            active lanes of ``v_dot4_i32_i8``/``v_dot4_u32_u8`` (``v_dot4c``): 4 products
pk_fma_f16             active lanes of ``v_pk_fma_f16``: 2 f16 FMAs
valu_other             active lanes of the other VALU instructions
valu_lane              active lanes of every VALU instruction (the calibrated overhead)
issue                  wave-instructions (``LaunchStats.instructions``)
salu / smem            SALU / SMEM wave-instructions (``by_class``)
scalar_cache bytes     ``smem_bytes_read``
l1 bytes               VMEM bytes read and written (``global_bytes_* - smem_bytes_read``)
l2 bytes               lines missing the L1 or the scalar cache (timing model counters) x 64 B,
                       plus the bytes stored (GCN's L1 writes through)
hbm bytes              the timing model's HBM bytes (L2 misses) plus the bytes stored
lds bytes              ``lds_bytes_read + lds_bytes_written``
barrier                wave arrivals at ``s_barrier``
=====================  =======================================================================

The f32/f64 FMA, dot and packed-f16 lanes make the ``fma`` component ("FMA datapath"), each
kind with its own coefficient (``fma_f32_pj``, ``fma_f64_pj``, ``dot2_f32_f16_pj``,
``dot4_i32_i8_pj``, ``pk_fma_f16_pj``); the dot and packed coefficients are assumed from
Horowitz's 45 nm f16 and 8-bit integer figures, never calibrated (:data:`vlpc.targets.ENERGY_SOURCES`).
Other dot instructions (``v_dot2_i32_i16``, ``v_dot8_i32_i4``...; vlpc does not emit them)
count as other VALU lanes.

Voltage: every dynamic energy except HBM scales with (V/V_ref)^2, V from the V/f
curve at the board's engine clock; HBM (memory rail, fixed memory clock) does not.
Idle power: the board's measured idle watts at its default clock (MI60: 42 W at
1700 MHz, *An Alternative SGEMM on VEGA* section 3.2) times (V/V_ref)^idle_voltage_exponent.

Coefficients by board (:func:`vlpc.targets.energy_params`): the gfx906 boards use
:data:`vlpc.targets.ENERGY`; ``mi25`` (gfx900) uses :data:`vlpc.targets.MI25_ENERGY`,
DERIVED from them (x2 per event at the same clock, AMD's 7 nm Vega 20 statement; idle
2 x the MI60's 36 W at 1500 MHz; Vega 10's V/f curve), never measured or validated.

Timing-only launches (``EmulatorDevice(timing_only=True)``) execute only some
workgroups (the traced ones and the first round for the L2 footprint): the emulator's
counts are per executed workgroup and are multiplied by ``grid workgroups / executed
workgroups``; the CU model's cache counters cover the ``n`` workgroups it simulated
(``TimingReport.cu_cycles``' key) and are multiplied by ``grid workgroups / n``.  That
is exact when every workgroup does the same work (full tiles: M, N multiples of the
macro tile) and an estimate otherwise (edge tiles do less).

All figures are modeled, not measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from vlpc.targets import BOARDS, Board, EnergyParams, energy_params

#: Components of the breakdown, in display order (``static`` is idle power x time).
COMPONENTS = ("vgpr", "forwarded", "sgpr", "fma", "valu_other", "valu_overhead", "issue", "salu", "smem",
              "l1", "l2", "hbm", "lds", "barrier", "static")

COMPONENT_TITLE = {
    "vgpr": "VGPR bank reads/writes", "forwarded": "forwarded operands", "sgpr": "SGPR reads/writes",
    "fma": "FMA datapath", "valu_other": "other VALU datapath", "valu_overhead": "VALU lane overhead",
    "issue": "instruction fetch/issue", "salu": "SALU", "smem": "scalar cache (SMEM)", "l1": "vector L1",
    "l2": "L2", "hbm": "HBM", "lds": "LDS", "barrier": "barriers", "static": "idle/static power x time",
}

_FMA_F32 = ("v_fma_f32", "v_fmac_f32", "v_mac_f32", "v_mad_f32")
_FMA_F64 = ("v_fma_f64",)
#: Mnemonic -> :class:`EnergyEvents` lane field of the VALU instructions with their own datapath
#: coefficient (every other ``v_*`` instruction: ``valu_other_lanes``).
VALU_EVENT = {**{m: "fma_f32_lanes" for m in _FMA_F32}, **{m: "fma_f64_lanes" for m in _FMA_F64},
              "v_dot2_f32_f16": "dot2_f32_f16_lanes", "v_dot2c_f32_f16": "dot2_f32_f16_lanes",
              "v_dot4_i32_i8": "dot4_i32_i8_lanes", "v_dot4_u32_u8": "dot4_i32_i8_lanes",
              "v_dot4c_i32_i8": "dot4_i32_i8_lanes", "v_pk_fma_f16": "pk_fma_f16_lanes"}
#: Operations per active lane (a multiply and an add are 2): FLOPs, or integer ops for int8.
OPS_PER_LANE = {"fma_f32_lanes": 2, "fma_f64_lanes": 2, "dot2_f32_f16_lanes": 4, "dot4_i32_i8_lanes": 8,
                "pk_fma_f16_lanes": 4}
#: Lane field -> its :class:`vlpc.targets.EnergyParams` coefficient (pJ per active lane).
LANE_COEFFICIENT = {"fma_f32_lanes": "fma_f32_pj", "fma_f64_lanes": "fma_f64_pj",
                    "dot2_f32_f16_lanes": "dot2_f32_f16_pj", "dot4_i32_i8_lanes": "dot4_i32_i8_pj",
                    "pk_fma_f16_lanes": "pk_fma_f16_pj"}


class EnergyError(ValueError):
    """The launch lacks what the energy model needs (a timing model, counters)."""


@dataclass
class EnergyEvents:
    """Event counts of one launch (whole grid).  Units: see the module docstring."""

    vgpr_reads: float = 0.0          # not forwarded
    forwarded_reads: float = 0.0
    vgpr_writes: float = 0.0
    sgpr_reads: float = 0.0
    sgpr_writes: float = 0.0
    fma_f32_lanes: float = 0.0
    fma_f64_lanes: float = 0.0
    valu_other_lanes: float = 0.0
    dot2_f32_f16_lanes: float = 0.0
    dot4_i32_i8_lanes: float = 0.0
    pk_fma_f16_lanes: float = 0.0
    instructions: float = 0.0
    salu: float = 0.0
    smem: float = 0.0
    scalar_cache_bytes: float = 0.0
    l1_bytes: float = 0.0
    l2_bytes: float = 0.0
    hbm_bytes: float = 0.0
    lds_bytes: float = 0.0
    barriers: float = 0.0

    @property
    def valu_lanes(self) -> float:
        return sum(getattr(self, f) for f in OPS_PER_LANE) + self.valu_other_lanes

    @property
    def flops(self) -> float:
        """Operations of the FMA, dot and packed lanes (:data:`OPS_PER_LANE`: 2 per FMA lane, 4 per
        ``v_dot2_f32_f16`` or ``v_pk_fma_f16`` lane, 8 per ``v_dot4_i32_i8`` lane): the GEMM's
        2 M N K when the kernel does nothing else."""
        return float(sum(n * getattr(self, f) for f, n in OPS_PER_LANE.items()))

    def scaled(self, factor: float) -> "EnergyEvents":
        return EnergyEvents(**{f.name: getattr(self, f.name) * factor for f in fields(self)})

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def valu_lanes_by_kind(by_pc: dict) -> dict[str, float]:
    """Active VALU lanes by :class:`EnergyEvents` field (``fma_f32_lanes``, ``fma_f64_lanes``,
    ``dot2_f32_f16_lanes``, ``dot4_i32_i8_lanes``, ``pk_fma_f16_lanes``, ``valu_other_lanes``;
    :data:`VALU_EVENT`) from ``LaunchStats.by_pc`` rows ``[mnemonic, wave executions, lane
    executions, ...]``; VALU = mnemonics ``v_*``."""
    out = dict.fromkeys([*OPS_PER_LANE, "valu_other_lanes"], 0.0)
    for row in by_pc.values():
        mn = str(row[0])
        if not mn.startswith("v_"):
            continue
        base = mn.split("_e64")[0].split("_sdwa")[0].split("_dpp")[0]
        out[VALU_EVENT.get(base, "valu_other_lanes")] += float(row[2])
    return out


def events_from_stats(stats, timing=None) -> EnergyEvents:
    """The whole grid's :class:`EnergyEvents` of one launch, or of a plan run in full.

    ``stats``: the emulator's ``LaunchStats``; ``timing``: its ``TimingReport``
    (default ``stats.timing``; required: the L2 and HBM counts come from it).  Counts of a
    timing-only launch are scaled to the grid (module docstring).  A plan's merged statistics
    (:meth:`vlpc.kernel.CompiledKernel.execute`, :func:`vlpc.run`: split-K and its reduce kernel,
    a copy pre-kernel; ``timing.parts`` holds each kernel's report) are priced when every
    workgroup of every kernel was executed: the emulator's counts are then the plan's, and the
    cache counts are each kernel's, scaled by its own report.  Raises :class:`EnergyError`
    without a timing report, or for a plan of timing-only launches (whose merged counts cannot be
    scaled back to each kernel: price each launch, :func:`vlpc.energy_report.record_launches`).
    """
    timing = timing if timing is not None else getattr(stats, "timing", None)
    if timing is None:
        raise EnergyError("the energy model needs the timing model's report: run on the emulator with a "
                          "board (get_device('emulator', gpu='mi60'))")
    executed = max(1, int(stats.workgroups))
    grid_wgs = int(timing.workgroups)
    reports = list(getattr(timing, "parts", None) or [timing])
    if len(reports) > 1 and executed != grid_wgs:
        raise EnergyError(f"a plan of {len(reports)} timing-only launches ({' + '.join(timing.kernels)}): its "
                          f"merged counts cannot be scaled to each kernel's grid; price each launch "
                          f"(vlpc.energy_report.record_launches(device) before the run, launch_energy of each, "
                          f"combine_energy) or run the plan in full")
    if any(not r.cu_cycles or not r.counters for r in reports):
        raise EnergyError("the timing report has no cache counters: take the energy of each launch")
    s_emu = grid_wgs / executed
    lanes = valu_lanes_by_kind(stats.by_pc)
    smem_bytes = float(stats.smem_bytes_read)
    stored = float(stats.global_bytes_written)
    vmem_bytes = float(stats.global_bytes_read) - smem_bytes + stored
    line = 64.0
    # lines missing the L1 or the scalar cache, each kernel's simulated workgroups scaled to its grid
    missed_lines = sum((float(r.counters.get("l1_misses", 0)) + float(r.counters.get("scalar_misses", 0)))
                       * int(r.workgroups) / max(1, int(next(iter(r.cu_cycles)))) for r in reports)
    ev = EnergyEvents(
        vgpr_reads=float(stats.vgpr_reads - stats.vgpr_reads_forwarded) * s_emu,
        forwarded_reads=float(stats.vgpr_reads_forwarded) * s_emu,
        vgpr_writes=float(stats.vgpr_writes) * s_emu,
        sgpr_reads=float(stats.sgpr_reads) * s_emu,
        sgpr_writes=float(stats.sgpr_writes) * s_emu,
        **{f: v * s_emu for f, v in lanes.items()},
        instructions=float(stats.instructions) * s_emu,
        salu=float(stats.by_class.get("salu", 0)) * s_emu,
        smem=float(stats.by_class.get("smem", 0)) * s_emu,
        scalar_cache_bytes=smem_bytes * s_emu,
        l1_bytes=vmem_bytes * s_emu,
        l2_bytes=missed_lines * line + stored * s_emu,
        hbm_bytes=sum(float(r.hbm_bytes) for r in reports) + stored * s_emu,
        lds_bytes=float(stats.lds_bytes_read + stats.lds_bytes_written) * s_emu,
        barriers=float(stats.barriers) * s_emu,
    )
    return ev


@dataclass
class EnergyReport:
    """Modeled energy of one launch.  ``joules``: per component (:data:`COMPONENTS`);
    ``time_us`` the timing model's modeled time; ``voltage`` the assumed core voltage."""

    board: str
    clock_mhz: float
    voltage: float
    time_us: float
    flops: float
    idle_watts: float
    joules: dict[str, float] = field(default_factory=dict)
    events: EnergyEvents | None = None
    #: The board's power limit (:attr:`vlpc.targets.Board.power_limit_watts`), ``None`` if unknown.
    power_limit_watts: float | None = None

    @property
    def total_joules(self) -> float:
        return sum(self.joules.values())

    @property
    def dynamic_joules(self) -> float:
        return self.total_joules - self.joules.get("static", 0.0)

    @property
    def watts(self) -> float:
        """Average board power over the modeled time."""
        return self.total_joules / (self.time_us * 1e-6)

    @property
    def over_power_limit(self) -> bool:
        """True when the modeled average power exceeds the board's power limit: a real board
        would lower its engine clock to stay under it (AMD PowerTune), so the modeled time,
        which assumes the set clock throughout, is then optimistic and the watts are not
        what the board would draw."""
        return self.power_limit_watts is not None and self.watts > self.power_limit_watts

    @property
    def pj_per_flop(self) -> float:
        return self.total_joules / self.flops * 1e12 if self.flops else float("nan")

    @property
    def gflops_per_watt(self) -> float:
        return self.flops / self.total_joules / 1e9 if self.total_joules else float("nan")

    @property
    def tflops(self) -> float:
        return self.flops / (self.time_us * 1e-6) / 1e12

    def summary(self) -> str:
        return (f"modeled {self.total_joules * 1e3:.2f} mJ, {self.watts:.0f} W average "
                f"({self.idle_watts:.1f} W idle), {self.pj_per_flop:.1f} pJ/FLOP, "
                f"{self.gflops_per_watt:.1f} GFLOP/s per W on {self.board} @ {self.clock_mhz:.0f} MHz "
                f"({self.voltage:.3f} V assumed)"
                + (f"; ABOVE the board's {self.power_limit_watts:.0f} W limit: the board would lower its "
                   f"clock, so the modeled time is optimistic" if self.over_power_limit else ""))

    def __repr__(self) -> str:
        return f"EnergyReport({self.summary()})"


def _reference(board: Board, params: EnergyParams) -> tuple[float, float]:
    """(idle watts, clock) of the board's idle measurement (else the params' reference)."""
    base = BOARDS.get(board.name)
    if base is not None and base.idle_watts is not None:
        return float(base.idle_watts), float(base.idle_clock_mhz or base.engine_clock_mhz)
    return float(params.idle_ref_watts), float(params.ref_clock_mhz)


def idle_watts(board: Board, params: EnergyParams | None = None) -> float:
    """Idle (static) board power at ``board.engine_clock_mhz``: the measured idle power at
    the board's default clock x (V / V_there)^``idle_voltage_exponent`` (an assumption:
    :data:`vlpc.targets.ENERGY_SOURCES`).  ``params`` default: the board's
    (:func:`vlpc.targets.energy_params`)."""
    params = energy_params(board) if params is None else params
    watts, clock = _reference(board, params)
    v = params.voltage(board.engine_clock_mhz) / params.voltage(clock)
    return watts * v ** params.idle_voltage_exponent


def estimate(events: EnergyEvents, board: Board, time_us: float, *, params: EnergyParams | None = None,
             flops: float | None = None) -> EnergyReport:
    """The :class:`EnergyReport` of ``events`` in ``time_us`` (modeled) on ``board`` at its
    engine clock.  ``flops`` defaults to ``events.flops``; ``params`` to the board's
    coefficients (:func:`vlpc.targets.energy_params`: mi25's are derived, not calibrated)."""
    if time_us <= 0:
        raise EnergyError(f"modeled time must be positive (got {time_us} us)")
    p = energy_params(board) if params is None else params
    s = p.scale(board.engine_clock_mhz)
    pj = {
        "vgpr": events.vgpr_reads * p.vgpr_read_pj + events.vgpr_writes * p.vgpr_write_pj,
        "forwarded": events.forwarded_reads * p.forwarded_read_pj,
        "sgpr": events.sgpr_reads * p.sgpr_read_pj + events.sgpr_writes * p.sgpr_write_pj,
        "fma": events.fma_f32_lanes * p.fma_f32_pj + events.fma_f64_lanes * p.fma_f64_pj
               + events.dot2_f32_f16_lanes * p.dot2_f32_f16_pj + events.dot4_i32_i8_lanes * p.dot4_i32_i8_pj
               + events.pk_fma_f16_lanes * p.pk_fma_f16_pj,
        "valu_other": events.valu_other_lanes * p.valu_other_pj,
        "valu_overhead": events.valu_lanes * p.valu_lane_overhead_pj,
        "issue": events.instructions * p.issue_pj,
        "salu": events.salu * p.salu_pj,
        "smem": events.smem * p.smem_access_pj + events.scalar_cache_bytes * p.scalar_cache_pj_per_byte,
        "l1": events.l1_bytes * p.l1_pj_per_byte,
        "l2": events.l2_bytes * p.l2_pj_per_byte,
        "lds": events.lds_bytes * p.lds_pj_per_byte,
        "barrier": events.barriers * p.barrier_pj,
    }
    joules = {k: v * s * 1e-12 for k, v in pj.items()}
    joules["hbm"] = events.hbm_bytes * p.hbm_pj_per_byte * 1e-12  # memory rail: not scaled with V
    idle = idle_watts(board, p)
    joules["static"] = idle * time_us * 1e-6
    joules = {k: joules[k] for k in COMPONENTS}
    return EnergyReport(board=board.name, clock_mhz=board.engine_clock_mhz,
                        voltage=p.voltage(board.engine_clock_mhz), time_us=time_us,
                        flops=events.flops if flops is None else float(flops), idle_watts=idle,
                        joules=joules, events=events, power_limit_watts=board.power_limit_watts)


def launch_energy(stats, board: Board | str | None = None, *, params: EnergyParams | None = None,
                  flops: float | None = None) -> EnergyReport:
    """The modeled energy of one emulator launch with a timing model (``stats.timing``), or of
    a whole plan run in full (``vlpc.run(..., device=get_device("emulator", gpu="mi60")).stats``:
    its kernels' energies and modeled times added, see :func:`events_from_stats`).

    ``board`` defaults to the timing report's board at its clock.  ``flops`` (the operations the
    pJ/FLOP and GFLOP/s figures divide by) defaults to the FMA and dot lanes executed (x 2, 4 or
    8 operations per lane), which also counts the epilogue's and a split-K reduction's FMAs; pass
    ``2 * M * N * K`` for the figures ``vlpc report --energy`` prints.  Raises
    :class:`EnergyError` when the launch was run without a timing model, or for a plan of
    timing-only launches.
    """
    from vlpc.targets import get_board

    ev = events_from_stats(stats)
    t = stats.timing
    if board is None:
        board = get_board(t.board, clock_mhz=t.clock_mhz)
    elif isinstance(board, str):
        board = get_board(board, clock_mhz=t.clock_mhz)
    return estimate(ev, board, t.time_us, params=params, flops=flops)


@dataclass
class PowerLimited:
    """A launch re-modeled at the engine clock its board's power limit allows (modeled).

    ``clock_mhz``: the highest clock (to ``resolution_mhz``) at which the modeled average
    power is at most ``limit_watts``; ``energy``: the :class:`EnergyReport` there (its
    ``time_us`` from the timing model re-run at that clock).  ``at_set_clock``: the report
    at the set clock, above the limit."""

    limit_watts: float
    clock_mhz: float
    energy: EnergyReport
    at_set_clock: EnergyReport

    def summary(self) -> str:
        e = self.energy
        return (f"at the {self.limit_watts:.0f} W limit the board would run at about {self.clock_mhz:.0f} MHz "
                f"(modeled): {e.time_us:,.1f} us, {e.watts:.0f} W, {e.pj_per_flop:.1f} pJ/FLOP, "
                f"{e.tflops:.2f} TFLOP/s")


def combine_energy(reports: list[EnergyReport], flops: float) -> EnergyReport:
    """The :class:`EnergyReport` of kernels run one after another (one plan: split-K's GEMM
    and reduction, a copy kernel and the GEMM): joules per component, event counts and
    modeled times (each with its launch overhead) added; ``flops`` the plan's operations
    (2 M N K).  Watts are then total energy over total time.  Raises ``ValueError`` unless
    all reports are of one board and clock."""
    first = reports[0]
    if any((r.board, r.clock_mhz) != (first.board, first.clock_mhz) for r in reports):
        raise ValueError("combine_energy: the launches were modeled on different boards or clocks")
    events = EnergyEvents(**{f.name: sum(getattr(r.events, f.name) for r in reports) for f in fields(EnergyEvents)})
    return EnergyReport(board=first.board, clock_mhz=first.clock_mhz, voltage=first.voltage,
                        time_us=sum(r.time_us for r in reports), flops=float(flops), idle_watts=first.idle_watts,
                        joules={c: sum(r.joules[c] for r in reports) for c in COMPONENTS}, events=events,
                        power_limit_watts=first.power_limit_watts)


def power_limited(stats, board: Board | None = None, *, params: EnergyParams | None = None,
                  flops: float | None = None, resolution_mhz: float = 5.0) -> PowerLimited | None:
    """Where a launch, or a plan of launches run one after another, modeled above its board's
    power limit would settle (modeled).

    ``stats``: one ``LaunchStats`` or a sequence of them (a plan; each launch is re-timed and
    priced at the trial clock, then added by :func:`combine_energy`, ``flops`` being the whole
    plan's).  Vega 20's power management (the SMU's package power tracking, ``FEATURE_PPT`` in
    amdgpu's vega20 power-play tables; AMD PowerTune) lowers the engine clock until the average
    power is within the limit.  The model: the highest clock, between the lowest point of the
    V/f curve (:attr:`vlpc.targets.EnergyParams.vf_curve`) and the set clock, at which the
    modeled power (energy model, with the timing model re-run on each launch's trace at that
    clock, under the L2 rule of the launch's own model: ``TimingReport.l2_miss_given``) is at most
    :attr:`vlpc.targets.Board.power_limit_watts`; found by bisection to
    ``resolution_mhz``.  Assumptions: the clock is continuous (the SMU picks among DPM levels
    and fine-grained steps), the limit applies to the modeled board power (the limit is AMD's
    typical board power), and the memory clock stays.  Returns ``None`` when the launch is
    within the limit (or the board has none).  Raises :class:`EnergyError` without a timing
    report and trace, or when even the lowest clock is above the limit."""
    from vlpc.runtime.timing import gpu
    from vlpc.targets import get_board

    plan = list(stats) if isinstance(stats, (list, tuple)) else [stats]
    if any(getattr(getattr(st, "timing", None), "parts", None) for st in plan):
        raise EnergyError("a plan's merged statistics (vlpc.run, CompiledKernel.execute) keep no trace to re-time: "
                          "pass the list of its launches' statistics (vlpc.energy_report.record_launches(device) "
                          "before the run)")
    if not plan or any(getattr(st, "timing", None) is None or getattr(st, "trace", None) is None for st in plan):
        raise EnergyError("the power-limited clock needs each launch's timing report and trace "
                          "(run on the emulator with a timing model)")
    t0 = plan[0].timing
    board = board or get_board(t0.board, clock_mhz=t0.clock_mhz)
    p = energy_params(board) if params is None else params
    limit = board.power_limit_watts

    def at(clock: float) -> EnergyReport:
        b = board.at(engine_clock_mhz=clock)
        reps = []
        for st in plan:
            t = st.timing
            res = gpu.Residency(t.wgs_per_cu, st.trace.waves_per_wg, 0, "")
            # the L2 rule of the launch's own model: its given miss probability, if any
            tr = gpu.model_kernel(st.trace, b, res, l2_miss=getattr(t, "l2_miss_given", None))
            reps.append(estimate(events_from_stats(st, tr), b, tr.time_us, params=p, flops=flops))
        return reps[0] if len(reps) == 1 else combine_energy(reps, flops)

    top = at(board.engine_clock_mhz)
    if limit is None or top.watts <= limit:
        return None
    lo = min(f for f, _ in p.vf_curve)
    low = at(lo)
    if low.watts > limit:
        raise EnergyError(f"modeled {low.watts:.0f} W even at {lo:.0f} MHz, above the board's {limit:.0f} W limit")
    hi = board.engine_clock_mhz
    while hi - lo > resolution_mhz:
        mid = 0.5 * (lo + hi)
        e = at(mid)
        if e.watts <= limit:
            lo, low = mid, e
        else:
            hi = mid
    return PowerLimited(limit, lo, low, top)
