"""Target facts for the GPUs vlpc compiles for, as data, in one place.

Every pass, the assembler driver and the emulator read register limits, counter
widths, hazards and occupancy rules from here; none of them spells these numbers
as literals.  Sources are named next to each fact (all public, listed in
docs/references.md: LLVM ``AMDGPUBaseInfo.cpp``, ``GCNHazardRecognizer.cpp``,
``SIInsertWaitcnts.cpp``, ``AMDGPUUsage.rst``, the Vega ISA guide and "AMD GPU Hardware
Basics").  "The seed" is *An Alternative SGEMM on VEGA* (github.com/fsword73/SGEMM_on_VEGA),
whose measured MI60 table (1700 MHz column) and power pair the calibrated parameters are fitted on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vlpc.errors import TargetError  # noqa: F401  (re-exported: vlpc.targets.TargetError)
from vlpc.isa import issue_cycles


@dataclass(frozen=True)
class Hazard:
    """A pair of instruction kinds that needs ``wait_states`` between them.

    ``producer`` and ``consumer`` are kind names the hazard pass understands
    (see ``passes/gcn_insert_hazard_nops.py``); ``via`` says which operand
    carries the dependence.  Source: LLVM ``GCNHazardRecognizer.cpp`` for GFX9.
    """

    name: str
    producer: str
    consumer: str
    via: str
    wait_states: int


@dataclass(frozen=True)
class Occupancy:
    """Waves per SIMD a kernel can keep resident and what limits it."""

    waves_per_simd: int
    limited_by: str
    by_vgprs: int
    by_sgprs: int
    by_lds: int
    by_workgroups: int

    def __str__(self) -> str:
        return f"{self.waves_per_simd} waves/SIMD (limited by {self.limited_by})"


@dataclass(frozen=True)
class Target:
    """One GPU architecture (a ``gfxNNN`` processor) and its limits.

    Units: registers are 32-bit dwords; LDS sizes are bytes.
    """

    name: str
    #: ELF ``e_flags`` machine number (``EF_AMDGPU_MACH``), AMDGPUUsage "AMDGPU ELF Header".
    elf_mach: int
    compute_units: dict[str, int]
    wavefront_size: int = 64
    simds_per_cu: int = 4
    max_waves_per_simd: int = 10
    max_workitems_per_workgroup: int = 1024
    #: Workgroups per CU ("AMD GPU Hardware Basics": 40 for single-wave workgroups, 16 otherwise).
    max_workgroups_per_cu_single_wave: int = 40
    max_workgroups_per_cu: int = 16
    #: Addressable SGPRs s0..s101 (AMDGPUBaseInfo ``getAddressableNumSGPRs``).
    addressable_sgprs: int = 102
    #: SGPRs per wave -> waves per SIMD (AMDGPUBaseInfo ``getMaxWavesPerEU`` for GFX9).
    sgpr_waves: tuple[tuple[int, int], ...] = ((80, 10), (88, 9), (100, 8), (102, 7))
    vcc_sgprs: int = 2
    xnack_mask_sgprs: int = 4
    addressable_vgprs: int = 256
    vgpr_granule: int = 4
    vgprs_per_simd_lane: int = 256
    lds_bytes_per_cu: int = 65536
    lds_granule: int = 512
    #: Wait counter maxima (``s_waitcnt`` field widths on GFX9).
    vmcnt_max: int = 63
    lgkmcnt_max: int = 15
    expcnt_max: int = 7
    #: SMEM immediate offset range (21-bit signed on GFX9).
    smem_offset_bits: int = 21
    #: FLAT/GLOBAL immediate offset range (13-bit signed on GFX9).
    global_offset_min: int = -4096
    global_offset_max: int = 4095
    #: DS (LDS) instruction offsets: 16-bit unsigned bytes; ``ds_*2*`` take two 8-bit
    #: offsets in units of the element size (x64 for ``st64``).  (AMD Vega ISA, DS format.)
    ds_offset_max: int = 65535
    ds_offset2_max: int = 255
    #: LLVM ``AMDGPU.td`` ``FeatureISAVersion9_0_x`` features beyond the GFX9 consumer common set
    #: (documentation of where the instruction availability in ``vlpc/isa`` comes from).
    llvm_features: tuple[str, ...] = ()
    hazards: tuple[Hazard, ...] = ()
    #: Features the target id may set (``gfx906:sramecc+:xnack-``), in canonical order.
    features: tuple[str, ...] = ("sramecc", "xnack")

    # -- instructions (the ISA table's: vlpc/isa, gfx900.json's missing list) -----------

    @property
    def has_fmac_f32(self) -> bool:
        """Whether the target has ``v_fmac_f32`` (gfx900 does not: LLVM ``FeatureDLInsts``),
        from the ISA table (:func:`vlpc.isa.available`)."""
        from vlpc.isa import available

        return available("v_fmac_f32", self)

    @property
    def has_dot_insts(self) -> bool:
        """Whether the target has gfx906's dot-product instructions (``v_dot2_f32_f16``,
        ``v_dot4_i32_i8``...: LLVM ``FeatureDot{1,2,7,10}Insts``; gfx900 has none), from the
        ISA table (every ``v_dot*`` row, :func:`vlpc.isa.available`)."""
        from vlpc.isa import available, table

        return all(available(mn, self) for mn in table() if mn.startswith("v_dot"))

    # -- registers ---------------------------------------------------------

    @property
    def valu_cycles_per_instruction(self) -> int:
        """Cycles one wave64 full-rate VALU instruction (``v_fma_f32``) occupies its SIMD16: 4
        (the ISA table, :func:`vlpc.isa.issue_cycles`)."""
        return issue_cycles("v_fma_f32", self)

    @property
    def valu_f64_cycles(self) -> int:
        """Cycles one wave64 ``v_fma_f64`` occupies its SIMD16 (8 on gfx906, 64 on gfx900: the
        ISA table, :func:`vlpc.isa.issue_cycles`)."""
        return issue_cycles("v_fma_f64", self)

    @property
    def f64_rate_divisor(self) -> int:
        """f64 VALU throughput as a fraction of f32's (gfx906: 2, gfx900: 16; the ISA table's
        ``v_fma_f64`` over ``v_fma_f32`` issue cycles)."""
        return self.valu_f64_cycles // self.valu_cycles_per_instruction

    def allocated_vgprs(self, vgprs: int) -> int:
        """VGPRs actually allocated for ``vgprs`` used (rounded up to the granule)."""
        return max(self.vgpr_granule, _round_up(vgprs, self.vgpr_granule))

    # -- occupancy ---------------------------------------------------------

    def occupancy(self, vgprs: int, sgprs: int, lds_bytes: int, workgroup_size: int) -> Occupancy:
        """Waves per SIMD for a kernel, after "AMD GPU Hardware Basics" ("GPU Occupancy on GFX9"; docs/references.md).

        ``vgprs``/``sgprs`` are per wave (SGPRs as counted for the descriptor,
        including VCC when reserved), ``lds_bytes`` per workgroup,
        ``workgroup_size`` in work-items.  The limiting factor is the smallest.
        """
        waves_per_wg = max(1, math.ceil(workgroup_size / self.wavefront_size))
        by_v = min(self.max_waves_per_simd, self.vgprs_per_simd_lane // self.allocated_vgprs(vgprs))
        by_s = 0
        for limit, waves in self.sgpr_waves:
            if sgprs <= limit:
                by_s = waves
                break
        by_s = min(by_s, self.max_waves_per_simd)
        wg_limit = (self.max_workgroups_per_cu_single_wave if waves_per_wg == 1
                    else self.max_workgroups_per_cu)
        if lds_bytes > 0:
            lds_alloc = _round_up(lds_bytes, self.lds_granule)
            wg_limit_lds = self.lds_bytes_per_cu // lds_alloc
        else:
            wg_limit_lds = wg_limit
        waves_cu_lds = wg_limit_lds * waves_per_wg
        waves_cu_wg = wg_limit * waves_per_wg
        by_lds = min(self.max_waves_per_simd, waves_cu_lds // self.simds_per_cu)
        by_wg = min(self.max_waves_per_simd, waves_cu_wg // self.simds_per_cu)
        candidates = {"VGPRs": by_v, "SGPRs": by_s, "LDS": by_lds, "workgroups per CU": by_wg}
        limited_by = min(candidates, key=lambda k: candidates[k])
        waves = candidates[limited_by]
        if waves == self.max_waves_per_simd and all(v >= waves for v in candidates.values()):
            limited_by = "wave slots"
        return Occupancy(waves, limited_by, by_v, by_s, by_lds, by_wg)


@dataclass(frozen=True)
class TargetId:
    """A target id such as ``gfx906``, ``gfx906:sramecc+`` or ``gfx906:sramecc-:xnack-``.

    Each feature is ``True`` (on), ``False`` (off) or ``None`` ("any": the code
    object loads on either kind of board).  Source: AMDGPUUsage "Target ID".
    """

    target: Target
    settings: dict[str, bool | None] = field(default_factory=dict)

    @staticmethod
    def parse(text: str, target: Target | None = None) -> TargetId:
        parts = text.strip().split(":")
        proc = parts[0]
        if target is None:
            target = get_target(proc)
        elif proc != target.name:
            raise TargetError(f"target id '{text}' is not for {target.name}")
        settings: dict[str, bool | None] = {f: None for f in target.features}
        for part in parts[1:]:
            if len(part) < 2 or part[-1] not in "+-" or part[:-1] not in settings:
                known = ", ".join(f"{f}+/{f}-" for f in target.features)
                raise TargetError(f"bad feature '{part}' in target id '{text}' (known: {known})")
            settings[part[:-1]] = part[-1] == "+"
        return TargetId(target, settings)

    def __str__(self) -> str:
        suffix = "".join(
            f":{f}{'+' if on else '-'}" for f, on in self.settings.items() if on is not None
        )
        return self.target.name + suffix

    @property
    def directive(self) -> str:
        """The ``.amdgcn_target`` string for code object v4+."""
        return f"amdgcn-amd-amdhsa--{self}"

    def assembler_features(self) -> list[str]:
        """``-target-feature`` values for LLVM's assembler (none for "any")."""
        return [f"{'+' if on else '-'}{f}" for f, on in self.settings.items() if on is not None]

    def e_flags(self) -> int:
        """ELF ``e_flags`` for code object v4+ (AMDGPUUsage "ELF Header")."""
        # EF_AMDGPU_FEATURE_XNACK_V4 bits 8-9, EF_AMDGPU_FEATURE_SRAMECC_V4 bits 10-11:
        # 0x1 any, 0x2 off, 0x3 on.
        def code(v: bool | None) -> int:
            return 0x1 if v is None else (0x3 if v else 0x2)

        # A feature the processor does not support stays 0 ("unsupported"): gfx900 has no
        # sramecc, so LLVM writes 0x12c for plain gfx900 (xnack any), 0x52f for gfx906.
        flags = self.target.elf_mach
        if "xnack" in self.target.features:
            flags |= code(self.settings.get("xnack")) << 8
        if "sramecc" in self.target.features:
            flags |= code(self.settings.get("sramecc")) << 10
        return flags

    @staticmethod
    def from_e_flags(e_flags: int) -> TargetId:
        """Recover a target id from an ELF header's flags (inverse of :meth:`e_flags`)."""
        mach = e_flags & 0xFF
        for t in TARGETS.values():
            if t.elf_mach == mach:
                break
        else:
            raise TargetError(f"unknown AMDGPU machine 0x{mach:x} in ELF e_flags 0x{e_flags:x}")

        def decode(bits: int) -> bool | None:
            return {0x0: None, 0x1: None, 0x2: False, 0x3: True}[bits & 0x3]

        bits = {"sramecc": e_flags >> 10, "xnack": e_flags >> 8}
        for f, b in bits.items():
            if f not in t.features and b & 0x3:
                raise TargetError(f"ELF e_flags 0x{e_flags:x} set {f} for {t.name}, which has no {f} feature")
        settings = {f: decode(bits[f]) for f in t.features}
        return TargetId(t, settings)

    def compatible_with(self, device: TargetId) -> bool:
        """Whether a code object for ``self`` may run on a device whose id is ``device``."""
        if self.target.name != device.target.name:
            return False
        for f, want in self.settings.items():
            have = device.settings.get(f)
            if want is not None and have is not None and want != have:
                return False
        return True


GFX9_HAZARDS = (
    Hazard("valu-sgpr-then-vmem", "valu_writes_sgpr", "vmem_reads_sgpr", "sgpr", 5),
    Hazard("valu-sgpr-then-lane-select", "valu_writes_sgpr", "readlane_lane_select", "sgpr", 4),
    Hazard("valu-vcc-then-div-fmas", "valu_writes_vcc", "v_div_fmas", "vcc", 4),
    Hazard("valu-exec-then-dpp", "valu_writes_exec", "dpp", "exec", 5),
    Hazard("valu-vgpr-then-dpp", "valu_writes_vgpr", "dpp_reads_vgpr", "vgpr", 2),
    Hazard("wide-store-then-valu-overwrite", "store_wider_than_8_bytes", "valu_writes_store_data", "vgpr", 1),
    Hazard("salu-m0-then-lds", "salu_writes_m0", "lds_or_sendmsg_or_movrel", "m0", 1),
    Hazard("setreg-then-getreg", "s_setreg", "s_getreg", "hwreg", 2),
)

GFX906 = Target(
    name="gfx906",
    elf_mach=0x2F,
    compute_units={"MI50": 60, "MI60": 64},
    hazards=GFX9_HAZARDS,
    llvm_features=("HalfRate64Ops", "FeatureFmaMixInsts", "FeatureDLInsts", "FeatureDot1Insts",
                   "FeatureDot2Insts", "FeatureDot7Insts", "FeatureDot10Insts", "FeatureSupportsSRAMECC"),
)

#: gfx900 (Vega 10: Radeon Instinct MI25).  The same GFX9 generation as gfx906 (LLVM
#: ``AMDGPU.td``: both are ``FeatureISAVersion9_0_Consumer_Common``), so register files,
#: budgets (102 SGPRs, 256 VGPRs: AMDGPUBaseInfo depends on the generation and
#: ``FeatureSGPRInitBug``, which only gfx802/805 have), wait counters, LDS and hazards are
#: gfx906's.  It differs by what gfx906 adds: no ``HalfRate64Ops`` (f64 at 1/16 of the f32
#: rate on MI25: 768 GFLOP/s vs 12.3 TFLOP/s), no ``FeatureDLInsts`` (``v_fmac_f32``,
#: ``v_xnor_b32``), no dot instructions, ``v_mad_mix*`` (``FeatureMadMixInsts``) instead of
#: ``v_fma_mix*``, and no SRAM ECC in its target id (``gfx900:xnack+/-`` only).
#: ``EF_AMDGPU_MACH_AMDGCN_GFX900`` = 0x02c (AMDGPUUsage "AMDGPU ELF Header"; LLVM's
#: assembler writes e_flags 0x12c for ``gfx900``).  MI25: 64 CUs, 1500 MHz peak engine
#: clock, HBM2 2048-bit at 945 MHz = 484 GB/s (AMD Radeon Instinct MI25 spec sheet).
GFX900 = Target(
    name="gfx900",
    elf_mach=0x2C,
    compute_units={"MI25": 64},
    hazards=GFX9_HAZARDS,
    llvm_features=("FeatureMadMixInsts",),
    features=("xnack",),
)

TARGETS: dict[str, Target] = {t.name: t for t in (GFX906, GFX900)}


def get_target(name: str) -> Target:
    """The :class:`Target` for a processor name (``gfx906``) or a target id.

    Raises :class:`TargetError` naming the targets that exist.
    """
    proc = name.split(":")[0]
    try:
        return TARGETS[proc]
    except KeyError:
        known = ", ".join(sorted(TARGETS))
        raise TargetError(f"unknown target '{name}' (supported targets: {known})") from None


def _round_up(x: int, granule: int) -> int:
    return -(-x // granule) * granule


# ---------------------------------------------------------------------------
# Boards and the timing model's parameters
#
# Every number the timing model (``runtime/timing/``) uses lives here, with its
# source.  "calibrated" marks a parameter fitted by ``benchmarks/timing_calibration.py``
# on the seed's 1700 MHz column ONLY (the measured MI60 table of *An Alternative SGEMM on
# VEGA*, section 3.1: docs/references.md); the 1500/1300/1100 MHz columns
# are predictions of the model, never fitted.  The calibrated values below are the
# coordinate search's result under the "address" L2 rule and the HBM model of issue 32 (one
# pass, MAPE 9.96 % on 7 sizes of the 1700 MHz column: 256, 768, 1536, 1792, 2560, 4096,
# 6144; on the seed's conditions, MI60 at 800 MHz memory): smem_hit_cycles 66.27,
# l2_hit_cycles 208.33, scalar_bytes_per_cycle 19.2, launch_overhead_us 1.26,
# hbm_latency_ns 300 (searched, unchanged).  The same model with the earlier "line" rule's
# fit had 99.4, 312.5, 19.2 and 0.84 (7.1 % on 14 sizes); the earlier reconstruction of the
# seed's loop 82.8, 250, 24 and 2.37; the first calibration (without hit-on-miss) 207, 375,
# 16 and 7.5.  The HBM efficiency parameters (hbm_bus_efficiency, hbm_activate_ns) are
# fitted to the streaming microbenchmark rows instead (TIMING_SOURCES).


@dataclass(frozen=True)
class TimingParams:
    """Cycle-model parameters of a gfx9 compute unit and its memory system.

    Units: ``*_cycles`` are engine-clock cycles; ``*_ns`` nanoseconds (fixed in time,
    whatever the engine clock: the HBM2 and its controller run on the memory
    clock); ``*_us`` microseconds.  See :data:`TIMING_SOURCES` for each field's source.
    """

    issue_turn_cycles: int = 4
    long_instruction_extra_cycles: float = 0.0
    branch_taken_extra_cycles: int = 4
    smem_hit_cycles: float = 66.267
    smem_issue_cycles: int = 1
    scalar_bytes_per_cycle: float = 19.2
    l1_hit_cycles: float = 120.0
    l1_bytes_per_cycle: int = 64
    l1_bytes: int = 16 * 1024
    l2_hit_cycles: float = 208.333
    l2_bytes: int = 4 * 1024 * 1024
    l2_channels: int = 16
    l2_bytes_per_cycle_per_channel: int = 64
    l2_ways: int = 16
    hbm_latency_ns: float = 300.0
    hbm_channels: int = 32
    hbm_page_bytes: int = 2048
    hbm_refresh_fraction: float = 0.0897
    hbm_bus_efficiency: float = 0.967
    hbm_activate_ns: float = 0.89
    l2_shared_fill_wait: float = 1.0
    #: How an L2 miss is decided (runtime/timing/cu.py): "line" or "group".
    l2_miss_rule: str = "address"
    lds_latency_cycles: float = 64.0
    lds_banks: int = 32
    scalar_cache_bytes: int = 16 * 1024
    cus_per_scalar_cache: int = 3
    line_bytes: int = 64
    launch_overhead_us: float = 1.26
    store_latency_cycles: float = 250.0


#: Where each :class:`TimingParams` value comes from.
TIMING_SOURCES: dict[str, str] = {
    "issue_turn_cycles": "AMD GCN architecture whitepaper (2012): round-robin issue, each SIMD "
                         "gets a turn every 4 cycles",
    "long_instruction_extra_cycles": "calibrated (CLRX 'GCN ISA Instruction Timings': an 8-byte "
                                     "instruction may need up to 4 extra cycles to dispatch)",
    "branch_taken_extra_cycles": "CLRX 'GCN ISA Instruction Timings' (jump penalties, one 4-cycle penalty)",
    "smem_hit_cycles": "calibrated (scalar cache hit latency)",
    "smem_issue_cycles": "assumed: one scalar cache request per cycle per CU",
    "scalar_bytes_per_cycle": "calibrated (scalar cache data return, bytes per cycle, shared by the "
                              "CUs of one scalar cache)",
    "l1_hit_cycles": "assumed from published GCN pointer-chasing measurements (~120 cycles, "
                     "chipsandcheese.com 'Measuring GPU memory latency')",
    "l1_bytes_per_cycle": "GCN whitepaper: vector L1 64 B/clk",
    "l1_bytes": "ROCm GPU specs: 16 KiB vector L1 per CU",
    "l2_hit_cycles": "calibrated (L2 hit latency, engine clock domain)",
    "l2_bytes": "ROCm GPU specs: 4 MiB L2",
    "l2_channels": "assumed 16 for gfx906 (the L2 is made of independent channels: GCN whitepaper; "
                   "ROCm Compute Profiler 'L2 cache (TCC)', 32 on MI100; no public gfx906 count is cited)",
    "l2_bytes_per_cycle_per_channel": "GCN whitepaper: 64 B/clk per L2 channel",
    "l2_ways": "assumed 16-way (AMD does not publish gfx906's L2 associativity; 16 ways as in the "
               "ROCm Compute Profiler's CDNA L2 description); LRU",
    "hbm_channels": "JEDEC JESD235A (HBM2): 8 independent 128-bit channels per stack; Vega 20 has 4 "
                    "stacks (4096 bits): 32 channels",
    "hbm_page_bytes": "JEDEC JESD235A (HBM2): 2 KB page (row) per channel in legacy mode",
    "hbm_refresh_fraction": "JEDEC JESD235A (HBM2): tRFC / tREFI = 350 ns / 3.9 us for 8 Gb dies (all-bank "
                            "refresh blocks the channel): 0.0897 of the time",
    "hbm_bus_efficiency": "fitted with hbm_activate_ns to the microbenchmark rows hbm.stream.dwordx4 and "
                          "hbm.stream.dword (MI50, skyne98/wiki-gfx906 gfx906-latency-hiding-ops.md), "
                          "reproduced by benchmarks/microbench/memory.py: the data bus's share of the "
                          "remaining time (read/write turnaround, command bubbles)",
    "hbm_activate_ns": "fitted with hbm_bus_efficiency (see there): the part of a DRAM page activation "
                       "(tRCD + tRP) the channel's other banks do not hide, per page an instruction's misses open",
    "hbm_latency_ns": "assumed 300 ns (what lies beyond an L2 miss: Infinity Fabric, memory controller, "
                      "HBM2; on Vega 20 the fabric (FCLK), SoC (SOCCLK) and memory (UCLK) clocks are DPM "
                      "domains of their own beside GFXCLK: amdgpu vega20_print_clk_levels, PP_FCLK/PP_SOCCLK/"
                      "PP_MCLK (PPCLK_UCLK) apart from PP_SCLK, so fixed in ns when the engine clock changes; ROCm Compute Profiler 'L2 cache (TCC)': L2 misses "
                      "go to Infinity Fabric).  Searched by the 'address' rule's calibration (single-round and "
                      "many-round sizes wait on it for different shares of their loads) and left at 300: 200 and 450 "
                      "fit the 1700 MHz column worse; no published Vega 20 HBM latency in ns was found",
    "l2_shared_fill_wait": "assumed 1.0: the model's CUs are identical and dispatched breadth-first "
                           "(runtime/timing/gpu.py), so the workgroups sharing a line run in phase: one "
                           "fetches it from HBM, the others hit the pending line and wait for the same "
                           "fill (hit-on-miss, ROCm Compute Profiler 'L2 cache (TCC)'); 0 = sharers far "
                           "apart in time (the first calibration's rule)",
    "l2_miss_rule": "'address' (default): a set-associative simulation of this CU's share of the L2 plus the "
                    "first round's sharers per line (runtime/timing/cu.py).  Earlier rules: 'line': each 64-byte line draws miss / shared fill on its own, "
                    "so a 64-line load nearly always meets one HBM latency whatever p_l2_miss (a known "
                    "weakness: the modeled time hardly follows the L2 miss probability).  'group' decides "
                    "once per sharing group (a workgroup's A or B panel) and workgroup copy, and only the "
                    "first resident set waits for sharers' fills; re-fitted on the 1700 MHz fit sizes (with the "
                    "earlier reconstruction of the seed's loop) it "
                    "gives 6.8 % there (line: 8.7 %) but 4.8 % on the whole 1700 column (line: 3.4 %) with "
                    "hbm_latency_ns 133, l2_hit_cycles 375, launch_overhead_us 1.05 (one coordinate pass), "
                    "and models the default SGEMM at 97.8 % of peak: not adopted until its fit is finished",
    "lds_latency_cycles": "assumed ~64 cycles (pyhip docs/mem_latency.md measures 64 cycles for "
                          "ds_read_b128 on a later CDNA part)",
    "lds_banks": "GCN whitepaper, Vega ISA guide (LDS): 32 banks of 4 bytes",
    "scalar_cache_bytes": "ROCm GPU specs; AMD GPU Hardware Basics: scalar cache 16 KiB shared by 3 CUs",
    "cus_per_scalar_cache": "ROCm GPU specs; AMD GPU Hardware Basics: scalar cache 16 KiB shared by 3 CUs",
    "line_bytes": "GCN whitepaper: 64-byte cache lines",
    "launch_overhead_us": "calibrated (kernel launch and completion as seen by the seed's timer)",
    "store_latency_cycles": "assumed equal to the L2 hit latency's default (write acknowledged by L2)",
}


@dataclass(frozen=True)
class Board:
    """A GPU board: a target plus its CU count, clocks and memory.

    ``engine_clock_mhz`` is the shader (engine) clock the model runs at (settable: the
    seed measured at 1700/1500/1300/1100 MHz); ``memory_clock_mhz`` the HBM2 clock
    (stock 1000 MHz; the seed kept it at 800 MHz: :func:`seed_board`); bandwidth = bus
    bits x 2 (DDR) x memory clock / 8.
    """

    name: str
    target: Target
    compute_units: int
    engine_clock_mhz: float
    memory_clock_mhz: float
    hbm_bus_bits: int = 4096
    #: Shader engines (workgroups are dispatched round-robin over them): 4 on Vega 10/20
    #: (AMD "Vega" architecture whitepaper).
    shader_engines: int = 4
    timing: TimingParams = TimingParams()
    #: Static (idle) board power in watts at ``idle_clock_mhz`` (*An Alternative SGEMM on VEGA* section 3.2).
    idle_watts: float | None = None
    #: The engine clock ``idle_watts`` was measured at (None: ``engine_clock_mhz``).
    idle_clock_mhz: float | None = None
    #: The board's power limit in watts (typical board power, AMD's spec sheets: 300 W for
    #: MI25, MI50 and MI60).  Above it the board's power management lowers the engine clock;
    #: the energy model flags a modeled average power above this limit
    #: (:attr:`vlpc.runtime.timing.energy.EnergyReport.over_power_limit`).
    power_limit_watts: float | None = None

    @property
    def peak_flops_f32(self) -> float:
        """FP32 FMA peak in FLOP/s: 64 lanes x 2 x CUs x clock (spec sheets, docs/references.md)."""
        return self.target.wavefront_size * 2 * self.compute_units * self.engine_clock_mhz * 1e6

    @property
    def hbm_bytes_per_second(self) -> float:
        """The HBM2 pin rate in bytes/s: bus bits x 2 (DDR) x memory clock / 8."""
        return self.hbm_bus_bits * 2 * self.memory_clock_mhz * 1e6 / 8

    @property
    def hbm_data_bytes_per_second(self) -> float:
        """The pin rate less refresh and bus overheads (``TimingParams.hbm_refresh_fraction``,
        ``hbm_bus_efficiency``), bytes/s: what the channels move when no page activation
        stalls them (the timing model's HBM queue rate; activations cost on top)."""
        t = self.timing
        return self.hbm_bytes_per_second * (1.0 - t.hbm_refresh_fraction) * t.hbm_bus_efficiency

    @property
    def streaming_ceiling_bytes_per_second(self) -> float:
        """The HBM model's streaming ceiling in bytes/s: :attr:`hbm_data_bytes_per_second` less
        one DRAM page activation (``TimingParams.hbm_activate_ns``, spread over ``hbm_channels``)
        per 1 KiB a wave's ``global_load_dwordx4`` moves -- the best a kernel that reads every
        byte once can do under the model (modeled; the microbenchmark rows hbm.stream.* it is
        fitted to: ``benchmarks/microbench/``)."""
        t = self.timing
        per_kib = 1024.0 / self.hbm_data_bytes_per_second + t.hbm_activate_ns * 1e-9 / t.hbm_channels
        return 1024.0 / per_kib

    def at(self, engine_clock_mhz: float | None = None, memory_clock_mhz: float | None = None,
           compute_units: int | None = None, timing: TimingParams | None = None) -> "Board":
        """The same board at other clocks / CU count / parameters."""
        from dataclasses import replace
        return replace(self, engine_clock_mhz=engine_clock_mhz or self.engine_clock_mhz,
                       memory_clock_mhz=memory_clock_mhz or self.memory_clock_mhz,
                       compute_units=compute_units or self.compute_units,
                       timing=timing or self.timing)


#: Boards the timing model knows, at their stock clocks.  MI60: 64 CUs, 1800 MHz peak engine
#: clock; MI50: 60 CUs, 1725 MHz; both HBM2 4096-bit at 1000 MHz, 1,024 GB/s (AMD Radeon
#: Instinct MI50 / MI60 spec sheets).  The seed measured its MI60 at fixed engine clocks and
#: 800 MHz memory: a condition of its table (:func:`seed_board`), not the board's default.
BOARDS: dict[str, Board] = {
    "mi60": Board("mi60", GFX906, 64, 1800.0, 1000.0, idle_watts=42.0, idle_clock_mhz=1700.0,
                  power_limit_watts=300.0),
    "mi50": Board("mi50", GFX906, 60, 1725.0, 1000.0, power_limit_watts=300.0),
    # MI25 (gfx900): 64 CUs, 1500 MHz peak engine clock, HBM2 2048-bit at 945 MHz (484 GB/s),
    # AMD Radeon Instinct MI25 spec sheet; f64 at 1/16 rate (the ISA table's gfx900 cycles:
    # v_fma_f64 64).  No idle power is published: the energy model falls back to
    # EnergyParams.idle_ref_watts.
    "mi25": Board("mi25", GFX900, 64, 1500.0, 945.0, hbm_bus_bits=2048, power_limit_watts=300.0),
}


#: The one default board of each processor: what every command (compile, run, bench, report,
#: tune, profile) and the Python API (``vlpc.compile``, ``vlpc.run``, ``get_device``) plan and
#: model for when no board is named (``--gpu``, ``gpu=``).  gfx906: the MI50, the board most
#: gfx906 owners have (the MI60 is the seed's measured board: name it with ``--gpu mi60``);
#: gfx900: the MI25, its only one.  The reason is written in docs/cli_conventions.md.
DEFAULT_BOARDS: dict[str, str] = {"gfx906": "mi50", "gfx900": "mi25"}


def board_for(target: str | Target) -> str:
    """The default board (:data:`DEFAULT_BOARDS`) of a processor or target id: ``mi50`` for
    gfx906, ``mi25`` for gfx900.  Raises :class:`TargetError` for an unknown target or one
    without a board."""
    t = target if isinstance(target, Target) else get_target(str(target))
    try:
        return DEFAULT_BOARDS[t.name]
    except KeyError:
        raise TargetError(f"no board of target {t.name} is known") from None


def default_boards_text() -> str:
    """:data:`DEFAULT_BOARDS` as the options' help names them: ``mi50 for gfx906, mi25 for gfx900``."""
    return ", ".join(f"{board} for {proc}" for proc, board in DEFAULT_BOARDS.items())


#: The seed's measurement conditions (*An Alternative SGEMM on VEGA* sections 3.1 and 3.2): an MI60 with the engine
#: clock fixed at each column's value (1700/1500/1300/1100 MHz) and HBM2 at 800 MHz.
SEED_CLOCKS_MHZ: tuple[float, ...] = (1700.0, 1500.0, 1300.0, 1100.0)
SEED_MEMORY_CLOCK_MHZ: float = 800.0


def seed_board(clock_mhz: float = 1700.0) -> "Board":
    """The MI60 under the seed's conditions: engine ``clock_mhz``, HBM2 at
    :data:`SEED_MEMORY_CLOCK_MHZ` (what the calibration and the seed sweep model)."""
    return get_board("mi60", clock_mhz=clock_mhz, memory_clock_mhz=SEED_MEMORY_CLOCK_MHZ)


def get_board(name: str | Board, *, clock_mhz: float | None = None,
              memory_clock_mhz: float | None = None, cus: int | None = None) -> Board:
    """A :class:`Board` by name (``mi50``, ``mi60``), optionally at other clocks or CU count.

    Raises :class:`TargetError` naming the boards that exist.
    """
    if isinstance(name, Board):
        board = name
    else:
        try:
            board = BOARDS[str(name).lower()]
        except KeyError:
            raise TargetError(f"unknown board '{name}' (known boards: {', '.join(sorted(BOARDS))})") from None
    if clock_mhz is not None and not 100 <= float(clock_mhz) <= 3000:
        raise TargetError(f"engine clock {clock_mhz} MHz is outside 100..3000 MHz")
    if memory_clock_mhz is not None and not 100 <= float(memory_clock_mhz) <= 3000:
        raise TargetError(f"memory clock {memory_clock_mhz} MHz is outside 100..3000 MHz")
    return board.at(engine_clock_mhz=clock_mhz, memory_clock_mhz=memory_clock_mhz, compute_units=cus)


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
            "vlpc/targets.py MI25_ENERGY_SOURCES"}


def energy_params(board: str | Board) -> EnergyParams:
    """The :class:`EnergyParams` of a board (name or :class:`Board`): :data:`BOARD_ENERGY`'s,
    else :data:`ENERGY` (the gfx906 ones, calibrated on the MI60)."""
    name = board.name if isinstance(board, Board) else str(board).lower()
    return BOARD_ENERGY.get(name, ENERGY)
