"""Target facts for the GPUs vlpc compiles for, as data, in one place.

Every pass, the assembler driver and the emulator read register limits, counter
widths, hazards and occupancy rules from here; none of them spells these numbers
as literals.  Sources are named next to each fact (``shared/reference/gfx906.md``
collects them: LLVM ``AMDGPUBaseInfo.cpp``, ``GCNHazardRecognizer.cpp``,
``SIInsertWaitcnts.cpp``, ``AMDGPUUsage.rst`` and seed 003, "AMD GPU Hardware
Basics").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


class TargetError(ValueError):
    """An unknown target or a malformed target id (a user error)."""


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
    #: Workgroups per CU (seed 003: 40 for single-wave workgroups, 16 otherwise).
    max_workgroups_per_cu_single_wave: int = 40
    max_workgroups_per_cu: int = 16
    #: Addressable SGPRs s0..s101 (AMDGPUBaseInfo ``getAddressableNumSGPRs``).
    addressable_sgprs: int = 102
    sgpr_granule: int = 16
    #: Granule of COMPUTE_PGM_RSRC1.GRANULATED_WAVEFRONT_SGPR_COUNT (LLVM ``getSGPREncodingGranule``).
    sgpr_encoding_granule: int = 8
    #: SGPRs per wave -> waves per SIMD (AMDGPUBaseInfo ``getMaxWavesPerEU`` for GFX9).
    sgpr_waves: tuple[tuple[int, int], ...] = ((80, 10), (88, 9), (100, 8), (102, 7))
    vcc_sgprs: int = 2
    xnack_mask_sgprs: int = 4
    flat_scratch_sgprs: int = 6
    addressable_vgprs: int = 256
    vgpr_granule: int = 4
    vgprs_per_simd_lane: int = 256
    lds_bytes_per_cu: int = 65536
    lds_granule: int = 512
    #: Wait counter maxima (``s_waitcnt`` field widths on GFX9).
    vmcnt_max: int = 63
    lgkmcnt_max: int = 15
    expcnt_max: int = 7
    #: SMEM results may return out of order (only lgkmcnt(0) retires one).
    smem_in_order: bool = False
    #: SMEM immediate offset range (21-bit signed on GFX9).
    smem_offset_bits: int = 21
    #: FLAT/GLOBAL immediate offset range (13-bit signed on GFX9).
    global_offset_min: int = -4096
    global_offset_max: int = 4095
    #: DS (LDS) instruction offsets: 16-bit unsigned bytes; ``ds_*2*`` take two 8-bit
    #: offsets in units of the element size (x64 for ``st64``).  (AMD Vega ISA, DS format.)
    ds_offset_max: int = 65535
    ds_offset2_max: int = 255
    #: At most one SGPR or literal per VALU instruction (LLVM ``getConstantBusLimit``).
    constant_bus_limit: int = 1
    #: Cycles a SIMD16 takes for one wave64 VALU instruction (gfx906.md, "The chip").
    valu_cycles_per_instruction: int = 4
    #: Peak engine clock (MI50's, the lower of the two products) and HBM2 bandwidth; the
    #: split-K cost model's units (gfx906.md, "The chip").
    clock_hz: float = 1.725e9
    memory_bytes_per_second: float = 1.0e12
    has_fmac_f32: bool = True
    has_global_atomic_add_f32: bool = False
    hazards: tuple[Hazard, ...] = ()
    #: Features the target id may set (``gfx906:sramecc+:xnack-``), in canonical order.
    features: tuple[str, ...] = ("sramecc", "xnack")

    # -- registers ---------------------------------------------------------

    def allocated_vgprs(self, vgprs: int) -> int:
        """VGPRs actually allocated for ``vgprs`` used (rounded up to the granule)."""
        return max(self.vgpr_granule, _round_up(vgprs, self.vgpr_granule))

    def allocated_sgprs(self, sgprs: int, *, vcc: bool = False, xnack: bool = False,
                        flat_scratch: bool = False) -> int:
        """SGPRs allocated for ``sgprs`` used plus the reserved special ones."""
        total = sgprs + (self.vcc_sgprs if vcc else 0)
        total += self.xnack_mask_sgprs if xnack else 0
        total += self.flat_scratch_sgprs if flat_scratch else 0
        return _round_up(max(total, 1), self.sgpr_granule)

    def vgpr_blocks(self, vgprs: int) -> int:
        """``COMPUTE_PGM_RSRC1.VGPRS`` field: ceil(v / granule) - 1."""
        return max(0, math.ceil(max(vgprs, 1) / self.vgpr_granule) - 1)

    def sgpr_blocks(self, sgprs: int) -> int:
        """``COMPUTE_PGM_RSRC1.SGPRS`` on GFX9: ceil(s / 8) - 1, ``s`` including VCC and the
        XNACK mask when reserved (what LLVM's assembler writes; AMDGPUUsage "compute_pgm_rsrc1")."""
        return max(0, math.ceil(max(sgprs, 1) / self.sgpr_encoding_granule) - 1)

    # -- occupancy ---------------------------------------------------------

    def occupancy(self, vgprs: int, sgprs: int, lds_bytes: int, workgroup_size: int) -> Occupancy:
        """Waves per SIMD for a kernel, after seed 003 ("GPU Occupancy on GFX9").

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

    # -- target ids ----------------------------------------------------------

    def parse_target_id(self, target_id: str) -> TargetId:
        return TargetId.parse(target_id, self)


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

        flags = self.target.elf_mach
        flags |= code(self.settings.get("xnack")) << 8
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

        settings = {"sramecc": decode(e_flags >> 10), "xnack": decode(e_flags >> 8)}
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
)

TARGETS: dict[str, Target] = {t.name: t for t in (GFX906,)}


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
