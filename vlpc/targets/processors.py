"""The processors vlpc compiles for (gfx906, gfx900): limits, occupancy rules, target ids.

Register limits, counter widths, occupancy rules and target ids, as data, in one place: every
pass, the assembler driver and the emulator read these facts from here; none of them spells these
numbers as literals.  Sources are named next to each fact (all public, listed in
docs/references.md: LLVM ``AMDGPUBaseInfo.cpp``, ``SIInsertWaitcnts.cpp``, ``AMDGPUUsage.rst``,
the Vega ISA guide and "AMD GPU Hardware Basics").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from vlpc.errors import TargetError
from vlpc.isa import issue_cycles
from vlpc.targets.hazards import GFX9_HAZARDS, Hazard


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
    #: SGPRs per wave, counted with VCC, FLAT_SCRATCH and the XNACK mask as the descriptor counts
    #: them, -> waves per SIMD (LLVM AMDGPUBaseInfo ``getOccupancyWithNumSGPRs`` for GFX8/9: <= 80:
    #: 10, <= 88: 9, <= 100: 8, else 7; ``getMaxNumSGPRs`` caps a wave at 102 addressable SGPRs plus
    #: those extras, 112 in all: a count above that cannot be allocated, 0 waves).
    sgpr_waves: tuple[tuple[int, int], ...] = ((80, 10), (88, 9), (100, 8), (112, 7))
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
    #: The largest FLAT/GLOBAL immediate offset (13-bit signed on GFX9).
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

