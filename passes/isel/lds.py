"""``convert-gemm-to-gcn{strategy=lds}``: the legacy LDS-tiled SGEMM (and DGEMM) of *An Alternative
SGEMM on VEGA*, section 1 (docs/references.md).

The comparison kernel for the "very low power" scheme: the workgroup stages A and
B tiles through LDS and every work-item computes an 8x8 micro tile of C from
register fragments, the way most GPU SGEMMs (maxas, MAGMA, rocBLAS' legacy
kernels) work.  It uses the same macro tiles, the same kernel ABI (kernarg
layout, launch attributes, ``arg_roles``) and the same passes after instruction
selection as ``strategy=sqc``, so both run on the same problem and the emulator
can compare their register, LDS and barrier traffic (``vlpc report``).

Per workgroup (macro tile 64 x N_t, N_t = 64, 128 or 256; N_t work-items, so the
workgroup size is the sqc kernel's):

* Work-item t computes C rows ``8*tm .. 8*tm+7`` and columns ``8*tn .. 8*tn+7`` of the
  tile, with ``tm = t % 8`` and ``tn = t / 8``: 64 accumulators.
* K advances in *stages* of ``D = k_step / 2`` values.  For a stage the workgroup
  reads A (64 x D) and B (N_t x D) from global memory with ``global_load_dword*``:
  work-item t loads B row t (D values, ``global_load_dwordx4``) and 64*D/N_t
  consecutive values of one A row.  It writes them, transposed to K-major, into an
  LDS tile with ``ds_write2st64_b32`` (As[k][m], Bs[k][n]), so that each k row of a
  tile is contiguous.
* Double-buffered LDS: stage s lives in buffer s % 2.  While the work-items
  compute stage s from buffer s % 2, the global loads of stage s + 2 are in flight
  and the values of stage s + 1 (loaded during stage s - 1) are written into the
  other buffer.  One ``s_barrier`` per stage separates the writes from the reads
  (``gcn-insert-waitcnt`` retires the LDS writes with ``lgkmcnt(0)`` before it).
  The K loop runs once per K step, two stages (one per buffer), so the buffer
  offsets are immediates and no register toggles.
* For each k: ``ds_read_b128`` x 2 for A (8 rows) and x 2 for B (8 columns) from the
  K-major tiles, issued one k ahead of the FMAs that use them (register fragments
  double-buffered too, so the FMAs of k cover the reads of k + 1; LDS results
  return in order, the waits are ``lgkmcnt(N)``), then 64 ``v_fma_f32 vC, vA, vB,
  vC`` with VGPR operands only, row by row.
* Like the sqc kernel, the prefetch offset is clamped (``s_min_u32``): in the last
  K step the "next" stage re-reads the last one instead of reading past K; its LDS
  write lands in a buffer nobody reads any more.
* Epilogue: C = alpha * acc + beta * C with ``global_load_dwordx4`` /
  ``global_store_dwordx4`` (8 contiguous columns per row and work-item).

Resources of the default 64x256 kernel: 20 KiB of LDS per workgroup (2 buffers of
(64 + 256) x 8 floats), 112 VGPRs: 2 waves per SIMD, limited by VGPRs
(``vlpc compile -v`` prints it; the pipeline gives this strategy a budget of 2
waves per SIMD unless ``waves-per-simd`` says otherwise).

f64 (DGEMM).  The element type is a parameter (``ELEMENT``, ``MICRO``); for f64 the
same structure works on doubles (VGPR pairs, 8-byte LDS elements):

* Micro tile 4x8 doubles (``MICRO["f64"]``): 32 accumulator pairs = 64 VGPRs, as
  many as the f32 kernel's 8x8.  An 8x8 tile of doubles would need 128 VGPRs for the
  accumulators alone.  Work-items stay 8 along M (``TM_N``), so the macro tile is
  32 x N_t, N_t = 64, 128 or 256 with N_t work-items: exactly gemm-tile's default f64
  tile (32x256, or narrower when it picks N_t from a small N).  Other f64 macro tiles
  (e.g. 64x256) are refused with a located diagnostic.
* Stages of D = k_step / 2 doubles (4 with the default k-step 8).  A (32 x D doubles
  = 256 dwords with D = 4) is loaded by dwords: with 256 work-items each loads one
  dword, half of a double, with ``global_load_dword`` and writes it with
  ``ds_write_b32`` to its place in As[k][m] (with fewer work-items or a larger D,
  whole doubles: ``global_load_dwordx2``/``x4`` and ``ds_write_b64``).  B row t
  (D doubles) comes with ``global_load_dwordx4`` and goes to Bs[k][t] with
  ``ds_write2st64_b64`` (two doubles 64 elements = 512 bytes apart per instruction).
* Per k: ``ds_read_b128`` x 2 for A (4 doubles) and x 4 for B (8 doubles), then 32
  ``v_fma_f64 vC, vA, vB, vC`` on VGPR pairs, column by column.  Double-buffering
  both fragments as the f32 kernel does would need 48 fragment VGPRs (about 127 in
  all, at the edge of the 128 of 2 waves), so only A (8 VGPRs) is read a whole k
  ahead; each B quad (2 columns) of k + 1 is read right after the last FMA that
  uses that quad at k, into the registers it frees, so 24 v_fma_f64 (half rate on
  gfx906) cover every B read, and the first FMAs of k + 1 wait with ``lgkmcnt(N)``
  for the oldest reads only.
* Epilogue: alpha and beta are doubles (``kernarg_layout("f64")``: 8 bytes at 48 and
  56, ``s_load_dwordx2``); C = alpha * acc + beta * C with ``v_mul_f64`` /
  ``v_fma_f64`` (alpha and beta SGPR pairs), two rows of C (32 VGPRs) at a time.

Resources of the default f64 32x256 kernel (k-step 8): 18 KiB of LDS per workgroup
(2 buffers of (32 + 256) x 4 doubles = 18432 bytes), 112 VGPRs and 14 SGPRs (+4
reserved): 2 waves per SIMD, limited by VGPRs (LDS alone would allow 3 workgroups
of 4 waves per CU, i.e. 3 waves per SIMD).  3 waves per SIMD (84 VGPRs) is out of
reach with this micro tile: 64 accumulator VGPRs and one k of fragments (24) are
already 88.  k-step 16 (D = 8): 36 KiB of LDS, 120 VGPRs, still 2 waves.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, i64
from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import GemmShape, MatmulOp
from vlpc.passes.common import op_error
from vlpc.passes.isel.emit import (Emitter, kernarg_layout, kernel_interface, row_pointers, scc_nonzero,
                                   zero_if_alpha_zero)
from vlpc.targets import Target, get_target

#: Work-item micro tile (rows x columns of C per work-item) per element type.
MICRO = {"f32": (8, 8), "f64": (4, 8)}
#: Work-items along M in a workgroup (so the macro tile's M is 8 micro tiles).
TM_N = 8
#: Element types the builder supports: bytes per element.
ELEMENT = {"f32": 4, "f64": 8}
#: Rows of the C tile a work-item loads at once in the epilogue: 32 VGPRs of C.
EPILOGUE_C_VGPRS = 32


def _log2(x: int) -> int:
    assert x > 0 and x & (x - 1) == 0, x
    return x.bit_length() - 1


class LdsKernelBuilder:
    """Builds the legacy LDS kernel for one planned ``gemm.matmul`` (see the module docstring)."""

    def __init__(self, mm: MatmulOp, name: str, target: str = "gfx906"):
        self.mm = mm
        self.name = name
        self.target: Target = get_target(target)
        self.shape: GemmShape = mm.shape()
        self.mt_m, self.mt_n = mm.get_int_array("macro_tile")
        self.k_step = mm.get_int("k_step")
        self.wg_size = mm.get_int_array("workgroup_size")

    # -- plan -----------------------------------------------------------------

    def _plan(self) -> None:
        mm, s, t = self.mm, self.shape, self.target
        if s.dtype not in ELEMENT:
            raise op_error(mm, f"strategy lds: element type {s.dtype} is not supported "
                           f"({', '.join(ELEMENT)} only)")
        self.esz = ELEMENT[s.dtype]
        self.w = self.esz // 4  # VGPRs (dwords) per element
        self.karg = {a["name"]: a["offset"] for a in kernarg_layout(s.dtype)}
        if mm.layout.data != "NT":
            raise op_error(mm, f"strategy lds: layout '{mm.layout.data}' is not supported (A stored M x K, "
                           "B stored N x K: layout \"NT\")")
        if getattr(s, "batch", 0):
            raise op_error(mm, "strategy lds: a strided batch (3-D memrefs) is not supported; use strategy sqc")
        epilogue = mm.epilogue_ops() if hasattr(mm, "epilogue_ops") else ()
        if epilogue or getattr(mm, "bias", None) is not None:
            raise op_error(mm, f"strategy lds: fused epilogues ({', '.join(epilogue) or 'bias'}) are not "
                           "supported; use strategy sqc")
        self.threads = self.wg_size[0]
        self.mi_m, self.mi_n = MICRO[s.dtype]
        self.tm_n = self.mt_m // self.mi_m  # work-items along M
        self.tn_n = self.mt_n // self.mi_n  # work-items along N
        if (self.mt_m != TM_N * self.mi_m or self.mt_n % 64 or self.tm_n * self.tn_n != self.threads):
            raise op_error(mm, f"strategy lds: macro tile {self.mt_m}x{self.mt_n} with {self.threads} work-items: "
                           f"{s.dtype} needs M = {TM_N * self.mi_m} and N a multiple of 64, one "
                           f"{self.mi_m}x{self.mi_n} micro tile per work-item")
        if self.k_step % 2:
            raise op_error(mm, f"strategy lds: k-step {self.k_step} must be even (two LDS stages per K step)")
        self.depth = self.k_step // 2  # K values per LDS stage
        d, w = self.depth, self.w
        # A is loaded in dwords: work-item t loads a_dw consecutive dwords of one A row (of
        # d*w dwords per stage); with f64 and a 32x256 tile that is one half of a double.
        a_dwords = self.mt_m * d * w
        if a_dwords % self.threads or (d * w) % max(1, a_dwords // self.threads):
            raise op_error(mm, f"strategy lds: the A tile ({self.mt_m}x{d} per stage) does not divide evenly "
                           f"among {self.threads} work-items; use a larger k-step")
        self.a_dw = a_dwords // self.threads
        self.a_items_per_row = d * w // self.a_dw
        if self.a_dw & (self.a_dw - 1) or d & (d - 1):
            raise op_error(mm, f"strategy lds: k-step {self.k_step} gives a stage depth of {d}; a power of two is needed")
        for dim, size, tile in (("M", s.m, self.mt_m), ("N", s.n, self.mt_n), ("K", s.k, self.k_step)):
            if size >= 0 and size % tile:
                raise op_error(mm, f"strategy lds: {dim}={size} is not a multiple of {tile}; sizes that are "
                               "not multiples of the tile are not supported by this strategy")
        # LDS layout: two buffers, each [A: k-major mt_m x D][B: k-major mt_n x D].
        self.a_row_bytes = self.mt_m * self.esz  # one k row of the A tile
        self.b_row_bytes = self.mt_n * self.esz
        self.a_base = 0
        self.b_base = d * self.a_row_bytes
        self.buf_bytes = d * (self.a_row_bytes + self.b_row_bytes)
        self.lds_bytes = 2 * self.buf_bytes
        if self.lds_bytes > t.lds_bytes_per_cu or self.lds_bytes > t.ds_offset_max + 1:
            raise op_error(mm, f"strategy lds: {self.lds_bytes} bytes of LDS per workgroup exceed the "
                           f"{t.lds_bytes_per_cu} of a {t.name} CU; choose a smaller k-step or macro tile")
        self.a_quads = self.mi_m * self.esz // 16  # ds_read_b128 per A fragment
        self.b_quads = self.mi_n * self.esz // 16  # ... and per B fragment

    # -- scalar arguments ----------------------------------------------------------

    def _arg(self, e: Emitter, kp: SSAValue, name: str, static: int) -> SSAValue | int:
        if static >= 0:
            return static
        return e(gcn.SLoadDwordOp(kp, self.karg[name], comment=f"kernarg {name}")).sdst

    # -- instruction groups ----------------------------------------------------------

    def _global_loads(self, e: Emitter, voff: SSAValue, saddr: SSAValue, offset: int, dwords: int,
                      what: str) -> list[SSAValue]:
        """``dwords`` consecutive dwords at saddr + voff + offset: x4 loads, then (f64) x2,
        then dwords; comments count elements."""
        out = []
        i, w = 0, self.w
        while i < dwords:
            n = 4 if dwords - i >= 4 else (2 if w == 2 and dwords - i >= 2 else 1)
            first, last = i // w, (i + n) // w - 1
            if n < w:
                note = f"{what} {first} (one dword of a double)"
            else:
                note = f"{what} {first}..{last}" if last > first else f"{what} {first}"
            cls = {4: gcn.GlobalLoadDwordx4Op, 2: gcn.GlobalLoadDwordx2Op, 1: gcn.GlobalLoadDwordOp}[n]
            out.append(e(cls(voff, saddr, offset + 4 * i, comment=note)).vdst)
            i += n
        return out

    def _elements(self, e: Emitter, loads: list[SSAValue], width: int | None = None) -> list[SSAValue]:
        """The elements (``width`` registers each, default one element) of loaded ranges."""
        width = width or self.w
        return [v if v.type.n == width else e.sub(v, j, width) for v in loads for j in range(0, v.type.n, width)]

    def _stage_loads(self, e: Emitter, a_base: SSAValue, b_base: SSAValue, offset: int) -> list[SSAValue]:
        """Global loads of one stage (A part, then B part) at byte ``offset`` along K."""
        a = self._global_loads(e, self.voff_a, a_base, offset, self.a_dw, "A k+")
        b = self._global_loads(e, self.voff_b, b_base, offset, self.depth * self.w, "B k+")
        self.n_a_loads = len(a)
        return a + b

    def _write_pairs(self, e: Emitter, vaddr: SSAValue, values: list[SSAValue], base: int, stride: int,
                     what: str) -> None:
        """values[i] to LDS[vaddr + base + i*stride]: ``ds_write2st64_b32``/``_b64`` pairs
        when the offsets fit their 8-bit fields (units of 64 elements), else ``ds_write_b32``/``_b64``."""
        width = values[0].type.n
        pair = {1: gcn.DsWrite2st64B32Op, 2: gcn.DsWrite2st64B64Op}[width]
        single = gcn.DS_WRITES[width]
        unit = pair.OFFSET_UNIT
        i = 0
        while i < len(values):
            o0, o1 = base + i * stride, base + (i + 1) * stride
            if (i + 1 < len(values) and o0 % unit == 0 and stride % unit == 0
                    and o1 // unit <= self.target.ds_offset2_max):
                e(pair(vaddr, values[i], values[i + 1], o0 // unit, o1 // unit, comment=f"{what} {i}, {i + 1}"))
                i += 2
            else:
                e(single(vaddr, values[i], o0, comment=f"{what} {i}"))
                i += 1

    def _lds_write(self, e: Emitter, staged: list[SSAValue], buf: int) -> None:
        """The staged values of one stage into LDS buffer ``buf`` (K-major tiles)."""
        a_loads, b_loads = staged[:self.n_a_loads], staged[self.n_a_loads:]
        off = buf * self.buf_bytes
        # less than one element per work-item: the lane address holds the dword's place
        a_vals = self._elements(e, a_loads, min(self.w, self.a_dw))
        self._write_pairs(e, self.lds_wa, a_vals, off + self.a_base, self.a_row_bytes, f"A -> LDS{buf} k+")
        self._write_pairs(e, self.lds_wb, self._elements(e, b_loads), off + self.b_base, self.b_row_bytes,
                          f"B -> LDS{buf} k+")

    def _frag_a(self, e: Emitter, buf: int, k: int) -> list[SSAValue]:
        """ds_read_b128 of the mi_m A rows a work-item needs at k (in flight)."""
        off = buf * self.buf_bytes + self.a_base + k * self.a_row_bytes
        return [e(gcn.DsReadB128Op(self.lds_ra, off + 16 * q, comment=f"A frag k={k}")).vdst
                for q in range(self.a_quads)]

    def _frag_b(self, e: Emitter, buf: int, k: int, q: int) -> SSAValue:
        """ds_read_b128 number ``q`` of the mi_n B columns a work-item needs at k."""
        off = buf * self.buf_bytes + self.b_base + k * self.b_row_bytes
        return e(gcn.DsReadB128Op(self.lds_rb, off + 16 * q, comment=f"B frag k={k}")).vdst

    def _fragment(self, e: Emitter, buf: int, k: int) -> tuple[list[SSAValue], list[SSAValue]]:
        return self._frag_a(e, buf, k), [self._frag_b(e, buf, k, q) for q in range(self.b_quads)]

    def _fmas(self, e: Emitter, frag: tuple[list[SSAValue], list[SSAValue]], acc: list[SSAValue]) -> None:
        """f32: the 64 FMAs of one k, row by row."""
        a = self._elements(e, frag[0])
        b = self._elements(e, frag[1])
        for i in range(self.mi_m):
            for j in range(self.mi_n):
                r = i * self.mi_n + j
                acc[r] = e(gcn.VFmaF32Op(a[i], b[j], acc[r])).vdst

    def _stage(self, e: Emitter, buf: int, staged: list[SSAValue], acc: list[SSAValue],
               a_next: SSAValue, b_next: SSAValue, next_offset: int) -> list[SSAValue]:
        """Compute one stage from LDS buffer ``buf``; write ``staged`` (the next stage) into
        the other buffer and start the global loads of the stage after it."""
        if self.w == 2:
            return self._stage_f64(e, buf, staged, acc, a_next, b_next, next_offset)
        frag = self._fragment(e, buf, 0)
        new_staged: list[SSAValue] = []
        for k in range(self.depth):
            nxt = self._fragment(e, buf, k + 1) if k + 1 < self.depth else None
            if k == self.depth - 1:
                self._lds_write(e, staged, 1 - buf)
                new_staged = self._stage_loads(e, a_next, b_next, next_offset)
            self._fmas(e, frag, acc)
            if nxt is not None:
                frag = nxt
        e(gcn.SBarrierOp(comment=f"LDS{1 - buf} written, LDS{buf} read"))
        return new_staged

    def _stage_f64(self, e: Emitter, buf: int, staged: list[SSAValue], acc: list[SSAValue],
                   a_next: SSAValue, b_next: SSAValue, next_offset: int) -> list[SSAValue]:
        """One stage of the f64 kernel: FMAs column by column; the A fragment of k + 1 is
        read before the FMAs of k, each B quad (2 columns) of k + 1 right after the last
        FMA reading that quad at k, into the registers it frees (see the module docstring)."""
        fa, fb = self._fragment(e, buf, 0)
        new_staged: list[SSAValue] = []
        for k in range(self.depth):
            last = k == self.depth - 1
            if last:
                self._lds_write(e, staged, 1 - buf)
                new_staged = self._stage_loads(e, a_next, b_next, next_offset)
            else:
                na = self._frag_a(e, buf, k + 1)
            a = self._elements(e, fa)
            nb = []
            j = 0
            for q, quad in enumerate(fb):
                for bj in self._elements(e, [quad]):
                    for i in range(self.mi_m):
                        r = i * self.mi_n + j
                        acc[r] = e(gcn.VFmaF64Op(a[i], bj, acc[r])).vdst
                    j += 1
                if not last:
                    nb.append(self._frag_b(e, buf, k + 1, q))
            if not last:
                fa, fb = na, nb
        e(gcn.SBarrierOp(comment=f"LDS{1 - buf} written, LDS{buf} read"))
        return new_staged

    # -- the kernel ------------------------------------------------------------------

    @staticmethod
    def _zeros(e: Emitter) -> SSAValue:
        """Four zero VGPRs (a C quad's value in lanes whose load EXEC disables)."""
        return e(gcn.RegSequenceOp([e(gcn.VMovB32Op(0)).vdst for _ in range(4)])).result

    def build(self) -> gcn.KernelOp:
        """The kernel: :meth:`_prologue`, :meth:`_k_loop`, :meth:`_epilogue` and :meth:`_finish`."""
        self._plan()
        entry = Block(arg_types=[gcn.SGPRType.at(0, 2), gcn.SGPRType.at(2), gcn.SGPRType.at(3), gcn.VGPRType.at(0),
                                 gcn.exec_type()])
        kp, wg_x, wg_y, tid, exec0 = entry.args
        e = Emitter(entry)
        a_tile, b_tile, kmax = self._prologue(e, kp, wg_x, wg_y, tid)
        acc = self._k_loop(e, a_tile, b_tile, kmax)
        self._epilogue(e, kp, wg_x, wg_y, exec0, acc)
        return self._finish(entry)

    def _bytes(self, e: Emitter, x: SSAValue | int) -> SSAValue | int:
        """x * element size in bytes (a leading dimension in bytes)."""
        return x * self.esz if isinstance(x, int) else e.mul(x, self.esz)

    def _prologue(self, e: Emitter, kp: SSAValue, wg_x: SSAValue, wg_y: SSAValue,
                  tid: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue | int]:
        """The kernel arguments, the A and B tile bases and each lane's global and LDS addresses
        (``voff_a``, ``lds_wa``, ``voff_b``, ``lds_wb``, ``lds_ra``, ``lds_rb``, set on the
        builder); returns (a_tile, b_tile, kmax: the byte offset of the last K step)."""
        s = self.shape
        esz, w, ks = self.esz, self.w, self.k_step
        mi_m, mi_n = self.mi_m, self.mi_n

        # ---- prologue: arguments, tile bases, per-lane global and LDS addresses ----
        ptr_a = e(gcn.SLoadDwordx2Op(kp, self.karg["A"], comment="kernarg A")).sdst
        ptr_b = e(gcn.SLoadDwordx2Op(kp, self.karg["B"], comment="kernarg B")).sdst
        k_val = self._arg(e, kp, "K", s.k)
        lda = self._arg(e, kp, "lda", s.lda)
        ldb = self._arg(e, kp, "ldb", s.ldb)

        lda_b, ldb_b = self._bytes(e, lda), self._bytes(e, ldb)
        a_lo, a_hi = e.mul64(e.mul(wg_y, self.mt_m), lda_b)
        a_tile = e.add64(ptr_a, a_lo, a_hi, comment=f"A tile base = A + wg_y*{self.mt_m}*lda*{esz}")
        b_lo, b_hi = e.mul64(e.mul(wg_x, self.mt_n), ldb_b)
        b_tile = e.add64(ptr_b, b_lo, b_hi, comment=f"B tile base = B + wg_x*{self.mt_n}*ldb*{esz}")
        if isinstance(k_val, int):
            kmax: SSAValue | int = (k_val - ks) * esz
        else:
            kmax = e.mul(e(gcn.SSubU32Op(k_val, ks)).sdst, esz)

        # A: work-item t loads a_dw dwords of row t / a_items_per_row, from dword part * a_dw
        if self.a_items_per_row > 1:
            row_a = e(gcn.VLshrrevB32Op(_log2(self.a_items_per_row), tid)).vdst
            part_a = e(gcn.VAndB32Op(self.a_items_per_row - 1, tid)).vdst
        else:
            row_a, part_a = tid, None
        voff_a = e(gcn.VMulLoU32Op(row_a, e.reg(lda_b))).vdst
        lds_wa = e(gcn.VLshlrevB32Op(_log2(esz), row_a)).vdst  # As[k][row]: row * esz ...
        if part_a is not None:
            voff_a = e(gcn.VLshlAddU32Op(part_a, _log2(self.a_dw * 4), voff_a)).vdst
            if self.a_dw >= w:
                # ... + (part * a_dw / w) * a_row_bytes
                lds_wa = e(gcn.VLshlAddU32Op(part_a, _log2(self.a_dw // w * self.a_row_bytes), lds_wa)).vdst
            else:
                # one dword of a double: k = part / 2, half = part % 2 -> + k * a_row_bytes + half * 4
                k_a = e(gcn.VLshrrevB32Op(1, part_a)).vdst
                lds_wa = e(gcn.VLshlAddU32Op(k_a, _log2(self.a_row_bytes), lds_wa)).vdst
                half = e(gcn.VAndB32Op(1, part_a)).vdst
                lds_wa = e(gcn.VLshlAddU32Op(half, 2, lds_wa)).vdst
        self.voff_a, self.lds_wa = voff_a, lds_wa
        # B: work-item t loads row t of the B tile (depth values) into Bs[k][t]
        self.voff_b = e(gcn.VMulLoU32Op(tid, e.reg(ldb_b))).vdst
        self.lds_wb = e(gcn.VLshlrevB32Op(_log2(esz), tid)).vdst
        # fragments: A rows mi_m*tm.., B columns mi_n*tn.. (tm = t % TM_N, tn = t / TM_N)
        tm = e(gcn.VAndB32Op(self.tm_n - 1, tid)).vdst
        self.lds_ra = e(gcn.VLshlrevB32Op(_log2(mi_m * esz), tm)).vdst
        # tn * mi_n * esz = (t / tm_n) * mi_n * esz; with tm_n == mi_n that is (t * esz) & -(mi_n * esz)
        assert self.tm_n == mi_n
        self.lds_rb = e(gcn.VAndB32Op(-(mi_n * esz), self.lds_wb)).vdst
        return a_tile, b_tile, kmax

    def _k_loop(self, e: Emitter, a_tile: SSAValue, b_tile: SSAValue, kmax: SSAValue | int) -> list[SSAValue]:
        """Stage 0 into LDS buffer 0 and stage 1 in flight, then the K loop (a ``gcn.loop``, two
        stages per K step); returns the accumulators (mi_m x mi_n, row-major)."""
        esz, w, d, ks = self.esz, self.w, self.depth, self.k_step
        mi_m, mi_n = self.mi_m, self.mi_n
        # stages 0 and 1: 0 into LDS buffer 0, 1 in flight into the loop
        staged0 = self._stage_loads(e, a_tile, b_tile, 0)
        staged1 = self._stage_loads(e, a_tile, b_tile, d * esz)
        self._lds_write(e, staged0, 0)
        if w == 1:
            acc0 = [e(gcn.VMovB32Op(0)).vdst for _ in range(mi_m * mi_n)]
        else:
            acc0 = [e(gcn.RegSequenceOp([e(gcn.VMovB32Op(0)).vdst for _ in range(w)])).result
                    for _ in range(mi_m * mi_n)]
        koff0 = e.const(0)
        e(gcn.SBarrierOp(comment="LDS0 written"))

        # ---- the K loop: one K step = two stages (LDS buffer 0, then 1) ----
        carried = [koff0, *staged1, *acc0]
        n_staged = len(staged1)
        body = Block(arg_types=[v.type for v in carried])
        be = Emitter(body)
        koff = body.args[0]
        staged = list(body.args[1:1 + n_staged])
        acc = list(body.args[1 + n_staged:])
        pref = be(gcn.SAddU32Op(koff, ks * esz, comment="next K step")).sdst
        pref = be(gcn.SMinU32Op(pref, kmax, comment="clamp: the last step re-reads itself")).sdst
        a_next = be.add64(a_tile, pref, 0, comment="A for the next K step")
        b_next = be.add64(b_tile, pref, 0, comment="B for the next K step")
        staged = self._stage(be, 0, staged, acc, a_next, b_next, 0)
        staged = self._stage(be, 1, staged, acc, a_next, b_next, d * esz)
        be(gcn.SCmpLgU32Op(koff, kmax))
        be(gcn.LoopBackOp([pref, *staged, *acc], "scc1"))
        loop = gcn.LoopOp(carried, Region(body), label=f".L{self.name}_k_loop")
        e(loop)
        return list(loop.res[1 + n_staged:])


    def _epilogue(self, e: Emitter, kp: SSAValue, wg_x: SSAValue, wg_y: SSAValue, exec0: SSAValue,
                  acc: list[SSAValue]) -> None:
        """C = alpha * acc + beta * C for the work-item's micro tile (BLAS's alpha = 0 and beta = 0
        rules), ending the program."""
        s = self.shape
        esz, w = self.esz, self.w
        mi_m, mi_n = self.mi_m, self.mi_n
        # ---- epilogue: C = alpha * acc + beta * C, mi_m rows x mi_n columns per work-item ----
        load_s = gcn.SLoadDwordOp if w == 1 else gcn.SLoadDwordx2Op
        mul_op, fma_op = (gcn.VMulF32Op, gcn.VFmaF32Op) if w == 1 else (gcn.VMulF64Op, gcn.VFmaF64Op)
        ptr_c = e(gcn.SLoadDwordx2Op(kp, self.karg["C"], comment="kernarg C")).sdst
        alpha = e(load_s(kp, self.karg["alpha"], comment="kernarg alpha")).sdst
        beta = e(load_s(kp, self.karg["beta"], comment="kernarg beta")).sdst
        # BLAS: alpha == 0 drops A*B (NaN/Inf in A or B do not reach C) ...
        acc = zero_if_alpha_zero(e, alpha, w, acc, f".L{self.name}_alpha_nonzero")
        # ... and beta == 0 does not read C: the C loads run with EXEC = 0 into zeros
        all_lanes = e(gcn.SAndB64Op(exec0, -1)).sdst  # EXEC at entry, kept in an SGPR pair
        scc_nonzero(e, beta, w, "beta")
        load_lanes = e(gcn.SCselectB64Op(all_lanes, 0)).sdst
        ldc = self._arg(e, kp, "ldc", s.ldc)
        ldc_b = self._bytes(e, ldc)
        c_lo, c_hi = e.mul64(e.mul(wg_y, self.mt_m), ldc_b)
        c_tile = e.add64(ptr_c, c_lo, c_hi, comment="C tile rows")
        c_tile = e.add64(c_tile, e.mul(wg_x, self.mt_n * esz), 0, comment="C tile columns")
        # lane offset: row mi_m*tm -> lds_ra * ldc (= tm * mi_m * esz * ldc); column mi_n*tn -> lds_rb
        voff_c = e(gcn.VMulLoU32Op(self.lds_ra, e.reg(ldc))).vdst
        voff_c = e(gcn.VLshlAddU32Op(voff_c, 0, self.lds_rb)).vdst
        quads = self.b_quads  # dwordx4 per row of the micro tile
        per_quad = 4 // w  # elements per dwordx4
        group = max(1, min(mi_m, EPILOGUE_C_VGPRS // (4 * quads)))  # rows of C loaded at once
        row_ptr = c_tile
        for g0 in range(0, mi_m, group):
            ptrs, row_ptr = row_pointers(e, row_ptr, g0, group, mi_m, ldc_b)
            zeros = [[self._zeros(e) for _ in range(quads)] for _ in ptrs]  # written with EXEC all lanes
            e(gcn.SAndB64Op(load_lanes, -1, result_type=gcn.exec_type()))
            cs = [[e(gcn.GlobalLoadDwordx4Op(voff_c, p, 16 * q, merge=zeros[i][q],
                                             comment=f"C row {g0 + i} cols {per_quad * q}..")).vdst
                   for q in range(quads)] for i, p in enumerate(ptrs)]
            e(gcn.SAndB64Op(all_lanes, -1, result_type=gcn.exec_type()))  # every lane stores
            for i, p in enumerate(ptrs):
                r = g0 + i
                for q in range(quads):
                    # all sub-registers first, so beta*C and the result reuse C's registers
                    c = self._elements(e, [cs[i][q]])
                    outs = []
                    for j in range(per_quad):
                        t = e(mul_op(beta, c[j])).vdst
                        outs.append(e(fma_op(acc[r * mi_n + per_quad * q + j], alpha, t)).vdst)
                    data = e(gcn.RegSequenceOp(outs)).result
                    e(gcn.GlobalStoreDwordx4Op(voff_c, data, p, 16 * q))
        e(gcn.SEndpgmOp())


    def _finish(self, entry: Block) -> gcn.KernelOp:
        """The ``gcn.kernel`` of the entry block, with its launch information and LDS regions."""
        s, ks, d = self.shape, self.k_step, self.depth
        mi_m, mi_n = self.mi_m, self.mi_n
        kernel = gcn.KernelOp(self.name, Region(entry))
        kernel_interface(kernel, self.mm, ["kernarg_segment_ptr", "workgroup_id_x", "workgroup_id_y", "workitem_id_x",
                                           "exec"],
                         kernarg_layout(s.dtype), self.threads, (self.mt_m, self.mt_n), ks, strategy="lds",
                         full_tiles_only=1,  # no edge handling: the host refuses other sizes
                         micro_m=mi_m, micro_n=mi_n, lds_stage_k=d)
        kernel.attributes["lds_bytes"] = IntegerAttr(self.lds_bytes, i64)
        # LDS regions (byte ranges of the workgroup's LDS): which tile a DS instruction
        # touches is the region holding its immediate offset (vlpc report uses this).
        kernel.attributes["lds_regions"] = DictionaryAttr({
            f"{m}{b}": ArrayAttr([IntegerAttr(b * self.buf_bytes + base, i64), IntegerAttr(size, i64)])
            for b in (0, 1)
            for m, base, size in (("A", self.a_base, d * self.a_row_bytes), ("B", self.b_base, d * self.b_row_bytes))})
        return kernel
