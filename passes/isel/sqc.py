"""``convert-gemm-to-gcn``: instruction selection for ``gemm.matmul`` into the ``gcn`` dialect.

Strategy ``sqc`` (the seed's "very low power" scheme, *An Alternative SGEMM on VEGA* section 2, docs/references.md):

* A is read with scalar loads, one ``s_load_dwordx{k_step}`` per row of the macro
  tile and K step, into SGPRs, and each SGPR is the scalar operand of a
  ``v_fma_f32 vC, vB, sA, vC``.  Rows are loaded in batches of 32 SGPRs; while one
  batch feeds 32 FMAs the next batch is in flight, so every A load is covered by
  32 VALU instructions before the wait that retires it (SMEM returns out of order,
  so that wait is ``lgkmcnt(0)``; ``gcn-insert-waitcnt`` places it).
* B is read per lane with ``global_load_dwordx4`` into a ring of quads (4 K values
  each) in VGPRs; in the last batch of each K step a quad is reloaded with the
  next step's values as soon as its last FMA has issued, so the next step's B is
  in flight while the current step finishes (``vmcnt`` waits are partial: vector
  loads return in order).  The ring is k_step VGPRs, which keeps the 64x256
  kernel at 84 VGPRs (3 waves per SIMD, as the seed); a full second B buffer
  would need 100.
* At the top of each K step one ``global_load_dword`` touches the next step's A
  lines (:func:`a_touch`, value unused): every CU of a round reads the same A rows
  at once, and without it each batch's scalar loads waited for HBM (docs/kernels.md).
* FMAs go row by row within a batch, so each one's accumulator was written by the
  FMA just before it (data forwarding, seed section 2.9); only the last batch of a
  step goes K-major, to free the B quads early.
* The K loop is SALU only: one offset register, clamped with ``s_min_u32`` so the
  prefetch in the last iteration re-reads the last step instead of reading past K
  (the seed's kernel reads past K and needs padded leading dimensions; this one
  reads only inside the matrices).  The loop and its tails (K % k_step) are built by
  ``passes/isel/sqc_k_loop.py`` and a step's order by ``passes/isel/sqc_k_step.py``, both shared
  with the f16/int8 dot kernels (``passes/isel/dot.py``).
* No LDS, no ``s_barrier``.  The epilogue computes ``alpha * acc + beta * C``
  (both honored, BLAS semantics).

Kernel ABI (kernarg segment, byte offsets): A, B, C pointers at 0, 8, 16
(global buffers); M, N, K, lda, ldb, ldc as i32 at 24..44; alpha, beta at 48, 52
(f32).  Grid: (N / macro_n, M / macro_m, 1) workgroups of (macro_n, 1, 1) work-items.

M given at launch (``?``) may be smaller than the macro tile's M.  The last row tile
is moved up to end at row M, which needs M >= macro_m (row0 = M - macro_m would be
negative and the A scalar loads would read rows past M), so for a dynamic M the pass
also builds row-narrow companions ``<name>_rows8`` and ``<name>_rows1``: the same
kernel (same arguments, epilogue, layout, batch) for a clone of the matmul with an
R x macro_n macro tile (R = 8, 1; only those with R < macro_m), unsplit.  Their launch
information has role ``rows``, the main kernel's lists them under ``small_m``, and
they are in no split plan: for M < macro_m the runtime (``CompiledKernel.plan``) runs
the companion with the largest R <= M alone, on a (ceil(N/macro_n), ceil(M/R), batch)
grid, instead of the whole plan.  Two of them, because one row per workgroup is always
correct but reads B once per row (M times); 8 rows read it ceil(M/8) times and fill
the FMA pipe with 8 independent accumulators, for M from 8 up.  Together they add
about a quarter to the pass pipeline's time (R = 8 ~0.45 s, R = 1 ~0.2 s over ~2.5 s for
the default f32 kernel) and use 26 and 19 VGPRs (``vlpc compile -v``).
With one batch of A values per K step (R x k_step dwords <= 32, as for R = 1 or a static
M of 1 or 2), the next step's A is loaded after the step's FMAs, into the same SGPRs.

Errors: layouts other than NT, f64 (a later issue), and missing plan properties.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from vlpc.dialects import gcn
from vlpc.dialects.gemm import GemmShape, MatmulOp
from vlpc.passes.common import matmuls, op_error, require
from vlpc.passes.isel.scalar_constants import scalar_constants
from vlpc.passes.isel.sqc_k_loop import emit_k_loops
from vlpc.passes.isel.sqc_k_step import A_BATCH_SGPRS, WIDE_A_BATCH_SGPRS, a_batches
from vlpc.targets import get_target

# A_BATCH_SGPRS (schedule cover) and WIDE_A_BATCH_SGPRS (default): passes/isel/sqc_k_step.py
#: SMEM immediate offsets are 21-bit signed on GFX9 (Vega ISA guide, SMEM encoding).
SMEM_IMM_MAX = (1 << 20) - 1


def kernarg_layout(dtype: str, bias: bool = False, batched: bool = False, workspace: bool = False) -> list[dict]:
    """The kernel's explicit arguments: name, byte offset, size, kind, type (the ABI).

    With a fused bias epilogue, the bias vector's pointer follows beta (8-byte aligned);
    a strided batch adds the batch strides of A, B and C (i32, in elements) after that;
    a split-K plan in workspace mode adds the workspace pointer last (8-byte aligned;
    S x M x ldc elements, allocated by the runtime).
    """
    args = [
        ("A", 0, 8, "global_buffer", f"{dtype}*"),
        ("B", 8, 8, "global_buffer", f"{dtype}*"),
        ("C", 16, 8, "global_buffer", f"{dtype}*"),
        ("M", 24, 4, "by_value", "int"),
        ("N", 28, 4, "by_value", "int"),
        ("K", 32, 4, "by_value", "int"),
        ("lda", 36, 4, "by_value", "int"),
        ("ldb", 40, 4, "by_value", "int"),
        ("ldc", 44, 4, "by_value", "int"),
    ]
    esz = 4 if dtype == "f32" else 8
    off = 48
    for name in ("alpha", "beta"):
        args.append((name, off, esz, "by_value", "float" if dtype == "f32" else "double"))
        off += esz
    if bias:
        off = -(-off // 8) * 8
        args.append(("bias", off, 8, "global_buffer", f"{dtype}*"))
        off += 8
    if batched:
        for name in ("stride_a", "stride_b", "stride_c"):
            args.append((name, off, 4, "by_value", "int"))
            off += 4
    if workspace:
        off = -(-off // 8) * 8
        args.append(("workspace", off, 8, "global_buffer", f"{dtype}*"))
        off += 8
    out = [dict(name=n, offset=o, size=s, value_kind=k, type=t) for n, o, s, k, t in args]
    for a in out:  # the kernels write C and the workspace (metadata .actual_access)
        if a["value_kind"] == "global_buffer":
            a["access"] = "read_write" if a["name"] in ("C", "workspace") else "read_only"
    return out


KERNARG_OFFSET = {a["name"]: a["offset"] for a in kernarg_layout("f32")}


def kernel_interface(kernel: gcn.KernelOp, mm: MatmulOp, roles: list[str], kernargs: list[dict],
                     workgroup_size: int, macro: tuple[int, int], k_step: int, **extra: int | str) -> None:
    """Attach what the descriptor pass and the host need: entry register roles, the
    kernel arguments, and the launch information (tiles, static sizes, layout, ...)."""
    s = mm.shape()

    def attr(v: int | str):
        return StringAttr(v) if isinstance(v, str) else IntegerAttr(v, i64)

    kernel.attributes["arg_roles"] = ArrayAttr([StringAttr(x) for x in roles])
    kernel.attributes["kernargs"] = ArrayAttr([DictionaryAttr({k: attr(v) for k, v in a.items()}) for a in kernargs])
    info: dict[str, int | str] = {
        "workgroup_size": workgroup_size, "macro_m": macro[0], "macro_n": macro[1], "k_step": k_step,
        "static_m": s.m, "static_n": s.n, "static_k": s.k,
        "static_lda": s.lda, "static_ldb": s.ldb, "static_ldc": s.ldc,
        "layout": mm.layout.data, "dtype": s.dtype, **extra,
    }
    kernel.attributes["launch"] = DictionaryAttr({k: attr(v) for k, v in info.items()})


@dataclass
class _Emitter:
    """Appends ops to a block; small helpers for 32/64-bit scalar arithmetic."""

    block: Block
    ops: list[Operation] = field(default_factory=list)

    def __call__(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def sub(self, value: SSAValue, offset: int, width: int = 1) -> SSAValue:
        return self(gcn.SubregOp(value, offset, width)).result

    def const(self, value: int) -> SSAValue:
        return self(gcn.SMovB32Op(value)).sdst

    def add64(self, pair: SSAValue, lo: SSAValue | int, hi: SSAValue | int = 0, comment: str | None = None) -> SSAValue:
        """pair + (hi:lo) as a 64-bit add (s_add_u32 / s_addc_u32)."""
        r_lo = self(gcn.SAddU32Op(self.sub(pair, 0), lo, comment=comment)).sdst
        r_hi = self(gcn.SAddcU32Op(self.sub(pair, 1), hi)).sdst
        return self(gcn.RegSequenceOp([r_lo, r_hi])).result

    def mul(self, x: SSAValue, y: SSAValue | int) -> SSAValue:
        if isinstance(y, int) and y > 0 and y & (y - 1) == 0:
            return self(gcn.SLshlB32Op(x, y.bit_length() - 1)).sdst
        return self(gcn.SMulI32Op(x, y)).sdst

    def mul64(self, x: SSAValue, y: SSAValue | int) -> tuple[SSAValue, SSAValue]:
        """Full 64-bit product of two u32 values: (lo, hi)."""
        yr = self.const(y) if isinstance(y, int) else y
        lo = self(gcn.SMulI32Op(x, yr)).sdst
        hi = self(gcn.SMulHiU32Op(x, yr)).sdst
        return lo, hi


class RowStepper:
    """``stepper(base, idx)`` = base + idx * ``stride`` (an SGPR or a static int: A's row stride
    in bytes), emitted as one ``s_add_u32`` on the previous result when indices of one base
    come in order (idx after idx - 1), else an ``s_mul_i32`` and an ``s_add_u32``; idx 0 is
    ``base`` itself.  Used by the sqc and the dot kernels' A loads."""

    def __init__(self, e: "_Emitter", stride: SSAValue | int):
        self.e, self.stride = e, stride
        self.key: SSAValue | None = None
        self.idx = -1
        self.val: SSAValue | None = None

    def __call__(self, base: SSAValue, idx: int) -> SSAValue:
        e = self.e
        if self.key is base and self.idx == idx - 1:
            val = e(gcn.SAddU32Op(self.val, self.stride)).sdst  # type: ignore[arg-type]
        elif idx == 0:
            val = base
        else:
            stride = e.const(self.stride) if isinstance(self.stride, int) else self.stride
            val = e(gcn.SAddU32Op(base, e(gcn.SMulI32Op(stride, idx)).sdst)).sdst
        self.key, self.idx, self.val = base, idx, val
        return val


# -- pieces of the sqc (f32/f64) and dot (f16/int8, passes/isel/dot.py) kernels' builders --

@dataclass
class KernelEntry:
    """What :func:`kernel_entry` returns: the entry ``block`` and its emitter ``e``; ``roles``,
    the entry roles of the SGPR arguments (for :func:`kernel_interface`, before
    ``workitem_id_x`` and ``exec``); the argument registers ``kp`` (kernarg segment pointer,
    s[0:1]), ``wg_x``, ``wg_y`` (workgroup ids, s2, s3), ``wg_z`` (s4, or None), ``tid`` (the
    lane's column within the macro tile, a VGPR) and ``exec0`` (EXEC at entry); ``slice_id``,
    the wavefront group of a local split (an SGPR, or None)."""

    block: Block
    e: _Emitter
    roles: list[str]
    kp: SSAValue
    wg_x: SSAValue
    wg_y: SSAValue
    wg_z: SSAValue | None
    tid: SSAValue
    exec0: SSAValue
    slice_id: SSAValue | None


def kernel_entry(with_z: bool, local: int, mt_n: int) -> KernelEntry:
    """The entry block of an sqc or dot kernel.  Its arguments: the kernarg segment pointer
    (s[0:1]), workgroup ids x, y (s2, s3) and, ``with_z`` (a strided batch's index or a split-K
    slice), z (s4) (system SGPRs follow in order x, y, z), work-item id x (v0) and EXEC.  With a
    local split (``local`` > 1 wavefront groups of ``mt_n`` work-items each) it emits the group
    g = work-item id >> log2(mt_n) (``v_lshrrev_b32``), made uniform by ``v_readfirstlane_b32``
    into ``slice_id`` (an SGPR: the group's K slice), and the column within the macro tile,
    work-item id & (mt_n - 1) (``v_and_b32``), as ``tid``; otherwise nothing (``tid`` is v0)."""
    roles = ["kernarg_segment_ptr", "workgroup_id_x", "workgroup_id_y"]
    types = [gcn.SGPRType.at(0, 2), gcn.SGPRType.at(2), gcn.SGPRType.at(3)]
    if with_z:
        roles.append("workgroup_id_z")
        types.append(gcn.SGPRType.at(4))
    entry = Block(arg_types=[*types, gcn.VGPRType.at(0), gcn.exec_type()])
    kp, wg_x, wg_y = entry.args[:3]
    wg_z = entry.args[3] if with_z else None
    tid, exec0 = entry.args[-2:]
    e = _Emitter(entry)
    slice_id = None
    if local > 1:  # wavefront group g = work-item id / macro_n takes K slice g of the workgroup
        g = e(gcn.VLshrrevB32Op(mt_n.bit_length() - 1, tid)).vdst  # the wavefront group
        slice_id = e(gcn.VReadfirstlaneB32Op(g)).sdst
        tid = e(gcn.VAndB32Op(mt_n - 1, tid)).vdst  # the column within the macro tile
    return KernelEntry(entry, e, roles, kp, wg_x, wg_y, wg_z, tid, exec0, slice_id)


def tile_origin(e: _Emitter, shape: GemmShape, mt_m: int, mt_n: int, wg_x: SSAValue, wg_y: SSAValue,
                tid: SSAValue, exec0: SSAValue, arg) -> tuple[SSAValue, SSAValue | None, SSAValue, SSAValue]:
    """(row0, shift, col0, lanes) of the workgroup's mt_m x mt_n macro tile, all SGPRs, in rows
    and columns of C.  row0 = wg_y * mt_m; where M (static, or ``arg("M", shape.m)``, the
    builder's kernel-argument reader) is not a multiple of mt_m the last row tile is moved up
    to end at row M: row0 = min(wg_y * mt_m, M - mt_m) (``s_min_u32``; needs M >= mt_m) and
    ``shift`` = wg_y * mt_m - row0 (``s_sub_u32``), the rows at the top of the tile that the
    tile before owns (0 but for the last tile; None without an M edge; see :func:`row_exec`).
    col0 = wg_x * mt_n.  ``lanes`` (an SGPR pair): the lanes whose column col0 + tid is below N
    (``v_cmp_gt_u32`` N, col0 + tid, and EXEC &= lanes) where N (static or ``arg("N", shape.n)``)
    is not a multiple of mt_n; otherwise a copy of EXEC at entry (``exec0``)."""
    n_edge = not (shape.n >= 0 and shape.n % mt_n == 0)
    m_edge = not (shape.m >= 0 and shape.m % mt_m == 0)
    row0 = e.mul(wg_y, mt_m)
    shift = None
    if m_edge:
        m_val = arg("M", shape.m)
        last = (m_val - mt_m) if isinstance(m_val, int) else e(gcn.SSubU32Op(m_val, mt_m)).sdst
        tile_row = row0
        row0 = e(gcn.SMinU32Op(tile_row, last, comment="last row tile ends at row M")).sdst
        shift = e(gcn.SSubU32Op(tile_row, row0, comment="rows owned by the tile before")).sdst
    col0 = e.mul(wg_x, mt_n)
    if n_edge:
        n_val = arg("N", shape.n)
        n_lane = e(gcn.VAddU32Op(col0, tid)).vdst
        lanes = e(gcn.VCmpGtU32Op(e.const(n_val) if isinstance(n_val, int) else n_val, n_lane)).sdst
        e(gcn.SAndB64Op(exec0, lanes, result_type=gcn.exec_type()))
    else:
        lanes = e(gcn.SAndB64Op(exec0, -1)).sdst  # a copy of the full EXEC
    return row0, shift, col0, lanes


def row_exec(e: _Emitter, mask: SSAValue, shift: SSAValue | None, r: int) -> None:
    """EXEC for row r of the macro tile: ``mask`` (``s_and_b64 exec, mask, -1``); with a moved-up
    last row tile (``shift`` from :func:`tile_origin`), ``mask`` if the row is this tile's
    (shift <= r: ``s_cmp_le_u32``, ``s_cselect_b64 exec, mask, 0``), else no lane."""
    if shift is None:
        e(gcn.SAndB64Op(mask, -1, result_type=gcn.exec_type()))
    else:  # rows below `shift` belong to the tile before this one
        e(gcn.SCmpLeU32Op(shift, r))
        e(gcn.SCselectB64Op(mask, 0, result_type=gcn.exec_type()))


def tile_bases(e: _Emitter, ptr_a: SSAValue, ptr_b: SSAValue, row0: SSAValue, col0: SSAValue, tid: SSAValue,
               lda_b: SSAValue | int, ldb_b: SSAValue | int, esz: int, a_trans: bool, b_trans: bool, mt_n: int,
               size_texts: tuple[str, str]) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(a_tile, b_tile, voff_b): the A and B bases of the workgroup's tile (SGPR pairs, 64-bit
    adds) and the lane's byte offset into B (a VGPR).  A stored M x K: A + row0 * lda_b; K x M
    (``a_trans``): A + row0 * esz.  B stored N x K (``b_trans``): B + col0 * ldb_b, the lane at
    tid * ldb_b (``v_mul_lo_u32``); K x N: B + col0 * esz, the lane at tid * esz
    (``v_lshlrev_b32``).  ``esz``: bytes per element (per packed dword's element for the dot
    kernels), a power of two; ``lda_b``, ``ldb_b``: the leading dimensions in bytes.
    ``size_texts``: how the element size reads in the comments of the contiguous and the
    leading-dimension step."""
    size, ld_size = size_texts
    if a_trans:
        a_tile = e.add64(ptr_a, e.mul(row0, esz), 0, comment=f"A tile base = A + row0*{size} (A is K x M)")
    else:
        a_lo, a_hi = e.mul64(row0, lda_b)
        a_tile = e.add64(ptr_a, a_lo, a_hi, comment=f"A tile base = A + row0*lda*{ld_size}")
    if b_trans:
        b_lo, b_hi = e.mul64(col0, ldb_b)
        b_tile = e.add64(ptr_b, b_lo, b_hi, comment=f"B tile base = B + wg_x*{mt_n}*ldb*{ld_size}")
        voff_b = e(gcn.VMulLoU32Op(tid, e.const(ldb_b) if isinstance(ldb_b, int) else ldb_b)).vdst
    else:
        b_tile = e.add64(ptr_b, e.mul(col0, esz), 0, comment=f"B tile base = B + wg_x*{mt_n}*{size} (B is K x N)")
        voff_b = e(gcn.VLshlrevB32Op(esz.bit_length() - 1, tid)).vdst
    return a_tile, b_tile, voff_b


def k_slice(e: _Emitter, k_val: SSAValue | int, piece: SSAValue, pieces: int, k_step: int,
            static_kc: int | None, texts: tuple[str, str, str]) -> tuple[SSAValue | int, SSAValue]:
    """(length, begin) of K slice ``piece`` (an SGPR) of ``pieces`` (a power of two), in the
    units of ``k_val`` (K values for the sqc kernel, dwords of packed K for the dot kernels).
    Slices hold kc values, the last ones fewer or none: kc = ``static_kc`` for a static K (the
    length is then the constant kc when every slice is full), else kc = ceil(ceil(K / pieces) /
    k_step) * k_step in SALU ops; begin = min(piece * kc, K) and length = min(K - begin, kc)
    (``s_min_u32``, ``s_sub_u32``; SGPRs).  ``texts``: the comments of kc, begin and length."""
    ks = k_step
    if isinstance(k_val, int):
        kc: SSAValue | int = static_kc  # type: ignore[assignment]
        begin = e.mul(piece, kc)  # type: ignore[arg-type]
        if kc * pieces == k_val:  # type: ignore[operator]
            return kc, begin
    else:  # kc = ceil(ceil(K / pieces) / k_step) * k_step, pieces a power of two
        t = e(gcn.SAddU32Op(k_val, pieces - 1)).sdst
        t = e(gcn.SLshrB32Op(t, pieces.bit_length() - 1)).sdst
        t = e(gcn.SAddU32Op(t, ks - 1)).sdst
        kc = e(gcn.SAndB32Op(t, -ks, comment=texts[0])).sdst
        begin = e.mul(piece, kc)
    kreg = e.const(k_val) if isinstance(k_val, int) else k_val
    begin = e(gcn.SMinU32Op(begin, kreg, comment=texts[1])).sdst
    rest = e(gcn.SSubU32Op(kreg, begin)).sdst
    length = e(gcn.SMinU32Op(rest, kc, comment=texts[2])).sdst
    return length, begin


def a_touch(e: _Emitter, a_tile: SSAValue, tid: SSAValue, lda_b: SSAValue | int, rows: int,
            n_steps: int | None, k_rows: int = 0, row_bytes: int = 0, step_offset=None):
    """The A touch of an sqc or dot kernel's K loop (``emit_k_loops``' ``prefetch_a``), or None.

    Breadth-first dispatch (workgroup w on CU w mod C) puts the workgroups of one row tile on
    different CUs, so every CU reads the same rows of A at about the same time: without help
    each step's scalar loads meet A's lines on their way from HBM and the ``lgkmcnt(0)`` of
    each batch waits out the HBM latency.  At the top of each step one ``global_load_dword``
    per wave touches the next step's lines of the tile's A (the value is never used), so the
    lines are in the L2 a step before the scalar loads ask for them and those wait for an L2
    hit (docs/kernels.md).  A stored M x K (row-major, ``k_rows`` 0): lane l reads row
    l mod ``rows`` at ``a_tile`` + row x ``lda_b`` + the step's byte offset.  A stored K x M
    (``k_rows`` = the K values of a step, a power of two): the step spans ``k_rows`` rows of A
    of ``row_bytes`` bytes of the tile each, L = max(1, row_bytes / 64) lines; lane l reads
    line l mod L of row (l / L) mod ``k_rows``, at ``a_tile`` + ``step_offset(pref)`` (the
    step's byte offset in A).  ``lda_b``: A's row stride in bytes; ``rows`` (the micro tile's
    rows) a power of two up to 64.  Costs two VGPRs (the lane's offset and the discarded
    value), one VMEM instruction and two or three SALU per K step; None (no touch) for other
    row counts or a K loop of one step (static ``n_steps`` 1: it re-reads itself).  The lines
    stay inside A: the clamped offset of the next step is the loop's own."""
    if rows & (rows - 1) or not 2 <= rows <= 64 or n_steps == 1 or k_rows & (k_rows - 1):
        return None

    def times_lda(v: SSAValue) -> SSAValue:
        if isinstance(lda_b, int) and lda_b & (lda_b - 1) == 0:
            return e(gcn.VLshlrevB32Op(lda_b.bit_length() - 1, v)).vdst
        return e(gcn.VMulLoU32Op(v, e.const(lda_b) if isinstance(lda_b, int) else lda_b)).vdst

    if not k_rows:  # A M x K: lane l touches row l mod rows
        voff = times_lda(e(gcn.VAndB32Op(rows - 1, tid)).vdst)
    else:  # A K x M: lane l touches line l mod L of row (l / L) mod k_rows
        lines = max(1, row_bytes // 64)
        lines = 1 << (lines.bit_length() - 1)
        krow = e(gcn.VAndB32Op(k_rows - 1, e(gcn.VLshrrevB32Op(lines.bit_length() - 1, tid)).vdst)).vdst
        voff = times_lda(krow)
        if lines > 1:
            chunk = e(gcn.VLshlrevB32Op(6, e(gcn.VAndB32Op(lines - 1, tid)).vdst)).vdst
            voff = e(gcn.VAddU32Op(voff, chunk)).vdst

    def touch(pref: SSAValue) -> None:
        off = pref if step_offset is None else step_offset(pref)
        base = e.add64(a_tile, off, 0, comment="A of the next K step")
        e(gcn.GlobalLoadDwordOp(voff, base, comment="touch the next step's A lines (value unused)"))

    return touch


def rows_kernel(mm: MatmulOp, name: str, r: int, build) -> gcn.KernelOp:
    """``<name>_rows<r>``: the kernel of ``mm`` with an r x macro_n tile, unsplit, for a
    launch-time M below the macro tile's M (the launch info's role ``rows``), for the sqc and
    the dot kernels.  ``build(clone, kernel name)`` builds it from a clone of ``mm`` with those
    properties (never inserted: the builders read only its operands' types and properties;
    erased after)."""
    clone = mm.clone()
    try:
        _, mt_n = mm.get_int_array("macro_tile")
        clone.set_int_array("macro_tile", (r, mt_n))
        clone.set_int_array("micro_tile", (r, 1))
        clone.set_int_array("wg_tile", (r, mt_n))
        clone.set_int_array("sg_tile", (r, mm.get_int_array("sg_tile")[1]))
        clone.set_int_array("local_range", (1, mm.get_int_array("local_range")[1]))
        clone.set_int_array("grid", (mm.get_int_array("grid")[0], -1, 1))
        clone.set_int_array("workgroup_size", (mt_n, 1, 1))
        clone.set_int("split_k", 1)
        clone.set_int("local_split", 1)
        clone.set_int("k_per_split", -1 if mm.shape().k < 0 else mm.shape().k)
        clone.properties.pop("split_mode", None)
        kernel = build(clone, f"{name}_rows{r}")
    finally:
        clone.erase()
    kernel.attributes["launch"] = DictionaryAttr({**kernel.attributes["launch"].data, "role": StringAttr("rows")})
    return kernel


def scc_nonzero(e, x: SSAValue, dw: int, what: str) -> None:
    """SCC = (x != 0.0) for an f32 SGPR (dw 1) or an f64 SGPR pair (dw 2); -0.0 is zero."""
    if dw == 1:
        e(gcn.SAndB32Op(x, 0x7FFFFFFF, comment=f"SCC = ({what} != 0)"))
    else:
        hi = e(gcn.SAndB32Op(e.sub(x, 1), 0x7FFFFFFF)).sdst
        e(gcn.SOrB32Op(hi, e.sub(x, 0), comment=f"SCC = ({what} != 0)"))


def zero_if_alpha_zero(e, alpha: SSAValue, dw: int, acc: list[SSAValue], label: str) -> list[SSAValue]:
    """BLAS quick return for alpha = 0 (reference BLAS, rocBLAS): the products of A and B
    must not reach C, so NaN/Inf in A or B (0 * Inf = NaN) cannot propagate.  When alpha is
    +-0 the accumulators ``acc`` (f32 VGPRs, or f64 VGPR pairs for dw 2) become +0, so the
    epilogue's ``alpha * acc + beta * C`` is ``beta * C``.  Emitted as a forward branch over a
    ``gcn.loop`` that runs once (SCC is 0 on its fall-through path), so the allocator keeps
    each accumulator in its registers; alpha != 0 costs one or two SALU and a branch."""
    scc_nonzero(e, alpha, dw, "alpha")
    e(gcn.SCbranchForwardOp("scc1", label))
    body = Block(arg_types=[v.type for v in acc])
    zeros = []
    for _ in acc:
        movs = [gcn.VMovB32Op(0) for _ in range(dw)]
        for mv in movs:
            body.add_op(mv)
        if dw == 1:
            zeros.append(movs[0].vdst)
        else:
            seq = gcn.RegSequenceOp([mv.vdst for mv in movs])
            body.add_op(seq)
            zeros.append(seq.result)
    body.add_op(gcn.LoopBackOp(zeros, "scc1"))  # SCC = 0 (alpha == 0): no second iteration
    loop = gcn.LoopOp(acc, Region(body), label=f"{label}_zero")
    e(loop)
    e(gcn.LabelOp(label))
    return list(loop.res)


def fused_epilogue(e: _Emitter, epi: tuple[str, ...], bias_col: SSAValue | None, dw: int = 1):
    """The fused epilogue's instructions, one copy for the f32/f64 kernel and the f16/int8 dot
    kernels (``passes/isel/dot.py``, whose epilogue runs in f32 on the converted or
    dequantized result).  Emits gelu's constants now (before the store loop: three SGPRs and
    one VGPR) and returns ``apply(out, brow)``: gemm.matmul's ``epi`` in order on ``out`` (an
    f32 VGPR, or an f64 VGPR pair for ``dw`` = 2), ``brow`` the bias of its row (an SGPR or
    VGPR, f32/f64), ``bias_col`` the lane's column bias (a VGPR).  bias add: ``v_add_f32/f64``;
    relu: ``v_max_f32/f64`` with 0 (maxNum: relu(NaN) = 0); silu (f32 only) ``x / (1 + 2^(-x log2 e))``
    through ``v_exp_f32`` and ``v_rcp_f32``; gelu (f32 only, gfx906 has no f64
    exponential): the tanh form ``x * sigmoid(2y)``, ``y = sqrt(2/pi) (x + 0.044715 x^3)``,
    with ``v_exp_f32`` (2^z) and ``v_rcp_f32`` (both 1-ulp approximations; the error bound is
    vlpc/verify.py's)."""
    add_op = gcn.VAddF32Op if dw == 1 else gcn.VAddF64Op
    if "gelu" in epi:
        gelu_k = e.const(_f32_bits(-2.0 * math.log2(math.e)))
        gelu_c1 = e.const(_f32_bits(0.044715 * math.sqrt(2.0 / math.pi)))
        gelu_c0 = e(gcn.VMovB32Op(_f32_bits(math.sqrt(2.0 / math.pi)))).vdst
    if "gelu" in epi or "silu" in epi:
        one = e.const(_f32_bits(1.0))
    if "silu" in epi:
        silu_k = e.const(_f32_bits(-math.log2(math.e)))

    def apply(out: SSAValue, brow: SSAValue | None) -> SSAValue:
        for x in epi:
            if x == "bias_row":
                out = e(add_op(brow, out)).vdst
            elif x == "bias_col":
                out = e(add_op(bias_col, out)).vdst
            elif x == "relu":
                out = e(gcn.VMaxF32Op(out) if dw == 1 else gcn.VMaxF64Op(out)).vdst
            elif x == "gelu":  # x * sigmoid(2y), y = sqrt(2/pi) (x + 0.044715 x^3): the tanh form
                x2 = e(gcn.VMulF32Op(out, out)).vdst
                p = e(gcn.VFmaF32Op(x2, gelu_c1, gelu_c0)).vdst
                t = e(gcn.VMulF32Op(out, p)).vdst
                u = e(gcn.VMulF32Op(gelu_k, t)).vdst
                ex = e(gcn.VExpF32Op(u)).vdst
                den = e(gcn.VAddF32Op(one, ex)).vdst
                out = e(gcn.VMulF32Op(out, e(gcn.VRcpF32Op(den)).vdst)).vdst
            elif x == "silu":  # x * sigmoid(x) = x / (1 + 2^(-x log2 e)) (SiLU, Elfwing et al. 2018)
                ex = e(gcn.VExpF32Op(e(gcn.VMulF32Op(silu_k, out)).vdst)).vdst
                den = e(gcn.VAddF32Op(one, ex)).vdst
                out = e(gcn.VMulF32Op(out, e(gcn.VRcpF32Op(den)).vdst)).vdst
        return out

    return apply


class SqcKernelBuilder:
    """Builds the ``sqc`` kernel for one planned ``gemm.matmul`` (see the module docstring)."""

    #: What a kernel of a split-K plan does (see gemm-split-k): ``main`` computes products
    #: (and, unsplit, the whole epilogue); ``reduce`` sums a workspace's partial tiles and
    #: applies the epilogue; ``scale`` computes C = beta*C (+ bias) before atomic slices.
    ROLES = ("main", "reduce", "scale")

    def __init__(self, mm: MatmulOp, name: str, role: str = "main", forwarding: bool = True,
                 schedule: str = "default"):
        assert role in self.ROLES
        self.mm = mm
        self.forwarding = forwarding  # False: K-major FMAs, no accumulator forwarded (fma_order)
        # schedule "default": A batches of WIDE_A_BATCH_SGPRS loaded after the previous batch's
        # FMAs (one lgkmcnt(0) per 64 FMAs, no cover); "cover": batches of A_BATCH_SGPRS, each
        # loaded while the previous one feeds its FMAs (one wait per 32 FMAs, 32 FMAs of cover)
        self.a_late = schedule != "cover"
        self.a_batch_sgprs = WIDE_A_BATCH_SGPRS if self.a_late else A_BATCH_SGPRS
        self.name = name
        self.role = role
        self.shape: GemmShape = mm.shape()
        self.mt_m, self.mt_n = mm.get_int_array("macro_tile")
        self.mi_m, _ = mm.get_int_array("micro_tile")
        self.k_step = mm.get_int("k_step")
        self.split = mm.get_int("split_k") or 1
        self.local = mm.get_int("local_split") or 1
        self.mode = mm.split_mode.data if (self.split > 1 and mm.split_mode is not None) else "none"
        self.wg_size = mm.get_int_array("workgroup_size")
        if role != "main":  # elementwise kernels over the macro tiles: one group of waves, no split
            self.wg_size = (self.wg_size[0] // self.local, 1, 1)

    @property
    def output(self) -> str:
        """Where the main kernel's products go: ``c`` (the epilogue), ``workspace`` or ``atomic``."""
        return "c" if self.split == 1 else self.mode

    def kernargs(self) -> list[dict]:
        """The kernel arguments, the same for every kernel of the plan."""
        return kernarg_layout(self.shape.dtype, self.mm.bias is not None, self.shape.batch != 0,
                              workspace=self.mode == "workspace")

    # -- scalar values known at compile time or loaded from the kernarg segment --

    def _arg(self, e: _Emitter, kp: SSAValue, name: str, static: int) -> SSAValue | int:
        if static >= 0:
            return static
        return e(gcn.SLoadDwordOp(kp, KERNARG_OFFSET[name], comment=f"kernarg {name}")).sdst

    def build(self) -> gcn.KernelOp:
        s = self.shape
        mt_m, mt_n, mi_m, ks = self.mt_m, self.mt_n, self.mi_m, self.k_step
        main = self.role == "main"
        local = self.local if main else 1
        split_z = main and self.split > 1  # workgroup id z is the K slice

        batched = s.batch != 0
        # the batch index or K slice in workgroup id z; a local split's wavefront group
        ke = kernel_entry(batched or split_z, local, mt_n)
        entry, e, roles, slice_id = ke.block, ke.e, ke.roles, ke.slice_id
        kp, wg_x, wg_y, wg_z, tid, exec0 = ke.kp, ke.wg_x, ke.wg_y, ke.wg_z, ke.tid, ke.exec0
        layout_args = {a["name"]: a["offset"] for a in self.kernargs()}

        def batch_base(ptr: SSAValue, which: str) -> SSAValue:
            """ptr + batch index * batch stride (bytes), for a strided batch."""
            if not batched:
                return ptr
            static = getattr(s, f"stride_{which}")
            stride = (static * (4 if s.dtype == "f32" else 8) if static >= 0 else
                      e.mul(e(gcn.SLoadDwordOp(kp, layout_args[f"stride_{which}"], comment=f"kernarg stride_{which}")).sdst,
                            4 if s.dtype == "f32" else 8))
            lo, hi = e.mul64(wg_z, stride)
            return e.add64(ptr, lo, hi, comment=f"{which.upper()} + batch * stride_{which}")

        # ---- prologue: kernel arguments, tile bases, per-lane offsets ----
        if main:
            ptr_a = batch_base(e(gcn.SLoadDwordx2Op(kp, KERNARG_OFFSET["A"], comment="kernarg A")).sdst, "a")
            ptr_b = batch_base(e(gcn.SLoadDwordx2Op(kp, KERNARG_OFFSET["B"], comment="kernarg B")).sdst, "b")
            k_val = self._arg(e, kp, "K", s.k)
            lda = self._arg(e, kp, "lda", s.lda)
            ldb = self._arg(e, kp, "ldb", s.ldb)
            k_begin = None
            pieces = self.split * local
            if pieces > 1:  # this workgroup's (and wavefront group's) slice of K
                piece = wg_z if split_z else slice_id
                if split_z and local > 1:
                    piece = e(gcn.SAddU32Op(e.mul(wg_z, local), slice_id, comment="K slice")).sdst
                k_val, k_begin = k_slice(e, k_val, piece, pieces, self.k_step, self.mm.get_int("k_per_split"),
                                         ("K per slice", "first k of the slice (K for an empty one)",
                                          "K values of this slice"))

        esz = 4 if s.dtype == "f32" else 8  # bytes per element
        dw = esz // 4  # registers (dwords) per element

        def times4(x: SSAValue | int) -> SSAValue | int:
            """x * element size in bytes (a leading dimension in bytes)."""
            return x * esz if isinstance(x, int) else e.mul(x, esz)

        def zero() -> SSAValue:
            if dw == 1:
                return e(gcn.VMovB32Op(0)).vdst
            return e(gcn.RegSequenceOp([e(gcn.VMovB32Op(0)).vdst for _ in range(dw)])).result

        fma_op = gcn.VFmaF32Op if dw == 1 else gcn.VFmaF64Op

        def reg(x: SSAValue | int) -> SSAValue:
            return e.const(x) if isinstance(x, int) else x

        a_trans = self.mm.layout.data[0] == "T"  # A stored K x M: contiguous along M
        b_trans = self.mm.layout.data[1] == "T"  # B stored N x K: contiguous along K (the seed's)

        # Edges: lanes past N are switched off in EXEC; a last row tile past M is moved up
        # to end at row M (it overlaps the tile before it) and stores only its own rows.
        row0, shift, col0, lanes = tile_origin(e, s, mt_m, mt_n, wg_x, wg_y, tid, exec0,
                                               lambda name, static: self._arg(e, kp, name, static))

        acc: list[SSAValue] = []
        if main:
            lda4, ldb4 = times4(lda), times4(ldb)
            if k_begin is not None:  # the slice's first k: move the A and B bases along K
                if a_trans:
                    ptr_a = e.add64(ptr_a, *e.mul64(k_begin, lda4), comment="A + k_begin*lda*esz")
                else:
                    ptr_a = e.add64(ptr_a, e.mul(k_begin, esz), 0, comment="A + k_begin*esz")
                if b_trans:
                    ptr_b = e.add64(ptr_b, e.mul(k_begin, esz), 0, comment="B + k_begin*esz")
                else:
                    ptr_b = e.add64(ptr_b, *e.mul64(k_begin, ldb4), comment="B + k_begin*ldb*esz")
            n_steps = k_val // ks if isinstance(k_val, int) else None  # main-loop K steps (None: at launch)
            k_tail = k_val % ks if isinstance(k_val, int) else 0
            a_tile, b_tile, voff_b = tile_bases(e, ptr_a, ptr_b, row0, col0, tid, lda4, ldb4, esz, a_trans, b_trans,
                                                mt_n, ("esz", str(esz)))

            # ---- A: pieces (one scalar load each) and their batches of 32 SGPRs ----
            # A K x M (layout T...) is read 16 rows at a time for one k; A M x K (N...) one row
            # at a time for k_step values of k.  Offsets within a step are immediates when lda
            # is static and they fit the 21-bit SMEM offset; otherwise an SGPR chain adds
            # lda*4 per row (or per k) on top of the step's offset.
            per_load = 16 // dw  # elements in the widest scalar load (s_load_dwordx16)

            def pieces(kcount: int) -> list[tuple[int, list[int], list[int]]]:
                """(width in dwords, rows, kks) per scalar load, in batch order, for kcount values of k."""
                out = []
                if a_trans:
                    for r0 in range(0, mi_m, per_load):
                        widths = _pow2_parts(min(per_load, mi_m - r0))
                        for kk in range(kcount):
                            r = r0
                            for w in widths:
                                out.append((w * dw, list(range(r, r + w)), [kk]))
                                r += w
                else:
                    for r in range(mi_m):
                        for w, k0 in _pow2_runs(kcount, per_load):
                            out.append((w * dw, [r], list(range(k0, k0 + w))))
                return out

            def batch(ps: list) -> list[list]:  # batches of A_BATCH_SGPRS or WIDE_A_BATCH_SGPRS (sqc_k_step)
                return a_batches(ps, self.a_late)

            if isinstance(lda4, int):
                imm_limit = (ks - 1) * lda4 + mi_m * esz if a_trans else (mi_m - 1) * lda4 + ks * esz
                imm_ok = imm_limit <= SMEM_IMM_MAX
            else:
                imm_ok = False
            stepped = RowStepper(e, lda4)

            def a_step_offset(koff: SSAValue) -> SSAValue:
                """SGPR byte offset of a K step's A values (koff counts K in units of 4 bytes)."""
                return e(gcn.SMulI32Op(koff, reg(lda))).sdst if a_trans else koff

            def load_piece(pc, soff: SSAValue, kbase: int = 0) -> SSAValue:
                w, rows, kks = pc
                if a_trans:
                    idx, imm = kbase + kks[0], rows[0] * esz
                else:
                    idx, imm = rows[0], (kbase + kks[0]) * esz
                text = f"A rows {rows[0]}..{rows[-1]} k+{kbase + kks[0]}" if a_trans else f"A row {rows[0]} k+{kbase + kks[0]}.."
                if imm_ok:
                    off = idx * lda4 + imm  # type: ignore[operator]
                    return e(gcn.S_LOADS[w](a_tile, offset=off, soffset=soff, comment=text)).sdst
                return e(gcn.S_LOADS[w](a_tile, offset=imm, soffset=stepped(soff, idx), comment=text)).sdst

            # ---- B: slots (quads of 4 k for B N x K, single k for B K x N) ----
            per_quad = 4 // dw  # elements in one global_load_dwordx4

            def b_slot_of(kk: int) -> tuple[int, int]:
                return (kk // per_quad, kk % per_quad) if b_trans else (kk, 0)

            n_slots = ks // per_quad if b_trans else ks
            b_chain: dict[str, object] = {"base": None, "kk": -1, "ptr": None}

            def load_b_slot(slot: int, base: SSAValue, text: str) -> SSAValue:
                """B values of `slot` for the step whose B base address is `base`."""
                if b_trans:
                    return e(gcn.GlobalLoadDwordx4Op(voff_b, base, offset=16 * slot, comment=text)).vdst
                if b_chain["base"] is base and b_chain["kk"] == slot - 1:
                    ptr = e.add64(b_chain["ptr"], ldb4, 0)  # type: ignore[arg-type]
                elif slot == 0:
                    ptr = base
                else:
                    lo, hi = e.mul64(e.const(slot), ldb4)
                    ptr = e.add64(base, lo, hi)
                b_chain.update(base=base, kk=slot, ptr=ptr)
                op = gcn.GlobalLoadDwordOp if dw == 1 else gcn.GlobalLoadDwordx2Op
                return e(op(voff_b, ptr, comment=text)).vdst

            def b_step_base(koff: SSAValue) -> SSAValue:
                if b_trans:
                    return e.add64(b_tile, koff, 0, comment="B for the next K step")
                lo, hi = e.mul64(koff, reg(ldb))
                return e.add64(b_tile, lo, hi, comment="B for the next K step")

            def b_operand(slots: list[SSAValue], kk: int) -> SSAValue:
                q, j = b_slot_of(kk)
                return e.sub(slots[q], j * dw, dw) if b_trans else slots[q]

            def fma_order(batch_pieces, last: bool):
                pairs = [(r, kk, pi, pc_i) for pi, (w, rows, kks) in enumerate(batch_pieces)
                         for pc_i, (r, kk) in enumerate((r, kk) for r in rows for kk in kks)]
                # Row by row, so each FMA's accumulator is the previous FMA's result (the seed's
                # data forwarding, section 2.9); the last batch of a step goes K-major, so each
                # B slot dies early and is reloaded for the next step.  Without forwarding every
                # batch goes K-major (the seed's sum_no_reuse): consecutive FMAs of a batch of two
                # or more rows write different accumulators (a one-row batch cannot avoid it).
                k_major = last or not self.forwarding
                return sorted(pairs, key=(lambda t: (t[1], t[0])) if k_major else (lambda t: (t[0], t[1])))

            def a_operand(vals: list[SSAValue], batch_pieces, pi: int, r: int, kk: int) -> SSAValue:
                w, rows, kks = batch_pieces[pi]
                j = rows.index(r) if a_trans else kks.index(kk)
                return e.sub(vals[pi], j * dw, dw) if w > dw else vals[pi]

            def load_all_slots(base: SSAValue, text: str) -> list[SSAValue]:
                return [load_b_slot(q, base, f"{text} {q}") for q in range(n_slots)]

            b_one = gcn.GlobalLoadDwordOp if dw == 1 else gcn.GlobalLoadDwordx2Op
            prefetch_a = (a_touch(e, a_tile, tid, lda4, mi_m, n_steps, k_rows=ks, row_bytes=mi_m * esz,
                                  step_offset=a_step_offset) if a_trans else a_touch(e, a_tile, tid, lda4, mi_m, n_steps))
            acc = [zero() for _ in range(mi_m)]
            # the K loop (steps of k_step) and its tails: passes/isel/sqc_k_loop.py; the step's order
            # of A loads, FMAs and B reloads: passes/isel/sqc_k_step.py (both shared with the f16/int8
            # dot kernels)
            acc = emit_k_loops(
                e, self.name, acc, k_val, n_steps, k_tail, ks, esz, dw, batches=lambda kc: batch(pieces(kc)),
                fma_order=fma_order, late=self.a_late, bunch=False, peel=False, mac_op=fma_op,
                texts={"k_full": "K rounded down to whole K steps", "k_rest": "K tail = K % k_step",
                       "next": "next k", "b_one": "B tail k", "b_tail": "B tail k={}"},
                a_offset=a_step_offset, load_piece=load_piece, a_operand=a_operand,
                b_tile=b_tile, voff_b=voff_b, b_quads=b_trans, b_slot_of=b_slot_of, load_b_slot=load_b_slot,
                load_all_slots=load_all_slots, b_step_base=b_step_base, b_operand=b_operand,
                load_b_one=lambda base, text: e(b_one(voff_b, base, comment=text)).vdst,
                prefetch_a=prefetch_a)

        # ---- local split: wavefront groups 1..L-1 hand their accumulators to group 0 ----
        lds_bytes = 0
        if local > 1:
            acc, lds_bytes = self._local_reduce(e, acc, slice_id, tid, lanes, esz)
            e(gcn.SCmpEqU32Op(slice_id, 0))
            lanes = e(gcn.SCselectB64Op(lanes, 0)).sdst  # only group 0 writes the tile

        # ---- output ----
        # c: C = epilogue(alpha * acc + beta * C), C not read when beta == 0 (BLAS);
        # workspace: the raw partial tile into slice z of the workspace; atomic: alpha * acc
        # added into C by a compare-and-swap loop; reduce: acc = the sum of the S partial
        # tiles, then as c; scale: C = epilogue(beta * C) before the atomic slices.
        out_kind = self.output if main else self.role
        epi = self.mm.epilogue_ops() if out_kind in ("c", "reduce", "scale") else ()
        kargs = layout_args
        scalar_load = gcn.SLoadDwordOp if dw == 1 else gcn.SLoadDwordx2Op
        ldc = self._arg(e, kp, "ldc", s.ldc)
        ldc4 = times4(ldc)

        def tile_base(ptr: SSAValue, what: str) -> SSAValue:
            lo, hi = e.mul64(row0, ldc4)
            t = e.add64(ptr, lo, hi, comment=f"{what} tile rows")
            return e.add64(t, e.mul(wg_x, mt_n * esz), 0, comment=f"{what} tile columns")

        def static_or_reg_mul(x: SSAValue | int, y: SSAValue | int) -> SSAValue | int:
            if isinstance(x, int) and isinstance(y, int):
                return x * y
            return e.mul(x, y) if not isinstance(x, int) else e.mul(y, x)  # type: ignore[arg-type]

        voff_c = e(gcn.VLshlrevB32Op(esz.bit_length() - 1, tid)).vdst
        slice_bytes: SSAValue | int = 0
        if out_kind in ("workspace", "reduce"):  # workspace: S tiles of M x ldc elements
            ws = e(gcn.SLoadDwordx2Op(kp, kargs["workspace"], comment="kernarg workspace")).sdst
            slice_bytes = static_or_reg_mul(self._arg(e, kp, "M", s.m), ldc4)
            if out_kind == "workspace":
                ws = e.add64(ws, *e.mul64(wg_z, slice_bytes), comment="workspace slice z")
            ws_tile = c_tile = tile_base(ws, "workspace")
        if out_kind != "workspace":
            ptr_c = batch_base(e(gcn.SLoadDwordx2Op(kp, kargs["C"], comment="kernarg C")).sdst, "c")
            c_tile = tile_base(ptr_c, "C")
        if out_kind != "scale":
            alpha = e(scalar_load(kp, kargs["alpha"], comment="kernarg alpha")).sdst
        if main:  # BLAS: alpha == 0 drops A*B (the workspace partials become 0 for the reduce)
            acc = zero_if_alpha_zero(e, alpha, dw, acc, f".L{self.name}_alpha_nonzero")
        if out_kind in ("c", "reduce", "scale"):
            beta = e(scalar_load(kp, kargs["beta"], comment="kernarg beta")).sdst
            scc_nonzero(e, beta, dw, "beta")
            load_lanes = e(gcn.SCselectB64Op(lanes, 0)).sdst  # BLAS: beta == 0 does not read C
        c_load = gcn.GlobalLoadDwordOp if dw == 1 else gcn.GlobalLoadDwordx2Op
        c_store = gcn.GlobalStoreDwordOp if dw == 1 else gcn.GlobalStoreDwordx2Op
        mul_op = gcn.VMulF32Op if dw == 1 else gcn.VMulF64Op
        add_op = gcn.VAddF32Op if dw == 1 else gcn.VAddF64Op

        # Fused epilogue (gemm.matmul's `epilogue`, in order), applied before the store.
        bias_ptr = (e(gcn.SLoadDwordx2Op(kp, kargs["bias"], comment="kernarg bias")).sdst
                    if "bias" in kargs and epi else None)
        bias_col = bias_row_base = None
        if "bias_col" in epi:
            e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))  # the columns below N
            base = e.add64(bias_ptr, e.mul(wg_x, mt_n * esz), 0, comment="bias + col0")
            bias_col = e(c_load(voff_c, base, comment="bias[n]")).vdst
        if "bias_row" in epi:
            lo, hi = e.mul64(row0, esz)
            bias_row_base = e.add64(bias_ptr, lo, hi, comment="bias + row0")
        epilogue = fused_epilogue(e, epi, bias_col, dw)

        # reduce: slice j's partial tile starts j * M * ldc elements on: one SGPR offset per
        # slice, added to the lane offset just before each load (VGPRs do not grow with S)
        # (computed once for up to 24 slices; beyond, per chunk of slices, so SGPRs stay bounded)
        few_slices = self.split <= 25
        slice_offsets = {j: reg(static_or_reg_mul(slice_bytes, j)) for j in range(1, self.split)} \
            if out_kind == "reduce" and few_slices else {}

        def partial_offset(j: int) -> SSAValue:
            if j == 0:
                return voff_c
            off = slice_offsets[j] if few_slices else reg(static_or_reg_mul(slice_bytes, j))
            return e(gcn.VAddU32Op(off, voff_c)).vdst

        group = 16 // dw
        if out_kind == "reduce":  # at most 32 partial values in flight
            group = max(1, min(group, 32 // (self.split * dw)))
        row_ptr = c_tile
        ws_ptr = ws_tile if out_kind == "reduce" else None
        for g0 in range(0, mi_m, group):
            rows = list(range(g0, min(g0 + group, mi_m)))
            ptrs, ws_ptrs = [], []
            for r in rows:
                ptrs.append(row_ptr)
                ws_ptrs.append(ws_ptr)
                if r + 1 < mi_m:
                    row_ptr = e.add64(row_ptr, ldc4, 0)
                    if ws_ptr is not None:
                        ws_ptr = e.add64(ws_ptr, ldc4, 0)
            if out_kind == "workspace":
                for i, (r, ptr) in enumerate(zip(rows, ptrs)):
                    if shift is not None or (g0 == 0 and i == 0):
                        row_exec(e, lanes, shift, r)
                    e(c_store(voff_c, acc[r], ptr))  # the partial row r
                continue
            if out_kind == "atomic":
                for r, ptr in zip(rows, ptrs):
                    row_exec(e, lanes, shift, r)
                    self._atomic_add(e, e(mul_op(alpha, acc[r])).vdst, voff_c, ptr, exec0, r)
                continue
            sums: list[SSAValue | None] = [None] * len(rows)
            if out_kind == "reduce":  # the S partials of each row, summed in slice order
                if g0 == 0 or shift is not None:  # every row of the tile, the shifted ones too
                    e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
                # at most 32 dwords of partials in flight: for a large S, chunks of slices
                chunk = max(1, min(self.split, 32 // (len(rows) * dw)))
                totals: list[SSAValue | None] = [None] * len(rows)
                for j0 in range(0, self.split, chunk):
                    parts = [[e(c_load(partial_offset(j), wp, comment=f"partial {j} row {r}")).vdst
                              for j in range(j0, min(j0 + chunk, self.split))] for r, wp in zip(rows, ws_ptrs)]
                    for i, ps in enumerate(parts):
                        for p_j in ps:  # in slice order
                            totals[i] = p_j if totals[i] is None else e(add_op(totals[i], p_j)).vdst
                sums = totals
            if shift is not None and g0:
                # the rows before ran with EXEC = 0 below the shift: the zeros must reach
                # every lane, or a lane keeps stale bits (a NaN for f64) that beta = 0 times
                # the masked C load does not clear
                e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
            zeros = [zero() for _ in rows]
            cs = []
            for i, (r, ptr) in enumerate(zip(rows, ptrs)):
                if shift is not None or i == 0:
                    row_exec(e, load_lanes, shift, r)
                cs.append(e(c_load(voff_c, ptr, comment=f"C row {r}", merge=zeros[i])).vdst)
            brows = ([e(scalar_load(bias_row_base, r * esz, comment=f"bias[row {r}]")).sdst for r in rows]
                     if bias_row_base is not None else [None] * len(rows))
            for i, (r, ptr, c) in enumerate(zip(rows, ptrs, cs)):
                if shift is not None or i == 0:
                    row_exec(e, lanes, shift, r)
                t = e(mul_op(beta, c)).vdst
                if out_kind == "scale":
                    out = t
                else:
                    out = e(fma_op(acc[r] if out_kind == "c" else sums[i], alpha, t)).vdst
                e(c_store(voff_c, epilogue(out, brows[i]), ptr))
        e(gcn.SEndpgmOp())

        kernel = gcn.KernelOp(self.name, Region(entry))
        if lds_bytes:
            kernel.attributes["lds_bytes"] = IntegerAttr(lds_bytes, i64)
        split_info: dict[str, int | str] = {}
        if self.split > 1 or self.local > 1:
            split_info = dict(split_k=self.split, split_mode=self.mode, local_split=self.local,
                              k_per_split=self.mm.get_int("k_per_split"))
        if not main:
            split_info["role"] = self.role
        kernel_interface(kernel, self.mm, [*roles, "workitem_id_x", "exec"], self.kernargs(), self.wg_size[0],
                         (mt_m, mt_n), ks, epilogue=",".join(self.mm.epilogue_ops()), batch=s.batch,
                         static_stride_a=s.stride_a, static_stride_b=s.stride_b, static_stride_c=s.stride_c,
                         **split_info)
        return kernel

    # -- split-K pieces ----------------------------------------------------------

    def _local_reduce(self, e: _Emitter, acc: list[SSAValue], slice_id: SSAValue, col: SSAValue,
                      lanes: SSAValue, esz: int) -> tuple[list[SSAValue], int]:
        """Sum the wavefront groups' accumulators into group 0's through LDS.

        Rows go in chunks that fit LOCAL_SPLIT_LDS_BYTES: groups 1..L-1 write their rows of
        the chunk (group g at slot g - 1, row-major, one element per lane and row), an
        ``s_barrier``, every group reads and adds the slots in group order (only group 0's
        sums are stored later), and a second barrier before the next chunk overwrites the
        slots.  Returns the new accumulators and the LDS bytes per workgroup."""
        local, mt_n, dw = self.local, self.mt_n, esz // 4
        row_bytes = mt_n * esz
        rows_per_chunk = max(1, min(len(acc), LOCAL_SPLIT_LDS_BYTES // ((local - 1) * row_bytes)))
        slot_bytes = rows_per_chunk * row_bytes
        write = gcn.DsWriteB32Op if dw == 1 else gcn.DsWriteB64Op
        read = gcn.DsReadB32Op if dw == 1 else gcn.DsReadB64Op
        add = gcn.VAddF32Op if dw == 1 else gcn.VAddF64Op
        vcol = e(gcn.VLshlrevB32Op(esz.bit_length() - 1, col)).vdst
        slot = e(gcn.SMaxU32Op(slice_id, 1)).sdst
        slot = e(gcn.SSubU32Op(slot, 1)).sdst
        wbase = e(gcn.VAddU32Op(e.mul(slot, slot_bytes), vcol)).vdst  # this group's LDS slot
        acc = list(acc)
        for c0 in range(0, len(acc), rows_per_chunk):
            rows = range(c0, min(c0 + rows_per_chunk, len(acc)))
            e(gcn.SCmpLgU32Op(slice_id, 0))
            e(gcn.SCselectB64Op(lanes, 0, result_type=gcn.exec_type()))  # groups 1..L-1 write
            for r in rows:
                e(write(wbase, acc[r], offset=(r - c0) * row_bytes, comment=f"partial row {r}"))
            e(gcn.SBarrierOp())
            e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
            for r in rows:
                for g in range(1, local):
                    part = e(read(vcol, offset=(g - 1) * slot_bytes + (r - c0) * row_bytes,
                                  comment=f"group {g} row {r}")).vdst
                    acc[r] = e(add(acc[r], part)).vdst
            if c0 + rows_per_chunk < len(acc):
                e(gcn.SBarrierOp())
        return acc, (local - 1) * slot_bytes

    def _atomic_add(self, e: _Emitter, value: SSAValue, voff: SSAValue, ptr: SSAValue,
                    exec_reg: SSAValue, row: int) -> None:
        """C[row] += value per active lane, with a ``global_atomic_cmpswap`` retry loop.

        gfx906 has no float atomic add (``global_atomic_add_f32`` is gfx908's): read C,
        swap in old + value if C still holds old, and retry, with EXEC narrowed to the
        lanes whose swap failed, until every lane has succeeded.  The loop leaves EXEC
        empty; the caller sets it again."""
        dw = value.type.n
        load = gcn.GlobalLoadDwordOp if dw == 1 else gcn.GlobalLoadDwordx2Op
        add = gcn.VAddF32Op if dw == 1 else gcn.VAddF64Op
        cas = gcn.GlobalAtomicCmpswapOp if dw == 1 else gcn.GlobalAtomicCmpswapX2Op
        ne = gcn.VCmpNeU32Op if dw == 1 else gcn.VCmpNeU64Op
        old0 = e(load(voff, ptr, comment=f"C row {row}")).vdst
        body = Block(arg_types=[old0.type])
        be = _Emitter(body)
        old = body.args[0]
        new = be(add(value, old)).vdst
        data = be(gcn.RegSequenceOp([new, old])).result
        seen = be(cas(voff, data, ptr, comment=f"C row {row} += alpha*acc if unchanged")).vdst
        failed = be(ne(seen, old)).sdst
        be(gcn.SAndB64Op(exec_reg, failed, result_type=gcn.exec_type()))
        nxt = be(gcn.VMovB32Op(seen)).vdst if dw == 1 else be(gcn.RegSequenceOp(
            [be(gcn.VMovB32Op(be.sub(seen, i))).vdst for i in range(2)])).result
        be(gcn.LoopBackOp([nxt], "execnz"))
        e(gcn.LoopOp([old0], Region(body), label=f".L{self.name}_cas_row{row}"))


#: LDS a local split's reduction uses per workgroup (bytes): small enough to keep several
#: workgroups per CU (64 KiB per CU on gfx906).
LOCAL_SPLIT_LDS_BYTES = 16384


def _f32_bits(x: float) -> int:
    """The IEEE binary32 bit pattern of x (for literals)."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _pow2_parts(n: int, largest: int = 16) -> list[int]:
    """n as a sum of power-of-two load widths up to ``largest`` (largest first)."""
    out = []
    w = largest
    while w:
        while n >= w:
            out.append(w)
            n -= w
        w //= 2
    return out


def _pow2_runs(n: int, largest: int = 16) -> list[tuple[int, int]]:
    """(width, start) runs covering 0..n-1 with power-of-two widths up to ``largest``."""
    runs, start = [], 0
    for w in _pow2_parts(n, largest):
        runs.append((w, start))
        start += w
    return runs


@dataclass(frozen=True)
class ConvertGemmToGcnPass(ModulePass):
    """Options: ``strategy`` (``sqc``: A in SGPRs, the default; ``lds``: the legacy LDS-tiled kernel), ``target``,
    ``schedule`` (strategy sqc: ``default``, this module's kernel, or ``seed``, the loop of the seed's
    hand-written 64x256 SGEMM: ``passes/isel/seed.py``) and ``forwarding`` (strategy sqc, both
    schedules: ``true`` orders the FMAs so each accumulator comes from the FMA just before it; ``false``
    K-major, the seed's ``sum_no_reuse`` comparison kernel: only the FMA order changes, each accumulator
    still sums its k in order, so C is bit-identical; strategy lds forwards nothing either way: its
    consecutive FMAs write different accumulators of the 8x8 micro tile)."""

    name = "convert-gemm-to-gcn"

    strategy: str = "sqc"
    target: str = "gfx906"
    schedule: str = "default"
    forwarding: bool = True
    #: f16/int8 with A stored K x M: ``auto``, ``pre`` or ``in-kernel`` (passes/isel/transpose.py).
    a_transpose: str = "auto"
    #: The decode GEMV where no ``gemv`` attribute chooses: ``auto`` (the lane-along-K GEMV where it
    #: applies, passes/isel/gemv.py) or ``sgpr`` (the SGPR GEMV, which follows a plan given
    #: by options: vlpc.pipeline sets it when a tile, K step or local split is given).
    gemv: str = "auto"

    #: The schedules of strategy sqc.
    SCHEDULES = ("default", "cover", "seed")

    #: Row counts R of the row-narrow companions ``<name>_rows<R>`` built when M is given
    #: at launch (those below the macro tile's M): the runtime runs the largest R <= M
    #: alone when M is smaller than the macro tile's M (see the module docstring).
    ROWS_TILES = (8, 1)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        get_target(self.target)
        for mm in list(matmuls(op)):
            from vlpc.passes.isel.lds import LdsKernelBuilder
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
            if transcendental and shape.dtype == "f64":  # f16/i8: check_dot (gemm_to_gcn_dot)
                raise op_error(mm, f"the {transcendental[0]} epilogue computes in f32 (f32, f16 and dequantized int8 products), not "
                               "f64: gfx906 has no f64 exponential")
            if mm.bias is not None and mm.bias not in fn.body.block.args:
                raise op_error(mm, f"the bias of gemm.matmul must be an argument of @{fn.sym_name.data}")
            expected = [v for v in (mm.a, mm.b, mm.c, mm.alpha, mm.beta, mm.bias, mm.scale_row, mm.scale_col)
                        if v is not None and v in fn.body.block.args]
            if list(fn.body.block.args) != expected:
                raise op_error(mm, f"the arguments of @{fn.sym_name.data} must be gemm.matmul's A, B, C, alpha, beta, "
                               "then bias, scale_row, scale_col when used, in that order: they become the kernel's "
                               "arguments")
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
            if shape.b_format:  # f16 x block-quantized weights: passes/isel/quant.py
                from vlpc.passes.isel.quant_k import quant_format_kernels
                if self.gemv != "auto" and "gemv" not in mm.attributes:  # (a plan given: the SGPR GEMV's)
                    mm.attributes["gemv"] = StringAttr(self.gemv)
                kernels = quant_format_kernels(mm, name, self.strategy, self.schedule, self.forwarding)
            elif shape.dtype in ("f16", "i8"):  # the dot kernels: passes/isel/dot.py
                from vlpc.passes.isel.dot import dot_kernels
                if self.gemv != "auto" and "gemv" not in mm.attributes:
                    mm.attributes["gemv"] = StringAttr(self.gemv)
                kernels = dot_kernels(mm, name, self.strategy, self.schedule, self.forwarding, self.ROWS_TILES,
                                      a_transpose=self.a_transpose)
            elif self.schedule == "seed":
                from vlpc.passes.isel.seed import SeedKernelBuilder
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
                steps = ",".join(k.sym_name.data for k in kernels)
                for k in kernels:  # the launch order, for the runtime
                    k.attributes["launch"] = DictionaryAttr({**k.attributes["launch"].data, "plan": StringAttr(steps)})
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
