"""The emitter and the pieces every kernel builder of instruction selection shares.

:class:`Emitter` appends ``gcn`` ops to a block; the rest are the parts of a kernel common to
the sqc (f32/f64, ``isel/sqc.py``), dot (f16/int8, ``isel/dot.py``), quantized-weight, seed,
LDS and transpose builders: the kernarg segment layout of the f32/f64 kernels
(:func:`kernarg_layout`) and the launch information (:func:`kernel_interface`), the entry block
(:func:`kernel_entry`), the grouped workgroup order (:func:`grouped_workgroup_ids`), the macro
tile's origin and edges (:func:`tile_origin`,
:func:`row_exec`, :func:`tile_bases`), a K slice (:func:`k_slice`), the A touch of the K loop
(:func:`a_touch`), the row-narrow companions (:func:`rows_kernel`), BLAS's alpha = 0 rule
(:func:`zero_if_alpha_zero`) and the fused epilogue (:func:`fused_epilogue`).  It imports no
builder: the builders import it, and the pass (``isel/dispatch.py``) imports the builders.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import GemmShape, MatmulOp
from vlpc.targets import GFX906

#: The largest SMEM immediate offset (21-bit signed on GFX9: Vega ISA guide, SMEM encoding).
SMEM_IMM_MAX = (1 << (GFX906.smem_offset_bits - 1)) - 1


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


def _launch_attr(v: int | str):
    return StringAttr(v) if isinstance(v, str) else IntegerAttr(v, i64)


def add_launch_facts(kernel: gcn.KernelOp, **facts: int | str) -> gcn.KernelOp:
    """``kernel`` with ``facts`` added to (or replacing in) its launch information (the ``launch``
    dictionary :func:`kernel_interface` attaches; strings and 64-bit integers)."""
    kernel.attributes["launch"] = DictionaryAttr({**kernel.attributes["launch"].data,
                                                  **{k: _launch_attr(v) for k, v in facts.items()}})
    return kernel


def set_launch_plan(kernels: list[gcn.KernelOp]) -> list[gcn.KernelOp]:
    """``kernels`` with the launch fact ``plan`` (their names, in launch order) on each: the runtime runs
    them in that order (``CompiledKernel.plan``)."""
    plan = ",".join(k.sym_name.data for k in kernels)
    for k in kernels:
        add_launch_facts(k, plan=plan)
    return kernels


def kernel_interface(kernel: gcn.KernelOp, mm: MatmulOp, roles: list[str], kernargs: list[dict],
                     workgroup_size: int, macro: tuple[int, int], k_step: int, **extra: int | str) -> None:
    """Attach what the descriptor pass and the host need: entry register roles, the
    kernel arguments, and the launch information (tiles, static sizes, layout, ...)."""
    s = mm.shape()

    attr = _launch_attr
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
class Emitter:
    """Appends ops to a block (``e(op)`` adds ``op`` and returns it), with small helpers for
    32/64-bit scalar arithmetic; the one emitter of every kernel builder."""

    block: Block

    def __call__(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def sub(self, value: SSAValue, offset: int, width: int = 1) -> SSAValue:
        """Registers ``offset..offset+width-1`` of ``value`` (a ``gcn.subreg``)."""
        return self(gcn.SubregOp(value, offset, width)).result

    def const(self, value: int) -> SSAValue:
        return self(gcn.SMovB32Op(value)).sdst

    def reg(self, x: SSAValue | int) -> SSAValue:
        """``x`` in an SGPR: a constant through ``s_mov_b32``, a register as it is."""
        return self.const(x) if isinstance(x, int) else x

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
        yr = self.reg(y)
        lo = self(gcn.SMulI32Op(x, yr)).sdst
        hi = self(gcn.SMulHiU32Op(x, yr)).sdst
        return lo, hi


class RowStepper:
    """``stepper(base, idx)`` = base + idx * ``stride`` (an SGPR or a static int: A's row stride
    in bytes), emitted as one ``s_add_u32`` on the previous result when indices of one base
    come in order (idx after idx - 1), else an ``s_mul_i32`` and an ``s_add_u32``; idx 0 is
    ``base`` itself.  Used by the sqc and the dot kernels' A loads."""

    def __init__(self, e: "Emitter", stride: SSAValue | int):
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


# -- pieces of the sqc (f32/f64, isel/sqc.py) and dot (f16/int8, isel/dot.py) kernels' builders --

@dataclass
class KernelEntry:
    """What :func:`kernel_entry` returns: the entry ``block`` and its emitter ``e``; ``roles``,
    the entry roles of the SGPR arguments (for :func:`kernel_interface`, before
    ``workitem_id_x`` and ``exec``); the argument registers ``kp`` (kernarg segment pointer,
    s[0:1]), ``wg_x``, ``wg_y`` (workgroup ids, s2, s3), ``wg_z`` (s4, or None), ``tid`` (the
    lane's column within the macro tile, a VGPR) and ``exec0`` (EXEC at entry); ``slice_id``,
    the wavefront group of a local split (an SGPR, or None)."""

    block: Block
    e: Emitter
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
    e = Emitter(entry)
    slice_id = None
    if local > 1:  # wavefront group g = work-item id / macro_n takes K slice g of the workgroup
        g = e(gcn.VLshrrevB32Op(mt_n.bit_length() - 1, tid)).vdst  # the wavefront group
        slice_id = e(gcn.VReadfirstlaneB32Op(g)).sdst
        tid = e(gcn.VAndB32Op(mt_n - 1, tid)).vdst  # the column within the macro tile
    return KernelEntry(entry, e, roles, kp, wg_x, wg_y, wg_z, tid, exec0, slice_id)


def once(arg):
    """``arg(name, static)`` (a builder's kernel-argument reader) that emits each argument's load at
    most once: later calls for the same name return the first call's value."""
    seen: dict = {}

    def read(name: str, static: int):
        if name not in seen:
            seen[name] = arg(name, static)
        return seen[name]
    return read


def grouped_workgroup_ids(e: Emitter, shape: GemmShape, mt_m: int, mt_n: int, wg_x: SSAValue, wg_y: SSAValue,
                          group: int, arg) -> tuple[SSAValue, SSAValue]:
    """(tile column, tile row) of the workgroup in the grouped workgroup order of ``group`` (G,
    ``wg_group``) tile rows, in front of :func:`tile_origin`; (``wg_x``, ``wg_y``) as they are for
    G = 1 or where the order is the hardware's anyway (static: one tile column, or G tile rows or
    fewer).

    The hardware dispatches a (gx, gy) = (ceil(N / mt_n), ceil(M / mt_m)) grid x fastest, so the
    workgroups in flight at once span a strip of tile rows across all tile columns and read all
    of B.  Grouped, linear id p = wg_y * gx + wg_x walks G tile rows of one tile column, then
    the next column: the group is wg_y's G-aligned block of rows, first = wg_y & -G, and the
    id within it l = (wg_y & (G - 1)) * gx + wg_x gives row first | (l & (G - 1)) and column
    l >> log2(G) (Triton's matmul tutorial, "L2 Cache Optimizations", GROUP_SIZE_M; Tensile's
    WorkGroupMapping; docs/kernels.md).  G is a power of two (:data:`vlpc.dialects.gemm.MAX_WG_GROUP`),
    so this is SALU masks and shifts, no division.  The last group, when gy is not a multiple of
    G, keeps the row-major order (its ids are its own tiles either way): the grouped ids are
    taken when first + G <= gy (``s_cmp_le_u32``, ``s_cselect_b32``), else (wg_x, wg_y).

    M and N given at launch are read through ``arg`` (as :func:`tile_origin` reads them) and gx,
    gy are ceil-divisions by shifts, which needs mt_m and mt_n powers of two (``gemm-tile``
    refuses the option otherwise)."""
    if group <= 1:
        return wg_x, wg_y
    lg = group.bit_length() - 1

    sizes = {name: arg(name, size) if size < 0 else size for name, size in (("N", shape.n), ("M", shape.m))}

    def tiles(name: str, tile: int) -> SSAValue | int:
        size = sizes[name]
        if isinstance(size, int):
            return -(-size // tile)
        assert tile & (tile - 1) == 0, "gemm-tile refuses a grouped order with a launch-time size and this tile"
        if tile == 1:
            return size
        t = e(gcn.SAddU32Op(size, tile - 1)).sdst
        return e(gcn.SLshrB32Op(t, tile.bit_length() - 1, comment=f"tiles along {name}")).sdst

    gx, gy = tiles("N", mt_n), tiles("M", mt_m)
    if isinstance(gx, int) and gx == 1 or isinstance(gy, int) and gy <= group:
        return wg_x, wg_y  # one tile column, or one partial group: the row-major order is the grouped one
    first = e(gcn.SAndB32Op(wg_y, -group, comment=f"first tile row of the group of {group}")).sdst
    local = e(gcn.SAddU32Op(e.mul(e(gcn.SAndB32Op(wg_y, group - 1)).sdst, gx), wg_x,
                            comment="id within the group")).sdst
    row = e(gcn.SOrB32Op(first, e(gcn.SAndB32Op(local, group - 1)).sdst, comment="grouped tile row")).sdst
    col = e(gcn.SLshrB32Op(local, lg, comment="grouped tile column")).sdst
    if isinstance(gy, int) and gy % group == 0:
        return col, row
    if isinstance(gy, int):
        e(gcn.SCmpLeU32Op(first, gy - group))
    else:
        e(gcn.SCmpLeU32Op(e(gcn.SAddU32Op(first, group)).sdst, gy))
    # a whole group (first + G <= gy): the grouped ids; the last, partial group: row-major
    row = e(gcn.SCselectB32Op(row, wg_y, comment="a whole group, else the last group row-major")).sdst
    col = e(gcn.SCselectB32Op(col, wg_x)).sdst
    return col, row


def tile_origin(e: Emitter, shape: GemmShape, mt_m: int, mt_n: int, wg_x: SSAValue, wg_y: SSAValue,
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


def row_exec(e: Emitter, mask: SSAValue, shift: SSAValue | None, r: int) -> None:
    """EXEC for row r of the macro tile: ``mask`` (``s_and_b64 exec, mask, -1``); with a moved-up
    last row tile (``shift`` from :func:`tile_origin`), ``mask`` if the row is this tile's
    (shift <= r: ``s_cmp_le_u32``, ``s_cselect_b64 exec, mask, 0``), else no lane."""
    if shift is None:
        e(gcn.SAndB64Op(mask, -1, result_type=gcn.exec_type()))
    else:  # rows below `shift` belong to the tile before this one
        e(gcn.SCmpLeU32Op(shift, r))
        e(gcn.SCselectB64Op(mask, 0, result_type=gcn.exec_type()))


def tile_bases(e: Emitter, ptr_a: SSAValue, ptr_b: SSAValue, row0: SSAValue, col0: SSAValue, tid: SSAValue,
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


def k_slice(e: Emitter, k_val: SSAValue | int, piece: SSAValue, pieces: int, k_step: int,
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


def a_touch(e: Emitter, a_tile: SSAValue, tid: SSAValue, lda_b: SSAValue | int, rows: int,
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
    return add_launch_facts(kernel, role="rows")


def row_pointers(e: Emitter, ptr: SSAValue, first: int, count: int, rows: int,
                 stride: SSAValue | int) -> tuple[list[SSAValue], SSAValue]:
    """The pointers (SGPR pairs) of rows ``first`` .. ``first + count - 1`` of a tile of ``rows``
    rows, ``ptr`` being row ``first``'s and each next one ``stride`` bytes on (a 64-bit add),
    and the pointer of the row after them (no add past the tile's last row)."""
    ptrs = []
    for r in range(first, first + count):
        ptrs.append(ptr)
        if r + 1 < rows:
            ptr = e.add64(ptr, stride, 0)
    return ptrs, ptr


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


def fused_epilogue(e: Emitter, epi: tuple[str, ...], bias_col: SSAValue | None, dw: int = 1):
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
        gelu_k = e.const(f32_bits(-2.0 * math.log2(math.e)))
        gelu_c1 = e.const(f32_bits(0.044715 * math.sqrt(2.0 / math.pi)))
        gelu_c0 = e(gcn.VMovB32Op(f32_bits(math.sqrt(2.0 / math.pi)))).vdst
    if "gelu" in epi or "silu" in epi:
        one = e.const(f32_bits(1.0))
    if "silu" in epi:
        silu_k = e.const(f32_bits(-math.log2(math.e)))

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


def f32_bits(x: float) -> int:
    """The IEEE binary32 bit pattern of x (for literals)."""
    return struct.unpack("<I", struct.pack("<f", x))[0]


def pow2_parts(n: int, largest: int = 16) -> list[int]:
    """n as a sum of power-of-two load widths up to ``largest`` (largest first)."""
    out = []
    w = largest
    while w:
        while n >= w:
            out.append(w)
            n -= w
        w //= 2
    return out


def pow2_runs(n: int, largest: int = 16) -> list[tuple[int, int]]:
    """(width, start) runs covering 0..n-1 with power-of-two widths up to ``largest``."""
    runs, start = [], 0
    for w in pow2_parts(n, largest):
        runs.append((w, start))
        start += w
    return runs


def swizzle_bitmask(and_mask: int = 0x1F, or_mask: int = 0, xor_mask: int = 0) -> int:
    """The 16-bit offset of a ``ds_swizzle_b32`` in bit-mask mode: within each group of 32 lanes,
    lane i reads lane ((i & and_mask) | or_mask) ^ xor_mask.  The fields, as the AMD "Vega"
    Instruction Set Architecture reference guide gives them (section 12.13, DS_SWIZZLE_B32):
    offset[15] = 0 selects the bit-mask mode (1: the quad permute), and_mask = offset[4:0],
    or_mask = offset[9:5], xor_mask = offset[14:10]; LLVM's assembler spells the same patterns
    ``swizzle(BITMASK_PERM, ...)`` / ``swizzle(SWAP, d)`` (docs/AMDGPUModifierSyntax, "swizzle
    pattern").  Each mask is 5 bits (0 .. 31); another value raises ValueError."""
    for name, m in (("and_mask", and_mask), ("or_mask", or_mask), ("xor_mask", xor_mask)):
        if not 0 <= m <= 0x1F:
            raise ValueError(f"ds_swizzle_b32 {name} {m}: a 5-bit lane mask (0 .. 31)")
    return and_mask | or_mask << 5 | xor_mask << 10  # offset[15] = 0: the bit-mask mode


def lane_sums_by_exchange(e: Emitter, acc: list[SSAValue], lanes: SSAValue, tid: SSAValue, wave: SSAValue | None,
                          wave_bytes: int, is_int: bool) -> SSAValue:
    """The 64 lanes' partials of each of the V <= 32 sums ``acc`` (f32, or i32 with ``is_int``)
    added by lane exchanges: lane l < V is left holding sum l (EXEC: ``lanes`` & lanes 0 .. 31
    after it).  The sums, padded with zeros to 32, are halved five times: at partner distance
    d = 16, 8, 4, 2, 1 a lane whose bit d is clear keeps the first half of its values and sends
    the second to lane l ^ d, which keeps the second and sends the first (two ``v_cndmask_b32``,
    one ``ds_swizzle_b32`` bit-mask swap within 32 lanes that touches no LDS memory: AMD Vega ISA,
    DS_SWIZZLE_B32 with xor_mask d: :func:`swizzle_bitmask`), and adds what it gets; a lane's value is then sum
    l mod 32 over its half of the wave, and lane l < 32 adds lane l + 32's through LDS (one
    ``ds_write_b32`` at ``wave`` x ``wave_bytes`` + 4 l: 256 bytes, one ``ds_read_b32``).  Each sum is added in a
    fixed tree of depth 6 (the same result on every run).  Per wave: 31 swizzles and about 95
    VALU instructions.  ``tid``: the lane (0 .. 63); ``wave``: the wave in its workgroup (an
    SGPR; None: one wave, LDS address 0)."""
    add = gcn.VAddU32Op if is_int else gcn.VAddF32Op
    V = len(acc)
    x = list(acc)
    if V < 32:
        zero = e(gcn.VMovB32Op(0)).vdst
        x += [zero] * (32 - V)
    d = 16
    while d:
        h = len(x) // 2
        clear = e(gcn.VCmpGtU32Op(e.const(1), e(gcn.VAndB32Op(d, tid)).vdst)).sdst  # bit d of the lane clear
        send = [e(gcn.VCndmaskB32Op(x[i], x[h + i], clear)).vdst for i in range(h)]
        swap = swizzle_bitmask(xor_mask=d)  # lane i of 32 reads lane i ^ d
        got = [e(gcn.DsSwizzleB32Op(v, offset=swap, comment=f"lane ^ {d}")).vdst for v in send]
        keep = [e(gcn.VCndmaskB32Op(x[h + i], x[i], clear)).vdst for i in range(h)]
        x = [e(add(got[i], keep[i])).vdst for i in range(h)]
        d //= 2
    lane4 = e(gcn.VLshlrevB32Op(2, tid)).vdst
    if wave is not None:
        lane4 = e(gcn.VAddU32Op(e.mul(wave, wave_bytes), lane4)).vdst
    e(gcn.DsWriteB32Op(lane4, x[0], comment="the half-wave sums"))
    e(gcn.SAndB64Op(lanes, e(gcn.VCmpGtU32Op(e.const(32), tid)).sdst, result_type=gcn.exec_type()))
    return e(add(x[0], e(gcn.DsReadB32Op(lane4, offset=128, comment="lane + 32's")).vdst)).vdst
