"""Instruction selection for f16 and int8 ``gemm.matmul`` through gfx906's dot instructions.

``convert-gemm-to-gcn`` hands a matmul whose A and B are f16 or i8 to :func:`dot_kernels`.
The kernel is the ``sqc`` scheme of ``passes/isel/sqc.py`` (A in SGPRs, B
streaming through a ring of VGPRs, no LDS) on *packed* K: one dword holds P = 2 (f16) or
P = 4 (i8) consecutive values of K, so

* one SGPR of A (``s_load_dwordx16``: 16 dwords = 32 f16 / 64 int8 values of a row) is the
  scalar operand of ``v_dot2_f32_f16 vC, vB, sA, vC`` (two f16 products added to the f32
  accumulator) or ``v_dot4_i32_i8 vC, vB, sA, vC`` (four int8 products into i32), and
* one VGPR of B (``global_load_dwordx4``: 4 dwords per lane) holds the same P values of K
  of the lane's column.

A's scalar loads follow the f32 kernel's schedules (``passes/isel/sqc_k_step.py``, shared with
``isel/sqc.py``, as is the K loop's skeleton, ``passes/isel/sqc_k_loop.py``): ``default``, batches of 64 SGPRs (4 rows of a K step) loaded after
the previous batch's dots, one ``s_waitcnt lgkmcnt(0)`` per 64 dots, the latency hidden by the
other waves (gemm-tile's default 32-row tiles fit 64 VGPRs: 4 waves per SIMD); ``cover``,
double-buffered batches of 32 (B stored K x N always takes ``cover``: its 16 B row pointers
do not fit beside a 64-SGPR batch).

That pairing needs K contiguous in memory for A: layouts ``NT`` (A stored M x K, B stored
N x K: the layout of LLM weights, ``y = x W^T``) and ``NN`` (B stored K x N: each B register
is packed from P rows, f16 with ``global_load_ushort`` + ``global_load_short_d16_hi``, int8
with ``global_load_ubyte`` + ``global_load_ubyte_d16_hi`` into two registers joined by
``v_lshl_add_u32``; for a static M of at least 64 (int8) / 256 (f16) the plan transposes B into an N x K
workspace copy first instead, and this kernel reads the copy as for ``NT``:
passes/isel/transpose.py, :attr:`b_trans`).  A stored K x M (TN, TT): rows P kk .. P kk + P - 1 of A (the tile's M
values, one scalar load each) go into SGPRs and each dot's A operand is packed from them by
SALU ops.  f16: ``s_pack_ll_b32_b16`` (even m) / ``s_pack_hh_b32_b16`` (odd m) of rows 2kk and
2kk + 1, one SALU instruction per dot.  int8: a 4x4 byte transpose of the dwords of rows
4kk..4kk+3 that hold four rows m (``_DotOperands.a_int8_t``: four ``s_pack_*_b32_b16`` into two
SGPR pairs and a 64-bit delta swap ``s_lshr``/``s_xor``/``s_and``/``s_xor``/``s_lshl``/``s_xor``,
10 SALU instructions per 4 dots; a tile of 4 rows uses the 32-bit form, 8 per 2 dots, as its
pairs fragment the SGPRs).  The SALU issues one instruction per SIMD per 4 cycles, as the VALU
a dot, so the transposes bound those kernels: modeled 4096^3 TT at 36.8 % of the int8 dot
peak (docs/kernels.md).  This packing needs M and lda (and A's batch stride) static multiples of P and
a tile of P..32 rows (a power of two), so the groups start on 4-byte boundaries.  Otherwise,
and where it is modeled faster (int8 TN/TT, f16 TT), the plan copies A into an M x K
workspace first (``<name>_transpose``, passes/isel/transpose.py; it uses LDS, the dot
kernel still does not) and this kernel reads the copy as layout N (:attr:`a_trans` False).
Rows read by dwords must start on 4-byte boundaries: lda for A stored M x K (and ldb for
NT, and the batch strides) are multiples of P (checked at compile time for static values,
at launch otherwise: ``vlpc.dialects.gemm.offset_errors``), except that a static lda (or A
batch stride) of A stored M x K that is not makes the plan copy A into the same padded
workspace first (``a_copied_for_alignment``; the copy kernel with A's strides swapped), and a
static ldb (or B batch stride) of B stored N x K likewise copies B (``<name>_copy_b``,
``b_copied_for_alignment``; this kernel reads B's copy through :meth:`_b_base`).

K need not be a multiple of P (nor of the K step): the loop runs over the ``K // P`` whole
dwords (K steps, then an unrolled or looped tail of whole dwords), and the last ``K % P``
values are read one element at a time with ``global_load_ushort``/``global_load_ubyte``
(zero-extended, so the other halves/bytes of the dot are 0 x 0) for A (a uniform address)
and B, and one dot instruction each: no access past the matrices, no padding read.

Output: C f32 (f16 inputs), ``alpha * acc + beta * C`` in f32 as the f32 kernel; C f16:
C read with ``global_load_ushort`` and widened with ``v_cvt_f32_f16``, the result rounded
once more with ``v_cvt_f16_f32`` and stored with ``global_store_short``; C i32 (int8
inputs): ``alpha * acc + beta * C`` with ``v_mul_lo_u32``/``v_add_u32`` (i32 alpha and beta,
wrapping as two's complement).  W8A8 dequantization (i8 inputs, C f32 or f16, operands
``scales(%scale_row, %scale_col)``): the i32 sum is converted with ``v_cvt_f32_i32`` and
multiplied by scale_row[m] (an SGPR per row, scalar loads) and scale_col[n] (one load per
lane), then C = alpha * that + beta * C in f32 as above.  BLAS rules as for f32: beta = 0
does not read C, alpha = 0 drops the products (f16 and dequantized int8: NaN/Inf in A, B or
the scales do not reach C; for i32 the product with 0 is 0 anyway).

Split-K across workgroups (``split-k=S``, workspace mode only): workgroup z computes K slice
z and stores its raw f32 (f16 inputs) or i32 (int8) partial tile into slice z of a workspace
of S x M x ldc x 4 bytes (the last kernel argument); ``<name>_reduce`` sums the S partials of
each element in slice order and applies the output above (dequantization, alpha = 0 and beta
= 0 rules included).  ``gemm-split-k`` chooses S by modeled time for these kernels too (plan
surrogate variants fitted to the timing model's dot kernels; the decode GEMV keeps S = 1).  A split of K across the wavefront groups
of a workgroup (``local-split``) reduces through LDS (:meth:`DotKernelBuilder._local_reduce`):
the decode GEMV plan (M = 1..16) uses it.

Fused epilogue (f16 products with C f32 or f16, and int8 products dequantized into f32 or f16
C): ``bias_row`` / ``bias_col``, ``relu`` (``v_max_f32``) and ``gelu`` (the tanh form through
``v_exp_f32`` and ``v_rcp_f32``), in order, on ``alpha * acc + beta * C`` in f32 (for int8:
after the dequantization) and before the store's rounding to f16; the instructions are the f32
kernel's (``emit.fused_epilogue``), so a split-K plan applies them in its reduce
kernel and the decode GEMV after its LDS reduction.  The bias (kernel argument ``bias``, after
beta and the scales) is an f16 vector for f16 products (``global_load_ushort`` widened by
``v_cvt_f32_f16``) and an f32 vector for dequantized int8 (``global_load_dword``), as its
scales: the epilogue runs in f32, and an int8 bias would lose what the scales give.
int8 -> i32 products fuse no epilogue (refused, located).  Not for these types: atomic
split-K, the ``lds`` strategy and the ``seed`` schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import DOT_PACK, ELEMENT_BYTES, GEMV_MAX_M, GemmShape, MatmulOp, gemv_a_width, type_name
from vlpc.passes.common import op_error
from vlpc.passes.isel.emit import (
    SMEM_IMM_MAX,
    Emitter,
    RowStepper,
    a_touch,
    fused_epilogue,
    grouped_workgroup_ids,
    k_slice,
    kernel_entry,
    kernel_interface,
    once,
    pow2_runs,
    row_exec,
    rows_kernel,
    set_launch_plan,
    tile_bases,
    tile_origin,
    zero_if_alpha_zero,
)
from vlpc.passes.isel.sqc_k_loop import emit_k_loops
from vlpc.passes.isel.sqc_k_step import a_batches
from vlpc.targets import GFX906

# The LDS of a local split's chunked reduction is a plan fact (vlpc.plan_model sizes it too).
from vlpc.dialects.gemm import DOT_LOCAL_SPLIT_LDS_BYTES  # noqa: E402

#: Fused epilogue operations of the dot kernels (f16 products, and int8 products dequantized
#: into f32/f16 C), in f32 before the store (``emit.fused_epilogue``).
DOT_EPILOGUE_OPS = ("bias_row", "bias_col", "relu", "gelu", "silu")

#: A and B element types this module compiles.
DOT_DTYPES = tuple(DOT_PACK)

_C_TYPE_NAMES = {"f32": "float", "f16": "half", "i32": "int", "i8": "char"}


def dot_kernarg_layout(shape: GemmShape, workspace: bool = False, bias: bool = False,
                       residual: str | None = None) -> list[dict]:
    """The kernel arguments of a dot kernel (byte offsets as the f32 kernel's):
    A, B, C pointers at 0, 8, 16; M, N, K, lda, ldb, ldc (i32, elements) at 24..44;
    alpha, beta at 48, 52 (f32 for f16 inputs and dequantized int8, i32 for int8 -> i32);
    dequantized int8 (C f32/f16) adds the scale_row and scale_col pointers at 56, 64; a bias
    epilogue the bias pointer after those (56, or 72 after the scales; an f16 vector for f16
    products, f32 for dequantized int8), then a ``residual`` operand's pointer (R's element type: f16
    or f32; 2-D products only); a strided
    batch adds stride_a, stride_b, stride_c (i32, elements) after those (56 or 72); a split-K plan
    (``workspace``) adds the workspace pointer (f32 or i32 partials) last, at 56 or 72."""
    ab = _C_TYPE_NAMES[shape.dtype]
    ct = _C_TYPE_NAMES[shape.c_type]
    dequant = shape.dtype == "i8" and shape.c_type != "i32"
    scalar = "int" if shape.dtype == "i8" and not dequant else "float"
    args = [("A", 0, 8, "global_buffer", f"{ab}*"), ("B", 8, 8, "global_buffer", f"{ab}*"),
            ("C", 16, 8, "global_buffer", f"{ct}*")]
    args += [(n, 24 + 4 * i, 4, "by_value", "int") for i, n in enumerate(("M", "N", "K", "lda", "ldb", "ldc"))]
    args += [("alpha", 48, 4, "by_value", scalar), ("beta", 52, 4, "by_value", scalar)]
    off = 56
    if dequant:
        args += [("scale_row", 56, 8, "global_buffer", "float*"), ("scale_col", 64, 8, "global_buffer", "float*")]
        off = 72
    if bias:
        args.append(("bias", off, 8, "global_buffer", "float*" if dequant else f"{ab}*"))
        off += 8
    if residual:
        args.append(("residual", off, 8, "global_buffer", f"{_C_TYPE_NAMES[residual]}*"))
        off += 8
    if shape.batch != 0:
        args += [(n, off + 4 * i, 4, "by_value", "int") for i, n in enumerate(("stride_a", "stride_b", "stride_c"))]
        off += 16
    if workspace:
        args.append(("workspace", off, 8, "global_buffer", "int*" if shape.c_type == "i32" else "float*"))
    out = [dict(name=n, offset=o, size=s, value_kind=k, type=t) for n, o, s, k, t in args]
    for a in out:
        if a["value_kind"] == "global_buffer":
            a["access"] = "read_write" if a["name"] in ("C", "workspace") else "read_only"
    return out


def residual_rows(e: Emitter, builder, kp: SSAValue, kargs: dict, row0: SSAValue, wg_x: SSAValue, mt_n: int,
                  ldc: SSAValue | int, tid: SSAValue):
    """``add(out, r)``: ``out`` (f32, the lane's column of tile row ``r`` after the epilogue) plus the
    residual R there (``residual_type()`` of the builder: f16 widened, or f32; R has C's shape and
    strides, docs/quantized.md), one load per element under the row's EXEC; or None when the
    builder has no residual operand."""
    rt = builder.residual_type()
    if rt is None:
        return None
    esz = 2 if rt == "f16" else 4
    ptr = e(gcn.SLoadDwordx2Op(kp, kargs["residual"], comment="kernarg residual")).sdst
    ld_b = ldc * esz if isinstance(ldc, int) else e.mul(ldc, esz)
    lo, hi = e.mul64(row0, ld_b)
    tile = e.add64(e.add64(ptr, lo, hi, comment="R tile rows"), e.mul(wg_x, mt_n * esz), 0, comment="R tile columns")
    voff = e(gcn.VLshlrevB32Op(esz.bit_length() - 1, tid)).vdst
    rows: dict = {0: tile}
    load = gcn.GlobalLoadUshortOp if rt == "f16" else gcn.GlobalLoadDwordOp

    def add(out: SSAValue, r: int) -> SSAValue:
        if r not in rows:
            rows[r] = e.add64(rows[max(rows)], (r - max(rows)) * ld_b, 0) if isinstance(ld_b, int) else \
                e.add64(rows[0], *e.mul64(e.const(r), ld_b))
        x = e(load(voff, rows[r], comment=f"R row {r}", merge=e(gcn.VMovB32Op(0)).vdst)).vdst
        if rt == "f16":
            x = e(gcn.VCvtF32F16Op(x)).vdst
        return e(gcn.VAddF32Op(out, x)).vdst  # + the residual

    return add


def blas_quick_returns(e: Emitter, alpha: SSAValue, beta: SSAValue, lanes: SSAValue, acc: list[SSAValue],
                       is_int: bool, name: str) -> tuple[list[SSAValue], SSAValue]:
    """BLAS's rules before the output ``alpha * acc + beta * C``: f32 sums become +0 when alpha is
    +-0 (:func:`zero_if_alpha_zero`: NaN/Inf in A or B do not reach C; i32 products with 0 are 0
    anyway), and the lanes that read C: ``lanes`` when beta != 0, none otherwise (beta = 0 does not
    read C).  Returns (acc, those lanes)."""
    if not is_int:  # BLAS: alpha == 0 drops A*B (NaN/Inf in A or B do not reach C)
        acc = zero_if_alpha_zero(e, alpha, 1, acc, f".L{name}_alpha_nonzero")
        e(gcn.SAndB32Op(beta, 0x7FFFFFFF, comment="SCC = (beta != 0)"))
    else:
        e(gcn.SCmpLgU32Op(beta, 0))  # SCC = (beta != 0)
    return acc, e(gcn.SCselectB64Op(lanes, 0)).sdst  # BLAS: beta == 0 does not read C


def check_dot(mm: MatmulOp, strategy: str, schedule: str) -> None:
    """Refuse (located) what the dot kernels do not compile."""
    s = mm.shape()
    if strategy != "sqc" or schedule not in ("default", "cover"):
        raise op_error(mm, f"{s.dtype} products are compiled by the dot kernels (strategy sqc, schedule default "
                       "or cover); "
                       f"strategy={strategy} schedule={schedule} is f32/f64 only")
    # A stored K x M: packed in SGPRs by SALU ops where it can be, else through a copy
    # (passes/isel/transpose.py: a_transpose_reason); nothing refused here
    bad = [x for x in mm.epilogue_ops() if (x not in DOT_EPILOGUE_OPS and not (x == "swiglu" and s.b_format))
           or s.c_type == "i32"]
    if bad:
        raise op_error(mm, f"fused epilogue {', '.join(bad)}: the dot kernels fuse bias_row, bias_col, relu, "
                       "gelu and silu for f16 products (bias f16) and dequantized int8 ones (C f32 or f16, bias f32); "
                       f"this is an {s.dtype} product with C {s.c_type}")
    if (mm.get_int("split_k") or 1) > 1 and mm.split_mode is not None and mm.split_mode.data != "workspace":
        raise op_error(mm, f"split-k={mm.get_int('split_k')} mode={mm.split_mode.data}: {s.dtype} products are "
                       "split across workgroups in workspace mode only (f32/i32 partials, a reduce kernel)")


def dot_kernels(mm: MatmulOp, name: str, strategy: str = "sqc", schedule: str = "default",
                forwarding: bool = True, rows_tiles: tuple[int, ...] = (8, 1), builder=None) -> list[gcn.KernelOp]:
    """The kernels for an f16 or i8 ``mm``: the main kernel and, for M given at launch, the
    row-narrow companions ``<name>_rows<R>`` (as for f32; see isel/sqc.py); ``builder``: the
    kernels' builder class (default :class:`DotKernelBuilder`).  The lane-along-K GEMV and the
    A copy (``<name>_transpose``) are chosen before, by the pass (isel/dispatch.py)."""
    check_dot(mm, strategy, schedule)
    builder = builder or DotKernelBuilder
    kernels = [builder(mm, name, forwarding=forwarding, schedule=schedule).build()]
    if (mm.get_int("split_k") or 1) > 1:  # workspace mode: the reduce kernel after the main one
        kernels.append(builder(mm, f"{name}_reduce", role="reduce").build())
        set_launch_plan(kernels)  # the launch order, for the runtime
    mt_m, _ = mm.get_int_array("macro_tile")
    if mm.shape().m < 0:
        rows = []
        for r in (x for x in rows_tiles if x < mt_m):
            rows.append(rows_kernel(mm, name, r, lambda c, n: builder(c, n, forwarding=forwarding,
                                                                       schedule=schedule).build()))
        if rows:
            main = kernels[0]
            main.attributes["launch"] = DictionaryAttr({
                **main.attributes["launch"].data, "small_m": StringAttr(",".join(k.sym_name.data for k in rows))})
            kernels += rows
    return kernels


def _reg(e: Emitter, x: SSAValue | int) -> SSAValue:
    """``x`` in a register (a static int through ``e.const``)."""
    return e.const(x) if isinstance(x, int) else x


def _bytes_of(e: Emitter, x: SSAValue | int, n: int) -> SSAValue | int:
    """``x`` x ``n`` (static, or an ``s_mul_i32``)."""
    return x * n if isinstance(x, int) else e.mul(x, n)


@dataclass
class _DotBuild:
    """What :meth:`DotKernelBuilder.build` threads through its parts: the kernel entry and its
    ids, the kernel arguments' offsets, the tile (first row, a last row tile's shift, first
    column, the N edge's lanes in EXEC; a local split's one-pass reduction moves ``row0`` to the
    group's row and ``mi_m`` to 1), the accumulators and what the output takes from before."""

    entry: Block
    e: Emitter
    kp: SSAValue
    wg_x: SSAValue
    wg_z: SSAValue | None
    tid: SSAValue
    slice_id: SSAValue | None
    kargs: dict
    batched: bool
    row0: SSAValue
    shift: SSAValue | None
    col0: SSAValue
    lanes: SSAValue
    mi_m: int
    is_int: bool
    dot_op: type
    acc: list = field(default_factory=list)
    early: dict = field(default_factory=dict)  # kernel arguments of the output loaded in the prologue
    lds_bytes: int = 0
    exit_label: str | None = None


class _DotOperands:
    """A's and B's loads and dot operands in the K loop of one :class:`DotKernelBuilder` kernel
    (``emit_k_loops``' callbacks), with what :meth:`DotKernelBuilder._dot_prologue` set up."""

    def __init__(self, kb: DotKernelBuilder, f: _DotBuild, *, lda, ldb, lda4, ldb4, a_tile, b_tile, voff_b, k_val,
                 k_left, k_total, piece, a_tile0, b_tile0, one_pass: bool, lds_add: bool):
        self.e, self.forwarding = f.e, kb.forwarding
        self.lda, self.ldb, self.lda4, self.ldb4 = lda, ldb, lda4, ldb4
        self.a_tile, self.b_tile, self.voff_b = a_tile, b_tile, voff_b
        self.k_val, self.k_left, self.k_total, self.piece = k_val, k_left, k_total, piece
        self.a_tile0, self.b_tile0, self.one_pass, self.lds_add = a_tile0, b_tile0, one_pass, lds_add
        self.late, self.P, self.eb, self.mi_m, ks = kb.late, kb.pack, kb.eb, kb.mi_m, kb.k_step
        self.is_int, self.a_trans, self.b_trans = f.is_int, kb.a_trans, kb.b_trans
        mi_m, P, eb, a_trans, b_trans = self.mi_m, self.P, self.eb, self.a_trans, self.b_trans
        self.n_steps = k_val // ks if isinstance(k_val, int) else None
        self.k_tail = k_val % ks if isinstance(k_val, int) else 0
        self.esz = esz = 4  # bytes per packed dword of K
        self.per_load = 16
        # A's pieces: a row's 16 dwords of the step per s_load_dwordx16 (row-major), or for
        # the decode GEMV (M <= 16 rows, B N x K) K-major: ``a_width`` dwords of every row
        # (gemv_a_width: the whole step when it fits one batch, else 4, or 8 for 16 rows) per
        # run of batches, so a batch reads one B quad per lane (two with 8-dword pieces) and that
        # quad is reloaded for the next step right after it (each batch's scalar loads find the
        # B lines the batch before asked for behind them in the HBM queue, not the whole
        # step's: the weight stream keeps flowing while the waves wait on A)
        self.kmajor = mi_m <= GEMV_MAX_M and b_trans and not a_trans
        self.a_width = gemv_a_width(mi_m, ks) if self.kmajor else self.per_load  # dwords of a row per scalar load
        self.imm_ok = isinstance(lda4, int) and ((P * ks - 1) * lda4 + mi_m * eb if a_trans else
                                                 (mi_m - 1) * lda4 + ks * esz) <= SMEM_IMM_MAX
        self.step_rows: dict = {}
        self.stepped = RowStepper(self.e, lda4)
        # B N x K: quads of 4 dwords (global_load_dwordx4); B K x N: one dword per slot, its two
        # f16 values from two rows (global_load_ushort, then global_load_short_d16_hi), or its
        # four int8 values from four rows: rows k, k+2 and k+1, k+3 into the bytes 0 and 2 of
        # two VGPRs (global_load_ubyte, then global_load_ubyte_d16_hi), joined by
        # v_lshl_add_u32 (hi << 8) + lo where a step first reads the slot (the loop carries
        # both halves, so the loads of the next step stay in flight)
        self.n_slots = ks // 4 if b_trans else ks
        self.nn_i8 = self.is_int and not b_trans
        self.joined: dict = {}
        self.transposed: dict = {}
        # int8, A K x M: the byte mask of the transposes' delta swap, an SGPR pair (bytes 0 and 2
        # of each dword), set once before the K loop
        self.swap_mask = self.e(gcn.RegSequenceOp([self.e.const(0x00FF00FF), self.e.const(0x00FF00FF)])).result \
            if a_trans and self.is_int and mi_m > 4 else None

    # ---- A ----

    def pieces(self, kcount: int) -> list[tuple]:
        mi_m, P = self.mi_m, self.P
        out = []
        if self.a_trans:  # rows P*kk .. P*kk+P-1 of A (K x M): the tile's mi_m values each (mi_m / P dwords)
            for kk in range(kcount):
                out += [(mi_m // P, list(range(mi_m)), [kk], h) for h in range(P)]
            return out
        if self.kmajor:
            for w, k0 in pow2_runs(kcount, self.a_width):
                for r in range(mi_m):
                    out.append((w, [r], list(range(k0, k0 + w))))
            return out
        for r in range(mi_m):
            for w, k0 in pow2_runs(kcount, self.per_load):
                out.append((w, [r], list(range(k0, k0 + w))))
        return out

    def batch(self, ps: list) -> list[list]:
        return a_batches(ps, self.late, group=self.P if self.a_trans else 1)

    def a_step(self, soff: SSAValue) -> SSAValue:
        """A's byte offset for K offset ``soff`` (bytes of packed dwords): itself, or for A
        K x M the rows it spans (P per dword) times lda * eb bytes: soff * lda (P * eb = 4)."""
        if not self.a_trans:
            return soff
        if soff not in self.step_rows:
            self.step_rows[soff] = self.e(gcn.SMulI32Op(soff, _reg(self.e, self.lda),
                                                        comment="A rows of the K offset")).sdst
        return self.step_rows[soff]

    def load_piece(self, pc, soff: SSAValue, kbase: int = 0) -> SSAValue:
        e, esz = self.e, self.esz
        w, rows, kks = pc[:3]
        soff = self.a_step(soff)
        idx, imm = rows[0], (kbase + kks[0]) * esz
        text = f"A row {rows[0]} dword {kbase + kks[0]}.."
        if self.a_trans:
            idx, imm = self.P * (kbase + kks[0]) + pc[3], 0
            text = f"A row k+{idx} (K x M)"
        if self.imm_ok:
            return e(gcn.S_LOADS[w](self.a_tile, offset=idx * self.lda4 + imm, soffset=soff, comment=text)).sdst
        return e(gcn.S_LOADS[w](self.a_tile, offset=imm, soffset=self.stepped(soff, idx), comment=text)).sdst

    # ---- B ----

    def b_slot_of(self, kk: int) -> tuple[int, int]:
        return (kk // 4, kk % 4) if self.b_trans else (kk, 0)

    def row_ptr(self, base: SSAValue, rows: int) -> SSAValue:
        """``base`` + ``rows`` rows of B (K x N); inside B: under 2^32 bytes (offset_errors)."""
        if rows == 0:
            return base
        ldb4 = self.ldb4
        return self.e.add64(base, rows * ldb4 if isinstance(ldb4, int) else self.e.mul(ldb4, rows), 0)

    def load_halves(self, ptrs: list[SSAValue], text: str) -> list[SSAValue]:
        """int8 B K x N, slots at ``ptrs`` (row k of each): [lo0, hi0, lo1, hi1, ...], lo holding
        rows k and k+2 in bytes 0 and 2, hi rows k+1 and k+3; the first bytes of every slot
        go out before the d16_hi loads that complete them (their waits stay partial)."""
        e, voff_b = self.e, self.voff_b
        first = [e(gcn.GlobalLoadUbyteOp(voff_b, self.row_ptr(p, j), comment=f"{text} {q} (row k+{j})")).vdst
                 for q, p in enumerate(ptrs) for j in (0, 1)]
        return [e(gcn.GlobalLoadUbyteD16HiOp(voff_b, self.row_ptr(ptrs[i // 2], 2 + i % 2),
                                             comment=f"{text} {i // 2} (row k+{2 + i % 2})", merge=v)).vdst
                for i, v in enumerate(first)]

    def join(self, lo: SSAValue, hi: SSAValue) -> SSAValue:
        key = (lo, hi)
        if key not in self.joined:
            self.joined[key] = self.e(gcn.VLshlAddU32Op(hi, 8, lo)).vdst
        return self.joined[key]

    def load_pair(self, base: SSAValue, text: str) -> SSAValue:
        """The f16 values of rows k and k + 1 (int8: k..k+3) of B (K x N) at ``base`` (row k)
        in one VGPR."""
        e = self.e
        if self.nn_i8:
            return self.join(*self.load_halves([base], text))
        lo = e(gcn.GlobalLoadUshortOp(self.voff_b, base, comment=f"{text} (row k)")).vdst
        nxt = e.add64(base, self.ldb4, 0)
        return e(gcn.GlobalLoadShortD16HiOp(self.voff_b, nxt, comment=f"{text} (row k+1)", merge=lo)).vdst

    def load_b_slot(self, slot: int, base: SSAValue, text: str) -> SSAValue:
        if self.b_trans:
            return self.e(gcn.GlobalLoadDwordx4Op(self.voff_b, base, offset=16 * slot, comment=text)).vdst
        return self.load_pair(self.row_ptr(base, self.P * slot), text)

    def load_all_slots(self, base: SSAValue, text: str) -> list[SSAValue]:
        """Every slot of a step.  B K x N: first the low halves of all slots, then the high
        halves: the d16 load reads the register it completes (the strict emulator and LLVM
        wait for the earlier load), so each wait then leaves the other slots' loads in flight."""
        e, voff_b, ldb4 = self.e, self.voff_b, self.ldb4
        if self.b_trans:
            return [self.load_b_slot(q, base, f"{text} {q}") for q in range(self.n_slots)]
        ptrs = [self.row_ptr(base, self.P * q) for q in range(self.n_slots)]
        if self.nn_i8:
            return self.load_halves(ptrs, text)
        los = [e(gcn.GlobalLoadUshortOp(voff_b, p, comment=f"{text} {q} (row k)")).vdst for q, p in enumerate(ptrs)]
        return [e(gcn.GlobalLoadShortD16HiOp(voff_b, e.add64(p, ldb4, 0), comment=f"{text} {q} (row k+1)",
                                             merge=lo)).vdst for q, (p, lo) in enumerate(zip(ptrs, los))]

    def b_step_base(self, koff: SSAValue) -> SSAValue:
        e = self.e
        if self.b_trans:
            return e.add64(self.b_tile, koff, 0, comment="B for the next K step")
        return e.add64(self.b_tile, *e.mul64(koff, _reg(e, self.ldb)), comment="B for the next K step")

    def b_operand(self, slots: list[SSAValue], kk: int) -> SSAValue:
        q, j = self.b_slot_of(kk)
        if self.nn_i8:
            return self.join(slots[2 * q], slots[2 * q + 1])
        return self.e.sub(slots[q], j, 1) if self.b_trans else slots[q]

    # ---- the dots ----

    def fma_order(self, batch_pieces, last: bool):
        pairs = [(r, kk, pi, pc_i) for pi, pc in enumerate(batch_pieces) if len(pc) == 3 or pc[3] == 0
                 for pc_i, (r, kk) in enumerate((r, kk) for r in pc[1] for kk in pc[2])]
        # (int8 A K x M: k-major, so only one transposed block of 4 rows is live at a time)
        # (the decode GEMV's 8-dword pieces: k-major, so each B quad reloads as early as it can)
        k_major = (last or not self.forwarding or (self.a_trans and self.is_int)
                   or (self.kmajor and self.a_width == 8))
        return sorted(pairs, key=(lambda t: (t[1], t[0])) if k_major else (lambda t: (t[0], t[1])))

    def a_int8_t(self, vals: list[SSAValue], pi: int, w: int, r: int) -> SSAValue:
        """int8, A K x M: A[m][4kk..4kk+3] (bytes m % 4 of dword m // 4 of rows 4kk..4kk+3,
        pieces pi..pi+3) as one dword, by a 4x4 byte transpose of the four rows' dwords in
        SALU ops, done once for the four m of the dword: the pair X = (s_pack_ll_b32_b16,
        s_pack_hh_b32_b16) of rows (0, 2) and Y = the same of rows (1, 3) hold the 16-bit
        halves of m % 4 = 0, 1 (low dword) and 2, 3 (high); a 64-bit delta swap of bytes
        t = ((X >> 8) ^ Y) & 0x00FF00FF_00FF00FF gives m % 4 = 0, 2 in X ^ (t << 8) and
        1, 3 in Y ^ t: 4 + 6 SALU instructions per 4 dots."""
        e = self.e
        j = r // 4
        key = (*(vals[pi + h] for h in range(4)), j)
        if w == 1:  # a tile of 4 rows: the 32-bit form (the pairs fragment the SGPRs there)
            return self.a_int8_t32(vals, pi, r)
        if key not in self.transposed:
            regs = [e.sub(vals[pi + h], j, 1) for h in range(4)]

            def pair(lo: SSAValue, hi: SSAValue, text: str) -> SSAValue:
                return e(gcn.RegSequenceOp([e(gcn.SPackLlB32B16Op(lo, hi, comment=text)).sdst,
                                            e(gcn.SPackHhB32B16Op(lo, hi)).sdst])).result
            m0 = r - r % 4
            x = pair(regs[0], regs[2], f"A rows k, k+2 of m = {m0}..{m0 + 3}")
            y = pair(regs[1], regs[3], "A rows k+1, k+3")
            t = e(gcn.SLshrB64Op(x, 8)).sdst
            t = e(gcn.SXorB64Op(t, y)).sdst
            t = e(gcn.SAndB64Op(t, self.swap_mask)).sdst
            odd = e(gcn.SXorB64Op(y, t)).sdst  # m % 4 = 1 (low), 3 (high)
            even = e(gcn.SXorB64Op(x, e(gcn.SLshlB64Op(t, 8)).sdst)).sdst  # m % 4 = 0, 2
            self.transposed[key] = [e.sub(even, 0, 1), e.sub(odd, 0, 1), e.sub(even, 1, 1), e.sub(odd, 1, 1)]
        return self.transposed[key][r % 4]

    def a_int8_t32(self, vals: list[SSAValue], pi: int, r: int) -> SSAValue:
        """:meth:`a_int8_t` for a tile of 4 rows (one dword per row of A) in 32-bit SALU ops:
        X, Y = s_pack_ll_b32_b16 (m % 4 = 0, 1) or s_pack_hh_b32_b16 (2, 3) of rows (0, 2),
        (1, 3); t = ((X >> 8) ^ Y) & 0x00FF00FF; m even: X ^ (t << 8), m odd: Y ^ t (8 SALU
        instructions per two dots)."""
        e = self.e
        half = (r % 4) // 2
        key = (*(vals[pi + h] for h in range(4)), half)
        if key not in self.transposed:
            pack = gcn.SPackHhB32B16Op if half else gcn.SPackLlB32B16Op
            m0 = r - r % 2
            x = e(pack(vals[pi], vals[pi + 2], comment=f"A rows k, k+2 of m = {m0}, {m0 + 1}")).sdst
            y = e(pack(vals[pi + 1], vals[pi + 3], comment="A rows k+1, k+3")).sdst
            t = e(gcn.SLshrB32Op(x, 8)).sdst
            t = e(gcn.SXorB32Op(t, y)).sdst
            t = e(gcn.SAndB32Op(t, 0x00FF00FF)).sdst
            odd = e(gcn.SXorB32Op(y, t, comment=f"A[m = {m0 + 1}][k..k+3]")).sdst
            even = e(gcn.SXorB32Op(x, e(gcn.SLshlB32Op(t, 8)).sdst, comment=f"A[m = {m0}][k..k+3]")).sdst
            self.transposed[key] = (even, odd)
        return self.transposed[key][r % 2]

    def a_operand(self, vals: list[SSAValue], batch_pieces, pi: int, r: int, kk: int) -> SSAValue:
        e = self.e
        w, rows, kks = batch_pieces[pi][:3]
        if self.a_trans and self.is_int:
            return self.a_int8_t(vals, pi, w, r - rows[0])
        if self.a_trans:  # A[m][2kk] and A[m][2kk+1]: the halves m % 2 of rows 2kk, 2kk+1 (piece pi + 1)
            j = (r - rows[0]) // 2
            lo, hi = (e.sub(vals[i], j, 1) if w > 1 else vals[i] for i in (pi, pi + 1))
            pack = gcn.SPackLlB32B16Op if (r - rows[0]) % 2 == 0 else gcn.SPackHhB32B16Op
            return e(pack(lo, hi)).sdst
        j = kks.index(kk)
        return e.sub(vals[pi], j, 1) if w > 1 else vals[pi]


class DotKernelBuilder:
    """Builds the dot kernel for one planned f16/i8 ``gemm.matmul`` (module docstring)."""

    def __init__(self, mm: MatmulOp, name: str, forwarding: bool = True, schedule: str = "default",
                 role: str = "main"):
        assert role in ("main", "reduce")
        self.mm = mm
        self.role = role  # reduce: sums a split-K plan's workspace partials, then the epilogue
        self.split = mm.get_int("split_k") or 1
        self.name = name
        self.forwarding = forwarding
        self.shape: GemmShape = mm.shape()
        self.mt_m, self.mt_n = mm.get_int_array("macro_tile")
        self.mi_m, _ = mm.get_int_array("micro_tile")
        self.k_step = mm.get_int("k_step")  # in dwords of packed K
        self.local = mm.get_int("local_split") or 1
        self.wg_size = mm.get_int_array("workgroup_size")
        if role == "reduce":  # one group of waves over the macro tile's columns
            self.wg_size = (self.wg_size[0] // self.local, 1, 1)
            self.local = 1
        self.pack = DOT_PACK[self.shape.dtype]
        self.eb = ELEMENT_BYTES[self.shape.dtype]
        self.ldb_unit = self.eb  # bytes per unit of ldb (1 for a quantized B's bytes: passes/isel/quant*.py)
        self.acc_per_row = 1  # accumulators per row of the tile until _combine_rows (2: a SwiGLU's gate and up)
        # A's schedule (passes/isel/sqc_k_step.py): ``default``, batches of 64 SGPRs loaded after
        # the previous batch's dots (as the f32 kernel); ``cover``, double-buffered batches of 32
        # (B stored K x N: cover, whose 32-SGPR batches leave room for the 16 B row pointers)
        self.b_trans = mm.layout.data[1] == "T"  # B read N x K (stored so, or an N x K copy of it)
        self.late = schedule != "cover" and self.b_trans
        self.a_trans = mm.layout.data[0] == "T"  # A K x M packed here (False: a copy, passes/isel/transpose.py)

    def kernargs(self) -> list[dict]:
        return dot_kernarg_layout(self.shape, workspace=self.split > 1, bias=self.mm.bias is not None,
                                  residual=self.residual_type())

    def residual_type(self) -> str | None:
        """The element type of the residual operand R ("f16", "f32"), or None without one."""
        r = self.mm.residual
        return None if r is None else type_name(r.type.element_type)

    def _a_base(self, e: Emitter, kp: SSAValue, kargs: dict, wg_z: SSAValue | None, batch_base) -> SSAValue:
        """A's base (an SGPR pair) for the workgroup's batch entry."""
        return batch_base(e(gcn.SLoadDwordx2Op(kp, kargs["A"], comment="kernarg A")).sdst, "a", self.eb)

    def _b_base(self, e: Emitter, kp: SSAValue, kargs: dict, wg_z: SSAValue | None, batch_base) -> SSAValue:
        """B's base (an SGPR pair) for the workgroup's batch entry."""
        return batch_base(e(gcn.SLoadDwordx2Op(kp, kargs["B"], comment="kernarg B")).sdst, "b", self.eb)

    def _b_slice_bytes(self, e: Emitter, k_begin: SSAValue, kb4: SSAValue) -> SSAValue:
        """B's byte offset (stored N x K) of the K slice from dword ``k_begin`` (``kb4`` = 4 x that)."""
        return kb4

    def _k_loop_override(self, e: Emitter, acc: list[SSAValue], a_tile: SSAValue, b_tile: SSAValue,
                         voff_b: SSAValue, k_val: SSAValue | int, lda4: SSAValue | int) -> list[SSAValue] | None:
        """The accumulators ``acc`` (zeros, one per row of the tile) after another K loop than
        :func:`emit_k_loops` over ``k_val`` dwords of A from ``a_tile``, B from ``b_tile`` (the
        slice's bases) and ``voff_b`` (a subclass's, e.g. the
        quantized GEMV of passes/isel/quant.py), or None for this kernel's."""
        return None

    def _combine_rows(self, e: Emitter, acc: list[SSAValue]) -> list[SSAValue]:
        """One accumulator per row from the ``acc_per_row`` sums of each row after the K loop and
        the groups' reduction (a subclass's: the quantized GEMV's SwiGLU); here ``acc`` itself."""
        return acc

    def _arg(self, e: Emitter, kp: SSAValue, name: str, static: int) -> SSAValue | int:
        if static >= 0:
            return static
        off = {a["name"]: a["offset"] for a in self.kernargs()}[name]
        return e(gcn.SLoadDwordOp(kp, off, comment=f"kernarg {name}")).sdst

    def build(self) -> gcn.KernelOp:
        """The kernel, in parts: :meth:`_dot_entry` (kernel entry, the tile's origin and EXEC);
        for the main role :meth:`_dot_prologue` (A's and B's bases, K and the K slice),
        :meth:`_dot_k_loop` (the dots, :class:`_DotOperands`) and :meth:`_dot_groups` (a local
        split's reduction); :meth:`_dot_split_k` (a split-K plan's workspace: the main role's
        kernel ends there after its partial rows, the reduce role sums them); :meth:`_dot_output`
        (C = alpha * acc + beta * C and the fused epilogue)."""
        f = self._dot_entry()
        if self.role == "main":
            ops = self._dot_prologue(f)
            self._dot_k_loop(f, ops)
            self._dot_groups(f, ops)
        if self.split > 1 and self._dot_split_k(f):
            return self._finish(f.entry, f.lds_bytes)
        self._dot_output(f)
        return self._finish(f.entry, f.lds_bytes)

    def _dot_entry(self) -> _DotBuild:
        """The kernel entry (kernel arguments' pointer, workgroup and work-item ids) and the
        tile: its first row and column, a last row tile's shift, the N edge's lanes in EXEC."""
        s = self.shape
        is_int = s.dtype == "i8"
        batched = s.batch != 0
        split_z = self.role == "main" and self.split > 1  # workgroup id z is the K slice
        ke = kernel_entry(batched or split_z, self.local, self.mt_n)  # (roles: _finish)
        e = ke.e
        # the N edge's lanes in EXEC; a last row tile past M moved up to end at row M
        arg = once(lambda name, static: self._arg(e, ke.kp, name, static))
        # the grouped workgroup order (wg_group): the epilogue's column bases use the remapped ids too
        ke.wg_x, ke.wg_y = grouped_workgroup_ids(e, s, self.mt_m, self.mt_n, ke.wg_x, ke.wg_y,
                                                 self.mm.get_int("wg_group") or 1, arg)
        row0, shift, col0, lanes = tile_origin(e, s, self.mt_m, self.mt_n, ke.wg_x, ke.wg_y, ke.tid, ke.exec0, arg)
        return _DotBuild(entry=ke.block, e=e, kp=ke.kp, wg_x=ke.wg_x, wg_z=ke.wg_z, tid=ke.tid, slice_id=ke.slice_id,
                         kargs={a["name"]: a["offset"] for a in self.kernargs()}, batched=batched, row0=row0,
                         shift=shift, col0=col0, lanes=lanes, mi_m=self.mi_m, is_int=is_int,
                         dot_op=gcn.VDot4I32I8Op if is_int else gcn.VDot2F32F16Op)

    def _batch_base(self, f: _DotBuild, ptr: SSAValue, which: str, esz: int) -> SSAValue:
        """``ptr`` + the workgroup's batch entry x the batch stride of ``which`` (a, b or c)."""
        if not f.batched:
            return ptr
        e, s = f.e, self.shape
        static = getattr(s, f"stride_{which}")
        stride = (static * esz if static >= 0 else
                  e.mul(e(gcn.SLoadDwordOp(f.kp, f.kargs[f"stride_{which}"], comment=f"kernarg stride_{which}")).sdst,
                        esz))
        lo, hi = e.mul64(f.wg_z, stride)
        return e.add64(ptr, lo, hi, comment=f"{which.upper()} + batch * stride_{which}")

    def _dot_prologue(self, f: _DotBuild) -> _DotOperands:
        """The main role's prologue: A's and B's bases, the output's kernel arguments early for a
        local split, the decode GEMV's LDS sums zeroed (int8 one pass), K in dwords and values
        left over, the K slice of a split and the tile's A and B bases."""
        s, e, kp, kargs = self.shape, f.e, f.kp, f.kargs
        P, eb, local, mi_m, ks = self.pack, self.eb, self.local, self.mi_m, self.k_step
        slice_id, tid, lanes = f.slice_id, f.tid, f.lanes

        def batch_base(ptr: SSAValue, which: str, esz: int) -> SSAValue:
            return self._batch_base(f, ptr, which, esz)
        ptr_a = self._a_base(e, kp, kargs, f.wg_z, batch_base)
        ptr_b = self._b_base(e, kp, kargs, f.wg_z, batch_base)
        if local > 1 and self.split == 1:  # the output's kernel arguments now, from A's and B's line
            f.early = {name: e(gcn.SLoadDwordx2Op(kp, kargs[name], comment=f"kernarg {name}") if name == "C" else
                               gcn.SLoadDwordOp(kp, kargs[name], comment=f"kernarg {name}")).sdst
                       for name in ("C", "alpha", "beta")}
        # the decode GEMV's reduction in one pass, group g < M storing row g (_dot_groups); int8:
        # the groups add their i32 partials into one M-row LDS block (ds_add_u32: exact in any
        # order), zeroed here while the kernel arguments load, a barrier before any adds
        one_pass = (local > 1 and self.split == 1 and f.shift is None and mi_m <= local and self.acc_per_row == 1
                    and local * mi_m * self.mt_n * 4 <= GFX906.lds_bytes_per_cu)
        lds_add = one_pass and f.is_int
        if lds_add:
            rzero = e(gcn.VAddU32Op(e.mul(slice_id, self.mt_n * 4), e(gcn.VLshlrevB32Op(2, tid)).vdst)).vdst
            e(gcn.SCmpLtU32Op(slice_id, mi_m))
            e(gcn.SCselectB64Op(lanes, 0, result_type=gcn.exec_type()))
            e(gcn.DsWriteB32Op(rzero, e(gcn.VMovB32Op(0)).vdst, comment="zero the group's row of the sums"))
            e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
            e(gcn.SBarrierOp())
        k_el = self._arg(e, kp, "K", s.k)
        lda = self._arg(e, kp, "lda", s.lda)
        ldb = self._arg(e, kp, "ldb", s.ldb)
        # K in whole dwords (P values each) and the values left over
        if isinstance(k_el, int):
            k_val: SSAValue | int = k_el // P
            k_left: SSAValue | int = k_el % P
        else:
            k_val = e(gcn.SLshrB32Op(k_el, P.bit_length() - 1, comment=f"K dwords = K / {P}")).sdst
            k_left = e(gcn.SAndB32Op(k_el, P - 1, comment=f"K values left = K % {P}")).sdst
        k_total = k_val
        k_begin = None
        # K slice: wavefront group slice_id of workgroup z (split-K) takes slice z * L + group
        pieces = self.split * local
        piece = slice_id
        if self.split > 1:
            piece = f.wg_z if slice_id is None else \
                e(gcn.SAddU32Op(e.mul(f.wg_z, local), slice_id, comment="K slice")).sdst
        if pieces > 1:
            kc = -(-(-(-k_val // pieces)) // ks) * ks if isinstance(k_val, int) else None
            k_val, k_begin = k_slice(e, k_val, piece, pieces, ks, kc, ("K dwords per slice",
                                     "first dword of the slice", "K dwords of this slice"))

        lda4, ldb4 = _bytes_of(e, lda, eb), _bytes_of(e, ldb, self.ldb_unit)  # row strides in bytes
        a_trans = self.a_trans  # A stored K x M (f16: rows k, k+1 packed by SALU)
        b_trans = self.b_trans  # B read N x K (else K x N: P rows per dword)
        a_tile0, b_tile0, voff_b = tile_bases(e, ptr_a, ptr_b, f.row0, f.col0, tid, lda4, ldb4, eb, a_trans, b_trans,
                                              self.mt_n, (f"{eb}", f"{eb}"))
        a_tile, b_tile = a_tile0, b_tile0
        if k_begin is not None:
            kb4 = e.mul(k_begin, 4)
            a_tile = (e.add64(a_tile0, *e.mul64(kb4, _reg(e, lda)), comment="A + first row pair of the slice")
                      if a_trans else e.add64(a_tile0, kb4, 0, comment="A + first dword of the slice"))
            b_tile = (e.add64(b_tile0, self._b_slice_bytes(e, k_begin, kb4), 0, comment="B + first dword of the slice")
                      if b_trans else
                      e.add64(b_tile0, *e.mul64(kb4, _reg(e, ldb)), comment="B + first row pair of the slice"))
        return _DotOperands(self, f, lda=lda, ldb=ldb, lda4=lda4, ldb4=ldb4, a_tile=a_tile, b_tile=b_tile,
                            voff_b=voff_b, k_val=k_val, k_left=k_left, k_total=k_total, piece=piece,
                            a_tile0=a_tile0, b_tile0=b_tile0, one_pass=one_pass, lds_add=lds_add)

    def _dot_k_loop(self, f: _DotBuild, ops: _DotOperands) -> None:
        """The accumulators (one per row of the tile) through the K loop (steps of k_step dwords)
        and its dword tails (passes/isel/sqc_k_loop.py, shared with the f32/f64 kernel; a
        subclass's own loop: :meth:`_k_loop_override`), then the K % P values after the last
        whole dword, one element at a time (:meth:`_leftover`)."""
        e, mi_m, ks = f.e, self.mi_m, self.k_step
        # the decode GEMV (static K) peels its last K step: it loads nothing of a next step (the
        # loop's clamped re-read of A and B would queue behind the other waves' last lines)
        peel = ops.kmajor and self.local > 1 and ops.n_steps is not None and ops.n_steps >= 2
        acc = [e(gcn.VMovB32Op(0)).vdst for _ in range(mi_m)]
        # B K x N: every slot reloaded together after the step's last dot (see load_all_slots);
        # the GEMV's K-major batches reload each quad after the batch that used it
        quant = self._k_loop_override(e, acc, ops.a_tile, ops.b_tile, ops.voff_b, ops.k_val, ops.lda4)
        b_trans, voff_b = self.b_trans, ops.voff_b
        acc = quant if quant is not None else emit_k_loops(
            e, self.name, acc, ops.k_val, ops.n_steps, ops.k_tail, ks, ops.esz, 1,
            batches=lambda kc: ops.batch(ops.pieces(kc)),
            fma_order=ops.fma_order, late=self.late, bunch=not b_trans, peel=peel, mac_op=f.dot_op,
            texts={"k_full": "K dwords rounded down to whole K steps", "k_rest": "dword tail = K dwords % k_step",
                   "next": "next dword", "b_one": "B tail dword", "b_tail": "B tail dword {}"},
            a_offset=lambda koff: koff, load_piece=ops.load_piece, a_operand=ops.a_operand,
            b_tile=ops.b_tile, voff_b=voff_b, b_quads=b_trans, b_slot_of=ops.b_slot_of, load_b_slot=ops.load_b_slot,
            load_all_slots=ops.load_all_slots, b_step_base=ops.b_step_base, b_operand=ops.b_operand,
            load_b_one=lambda base, text: (e(gcn.GlobalLoadDwordOp(voff_b, base, comment=text)).vdst
                                           if b_trans else ops.load_pair(base, text)),
            # A row-major, not the decode GEMV: touch the next step's A lines (a_touch)
            prefetch_a=None if (self.a_trans or ops.kmajor) else a_touch(e, ops.a_tile, f.tid, ops.lda4, mi_m,
                                                                         ops.n_steps))

        # ---- the K % P values after the last whole dword: one element at a time ----
        k_left = ops.k_left
        if not (isinstance(k_left, int) and k_left == 0):
            small_load = gcn.GlobalLoadUbyteOp if f.is_int else gcn.GlobalLoadUshortOp
            acc = self._leftover(e, acc, ops.k_total, k_left, ops.piece, ops.a_tile0, ops.b_tile0, voff_b, ops.lda4,
                                 small_load, f.dot_op, None if b_trans else ops.ldb, ops.lda if self.a_trans else None)
        f.acc = acc

    def _dot_groups(self, f: _DotBuild, ops: _DotOperands) -> None:
        """A local split: the wavefront groups' partial sums through LDS (:meth:`_local_reduce`);
        then one accumulator per row (:meth:`_combine_rows`)."""
        e, acc, slice_id = f.e, f.acc, f.slice_id
        add = gcn.VAddU32Op if f.is_int else gcn.VAddF32Op
        f.lds_bytes = 0
        # the decode GEMV: group g < M sums row g in one pass and stores it itself (the output
        # below for one row, row0 + g): no second barrier, and the stores spread over M waves
        if ops.one_pass:
            rows_m = len(acc)
            acc, f.lds_bytes = self._local_reduce(e, acc, slice_id, f.tid, f.lanes, add, spread=True,
                                                  lds_add=ops.lds_add)
            f.exit_label = f".L{self.name}_groups_done"
            e(gcn.SCmpLtU32Op(slice_id, rows_m))
            e(gcn.SCbranchForwardOp("scc0", f.exit_label))
            f.row0 = e(gcn.SAddU32Op(f.row0, slice_id, comment="this group's row")).sdst
            f.mi_m = 1
        elif self.local > 1:
            acc, f.lds_bytes = self._local_reduce(e, acc, slice_id, f.tid, f.lanes, add)
            e(gcn.SCmpEqU32Op(slice_id, 0))
            f.lanes = e(gcn.SCselectB64Op(f.lanes, 0)).sdst
        f.acc = self._combine_rows(e, acc)

    def _dot_split_k(self, f: _DotBuild) -> bool:
        """Split-K (workspace mode): slices of S x M x ldc f32/i32 partials.  The main role stores
        its raw partial rows (group 0's after a local split) and ends the kernel (True); the
        reduce role sums every row's S partials in slice order (at most 32 loads in flight) into
        the accumulators (False: the output follows)."""
        s, e, kp, mi_m = self.shape, f.e, f.kp, f.mi_m
        ws = e(gcn.SLoadDwordx2Op(kp, f.kargs["workspace"], comment="kernarg workspace")).sdst
        ldw = _bytes_of(e, self._arg(e, kp, "ldc", s.ldc), 4)  # a workspace row in bytes
        m_rows = self._arg(e, kp, "M", s.m)
        slice_bytes = (m_rows * ldw if isinstance(m_rows, int) and isinstance(ldw, int) else
                       e.mul(_reg(e, m_rows), ldw) if isinstance(ldw, int) else e.mul(ldw, m_rows))
        if self.role == "main":  # workgroup id z is the K slice
            ws = e.add64(ws, *e.mul64(f.wg_z, slice_bytes), comment="workspace slice z")
        lo, hi = e.mul64(f.row0, ldw)
        ws_row = e.add64(e.add64(ws, lo, hi, comment="workspace tile rows"), e.mul(f.wg_x, self.mt_n * 4), 0,
                         comment="workspace tile columns")
        voff_w = e(gcn.VLshlrevB32Op(2, f.tid)).vdst
        ws_rows = [ws_row]
        for _ in range(1, mi_m):
            ws_rows.append(e.add64(ws_rows[-1], ldw, 0))
        if self.role == "main":  # the raw partial rows (group 0's after a local split)
            for r in range(mi_m):
                if f.shift is not None or r == 0:
                    row_exec(e, f.lanes, f.shift, r)
                e(gcn.GlobalStoreDwordOp(voff_w, f.acc[r], ws_rows[r]))  # the partial row r
            e(gcn.SEndpgmOp())
            return True
        # reduce: every row's S partials summed in slice order (at most 32 loads in flight)
        e(gcn.SAndB64Op(f.lanes, -1, result_type=gcn.exec_type()))
        offs = [voff_w] + [e(gcn.VAddU32Op(_reg(e, slice_bytes * j if isinstance(slice_bytes, int) else
                                                 e.mul(slice_bytes, j)), voff_w)).vdst
                           for j in range(1, self.split)]
        add = gcn.VAddU32Op if f.is_int else gcn.VAddF32Op
        per = max(1, 32 // self.split)
        for r0 in range(0, mi_m, per):
            parts = [[e(gcn.GlobalLoadDwordOp(offs[j], ws_rows[r], comment=f"partial {j} row {r}")).vdst
                      for j in range(self.split)] for r in range(r0, min(r0 + per, mi_m))]
            for ps in parts:
                total = ps[0]
                for pj in ps[1:]:
                    total = e(add(total, pj)).vdst
                f.acc.append(total)
        return False

    def _dot_output(self, f: _DotBuild) -> None:
        """C = alpha * acc + beta * C (i32: wrapping; int8 dequantized into f32/f16 C: the scales
        first, :meth:`_dot_dequant`), the BLAS quick returns, the fused epilogue and the store, 16 rows at a time."""
        s, e, kp, kargs = self.shape, f.e, f.kp, f.kargs
        mt_n, mi_m, shift, lanes, tid, row0 = self.mt_n, f.mi_m, f.shift, f.lanes, f.tid, f.row0
        c_type = s.c_type
        c_esz = ELEMENT_BYTES[c_type]
        is_int, acc, early = f.is_int, f.acc, f.early
        ldc = self._arg(e, kp, "ldc", s.ldc)
        ldc_b = _bytes_of(e, ldc, c_esz)
        ptr_c = self._batch_base(f, early.get("C") or e(gcn.SLoadDwordx2Op(kp, kargs["C"], comment="kernarg C")).sdst,
                                 "c", c_esz)
        lo, hi = e.mul64(row0, ldc_b)
        c_tile = e.add64(ptr_c, lo, hi, comment="C tile rows")
        c_tile = e.add64(c_tile, e.mul(f.wg_x, mt_n * c_esz), 0, comment="C tile columns")
        residual = residual_rows(e, self, kp, kargs, row0, f.wg_x, mt_n, ldc, tid)
        alpha = early.get("alpha") or e(gcn.SLoadDwordOp(kp, kargs["alpha"], comment="kernarg alpha")).sdst
        beta = early.get("beta") or e(gcn.SLoadDwordOp(kp, kargs["beta"], comment="kernarg beta")).sdst
        dequant = is_int and c_type != "i32"
        if dequant:
            acc = self._dot_dequant(f)
            is_int = False  # from here on an f32 epilogue
        acc, load_lanes = blas_quick_returns(e, alpha, beta, lanes, acc, is_int, self.name)
        voff_c = e(gcn.VLshlrevB32Op(c_esz.bit_length() - 1, tid)).vdst
        c_load = gcn.GlobalLoadUshortOp if c_type == "f16" else gcn.GlobalLoadDwordOp
        c_store = gcn.GlobalStoreShortOp if c_type == "f16" else gcn.GlobalStoreDwordOp

        # Fused epilogue (bias_row / bias_col: an f16 vector widened to f32 for f16 products, an
        # f32 one for dequantized int8; relu; gelu), applied to alpha * acc + beta * C in f32
        # before the store (and its f16 rounding): emit.fused_epilogue.
        epi = self.mm.epilogue_ops()
        bias_col = bias_row_ptr = None
        bias_load, bias_esz = (gcn.GlobalLoadDwordOp, 4) if dequant else (gcn.GlobalLoadUshortOp, 2)
        if epi and self.mm.bias is not None:
            bias_ptr = e(gcn.SLoadDwordx2Op(kp, kargs["bias"], comment="kernarg bias")).sdst
            if "bias_col" in epi:
                e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))  # the columns below N
                base = e.add64(bias_ptr, e.mul(f.wg_x, mt_n * bias_esz), 0, comment="bias + col0")
                bias_col = e(bias_load(e(gcn.VLshlrevB32Op(bias_esz.bit_length() - 1, tid)).vdst, base,
                                       comment="bias[n]")).vdst
                if not dequant:
                    bias_col = e(gcn.VCvtF32F16Op(bias_col)).vdst
            if "bias_row" in epi:
                bias_row_ptr = e.add64(bias_ptr, *e.mul64(row0, bias_esz), comment="bias + row0")
                v_zero = e(gcn.VMovB32Op(0)).vdst  # every lane reads bias[row] (a uniform address)
        apply_epilogue = fused_epilogue(e, epi, bias_col)

        group = 16
        c_row = c_tile
        for g0 in range(0, mi_m, group):
            rows = list(range(g0, min(g0 + group, mi_m)))
            ptrs = []
            for r in rows:
                ptrs.append(c_row)
                if r + 1 < mi_m:
                    c_row = e.add64(c_row, ldc_b, 0)
            if shift is not None and g0:
                e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
            zeros = [e(gcn.VMovB32Op(0)).vdst for _ in rows]
            brows: list = [None] * len(rows)
            if bias_row_ptr is not None:  # bias[row0 + r] for the group's rows, before the C loads
                e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
                brows = [e(bias_load(v_zero, bias_row_ptr, offset=bias_esz * r, comment=f"bias[row {r}]")).vdst
                         for r in rows]
            cs = []
            for i, (r, ptr) in enumerate(zip(rows, ptrs)):
                if shift is not None or i == 0:
                    row_exec(e, load_lanes, shift, r)
                cs.append(e(c_load(voff_c, ptr, comment=f"C row {r}", merge=zeros[i])).vdst)
            for i, (r, ptr, c) in enumerate(zip(rows, ptrs, cs)):
                if shift is not None or i == 0:
                    row_exec(e, lanes, shift, r)
                if is_int:
                    t = e(gcn.VMulLoU32Op(c, beta)).vdst
                    out = e(gcn.VAddU32Op(t, e(gcn.VMulLoU32Op(acc[r], alpha)).vdst)).vdst
                else:
                    if c_type == "f16":
                        c = e(gcn.VCvtF32F16Op(c)).vdst
                    t = e(gcn.VMulF32Op(beta, c)).vdst
                    out = e(gcn.VFmaF32Op(acc[r], alpha, t)).vdst
                    if brows[i] is not None and not dequant:
                        brows[i] = e(gcn.VCvtF32F16Op(brows[i])).vdst
                    out = apply_epilogue(out, brows[i])
                    if residual is not None:
                        out = residual(out, r)
                    if c_type == "f16":
                        out = e(gcn.VCvtF16F32Op(out)).vdst
                e(c_store(voff_c, out, ptr))
        if f.exit_label is not None:
            e(gcn.LabelOp(f.exit_label))
        e(gcn.SEndpgmOp())

    def _dot_dequant(self, f: _DotBuild) -> list[SSAValue]:
        """W8A8: the accumulators (i32) to f32, times scale_row[m] (an SGPR per row) and
        scale_col[n] (one load per lane)."""
        e, kp, kargs, mi_m = f.e, f.kp, f.kargs, f.mi_m
        e(gcn.SAndB64Op(f.lanes, -1, result_type=gcn.exec_type()))  # the columns below N
        sc_ptr = e(gcn.SLoadDwordx2Op(kp, kargs["scale_col"], comment="kernarg scale_col")).sdst
        sc_ptr = e.add64(sc_ptr, e.mul(f.wg_x, self.mt_n * 4), 0, comment="scale_col + col0")
        scol = e(gcn.GlobalLoadDwordOp(e(gcn.VLshlrevB32Op(2, f.tid)).vdst, sc_ptr, comment="scale_col[n]")).vdst
        sr_ptr = e(gcn.SLoadDwordx2Op(kp, kargs["scale_row"], comment="kernarg scale_row")).sdst
        sr_ptr = e.add64(sr_ptr, *e.mul64(f.row0, 4), comment="scale_row + row0")
        srow = [e(gcn.SLoadDwordOp(sr_ptr, 4 * r, comment=f"scale_row[row {r}]")).sdst for r in range(mi_m)] \
            if mi_m <= 16 else None
        out_acc = []
        for r, x in enumerate(f.acc):
            x = e(gcn.VCvtF32I32Op(x)).vdst
            s_r = srow[r] if srow is not None else \
                e(gcn.SLoadDwordOp(sr_ptr, 4 * r, comment=f"scale_row[row {r}]")).sdst
            x = e(gcn.VMulF32Op(s_r, x)).vdst
            out_acc.append(e(gcn.VMulF32Op(scol, x)).vdst)
        return out_acc

    def _finish(self, entry: Block, lds_bytes: int) -> gcn.KernelOp:
        """The kernel op around ``entry``, with its interface (kernarg layout, launch facts)."""
        s = self.shape
        kernel = gcn.KernelOp(self.name, Region(entry))
        if lds_bytes:
            kernel.attributes["lds_bytes"] = IntegerAttr(lds_bytes, i64)
        extra: dict[str, int | str] = {}
        if self.local > 1 or self.split > 1:
            extra = dict(split_k=self.split, split_mode="workspace" if self.split > 1 else "none",
                         local_split=self.local, k_per_split=-1)
        if self.role != "main":
            extra["role"] = self.role
        if self.residual_type():
            extra["residual"] = self.residual_type()
        roles = ["kernarg_segment_ptr", "workgroup_id_x", "workgroup_id_y"]
        if s.batch != 0 or (self.role == "main" and self.split > 1):
            roles.append("workgroup_id_z")
        kernel_interface(kernel, self.mm, [*roles, "workitem_id_x", "exec"], self.kernargs(), self.wg_size[0],
                         (self.mt_m, self.mt_n), self.k_step, epilogue=",".join(self.mm.epilogue_ops()),
                         batch=s.batch, c_dtype=s.c_type,
                         k_pack=self.pack, static_stride_a=s.stride_a, static_stride_b=s.stride_b,
                         static_stride_c=s.stride_c, **extra)
        return kernel

    def _local_reduce(self, e: Emitter, acc: list[SSAValue], slice_id: SSAValue, col: SSAValue,
                      lanes: SSAValue, add, spread: bool = False, lds_add: bool = False) -> tuple[list[SSAValue], int]:
        """Sum the L wavefront groups' accumulators into group 0's through LDS, the rows summed
        in parallel: in chunks of R rows that fit :data:`DOT_LOCAL_SPLIT_LDS_BYTES`, every group
        writes its R partial rows, a barrier, group g adds the L partials of the chunk's rows
        j = g, g + L, ... in group order (``add``: ``v_add_f32``, or ``v_add_u32`` for i32) and writes the
        sum over group 0's partial, a barrier, group 0 reads the R sums.  (Group 0 alone adding
        all L - 1 partials of every row, as the f32 kernel does, makes the M = 16 decode GEMV's
        tail 16 x 15 dependent LDS reads long.)  Returns the sums and the LDS bytes.

        ``spread`` (the decode GEMV: at most L rows, all of them in one chunk that fits the CU's
        LDS, checked by the caller): after the barrier group g < M adds the partials of row g
        and keeps the sum, returned alone (``[sum of row g]``): no write-back, no second
        barrier, and the caller stores row g from group g.  Modeled (MI60, int8 16 x 4096 x
        4096): two 8-row chunks took 4 barriers and ~2,000 cycles after the last wave's dots,
        and group 0 alone storing 16 rows while the other 15 waves ran the same output code
        under EXEC = 0 another ~2,300; one pass and a row per group, ~900 together.

        ``lds_add`` (int8 one pass; the caller zeroed the M rows of LDS and passed a barrier
        before the K loop): every group adds its i32 partial rows into the block with
        ``ds_add_u32`` as it finishes (integer addition: the same sums in any order), one
        barrier, group g reads row g: M x 256 bytes of LDS, and after the barrier one read per
        group instead of L (the L x M partials go through the LDS pipe before it, while the
        slower groups still compute): ~400 cycles less (int8 16 x 4096 x 4096, 80.0 -> 80.3 %
        of HBM).  f32 partials keep the ordered sum (a float atomic add would round in
        whichever order the waves arrive)."""
        local, mt_n = self.local, self.mt_n
        row_bytes = mt_n * 4
        rows_per_chunk = len(acc) if spread else max(1, min(len(acc), DOT_LOCAL_SPLIT_LDS_BYTES // (local * row_bytes)))
        group_bytes = rows_per_chunk * row_bytes  # one group's partial rows of a chunk
        vcol = e(gcn.VLshlrevB32Op(2, col)).vdst
        rbase = e(gcn.VAddU32Op(e.mul(slice_id, row_bytes), vcol)).vdst  # row j = g of every group
        acc = list(acc)
        if lds_add:  # int8: every group adds its partial rows into the zeroed block, group g reads row g
            e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
            for r in range(len(acc)):
                e(gcn.DsAddU32Op(vcol, acc[r], offset=r * row_bytes, comment=f"partial row {r} into the sums"))
            e(gcn.SBarrierOp())
            e(gcn.SCmpLtU32Op(slice_id, len(acc)))
            e(gcn.SCselectB64Op(lanes, 0, result_type=gcn.exec_type()))
            return [e(gcn.DsReadB32Op(rbase, comment="the sum of row g")).vdst], len(acc) * row_bytes
        wbase = e(gcn.VAddU32Op(e.mul(slice_id, group_bytes), vcol)).vdst  # group g's rows
        read_batch = 8  # partials in flight at once (lgkmcnt counts 15 at most)
        for c0 in range(0, len(acc), rows_per_chunk):
            rows = range(c0, min(c0 + rows_per_chunk, len(acc)))
            e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))  # every group writes
            for r in rows:
                e(gcn.DsWriteB32Op(wbase, acc[r], offset=(r - c0) * row_bytes, comment=f"partial row {r}"))
            e(gcn.SBarrierOp())
            for t0 in range(0, len(rows), local):  # group g sums the chunk's rows j = t0 + g
                e(gcn.SCmpLtU32Op(slice_id, min(local, len(rows) - t0)))
                e(gcn.SCselectB64Op(lanes, 0, result_type=gcn.exec_type()))
                total = None
                for g0 in range(0, local, read_batch):
                    parts = [e(gcn.DsReadB32Op(rbase, offset=g * group_bytes + t0 * row_bytes,
                                               comment=f"group {g} row c0+{t0}+g")).vdst
                             for g in range(g0, min(g0 + read_batch, local))]
                    for part in parts:
                        total = part if total is None else e(add(total, part)).vdst
                if spread:  # one chunk of at most L rows: group g keeps the sum of row g
                    return [total], local * group_bytes
                e(gcn.DsWriteB32Op(rbase, total, offset=t0 * row_bytes, comment="the row's sum over group 0's partial"))
            e(gcn.SBarrierOp())
            e(gcn.SCmpEqU32Op(slice_id, 0))  # only group 0 reads the sums (only it stores)
            e(gcn.SCselectB64Op(lanes, 0, result_type=gcn.exec_type()))
            for r in rows:
                acc[r] = e(gcn.DsReadB32Op(vcol, offset=(r - c0) * row_bytes, comment=f"sum row {r}")).vdst
        return acc, local * group_bytes

    def _leftover(self, e: Emitter, acc: list[SSAValue], k_total: SSAValue | int, k_left: SSAValue | int,
                  slice_id: SSAValue | None, a_tile: SSAValue, b_tile: SSAValue, voff_b: SSAValue,
                  lda4: SSAValue | int, small_load, dot_op, ldb_rows: SSAValue | int | None = None,
                  lda_rows: SSAValue | int | None = None) -> list[SSAValue]:
        """acc[r] += A[r, k] * B[n, k] for the last K % P values of K (k from P * K dwords on),
        read one element each (zero-extended: the dot's other products are 0 x 0).  Runs
        in a ``gcn.loop`` over those values that is skipped when there are none (K % P given at
        launch) or in wavefront groups other than 0 (a local split: group 0 adds them)."""
        eb = self.eb
        label = f".L{self.name}_k_left"
        skip = f"{label}_done"
        first = k_total * 4 if isinstance(k_total, int) else e.mul(k_total, 4)  # byte offset of value K - K % P
        first_r = e.const(first) if isinstance(first, int) else first
        end = (first + k_left * eb) if isinstance(first, int) and isinstance(k_left, int) else \
            e(gcn.SAddU32Op(first_r, e.mul(k_left, eb) if not isinstance(k_left, int) else k_left * eb)).sdst
        guarded = not isinstance(k_left, int) or slice_id is not None
        if not isinstance(k_left, int):
            e(gcn.SCmpEqU32Op(k_left, 0))
            e(gcn.SCbranchForwardOp("scc1", skip))
        if slice_id is not None:
            e(gcn.SCmpLgU32Op(slice_id, 0))
            e(gcn.SCbranchForwardOp("scc1", skip))
        carried = [first_r, *acc]
        body = Block(arg_types=[v.type for v in carried])
        be = Emitter(body)
        koff, acc = body.args[0], list(body.args[1:])
        if ldb_rows is None:  # B N x K: k * element bytes along the lane's row
            bvoff = be(gcn.VAddU32Op(koff, voff_b)).vdst
        else:  # B K x N: row k, k * ldb * element bytes = koff * ldb
            row = be(gcn.SMulI32Op(koff, be.const(ldb_rows) if isinstance(ldb_rows, int) else ldb_rows)).sdst
            bvoff = be(gcn.VAddU32Op(row, voff_b)).vdst
        bval = be(small_load(bvoff, b_tile, comment="B[n, k]")).vdst
        if lda_rows is None:  # A M x K: k * element bytes along row r
            kv = be(gcn.VMovB32Op(koff)).vdst
        else:  # A K x M: row k (koff * lda) and r * element bytes along it
            kv = be(gcn.VMovB32Op(be(gcn.SMulI32Op(koff, be.const(lda_rows) if isinstance(lda_rows, int)
                                                      else lda_rows)).sdst)).vdst
        group = 8
        row_off: SSAValue | None = None
        for g0 in range(0, len(acc), group):
            rows = range(g0, min(g0 + group, len(acc)))
            vals = []
            for r in rows:
                if r == 0:
                    voff = kv
                elif lda_rows is not None:
                    voff = be(gcn.VAddU32Op(be.const(r * eb), kv)).vdst
                elif isinstance(lda4, int):
                    voff = be(gcn.VAddU32Op(be.const(r * lda4), kv)).vdst
                else:
                    row_off = lda4 if row_off is None else be(gcn.SAddU32Op(row_off, lda4)).sdst
                    voff = be(gcn.VAddU32Op(row_off, kv)).vdst
                vals.append(be(small_load(voff, a_tile, comment=f"A[row {r}, k]")).vdst)
            for r, v in zip(rows, vals):
                acc[r] = be(dot_op(bval, v, acc[r])).vdst
        k_next = be(gcn.SAddU32Op(koff, eb, comment="next value of K")).sdst
        end_r = be.const(end) if isinstance(end, int) else end
        be(gcn.SCmpLgU32Op(k_next, end_r))
        be(gcn.LoopBackOp([k_next, *acc], "scc1"))
        loop = gcn.LoopOp(carried, Region(body), label=label)
        e(loop)
        if guarded:
            e(gcn.LabelOp(skip))
        return list(loop.res[1:])
