"""The gfx906 float modes: the MODE hardware register and its kernel-descriptor fields.

Sources: AMD "Vega Instruction Set Architecture" guide, section 3.3 (MODE:
FP_ROUND [3:0], FP_DENORM [7:4], DX10_CLAMP [8], IEEE [9], ...), ``s_setreg`` /
``s_getreg`` (SOPK; hwreg id 1 = MODE); LLVM ``AMDGPUUsage.rst`` ("compute_pgm_rsrc1
for GFX6-GFX12": FLOAT_ROUND_MODE_32 [13:12], FLOAT_ROUND_MODE_16_64 [15:14],
FLOAT_DENORM_MODE_32 [17:16], FLOAT_DENORM_MODE_16_64 [19:18], ENABLE_DX10_CLAMP [21],
ENABLE_IEEE_MODE [23]; "Floating Point Denorm Mode Enumeration Values") and
``SIDefines.h`` (``FP_DENORM_FLUSH_IN_FLUSH_OUT`` 0, ``FP_DENORM_FLUSH_OUT`` 1,
``FP_DENORM_FLUSH_IN`` 2, ``FP_DENORM_FLUSH_NONE`` 3).  Flushing keeps the sign.

Denorm mode bit 0 set = source (input) denormals are kept, bit 1 set = result
(output) denormals are kept.  Round modes: 0 nearest even, 1 +inf, 2 -inf, 3 zero.
"""

from __future__ import annotations

from dataclasses import dataclass

#: hwreg id of MODE for s_getreg_b32 / s_setreg_b32 (``hwreg(HW_REG_MODE, ...)``)
HW_REG_MODE = 1

DENORM_FLUSH_IN_FLUSH_OUT = 0
DENORM_FLUSH_OUT = 1
DENORM_FLUSH_IN = 2
DENORM_FLUSH_NONE = 3

ROUND_NEAREST_EVEN = 0

#: MODE register fields: name -> (low bit, width)
MODE_FIELDS = {"fp_round_32": (0, 2), "fp_round_16_64": (2, 2), "fp_denorm_32": (4, 2),
               "fp_denorm_16_64": (6, 2), "dx10_clamp": (8, 1), "ieee": (9, 1)}


@dataclass(frozen=True)
class FloatMode:
    """The float part of MODE (what a kernel descriptor sets at wave launch)."""

    round_32: int = ROUND_NEAREST_EVEN
    round_16_64: int = ROUND_NEAREST_EVEN
    denorm_32: int = DENORM_FLUSH_NONE
    denorm_16_64: int = DENORM_FLUSH_NONE
    dx10_clamp: bool = True
    ieee: bool = True

    @property
    def register(self) -> int:
        """The MODE register value (bits 9:0)."""
        return (self.round_32 | self.round_16_64 << 2 | self.denorm_32 << 4 | self.denorm_16_64 << 6
                | int(self.dx10_clamp) << 8 | int(self.ieee) << 9)

    @classmethod
    def from_register(cls, mode: int) -> "FloatMode":
        return cls(mode & 3, (mode >> 2) & 3, (mode >> 4) & 3, (mode >> 6) & 3, bool((mode >> 8) & 1),
                   bool((mode >> 9) & 1))

    @classmethod
    def from_rsrc1(cls, rsrc1: int) -> "FloatMode":
        """From ``compute_pgm_rsrc1`` of a kernel descriptor."""
        return cls((rsrc1 >> 12) & 3, (rsrc1 >> 14) & 3, (rsrc1 >> 16) & 3, (rsrc1 >> 18) & 3,
                   bool((rsrc1 >> 21) & 1), bool((rsrc1 >> 23) & 1))

    def directives(self) -> dict[str, int]:
        """The ``.amdhsa_*`` directives that request this mode."""
        return {"amdhsa_float_round_mode_32": self.round_32,
                "amdhsa_float_round_mode_16_64": self.round_16_64,
                "amdhsa_float_denorm_mode_32": self.denorm_32,
                "amdhsa_float_denorm_mode_16_64": self.denorm_16_64,
                "amdhsa_dx10_clamp": int(self.dx10_clamp),
                "amdhsa_ieee_mode": int(self.ieee)}


#: What hipcc (ROCm 5.2, clang 15) requests for gfx906 kernels, and what vlpc's kernels
#: request (``gcn-emit-descriptor``): IEEE results, f32 and f64 denormals kept, round to
#: nearest even, DX10 clamp and IEEE mode on.  (An ``.amdhsa_kernel`` block without
#: these directives gets FLOAT_DENORM_MODE_32 = 0: f32 denormals flushed.)
IEEE_DEFAULT = FloatMode()
