"""The ``gemm`` dialect: one operation, ``gemm.matmul``, and the plan passes attach to it.

``gemm.matmul`` computes, in BLAS terms, ``C <- alpha * op(A) * op(B) + beta * C``
on memrefs.  ``layout`` gives ``op(A)`` and ``op(B)`` as BLAS ``transa``/``transb``
letters: ``"NT"`` means A is stored M x K and B is stored N x K (the seed's case,
"B transposed").  Memrefs are row-major; a leading dimension other than the
row length is written with a strided layout, e.g.
``memref<64x640xf32, strided<[1024, 1]>>`` has lda = 1024.  ``?`` dimensions
and strides are supplied at launch (kernel arguments M, N, K, lda, ldb, ldc).

Syntax (see ``examples/``)::

    gemm.matmul %a, %b, %c, %alpha, %beta {layout = "NT"}
        : memref<4096x640xf32>, memref<4096x640xf32>, memref<4096x4096xf32>, f32, f32

The passes add their decisions as properties, so the chosen plan is visible in
the IR: ``macro_tile``/``micro_tile``/``k_step`` (gemm-tile), ``grid``/
``workgroup_size`` (gemm-map-workgroups; -1 marks a size known only at launch),
``wg_tile``/``sg_tile``/``local_range`` (gemm-map-subgroups, XeTLA's vocabulary,
docs/references.md), ``split_k``/``split_mode``/``local_split``/``k_per_split`` (gemm-split-k), ``wg_group``
(gemm-tile: the grouped workgroup order, docs/kernels.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    traits_def,
)
from xdsl.traits import MemoryEffect, MemoryEffectKind, EffectInstance
from xdsl.utils.exceptions import VerifyException

LAYOUTS = ("NN", "NT", "TN", "TT")
#: vlpc's kernels compute byte offsets inside one matrix (a leading dimension or batch
#: stride times the element size, a row or K offset) in 32-bit SGPRs and VGPRs (the
#: ``vaddr`` of ``global_load`` with an SGPR base is a 32-bit unsigned offset); only the
#: matrix bases are 64-bit.  So a matrix (one batch entry) must span fewer bytes, and
#: every leading dimension and batch stride must be fewer bytes, than this.
BYTE_OFFSET_LIMIT = 1 << 32
EPILOGUE_OPS = ("bias_row", "bias_col", "relu", "gelu", "silu", "swiglu")
DYNAMIC = -1
#: Bytes per element of each element type name.
ELEMENT_BYTES = {"f32": 4, "f64": 8, "f16": 2, "i8": 1, "i32": 4}
#: A and B element type -> the C element types the dot kernels (passes/isel/dot.py)
#: produce: f16 products accumulate in f32 (``v_dot2_f32_f16``), int8 products in i32
#: (``v_dot4_i32_i8``).
DOT_C_TYPES = {"f16": ("f32", "f16"), "i8": ("i32",)}
#: alpha/beta's type for each A/B element type (f32 for f16, i32 for int8).
DOT_SCALAR_TYPES = {"f16": "f32", "i8": "i32"}
#: Elements of A/B in one dword (one SGPR of A, one VGPR of B) for the dot kernels.
DOT_PACK = {"f16": 2, "i8": 4}
#: Block-quantized weight formats of B (``gemm.matmul ... {b_format = "q8_0"}``; docs/quantized.md):
#: name -> (weights per block along K, bytes per block), GGUF's layouts (ggml's ``block_q8_0``: an
#: f16 scale and 32 int8; ``block_q4_0``: an f16 scale and 16 bytes of 4-bit values, weight j in the
#: low nibble of byte j and weight j + 16 in its high nibble, both offset by 8).  B is then an i8
#: memref of N rows of K / 32 blocks (its row length in bytes), used as GGUF stores the tensor.
#: ``block_q4_K``: super-blocks of 256 weights, f16 d and dmin, 12 bytes of 6-bit scales and
#: minimums of the 8 sub-blocks of 32, 128 bytes of 4-bit values (passes/isel/quant_k.py).
#: ``int4_g32``/``int4_g64``/``int4_g128``: AWQ/GPTQ-style unsigned 4-bit weights with an f16 scale and a
#: zero point per group of 32/64/128 weights along K, w = (q - z) * s; each group a 4-byte header (f16
#: scale, u8 zero point 0..15, one ignored byte) then G / 2 bytes of nibbles, weight 2j in the low nibble
#: of byte j and 2j + 1 in its high one (GPTQ's ``qweight`` order; passes/isel/quant_int4.py).
B_FORMATS = {"q8_0": (32, 34), "q4_0": (32, 18), "q4_k": (256, 144),
             "int4_g32": (32, 20), "int4_g64": (64, 36), "int4_g128": (128, 68)}
#: The int4 group formats (not GGUF's): name -> group size.
INT4_GROUP_FORMATS = {"int4_g32": 32, "int4_g64": 64, "int4_g128": 128}
#: Weights of A the quantized kernels read per scalar load (``s_load_dwordx16``: 32 f16): a last
#: partial int4 group holds a multiple of them.
QUANT_A_CHUNK = 32


def quant_row_bytes(fmt: str, k: int) -> int:
    """Bytes of one row of K weights of ``b_format`` ``fmt``: K / block blocks of :data:`B_FORMATS`'
    bytes; for the int4 group formats with K % G != 0 also the last, partial group of K % G weights
    (a multiple of :data:`QUANT_A_CHUNK`): its 4-byte header and (K % G) / 2 bytes of nibbles."""
    block, size = B_FORMATS[fmt]
    rest = k % block if fmt in INT4_GROUP_FORMATS else 0
    return k // block * size + (4 + rest // 2 if rest else 0)
#: K values per iteration of the quantized GEMV (passes/isel/quant.py): two GGUF blocks,
#: so each lane's loads of a row start on 4-byte boundaries (2 x 34 and 2 x 18 bytes are whole dwords).
QUANT_K_PAIR = 64
#: K values per iteration of each format's GEMV: a block pair, or a Q4_K super-block (144 bytes, whole
#: dwords); K slices (wavefront groups, split-K) are whole iterations.
QUANT_K_UNIT = {"q8_0": QUANT_K_PAIR, "q4_0": QUANT_K_PAIR, "q4_k": 256, **INT4_GROUP_FORMATS}
#: Wavefront groups (K slices) per workgroup of the quantized GEMV for M < 8 (twice that from
#: M = 8: :func:`quant_plan`).
QUANT_LOCAL = 8
#: The prefill GEMM of quantized weights on int8 activations (passes/isel/quant_gemm.py,
#: QuantGemmInt8Builder): the rows of its macro tile per format (M static and at least that many rows;
#: the plan and its modeled reasons: docs/quantized.md, "Prefill") and its wavefront groups along K
#: (halved until they divide the block pairs: :func:`quant_plan`).
QUANT_GEMM_TILE_ROWS = {"q4_0": 32, "q8_0": 32}
QUANT_GEMM_LOCAL = 8
#: The f16-activation prefill GEMM's (QuantGemmBuilder: the companion for an M given at launch).
QUANT_GEMM_F16_TILE_ROWS = {"q4_0": 32, "q8_0": 28}
QUANT_GEMM_F16_LOCAL = 16


#: The decode GEMV plan (f16/i8 with a static M of 1..GEMV_MAX_M): macro tile M x 64 and K
#: split over up to GEMV_MAX_LOCAL wavefront groups of a workgroup (1024 work-items), so the
#: N / 64 workgroups stream every weight byte once with 16 waves each.
GEMV_MAX_M = 16
GEMV_MAX_LOCAL = 16
#: Above this many rows the decode GEMV reads A in 8-dword pieces with a K step of 16
#: (:func:`gemv_a_width`).
GEMV_NARROW_A_MAX_M = 15
#: SGPRs in one batch of A rows of the sqc K loop with schedule ``cover`` (2 x s_load_dwordx16 or
#: 4 x s_load_dwordx8; :mod:`vlpc.passes.isel.sqc_k_step`).
A_BATCH_SGPRS = 32
#: SGPRs in one batch of A rows with the default schedule (4 x s_load_dwordx16): one buffer.
WIDE_A_BATCH_SGPRS = 64
#: LDS a local split's chunked reduction uses per workgroup (bytes): two such workgroups fit a
#: CU's 64 KiB.  (The decode GEMV, at most L rows over L groups, reduces in one pass instead,
#: up to a CU's LDS: ``DotKernelBuilder._local_reduce`` with ``spread``.)
DOT_LOCAL_SPLIT_LDS_BYTES = 32768


#: The f32/f64 SGPR-A kernel's output (passes/isel/sqc.py ``_out_rows``): the tile's rows go in groups
#: of SQC_OUT_GROUP_DWORDS // dw rows (dw dwords per element); a split-K reduce kernel keeps at most
#: SQC_REDUCE_INFLIGHT_DWORDS dwords of partials in flight (fewer rows a group, its S partials in
#: chunks of slices, each chunk waited for).  The plan model counts those waits
#: (:func:`vlpc.plan_model.reduce_waits`).
SQC_OUT_GROUP_DWORDS = 16
SQC_REDUCE_INFLIGHT_DWORDS = 32


def sqc_out_row_group(dw: int, split: int, reduce: bool) -> int:
    """Rows per group of the f32/f64 kernel's output (SQC_OUT_GROUP_DWORDS; a reduce kernel's also
    bounded by SQC_REDUCE_INFLIGHT_DWORDS over its ``split`` partials)."""
    group = SQC_OUT_GROUP_DWORDS // dw
    return max(1, min(group, SQC_REDUCE_INFLIGHT_DWORDS // (split * dw))) if reduce else group


def sqc_reduce_slice_chunk(rows: int, dw: int, split: int) -> int:
    """Slices whose partials a reduce kernel loads before one wait, for a group of ``rows`` rows."""
    return max(1, min(split, SQC_REDUCE_INFLIGHT_DWORDS // (rows * dw)))


def gemv_plan(shape: "GemmShape", k_step: int = 0) -> tuple[int, int, int] | None:
    """``(macro_n, local_split, k_step)`` of the decode GEMV plan for ``shape``, or None when
    it does not apply (A/B not f16/i8, M not static in 1..16, K not static, or a batch).

    * The local split is 16 wavefront groups for M >= 4 (their A loads wait on the scalar
      cache: more waves hide it) and 4 for M < 4 (one or two dots per B dword: the weight
      stream alone matters, and fewer waves per CU keep each lane's B line in L1 until all
      of it is read), halved while a group would get less than one K step.
    * The K step (dwords of packed K; ``k_step`` when given, else chosen here) is 16 while
      one step of A read K-major (M rows x 16 dwords, passes/isel/dot.py) fits one
      batch of :data:`WIDE_A_BATCH_SGPRS` (64) SGPRs, i.e. M <= 4, and 8 above up to
      GEMV_NARROW_A_MAX_M (15) rows: the kernel peels its last K step, whose batches of A load
      one after another after the weight stream has ended (every wave reaches it at once), so
      halving the step halves that tail (M = 1, 2, 4 are 0.2-0.7 % slower with 8: more loop
      iterations, same tail).  16 rows take 16 again, with A in 8-dword pieces
      (:func:`gemv_a_width`): their 4-dword pieces made the scalar loads, not the weights,
      bound the kernel.  Modeled on MI60 under the recalibrated timing model (commit 2c7f965;
      benchmarks/dot_gemm_figures.py): int8 16 x 4096 x 4096 27.3 us with 8 and 4-dword
      pieces, 26.1 us with 16 and 8-dword pieces; 16 x 4096 x 11008 69.3 -> 63.1 us; f16
      51.1 -> 48.0 and 133.3 -> 121.4 us.  M = 13..15 stay with 8 (int8 M = 14: 24.9 us,
      26.1 with 16 and 8-dword pieces)."""
    if shape.b_format:
        return quant_plan(shape)
    if shape.dtype not in DOT_PACK or not 1 <= shape.m <= GEMV_MAX_M or shape.k < 0 or shape.batch:
        return None
    if not k_step:
        k_step = 16 if shape.m * 16 <= WIDE_A_BATCH_SGPRS or shape.m > GEMV_NARROW_A_MAX_M else 8
    kd = shape.k // DOT_PACK[shape.dtype]
    local = GEMV_MAX_LOCAL if shape.m >= 4 else 4
    while local > 1 and kd < local * k_step:
        local //= 2
    return 64, local, k_step


def quant_plan(shape: "GemmShape") -> tuple[int, int, int]:
    """``(macro_n, local_split, k_step)`` of the quantized-B GEMV (passes/isel/quant.py):
    64 columns per workgroup and K over L wavefront groups, L = 8 for M < 8 and 16 from M = 8 (or
    M given at launch), halved until L divides the K / 64 block pairs (every group then runs the
    same static number of pairs; K = 4096: 8 or 16, 384: 2).  The K step (16 dwords) only sizes
    the slices: the kernel steps by block pairs (:data:`QUANT_K_PAIR`).  Why: modeled on MI50 @
    1725 MHz (timing-only launches as benchmarks/quant_gemv.py's, the timing model before its
    HBM/L2 correction), Q4_0 1 x 4096 x 4096 takes 22.8 us with L = 4, 22.3 with 8, 26.0 with 16
    (Q8_0: 35.4, 36.5 with 4, 8), and 16 x 4096 x 4096 118.6, 70.7, 65.3 us with 4, 8, 16 (the
    dots of 16 rows bound it: more waves per CU, fewer waits on A).  Residency: the kernel's VGPR
    count is known only once it is allocated, so a plan whose workgroup cannot be resident on one
    CU (16 groups need at most 64 VGPRs: :mod:`vlpc.workgroup_fit`) is compiled again with half
    the groups by the compile driver (``vlpc.pipeline._build``): Q8_0 (M = 12..16), Q4_K and
    int4_g128 (M = 8..16) run 8 groups."""
    pairs = max(1, shape.k // QUANT_K_UNIT.get(shape.b_format, QUANT_K_PAIR))
    local = QUANT_LOCAL if 0 < shape.m < 8 else 2 * QUANT_LOCAL
    if quant_gemm_rows(shape):  # the prefill GEMM (quant_gemm_rows)
        local = QUANT_GEMM_LOCAL
    if shape.b_format == "q4_k" and 0 < shape.m <= 2:
        # Q4_K, 1 or 2 rows: 4 groups.  Modeled (MI50 @ 1725 MHz, the corrected timing model, commit
        # 5668b13 + A by chunks): 1 x 14336 x 4096 64.9 us with L = 4, 229.1 with 8 (each lane's 144
        # bytes a super-block over 3 lines: with 8 waves of 2 super-blocks in flight per CU the L1 and
        # the CU's L2 share evict lines before their last load), 144.8 with 16, 150.4 with 2
        local = QUANT_LOCAL // 2
    if shape.b_format in INT4_GROUP_FORMATS and 0 < shape.m <= 2:
        # int4 groups, 1 or 2 rows: 2 groups.  Modeled (MI50 @ 1725 MHz, benchmarks/quant_gemv.py's
        # launch): int4_g128 1 x 14336 x 4096 55.9 us with L = 2, 90.8 with 4, 111.7 with 8 (as Q4_K:
        # fewer waves in flight keep each lane's lines in L1 until all of it is read)
        local = 2
    while local > 1 and pairs % local:
        local //= 2
    return 64, local, 16


def quant_gemm_rows(shape: "GemmShape", swiglu: bool = False) -> int:
    """Rows of the prefill GEMM's macro tile for ``shape`` (passes/isel/quant_gemm.py), or 0
    when the GEMV's 16-row tiles apply: Q8_0 and Q4_0 (:data:`QUANT_GEMM_TILE_ROWS`) with a static M
    of at least the tile's rows (a last tile past M moves up to end at row M, as the other kernels'),
    above :data:`GEMV_MAX_M`, no fused SwiGLU (``swiglu``)."""
    rows = QUANT_GEMM_TILE_ROWS.get(shape.b_format, 0)
    return rows if rows and not swiglu and shape.m >= rows and shape.m > GEMV_MAX_M else 0


def quant_split(shape: "GemmShape", cus: int, split: int = 0) -> tuple[int, int]:
    """``(split_k, local_split)`` of the quantized-B GEMV on a GPU of ``cus`` compute units, with
    ``split`` workgroups along K if given (> 0; the groups then halved until S x L divides the
    block pairs): the groups of :func:`quant_plan`, and for M < 8 with fewer than 2 x ``cus``
    workgroups of 64 columns (N and M static) K also split over S = 4 (else 2) workgroups
    (workspace mode, the reduce kernel after) with half the groups, S x L dividing the block
    pairs.  Why: with N / 64 workgroups a little above the CU count, some CUs run two and the
    others idle half the time (4096 rows: 64 workgroups on MI50's 60 CUs).  Modeled on MI50 (the
    timing model before its HBM/L2 correction): Q4_0 1 x 4096 x 4096 22.3 -> 18.1 us (S = 4,
    L = 4), 1 x 4096 x 14336 64.4 -> 45.6 us; Q8_0 1 x 4096 x 4096 36.5 -> 29.3 us.  From M = 8
    the 16 rows' waits on A want the 16 groups: Q8_0 16 x 4096 x 4096 76.7 us unsplit, 94.9 with
    S = 4, L = 8 (16 x 4096 x 14336: 231.9, 267.9; Q4_0, at fewer VGPRs, gains a little: 65.3 ->
    61.8, 203.1 -> 171.1)."""
    local = quant_plan(shape)[1]
    pairs = max(1, shape.k // QUANT_K_UNIT.get(shape.b_format, QUANT_K_PAIR))
    if split > 0:
        while local > 1 and pairs % (split * local):
            local //= 2
        return split, local
    if shape.n < 0 or not 0 < shape.m < 8 or -(-shape.n // 64) >= 2 * cus:
        return 1, local
    # (Q4_K and int4 at M <= 2: few groups already)
    few = shape.b_format == "q4_k" or (shape.b_format in INT4_GROUP_FORMATS and shape.m <= 2)
    half = local if few else max(1, local // 2)
    for split in (4, 2):
        if pairs % (split * half) == 0:
            return split, half
    return 1, local


def gemv_a_width(m: int, k_step: int) -> int:
    """Dwords of one A row per scalar load (``s_load_dwordx4/x8/x16``) of the decode GEMV's
    K-major A pieces (passes/isel/dot.py: a batch is ``width`` dwords of every row of a
    run of rows), for a tile of ``m`` rows (1..GEMV_MAX_M) and a K step of ``k_step`` dwords.

    * ``k_step`` when a whole step of A (m x k_step dwords) fits one batch of
      :data:`WIDE_A_BATCH_SGPRS` (64) SGPRs (M <= 4 with a step of 16): one load per row
      and step;
    * 8 for more than GEMV_NARROW_A_MAX_M (15) rows and a step of 16: a batch is 8 rows x 8
      dwords, its dots read two of the step's four B quads;
    * else 4 (a batch reads one B quad).

    Why: the timing model charges the scalar cache's data return per 64-byte line touched by
    each load (``TimingParams.scalar_bytes_per_cycle``, shared by ``cus_per_scalar_cache``
    CUs: 10 cycles a line on MI60), so a 16-byte ``s_load_dwordx4`` costs as much as a whole
    line.  With 4-dword pieces, 16 rows need 16 x K / 16 loads per workgroup: for int8
    16 x 4096 x 4096 (one workgroup per CU) 40,960 cycles of scalar returns against 34,900
    cycles of the CU's HBM share for its weights, so A, not the weight stream, bounded the
    kernel (modeled 27.3 us, 76.4 % of HBM).  8-dword pieces halve that (26.1 us);
    16-dword pieces (4 rows per batch) quarter it but make every batch read all four B quads,
    so the quads reload only at the end of a step (28.7 us).  M = 5..15 with two or more
    batches a step keep 4-dword pieces and a step of 8 (int8 M = 12: 24.6 us against 25.7
    with 8-dword pieces and a step of 16; M = 15: 25.7 against 25.9); a step that fits one
    batch (M <= 4 with 16, M <= 8 with 8) gains a little from the wider loads (int8 M = 4
    23.4 -> 23.1 us, M = 8 23.9 -> 23.6 us)."""
    if m * k_step <= WIDE_A_BATCH_SGPRS:
        return k_step
    if m > GEMV_NARROW_A_MAX_M and k_step >= 16:
        return 8
    return 4


def type_name(t: Attribute) -> str | None:
    """``"f32"``, ``"f64"``, ``"f16"``, ``"i8"``, ``"i32"`` for those types, else None."""
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, IntegerType) and t.width.data in (8, 32):
        return f"i{t.width.data}"
    return None


@dataclass(frozen=True)
class GemmShape:
    """Problem sizes and leading dimensions of a ``gemm.matmul`` (elements; -1 = at launch)."""

    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    dtype: str  # A and B: "f32", "f64", "f16" or "i8"
    #: Strided batch: 0 for a plain GEMM, else the batch count (-1: at launch) and the
    #: batch strides of A, B and C in elements (-1: at launch).
    batch: int = 0
    stride_a: int = 0
    stride_b: int = 0
    stride_c: int = 0
    #: C's element type when it differs from A's ("f32" or "f16" for f16, "i32" for i8).
    c_dtype: str = ""
    #: B's block-quantized format (:data:`B_FORMATS`; "" for plain B); ldb is then in bytes.
    b_format: str = ""

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[self.dtype]

    @property
    def c_type(self) -> str:
        """C's element type name."""
        return self.c_dtype or self.dtype

    def is_static(self) -> bool:
        return min(self.m, self.n, self.k, self.lda, self.ldb, self.ldc) >= 0


def _dims(t: MemRefType) -> list[int]:
    return [DYNAMIC if d < 0 else d for d in t.get_shape()]


def _strides(t: MemRefType) -> list[int]:
    """Strides in elements of a row-major memref (-1 when dynamic)."""
    layout = t.layout
    dims = _dims(t)
    if isinstance(layout, StridedLayoutAttr):
        if layout.get_offset() != 0:
            raise VerifyException("memrefs with an offset are not supported (the kernel takes base pointers)")
        strides = layout.get_strides()
        if len(strides) != len(dims) or strides[-1] != 1:
            raise VerifyException("only row-major memrefs (innermost stride 1) are supported")
        return [DYNAMIC if x is None else x for x in strides]
    if isinstance(layout, NoneAttr) or layout is None:
        out = [1]
        for d in reversed(dims[1:]):
            out.insert(0, DYNAMIC if d < 0 or out[0] < 0 else d * out[0])
        return out
    raise VerifyException(f"unsupported memref layout {layout}")


def leading_dimension(t: MemRefType) -> int:
    """Row stride of a (batched) row-major matrix memref in elements (-1 when dynamic)."""
    return _strides(t)[-2]


def batch_stride(t: MemRefType) -> int:
    """Stride between the matrices of a 3-D (batch, rows, columns) memref, in elements."""
    return _strides(t)[0]


def a_copied_for_alignment(layout: str, dtype: str, lda: int, batch: int = 0, stride_a: int = 0) -> bool:
    """Whether the plan of an f16/i8 product with A stored M x K (layout ``N?``) copies A into a
    padded M x ceil(K / P) P workspace first (passes/isel/transpose.py) because A's rows
    would not start on 4-byte boundaries: a STATIC lda (or A's batch stride) that is not a
    multiple of P = 2 (f16) / 4 (i8).  Values given at launch (negative) do not count."""
    pack = DOT_PACK.get(dtype, 1)
    if pack == 1 or layout[0] != "N":
        return False
    return (lda >= 0 and lda % pack != 0) or (batch != 0 and stride_a >= 0 and stride_a % pack != 0)


def b_copied_for_alignment(layout: str, dtype: str, ldb: int, batch: int = 0, stride_b: int = 0) -> bool:
    """As :func:`a_copied_for_alignment` for B stored N x K (layouts ``?T``): a static ldb (or B
    batch stride) that is not a multiple of P makes the plan copy B into an N x ceil(K / P) P
    workspace region first (passes/isel/transpose.py)."""
    pack = DOT_PACK.get(dtype, 1)
    if pack == 1 or layout[1] != "T":
        return False
    return (ldb >= 0 and ldb % pack != 0) or (batch != 0 and stride_b >= 0 and stride_b % pack != 0)


def offset_errors(layout: str, dtype: str, m: int, n: int, k: int, lda: int, ldb: int, ldc: int,
                  batch: int = 0, stride_a: int = 0, stride_b: int = 0, stride_c: int = 0,
                  c_dtype: str = "", a_copied: bool = False, b_copied: bool = False) -> list[str]:
    """Why sizes break the kernels' 32-bit byte offsets or overlap C's batch entries.

    All in elements; a negative value is unknown (given at launch) and checks needing it
    are skipped, so the same function serves verification (static values) and the launch.
    Returns one message per problem (empty: fine):

    * a leading dimension or batch stride times the element size, or the bytes one matrix
      spans (``(rows - 1) * ld + cols`` elements), reaching :data:`BYTE_OFFSET_LIMIT`;
    * for a batch of more than one, ``stride_c < M * ldc`` (0 included): the batch entries
      of C overlap and their stores race; rocBLAS refuses such a stride as an invalid size.
      A and B may overlap or repeat (stride 0 broadcasts one matrix), they are only read.
    * for f16 and i8 (the dot kernels read 2 or 4 values of K per dword), a leading
      dimension or batch stride of A or B that is not a multiple of 2 or 4: rows would not
      start on 4-byte boundaries (scalar loads ignore the low address bits).  Not for A when
      ``a_copied`` (the plan reads A through a padded copy: :func:`a_copied_for_alignment`, any
      lda and batch stride), nor for B when ``b_copied``; a value given at launch is refused naming the fixes (a static
      leading dimension, which makes the plan copy A, or padded rows).

    ``c_dtype``: C's element type when it differs from A's (f16 and i8 kernels; when not
    given, C of an f16 or i8 product is counted as 4 bytes, the larger of its choices).
    """
    esz = ELEMENT_BYTES.get(dtype, 8)
    c_esz = ELEMENT_BYTES.get(c_dtype or ("f32" if dtype in DOT_PACK else dtype), 8)
    limit = BYTE_OFFSET_LIMIT
    out = []
    pack = DOT_PACK.get(dtype, 1)
    if pack > 1:
        k_rows = [("lda", lda), ("stride_a", stride_a if batch else 0)] if layout[0] == "N" and not a_copied else []
        if layout[1] == "T" and not b_copied:  # B K x N (NN) is read 16 bits at a time: no alignment beyond the element
            k_rows += [("ldb", ldb), ("stride_b", stride_b if batch else 0)]
        for name, ld in k_rows:
            if ld > 0 and ld % pack:
                x = "A" if name in ("lda", "stride_a") else "B"
                fix = (f", or give ld{x.lower()} and {x}'s batch stride at compile time: the plan then copies {x} "
                       "into a padded workspace first")
                out.append(f"{name}={ld}: {dtype} rows and matrices must start on 4-byte boundaries for the dot "
                           f"kernels' packed loads ({name} a multiple of {pack}: pad the rows, e.g. "
                           f"{name}={-(-ld // pack) * pack}{fix})")
    a_rows, a_cols = (m, k) if layout[0] == "N" else (k, m)
    b_rows, b_cols = (k, n) if layout[1] == "N" else (n, k)
    for name, rows, cols, ld in (("A", a_rows, a_cols, lda), ("B", b_rows, b_cols, ldb), ("C", m, n, ldc)):
        esz = c_esz if name == "C" else ELEMENT_BYTES.get(dtype, 8)
        if ld >= 0 and ld * esz >= limit:
            out.append(f"ld{name.lower()}={ld}: {ld} x {esz} bytes reaches the 32-bit byte offset "
                       f"limit of vlpc's kernels (2^32 bytes)")
        elif ld >= 0 and rows > 0 and cols > 0 and ((rows - 1) * ld + cols) * esz > limit:
            out.append(f"{name} spans {((rows - 1) * ld + cols) * esz} bytes ({rows} rows, "
                       f"ld{name.lower()}={ld}): over the 32-bit byte offset limit of vlpc's kernels (2^32 bytes)")
    for name, st in (("stride_a", stride_a), ("stride_b", stride_b), ("stride_c", stride_c)):
        esz = c_esz if name == "stride_c" else ELEMENT_BYTES.get(dtype, 8)
        if batch != 0 and st >= 0 and st * esz >= limit:
            out.append(f"{name}={st}: {st} x {esz} bytes reaches the 32-bit byte offset limit of "
                       f"vlpc's kernels (2^32 bytes)")
    if batch > 1 and stride_c >= 0 and (stride_c == 0 or (m > 0 and ldc > 0 and stride_c < m * ldc)):
        need = f"M x ldc = {m * ldc}" if m > 0 and ldc > 0 else "M x ldc"
        out.append(f"stride_c={stride_c} is smaller than {need} with a batch of {batch}: the matrices of C "
                   "overlap and their stores would race (an invalid size, as rocBLAS says)")
    return out


class _MemEffects(MemoryEffect):
    @classmethod
    def get_effects(cls, op):  # reads A, B (and C), writes C
        effects = set()
        for v in op.operands[:3]:
            effects.add(EffectInstance(MemoryEffectKind.READ, v))
        effects.add(EffectInstance(MemoryEffectKind.WRITE, op.operands[2]))
        return effects


#: The largest group height of the grouped workgroup order (``wg_group``, tile rows): a power of
#: two, so the kernel finds its group with a shift and a mask (SALU, no division).
MAX_WG_GROUP = 64


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """``C <- alpha * op(A) * op(B) + beta * C`` on 2-D memrefs: f32, f64, f16 x f16 -> f32 or
    f16 (f32 accumulation, f32 alpha/beta), i8 x i8 -> i32 (alpha/beta i32)."""

    name = "gemm.matmul"

    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    c = operand_def(MemRefType)
    alpha = operand_def()
    beta = operand_def()
    bias = opt_operand_def(MemRefType)
    #: W8A8 dequantization (i8 A and B, C f32 or f16): C <- alpha * scale_row[m] * scale_col[n]
    #: * (A B^T)[m, n] + beta * C, with two f32 vectors of M and N values.
    scale_row = opt_operand_def(MemRefType)
    scale_col = opt_operand_def(MemRefType)
    #: The residual added after the epilogue (b_format products; docs/quantized.md):
    #: C <- epilogue(alpha * A W^T + beta * C) + R, R an f16 or f32 memref of C's shape and strides.
    residual = opt_operand_def(MemRefType)

    layout = prop_def(StringAttr)
    #: Fused epilogue, applied in order to alpha*op(A)*op(B) + beta*C before the store:
    #: "bias_row" (+ bias[m]), "bias_col" (+ bias[n]), "relu", "gelu" (tanh form).
    epilogue = opt_prop_def(ArrayAttr)
    # Plan, filled in by the passes (see module docstring).
    macro_tile = opt_prop_def(DenseArrayBase)
    micro_tile = opt_prop_def(DenseArrayBase)
    k_step = opt_prop_def(IntegerAttr)
    grid = opt_prop_def(DenseArrayBase)
    workgroup_size = opt_prop_def(DenseArrayBase)
    wg_tile = opt_prop_def(DenseArrayBase)
    sg_tile = opt_prop_def(DenseArrayBase)
    local_range = opt_prop_def(DenseArrayBase)
    split_k = opt_prop_def(IntegerAttr)
    #: gemm-split-k: how the K slices of a global split are summed ("workspace" or "atomic").
    split_mode = opt_prop_def(StringAttr)
    #: gemm-split-k: wavefront groups of one workgroup that take different K slices (XeTLA's
    #: num_local_splitk) and reduce through LDS after the main loop.
    local_split = opt_prop_def(IntegerAttr)
    #: gemm-split-k: K values per slice (a multiple of k_step; -1 when K is known only at launch).
    k_per_split = opt_prop_def(IntegerAttr)
    #: B block-quantized (:data:`B_FORMATS`, "q8_0", "q4_0" or "q4_k"): B is the i8 memref of the GGUF
    #: tensor's bytes, N rows of K / 32 blocks (Q4_K: K / 256 super-blocks; docs/quantized.md).
    b_format = opt_prop_def(StringAttr)
    #: gemm-tile: the grouped workgroup order's group height G in tile rows (a power of two up to
    #: :data:`MAX_WG_GROUP`; 1 or absent: the hardware's row-major order).  Consecutive workgroup
    #: ids cover G tile rows of one tile column, then the next column (Triton's GROUP_SIZE_M,
    #: Tensile's WorkGroupMapping): :func:`vlpc.passes.isel.emit.grouped_workgroup_ids`.
    wg_group = opt_prop_def(IntegerAttr)

    traits = traits_def(_MemEffects())
    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))

    assembly_format = (
        "$a `,` $b `,` $c `,` $alpha `,` $beta (`bias` `(` $bias^ `:` type($bias) `)`)? "
        "(`scales` `(` $scale_row^ `,` $scale_col `:` type($scale_row) `,` type($scale_col) `)`)? "
        "(`residual` `(` $residual^ `:` type($residual) `)`)? attr-dict `:` "
        "type($a) `,` type($b) `,` type($c) `,` type($alpha) `,` type($beta)"
    )

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, alpha: SSAValue, beta: SSAValue,
                 layout: str = "NT", bias: SSAValue | None = None, epilogue: tuple[str, ...] = (),
                 scales: tuple[SSAValue, SSAValue] | None = None):
        props: dict = {"layout": StringAttr(layout)}
        if epilogue:
            props["epilogue"] = ArrayAttr([StringAttr(x) for x in epilogue])
        sr, sc = ([scales[0]], [scales[1]]) if scales is not None else ([], [])
        super().__init__(operands=[a, b, c, alpha, beta, [bias] if bias is not None else [], sr, sc, []],
                         properties=props)

    def epilogue_ops(self) -> tuple[str, ...]:
        """The fused epilogue, in order ("bias_row", "bias_col", "relu", "gelu")."""
        if self.epilogue is None:
            return ()
        return tuple(x.data for x in self.epilogue.data)  # type: ignore[union-attr]

    # -- helpers used by the passes ---------------------------------------

    def get_int_array(self, name: str) -> tuple[int, ...] | None:
        attr = self.properties.get(name)
        if attr is None:
            return None
        assert isinstance(attr, DenseArrayBase)
        return tuple(int(x) for x in attr.get_values())

    def set_int_array(self, name: str, values: tuple[int, ...] | list[int]) -> None:
        self.properties[name] = DenseArrayBase.from_list(i64, list(values))

    def get_int(self, name: str) -> int | None:
        attr = self.properties.get(name)
        return None if attr is None else int(attr.value.data)  # type: ignore[union-attr]

    def set_int(self, name: str, value: int) -> None:
        self.properties[name] = IntegerAttr(value, i64)

    def shape(self) -> GemmShape:
        """Sizes from the memref types (-1 where supplied at launch)."""
        at, bt, ct = (v.type for v in (self.a, self.b, self.c))
        assert isinstance(at, MemRefType) and isinstance(bt, MemRefType) and isinstance(ct, MemRefType)
        lay = self.layout.data
        ad, bd, cd = _dims(at)[-2:], _dims(bt)[-2:], _dims(ct)[-2:]
        m, k = (ad[0], ad[1]) if lay[0] == "N" else (ad[1], ad[0])
        kb, n = (bd[0], bd[1]) if lay[1] == "N" else (bd[1], bd[0])

        def pick(*xs: int) -> int:
            known = [x for x in xs if x >= 0]
            return known[0] if known else DYNAMIC

        m = pick(m, cd[0])
        fmt = self.b_format.data if self.b_format is not None else ""
        n = pick(cd[1], n) if fmt else pick(n, cd[1])  # (b_format swiglu: B has 2N rows, gate then up)
        k = pick(k, kb) if not fmt else k  # B's rows are bytes of blocks: K is A's
        dtype = type_name(at.element_type) or "f64"
        c_name = type_name(ct.element_type) or dtype
        batch = sa = sb = sc = 0
        if len(at.get_shape()) == 3:
            batch = pick(*(_dims(t)[0] for t in (at, bt, ct)))
            sa, sb, sc = batch_stride(at), batch_stride(bt), batch_stride(ct)
        return GemmShape(m, n, k, leading_dimension(at), leading_dimension(bt),
                         leading_dimension(ct), dtype, batch, sa, sb, sc,
                         c_name if c_name != dtype else "", fmt)

    def verify_epilogue(self, bias_type: str, c_dims: list[int], why: str = "") -> None:
        """The epilogue's checks: known operations, at most one bias and a bias operand exactly with
        one, a 1-D ``bias_type`` bias (``why``: a note on that type) of C's rows or columns
        (``c_dims``, -1 where given at launch).  Raises VerifyException."""
        ops = self.epilogue_ops() if self.epilogue is None or all(isinstance(x, StringAttr) for x in self.epilogue.data) else None
        if ops is None:
            raise VerifyException("epilogue must be an array of strings")
        for x in ops:
            if x not in EPILOGUE_OPS:
                raise VerifyException(f"unknown epilogue operation '{x}' (known: {', '.join(EPILOGUE_OPS)})")
        if "swiglu" in ops and (self.b_format is None or ops[0] != "swiglu"):
            raise VerifyException("swiglu fuses a gate and an up projection of quantized weights: the first epilogue "
                                  "operation of a gemm.matmul with b_format (docs/quantized.md)")
        wants_bias = [x for x in ops if x.startswith("bias")]
        if len(wants_bias) > 1:
            raise VerifyException("at most one bias operation per epilogue")
        if wants_bias and self.bias is None:
            raise VerifyException(f"epilogue '{wants_bias[0]}' needs a bias operand: gemm.matmul ... bias(%v : memref<...>)")
        if self.bias is not None and not wants_bias:
            raise VerifyException("a bias operand is given but the epilogue has no bias_row or bias_col")
        if self.bias is not None:
            bt = self.bias.type
            if not isinstance(bt, MemRefType) or len(bt.get_shape()) != 1 or type_name(bt.element_type) != bias_type:
                raise VerifyException(f"bias must be a 1-D memref of {bias_type}, got {bt}{why}")
            want = c_dims[0] if wants_bias[0] == "bias_row" else c_dims[1]
            got = _dims(bt)[0]
            if want >= 0 and got >= 0 and want != got:
                raise VerifyException(f"{wants_bias[0]} needs {want} values (one per {'row' if wants_bias[0] == 'bias_row' else 'column'} of C), the bias has {got}")

    def verify_(self) -> None:
        lay = self.layout.data
        group = self.get_int("wg_group")
        if group is not None and not (0 < group <= MAX_WG_GROUP and group & (group - 1) == 0):
            raise VerifyException(f"wg_group must be a power of two from 1 to {MAX_WG_GROUP} (tile rows per "
                                  f"group of the workgroup order), got {group}")
        if lay not in LAYOUTS:
            raise VerifyException(f"layout must be one of {', '.join(LAYOUTS)} (BLAS transa/transb), got '{lay}'")
        if self.b_format is not None:
            return verify_b_format(self)
        types = [v.type for v in (self.a, self.b, self.c)]
        if self.residual is not None:
            if type_name(types[0].element_type) != "f16" or any(len(t.get_shape()) != 2 for t in types):
                raise VerifyException("residual(...) is supported for b_format products and 2-D f16 products only "
                                      "(docs/quantized.md); an in-place residual add is beta = 1 over C")
            verify_residual(self, types[2])
        for name, t in zip("ABC", types):
            if not isinstance(t, MemRefType) or len(t.get_shape()) not in (2, 3):
                raise VerifyException(f"operand {name} must be a 2-D memref (or 3-D: batch, rows, columns), got {t}")
        ranks = {len(t.get_shape()) for t in types}
        if len(ranks) != 1:
            raise VerifyException("A, B and C must all be 2-D, or all 3-D for a strided batch")
        if ranks == {3}:
            batches = [_dims(t)[0] for t in types]
            known = {b for b in batches if b >= 0}
            if len(known) > 1:
                raise VerifyException(f"inconsistent batch counts: A, B, C have {batches[0]}, {batches[1]}, {batches[2]}")
        elt = types[0].element_type
        a_name = type_name(elt)
        if a_name not in ("f32", "f64", "f16", "i8"):
            raise VerifyException(f"element type must be f32 or f64 (or f16 / i8 for the dot kernels), got {elt}")
        if types[1].element_type != elt:
            raise VerifyException(f"element types differ: A is {elt} but B is {types[1].element_type}")
        c_name = type_name(types[2].element_type)
        dequant = a_name == "i8" and c_name in ("f32", "f16")
        if (self.scale_row is not None) != dequant:
            raise VerifyException(
                "an i8 product with f32 or f16 C dequantizes: give scales(%scale_row, %scale_col : "
                "memref<Mxf32>, memref<Nxf32>)" if dequant else
                "scales(...) dequantize an i8 product into f32 or f16 C (here A is "
                f"{elt} and C {types[2].element_type})")
        allowed_c = ("f32", "f16") if dequant else DOT_C_TYPES.get(a_name, (a_name,))
        if c_name not in allowed_c:
            if a_name in DOT_PACK:  # C i8 for A i8 is not "types differ": name what C may be
                raise VerifyException(f"C of an {a_name} product is {' or '.join(allowed_c)}"
                                      + (" (or f32 / f16 dequantized by scales(...))" if a_name == "i8" else "")
                                      + f", got {types[2].element_type}")
            raise VerifyException(f"element types differ: A is {elt} but C is {types[2].element_type}")
        scalar = "f32" if dequant else DOT_SCALAR_TYPES.get(a_name, a_name)
        for name, v in (("alpha", self.alpha), ("beta", self.beta)):
            if type_name(v.type) != scalar:
                if a_name in DOT_PACK:
                    what = f"a dequantized {a_name} product, C {c_name}" if dequant else f"an {a_name} product"
                    raise VerifyException(f"{name} must have type {scalar} (alpha and beta of {what}), got {v.type}")
                raise VerifyException(f"{name} must have the element type {elt}, got {v.type}")
        ad, bd, cd = (_dims(t)[-2:] for t in types)
        for name, dims in zip("ABC", (ad, bd, cd)):
            for d in dims:
                if d == 0:
                    raise VerifyException(f"operand {name} has a zero-sized dimension")
        m_a, k_a = (ad[0], ad[1]) if lay[0] == "N" else (ad[1], ad[0])
        k_b, n_b = (bd[0], bd[1]) if lay[1] == "N" else (bd[1], bd[0])

        def check(what: str, x: int, y: int, xs: str, ys: str) -> None:
            if x >= 0 and y >= 0 and x != y:
                raise VerifyException(f"inconsistent {what}: {xs} has {x} but {ys} has {y}")

        a_desc = "A (M x K)" if lay[0] == "N" else "A (K x M, transposed)"
        b_desc = "B (K x N)" if lay[1] == "N" else "B (N x K, transposed)"
        check("K", k_a, k_b, a_desc, b_desc)
        check("M", m_a, cd[0], a_desc, "C (M x N)")
        check("N", n_b, cd[1], b_desc, "C (M x N)")
        self.verify_epilogue("f32" if dequant else type_name(elt), cd,
                             " (the bias of a dequantized int8 product is f32, as its scales)" if dequant else "")
        if dequant:
            for name, v, want in (("scale_row", self.scale_row, cd[0]), ("scale_col", self.scale_col, cd[1])):
                vt = v.type
                if not isinstance(vt, MemRefType) or len(vt.get_shape()) != 1 or type_name(vt.element_type) != "f32":
                    raise VerifyException(f"{name} must be a 1-D memref of f32, got {vt}")
                got = _dims(vt)[0]
                if want >= 0 and got >= 0 and want != got:
                    raise VerifyException(f"{name} needs {want} values (one per {'row' if name == 'scale_row' else 'column'} "
                                          f"of C), it has {got}")
        check_leading_dimensions(types)
        sh = self.shape()
        errors = offset_errors(lay, sh.dtype, sh.m, sh.n, sh.k, sh.lda, sh.ldb, sh.ldc,
                               sh.batch, sh.stride_a, sh.stride_b, sh.stride_c, sh.c_type,
                               a_copied=a_copied_for_alignment(lay, sh.dtype, sh.lda, sh.batch, sh.stride_a),
                               b_copied=b_copied_for_alignment(lay, sh.dtype, sh.ldb, sh.batch, sh.stride_b))
        if errors:
            raise VerifyException(errors[0])


def check_leading_dimensions(types: list) -> None:
    """Each of A, B, C (memref ``types``) row-major with a leading dimension at least its row
    length (static values); raises VerifyException naming the operand."""
    for name, t in zip("ABC", types):
        try:
            ld = leading_dimension(t)
        except VerifyException as e:
            raise VerifyException(f"operand {name}: {e}") from None
        cols = _dims(t)[-1]
        if ld >= 0 and cols >= 0 and ld < cols:
            raise VerifyException(f"operand {name}: leading dimension {ld} is smaller than the row length {cols}")


def verify_b_format(mm: MatmulOp) -> None:
    """The checks of a ``gemm.matmul`` with a block-quantized B (``b_format``, docs/quantized.md):
    layout NT, A f16 stored M x K with K static, a multiple of the block (GGUF: a row is whole
    blocks) and of :data:`QUANT_K_UNIT` (64 for Q8_0/Q4_0: the kernel's aligned block pairs), an even lda;
    B an i8 memref of N rows of exactly K / block blocks (bytes), a leading dimension (bytes) that is a
    multiple of 4; C f32 or f16; alpha, beta f32; 2-D only, no scales.  Raises VerifyException."""
    fmt = mm.b_format.data
    if fmt not in B_FORMATS:
        raise VerifyException(f"unsupported b_format '{fmt}' (supported: {', '.join(B_FORMATS)})")
    if mm.layout.data != "NT":
        raise VerifyException(f"b_format = \"{fmt}\" needs layout NT (weights stored N x K, as GGUF keeps "
                              f"them), got '{mm.layout.data}'")
    types = [v.type for v in (mm.a, mm.b, mm.c)]
    for name, t in zip("ABC", types):
        if not isinstance(t, MemRefType) or len(t.get_shape()) != 2:
            raise VerifyException(f"operand {name} must be a 2-D memref with b_format (no batch), got {t}")
    if type_name(types[0].element_type) != "f16":
        raise VerifyException(f"A of a {fmt} product holds f16 activations, got {types[0].element_type}")
    bt = types[1].element_type
    if not (isinstance(bt, IntegerType) and bt.width.data == 8):
        raise VerifyException(f"B of a {fmt} product is the tensor's bytes (an i8 memref), got {bt}")
    if type_name(types[2].element_type) not in ("f32", "f16"):
        raise VerifyException(f"C of a {fmt} product is f32 or f16, got {types[2].element_type}")
    for name, v in (("alpha", mm.alpha), ("beta", mm.beta)):
        if type_name(v.type) != "f32":
            raise VerifyException(f"{name} must have type f32 (alpha and beta of a {fmt} product), got {v.type}")
    if mm.scale_row is not None:
        raise VerifyException(f"scales(...) dequantize int8 products; a {fmt} B carries its own block scales")
    ad, bd, cd = (_dims(t) for t in types)
    k = ad[1]
    block, block_bytes = B_FORMATS[fmt]
    if k < 0:
        raise VerifyException(f"K must be static for b_format = \"{fmt}\" (A's columns are ?)")
    if fmt in INT4_GROUP_FORMATS:  # whole groups, then possibly a last partial group
        if k < block or k % QUANT_A_CHUNK:
            raise VerifyException(f"K={k}: {fmt} rows are at least one whole group of {block} weights, then a last "
                                  f"partial group of a multiple of {QUANT_A_CHUNK} weights (vlpc's kernels read A by "
                                  f"{QUANT_A_CHUNK}); K must be at least {block} and a multiple of {QUANT_A_CHUNK}")
    elif k % block:
        raise VerifyException(f"K={k} is not a multiple of {block}: a GGUF {fmt} row is whole blocks of {block} "
                              "weights")
    elif k % QUANT_K_UNIT[fmt]:
        raise VerifyException(f"K={k}: vlpc's {fmt} GEMV reads blocks in pairs ({QUANT_K_PAIR} weights) so each "
                              f"lane's loads start on 4-byte boundaries; K must be a multiple of {QUANT_K_PAIR}")
    row_bytes = quant_row_bytes(fmt, k)
    if bd[1] >= 0 and bd[1] != row_bytes:
        tail = f" and a partial group of {k % block} weights ({4 + k % block // 2} bytes)" if k % block else ""
        raise VerifyException(f"B has rows of {bd[1]} bytes; {fmt} with K={k} needs {k // block} blocks of "
                              f"{block_bytes} bytes{tail} = {row_bytes} bytes per row")
    swiglu = "swiglu" in mm.epilogue_ops()
    if swiglu and (bd[0] < 0 or cd[1] < 0 or bd[0] != 2 * cd[1] or leading_dimension(types[1]) < 0):
        raise VerifyException(f"swiglu: B holds the gate's N rows then the up projection's N rows, static: "
                              f"2 x C's columns ({cd[1]}), got {bd[0]} rows" + (" (and a static ldb)"
                                                                                   if bd[0] == 2 * cd[1] else ""))
    for what, x, y in (("M", ad[0], cd[0]), ("N", bd[0] // 2 if swiglu else bd[0], cd[1])):
        if x >= 0 and y >= 0 and x != y:
            raise VerifyException(f"inconsistent {what}: {'A' if what == 'M' else 'B'} has {x} but C has {y}")
    check_leading_dimensions(types)
    lda, ldb = leading_dimension(types[0]), leading_dimension(types[1])
    if lda >= 0 and lda % 2:
        raise VerifyException(f"lda={lda}: the rows of A (f16) must start on 4-byte boundaries (an even lda)")
    if ldb >= 0 and ldb % 4:
        raise VerifyException(f"ldb={ldb} bytes: the rows of a {fmt} B must start on 4-byte boundaries "
                              "(a multiple of 4)")
    n = bd[0] if bd[0] >= 0 else cd[1]
    if ldb >= 0 and n > 0 and (n - 1) * ldb + row_bytes >= BYTE_OFFSET_LIMIT:
        raise VerifyException(f"B spans {(n - 1) * ldb + row_bytes} bytes: over the 32-bit byte offset limit of "
                              "vlpc's kernels (2^32 bytes)")
    mm.verify_epilogue("f16", cd, f" (the bias of an f16 x {fmt} product is f16, as its activations)")
    if mm.residual is not None:
        verify_residual(mm, types[2])


def verify_residual(mm: "MatmulOp", c_type: MemRefType) -> None:
    """The residual operand R (``residual(%r : ...)``): a 2-D f16 or f32 memref of C's (``c_type``) shape
    and strides.  Raises VerifyException."""
    rt = mm.residual.type
    if not isinstance(rt, MemRefType) or len(rt.get_shape()) != 2 or type_name(rt.element_type) not in ("f16", "f32"):
        raise VerifyException(f"residual must be a 2-D memref of f16 or f32 (the residual stream), got {rt}")
    if _dims(rt) != _dims(c_type) or leading_dimension(rt) != leading_dimension(c_type):
        raise VerifyException(f"residual {rt} must have C's shape and strides ({c_type}): it is read where C "
                              "is written")


Gemm = Dialect("gemm", [MatmulOp], [])
