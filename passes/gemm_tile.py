"""``gemm-tile``: choose the macro tile (per workgroup), micro tile (per work-item) and K step.

Defaults follow the seed (*An Alternative SGEMM on VEGA*, section 2.1, docs/references.md): a 64x256 macro tile,
a 64x1 micro tile per work-item (64 rows of C in 64 accumulators, one column per
lane) and a K step of 16 (one ``s_load_dwordx16`` per A row).  64x64 and 64x128
macro tiles are the seed's other variants.  The choice is written on the op as
``macro_tile``, ``micro_tile`` and ``k_step`` properties.

Errors (located at the op): a micro tile that does not divide the macro tile, a
micro tile other than Mx1 (the A-in-SGPR scheme gives each lane one column), or a
K step other than 8 or 16.  A static M smaller than the macro tile's M gives a tile
of exactly M rows.  Other sizes need not be multiples of the tile: the kernel masks
the edges.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from vlpc.dialects.gemm import DOT_PACK, ELEMENT_BYTES, GEMV_MAX_M, MAX_WG_GROUP, gemv_plan, quant_gemm_rows
from vlpc.passes.common import matmuls, op_error
from vlpc.passes.gemm_split_k import (AUTO_LOCAL_SPLITS, AUTO_MACRO_N, DOT_AUTO_K_STEPS,
                                      MAX_AUTO_SPLIT, MIN_K_PER_SPLIT, auto_macro_m)
from vlpc.plan_model import choose, plan_board
from vlpc.targets import TargetError

SUPPORTED_K_STEPS = (8, 16)
# DOT_AUTO_K_STEPS (the dot kernels' K steps the automatic plan weighs) lives in gemm_split_k.py,
# whose plan explanation lists them too: this pass imports that one, not the other way round.
# AUTO_MACRO_N (the macro tile N extents the automatic choice picks from) and AUTO_MACRO_M (the tile
# rows it weighs besides the default, where fitted) live there too.
#: Macro/micro tile rows of the sqc kernel when not given (``model``): 32 for f32, 16 for f64.
#: Half the seed's 64 (32 doubles) so the kernel fits 64 VGPRs and runs 4 waves per SIMD,
#: which hide the scalar loads' latency better than 3 waves of 64-row tiles: modeled on
#: MI60 @ 1700 MHz, 2048x2048x640 f32, 32x256 at 4 waves runs at 11.5 TFLOP/s and 64x256 at
#: 3 waves at 5.9 (both with the default A schedule; ``vlpc tune`` compares them per shape).
SQC_DEFAULT_M = {"f32": 32, "f64": 16, "f16": 32, "i8": 32}  # f16/i8: the dot kernels (same A dwords per dot)


#: The automatic plan's group height of the grouped workgroup order (``wg_group``, tile rows) and the
#: element types it is used for: the timing model's best G where the row-major order lost (f32 32x64
#: tiles on MI60, K = 640: 1.45x at 10240, 1.87x at 12288, 2.05x at 16384; G = 8 and 16 a little
#: slower; ``benchmarks/wg_order.py``, docs/kernels.md "The grouped workgroup order").  f64 keeps
#: G = 1 (DGEMM 16x64 tiles: G = 4 0.84x at 4096x4096x640, 0.72x at 4096^3); the f16/int8 dot kernels take
#: the option but keep G = 1 by default (not measured).
AUTO_WG_GROUP = 4
AUTO_WG_GROUP_TYPES = ("f32",)
#: Where the automatic plan groups: gx tile columns at least AUTO_WG_GROUP_MIN_COLUMNS_PER_CU times the
#: CU count and sharing a factor of at least half the CU count with it (gcd(gx, CUs) >= CUs /
#: AUTO_WG_GROUP_MIN_GCD_SHARE; under the row-major order workgroup w runs on CU w mod CUs, so each
#: CU's workgroups fall in gx / gcd(gx, CUs) tile columns).  A fit to the modeled points of
#: docs/kernels.md, not a mechanism: it takes every large win (gx 128..256 on 64 CUs, 180 on 60) and no
#: loss; two earlier rules each mispredicted a size measured after them (3072: 0.99x; 6144: 0.69x).
AUTO_WG_GROUP_MIN_COLUMNS_PER_CU = 2
AUTO_WG_GROUP_MIN_GCD_SHARE = 2
#: Waves per SIMD of the default sqc kernels (``SQC_DEFAULT_M``: 64 VGPRs or fewer).
SQC_DEFAULT_WAVES = 4


def auto_wg_group(shape, macro: tuple[int, int], model: bool, cus: int, simds_per_cu: int) -> int:
    """The grouped workgroup order's group height G (tile rows, ``wg_group``) of the automatic plan
    for ``shape`` (a :class:`~vlpc.dialects.gemm.GemmShape`) with ``macro`` (rows, columns) tiles on a
    board of ``cus`` compute units of ``simds_per_cu`` SIMDs: :data:`AUTO_WG_GROUP` for the sqc kernel
    (``model``) of a static, unbatched product of :data:`AUTO_WG_GROUP_TYPES` whose grid has more than G
    tile rows, more tiles than the board runs one-wavefront workgroups at once (``cus x
    simds_per_cu x`` :data:`SQC_DEFAULT_WAVES`: more than one round, so the order decides which
    tiles share the L2) and whose tile columns gx number at least twice the CUs and share a factor
    of at least half the CU count with it (gcd(gx, cus) >= cus / 2:
    :data:`AUTO_WG_GROUP_MIN_COLUMNS_PER_CU`, :data:`AUTO_WG_GROUP_MIN_GCD_SHARE`, fitted where the
    model's row-major order lost), else 1 (the hardware's row-major order; a grid of one round is
    left as it was, and so is every kernel of the golden assembly tests)."""
    if not model or not shape.is_static() or shape.batch != 0 or shape.b_format or shape.dtype not in AUTO_WG_GROUP_TYPES:
        return 1
    gx, gy = -(-shape.n // macro[1]), -(-shape.m // macro[0])
    in_flight = cus * simds_per_cu * SQC_DEFAULT_WAVES
    aliased = gx >= AUTO_WG_GROUP_MIN_COLUMNS_PER_CU * cus and math.gcd(gx, cus) * AUTO_WG_GROUP_MIN_GCD_SHARE >= cus
    return AUTO_WG_GROUP if gy > AUTO_WG_GROUP and gx * gy > in_flight and aliased else 1


@dataclass(frozen=True)
class GemmTilePass(ModulePass):
    """Options: ``macro-m``, ``macro-n`` (macro tile), ``micro-m``, ``micro-n`` (micro tile), ``k-step``.

    0 means the default for the element type.  With ``model`` (the sqc kernel with its
    default schedule): f32 32x256 / 32x1 / 16 (32 accumulators, one s_load_dwordx16 per A
    row and step), f64 16x256 / 16x1 / 8 (16 accumulator pairs), both fitting 64 VGPRs (4
    waves per SIMD: ``SQC_DEFAULT_M``).  Otherwise (strategy lds, the seed's schedule) the
    seed's f32 64x256 / 64x1 / 16 and f64 32x256 / 32x1 / 8 (84 VGPRs, 3 waves).
    ``macro-n=0`` chooses N from the shape.  With ``model`` (the default for strategy sqc)
    and static sizes (f32/f64, no batch), by modeled time: each of 64, 128, 256 columns with
    its best split S (``split-k``: the S gemm-split-k will use, 0 = automatic, so the best of
    1..32) on the board ``gpu`` with ``cus`` CUs, by the plan surrogate
    (:mod:`vlpc.plan_model`, fitted to the timing model; ``vlpc compile --print-plan`` shows
    the candidates); otherwise the smallest of 64, 128, 256 that covers a static N (fewer idle
    lanes and more tiles for narrow C), else 256.  The f16/i8 dot kernels (not the decode GEMV)
    weigh each tile N with S and, when S is automatic, gemm-split-k's local split L too, and take
    the modeled best (formerly a plan without a local split kept the smallest covering N, which
    ``-v`` could list as slower than another tile: issue 33).  When neither ``k-step`` nor the
    tile rows are given they also weigh the K step (``DOT_AUTO_K_STEPS``, 16 or 8 dwords of packed
    K, each a fitted surrogate variant; ties keep 16; f32/f64 keep theirs: ``weighed_k_steps``), and
    the tile rows (``auto_macro_m``: the default and 16, where fitted, for the dot kernels; issue 33; a given K step keeps
    the default rows).  A variant the surrogate only derives from another tile's fit is never
    weighed against a fitted one (:func:`vlpc.plan_model.choose`).  The decode GEMV keeps its own K step
    (``gemv_plan``).  The choice is the minimum over exactly the candidates ``vlpc compile -v``
    lists (``gemm-split-k``'s ``describe_plan``), so it is never listed slower than another.

    ``wg-group`` (G): the grouped workgroup order, G tile rows of one tile column before the next
    column (a power of two up to 64, written as the op's ``wg_group``; 1: the hardware's row-major
    order); 0 (default) chooses :func:`auto_wg_group`.  With M or N given at launch it needs a
    power-of-two tile extent along them (the kernel counts tiles with a shift).
    """

    name = "gemm-tile"

    macro_m: int = 0
    macro_n: int = 0
    micro_m: int = 0
    micro_n: int = 1
    k_step: int = 0
    model: bool = True
    split_k: int = 0
    cus: int = 0
    gpu: str = ""
    target: str = "gfx906"
    wg_group: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for mm in matmuls(op):
            f64 = mm.shape().dtype == "f64"
            default_m, default_k = (32, 8) if f64 else (64, 16)
            if self.model:  # the sqc kernel's defaults: half-height tiles, 4 waves per SIMD (see below)
                default_m = SQC_DEFAULT_M.get(mm.shape().dtype, default_m)
            n = mm.shape().n
            auto_n = next((w for w in AUTO_MACRO_N if 0 < n <= w), AUTO_MACRO_N[-1])
            gemv = gemv_plan(mm.shape())  # f16/i8 with M <= 16: the decode GEMV plan's 64 columns
            if mm.shape().b_format:  # quantized B (passes/isel/quant.py): tiles of up to 16 rows,
                # or the prefill GEMM's (passes/isel/quant_gemm.py)
                default_m = quant_gemm_rows(mm.shape(), "swiglu" in mm.epilogue_ops()) or GEMV_MAX_M
            auto_n = gemv[0] if gemv else auto_n
            if gemv and self.macro_n in (0, gemv[0]):
                default_k = gemv[2]  # and its K step (gemv_plan: 8 when a step of A spans two batches)
            if not gemv and self.model and not self.macro_n:
                rows = self.macro_m or self.micro_m or default_m
                if 0 < mm.shape().m < rows and (self.micro_m or rows) == rows:
                    rows = mm.shape().m  # the tile of exactly M rows _apply_one gives a short matrix
                # the kernel variant (tile rows and K step) is weighed as a whole when neither is given
                # (not for a quantized B: its kernels have their own tile rows)
                weigh_rows = not (self.macro_m or self.micro_m or self.k_step or mm.shape().b_format) \
                    and rows == default_m
                rows_, auto_n, default_k = self._modeled_n(mm, rows,
                                                           self.k_step or default_k, auto_n,
                                                           choose_k=not (self.k_step or self.macro_m or self.micro_m),
                                                           choose_rows=weigh_rows)
                if weigh_rows:
                    default_m = rows_
            tile = dataclasses.replace(self, macro_n=self.macro_n or auto_n, macro_m=self.macro_m or (self.micro_m or default_m),
                                       micro_m=self.micro_m or (self.macro_m or default_m),
                                       k_step=self.k_step or default_k)
            tile._apply_one(mm)

    def _modeled_n(self, mm, macro_m: int, k_step: int, fallback: int, choose_k: bool = False,
                   choose_rows: bool = False) -> tuple[int, int, int]:
        """(macro tile M, macro tile N, K step) by modeled time (see the class docstring), or
        (``macro_m``, ``fallback``, ``k_step``); ``choose_k``: the f16/i8 dot kernels' K step too
        (DOT_AUTO_K_STEPS); ``choose_rows``: the tile rows of AUTO_MACRO_M too (those with a fitted
        surrogate variant: :func:`vlpc.plan_model.choose`'s ``macro_ms``)."""
        s = mm.shape()
        if not s.is_static() or s.batch != 0 or s.dtype not in ("f32", "f64", *DOT_PACK):
            return macro_m, fallback, k_step
        try:
            board = plan_board(self.target.split(":")[0], self.gpu, self.cus)
        except TargetError as e:
            raise op_error(mm, str(e)) from None
        splits = tuple(range(1, MAX_AUTO_SPLIT + 1)) if self.split_k == 0 else (self.split_k,)
        # every tile N with S and, when S is automatic, gemm-split-k's automatic local split L (all
        # types: the sqc kernel's L as the dot kernels'; issue 33), and the dot kernels' K step
        best, _ = choose(s.m, s.n, s.k, s.dtype, s.element_bytes, macro_m, AUTO_MACRO_N, k_step, splits, 1,
                         "workspace", board, min_k_per_split=MIN_K_PER_SPLIT if self.split_k == 0 else 0,
                         c_esize=ELEMENT_BYTES[s.c_type],
                         locals_=AUTO_LOCAL_SPLITS if self.split_k == 0 else (1,),
                         max_workitems=board.target.max_workitems_per_workgroup,
                         k_steps=DOT_AUTO_K_STEPS if choose_k and s.dtype in DOT_PACK else (),
                         macro_ms=auto_macro_m(macro_m, s.dtype) if choose_rows else ())
        return best.macro[0], best.macro[1], best.k_step

    def _auto_wg_group(self, mm, macro: tuple[int, int]) -> int:
        """:func:`auto_wg_group` on the plan's board (``gpu``, ``cus``; 1 where none applies)."""
        if not self.model or not mm.shape().is_static():
            return 1
        try:
            board = plan_board(self.target.split(":")[0], self.gpu, self.cus)
        except TargetError as e:
            raise op_error(mm, str(e)) from None
        return auto_wg_group(mm.shape(), macro, self.model, board.compute_units, board.target.simds_per_cu)

    def _apply_one(self, mm) -> None:
        if min(self.macro_m, self.macro_n, self.micro_m, self.micro_n, self.k_step) <= 0:
            raise op_error(mm, "tile sizes must be positive")
        if self.micro_n != 1:
            raise op_error(mm, f"micro tile {self.micro_m}x{self.micro_n}: the A-in-SGPR scheme "
                           "computes one column per work-item (micro tile Mx1)")
        if self.macro_m % self.micro_m or self.macro_n % self.micro_n:
            raise op_error(mm, f"micro tile {self.micro_m}x{self.micro_n} does not divide "
                           f"macro tile {self.macro_m}x{self.macro_n}")
        if self.k_step not in SUPPORTED_K_STEPS:
            raise op_error(mm, f"k-step {self.k_step} is not supported (choose "
                           f"{' or '.join(map(str, SUPPORTED_K_STEPS))}: one s_load_dwordx8/x16 per A row)")
        macro_m, micro_m = self.macro_m, self.micro_m
        m = mm.shape().m
        if 0 < m < macro_m and micro_m == macro_m:
            macro_m = micro_m = m  # a matrix shorter than the tile: one tile of exactly M rows
        mm.set_int_array("macro_tile", (macro_m, self.macro_n))
        mm.set_int_array("micro_tile", (micro_m, self.micro_n))
        mm.set_int("k_step", self.k_step)
        group = self.wg_group or self._auto_wg_group(mm, (macro_m, self.macro_n))
        if group & (group - 1) or not 0 < group <= MAX_WG_GROUP:
            raise op_error(mm, f"wg-group {group}: the group height of the workgroup order is a power of two "
                           f"from 1 to {MAX_WG_GROUP} (tile rows)")
        launch = [(name, tile) for name, size, tile in (("M", mm.shape().m, macro_m), ("N", mm.shape().n, self.macro_n))
                  if size < 0 and tile & (tile - 1)]
        if group > 1 and launch:
            raise op_error(mm, f"wg-group {group} with {launch[0][0]} given at launch needs a power-of-two macro tile "
                           f"extent along it (got {launch[0][1]}): the kernel counts tiles with a shift")
        if group > 1:
            mm.set_int("wg_group", group)
        elif mm.properties.get("wg_group") is not None:
            del mm.properties["wg_group"]
