"""The A-transpose pre-kernel of the f16/int8 dot kernels (``passes/isel/dot.py``).

The dot kernels pair one SGPR of A (P = 2 f16 or P = 4 int8 consecutive values of K) with a
VGPR of B, so they want K contiguous in A.  A stored K x M (layouts ``TN``, ``TT``) has M
contiguous; the dot kernel can pack rows P kk .. P kk + P - 1 into its SGPR operands with SALU
ops (module docstring of ``isel/dot.py``), but only for a static M, lda (and A's batch
stride) that are multiples of P and a tile of P..32 rows, and for int8 that 4x4 byte transpose
costs 10 SALU instructions per 4 dots: the SALU bounds the kernel.  Otherwise the plan runs
first ``<name>_transpose``, which copies A into a workspace laid out M x K, then the NT/NN dot
kernel reads that copy as A (``WorkspaceADotBuilder``: the dot kernel with A's pointer, row
stride and batch stride those of the copy).

**A stored M x K with a static lda (or batch stride) not a multiple of P** (layouts ``NN``,
``NT``; :func:`vlpc.dialects.gemm.a_copied_for_alignment`): the dot kernel's scalar loads would
meet rows that do not start on 4-byte boundaries, so the plan runs the same copy first, the
kernel reading its source with A's two strides swapped (``A[m, k]`` at ``m lda + k`` instead
of ``k lda + m``: lane m of a wavefront reads row m0 + m of A, ``v_mul_lo_u32`` of the lane by
lda as its offset, the tile's values of K at immediate offsets; not coalesced, any lda), and
the dot kernel reads the padded copy as for the transposed case.  An lda or batch stride given
at launch is not copied: it must be a multiple of P (refused at launch in one line naming the
fixes, ``offset_errors``).  The kernel keeps the name ``<name>_transpose`` (role
``transpose``) in both cases.

**B stored N x K with a static ldb (or batch stride) not a multiple of P** (layouts ``NT``,
``TT``; :func:`b_copy_reason`): the same kernel, reading B as it reads an A stored M x K (rows
N instead of M), runs as ``<name>_copy_b`` (role ``copy_b``, grid ``(ceil(N / 64), ceil(K /
64), batch)``) and writes an N x ldw copy; the dot kernel reads B from it
(``WorkspaceADotBuilder`` with ``copies`` holding ``"B"``: B's pointer, ldb and batch stride
those of the copy).  Given at launch, ldb must be a multiple of P as before.

**B stored K x N** (layouts ``NN``, ``TN``) **with a static M of at least**
:data:`B_TRANSPOSE_MIN_M` (64 int8, 256 f16; :func:`b_copy_reason`): the same kernel transposes B (read as an A
stored K x M, rows N instead of M: lane n reads ``B[k, n0 + n]``, coalesced along N) into an
N x ldw region, ``<name>_copy_b``, and the dot kernel reads that copy as a B stored N x K
(``WorkspaceADotBuilder`` with ``copies`` holding ``"B"`` sets its ``b_trans``): one
``global_load_dwordx4`` brings 4 packed dwords of K per lane where the kernel itself would gather
each dword from P rows (f16 two loads, int8 four loads and a ``v_lshl_add_u32``).  The copy reads
and writes B once (K N element bytes each way) and adds a launch: modeled at 4096 x 4096 x 640 on
MI60 (1800 MHz, HBM 1000 MHz) int8 55.1 -> 74.4 % and f16 70.9 -> 90.3 % of the dot peak
(:data:`B_TRANSPOSE_FIGURES`; docs/kernels.md).  A small or launch-time M keeps the gather (a
decode step would read B three times instead of once), as does ``--a-transpose in-kernel``.

**The copy** (per batch entry): ``W[m, k] = A[k, m]`` (``A[m, k]`` for A stored M x K) for k < K, rows of ``ldw = ceil(K / P)
* P`` elements (a multiple of 4 bytes, so every row starts on a dword), the pad ``K <= k <
ldw`` zero (a dot product over it is 0; the dot kernel reads the last K % P values one element
at a time anyway).  ``M x ldw`` elements per batch entry, batch entries back to back.

**The workspace** (the plan's last kernel argument, as for split-K; one buffer for the plan):
a split-K plan's S x M x ldc f32/i32 partials first (offset 0, as without the transpose), then
the copy at ``S M ldc 4`` bytes (S = 1: offset 0); with B copied too, per batch entry A's copy
(M x ldw) then B's (N x ldw), the entries back to back (only A's: M x ldw per entry, as before).
The partials' region is kept when a
row-narrow companion (M at launch below the macro tile's M) computes the product unsplit, so
both kernels find the copy at the same offset.  :meth:`vlpc.kernel.CompiledKernel.workspace_bytes`
sizes it, :meth:`~vlpc.kernel.CompiledKernel.plan` launches ``<name>_transpose`` first with grid
``(ceil(M / 64), ceil(K / 64), batch)``.

**The transpose kernel** (one workgroup per 64 x 64 tile of A, 4 wavefronts): it uses LDS,
as the standard tile transpose does; the GEMM kernel itself keeps the "no LDS" scheme (A in
SGPRs, B in VGPRs).  Lane m of each wavefront reads A[k, m0 + m] for the 16 rows k of its
dwords (``global_load_ushort`` + ``global_load_short_d16_hi``: one dword of two f16 rows;
int8 ``global_load_ubyte`` + ``global_load_ubyte_d16_hi`` into two VGPRs joined by
``v_lshl_add_u32``, as the NN dot kernel packs B): the 64 lanes read 64 consecutive elements
of a row (coalesced; any lda, odd included, as element loads need no alignment).  Rows k >= K
and columns m >= M are not read (EXEC; the registers keep the zero they were given).  The
packed dwords go to LDS by ``ds_write_b32`` (a row of 64 / P + 1 dwords per m: an odd pitch,
so any 32 lanes' writes fall in distinct banks, as do the f16 reads; an int8 read of two
16-dword rows has one 2-way conflict per 32 lanes), a barrier, then each lane reads back
one dword of a row of W (consecutive lanes: consecutive dwords) and ``global_store_dword``
writes whole rows segments of 128 (f16) / 64 (int8) bytes.  Rows m >= M and dwords past ldw
are not written.  The tile's LDS (64 x (64 / P + 1) dwords: 8448 bytes f16, 4352 int8) is
checked against the target's LDS per CU.

**When** (:func:`a_transpose_reason`): A stored K x M goes through the copy when the SALU
packing cannot be used (M, lda or A's batch stride not static multiples of P, a tile of other
than P..32 rows), and where it is modeled faster (:data:`CHOICE_FIGURES`: MI60 @ 1700 MHz,
4096^3, ``benchmarks/dot_layout_shortcut.py``, percent of the dot peak, in-kernel -> copy):
int8 TT 36.8 -> 82.5 %, int8 TN 30.5 -> 36.5 %, f16 TT 69.4 -> 83.5 %.  f16 TN keeps the
in-kernel packing (53.2 % vs 53.6 %; faster without the copy at 1024^3 and 256^3, 154 vs 161 us
and 73 vs 77 us): one ``s_pack`` per dot does not bound it, B's K x N packing does (NN: 53.9 %),
so the copy adds its pass over A and a launch for nothing.  (int8 TN at 256^3: 43 vs 44 us, a
tie kept on the copy's side for one rule per type.)  ``vlpc compile --a-transpose pre|in-kernel``
(option ``a_transpose``) overrides the rule where both are possible.

A split-K plan (workspace mode) with the copy: ``<name>_transpose``, ``<name>``, ``<name>_reduce``,
all taking the same arguments (the workspace pointer last).  The plan surrogate that chooses S
and the macro tile (``vlpc.plan_model``) does not count the copy.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import (DOT_PACK, ELEMENT_BYTES, GemmShape, MatmulOp, a_copied_for_alignment,
                                b_copied_for_alignment)
from vlpc.passes.common import op_error
from vlpc.passes.isel.emit import Emitter, kernel_interface
from vlpc.passes.isel.dot import DotKernelBuilder, dot_kernarg_layout, dot_kernels
from vlpc.targets import GFX906

#: Modeled figures behind the choice (MI60 @ 1700 MHz, 4096^3, percent of the dot peak;
#: ``python benchmarks/dot_layout_shortcut.py --layout L --dtype D --a-transpose in-kernel|pre``):
#: (in-kernel SALU packing, transpose pre-kernel + NT/NN dot kernel).  The copy itself: 49 us
#: (int8) / 71 us (f16) of 2,990 / 5,906 us.  At 1024^3 (us, in-kernel vs copy): int8 TT 159 vs
#: 102, int8 TN 187 vs 160, f16 TT 123 vs 113, f16 TN 154 vs 161; at 256^3: int8 TT 40 vs 30,
#: int8 TN 43 vs 44, f16 TT 58 vs 52, f16 TN 73 vs 77.
CHOICE_FIGURES = {
    ("i8", "TT"): (36.8, 82.5),
    ("i8", "TN"): (30.5, 36.5),
    ("f16", "TT"): (69.4, 83.5),
    ("f16", "TN"): (53.2, 53.6),
}

def in_kernel_refusal(mm: MatmulOp) -> str | None:
    """Why the dot kernel cannot pack A (stored K x M) in SGPRs by SALU ops itself, or None."""
    s = mm.shape()
    p = DOT_PACK[s.dtype]
    rows = mm.get_int_array("micro_tile")[0]
    if s.m < 0 or s.m % p or s.lda < 0 or s.lda % p or (s.batch != 0 and (s.stride_a < 0 or s.stride_a % p)):
        return (f"M, lda (and A's batch stride) are not static multiples of {p}: the in-kernel packing needs "
                f"the tiles' groups of {p} A values on 4-byte boundaries")
    if rows not in tuple(x for x in (2, 4, 8, 16, 32) if x >= p):
        return f"a tile of {rows} rows (the in-kernel packing takes {p}..32 rows, a power of two)"
    return None


def a_transpose_reason(mm: MatmulOp, mode: str = "auto") -> str | None:
    """Why the plan of ``mm`` (f16/i8) copies A into an M x K workspace first, or None: A is
    stored M x K with lda and batch stride multiples of P or given at launch, or K x M packed
    by the dot kernel itself.  A stored M x K with a static lda or batch stride that is not a
    multiple of P is always copied (whatever ``mode``).  ``mode``: ``auto`` (the rule,
    module docstring "When"), ``pre`` (always the copy), ``in-kernel`` (the copy only where the
    kernel cannot pack A): ``vlpc compile --a-transpose``."""
    lay = mm.layout.data
    if lay[0] != "T":
        s = mm.shape()
        if not a_copied_for_alignment(lay, s.dtype, s.lda, s.batch, s.stride_a):
            return None
        p = DOT_PACK[s.dtype]
        return (f"A stored M x K with lda={s.lda}" + (f", batch stride {s.stride_a}" if s.batch != 0 else "") +
                f" (static): its rows do not all start on 4-byte boundaries (lda a multiple of {p}), "
                "the dot kernel reads a padded copy")
    why = in_kernel_refusal(mm)
    if why is not None:
        return why
    if mode != "auto":
        return "asked for (--a-transpose pre)" if mode == "pre" else None
    dtype = mm.shape().dtype
    if dtype == "i8" or lay == "TT":
        inside, pre = CHOICE_FIGURES[(dtype, lay)]
        return (f"modeled faster: {dtype} {lay} 4096^3 at {pre} % of the dot peak with the copy, "
                f"{inside} % packing A in the kernel")
    return None


#: The smallest static M, per element type, from which B stored K x N (layouts ``NN``, ``TN``) is
#: transposed into an N x K copy first (:func:`b_copy_reason`): the copy reads and writes B once
#: (and costs a launch), the dot kernel then reads B's copy as quads along K instead of gathering
#: P rows per dword.  Modeled on MI60 (1800 MHz, HBM 1000 MHz), M x 2048 x 2048, us with the copy
#: vs gathering in the kernel (``vlpc bench -f gemm -r h -m 2048 -n M -k 2048 --gpu mi60
#: --a-transpose pre|in-kernel``; int8 ``-f gemm_ex`` with i8 inputs, i32 C): int8 M = 32 38.3 vs
#: 25.6, M = 64 33.3 vs 41.6, M = 128 37.3 vs 52.4, M = 256 74.6 vs 82.2; f16 M = 64 55.0 vs 39.9,
#: M = 128 76.2 vs 55.2, M = 256 96.4 vs 99.4.
B_TRANSPOSE_MIN_M = {"i8": 64, "f16": 256}

#: Modeled figures behind the B transpose (MI60 @ 1800 MHz, HBM 1000 MHz, 4096 x 4096 x 640, percent
#: of the dot peak; ``vlpc bench -f gemm -r h -m 4096 -n 4096 -k 640 --gpu mi60``, int8 ``-f gemm_ex``
#: with i8 inputs and i32 C, layout NN, 32x64 tiles): (B gathered in the kernel: ``--a-transpose
#: in-kernel``, B transposed first).
B_TRANSPOSE_FIGURES = {
    "i8": (55.1, 74.4),
    "f16": (70.9, 90.3),
}


def b_copy_reason(mm: MatmulOp, mode: str = "auto") -> str | None:
    """Why the plan of ``mm`` (f16/i8) copies B into an N x ceil(K / P) P workspace region first
    (``<name>_copy_b``), or None: B stored N x K with a static ldb or B batch stride that is not
    a multiple of P (:func:`vlpc.dialects.gemm.b_copied_for_alignment`), or B stored K x N
    (layouts ``?N``) with a static M of at least :data:`B_TRANSPOSE_MIN_M` (64 int8, 256 f16; the copy is then a
    transpose, and the dot kernel reads B as for layout ``?T``: modeled faster,
    :data:`B_TRANSPOSE_FIGURES`; ``mode`` ``in-kernel``, ``vlpc compile --a-transpose in-kernel``,
    keeps the gather in the kernel, ``pre`` copies B whatever M)."""
    s = mm.shape()
    if s.dtype not in DOT_PACK or s.b_format:
        return None
    if mm.layout.data[1] == "N":
        if mode == "pre":
            return "asked for (--a-transpose pre): B stored K x N is transposed into an N x K copy first"
        least = B_TRANSPOSE_MIN_M[s.dtype]
        if mode == "in-kernel" or s.m < least:
            return None
        inside, pre = B_TRANSPOSE_FIGURES[s.dtype]
        return (f"B stored K x N, M = {s.m} >= {least}: the dot kernel reads an N x K copy (quads along K) "
                f"instead of gathering {DOT_PACK[s.dtype]} rows per dword; modeled faster ({s.dtype} 4096 x 4096 x 640 "
                f"at {pre} % of the dot peak with the copy, {inside} % gathering in the kernel)")
    if not b_copied_for_alignment(mm.layout.data, s.dtype, s.ldb, s.batch, s.stride_b):
        return None
    return (f"B stored N x K with ldb={s.ldb}" + (f", batch stride {s.stride_b}" if s.batch != 0 else "") +
            f" (static): its rows do not all start on 4-byte boundaries (ldb a multiple of {DOT_PACK[s.dtype]}), "
            "the dot kernel reads a padded copy")


def plan_copies(mm: MatmulOp, mode: str = "auto") -> tuple[str, ...]:
    """The operands (``"A"``, ``"B"``) the plan of ``mm`` copies into the workspace first."""
    return tuple(x for x, why in (("A", a_transpose_reason(mm, mode)), ("B", b_copy_reason(mm, mode)))
                 if why is not None)


def workspace_ld(k: int, pack: int) -> int:
    """The copy's row stride in elements: K rounded up to P (-1 when K is given at launch)."""
    return -(-k // pack) * pack if k >= 0 else -1


def _static_or_load(e: Emitter, kp: SSAValue, kargs: dict, name: str, static: int) -> SSAValue | int:
    if static >= 0:
        return static
    return e(gcn.SLoadDwordOp(kp, kargs[name], comment=f"kernarg {name}")).sdst


def _mul(e: Emitter, x: SSAValue | int, y: SSAValue | int) -> SSAValue | int:
    if isinstance(x, int) and isinstance(y, int):
        return x * y
    if isinstance(x, int):
        x, y = y, x
    return e.mul(x, y)  # type: ignore[arg-type]


def _ldw(e: Emitter, kp: SSAValue, kargs: dict, s: GemmShape, pack: int) -> SSAValue | int:
    """The copy's row stride (elements)."""
    if s.k >= 0:
        return workspace_ld(s.k, pack)
    k = e(gcn.SLoadDwordOp(kp, kargs["K"], comment="kernarg K")).sdst
    t = e(gcn.SAddU32Op(k, pack - 1)).sdst
    return e(gcn.SAndB32Op(t, -pack, comment=f"ldw = K rounded up to {pack}")).sdst


def copy_base(e: Emitter, kp: SSAValue, kargs: dict, s: GemmShape, pack: int, ws_split: int,
              wg_z: SSAValue | None, operand: str = "A",
              copies: tuple[str, ...] = ("A",)) -> tuple[SSAValue, SSAValue | int, SSAValue | int]:
    """(the base of ``operand``'s copy for this workgroup's batch entry (an SGPR pair), its rows
    (M or N), ldw): the workspace pointer + S M ldc 4 (a split-K plan's partials) + batch *
    (M [A copied] + N [B copied]) * ldw * element bytes (a batch entry's copies back to back,
    A's first) + M ldw element bytes for B's copy after A's."""
    eb = ELEMENT_BYTES[s.dtype]
    ws = e(gcn.SLoadDwordx2Op(kp, kargs["workspace"], comment="kernarg workspace")).sdst
    m = _static_or_load(e, kp, kargs, "M", s.m)
    if ws_split > 1:
        ldc = _static_or_load(e, kp, kargs, "ldc", s.ldc)
        part = _mul(e, _mul(e, m, ldc), 4 * ws_split)
        ws = e.add64(ws, e.reg(part) if isinstance(part, int) else part, 0,
                     comment=f"{'A' if 'A' in copies else 'B'}'s copy after the partials")
    ldw = _ldw(e, kp, kargs, s, pack)
    n = _static_or_load(e, kp, kargs, "N", s.n) if "B" in copies else 0
    rows: SSAValue | int = m if "A" in copies else 0
    if "B" in copies:
        rows = (rows + n if isinstance(rows, int) and isinstance(n, int) else
                n if isinstance(rows, int) and rows == 0 else e(gcn.SAddU32Op(e.reg(rows), e.reg(n))).sdst)
    if s.batch != 0:
        per = _mul(e, _mul(e, rows, ldw), eb)
        lo, hi = e.mul64(wg_z, per)  # type: ignore[arg-type]
        ws = e.add64(ws, lo, hi, comment=f"{operand}'s copy of the batch entry")
    if operand == "B" and "A" in copies:
        a_bytes = _mul(e, _mul(e, m, ldw), eb)
        ws = e.add64(ws, e.reg(a_bytes) if isinstance(a_bytes, int) else a_bytes, 0, comment="B's copy after A's")
    return ws, (m if operand == "A" else n), ldw


class WorkspaceADotBuilder(DotKernelBuilder):
    """The NT/NN dot kernel of a layout ``T?`` matmul reading A from the copy the transpose
    kernel wrote (rows of ``ldw`` elements; module docstring).  ``ws_split``: the plan's S
    (the copy follows S x M x ldc partials when S > 1, also in the unsplit row-narrow kernels)."""

    def __init__(self, mm: MatmulOp, name: str, forwarding: bool = True, schedule: str = "default",
                 role: str = "main", *, ws_split: int = 1, copies: tuple[str, ...] = ("A",)):
        super().__init__(mm, name, forwarding=forwarding, schedule=schedule, role=role)
        self.copies = copies
        if "A" in copies:
            self.a_trans = False  # the copy is M x K
        self.ws_split = ws_split
        s = self.shape
        self.caller_shape = s
        ldw = workspace_ld(s.k, self.pack)
        rows = (s.m if "A" in copies else 0) + (s.n if "B" in copies else 0)
        known = ldw >= 0 and ("A" not in copies or s.m >= 0) and ("B" not in copies or s.n >= 0)
        stride = (rows * ldw if known else -1) if s.batch != 0 else 0
        if "A" in copies:
            self.shape = replace(self.shape, lda=ldw, stride_a=stride)
        if "B" in copies:
            self.shape = replace(self.shape, ldb=ldw, stride_b=stride)
            self.b_trans = True  # the copy is N x K (B stored K x N: transposed by the copy)
            self.late = schedule != "cover"

    def kernargs(self) -> list[dict]:
        return dot_kernarg_layout(self.shape, workspace=True, bias=self.mm.bias is not None)

    def _arg(self, e: Emitter, kp: SSAValue, name: str, static: int) -> SSAValue | int:
        if static < 0 and ((name == "lda" and "A" in self.copies) or (name == "ldb" and "B" in self.copies)):
            kargs = {a["name"]: a["offset"] for a in self.kernargs()}  # the copy's row stride, from K
            return _ldw(e, kp, kargs, self.shape, self.pack)
        return super()._arg(e, kp, name, static)

    def _a_base(self, e: Emitter, kp: SSAValue, kargs: dict, wg_z: SSAValue | None, batch_base) -> SSAValue:
        if "A" not in self.copies:
            return super()._a_base(e, kp, kargs, wg_z, batch_base)
        return copy_base(e, kp, kargs, self.shape, self.pack, self.ws_split, wg_z, "A", self.copies)[0]

    def _b_base(self, e: Emitter, kp: SSAValue, kargs: dict, wg_z: SSAValue | None, batch_base) -> SSAValue:
        if "B" not in self.copies:
            return super()._b_base(e, kp, kargs, wg_z, batch_base)
        return copy_base(e, kp, kargs, self.shape, self.pack, self.ws_split, wg_z, "B", self.copies)[0]

    def build(self) -> gcn.KernelOp:
        kernel = super().build()
        li = kernel.attributes["launch"].data
        extra = {}
        if "A" in self.copies:
            extra.update({"static_stride_a": IntegerAttr(self.caller_shape.stride_a, i64),
                          "a_copy_ld": IntegerAttr(self.shape.lda, i64)})
        if "B" in self.copies:
            extra.update({"static_stride_b": IntegerAttr(self.caller_shape.stride_b, i64),
                          "b_copy_ld": IntegerAttr(self.shape.ldb, i64)})
        kernel.attributes["launch"] = DictionaryAttr({**li, **extra})
        return kernel


#: The transpose kernel's tile: one wavefront's lanes along M, as many values of K.
TILE = GFX906.wavefront_size
#: Wavefronts per workgroup of the transpose kernel.
WAVES = 4


def transpose_lds_bytes(pack: int) -> int:
    """LDS of the transpose kernel's tile: TILE rows of TILE / P + 1 dwords (an odd pitch)."""
    return TILE * (TILE // pack + 1) * 4


def build_transpose(mm: MatmulOp, name: str, ws_split: int, operand: str = "A",
                    copies: tuple[str, ...] = ("A",)) -> gcn.KernelOp:
    """``<name>_transpose``: A (K x M for layouts ``T?``, M x K for ``N?``; lda, batch stride)
    into the workspace copy (M x ldw, zero pad); grid (ceil(M / TILE), ceil(K / TILE), batch),
    TILE x WAVES work-items.  Raises a located error when the tile's LDS exceeds the CU's.
    ``operand`` ``"B"``: ``<name>_copy_b``, B (N x K, ldb, its batch stride) into its region
    (N x ldw; grid x over N); ``copies``: the operands the plan copies (workspace layout)."""
    s = mm.shape()
    P = DOT_PACK[s.dtype]
    # A stored K x M (A[m, k] at k lda + m), else M x K (m lda + k); B (N x K) as A M x K
    k_rows = (operand == "A" and mm.layout.data[0] == "T") or (operand == "B" and mm.layout.data[1] == "N")
    src_rows = s.m if operand == "A" else s.n
    T = TILE  # tile: T values of M x T values of K = T / P dwords of K
    lds = transpose_lds_bytes(P)
    if lds > GFX906.lds_bytes_per_cu:
        raise op_error(mm, f"the A transpose tile needs {lds} bytes of LDS, the CU has {GFX906.lds_bytes_per_cu}")
    kargs_list = dot_kernarg_layout(s, workspace=True, bias=mm.bias is not None)
    kargs = {a["name"]: a["offset"] for a in kargs_list}
    batched = s.batch != 0
    types = [gcn.SGPRType.at(0, 2), gcn.SGPRType.at(2), gcn.SGPRType.at(3)]
    roles = ["kernarg_segment_ptr", "workgroup_id_x", "workgroup_id_y"]
    if batched:
        types.append(gcn.SGPRType.at(4))
        roles.append("workgroup_id_z")
    entry = Block(arg_types=[*types, gcn.VGPRType.at(0), gcn.exec_type()])
    kp, wg_x, wg_y = entry.args[:3]
    wg_z = entry.args[3] if batched else None
    tid, exec0 = entry.args[-2:]
    e = Emitter(entry)

    tile = _copy_prologue(e, kp, kargs, s, operand, copies, ws_split, k_rows, (wg_x, wg_y, wg_z), tid, exec0)
    full, m_edge = _copy_read_tile(tile, s, k_rows, src_rows)
    _copy_write(tile, full, m_edge, P)

    kernel = gcn.KernelOp(name, Region(entry))
    kernel.attributes["lds_bytes"] = IntegerAttr(lds, i64)
    kernel_interface(kernel, mm, [*roles, "workitem_id_x", "exec"], kargs_list, T * WAVES, (T, T), 1,
                     role="transpose" if operand == "A" else "copy_b", batch=s.batch, c_dtype=s.c_type, k_pack=P,
                     static_stride_a=s.stride_a, static_stride_b=s.stride_b, static_stride_c=s.stride_c,
                     ws_split=ws_split, tile_m=T, tile_k=T)
    return kernel


@dataclass
class _CopyTile:
    """What the transpose kernel's prologue (:func:`_copy_prologue`) leaves its two phases: the
    emitter ``e``, the work-item id ``tid`` and EXEC at entry ``exec0``; workgroup id y
    ``wg_y`` (the tile's K); the source's rows ``m_val`` (M, or N for B) and K ``k_val``; the
    copy's row ``ldw`` (elements) and ``ldw_b`` (bytes); the tile's first row ``m0`` and first K
    ``k0``; the source's row ``lda_b`` (bytes); the tile's source ``a_tile`` and copy ``w_tile``
    (SGPR pairs); ``eb`` bytes per element and ``pack`` P elements per dword."""

    e: Emitter
    tid: SSAValue
    exec0: SSAValue
    wg_y: SSAValue
    m_val: SSAValue | int
    k_val: SSAValue | int
    ldw: SSAValue | int
    ldw_b: SSAValue | int
    m0: SSAValue
    k0: SSAValue
    lda_b: SSAValue | int
    a_tile: SSAValue
    w_tile: SSAValue
    eb: int
    pack: int


def _copy_prologue(e: Emitter, kp: SSAValue, kargs: dict, s: GemmShape, operand: str, copies: tuple[str, ...],
                   ws_split: int, k_rows: bool, wg: tuple[SSAValue, SSAValue, SSAValue | None], tid: SSAValue,
                   exec0: SSAValue) -> _CopyTile:
    """The transpose kernel's arguments and the tile's source and copy bases (:class:`_CopyTile`)."""
    P, eb = DOT_PACK[s.dtype], ELEMENT_BYTES[s.dtype]
    src_ld, src_stride = (s.lda, s.stride_a) if operand == "A" else (s.ldb, s.stride_b)
    ld_name, st_name = ("lda", "stride_a") if operand == "A" else ("ldb", "stride_b")
    T, D = TILE, TILE // P
    wg_x, wg_y, wg_z = wg
    batched = wg_z is not None
    w_base, m_val, ldw = copy_base(e, kp, kargs, s, P, ws_split, wg_z, operand, copies)
    k_val = _static_or_load(e, kp, kargs, "K", s.k)
    lda = _static_or_load(e, kp, kargs, ld_name, src_ld)
    a_ptr = e(gcn.SLoadDwordx2Op(kp, kargs[operand], comment=f"kernarg {operand}")).sdst
    if batched:
        sa = _static_or_load(e, kp, kargs, st_name, src_stride)
        lo, hi = e.mul64(wg_z, e.reg(_mul(e, sa, eb)))  # type: ignore[arg-type]
        a_ptr = e.add64(a_ptr, lo, hi, comment="A + batch * stride_a")
    m0 = e.mul(wg_x, T)
    k0 = e.mul(wg_y, T)
    lda_b = _mul(e, lda, eb)  # a row of A in bytes
    if k_rows:
        lo, hi = e.mul64(k0, e.reg(lda_b))
        a_tile = e.add64(e.add64(a_ptr, lo, hi, comment="A + k0 * lda"), e.mul(m0, eb), 0, comment="A tile = + m0")
    else:  # A stored M x K: the strides of m and k swapped
        lo, hi = e.mul64(m0, e.reg(lda_b))
        a_tile = e.add64(e.add64(a_ptr, lo, hi, comment="A + m0 * lda"), e.mul(k0, eb), 0, comment="A tile = + k0")
    ldw_b = _mul(e, ldw, eb)  # a row of the copy in bytes
    w_tile = e.add64(w_base, e.mul(m0, ldw_b), 0, comment="copy + m0 rows")
    w_tile = e.add64(w_tile, e.mul(wg_y, D * 4), 0, comment="copy tile = + k0 values")
    return _CopyTile(e, tid, exec0, wg_y, m_val, k_val, ldw, ldw_b, m0, k0, lda_b, a_tile, w_tile, eb, P)


def _copy_read_tile(tile: _CopyTile, s: GemmShape, k_rows: bool, src_rows: int) -> tuple[SSAValue, bool]:
    """The tile's source values into LDS, packed P to a dword (the loads over its K rows, then
    an ``s_barrier``); returns (EXEC of the launch's lanes, whether M has an edge)."""
    e, tid, exec0, m_val, k_val = tile.e, tile.tid, tile.exec0, tile.m_val, tile.k_val
    m0, k0, lda_b, a_tile, eb, P = tile.m0, tile.k0, tile.lda_b, tile.a_tile, tile.eb, tile.pack
    T, D = TILE, TILE // P
    pitch = D + 1  # LDS dwords per m
    # ---- read A: lane m, wavefront w: the dwords kk = w + WAVES i of the tile's rows of K ----
    m_edge = not (src_rows >= 0 and src_rows % T == 0)
    k_edge = not (s.k >= 0 and s.k % T == 0)
    full = e(gcn.SAndB64Op(exec0, -1)).sdst  # the launch's lanes (EXEC is rewritten below)
    lane = e(gcn.VAndB32Op(T - 1, tid)).vdst
    wave = e(gcn.VReadfirstlaneB32Op(e(gcn.VLshrrevB32Op(T.bit_length() - 1, tid)).vdst)).sdst
    if m_edge:
        lanes_m = e(gcn.VCmpGtU32Op(e.reg(m_val), e(gcn.VAddU32Op(m0, lane)).vdst)).sdst
        lanes_m = e(gcn.SAndB64Op(full, lanes_m)).sdst
    else:
        lanes_m = full
    if k_rows:
        voff = lane if eb == 1 else e(gcn.VLshlrevB32Op(eb.bit_length() - 1, lane)).vdst
        wave_rows = e.mul(wave, P)
        a_wave = e.add64(a_tile, e.mul(wave_rows, lda_b) if not isinstance(lda_b, int) else
                         e(gcn.SMulI32Op(wave_rows, lda_b)).sdst, 0, comment="A + the wavefront's first row")
        k_step: SSAValue | int = lda_b  # bytes from one K row of the tile to the next
    else:  # lane m reads row m0 + m of A (M x K): one element of K after another
        voff = e(gcn.VMulLoU32Op(lane, e.reg(lda_b))).vdst  # lane m: A row m0 + m
        wave_rows = e.mul(wave, P)
        a_wave = e.add64(a_tile, e.mul(wave_rows, eb) if eb > 1 else wave_rows, 0,
                         comment="A + the wavefront's first value of K")
        k_step = eb
    if k_edge:  # rows k >= K are not read: rem = K - (k0 + P w) rows left (0 when past K)
        kw = e(gcn.SAddU32Op(k0, wave_rows, comment="first K row of the wavefront")).sdst
        rem = e(gcn.SSubU32Op(e(gcn.SMaxU32Op(e.reg(k_val), kw)).sdst, kw, comment="K rows left")).sdst
        none = e(gcn.SAndB64Op(full, 0)).sdst
    per_lane = D // WAVES  # dwords of K each lane packs
    # loads: the first value of every register before the d16_hi loads that complete them
    # (the waits before those stay partial); int8: rows 0 and 2 of a dword into one VGPR, 1 and 3
    # into the other
    firsts = (0,) if P == 2 else (0, 1)
    # the zeros masked-off lanes keep, written while EXEC is still the launch's
    vals: dict = {(i, h): e(gcn.VMovB32Op(0)).vdst for i in range(per_lane) for h in range(len(firsts))}
    for j_set in (firsts, (1,) if P == 2 else (2, 3)):
        for i in range(per_lane):
            for j in j_set:
                c = WAVES * P * i + j  # K row of the tile = P wave + c
                imm = c * k_step if isinstance(k_step, int) else None
                if imm is not None and imm <= GFX906.global_offset_max:
                    base, off = a_wave, imm
                else:
                    base, off = e.add64(a_wave, imm if imm is not None else e.mul(k_step, c), 0), 0
                if k_edge:
                    e(gcn.SCmpLeU32Op(rem, c))  # row P w + c past K?
                    e(gcn.SCselectB64Op(none, lanes_m, result_type=gcn.exec_type()))
                else:
                    e(gcn.SAndB64Op(lanes_m, -1, result_type=gcn.exec_type()))
                text = f"A row k0 + {P}w + {c}"
                h = (i, 0 if P == 2 else j % 2)  # the VGPR of the value
                first = gcn.GlobalLoadUshortOp if P == 2 else gcn.GlobalLoadUbyteOp
                hi = gcn.GlobalLoadShortD16HiOp if P == 2 else gcn.GlobalLoadUbyteD16HiOp
                if j in firsts:
                    vals[h] = e(first(voff, base, offset=off, comment=text, merge=vals[h])).vdst
                else:
                    vals[h] = e(hi(voff, base, offset=off, comment=text, merge=vals[h])).vdst
    raw = [[vals[(i, h)] for h in range(len(firsts))] for i in range(per_lane)]
    e(gcn.SAndB64Op(full, -1, result_type=gcn.exec_type()))  # every lane packs and writes LDS
    packed = [r[0] if P == 2 else e(gcn.VLshlAddU32Op(r[1], 8, r[0])).vdst for r in raw]
    # LDS: dword (m, kk) at (m * pitch + kk) * 4; this lane's kk = wave + WAVES i
    w_addr = e(gcn.VMulLoU32Op(lane, e.const(pitch * 4))).vdst
    w_addr = e(gcn.VAddU32Op(e.mul(wave, 4), w_addr)).vdst
    for i, v in enumerate(packed):
        e(gcn.DsWriteB32Op(w_addr, v, offset=WAVES * 4 * i, comment=f"dword wave + {WAVES * i} of the lane's m"))
    e(gcn.SBarrierOp(comment="the tile is in LDS"))

    return full, m_edge


def _copy_write(tile: _CopyTile, full: SSAValue, m_edge: bool, P: int) -> None:
    """The copy's rows from LDS to the workspace (its edges masked), ending the program."""
    e, tid, wg_y, m_val, m0 = tile.e, tile.tid, tile.wg_y, tile.m_val, tile.m0
    ldw, ldw_b, w_tile = tile.ldw, tile.ldw_b, tile.w_tile
    T, D = TILE, TILE // P
    pitch = D + 1  # LDS dwords per m
    # ---- write the copy: lane (r, c) = (tid / D, tid % D): dword c of row r + R i ----
    R = T * WAVES // D  # rows of the copy per pass
    col = e(gcn.VAndB32Op(D - 1, tid)).vdst
    row = e(gcn.VLshrrevB32Op(D.bit_length() - 1, tid)).vdst
    r_addr = e(gcn.VMulLoU32Op(row, e.const(pitch * 4))).vdst
    r_addr = e(gcn.VLshlAddU32Op(col, 2, r_addr)).vdst
    words = [e(gcn.DsReadB32Op(r_addr, offset=R * i * pitch * 4, comment=f"row r + {R * i}")).vdst
             for i in range(T // R)]
    voff_w = e(gcn.VMulLoU32Op(row, e.reg(ldw_b))).vdst
    voff_w = e(gcn.VLshlAddU32Op(col, 2, voff_w)).vdst
    kd = e(gcn.SLshrB32Op(e.reg(ldw), P.bit_length() - 1, comment="dwords of a copy row")).sdst \
        if not isinstance(ldw, int) else ldw // P
    col_edge = not (isinstance(kd, int) and kd % D == 0)
    if col_edge:
        kd_left = e(gcn.SSubU32Op(e.reg(kd), e.mul(wg_y, D), comment="dwords of the row from the tile on")).sdst
        cols = e(gcn.SAndB64Op(full, e(gcn.VCmpGtU32Op(kd_left, col)).sdst)).sdst
    else:
        cols = full
    if m_edge:
        rows_left = e(gcn.SSubU32Op(e.reg(m_val), m0, comment="rows of the copy from the tile on")).sdst
    for i, v in enumerate(words):
        if m_edge:
            ok = e(gcn.VCmpGtU32Op(rows_left, e(gcn.VAddU32Op(e.const(R * i), row)).vdst)).sdst
            e(gcn.SAndB64Op(cols, ok, result_type=gcn.exec_type()))
        else:
            e(gcn.SAndB64Op(cols, -1, result_type=gcn.exec_type()))
        step = _mul(e, ldw_b, R * i)
        base = w_tile if step == 0 else e.add64(w_tile, e.reg(step) if isinstance(step, int) else step, 0)
        e(gcn.GlobalStoreDwordOp(voff_w, v, base))  # row m0 + r + R i of the copy
    e(gcn.SEndpgmOp())


def transpose_dot_kernels(mm: MatmulOp, name: str, strategy: str = "sqc", schedule: str = "default",
                          forwarding: bool = True, rows_tiles: tuple[int, ...] = (8, 1),
                          a_transpose: str = "auto") -> list[gcn.KernelOp]:
    """The kernels of a plan that copies A first: ``<name>_transpose``, then those of
    :func:`dot_kernels` built by :class:`WorkspaceADotBuilder` (main, ``_reduce`` of a split-K
    plan, row-narrow companions); the launch order in every kernel's launch info ``plan``."""
    import functools

    split = mm.get_int("split_k") or 1
    copies = plan_copies(mm, a_transpose)
    builder = functools.partial(WorkspaceADotBuilder, ws_split=split, copies=copies)
    kernels = dot_kernels(mm, name, strategy, schedule, forwarding, rows_tiles, builder=builder)
    pres = [build_transpose(mm, f"{name}_transpose" if x == "A" else f"{name}_copy_b", split, x, copies)
            for x in copies]
    plan = [p.sym_name.data for p in pres] + [name] + ([f"{name}_reduce"] if split > 1 else [])
    kernels[:0] = pres
    names = {("a_transpose" if x == "A" else "b_copy"): StringAttr(p.sym_name.data) for x, p in zip(copies, pres)}
    for k in kernels:
        li = k.attributes["launch"].data
        k.attributes["launch"] = DictionaryAttr({**li, "plan": StringAttr(",".join(plan)), **names})
    return kernels


def describe_a_copy(mm: MatmulOp, name: str, mode: str = "auto") -> tuple[str, str] | None:
    """``vlpc compile --print-plan``: (the pre-kernels' entries in the kernel list, the lines on
    the copies' workspace) of a plan that copies A and/or B first, or None."""
    s = mm.shape()
    if s.dtype not in DOT_PACK or mm.get_int_array("micro_tile") is None:
        return None
    copies = plan_copies(mm, mode)
    if not copies:
        return None
    p, eb = DOT_PACK[s.dtype], ELEMENT_BYTES[s.dtype]
    nb = 1 if s.batch == 0 else s.batch
    gy = str(-(-s.k // TILE)) if s.k >= 0 else f"ceil(K/{TILE})"
    gz = 1 if s.batch == 0 else (s.batch if s.batch > 0 else "batch")
    entries, lines = [], []
    for x in copies:
        rows, rname = (s.m, "M") if x == "A" else (s.n, "N")
        size = (f"{nb * rows * workspace_ld(s.k, p) * eb} bytes" if min(rows, s.k, nb) >= 0 else
                "allocated at launch")
        gx = str(-(-rows // TILE)) if rows >= 0 else f"ceil({rname}/{TILE})"
        kname = f"{name}_transpose" if x == "A" else f"{name}_copy_b"
        entries.append(f"{kname} (grid {gx}x{gy}x{gz}, LDS {transpose_lds_bytes(p)} bytes)")
        if x == "A":
            why = a_transpose_reason(mm, mode)
            stored = "K x M" if mm.layout.data[0] == "T" else "M x K"
            lines.append(f"  A copy (A stored {stored} -> M x ceil(K/{p})*{p} "
                         f"{s.dtype}, after any split-K partials): {size}; {why}")
        else:
            stored = "K x N" if mm.layout.data[1] == "N" else "N x K"
            lines.append(f"  B copy (B stored {stored} -> N x ceil(K/{p})*{p} {s.dtype}, after A's copy if any): "
                         f"{size}; {b_copy_reason(mm, mode)}")
    return ", then ".join(entries), "\n".join(lines)
