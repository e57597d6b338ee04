"""The energy model's parameters (``runtime/timing/energy.py``) and their sources.

Per-event energies, the voltage/frequency curves, and where each value comes from."""

from __future__ import annotations

from dataclasses import dataclass

from vlpc.targets.boards import Board

# ---------------------------------------------------------------------------
# The energy model's parameters (``runtime/timing/energy.py``)
#
# Energy per event (picojoules) at the reference operating point ``ref_clock_mhz``;
# dynamic energy scales with the square of the core voltage, whose dependence on the
# engine clock is the V/f curve below.  "calibrated" marks the (at most two)
# coefficients fitted by ``benchmarks/energy_calibration.py`` on the seed's 1700 MHz
# power pair ONLY (*An Alternative SGEMM on VEGA* section 3.2); the 1500 MHz pair is a prediction.


@dataclass(frozen=True)
class EnergyParams:
    """Per-event energies of a gfx906 board and its voltage/frequency curve.

    Units: ``*_pj`` picojoules per event at ``ref_clock_mhz`` (VGPR events per 32-bit
    register access per lane, as ``LaunchStats.vgpr_reads`` counts them; SGPR events per
    32-bit access per wave-instruction; VALU events per active lane; SALU, SMEM, issue and
    barrier events per wave-instruction); ``*_pj_per_byte`` picojoules per byte moved;
    ``vf_curve`` (MHz, volts) points; watts for idle power.  :data:`ENERGY_SOURCES` gives
    each field's source.
    """

    vf_curve: tuple[tuple[float, float], ...] = ((808.0, 0.716), (1801.0, 1.081))
    ref_clock_mhz: float = 1700.0
    idle_ref_watts: float = 42.0
    idle_voltage_exponent: float = 2.0
    vgpr_read_pj: float = 6.80
    vgpr_write_pj: float = 6.80
    forwarded_read_pj: float = 0.3
    sgpr_read_pj: float = 1.0
    sgpr_write_pj: float = 1.0
    fma_f32_pj: float = 1.5
    fma_f64_pj: float = 6.0
    dot2_f32_f16_pj: float = 1.3
    dot4_i32_i8_pj: float = 0.39
    pk_fma_f16_pj: float = 0.98
    valu_other_pj: float = 0.5
    valu_lane_overhead_pj: float = 29.49
    issue_pj: float = 10.0
    salu_pj: float = 3.0
    smem_access_pj: float = 5.0
    scalar_cache_pj_per_byte: float = 0.3
    l1_pj_per_byte: float = 0.3
    l2_pj_per_byte: float = 3.5
    hbm_pj_per_byte: float = 31.2
    lds_pj_per_byte: float = 0.6
    barrier_pj: float = 10.0

    def voltage(self, clock_mhz: float) -> float:
        """Core voltage at ``clock_mhz`` (linear between the ``vf_curve`` points, extrapolated
        beyond them with the nearest segment's slope)."""
        pts = sorted(self.vf_curve)
        if len(pts) == 1:
            return pts[0][1]
        f = float(clock_mhz)
        i = 0
        while i < len(pts) - 2 and f > pts[i + 1][0]:
            i += 1
        (f0, v0), (f1, v1) = pts[i], pts[i + 1]
        return v0 + (v1 - v0) * (f - f0) / (f1 - f0)

    def scale(self, clock_mhz: float) -> float:
        """Dynamic energy per event at ``clock_mhz`` relative to ``ref_clock_mhz``: (V/V_ref)^2."""
        return (self.voltage(clock_mhz) / self.voltage(self.ref_clock_mhz)) ** 2


#: Where each :class:`EnergyParams` value comes from.  Per-operation figures from other
#: process nodes are scaled to TSMC 7 nm by an assumed ~4x lower switched capacitance
#: than 45 nm; treat every "assumed" figure as an order of magnitude.
ENERGY_SOURCES: dict[str, str] = {
    "vf_curve": "assumed: linear between the lowest and highest points of Vega 20's default voltage "
                "curve as amdgpu reports it (Radeon VII, pp_od_clk_voltage OD_VDDC_CURVE: 808 MHz 716 mV, "
                "1801 MHz 1081 mV; github.com/sibradzic/amdgpu-clocks issue 17); the MI60's own fused curve "
                "is not published (the three-point curve's middle point, 1304 MHz 799 mV, is reported by "
                "benchmarks/energy_calibration.py as a sensitivity, with another Radeon VII's curve, 806/734, "
                "1271/821, 1736/1066 mV, github.com/Ricks-Lab/gpu-utils issue 8); Vega's adaptive voltage "
                "and frequency scaling gives each chip its own voltages (AMD, github.com/ROCm/legacy-rocm-build "
                "issue 606), so no other board's curve is the MI60's",
    "ref_clock_mhz": "the clock of the seed's measured pair the coefficients are fitted on (the seed's section 3.2)",
    "idle_ref_watts": "measured: MI60 board idle ('non-workload') 42 W at 1700 MHz (the seed's section 3.2); "
                      "the board's own Board.idle_watts is used when set",
    "idle_voltage_exponent": "assumed: idle (static) power scales as V^2 (leakage current roughly "
                             "proportional to V over this narrow range, P = V I); predicts the seed's 36 W "
                             "at 1500 MHz, which is never fitted",
    "vgpr_read_pj": "calibrated (VGPR bank access per 32-bit lane read; reads and writes are one "
                    "coefficient), from the seed's 1700 MHz pair as energies: the extra energy per GEMM of the "
                    "kernel without forwarding (284 W x its run at 9.18 TFLOP/s vs 265 W x 9.5 TFLOP/s, idle "
                    "42 W x each run's time apart)",
    "vgpr_write_pj": "calibrated (equal to vgpr_read_pj: an SRAM write costs about a read, Horowitz "
                     "ISSCC 2014)",
    "forwarded_read_pj": "assumed: a bypass/operand-latch read, an order of magnitude below a register "
                         "file bank (Gebhart et al., ISCA 2011, register file cache vs main register file)",
    "sgpr_read_pj": "assumed: a read from the small SGPR file broadcast to the SIMD (per wave, not per lane)",
    "sgpr_write_pj": "assumed equal to sgpr_read_pj",
    "fma_f32_pj": "assumed: Horowitz ISSCC 2014 (45 nm): f32 add 0.9 pJ + mult 3.7 pJ, scaled to 7 nm",
    "fma_f64_pj": "assumed: 4x the f32 FMA (multiplier array grows with the square of the 53/24-bit "
                  "mantissa)",
    "dot2_f32_f16_pj": "assumed (per v_dot2_f32_f16 lane: two f16 products summed into f32): Horowitz ISSCC "
                       "2014 (45 nm) 2 x f16 mult 1.1 pJ + 2 x f32 add 0.9 pJ = 4.0 pJ, scaled to 7 nm by "
                       "fma_f32_pj's factor (1.5 / 4.6)",
    "dot4_i32_i8_pj": "assumed (per v_dot4_i32_i8 lane: four 8-bit products summed into i32): Horowitz ISSCC "
                      "2014 (45 nm) 4 x 8-bit int mult 0.2 pJ + 4 x 32-bit int add 0.1 pJ = 1.2 pJ, scaled "
                      "to 7 nm by fma_f32_pj's factor (1.5 / 4.6)",
    "pk_fma_f16_pj": "assumed (per v_pk_fma_f16 lane: two f16 FMAs): Horowitz ISSCC 2014 (45 nm) 2 x (f16 "
                     "mult 1.1 pJ + f16 add 0.4 pJ) = 3.0 pJ, scaled to 7 nm by fma_f32_pj's factor (1.5 / 4.6)",
    "valu_other_pj": "assumed: 32-bit integer add/logic/move datapath (Horowitz ISSCC 2014: 32-bit add "
                     "0.1 pJ at 45 nm) with its result bus",
    "valu_lane_overhead_pj": "calibrated (per active VALU lane: pipeline registers, operand and result "
                             "networks, SIMD clocking: what the listed events do not cover), from the "
                             "seed's energy per GEMM at 1700 MHz with forwarding (265 W x its run at 9.5 TFLOP/s)",
    "issue_pj": "assumed: instruction fetch (8 bytes from the 32 KiB instruction cache), decode and "
                "arbitration per wave-instruction (GPUWattch counts fetch/decode/schedule per warp-instruction)",
    "salu_pj": "assumed: one 32-bit scalar ALU operation",
    "smem_access_pj": "assumed: scalar cache tag lookup and request per SMEM instruction",
    "scalar_cache_pj_per_byte": "assumed: 16 KiB SRAM read, Horowitz ISSCC 2014 (8 KiB, 64-bit: 10 pJ at "
                                "45 nm) scaled to 7 nm",
    "l1_pj_per_byte": "assumed: 16 KiB vector L1, as the scalar cache",
    "l2_pj_per_byte": "assumed: L2 bank read plus the crossbar to the CU (Horowitz: 1 MiB SRAM 64-bit "
                      "read 100 pJ at 45 nm, ~3.1 pJ/B at 7 nm; Keckler et al., IEEE Micro 2011, on-chip wires)",
    "hbm_pj_per_byte": "O'Connor et al., MICRO 2017 ('Fine-Grained DRAM'): HBM2 ~3.9 pJ/bit; memory rail "
                       "at the fixed memory clock, not scaled with the core voltage",
    "lds_pj_per_byte": "assumed: 64 KiB banked SRAM (Horowitz: 32 KiB 64-bit read 20 pJ at 45 nm, "
                       "~0.6 pJ/B at 7 nm)",
    "barrier_pj": "assumed: per wave arrival at s_barrier (workgroup synchronisation logic)",
}


#: The model's coefficients for gfx906 boards (MI50 has no measurement: the MI60's are assumed).
ENERGY = EnergyParams()


# ---------------------------------------------------------------------------
# mi25 (gfx900: Vega 10, GlobalFoundries 14 nm) energy coefficients: DERIVED from the
# gfx906 ones above by one stated scaling, never measured or fitted -- the seeds have no
# MI25 power figure (*An Alternative SGEMM on VEGA* section 3.2 measured an MI60 only).  Unvalidated.

#: AMD's Vega 20 announcement (Next Horizon, 6 Nov 2018): the 7 nm Vega 20 of the MI60 uses
#: "50 percent less power at the same frequency" than the 14 nm Vega 10 of the MI25, or gives
#: "1.25x more performance ... within the same power envelope" (pcgamer.com "AMD rolls out the
#: first-ever 7nm GPU, but it's not for gaming (yet)"; also gohappygame.com and geektopia.es on
#: the same event).  The iso-frequency statement is the one a per-event energy at one clock
#: needs: an event on MI25 costs twice what it costs on MI60 at the same engine clock.
MI25_SAME_FREQUENCY_POWER_RATIO = 2.0
#: The other statement, read at the products' top clocks (MI25 1500 MHz, MI60 1800 MHz, both
#: 300 W boards): MI25's energy per operation = 1.25 x MI60's at 1800 MHz.  With the gfx906
#: V/f curve that is 1.25 x ENERGY.scale(1800) / ENERGY.scale(1500) = ~1.55 x MI60's at 1500 MHz,
#: against 2.0 above: the derived coefficients are uncertain by at least that ratio.
MI25_SAME_POWER_PERFORMANCE_RATIO = 1.25
#: The reference clock of the mi25 coefficients: MI25's peak engine clock (spec sheet), where
#: the seed also measured the MI60 (1500 MHz: idle 36 W, *An Alternative SGEMM on VEGA* section 3.2).
MI25_REF_CLOCK_MHZ = 1500.0
#: Vega 10's default voltage curve (Radeon RX Vega 64, amdgpu pp_od_clk_voltage defaults,
#: github.com/ROCm/legacy-rocm-build issue 681): (MHz, V).  MI25's own fused curve is not
#: published and Vega 10's AVFS gives each chip its own voltages (issue 606 there); the curve
#: only matters away from 1500 MHz (--clock), where it scales the mi25 coefficients.
VEGA10_VF_CURVE: tuple[tuple[float, float], ...] = (
    (852.0, 0.800), (991.0, 0.900), (1084.0, 0.950), (1138.0, 1.000), (1200.0, 1.050),
    (1401.0, 1.100), (1576.0, 1.150), (1663.0, 1.200))
#: The seed's measured MI60 idle ("non-workload") power at 1500 MHz (*An Alternative SGEMM on VEGA* section 3.2).
MI60_IDLE_WATTS_1500 = 36.0
#: Fields scaled by MI25_SAME_FREQUENCY_POWER_RATIO: every per-event energy of the GPU die
#: (its core rail).  ``hbm_pj_per_byte`` is not: both boards use HBM2 on its own memory rail.
_DIE_ENERGY_FIELDS = ("vgpr_read_pj", "vgpr_write_pj", "forwarded_read_pj", "sgpr_read_pj", "sgpr_write_pj",
                      "fma_f32_pj", "fma_f64_pj", "dot2_f32_f16_pj", "dot4_i32_i8_pj", "pk_fma_f16_pj",
                      "valu_other_pj", "valu_lane_overhead_pj", "issue_pj", "salu_pj",
                      "smem_access_pj", "scalar_cache_pj_per_byte", "l1_pj_per_byte", "l2_pj_per_byte",
                      "lds_pj_per_byte", "barrier_pj")


def derive_mi25_energy(base: EnergyParams | None = None,
                       ratio: float = MI25_SAME_FREQUENCY_POWER_RATIO) -> EnergyParams:
    """MI25's :class:`EnergyParams` derived from gfx906's (``base``, default :data:`ENERGY`):
    each die energy per event at 1500 MHz is ``ratio`` x gfx906's at 1500 MHz (``base``'s
    coefficient x ``base.scale(1500)``), idle power ``ratio`` x the MI60's measured 36 W at
    1500 MHz, HBM pJ/byte unchanged, Vega 10's V/f curve for other clocks.  Derived and
    unvalidated: see :data:`MI25_ENERGY_SOURCES`."""
    from dataclasses import replace

    base = ENERGY if base is None else base
    s = base.scale(MI25_REF_CLOCK_MHZ) * ratio
    return replace(base, vf_curve=VEGA10_VF_CURVE, ref_clock_mhz=MI25_REF_CLOCK_MHZ,
                   idle_ref_watts=MI60_IDLE_WATTS_1500 * ratio,
                   **{f: getattr(base, f) * s for f in _DIE_ENERGY_FIELDS})


#: MI25's coefficients (derived, unvalidated): :func:`derive_mi25_energy` of :data:`ENERGY`.
MI25_ENERGY = derive_mi25_energy()

#: Where each mi25 value comes from (fields not named here: as :data:`ENERGY_SOURCES`, scaled).
MI25_ENERGY_SOURCES: dict[str, str] = {
    "*": "DERIVED, not measured, not fitted, unvalidated: gfx906's coefficient (ENERGY_SOURCES) at "
         "1500 MHz x 2.0, AMD's Vega 20 announcement (7 nm Vega 20: '50 percent less power at the same "
         "frequency' than 14 nm Vega 10, pcgamer.com, Nov 2018); the same announcement's '1.25x "
         "performance in the same power' gives ~1.55 instead (MI25_SAME_POWER_PERFORMANCE_RATIO)",
    "vf_curve": "Radeon RX Vega 64 (Vega 10) default DPM voltages, 852 MHz 800 mV .. 1663 MHz 1200 mV "
                "(github.com/ROCm/legacy-rocm-build issue 681); MI25's own curve is not published",
    "ref_clock_mhz": "MI25's peak engine clock, 1500 MHz (AMD MI25 spec sheet)",
    "idle_ref_watts": "DERIVED: the seed's measured MI60 idle 36 W at 1500 MHz (the seed's section 3.2) x 2.0, the "
                      "iso-frequency statement applied to static power too (MI25 has two HBM2 stacks, MI60 "
                      "four: the board share is probably overstated); no MI25 idle figure is published",
    "hbm_pj_per_byte": "gfx906's (HBM2 on both boards, memory rail, not scaled with the logic process)",
    "check": "with these coefficients SGEMM 4096x4096x640 at 1500 MHz models at ~500 W average (vlpc bench "
             "--energy --target gfx900 -m 4096 -n 4096 -k 640 --split-k 1: sqc 497 W, legacy lds 705 W; modeled), far "
             "above MI25's 300 W board power (spec sheet): either the x2.0 overstates the 14 nm cost (x1.55 gives "
             "~385 W) or a real MI25 holds "
             "300 W by lowering its clock under SGEMM (runtime.timing.energy.power_limited: about 1,080 MHz for sqc); no measurement "
             "decides",
}

#: Energy coefficients of each board (a board not named: :data:`ENERGY`, gfx906's).
BOARD_ENERGY: dict[str, EnergyParams] = {"mi25": MI25_ENERGY}
#: One line the energy report prints for a board whose coefficients are not gfx906's.
BOARD_ENERGY_NOTE: dict[str, str] = {
    "mi25": "mi25 coefficients are DERIVED from gfx906's (x2.0 at the same clock, AMD's 7 nm Vega 20 "
            "statement; idle 2 x the MI60's 36 W at 1500 MHz), never measured or validated: "
            "vlpc/targets/energy.py MI25_ENERGY_SOURCES"}


def energy_params(board: str | Board) -> EnergyParams:
    """The :class:`EnergyParams` of a board (name or :class:`Board`): :data:`BOARD_ENERGY`'s,
    else :data:`ENERGY` (the gfx906 ones, calibrated on the MI60)."""
    name = board.name if isinstance(board, Board) else str(board).lower()
    return BOARD_ENERGY.get(name, ENERGY)
