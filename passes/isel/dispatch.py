"""``convert-gemm-to-gcn``: instruction selection for ``gemm.matmul`` into the ``gcn`` dialect.

The pass checks each planned ``gemm.matmul`` and its function, hands it to the builder of its
kernels and replaces the function by those kernels: f32/f64 to the ``sqc`` kernel
(``isel/sqc.py``; its ``seed`` schedule ``isel/seed.py``, strategy ``lds`` ``isel/lds.py``), f16
and int8 to the dot kernels (:func:`dot_path_kernels`: the lane-along-K GEMV of ``isel/gemv.py``,
the A copy of ``isel/transpose.py`` or ``isel/dot.py``'s kernel), quantized weights to
``isel/quant_k.py``.  The builders share ``isel/emit.py``; none imports this module.

Errors (located at the matmul): an unknown strategy or schedule, a missing plan property (the
pass that sets it is named), M below the macro tile's rows, a function that is not one
``gemm.matmul`` over its arguments, and what a builder refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass

from vlpc.dialects import gcn
from vlpc.dialects.gemm import INT4_GROUP_FORMATS, MatmulOp
from vlpc.passes.common import matmuls, op_error, require
from vlpc.passes.isel.dot import check_dot, dot_kernels
from vlpc.passes.isel.emit import rows_kernel, set_launch_plan
from vlpc.passes.isel.gemv import lane_gemv_kernels
from vlpc.passes.isel.lds import LdsKernelBuilder
from vlpc.passes.isel.quant import quant_kernels
from vlpc.passes.isel.quant_gemm import quant_gemm_kernels, with_gemm_companion
from vlpc.passes.isel.quant_int4 import Int4GemvBuilder
from vlpc.passes.isel.quant_k import Q4KGemvBuilder
from vlpc.passes.isel.quant_lane import quant_lane_kernels
from vlpc.passes.isel.scalar_constants import scalar_constants
from vlpc.passes.isel.seed import SeedKernelBuilder
from vlpc.passes.isel.sqc import SqcKernelBuilder
from vlpc.passes.isel.transpose import plan_copies, transpose_dot_kernels
from vlpc.targets import get_target



def quant_format_kernels(mm: MatmulOp, name: str, strategy: str = "sqc", schedule: str = "default",
                         forwarding: bool = True) -> list[gcn.KernelOp]:
    """The kernels of a ``gemm.matmul`` with ``b_format``: the prefill GEMM where M reaches its tile
    (isel/quant_gemm.py), the lane-along-K GEMV where it applies (isel/quant_lane.py), else each
    format's SGPR GEMV (Q8_0, Q4_0: isel/quant.py; Q4_K: isel/quant_k.py; the int4 group formats:
    isel/quant_int4.py) with the prefill GEMM as its companion for an M given at launch."""
    gemm = quant_gemm_kernels(mm, name, strategy, schedule, forwarding)
    if gemm is not None:
        return gemm
    lane = quant_lane_kernels(mm, name) if mm.residual is None else None  # (its store takes no residual)
    if lane is not None:
        return lane
    builder = {"q4_k": Q4KGemvBuilder, **dict.fromkeys(INT4_GROUP_FORMATS, Int4GemvBuilder)}.get(mm.shape().b_format)
    return with_gemm_companion(mm, name, quant_kernels(mm, name, strategy, schedule, forwarding, builder=builder),
                               schedule, forwarding)

def dot_path_kernels(mm: MatmulOp, name: str, strategy: str, schedule: str, forwarding: bool,
                     rows_tiles: tuple[int, ...], a_transpose: str, gpu: str = "") -> list[gcn.KernelOp]:
    """The kernels of an f16 or i8 ``mm`` (checked by :func:`check_dot`): the lane-along-K decode
    GEMV where it applies (``isel/gemv.py``), else, for A stored K x M that the dot kernel does
    not pack itself, ``<name>_transpose`` then the dot kernels (``isel/transpose.py``;
    ``a_transpose``: ``auto``, ``pre``, ``in-kernel``), else :func:`dot_kernels`.  ``gpu``: the
    board the GEMV's plan is for (empty: every board of the target)."""
    check_dot(mm, strategy, schedule)
    lane = lane_gemv_kernels(mm, name, gpu) if mm.residual is None else None  # (its store takes no residual)
    if lane is not None:
        return lane
    if plan_copies(mm, a_transpose):
        if mm.residual is not None:
            raise op_error(mm, "residual(...): this product copies A or B first (passes/isel/transpose.py: A "
                           "stored K x M, B stored K x N at a large M, or an odd lda/ldb); the residual operand is "
                           "supported for the plans without a copy")
        return transpose_dot_kernels(mm, name, strategy, schedule, forwarding, rows_tiles, a_transpose)
    return dot_kernels(mm, name, strategy, schedule, forwarding, rows_tiles)


@dataclass(frozen=True)
class ConvertGemmToGcnPass(ModulePass):
    """Options: ``strategy`` (``sqc``: A in SGPRs, the default; ``lds``: the legacy LDS-tiled kernel), ``target``,
    ``schedule`` (strategy sqc: ``default``, this module's kernel, or ``seed``, the loop of the seed's
    hand-written 64x256 SGEMM: ``isel/seed.py``) and ``forwarding`` (strategy sqc, both
    schedules: ``true`` orders the FMAs so each accumulator comes from the FMA just before it; ``false``
    K-major, the seed's ``sum_no_reuse`` comparison kernel: only the FMA order changes, each accumulator
    still sums its k in order, so C is bit-identical; strategy lds forwards nothing either way: its
    consecutive FMAs write different accumulators of the 8x8 micro tile)."""

    name = "convert-gemm-to-gcn"

    strategy: str = "sqc"
    target: str = "gfx906"
    schedule: str = "default"
    forwarding: bool = True
    #: f16/int8 with A stored K x M: ``auto``, ``pre`` or ``in-kernel`` (isel/transpose.py).
    a_transpose: str = "auto"
    #: The decode GEMV where no ``gemv`` attribute chooses: ``auto`` (the lane-along-K GEMV where it
    #: applies, isel/gemv.py) or ``sgpr`` (the SGPR GEMV, which follows a plan given
    #: by options: vlpc.pipeline sets it when a tile, K step or local split is given).
    gemv: str = "auto"
    #: The board the plans are made for (``mi50``, ``mi60``; empty: every board of the target):
    #: the decode GEMV's workgroups a CU (isel/gemv.py, :func:`~vlpc.passes.isel.gemv.lane_gemv_plan`).
    gpu: str = ""

    #: The schedules of strategy sqc.
    SCHEDULES = ("default", "cover", "seed")

    #: Row counts R of the row-narrow companions ``<name>_rows<R>`` built when M is given
    #: at launch (those below the macro tile's M): the runtime runs the largest R <= M
    #: alone when M is smaller than the macro tile's M (see the module docstring).
    ROWS_TILES = (8, 1)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        get_target(self.target)
        for mm in list(matmuls(op)):
            builders = {"sqc": SqcKernelBuilder, "lds": LdsKernelBuilder}  # strategy -> instruction selection
            if self.strategy not in builders:
                raise op_error(mm, f"unknown strategy '{self.strategy}' (available: {', '.join(builders)})")
            if self.schedule not in self.SCHEDULES:
                raise op_error(mm, f"unknown schedule '{self.schedule}' (available: {', '.join(self.SCHEDULES)})")
            if self.strategy != "sqc" and self.schedule != "default":
                raise op_error(mm, f"schedule={self.schedule}: the {self.strategy} strategy has one schedule; "
                               "use strategy sqc")
            for prop, producer in (("macro_tile", "gemm-tile"), ("grid", "gemm-map-workgroups"),
                                   ("local_range", "gemm-map-subgroups"), ("split_k", "gemm-split-k")):
                require(mm, prop, producer)
            shape = mm.shape()
            mt_m, _ = mm.get_int_array("macro_tile")
            if 0 <= shape.m < mt_m:
                raise op_error(mm, f"M={shape.m} is smaller than the macro tile's {mt_m} rows: choose "
                               f"--macro-tile {shape.m}xN with --micro-tile {shape.m}x1")
            fn = mm.parent_op()
            if not isinstance(fn, func.FuncOp):
                raise op_error(mm, "gemm.matmul must be inside a func.func (the kernel)")
            consts = scalar_constants(mm)  # alpha/beta may be arith.constant (convert-linalg-to-gemm)
            others = [o for o in fn.body.walk() if o is not fn and not isinstance(o, MatmulOp | func.ReturnOp)
                      and not consts.allows(o)]
            if others or sum(isinstance(o, MatmulOp) for o in fn.body.walk()) != 1:
                raise op_error(mm, f"func.func @{fn.sym_name.data} must contain exactly one gemm.matmul and a return")
            transcendental = [x for x in mm.epilogue_ops() if x in ("gelu", "silu")]
            if transcendental and shape.dtype == "f64":  # f16/i8: check_dot (isel/dot.py)
                raise op_error(mm, f"the {transcendental[0]} epilogue computes in f32 (f32, f16 and dequantized int8 products), not "
                               "f64: gfx906 has no f64 exponential")
            if mm.bias is not None and mm.bias not in fn.body.block.args:
                raise op_error(mm, f"the bias of gemm.matmul must be an argument of @{fn.sym_name.data}")
            expected = [v for v in (mm.a, mm.b, mm.c, mm.alpha, mm.beta, mm.bias, mm.scale_row, mm.scale_col,
                                    mm.residual) if v is not None and v in fn.body.block.args]
            if list(fn.body.block.args) != expected:
                raise op_error(mm, f"the arguments of @{fn.sym_name.data} must be gemm.matmul's A, B, C, alpha, beta, "
                               "then bias, scale_row, scale_col when used, in that order (a residual last): they "
                               "become the kernel's arguments")
            if fn.function_type.outputs.data:
                raise op_error(mm, f"@{fn.sym_name.data} must not return values (the kernel writes C)")
            for i, v in enumerate((mm.a, mm.b, mm.c, mm.alpha, mm.beta)):
                if v not in fn.body.block.args and not (i >= 3 and consts.allows(v.owner)):
                    raise op_error(mm, f"operand #{i} of gemm.matmul must be an argument of @{fn.sym_name.data}"
                                   + (" or an arith.constant" if i >= 3 else ""))
            name = fn.sym_name.data
            split, local = mm.get_int("split_k") or 1, mm.get_int("local_split") or 1
            if self.strategy != "sqc" and (split > 1 or local > 1):
                raise op_error(mm, f"split-k={split} local-split={local}: the {self.strategy} strategy does "
                               "not split K; use split-k=1 local-split=1 (or strategy sqc)")
            if (mm.get_int("wg_group") or 1) > 1 and (self.strategy != "sqc" or self.schedule == "seed" or shape.b_format):
                raise op_error(mm, f"wg-group={mm.get_int('wg_group')}: the grouped workgroup order is the sqc and dot "
                               "kernels' (strategy sqc, schedule default or cover, no b_format); use wg-group=1")
            if shape.b_format:  # f16 x block-quantized weights: isel/quant.py
                if self.gemv != "auto" and "gemv" not in mm.attributes:  # (a plan given: the SGPR GEMV's)
                    mm.attributes["gemv"] = StringAttr(self.gemv)
                kernels = quant_format_kernels(mm, name, self.strategy, self.schedule, self.forwarding)
            elif shape.dtype in ("f16", "i8"):  # the dot kernels: isel/dot.py
                if self.gemv != "auto" and "gemv" not in mm.attributes:
                    mm.attributes["gemv"] = StringAttr(self.gemv)
                kernels = dot_path_kernels(mm, name, self.strategy, self.schedule, self.forwarding, self.ROWS_TILES,
                                           self.a_transpose, self.gpu)
            elif self.schedule == "seed":
                kernels = [SeedKernelBuilder(mm, name, forwarding=self.forwarding).build()]
            elif self.strategy == "sqc":
                kernels = [SqcKernelBuilder(mm, name, forwarding=self.forwarding, schedule=self.schedule).build()]
            else:
                kernels = [builders[self.strategy](mm, name).build()]
            if split > 1 and shape.dtype not in ("f16", "i8"):  # (dot_kernels adds its own reduce)
                # the plan's other kernel (gemm-split-k): a reduction after, or a scaling before
                mode = mm.split_mode.data if mm.split_mode is not None else "workspace"
                if mode == "workspace":
                    kernels.append(SqcKernelBuilder(mm, f"{name}_reduce", role="reduce").build())
                else:
                    kernels.insert(0, SqcKernelBuilder(mm, f"{name}_scale", role="scale").build())
                set_launch_plan(kernels)  # the launch order, for the runtime
            # M at launch may be below the macro tile's M (the seed schedule: whole tiles only)
            if self.strategy == "sqc" and self.schedule in ("default", "cover") and shape.m < 0 and shape.dtype in ("f32", "f64"):
                fwd = self.forwarding
                rows = [rows_kernel(mm, name, r, lambda c, n: SqcKernelBuilder(c, n, forwarding=fwd).build())
                        for r in self.ROWS_TILES if r < mt_m]
                if rows:
                    main = kernels[0] if kernels[0].sym_name.data == name else kernels[1]
                    main.attributes["launch"] = DictionaryAttr({
                        **main.attributes["launch"].data,
                        "small_m": StringAttr(",".join(k.sym_name.data for k in rows))})
                    kernels += rows
            for kernel in kernels:
                consts.record(kernel)  # their values go to the launch information; the kernel takes them as arguments
                kernel.location = mm.location
                fn.parent_block().insert_op_before(kernel, fn)
            fn.detach()
            fn.erase()
