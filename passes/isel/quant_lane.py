"""The lane-along-K decode GEMV of f16 activations and quantized weights (Q8_0, Q4_0, Q4_K, int4 groups).

The quantized GEMVs of passes/isel/quant.py, quant_k.py and quant_int4.py give each lane its own
weight row (column n of C) with A in SGPRs: every ``global_load_dwordx4`` of a wave then reads 16
bytes of 64 rows, 64 DRAM pages, and the HBM model charges one page activation per page an
instruction's misses open (``TimingParams.hbm_activate_ns``; docs/timing_model.md, "HBM"). This
kernel turns the lanes along K, as the f16/int8 GEMV of passes/isel/gemv.py (whose builder it
extends: :class:`~vlpc.passes.isel.gemv.LaneGemvBuilder`'s LDS reduction and output,
:class:`~vlpc.passes.isel.quant.QuantGemvBuilder`'s kernel arguments and launch facts):

* B's rows are cut in **units** (:data:`LANE_UNITS`): a Q8_0/Q4_0 block pair (64 weights, 68 or 36
  bytes: whole dwords, so every lane's loads start on 4-byte boundaries), an int4 group (G weights,
  4 + G / 2 bytes), a Q4_K super-block (256 weights, 144 bytes).  ``span`` lanes (64, 32 or 16: the
  largest that divides the row's units; Q4_K 16: :data:`LANE_SPANS_OF`) share a row: lane l of a row
  takes units l, l + span, ... (``iters`` of them), so one load instruction of a wave reads ``span``
  consecutive units of each of its 64 / span rows: 2,304 contiguous bytes of a Q4_0 row (two pages,
  not 64).  Every weight byte is read once; A's row gaps and B's bytes after each row's last unit
  are never read.
* A through LDS: a workgroup of W waves (:data:`LANE_WAVES`; Q4_K two: :data:`LANE_WAVES_OF`) stages
  A's M rows once (``global_load_dwordx4`` of 1 KiB per wave instruction, then ``ds_write_b128``; by
  phases of at most :data:`LANE_A_PHASE_BYTES` with a barrier between them), 16-byte piece g of a
  row at piece :func:`lds_swizzle` (g), so that each lane's ``ds_read_b128`` of its unit's 64 bytes
  per 32 weights is conflict-free.  Why not A per lane from global memory, or in SGPRs: A differs
  per lane (no SGPR operand), and a wave's load of 16 bytes at a 128-byte stride per lane touches 64
  lines, which the texture path takes one per cycle (docs/timing_model.md, "Vector memory"): 8 such
  loads per Q4_0 pair cost 512 cycles against the 271 cycles the HBM share of a CU needs for the
  wave's 2,304 bytes of weights (modeled Q4_0 1 x 14336 x 4096: 39.1 % of the streaming ceiling so,
  92.5 % through LDS). B is loaded :data:`LANE_B_AHEAD` units ahead; A's LDS reads right before
  their dots.  Q4_0, Q8_0 and int4_g128 at M = 1 with A's row longer than 8 KiB (K = 14336): phases
  of 8 KiB, B one unit ahead, two waves (:data:`LANE_SMALL_PHASES`: more workgroups a CU).
* Q4_K's activation sums (the minimum's term, ``sum a`` per 32-weight sub-block) are computed once
  per workgroup right after A's phase is in LDS (work-item t: chunk t + threads j, the 16
  ``v_dot2_f32_f16`` with the pair (1, 1) of the SGPR kernel, in its order: the same f32 value) and
  stored as f32 after A's rows; each lane reads its unit's 8 with two ``ds_read_b128`` per row of A
  instead of 16 dots per sub-block (before: half of its dots; modeled Q4_K 1 x 14336 x 4096 75.6 %
  of the streaming ceiling so, 76.4 % now with two waves a workgroup; docs/quantized.md).
* Dequantization exactly as the SGPR kernels (the f16 pattern 0x6400 + u built by ``v_perm_b32``,
  ``v_pk_add_f16`` of the offset; Q4_K's 6-bit scales and minimums decoded in f32; int4's zero point
  as the f16 pair -(1024 + z)), ``v_dot2_f32_f16`` with the activation pair a VGPR.  Per block
  (Q4_K: sub-block; int4: group) and row of A the dots sum from 0 and one ``v_fma_f32`` adds scale x
  sum to the lane's accumulator (Q4_K: and -dmin m x the staged sum a).
* After the ``iters`` units (unrolled: at most :data:`LANE_MAX_ITERS`) the span lanes' partials of
  each sum are added through LDS in a fixed order (two levels of 8, then 2 or 4: LaneGemvBuilder),
  and C[m, n] = alpha sum + beta C with the BLAS rules (beta = 0 does not read C, alpha = 0 drops
  the products).

**int8 activations** (Q8_0, Q4_0 and the int4 formats (whole groups) at M = 2 .. :data:`LANE_INT8_MAX_M`,
Q4_K at M = 2 .. 4: :class:`QuantLaneInt8Builder`, as llama.cpp's MMVQ after its ``quantize_q8_1``): the
plan's pre-kernel ``<name>_quant_a`` (passes/isel/quant_act.py) quantizes A once to int8 blocks of 32
with a power-of-two step ``d_a`` (NaN for a block holding an inf or NaN) and each block's integer
``sum q`` into the workspace; each workgroup copies its phase of them into LDS (8 bytes of int8 a
work-item, ``global_load_dwordx2``, and the block's two meta words), Q4_0's ``c = -8 sum q`` (its
nibbles are unsigned: weight d (nibble - 8)) and the int4 formats' and Q4_K's ``sum q`` as f32 made
there.  The K loop reads each row's block (2 ``ds_read_b128``, d_a and c) once for the lane's R
weight rows: 8 ``v_dot4_i32_i8`` from c, ``v_cvt_f32_i32`` (exact), ``v_mul_f32 d_w d_a`` (exact)
and one ``v_fma_f32`` per block, row of A and weight row (int4: minus z sum q by one more
``v_fma_f32``; Q4_K per sub-block ``d_a (d sc_j float(dot) - dmin m_j sum q)``: a ``v_mul_f32`` and
two ``v_fma_f32``).  Everything but those FMAs and the reduction is exact: against gguf's weights
times the quantized activations (vlpc.quant_run.quantize_activations, NumPy's value bit for bit)
the bound is the f32 one below; each activation is within its block's step of a.

Rounding: a result is rounded at most 16 (dots; Q4_K 16 + 16: the staged sums round as the dots did)
+ units per lane (Q4_K: 2 x 8 per super-block) + 14 (the reduction) + 2 times, within
vlpc/quant_run.py's ``n = 16 + K / 32 + S L + 2`` (int4: ``G / 2 + K / G + S L + 2``) whenever span
>= 16 lanes share a row.

Applies (:func:`quant_lane_plan`) to static M in 1 .. :data:`LANE_MAX_M` (Q4_K: 1 .. 4; Q8_0, Q4_0:
:data:`LANE_INT8_MAX_M`), static N, K, lda, ldb and ldc, K a whole number of units (where no span
divides them, a last round of zero units; an int4 format's last, partial group the row's last unit:
:meth:`QuantLaneGemvBuilder._load_part`), at most LANE_MAX_ITERS units per lane, lda a multiple of 8 (A's rows on 16-byte boundaries),
ldb a multiple of 4, N a multiple of the rows per load (64 / span), no epilogue, bias or SwiGLU, and
no ``gemv = "sgpr"`` attribute (the pipeline sets it when a tile, K step, local split or split-K
above 1 is given); anything else keeps the SGPR kernels (which carry the split-K / local-split
plans: this kernel splits nothing, its many small workgroups fill the CUs).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import B_FORMATS, INT4_GROUP_FORMATS, MatmulOp
from vlpc.passes.common import op_error
from vlpc.passes.isel.emit import Emitter, kernel_entry
from vlpc.passes.isel.gemv import GEMV_KERNELS, REDUCE_BYTES, LaneGemvBuilder
from vlpc.passes.isel.quant import F16_MAGIC_BYTES, F16_OFFSET, PERM_SELECT, QuantGemvBuilder, b_row_loads
from vlpc.passes.isel.quant_act import build_quant_a, int8_kernargs, quant_a_plan, quantize_pieces, with_a_quant
from vlpc.passes.isel.quant_int4 import NIBBLE_INTERLEAVE
from vlpc.passes.isel.quant_k import F16_MINUS_1024, F16_ONES, Q4K_BYTES, q4k_scales

#: Weights and bytes of a lane's unit of B per format (module docstring).
LANE_UNITS = {"q8_0": (64, 68), "q4_0": (64, 36), "q4_k": (256, Q4K_BYTES),
              **{f: (g, B_FORMATS[f][1]) for f, g in INT4_GROUP_FORMATS.items()}}
#: Lanes per weight row, tried in order (the LDS reduction adds 8 then span / 8 partials).
LANE_SPANS = (64, 32, 16)
#: ... per format where other: Q4_K 16 lanes a row (4 rows a wave: fewer bytes of A and its sums
#: staged per weight byte), B one unit ahead (36 VGPRs a unit).  Modeled (MI50 @ 1725 MHz, two waves
#: a workgroup, Q4_K 1 x 4096 x 14336, 56 super-blocks, % of the streaming ceiling): span 32 (then
#: 24) 54.0, span 16 (then 8) 63.1 with B 3 units ahead, 64.7 with 1 (155 VGPRs); 4 waves 57.3.
LANE_SPANS_OF = {"q4_k": (16,)}
LANE_B_AHEAD_OF = {"q4_k": 1}
#: Units per lane at most (the K loop is unrolled).
LANE_MAX_ITERS = 16
#: Rows of A at most (A per lane: 16 VGPRs per row and 32-weight chunk in flight).
LANE_MAX_M = 4
#: ... per format where fewer: Q4_K at M = 4 models slower than the SGPR kernel (4 x 4096 x 4096:
#: 110.7 us against 49.5; 177 VGPRs, one wave a workgroup).
LANE_MAX_M_OF = {"q4_k": 1}
#: Waves per workgroup (sharing A's LDS copy) and B's units in flight ahead of the one computed.
#: Why (modeled, MI50 @ 1725 MHz, Q4_0 M = 1, 14336 x 4096 / 4096 x 14336, % of the streaming ceiling):
#: W = 4 92.5 / 74.4 (B one unit ahead), 79.2 with three; W = 2 91.4 / 63.3; W = 8 70.1 / 67.5;
#: W = 16 56.8 / 61.9; two rows per lane (R = 2) with W = 4 85.9 / 72.8, W = 2 81.7 / 57.8.
LANE_WAVES, LANE_B_AHEAD = 4, 3
#: ... per format where other.  Q4_K (its activation sums staged once per workgroup; modeled as above,
#: 4096 x 4096 / 14336 x 4096 / 4096 x 14336, span 32 at K = 14336): W = 1 (not modeled) / 50.6 /
#: 15.7 (one wave a workgroup: 74 % idle at K = 14336), W = 2 62.1 / 76.4 / 54.0, W = 4 48.7 / 61.7
#: / 55.4.
LANE_WAVES_OF = {"q4_k": 2}
#: Chunks of A read from LDS ahead of the one computed (0: right before their dots; the registers
#: go to B's units ahead).
LANE_A_AHEAD = 0
#: LDS bytes of one phase of A's staging (M rows of a whole number of the lanes' units; module
#: docstring).  Modeled (MI50 @ 1725 MHz, % of the streaming ceiling): Q4_0 1 x 4096 x 14336 (28 KiB
#: of A) 80.3 with phases of 16 KiB against 79.2 in one, Q8_0 76.9 against 82.6 (more VGPRs: the next
#: phase's A in flight); Q4_0 4 x 4096 x 14336 (112 KiB of A: 4 phases) 45.7, the SGPR kernel 31.6.
LANE_A_PHASE_BYTES = 32768
#: Q4_0, Q8_0 and int4_g128 at M = 1 where A's row takes more than one phase of this plan's bytes
#: (1 x 4096 x 14336: 28 KiB): (phase bytes, B's units ahead, waves a workgroup): more workgroups a CU, by LDS
#: and by VGPRs (Q4_0 84, 81 before).  Modeled (MI50 @ 1725 MHz, 1 x 4096 x 14336, % of the
#: streaming ceiling): Q4_0 77.9 with the plan above; phases of 8 KiB with B 3 / 2 / 1 units ahead
#: (4 waves) 73.2 / 81.2 / 83.7, of 4 KiB 83.7; with 2 waves 85.9, 8 waves 68.2.  Q8_0 84.6 with the
#: plan above, 84.9 with 8 KiB and B 1 ahead (4 waves), 88.3 with 2 waves (2 waves alone: 79.8).
#: int4_g128 72.7 with the plan above, 70.1 with 8 KiB and 4 waves, 78.3 with 2 (2 alone: 71.5).
#: Not M = 4 (Q4_0 43.8); the other int4 group sizes not modeled.
LANE_SMALL_PHASES = {"q4_0": (8192, 1, 2), "q8_0": (8192, 1, 2), "int4_g128": (8192, 1, 2)}
#: Bytes of a chunk of one row of A: 32 f16 activations (one Q8_0/Q4_0 block, a Q4_K sub-block).
A_CHUNK_BYTES = 64
#: Formats whose lane kernel takes M = 2 .. LANE_INT8_MAX_M with A quantized to int8 blocks by the
#: pre-kernel (passes/isel/quant_act.py; :class:`QuantLaneInt8Builder`; module docstring, "int8 activations").
LANE_INT8_FORMATS = ("q8_0", "q4_0", "q4_k", *INT4_GROUP_FORMATS)
#: ... from another M per format, whatever K (Q4_K: 2; the others from 2, or LANE_INT8_MIN_M_LONG_K
#: above LANE_INT8_LONG_K).  Q4_K at M = 1 keeps the f16 lane kernel:
#: modeled (MI50 @ 1725 MHz, % of the streaming ceiling at 4096 x 4096 / 14336 x 4096 / 4096 x 14336,
#: f16 / int8 with the pre-kernel) 57.6 / 54.7, 73.3 / 76.5, 62.7 / 56.5: the int8 kernel's VALU
#: share falls (46 -> 35 % at 14336 x 4096) but its B loads (9 a super-block and lane) and the
#: pre-kernel's launch remain.
LANE_INT8_MIN_M_OF = {"q4_k": 2}
#: ... up to another M per format.  Q4_K to M = 4: modeled (as above, 4096 x 4096 / 14336 x 4096, int8
#: lane / SGPR kernel) M = 2 51.2 / 36.2, 72.1 / 51.5; M = 4 27.9 / 22.0, 31.8 / 28.1; M = 8 11.6 /
#: 12.3, 12.6 / 21.2 (234 VGPRs: one wave a SIMD); at M = 8 and K = 14336 over 256 VGPRs.  4096 x 14336:
#: M = 2 48.7 / 37.2, M = 4 35.9 / 21.4.
LANE_INT8_MAX_M_OF = {"q4_k": 4}
#: ... weight rows a lane per format where other than :data:`LANE_INT8_ROWS`: Q4_K one (a super-block
#: is 36 VGPRs a row, two with B one ahead; R = 2 took 306 VGPRs at M = 4).
LANE_INT8_ROWS_OF = {"q4_k": 1}
LANE_INT8_MAX_M = 16
#: From this M the int8 kernel reads A quantized once by the pre-kernel (passes/isel/quant_act.py: one
#: more launch and its workspace), below it each workgroup quantizes A while it stages it.  Modeled
#: (MI50 @ 1725 MHz, 4096 x 4096, % of the streaming ceiling, in each workgroup / pre-kernel): Q4_0 M =
#: 2 68.1 / 57.8, 4 52.3 / 44.7, 6 31.7 / 30.7, 8 28.3 / 29.7, 16 16.0 / 22.0; Q8_0 M = 8 46.2 / 45.3, 16
#: 33.6 / 38.5 (one threshold for the formats).
LANE_INT8_PRE_FROM_M = 8
#: (Above LANE_INT8_LONG_K always: modeled 4 x 4096 x 14336 Q4_0 52.4 % with it, 40.5 % quantizing in
#: each workgroup, 46.2 % in the f16 lane kernel.)  Per format where other: Q4_K always (modeled 4096 x
#: 4096 / 14336 x 4096, in each workgroup / pre-kernel: M = 2 46.1 / 51.2, 57.2 / 72.1; M = 4 21.2 /
#: 27.9, 22.7 / 31.8; 155 VGPRs against 138 at M = 4).
LANE_INT8_PRE_FROM_M_OF = {"q4_k": 2}
#: ... its weight rows a lane (sharing each LDS read of A), B's units ahead, LDS bytes of a phase of A
#: (int8 A and its blocks' meta words: :func:`int8_unit_lds` bytes a row and unit).
#: Modeled (MI50 @ 1725 MHz, 4096 x 4096, % of the streaming ceiling; docs/quantized.md) with R = 2 / 4:
#: Q4_0 M = 2 67.4 / 50.5, 4 44.3 / 41.2, 8 21.3 / 27.5, 16 15.8 / 17.0 (253 VGPRs); Q8_0 M = 2 80.2 /
#: 67.8, 4 56.8 / 47.9, 8 43.8 / 44.8, 16 33.2 / (over 256 VGPRs).  B none ahead or A's next phase not
#: loaded ahead (fewer VGPRs): Q4_0 / Q8_0 M = 16 16.4 / 22.3 and 14.6 / 30.6; 2 waves 9.3 / 20.2.
LANE_INT8_ROWS, LANE_INT8_B_AHEAD, LANE_INT8_PHASE_BYTES = 2, 1, 32768
#: LDS bytes of one round of the lanes' units of the M rows at most (a phase holds at least one:
#: int4_g128 at M = 16 and span 16, 40 KiB; with the reduction's 9 KiB after it, one workgroup a CU).
LANE_INT8_ROUND_BYTES = 40960
#: VGPRs of A's next phase loaded ahead at most (else loaded at the phase's end: int4_g128 at M = 16).
LANE_INT8_STAGED_VGPRS = 32
#: ... Q4_0 at M = 5 .. 8: 4 rows a lane.
LANE_INT8_ROWS_Q4_0_MID = 4
#: From this M the int8 kernel takes span 16 where it divides the units (4 x the weight rows a
#: workgroup: A quantized for 4 x the rows), below it the largest span.  Modeled (as above, span 16
#: against the largest): Q4_0 M = 2 55.0 / 67.4 (4096 x 4096), 81.9 / 88.2 (14336 x 4096); Q8_0 M = 2
#: 61.7 / 80.2; M = 4 Q4_0 52.1 / 44.3, Q8_0 59.7 / 56.8; M = 8 Q4_0 28.0 / 27.5 and 49.9 / 36.9 (14336
#: x 4096), Q8_0 45.9 / 43.8.
LANE_INT8_SPAN16_FROM_M = 4
#: Above this K the f16 lane kernel keeps M < LANE_INT8_MIN_M_LONG_K.  Modeled (MI50 @ 1725 MHz, 4096 x
#: 14336, % of the streaming ceiling, f16 / int8 quantizing A in each workgroup, before the pre-kernel): Q4_0 M = 2 75.7 / 48.1, M = 4 45.7 / 40.2; Q8_0 M = 2
#: 73.7 / 71.5, M = 4 69.9 / 60.3; at K = 4096 int8 wins (Q4_0 4 x 14336 x 4096: 33.0 / 76.6).
LANE_INT8_LONG_K, LANE_INT8_MIN_M_LONG_K = 8192, 5
#: ... per format where other, since A is quantized once by the pre-kernel: modeled (as above, 4096 x
#: 14336, f16 lane / int8 lane with the pre-kernel) Q4_0 M = 2 76.7 / 65.9, M = 3 52.5 / 52.5, M = 4
#: 46.2 / 52.4; int4_g128 M = 4 46.6 / 51.1; Q8_0 M = 2 73.9 / 69.8, M = 4 70.1 / 61.6 (so 5).
LANE_INT8_MIN_M_LONG_K_OF = {"q4_0": 4, "int4_g128": 4}
#: Rows of A whose int8 block (and d_a, c) the K loop reads from LDS ahead of the row computed (2:
#: modeled the same, 15.8 % Q4_0 16 x 4096 x 4096, 10 VGPRs more).
LANE_INT8_A_AHEAD = 1


def int8_unit_lds(fmt: str) -> int:
    """LDS bytes of a row of A and a unit of ``fmt`` in the int8 kernel: a byte a weight and 8 bytes
    (d_a, c) a block of 32."""
    return LANE_UNITS[fmt][0] * 5 // 4

#: v_perm_b32 selector: bytes 2..5 of two dwords (a Q8_0 block's bytes after its 2-byte scale).
ALIGN_2 = 0x05040302


def quant_lane_plan(mm: MatmulOp) -> tuple[int, int, int] | None:
    """``(rows, span, iters)`` of the lane-along-K quantized GEMV for ``mm`` (module docstring), or
    None where it does not apply; ``rows``: weight rows per lane (sharing its A loads), ``span``:
    lanes per row, ``iters``: units per lane."""
    s = mm.shape()
    choice = mm.attributes.get("gemv", StringAttr("auto"))
    kinds = ", ".join(repr(x) for x in GEMV_KERNELS)
    if not isinstance(choice, StringAttr) or choice.data not in GEMV_KERNELS:  # (as the f16 GEMV's)
        raise op_error(mm, f"gemv = {choice}: the decode GEMV kernel is one of {kinds}")
    fmt = s.b_format
    if choice.data == "sgpr":
        return None
    if fmt not in LANE_UNITS or mm.layout.data != "NT" or s.batch or mm.epilogue_ops() or mm.bias is not None:
        return None
    int8 = int8_activations(fmt, s.m, s.k)
    max_m = LANE_INT8_MAX_M_OF.get(fmt, LANE_INT8_MAX_M) if int8 else LANE_MAX_M_OF.get(fmt, LANE_MAX_M)
    if not (1 <= s.m <= max_m) or min(s.n, s.k, s.lda, s.ldb, s.ldc) < 0 or s.c_type not in ("f32", "f16"):
        return None
    unit_w, _ = LANE_UNITS[fmt]
    if (s.k % unit_w and fmt not in INT4_GROUP_FORMATS) or s.lda % 8 or s.ldb % 4:
        return None
    units = -(-s.k // unit_w)  # (an int4 format's last, partial group: a unit)
    # the largest span dividing the units, else the largest not above them (a last, partial unit
    # round: the lanes past the row's units load zeros; Q4_K 1 x 4096 x 14336: 69.6 us modeled with
    # two waves a workgroup, the SGPR kernel 94.2); int8 A: a round of the M rows in a phase of LDS
    spans = LANE_SPANS_OF.get(fmt, LANE_SPANS)
    if int8:  # (from M = LANE_INT8_SPAN16_FROM_M: span 16 first)
        spans = tuple(x for x in (spans[::-1] if s.m >= LANE_INT8_SPAN16_FROM_M else spans)
                      if s.m * x * int8_unit_lds(fmt) <= LANE_INT8_ROUND_BYTES)
    span = next((x for x in spans if units % x == 0), None)
    if span is None:
        span = next((x for x in spans if x <= units), None)
    if span is None or -(-units // span) > LANE_MAX_ITERS:
        return None
    rows = (LANE_INT8_ROWS_Q4_0_MID if fmt == "q4_0" and 5 <= s.m <= 8 else
            LANE_INT8_ROWS_OF.get(fmt, LANE_INT8_ROWS)) if int8 else 1
    while rows > 1 and s.n % (rows * 64 // span):
        rows //= 2
    if s.n % (rows * 64 // span):
        return None
    return rows, span, -(-units // span)


def int8_activations(fmt: str, m: int, k: int) -> bool:
    """Whether the lane kernel of format ``fmt`` at M = ``m`` and K = ``k`` quantizes A to int8 blocks
    (:class:`QuantLaneInt8Builder`; :data:`LANE_INT8_LONG_K`; an int4 format's partial group: no)."""
    long_k = LANE_INT8_MIN_M_LONG_K_OF.get(fmt, LANE_INT8_MIN_M_LONG_K)
    small_m = LANE_INT8_MIN_M_OF.get(fmt, long_k if k > LANE_INT8_LONG_K else 2)
    if fmt in INT4_GROUP_FORMATS and k % LANE_UNITS[fmt][0]:
        return False
    return fmt in LANE_INT8_FORMATS and small_m <= m <= LANE_INT8_MAX_M_OF.get(fmt, LANE_INT8_MAX_M)


def lds_swizzle(e, g: SSAValue | None, pieces: int, kl: SSAValue | None = None) -> SSAValue:
    """The LDS piece of A's 16-byte piece ``g`` (a VGPR): ``g ^ x`` with x = u & 7 for units u = g / pieces
    of 8 or more pieces, (u >> 1) & 3 for 4 (units of 4 pieces: int4_g32), so that the 8 lanes of a
    ``ds_read_b128`` pass (consecutive units, the same piece) hit 8 different groups of 4 banks
    (conflict-free: docs/timing_model.md, "LDS").  With ``kl`` (the lane's first unit) instead of
    ``g``: x alone (the same for every unit kl + span i, span a multiple of 16)."""
    if kl is not None:
        u = kl
    else:
        u = e(gcn.VLshrrevB32Op(pieces.bit_length() - 1, g)).vdst
    x = e(gcn.VAndB32Op(7, u)).vdst if pieces >= 8 else e(gcn.VAndB32Op(3, e(gcn.VLshrrevB32Op(1, u)).vdst)).vdst
    return x if kl is not None else e(gcn.VXorB32Op(g, x)).vdst


def small_phases(fmt: str, m: int, k: int, span: int) -> tuple[int, int, int] | None:
    """:data:`LANE_SMALL_PHASES`' plan (phase bytes, B's units ahead, waves) of the lane kernel of
    format ``fmt``, M ``m``, K ``k`` and ``span`` lanes a row where it applies (M = 1, A's row more
    than one phase), else None."""
    plan = LANE_SMALL_PHASES.get(fmt)
    if plan is None or m != 1:
        return None
    unit_w = LANE_UNITS[fmt][0]
    iters = -(-(k // unit_w) // span)
    return plan if iters > max(1, plan[0] // (2 * span * unit_w)) else None  # (A: 2 bytes a weight)


def plan_waves(mm: MatmulOp, rows: int, span: int) -> int:
    """Waves per workgroup: :data:`LANE_WAVES` (or the format's, or :func:`small_phases`'), halved
    until the workgroup's rows divide N."""
    s = mm.shape()
    small = small_phases(s.b_format, s.m, s.k, span)
    w = small[2] if small else LANE_WAVES_OF.get(s.b_format, LANE_WAVES)
    while w > 1 and s.n % (w * rows * 64 // span):
        w //= 2
    return w


def quant_lane_kernels(mm: MatmulOp, name: str) -> list[gcn.KernelOp] | None:
    """The kernel of ``mm`` when :func:`quant_lane_plan` applies, else None."""
    plan = quant_lane_plan(mm)
    if plan is None:
        return None
    rows, span, _ = plan
    s = mm.shape()
    if not int8_activations(s.b_format, s.m, s.k):
        return [QuantLaneGemvBuilder(mm, name, rows, span, plan_waves(mm, rows, span)).build()]
    # int8 activations: from LANE_INT8_PRE_FROM_M the pre-kernel quantizes A into the workspace once,
    # then the GEMV; below, each workgroup quantizes A as it stages it
    pre = s.m >= LANE_INT8_PRE_FROM_M_OF.get(s.b_format, LANE_INT8_PRE_FROM_M) or s.k > LANE_INT8_LONG_K
    gemv = QuantLaneInt8Builder(mm, name, rows, span, plan_waves(mm, rows, span), pre)
    if not pre:
        return [gemv.build()]
    return quant_a_plan(build_quant_a(mm, f"{name}_quant_a", gemv.kernargs()), [gemv.build()])


class QuantLaneGemvBuilder(LaneGemvBuilder, QuantGemvBuilder):
    """Builds the lane-along-K quantized GEMV (module docstring): LaneGemvBuilder's geometry,
    reduction and output, QuantGemvBuilder's kernel arguments (B the tensor's bytes) and launch
    facts (``b_format``).  :meth:`build` runs the prologue (:meth:`_prologue`), A's first phase
    into LDS (:meth:`_stage_first`), the K loop (:meth:`_k_loop`, one unit of B a step:
    :meth:`_unit_blocks`, :meth:`_unit_int4`, :meth:`_unit_q4k`) and the reduction and output."""

    def __init__(self, mm: MatmulOp, name: str, rows: int, span: int, waves: int = 1):
        super().__init__(mm, name, rows, 1, 1, span, waves)
        self.unit_w, self.unit_b = LANE_UNITS[self.fmt]
        s = self.shape
        # an int4 format's last, partial group (K % G weights, 4 + (K % G) / 2 bytes) is the row's last
        # unit, lane tail - 1's of the last round (:meth:`_load_b`, :meth:`_part_pairs`)
        self.part_w = s.k % self.unit_w if self.fmt in INT4_GROUP_FORMATS else 0
        self.units = -(-s.k // self.unit_w)
        self.iters = -(-self.units // span)
        self.tail = self.units - (self.iters - 1) * span  # units of the last round (lanes kl < tail)
        self.n_dw = self.unit_b // 4
        self.pieces = 2 * self.unit_w // 16  # 16-byte pieces of A per unit
        self.unit_a = span * 16 * self.pieces  # bytes of a row of A per iteration (span units)
        # Q4_K: the activation sums of A's 32-weight chunks, f32, once per workgroup at staging
        self.prefetch_phase = True  # the next phase's A loaded into VGPRs a phase ahead
        self.tail_bases: dict = {}  # the last round's addresses and masks (:meth:`_tail_addr`, :meth:`_part_mask`)
        self.chunks_per_unit = self.unit_w // 32
        self.sums = self.fmt == "q4_k"
        self.sum_round = 4 * span * self.chunks_per_unit if self.sums else 0  # LDS bytes a row and round
        # A's M rows (and their sums) into LDS by phases of the lane's units (at most LANE_A_PHASE_BYTES)
        small = small_phases(s.b_format, s.m, s.k, span)
        phase_bytes, self.b_ahead = small[:2] if small else (LANE_A_PHASE_BYTES, LANE_B_AHEAD_OF.get(self.fmt, LANE_B_AHEAD))
        self.per_phase = max(1, min(self.iters, phase_bytes // (s.m * (self.unit_a + self.sum_round))))
        self.phases = [(i0, min(self.iters, i0 + self.per_phase)) for i0 in range(0, self.iters, self.per_phase)]
        self.a_row_lds = self.per_phase * self.unit_a  # LDS bytes of a row of A in a phase
        self.sum_row_lds = self.per_phase * self.sum_round  # ... of its sums, after A's M rows

    def build(self) -> gcn.KernelOp:
        entry = self._prologue()
        self._stage_first()
        acc = self._k_loop()
        r = self.regs
        r.e(gcn.SBarrierOp(comment="A read by every wave: LDS free for the reduction"))
        self._reduce_and_store(r.e, acc, r.lanes, r.tid, r.wave, r.ptr_c, r.n0, r.alpha, r.beta, False)
        return self._finish(entry, max(self.waves * REDUCE_BYTES, self.shape.m * (self.a_row_lds + self.sum_row_lds)))

    # ---- prologue: kernel arguments, the wave's rows, the lane's place in its row ----

    def _prologue(self):
        """Emits the kernel's entry (``self.regs``: the registers the other steps share); returns its block."""
        R, span, W = self.rows, self.span, self.waves
        slots = 64 // span
        ldb_b = self.shape.ldb
        ke = kernel_entry(False, 1, R)
        entry, e = ke.block, ke.e
        kp, wg_x, tid, exec0 = ke.kp, ke.wg_x, ke.tid, ke.exec0
        item, wave = tid, None  # the work-item in the workgroup; the wave (W > 1)
        if W > 1:
            wave = e(gcn.VReadfirstlaneB32Op(e(gcn.VLshrrevB32Op(6, item)).vdst)).sdst
            tid = e(gcn.VAndB32Op(63, item)).vdst  # the lane
        kargs = {a["name"]: a["offset"] for a in self.kernargs()}
        self.kp = kp
        lanes = e(gcn.SAndB64Op(exec0, -1)).sdst  # a copy of the full EXEC
        ptr_a, ptr_b, ptr_c = (e(gcn.SLoadDwordx2Op(kp, kargs[x], comment=f"kernarg {x}")).sdst for x in "ABC")
        alpha, beta = (e(gcn.SLoadDwordOp(kp, kargs[x], comment=f"kernarg {x}")).sdst for x in ("alpha", "beta"))
        # the wave's first weight row
        n0 = e.mul(wg_x, R * slots * W) if wave is None else \
            e(gcn.SAddU32Op(e.mul(wg_x, R * slots * W), e.mul(wave, R * slots))).sdst
        b_rows = e.add64(ptr_b, *e.mul64(n0, ldb_b), comment="B row n0")
        kl = tid if slots == 1 else e(gcn.VAndB32Op(span - 1, tid)).vdst  # the lane's place in its row
        lane_b = e(gcn.VMulLoU32Op(kl, e.const(self.unit_b))).vdst  # its first unit's bytes in the row
        if slots > 1:
            slot = e(gcn.VLshrrevB32Op(span.bit_length() - 1, tid)).vdst
            lane_b = e(gcn.VAddU32Op(e(gcn.VMulLoU32Op(slot, e.const(ldb_b))).vdst, lane_b)).vdst
        voff_b = [lane_b if r == 0 else e(gcn.VAddU32Op(e.const(r * slots * ldb_b), lane_b)).vdst for r in range(R)]
        self.regs = _LaneRegs(e, lanes, item, tid, wave, kl, ptr_a, ptr_c, alpha, beta, n0, b_rows, voff_b)
        return entry

    def _load_b(self, i: int) -> list[list[SSAValue]]:
        """The R rows' unit i (of the lane's iters); in a partial last round zeros past the row's
        units (scale 0: their products are 0)."""
        r_ = self.regs
        e, n_dw, ub = r_.e, self.n_dw, self.unit_b
        base = e.add64(r_.b_rows, i * self.span * ub, 0, comment=f"B: units +{i * self.span}") if i else r_.b_rows
        loads = range(n_dw // 4 + (1 if n_dw % 4 else 0))
        if i + 1 < self.iters or (self.tail == self.span and not self.part_w):
            return [b_row_loads(e, r_.voff_b[r], base, n_dw, loads, f"row {r}, unit +{i}") for r in range(self.rows)]
        zeros = [[e(gcn.RegSequenceOp([e(gcn.VMovB32Op(0)).vdst for _ in range(4)])).result
                  if q < n_dw // 4 else e(gcn.VMovB32Op(0)).vdst for q in loads] for _ in range(self.rows)]
        whole = self.tail - (1 if self.part_w else 0)  # lanes kl < whole load a whole unit
        if self.part_w:
            self._part_mask()  # (its compares under the full EXEC)
        e(gcn.SAndB64Op(r_.lanes, e(gcn.VCmpGtU32Op(e.const(whole), r_.kl)).sdst, result_type=gcn.exec_type()))
        out = []
        for r in range(self.rows):
            regs = []
            for q in loads:
                if q < n_dw // 4:
                    regs.append(e(gcn.GlobalLoadDwordx4Op(r_.voff_b[r], base, offset=16 * q, merge=zeros[r][q],
                                                          comment=f"B row {r}, last units, dwords {4 * q}..")).vdst)
                else:
                    regs.append(e(gcn.GlobalLoadDwordOp(r_.voff_b[r], base, offset=4 * (n_dw - 1), merge=zeros[r][q],
                                                        comment=f"B row {r}, last units, dword {n_dw - 1}")).vdst)
            out.append(regs)
        if self.part_w:
            out = self._load_part(base, out)
        e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
        return out

    def _part_mask(self) -> SSAValue:
        """The SGPR mask of lane kl = tail - 1 (each row's partial int4 group in the last round)."""
        e, kl, tb = self.regs.e, self.regs.kl, self.tail_bases
        if "part" not in tb:
            lt = [e(gcn.VCmpGtU32Op(e.const(t), kl)).sdst for t in (self.tail, self.tail - 1)]
            tb["part"] = e(gcn.SXorB64Op(lt[0], lt[1])).sdst
        return tb["part"]

    def _load_part(self, base: SSAValue, out: list) -> list:
        """Lane tail - 1's partial int4 group: its 1 + (K % G) / 8 dwords (exactly its bytes), each
        its own ``global_load_dword``, merged into ``out`` (the whole units' registers, zero in that
        lane) by ``v_cndmask_b32``."""
        r_ = self.regs
        e, n_dw = r_.e, self.n_dw
        pd = 1 + self.part_w // 8
        mask = self._part_mask()
        e(gcn.SAndB64Op(mask, -1, result_type=gcn.exec_type()))
        part = [[e(gcn.GlobalLoadDwordOp(r_.voff_b[r], base, offset=4 * q, merge=e(gcn.VMovB32Op(0)).vdst,
                                         comment=f"B row {r}, the partial group, dword {q}")).vdst for q in range(pd)]
                for r in range(self.rows)]
        e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
        merged = []
        for r, regs in enumerate(out):
            dws = [e(gcn.VCndmaskB32Op(self._dw(regs, q), part[r][q], mask)).vdst if q < pd else self._dw(regs, q)
                   for q in range(n_dw)]
            merged.append([e(gcn.RegSequenceOp(dws[4 * j:4 * j + 4])).result for j in range(n_dw // 4)]
                          + ([dws[-1]] if n_dw % 4 else []))
        return merged

    # ---- A's M rows into LDS by phases, 16-byte piece g of a phase's row at piece lds_swizzle(g) ----

    def _stage_load(self, i0: int, i1: int) -> list:
        """The global loads of the phase's A (units i0 .. i1 - 1 of every lane), work-item t piece
        t + threads j of each row."""
        r_ = self.regs
        e, P, threads = r_.e, self.pieces, 64 * self.waves
        lda_b = self.shape.lda * 2
        # (a partial last round: its units alone; a partial int4 group: its K % G weights)
        pieces = min(self.shape.k // 8, i1 * self.span * P) - i0 * self.span * P
        out = []
        for j in range(-(-pieces // threads)):
            if j not in self.swz:
                g = r_.item if j == 0 else e(gcn.VAddU32Op(e.const(j * threads), r_.item)).vdst
                self.swz[j] = (g, e(gcn.VLshlrevB32Op(4, lds_swizzle(e, g, P))).vdst)
            g, phys = self.swz[j]
            partial = (j + 1) * threads > pieces
            if partial:
                e(gcn.SAndB64Op(r_.lanes, e(gcn.VCmpGtU32Op(e.const(pieces), g)).sdst, result_type=gcn.exec_type()))
            for m in range(self.shape.m):
                off = m * lda_b + i0 * self.unit_a + 16 * threads * j
                base = e.add64(r_.ptr_a, off, 0, comment=f"A row {m}, pieces +{j * threads}") if off else r_.ptr_a
                v = e(gcn.GlobalLoadDwordx4Op(self.voff_t, base, comment=f"A row {m} to LDS")).vdst
                out.append((partial and pieces, g, phys, m, v))
            if partial:
                e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
        return out

    def _stage_write(self, staged: list, i0: int, i1: int) -> None:
        """The phase's A (units i0 .. i1 - 1) from VGPRs into LDS; Q4_K: then its chunks' sums."""
        r_ = self.regs
        e = r_.e
        for pieces, g, phys, m, v in staged:
            if pieces:
                e(gcn.SAndB64Op(r_.lanes, e(gcn.VCmpGtU32Op(e.const(pieces), g)).sdst, result_type=gcn.exec_type()))
            e(gcn.DsWriteB128Op(phys, v, offset=m * self.a_row_lds, comment=f"A row {m}"))
            if pieces:
                e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
        e(gcn.SBarrierOp(comment="A's phase in LDS"))
        if self.sums:
            self._stage_sums(i0, i1)
            e(gcn.SBarrierOp(comment="A's sums in LDS"))

    def _stage_sums(self, i0: int, i1: int) -> None:
        """Q4_K: the sum of each 32-activation chunk of the phase's A, by the 16 ``v_dot2_f32_f16``
        with (1, 1) of the SGPR kernel, in its order (the same f32 value), work-item t chunk
        t + threads j of each row, to LDS after A's rows: the lanes read each sub-block's sum
        instead of computing it (once per workgroup, not once per lane and weight row)."""
        r_ = self.regs
        e, P, cpu, threads = r_.e, self.pieces, self.chunks_per_unit, 64 * self.waves
        n = (min(self.units, i1 * self.span) - i0 * self.span) * cpu  # the phase's staged chunks a row
        ones = e(gcn.VMovB32Op(F16_ONES)).vdst
        for j in range(-(-n // threads)):
            ch = r_.item if j == 0 else e(gcn.VAddU32Op(e.const(j * threads), r_.item)).vdst
            partial = (j + 1) * threads > n
            if partial:
                e(gcn.SAndB64Op(r_.lanes, e(gcn.VCmpGtU32Op(e.const(n), ch)).sdst, result_type=gcn.exec_type()))
            u = e(gcn.VLshrrevB32Op(cpu.bit_length() - 1, ch)).vdst  # the chunk's unit (in the phase)
            g0 = e(gcn.VLshlrevB32Op(2, ch)).vdst  # its first piece, u P + 4 c
            gx = e(gcn.VXorB32Op(g0, e(gcn.VAndB32Op(7, u)).vdst)).vdst  # at piece g0 ^ x (lds_swizzle; P >= 8)
            addr = [e(gcn.VLshlrevB32Op(4, gx if q == 0 else e(gcn.VXorB32Op(q, gx)).vdst)).vdst for q in range(4)]
            sum_at = e(gcn.VLshlrevB32Op(2, ch)).vdst
            for m in range(self.shape.m):
                rows_a = [[e(gcn.DsReadB128Op(addr[q], offset=m * self.a_row_lds, comment=f"A row {m}, sums' chunk")).vdst
                           for q in range(4)]]
                sa = self._dots([ones] * 16, rows_a, 0, self.zero)
                e(gcn.DsWriteB32Op(sum_at, sa, offset=self.shape.m * self.a_row_lds + m * self.sum_row_lds,
                                   comment=f"sum of a chunk of A row {m}"))
            if partial:
                e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
        assert P * 16 == 2 * self.unit_w and P >= 8

    def _stage_first(self) -> None:
        """A's first phase into LDS, B's first unit loaded between A's loads and its LDS writes
        (the writes wait for A alone); then the lane's LDS addresses of its units' pieces."""
        r_ = self.regs
        e, P = r_.e, self.pieces
        self.voff_t = e(gcn.VLshlrevB32Op(4, r_.item)).vdst
        self.swz: dict[int, tuple[SSAValue, SSAValue]] = {}  # round j: (g, its LDS address)
        self.zero = e(gcn.VMovB32Op(0)).vdst
        staged = self._stage_load(*self.phases[0])
        self.bq = {0: self._load_b(0)}
        self._stage_write(staged, *self.phases[0])
        self._lane_addresses()

    def _lane_addresses(self) -> None:
        """The lane's LDS addresses of its units' pieces of A (``self.addr``)."""
        r_ = self.regs
        e, P = r_.e, self.pieces
        # lane kl's unit u = kl + span i: piece p (0..P-1) at LDS a_lds + 16 (u P + (p ^ x)), x of kl
        xk = lds_swizzle(e, None, P, r_.kl)
        lane_lds = e(gcn.VLshlrevB32Op((16 * P).bit_length() - 1, r_.kl)).vdst
        self.addr = [e(gcn.VLshlAddU32Op(e(gcn.VXorB32Op(p, xk)).vdst, 4, lane_lds)).vdst for p in range(min(P, 8))]

    # ---- A's chunks from LDS (32 activations of each row), read right before their dots ----

    def _tail_addr(self, p: int, base: SSAValue, tail: int | None = None) -> SSAValue:
        """``base`` for lanes kl < tail (default ``self.tail``), lane 0's (16 p: unit 0 of the round,
        staged) for the others: finite A times their zero B."""
        e, tb = self.regs.e, self.tail_bases
        tail = self.tail if tail is None else tail
        if (p, tail, base) not in tb:
            ge, keep = self._tail_keep(tail)
            tb[(p, tail, base)] = e(gcn.VAddU32Op(e(gcn.VAndB32Op(keep, base)).vdst,
                                                  e(gcn.VMulLoU32Op(ge, e.const(16 * p))).vdst)).vdst
        return tb[(p, tail, base)]

    def _tail_keep(self, tail: int | None = None) -> tuple[SSAValue, SSAValue]:
        """(1 where kl >= tail else 0, the mask ~0 where kl < tail else 0), VGPRs (tail: default ``self.tail``)."""
        e, kl, tb = self.regs.e, self.regs.kl, self.tail_bases
        tail = self.tail if tail is None else tail
        if ("ge", tail) not in tb:  # bit 31 of kl + 2^31 - tail
            ge = e(gcn.VLshrrevB32Op(31, e(gcn.VAddU32Op(e.const(0x80000000 - tail), kl)).vdst)).vdst
            tb[("ge", tail)] = ge
            tb[("keep", tail)] = e(gcn.VMulLoU32Op(e(gcn.VXorB32Op(1, ge)).vdst, e.const(0xFFFFFFFF))).vdst
        return tb[("ge", tail)], tb[("keep", tail)]

    def _issue_a(self, j: int) -> None:
        chunks, P = self.chunks, self.pieces
        if j < len(chunks) and j not in self.pending and chunks[j][0] < self.phase[1]:  # (this phase's A only)
            i, c = chunks[j]
            out = []
            for m in range(self.shape.m):
                regs = []
                for q in range(4):
                    p = 4 * c + q
                    off = m * self.a_row_lds + (i - self.phase[0]) * self.unit_a + 16 * (p - p % 8)
                    base = self.addr[p % 8] if P >= 8 else self.addr[p]
                    if i + 1 == self.iters and self.part_w and 32 * c >= self.part_w:  # past the partial group too
                        base = self._tail_addr(p % 8 if P >= 8 else p, base, self.tail - 1)
                    elif i + 1 == self.iters and self.tail < self.span:  # lanes past the units: the round before's A
                        base = self._tail_addr(p % 8 if P >= 8 else p, base)
                    regs.append(self.regs.e(gcn.DsReadB128Op(base, offset=off,
                                                             comment=f"A row {m}, unit +{i * self.span}, piece {p}")).vdst)
                out.append(regs)
            self.pending[j] = out

    def _a_chunk(self, i: int, c: int) -> list[list[SSAValue]]:
        """A's 16 dwords (per row m) of chunk c of the lane's unit i, the next chunks' reads issued."""
        j = self.pos[(i, c)]
        for t in range(LANE_A_AHEAD + 1):
            self._issue_a(j + t)
        return self.pending.pop(j)

    def _a_dw(self, rows_a: list[list[SSAValue]], m: int, t: int) -> SSAValue:
        return self.regs.e.sub(rows_a[m][t // 4], t % 4, 1)

    def _dots(self, pairs: list[SSAValue], rows_a, m: int, start: SSAValue) -> SSAValue:
        x = start
        for t in range(16):
            x = self.regs.e(gcn.VDot2F32F16Op(pairs[t], self._a_dw(rows_a, m, t), x)).vdst
        return x

    def _halves(self, word: SSAValue, byte: int, offset: SSAValue) -> SSAValue:
        """The f16 pair (u_byte, u_byte+1) - offset from two bytes of ``word`` (module docstring)."""
        e = self.regs.e
        return e(gcn.VPkAddF16Op(offset, e(gcn.VPermB32Op(self.magic, word, self.select[byte % 4])).vdst)).vdst

    # ---- the K loop: B b_ahead units ahead, the next phase of A staged through VGPRs ----

    def _k_loop(self) -> list[SSAValue]:
        """The lane's ``iters`` units (unrolled); returns the accumulators (row m of A, weight row r at m R + r)."""
        e, M, R = self.regs.e, self.shape.m, self.rows
        iters, per_phase = self.iters, self.per_phase
        self.chunks = [(i, c) for i in range(iters) for c in range(self.unit_w // 32)]
        self.pos = {ch: j for j, ch in enumerate(self.chunks)}
        self.pending: dict[int, list[list[SSAValue]]] = {}
        self.phase = list(self.phases[0])
        self.magic = e(gcn.VMovB32Op(F16_MAGIC_BYTES)).vdst
        self.select = {p: e.const(v) for p, v in PERM_SELECT.items()}
        acc = [e(gcn.VMovB32Op(0)).vdst for _ in range(M * R)]
        self._issue_a(0)
        staged = []
        for i in range(iters):
            if i == self.phase[0] and i + per_phase < iters and self.prefetch_phase:  # the next phase's A, into VGPRs
                staged = self._stage_load(i + per_phase, min(iters, i + 2 * per_phase))
            for d in range(0 if i else 1, self.b_ahead + 1):  # B b_ahead units ahead
                if i + d < iters and i + d not in self.bq:
                    self.bq[i + d] = self._load_b(i + d)
            self._unit(i, self.bq.pop(i), acc)
            if i + 1 == self.phase[1] and i + 1 < iters and not self.prefetch_phase:
                staged = self._stage_load(i + 1, min(iters, i + 1 + per_phase))
            if i + 1 == self.phase[1] and staged:  # every wave done with the phase's A: the next one's
                e(gcn.SBarrierOp(comment="A's phase read"))
                self._stage_write(staged, i + 1, min(iters, i + 1 + per_phase))
                self.phase[:] = [i + 1, min(iters, i + 1 + per_phase)]
                staged = []
        return acc

    def _dw(self, ld: list[SSAValue], q: int) -> SSAValue:
        """Dword ``q`` of a unit of B loaded as :meth:`_load_b` loads it (``ld``: its registers)."""
        return self.regs.e.sub(ld[q // 4], q % 4, 1) if q // 4 < self.n_dw // 4 else ld[-1]

    def _unit(self, i: int, bv: list[list[SSAValue]], acc: list[SSAValue]) -> None:
        """The lane's unit i of each of its R weight rows (``bv``: their registers) into ``acc``."""
        e = self.regs.e
        unit = self._unit_blocks if self.fmt in ("q8_0", "q4_0") else \
            self._unit_int4 if self.fmt in INT4_GROUP_FORMATS else self._unit_q4k
        for r in range(self.rows):
            ld = bv[r]

            def dw(q: int, ld=ld) -> SSAValue:
                return self._dw(ld, q)

            words: dict = {}

            def nib(q: int, hi: bool, dw=dw, words=words) -> SSAValue:
                if (q, hi) not in words:
                    v = dw(q) if not hi else e(gcn.VLshrrevB32Op(4, dw(q))).vdst
                    words[(q, hi)] = e(gcn.VAndB32Op(0x0F0F0F0F, v)).vdst
                return words[(q, hi)]

            unit(i, r, acc, dw, nib, words)

    def _unit_blocks(self, i: int, r: int, acc: list[SSAValue], dw, nib, words: dict) -> None:
        """Q8_0 / Q4_0: the unit's two blocks, 16 dots each per row of A, then acc += d x sum."""
        e, M, R, fmt = self.regs.e, self.shape.m, self.rows, self.fmt
        bb = B_FORMATS[fmt][1]
        offset = e.const(F16_OFFSET[fmt])
        for blk in range(2):
            o = blk * bb
            scale = dw(o // 4)
            if o % 4:
                scale = e(gcn.VLshrrevB32Op(16, scale)).vdst
            d = e(gcn.VCvtF32F16Op(scale)).vdst
            pairs = []
            for p in range(16):
                if fmt == "q8_0":
                    byte = o + 2 + 2 * p
                    if (byte // 4, "x") not in words:
                        words[(byte // 4, "x")] = e(gcn.VXorB32Op(0x80808080, dw(byte // 4))).vdst
                    word = words[(byte // 4, "x")]
                else:
                    byte, hi = (o + 2 + 2 * p, False) if p < 8 else (o + 2 + 2 * p - 16, True)
                    word = nib(byte // 4, hi)
                pairs.append(self._halves(word, byte, offset))
            rows_a = self._a_chunk(i, blk)
            for m in range(M):
                sm = self._dots(pairs, rows_a, m, self.zero)
                acc[m * R + r] = e(gcn.VFmaF32Op(d, sm, acc[m * R + r], comment=f"row {m} += d * block sum")).vdst

    def _unit_int4(self, i: int, r: int, acc: list[SSAValue], dw, nib, words: dict) -> None:
        """An int4 group: its 32-weight chunks' dots summed per row of A, then acc += s x sum."""
        e, M, R = self.regs.e, self.shape.m, self.rows
        hdr = dw(0)
        scale = e(gcn.VCvtF32F16Op(hdr)).vdst
        z = e(gcn.VAndB32Op(0xFF, e(gcn.VLshrrevB32Op(16, hdr)).vdst)).vdst
        nz = e(gcn.VOrB32Op(0xE400, z)).vdst  # f16 -(1024 + z)
        offset = e(gcn.VLshlAddU32Op(nz, 16, nz)).vdst
        sums = [self.zero] * M
        for c in range(self.unit_w // 32):
            pairs = []
            for q in range(1 + 4 * c, 5 + 4 * c):
                lo, hi = nib(q, False), nib(q, True)
                for sel in NIBBLE_INTERLEAVE:
                    il = e(gcn.VPermB32Op(hi, lo, e.const(sel))).vdst
                    pairs += [self._halves(il, 0, offset), self._halves(il, 2, offset)]
            if i + 1 == self.iters and self.part_w and 32 * c >= self.part_w:  # past the partial group: weights 0
                pairs = [e(gcn.VCndmaskB32Op(x, self.zero, self._part_mask())).vdst for x in pairs]
            rows_a = self._a_chunk(i, c)
            sums = [self._dots(pairs, rows_a, m, sums[m]) for m in range(M)]
        for m in range(M):
            acc[m * R + r] = e(gcn.VFmaF32Op(scale, sums[m], acc[m * R + r], comment=f"row {m} += s * sum a (q - z)")).vdst

    def _unit_sums(self, i: int) -> list[list[SSAValue]]:
        """The staged sums of the 8 chunks of the lane's unit i, two ``ds_read_b128`` per row of A
        (lanes past the row's units in a last partial round: unit 0's, finite, times their zero B)."""
        e, kl = self.regs.e, self.regs.kl
        if "sums" not in self.tail_bases:
            self.tail_bases["sums"] = e(gcn.VLshlrevB32Op(5, kl)).vdst  # 32 kl: the lane's 8 sums
        base = self.tail_bases["sums"]
        if i + 1 == self.iters and self.tail < self.span:
            if "sums_tail" not in self.tail_bases:
                self.tail_bases["sums_tail"] = e(gcn.VAndB32Op(self._tail_keep()[1], base)).vdst
            base = self.tail_bases["sums_tail"]
        first = self.shape.m * self.a_row_lds + (i - self.phase[0]) * self.sum_round
        return [[e(gcn.DsReadB128Op(base, offset=first + m * self.sum_row_lds + 16 * h,
                                    comment=f"sums of A row {m}, unit +{i * self.span}")).vdst for h in range(2)]
                for m in range(self.shape.m)]

    def _unit_q4k(self, i: int, r: int, acc: list[SSAValue], dw, nib, words: dict) -> None:
        """A Q4_K super-block: per sub-block and row of A the dots of a q and of a, then
        acc += d sc x sum a q - dmin m x sum a."""
        e, M, R = self.regs.e, self.shape.m, self.rows
        dsc, ndm = q4k_scales(e, dw)
        offset = e.const(F16_MINUS_1024)
        sums = self._unit_sums(i)
        for j in range(8):
            c, hi = divmod(j, 2)
            pairs = [self._halves(nib(4 + 8 * c + p // 2, bool(hi)), 2 * p, offset) for p in range(16)]
            rows_a = self._a_chunk(i, j)
            for m in range(M):
                sq = self._dots(pairs, rows_a, m, self.zero)
                sa = e.sub(sums[m][j // 4], j % 4, 1)
                x = e(gcn.VFmaF32Op(dsc[j], sq, acc[m * R + r], comment=f"row {m} += d sc{j} * sum a q")).vdst
                acc[m * R + r] = e(gcn.VFmaF32Op(ndm[j], sa, x, comment=f"row {m} -= dmin m{j} * sum a")).vdst


class QuantLaneInt8Builder(QuantLaneGemvBuilder):
    """The lane-along-K GEMV of Q8_0 / Q4_0 / int4 / Q4_K weights at M = 2 .. 16 (Q4_K: 4) on the int8
    activations the pre-kernel wrote to the workspace (module docstring, "int8 activations";
    passes/isel/quant_act.py): ``v_dot4_i32_i8`` K loop, R weight rows a lane sharing each LDS read of A."""

    def __init__(self, mm: MatmulOp, name: str, rows: int, span: int, waves: int = 1, pre: bool = True):
        self.pre = pre  # A from the pre-kernel's workspace, else quantized by each workgroup as it is staged
        super().__init__(mm, name, rows, span, waves)
        s = self.shape
        self.b_ahead = LANE_INT8_B_AHEAD
        # a round (span units) of a row of A: 64 int8 bytes a unit, then 16 bytes of its blocks'
        # (d_a, d_a, c, c) after the M rows; phases of a power of two of rounds
        per = max(1, LANE_INT8_PHASE_BYTES // (s.m * span * int8_unit_lds(self.fmt)))
        per = min(1 << (per.bit_length() - 1), 1 << max(0, (self.iters - 1).bit_length()))
        self.per_phase = per
        self.phases = [(i0, min(self.iters, i0 + per)) for i0 in range(0, self.iters, per)]
        self.nb = self.unit_w // 32  # blocks of 32 a unit
        self.qp = self.unit_w // 16  # 16-byte pieces of int8 A a unit (2, 4, 8)
        self.q_row = per * span * self.unit_w  # LDS bytes of a row of int8 A in a phase
        self.m_row = per * span * self.nb * 8  # ... of its blocks' (d_a, c) (after the M rows)
        self.a_row_lds, self.sum_row_lds = self.q_row, self.m_row
        self.np = per * span * self.unit_w // 8  # f16 pieces (16 bytes) of a row of A in a phase (a power of two)
        # the next phase's A into VGPRs ahead where it takes at most LANE_INT8_STAGED_VGPRS
        self.prefetch_phase = 4 * -(-s.m * self.np // (64 * waves)) <= LANE_INT8_STAGED_VGPRS
        self.sums = False

    def kernargs(self) -> list[dict]:
        """The quantized GEMV's arguments; with the pre-kernel the workspace last (its int8 A:
        passes/isel/quant_act.py)."""
        return int8_kernargs(self.shape) if self.pre else super().kernargs()

    def _finish(self, entry, lds_bytes: int) -> gcn.KernelOp:
        return with_a_quant(super()._finish(entry, lds_bytes))

    # ---- A staged: the pre-kernel's int8 blocks and their (d_a, sum q) copied from the workspace ----

    def _stage_load(self, i0: int, i1: int) -> list:
        return self._stage_load_ws(i0, i1) if self.pre else self._stage_load_q(i0, i1)

    def _stage_write(self, staged: list, i0: int, i1: int) -> None:
        return self._stage_write_ws(staged, i0, i1) if self.pre else self._stage_write_q(staged, i0, i1)

    # ---- A from the pre-kernel's workspace: its int8 blocks and their (d_a, sum q) copied into LDS ----

    def _stage_map(self, j: int) -> tuple:
        """Work-item t's piece ``f = t + threads j`` of the phase's M rows (8 activations): (f, g (its
        piece in the row), its global byte offsets from the phase's first byte of row 0 (with the
        pre-kernel: of its 8 int8 bytes and its block's meta word in the workspace; else of its 16 f16
        bytes in A), LDS address of its 8 int8 bytes, LDS address of its block's meta word), or None
        past the rows."""
        if j in self.swz:
            return self.swz[j]
        r_ = self.regs
        e, threads, np_ = r_.e, 64 * self.waves, self.np
        if threads * j >= self.shape.m * np_:
            return None
        f = r_.item if j == 0 else e(gcn.VAddU32Op(e.const(j * threads), r_.item)).vdst
        sh = np_.bit_length() - 1
        m = e(gcn.VLshrrevB32Op(sh, f)).vdst
        g = e(gcn.VAndB32Op(np_ - 1, f)).vdst
        if self.pre:  # the workspace: row m's int8 at m K, its blocks' (d_a, sum q) at M K + 8 (m K / 32 + b)
            k = self.shape.k
            voff_q = e(gcn.VLshlAddU32Op(g, 3, e(gcn.VMulLoU32Op(m, e.const(k))).vdst)).vdst
            voff = (voff_q, e(gcn.VLshlAddU32Op(e(gcn.VAndB32Op(3, g)).vdst, 2, e(gcn.VAddU32Op(
                e(gcn.VLshlrevB32Op(1, e(gcn.VAndB32Op(~3 & 0xFFFFFFFF, g)).vdst)).vdst,
                e(gcn.VMulLoU32Op(m, e.const(k // 4))).vdst)).vdst)).vdst)
        else:  # A's f16 row m
            voff = e(gcn.VLshlAddU32Op(g, 4, e(gcn.VMulLoU32Op(m, e.const(2 * self.shape.lda))).vdst)).vdst
        q_at, m_at = self._lds_at(m, g)
        self.swz[j] = (f, g, voff, q_at, m_at)
        return self.swz[j]

    def _lds_at(self, m: SSAValue, g: SSAValue) -> tuple[SSAValue, SSAValue]:
        """LDS addresses (VGPRs) of row ``m``'s piece ``g`` of the phase: its 8 int8 bytes, its block's meta word."""
        e = self.regs.e
        # int8 bytes: unit u = g / (2 qp), piece ((g >> 1) & (qp - 1)) ^ x(u) of 16 bytes, half g & 1
        qp = self.qp
        p = e(gcn.VXorB32Op(e(gcn.VAndB32Op(qp - 1, e(gcn.VLshrrevB32Op(1, g)).vdst)).vdst,
                            e(gcn.VAndB32Op(min(qp, 8) - 1, e(gcn.VLshrrevB32Op(
                                (2 * qp).bit_length() - 1 + self._swz_shift(), g)).vdst)).vdst)).vdst
        u_at = e(gcn.VLshlrevB32Op(3, e(gcn.VAndB32Op(~(2 * qp - 1) & 0xFFFFFFFF, g)).vdst)).vdst  # unit_w u
        q_at = e(gcn.VLshlAddU32Op(p, 4, e(gcn.VLshlAddU32Op(e(gcn.VAndB32Op(1, g)).vdst, 3, u_at)).vdst)).vdst
        q_at = e(gcn.VAddU32Op(q_at, e(gcn.VMulLoU32Op(m, e.const(self.q_row))).vdst)).vdst
        # meta: row m's block b = g >> 2 (2 u + h), byte 8 b + 4 (g & 3) (lane g & 3 = 0: d_a, 1: c)
        m_at = e(gcn.VLshlAddU32Op(e(gcn.VAndB32Op(3, g)).vdst, 2,
                                   e(gcn.VLshlrevB32Op(3, e(gcn.VLshrrevB32Op(2, g)).vdst)).vdst)).vdst
        m_at = e(gcn.VAddU32Op(e.const(self.shape.m * self.q_row), e(gcn.VAddU32Op(
            m_at, e(gcn.VMulLoU32Op(m, e.const(self.m_row))).vdst)).vdst)).vdst
        return q_at, m_at

    def _swz_shift(self) -> int:
        """x(u) = (u >> shift) & (min(qp, 8) - 1) for the qp 16-byte pieces of a unit: the 8 lanes of a
        ``ds_read_b128`` pass (consecutive units, the same piece) hit 8 different groups of 4 banks
        (units of 32, 64, 128, 256 bytes: shift 2, 1, 0, 0; Q4_K's 16 pieces: piece p ^ x stays in p's
        half, so pieces 8..15 are pieces 0..7's address + 128)."""
        return {2: 2, 4: 1, 8: 0, 16: 0}[self.qp]

    def _stage_mask(self, j: int, f: SSAValue, g: SSAValue, i0: int, i1: int, lead: int = 0) -> bool:
        """EXEC for the pieces of round j in the phase (units i0 .. i1 - 1 of each lane); with
        ``lead`` the block's first ``lead`` work-items only.  Returns whether EXEC was narrowed."""
        r_ = self.regs
        e, threads = r_.e, 64 * self.waves
        np_phase = (min(self.units, i1 * self.span) - i0 * self.span) * self.unit_w // 8
        conds = []
        if threads * (j + 1) > self.shape.m * self.np:
            conds.append(e(gcn.VCmpGtU32Op(e.const(self.shape.m * self.np), f)).sdst)
        if np_phase < self.np:
            conds.append(e(gcn.VCmpGtU32Op(e.const(np_phase), g)).sdst)
        if lead:
            conds.append(e(gcn.VCmpGtU32Op(e.const(lead), e(gcn.VAndB32Op(3, g)).vdst)).sdst)
        if not conds:
            return False
        mask = r_.lanes
        for c in conds:
            mask = e(gcn.SAndB64Op(mask, c)).sdst
        e(gcn.SAndB64Op(mask, -1, result_type=gcn.exec_type()))
        return True

    def _stage_load_ws(self, i0: int, i1: int) -> list:
        """The phase's int8 A (8 bytes a work-item: ``global_load_dwordx2``) and its blocks' meta words
        (the block's first work-item d_a, the second sum q: ``global_load_dword``) from the
        workspace into VGPRs: work-item t piece t + threads j of the phase's M rows (row-major)."""
        r_ = self.regs
        e = r_.e
        k0 = i0 * self.span * self.unit_w  # the phase's first activation of a row
        base_q = e.add64(self.ptr_ws, k0, 0, comment=f"int8 A: units +{i0 * self.span}") if k0 else self.ptr_ws
        base_m = e.add64(self.ptr_ws, self.shape.m * self.shape.k + k0 // 4, 0, comment="A's blocks' d_a, sum q")
        lead = 1 if self.fmt == "q8_0" else 2
        out = []
        j = 0
        while (mp := self._stage_map(j)) is not None:
            f, g, (voff_q, voff_m), _, _ = mp
            narrowed = self._stage_mask(j, f, g, i0, i1)
            q = e(gcn.GlobalLoadDwordx2Op(voff_q, base_q, comment="8 int8 activations")).vdst
            if narrowed:
                e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
            self._stage_mask(j, f, g, i0, i1, lead)
            meta = e(gcn.GlobalLoadDwordOp(voff_m, base_m,
                                           comment="the block's d_a (lane 0), sum q (lane 1)")).vdst
            e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
            out.append((j, q, meta))
            j += 1
        return out

    def _stage_write_ws(self, staged: list, i0: int, i1: int) -> None:
        """The phase's int8 pieces and their blocks' meta words into LDS (Q4_0: c = -8 sum q, i32;
        int4: sum q as f32, exact)."""
        r_ = self.regs
        e = r_.e
        for j, q, meta in staged:
            f, g, _, q_at, m_at = self.swz[j]
            narrowed = self._stage_mask(j, f, g, i0, i1)
            e(gcn.DsWriteB64Op(q_at, q, comment="8 int8 activations"))
            if narrowed:
                e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
            lead = 1 if self.fmt == "q8_0" else 2
            self._stage_mask(j, f, g, i0, i1, lead)
            val = meta
            if self.fmt != "q8_0":
                c = e(gcn.VMulLoU32Op(meta, e.const(0xFFFFFFF8))).vdst if self.fmt == "q4_0" else \
                    e(gcn.VCvtF32I32Op(meta)).vdst
                val = e(gcn.VCndmaskB32Op(c, meta, e(gcn.VCmpGtU32Op(e.const(1), e(gcn.VAndB32Op(1, g)).vdst)).sdst)).vdst
            e(gcn.DsWriteB32Op(m_at, val, comment="the block's d_a (lane 0), c (lane 1)"))
            e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
        e(gcn.SBarrierOp(comment="A's phase in LDS"))

    # ---- without the pre-kernel (small M): f16 pieces loaded, quantized per block of 32 by the block's 4 work-items ----

    def _stage_load_q(self, i0: int, i1: int) -> list:
        """The phase's A as f16 pieces (16 bytes) into VGPRs: work-item t piece t + threads j of the
        phase's M rows (row-major)."""
        r_ = self.regs
        e = r_.e
        base = e.add64(r_.ptr_a, i0 * self.span * 2 * self.unit_w, 0, comment=f"A: units +{i0 * self.span}") \
            if i0 else r_.ptr_a
        out = []
        j = 0
        while (mp := self._stage_map(j)) is not None:
            f, g, voff, _, _ = mp
            narrowed = self._stage_mask(j, f, g, i0, i1)
            out.append((j, e(gcn.GlobalLoadDwordx4Op(voff, base, comment="A's 8 activations to quantize")).vdst))
            if narrowed:
                e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
            j += 1
        return out

    def _stage_write_q(self, staged: list, i0: int, i1: int) -> None:
        """Quantize the phase's pieces (:meth:`_quantize`) and write them and their blocks' meta
        words to LDS."""
        r_ = self.regs
        e = r_.e
        for j, v in staged:
            f, g, _, q_at, m_at = self.swz[j]
            narrowed = self._stage_mask(j, f, g, i0, i1)
            q, d_a, c = self._quantize(v)
            e(gcn.DsWriteB64Op(q_at, q, comment="8 int8 activations"))
            if narrowed:
                e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
            lead = 1 if self.fmt == "q8_0" else 2
            self._stage_mask(j, f, g, i0, i1, lead)
            val = d_a if c is None else e(gcn.VCndmaskB32Op(c, d_a, e(gcn.VCmpGtU32Op(
                e.const(1), e(gcn.VAndB32Op(1, g)).vdst)).sdst)).vdst
            e(gcn.DsWriteB32Op(m_at, val, comment="the block's d_a (lane 0), -8 sum q (lane 1)"))
            e(gcn.SAndB64Op(r_.lanes, -1, result_type=gcn.exec_type()))
        e(gcn.SBarrierOp(comment="A's phase in LDS"))

    def _quantize(self, v: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue | None]:
        """The work-item's 8 f16 activations ``v`` (4 dwords) as 8 int8 q = rint(a 2^(7 - e)), clamped
        to 127, e the exponent of its block's largest |a| (max over the block's 4 work-items by
        ``ds_swizzle_b32``): (the 2 dwords of q, the block's f32 step d_a = 2^(e - 7) (NaN where the
        block holds an inf or NaN), Q4_0: -8 x the block's sum of q (i32), else None)."""
        k8 = None if self.fmt == "q8_0" else 0xF8F8F8F8 if self.fmt == "q4_0" else 0x01010101
        q, d_a, c = quantize_pieces(self.regs.e, v, self.zero, k8)
        if c is not None and self.fmt != "q4_0":
            c = self.regs.e(gcn.VCvtF32I32Op(c)).vdst
        return q, d_a, c

    def _stage_first(self) -> None:
        r_ = self.regs
        e = r_.e
        self.swz: dict = {}
        self.zero = e(gcn.VMovB32Op(0)).vdst
        if self.pre:
            kargs = {a["name"]: a["offset"] for a in self.kernargs()}
            self.ptr_ws = e(gcn.SLoadDwordx2Op(self.kp, kargs["workspace"], comment="kernarg workspace")).sdst
        staged = self._stage_load(*self.phases[0])
        self.bq = {0: self._load_b(0)}
        self._stage_write(staged, *self.phases[0])
        # lane kl's unit: int8 piece p at unit_w kl + 16 (p ^ x(kl)) (:meth:`_swz_shift`); meta at 8 nb kl
        qp = self.qp
        xk = e(gcn.VAndB32Op(min(qp, 8) - 1, e(gcn.VLshrrevB32Op(self._swz_shift(), r_.kl)).vdst)).vdst
        lane_q = e(gcn.VLshlrevB32Op(self.unit_w.bit_length() - 1, r_.kl)).vdst
        self.addr = [e(gcn.VLshlAddU32Op(e(gcn.VXorB32Op(p, xk)).vdst, 4, lane_q)).vdst for p in range(min(qp, 8))]
        self.meta_addr = e(gcn.VLshlrevB32Op((8 * self.nb).bit_length() - 1, r_.kl)).vdst

    def _issue_a(self, j: int) -> None:  # (A's reads are :meth:`_unit`'s)
        return

    def _read_a(self, i: int, m: int, blk: int) -> tuple[list[SSAValue], SSAValue]:
        """Row m's int8 activations of block ``blk`` of the lane's unit i (2 ``ds_read_b128``) and
        its meta words (d_a; Q4_0: and c)."""
        e = self.regs.e
        last = i + 1 == self.iters and self.tail < self.span
        rel = i - self.phase[0]
        q = []
        for p in (2 * blk, 2 * blk + 1):
            base = self._tail_addr(p % 8, self.addr[p % 8]) if last else self.addr[p % 8]
            q.append(e(gcn.DsReadB128Op(base, offset=m * self.q_row + rel * self.span * self.unit_w + 16 * (p - p % 8),
                                        comment=f"int8 A row {m}, unit +{i * self.span}, piece {p}")).vdst)
        mb = self.meta_addr
        if last:
            if "meta" not in self.tail_bases:
                self.tail_bases["meta"] = e(gcn.VAndB32Op(self._tail_keep()[1], mb)).vdst
            mb = self.tail_bases["meta"]
        read = gcn.DsReadB32Op if self.fmt == "q8_0" else gcn.DsReadB64Op
        meta = e(read(mb, offset=self.shape.m * self.q_row + m * self.m_row + rel * self.span * 8 * self.nb + 8 * blk,
                      comment=f"A row {m}'s d_a, c")).vdst
        return q, meta

    def _weights(self, ld: list[SSAValue], blk: int) -> tuple[SSAValue, list[SSAValue]]:
        """Block ``blk`` of a unit of one weight row: (f32 d_w, its 8 int8 / nibble dwords in A's order)."""
        e = self.regs.e
        o = blk * B_FORMATS[self.fmt][1] // 4  # its first dword; block 0's scale the low half, block 1's the high
        dw = [self._dw(ld, q) for q in range(o, min(self.n_dw, o + 9))]
        d = e(gcn.VCvtF32F16Op(dw[0] if blk == 0 else e(gcn.VLshrrevB32Op(16, dw[0])).vdst)).vdst
        n = 8 if self.fmt == "q8_0" else 4
        if blk == 0:  # its bytes start 2 bytes into a dword
            sel = e.const(ALIGN_2)
            qs = [e(gcn.VPermB32Op(dw[t + 1], dw[t], sel)).vdst for t in range(n)]
        else:
            qs = dw[1:1 + n]
        if self.fmt == "q4_0":  # weights 4t.. in the low nibbles of dword t, 16 + 4t.. in the high
            qs = [e(gcn.VAndB32Op(0x0F0F0F0F, x)).vdst for x in qs] + \
                 [e(gcn.VAndB32Op(0x0F0F0F0F, e(gcn.VLshrrevB32Op(4, x)).vdst)).vdst for x in qs]
        return d, qs

    def _weights_int4(self, ld: list[SSAValue], blk: int, head: tuple | None) -> tuple:
        """Block ``blk`` of an int4 group (a unit) of one weight row: (f32 s, f32 -z, its 8 nibble dwords
        in A's order: ``v_perm_b32`` interleaves the low nibbles (weights 2j) and the high ones (2j + 1));
        ``head``: the group's (s, -z) once decoded."""
        e = self.regs.e
        if head is None:
            hdr = self._dw(ld, 0)
            z = e(gcn.VAndB32Op(0xFF, e(gcn.VLshrrevB32Op(16, hdr)).vdst)).vdst
            head = (e(gcn.VCvtF32F16Op(hdr)).vdst,
                    e(gcn.VCvtF32I32Op(e(gcn.VMulLoU32Op(z, e.const(0xFFFFFFFF))).vdst)).vdst)
        qs = []
        for q in range(1 + 4 * blk, 5 + 4 * blk):
            x = self._dw(ld, q)
            lo = e(gcn.VAndB32Op(0x0F0F0F0F, x)).vdst
            hi = e(gcn.VAndB32Op(0x0F0F0F0F, e(gcn.VLshrrevB32Op(4, x)).vdst)).vdst
            qs += [e(gcn.VPermB32Op(hi, lo, e.const(sel))).vdst for sel in NIBBLE_INTERLEAVE]
        return (*head, qs)

    def _rows_of_a(self, i: int, blk: int):
        """(m, its int8 block ``blk`` of unit i, its meta words) for each row m of A, the LDS reads
        :data:`LANE_INT8_A_AHEAD` rows ahead of the row yielded."""
        M, ahead = self.shape.m, LANE_INT8_A_AHEAD
        nxt = {m: self._read_a(i, m, blk) for m in range(min(M, ahead))}
        for m in range(M):
            if m + ahead < M:
                nxt[m + ahead] = self._read_a(i, m + ahead, blk)
            yield (m, *nxt.pop(m))

    def _dot8(self, qs: list[SSAValue], q: list[SSAValue], start: SSAValue) -> SSAValue:
        """start + the 32 products of a block's int8 (or nibble) weights ``qs`` (8 dwords) and its
        activations ``q`` (2 x 4 dwords): 8 ``v_dot4_i32_i8``."""
        e = self.regs.e
        x = start
        for t in range(8):
            x = e(gcn.VDot4I32I8Op(qs[t], e.sub(q[t // 4], t % 4, 1), x)).vdst
        return x

    def _unit(self, i: int, bv: list[list[SSAValue]], acc: list[SSAValue]) -> None:
        """Unit i of the lane's R rows: per row m of A and block, 8 ``v_dot4_i32_i8`` from c (Q4_0: -8
        sum q_a; Q8_0, int4: 0), the exact integer to f32 (int4: minus z sum q_a, exact), then acc +=
        (d_w d_a) x it."""
        if self.fmt in INT4_GROUP_FORMATS:
            return self._unit_int4_int8(i, bv, acc)
        if self.fmt == "q4_k":
            return self._unit_q4k_int8(i, bv, acc)
        e, R = self.regs.e, self.rows
        for blk in range(2):
            w = [self._weights(bv[r], blk) for r in range(R)]
            for m, q, meta in self._rows_of_a(i, blk):
                d_a = e.sub(meta, 0, 1) if self.fmt == "q4_0" else meta
                start = e.sub(meta, 1, 1) if self.fmt == "q4_0" else self.zero
                for r in range(R):
                    d_w, qs = w[r]
                    x = self._dot8(qs, q, start)
                    sc = e(gcn.VMulF32Op(d_w, d_a)).vdst
                    acc[m * R + r] = e(gcn.VFmaF32Op(sc, e(gcn.VCvtF32I32Op(x)).vdst, acc[m * R + r],
                                                     comment=f"row {m} += d_w d_a x block's integer dot")).vdst

    def _unit_int4_int8(self, i: int, bv: list[list[SSAValue]], acc: list[SSAValue]) -> None:
        """An int4 group (the unit) of the lane's R rows: per block and row m of A, 8 ``v_dot4_i32_i8``
        of the nibbles q and q_a from 0, f = float(dot) - z sum q_a (exact: integers below 2^24),
        acc += (s d_a) f."""
        e, R = self.regs.e, self.rows
        heads: list = [None] * R
        for blk in range(self.nb):
            w = []
            for r in range(R):
                w.append(self._weights_int4(bv[r], blk, heads[r]))
                heads[r] = w[r][:2]
            for m, q, meta in self._rows_of_a(i, blk):
                d_a, sq = e.sub(meta, 0, 1), e.sub(meta, 1, 1)
                for r in range(R):
                    s_w, nz, qs = w[r]
                    x = self._dot8(qs, q, self.zero)
                    f = e(gcn.VFmaF32Op(nz, sq, e(gcn.VCvtF32I32Op(x)).vdst)).vdst  # sum (q - z) q_a, exact
                    sc = e(gcn.VMulF32Op(s_w, d_a)).vdst
                    acc[m * R + r] = e(gcn.VFmaF32Op(sc, f, acc[m * R + r],
                                                     comment=f"row {m} += s d_a x block's integer dot")).vdst

    def _unit_q4k_int8(self, i: int, bv: list[list[SSAValue]], acc: list[SSAValue]) -> None:
        """A Q4_K super-block (the unit) of the lane's R rows: per sub-block j (32 weights: the low
        nibbles of bytes 32 c .. 32 c + 31 of the quants for j = 2 c, the high ones for j = 2 c + 1, in
        K order) and row m of A, 8 ``v_dot4_i32_i8`` of the nibbles q and q_a from 0, then
        acc += d_a (d sc_j float(dot) - dmin m_j sum q_a): a ``v_mul_f32``, two ``v_fma_f32``
        (the minimum's term from the pre-kernel's block sums, as the int4 zero points')."""
        e, R = self.regs.e, self.rows
        scales = [q4k_scales(e, lambda q, r=r: self._dw(bv[r], q)) for r in range(R)]
        for j in range(8):
            c, hi = divmod(j, 2)
            w = []
            for r in range(R):
                qs = []
                for t in range(8):
                    x = self._dw(bv[r], 4 + 8 * c + t)
                    x = e(gcn.VLshrrevB32Op(4, x)).vdst if hi else x
                    qs.append(e(gcn.VAndB32Op(0x0F0F0F0F, x)).vdst)
                w.append(qs)
            for m, q, meta in self._rows_of_a(i, j):
                d_a, sq = e.sub(meta, 0, 1), e.sub(meta, 1, 1)
                for r in range(R):
                    dsc, ndm = scales[r][0][j], scales[r][1][j]
                    x = self._dot8(w[r], q, self.zero)
                    f = e(gcn.VFmaF32Op(dsc, e(gcn.VCvtF32I32Op(x)).vdst, e(gcn.VMulF32Op(ndm, sq)).vdst)).vdst
                    acc[m * R + r] = e(gcn.VFmaF32Op(d_a, f, acc[m * R + r],
                                                     comment=f"row {m} += d_a (d sc{j} dot - dmin m{j} sum q_a)")).vdst


@dataclass
class _LaneRegs:
    """The registers :meth:`QuantLaneGemvBuilder._prologue` sets up for the kernel's other steps."""

    e: Emitter
    lanes: SSAValue  # a copy of the full EXEC
    item: SSAValue  # the work-item in the workgroup
    tid: SSAValue  # the lane in its wave
    wave: SSAValue | None  # the wave in the workgroup (W > 1)
    kl: SSAValue  # the lane's place in its row
    ptr_a: SSAValue
    ptr_c: SSAValue
    alpha: SSAValue
    beta: SSAValue
    n0: SSAValue  # the wave's first weight row
    b_rows: SSAValue  # B's row n0
    voff_b: list[SSAValue]  # the lane's first unit's byte offset in each of its R rows


__all__ = ["LANE_UNITS", "QuantLaneGemvBuilder", "quant_lane_kernels", "quant_lane_plan"]
