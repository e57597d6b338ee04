"""``convert-gemm-to-gcn{strategy=lds}``: the legacy LDS-tiled SGEMM of seed 002, section 1.

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
(64 + 256) x 8 floats), about 110 VGPRs: 2 waves per SIMD, limited by VGPRs
(``vlpc compile -v`` prints it; the pipeline gives this strategy a budget of 2
waves per SIMD unless ``waves-per-simd`` says otherwise).

The element type is a parameter (``ELEMENT``): f32 only for now; f64 needs
``v_fma_f64`` on register pairs and 2-dword LDS elements (``ds_write2st64_b64``),
refused here with a located diagnostic until then.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import GemmShape, MatmulOp
from vlpc.passes.common import op_error
from vlpc.passes.convert_gemm_to_gcn import kernarg_layout, kernel_interface
from vlpc.targets import Target, get_target

#: Work-item micro tile (rows x columns of C per work-item).
MICRO = 8
#: Element types the builder supports: bytes per element.
ELEMENT = {"f32": 4}


def _log2(x: int) -> int:
    assert x > 0 and x & (x - 1) == 0, x
    return x.bit_length() - 1


@dataclass
class _E:
    """Appends ops to a block; 32/64-bit scalar helpers (as the sqc builder's emitter)."""

    block: Block

    def __call__(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def sub(self, value: SSAValue, offset: int, width: int = 1) -> SSAValue:
        if value.type.n == width and offset == 0:
            return value
        return self(gcn.SubregOp(value, offset, width)).result

    def const(self, value: int) -> SSAValue:
        return self(gcn.SMovB32Op(value)).sdst

    def reg(self, x: SSAValue | int) -> SSAValue:
        return self.const(x) if isinstance(x, int) else x

    def add64(self, pair: SSAValue, lo: SSAValue | int, hi: SSAValue | int = 0, comment: str | None = None) -> SSAValue:
        r_lo = self(gcn.SAddU32Op(self.sub(pair, 0), lo, comment=comment)).sdst
        r_hi = self(gcn.SAddcU32Op(self.sub(pair, 1), hi)).sdst
        return self(gcn.RegSequenceOp([r_lo, r_hi])).result

    def mul(self, x: SSAValue, y: SSAValue | int) -> SSAValue:
        if isinstance(y, int) and y > 0 and y & (y - 1) == 0:
            return self(gcn.SLshlB32Op(x, _log2(y))).sdst
        return self(gcn.SMulI32Op(x, y)).sdst

    def mul64(self, x: SSAValue, y: SSAValue | int) -> tuple[SSAValue, SSAValue]:
        yr = self.reg(y)
        lo = self(gcn.SMulI32Op(x, yr)).sdst
        hi = self(gcn.SMulHiU32Op(x, yr)).sdst
        return lo, hi


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
            raise op_error(mm, f"strategy lds: element type {s.dtype} is not supported yet (f32 only)")
        self.esz = ELEMENT[s.dtype]
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
        self.tm_n = self.mt_m // MICRO  # work-items along M
        self.tn_n = self.mt_n // MICRO  # work-items along N
        if self.mt_m != MICRO * MICRO or self.mt_n % 64 or self.tm_n * self.tn_n != self.threads:
            raise op_error(mm, f"strategy lds: macro tile {self.mt_m}x{self.mt_n} with {self.threads} work-items: "
                           f"needs M = {MICRO * MICRO} and N a multiple of 64, one {MICRO}x{MICRO} micro tile "
                           "per work-item")
        if self.k_step % 2:
            raise op_error(mm, f"strategy lds: k-step {self.k_step} must be even (two LDS stages per K step)")
        self.depth = self.k_step // 2  # K values per LDS stage
        d = self.depth
        if (self.mt_m * d) % self.threads or d % max(1, self.mt_m * d // self.threads):
            raise op_error(mm, f"strategy lds: the A tile ({self.mt_m}x{d} per stage) does not divide evenly "
                           f"among {self.threads} work-items; use a larger k-step")
        self.a_per_item = self.mt_m * d // self.threads  # consecutive A values one work-item loads
        self.a_items_per_row = d // self.a_per_item
        if self.a_per_item & (self.a_per_item - 1) or d & (d - 1):
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

    # -- scalar arguments ----------------------------------------------------------

    def _arg(self, e: _E, kp: SSAValue, name: str, static: int) -> SSAValue | int:
        if static >= 0:
            return static
        return e(gcn.SLoadDwordOp(kp, _KARG[name], comment=f"kernarg {name}")).sdst

    # -- instruction groups ----------------------------------------------------------

    def _global_loads(self, e: _E, voff: SSAValue, saddr: SSAValue, offset: int, count: int,
                      what: str) -> list[SSAValue]:
        """``count`` consecutive elements at saddr + voff + offset: x4 loads, then dwords."""
        out = []
        i = 0
        while i < count:
            if count - i >= 4:
                op = gcn.GlobalLoadDwordx4Op(voff, saddr, offset + i * self.esz, comment=f"{what} {i}..{i + 3}")
                i += 4
            else:
                op = gcn.GlobalLoadDwordOp(voff, saddr, offset + i * self.esz, comment=f"{what} {i}")
                i += 1
            out.append(e(op).vdst)
        return out

    def _elements(self, e: _E, loads: list[SSAValue]) -> list[SSAValue]:
        return [e.sub(v, j) for v in loads for j in range(v.type.n)]

    def _stage_loads(self, e: _E, a_base: SSAValue, b_base: SSAValue, offset: int) -> list[SSAValue]:
        """Global loads of one stage (A part, then B part) at byte ``offset`` along K."""
        a = self._global_loads(e, self.voff_a, a_base, offset, self.a_per_item, "A k+")
        b = self._global_loads(e, self.voff_b, b_base, offset, self.depth, "B k+")
        return a + b

    def _write_pairs(self, e: _E, vaddr: SSAValue, values: list[SSAValue], base: int, stride: int,
                     what: str) -> None:
        """values[i] to LDS[vaddr + base + i*stride]: ``ds_write2st64_b32`` pairs when the
        offsets fit its 8-bit fields (units of 256 bytes), else ``ds_write_b32``."""
        unit = gcn.DsWrite2st64B32Op.OFFSET_UNIT
        i = 0
        while i < len(values):
            o0, o1 = base + i * stride, base + (i + 1) * stride
            if (i + 1 < len(values) and o0 % unit == 0 and stride % unit == 0
                    and o1 // unit <= self.target.ds_offset2_max):
                e(gcn.DsWrite2st64B32Op(vaddr, values[i], values[i + 1], o0 // unit, o1 // unit,
                                        comment=f"{what} {i}, {i + 1}"))
                i += 2
            else:
                e(gcn.DsWriteB32Op(vaddr, values[i], o0, comment=f"{what} {i}"))
                i += 1

    def _lds_write(self, e: _E, staged: list[SSAValue], buf: int) -> None:
        """The staged values of one stage into LDS buffer ``buf`` (K-major tiles)."""
        vals = self._elements(e, staged)
        a_vals, b_vals = vals[:self.a_per_item], vals[self.a_per_item:]
        off = buf * self.buf_bytes
        self._write_pairs(e, self.lds_wa, a_vals, off + self.a_base, self.a_row_bytes, f"A -> LDS{buf} k+")
        self._write_pairs(e, self.lds_wb, b_vals, off + self.b_base, self.b_row_bytes, f"B -> LDS{buf} k+")

    def _fragment(self, e: _E, buf: int, k: int) -> tuple[list[SSAValue], list[SSAValue]]:
        """ds_read_b128 of the 8 A rows and 8 B columns a work-item needs at k (in flight)."""
        off = buf * self.buf_bytes
        quads = MICRO // 4
        a = [e(gcn.DsReadB128Op(self.lds_ra, off + self.a_base + k * self.a_row_bytes + 16 * q,
                                comment=f"A frag k={k}")).vdst for q in range(quads)]
        b = [e(gcn.DsReadB128Op(self.lds_rb, off + self.b_base + k * self.b_row_bytes + 16 * q,
                                comment=f"B frag k={k}")).vdst for q in range(quads)]
        return a, b

    def _fmas(self, e: _E, frag: tuple[list[SSAValue], list[SSAValue]], acc: list[SSAValue]) -> None:
        a = self._elements(e, frag[0])
        b = self._elements(e, frag[1])
        for i in range(MICRO):
            for j in range(MICRO):
                r = i * MICRO + j
                acc[r] = e(gcn.VFmaF32Op(a[i], b[j], acc[r])).vdst

    def _stage(self, e: _E, buf: int, staged: list[SSAValue], acc: list[SSAValue],
               a_next: SSAValue, b_next: SSAValue, next_offset: int) -> list[SSAValue]:
        """Compute one stage from LDS buffer ``buf``; write ``staged`` (the next stage) into
        the other buffer and start the global loads of the stage after it."""
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

    # -- the kernel ------------------------------------------------------------------

    def build(self) -> gcn.KernelOp:
        self._plan()
        s = self.shape
        esz, d, ks = self.esz, self.depth, self.k_step
        entry = Block(arg_types=[gcn.SGPRType.at(0, 2), gcn.SGPRType.at(2), gcn.SGPRType.at(3), gcn.VGPRType.at(0)])
        kp, wg_x, wg_y, tid = entry.args
        e = _E(entry)

        # ---- prologue: arguments, tile bases, per-lane global and LDS addresses ----
        ptr_a = e(gcn.SLoadDwordx2Op(kp, _KARG["A"], comment="kernarg A")).sdst
        ptr_b = e(gcn.SLoadDwordx2Op(kp, _KARG["B"], comment="kernarg B")).sdst
        k_val = self._arg(e, kp, "K", s.k)
        lda = self._arg(e, kp, "lda", s.lda)
        ldb = self._arg(e, kp, "ldb", s.ldb)

        def bytes_(x: SSAValue | int) -> SSAValue | int:
            return x * esz if isinstance(x, int) else e.mul(x, esz)

        lda_b, ldb_b = bytes_(lda), bytes_(ldb)
        a_lo, a_hi = e.mul64(e.mul(wg_y, self.mt_m), lda_b)
        a_tile = e.add64(ptr_a, a_lo, a_hi, comment=f"A tile base = A + wg_y*{self.mt_m}*lda*{esz}")
        b_lo, b_hi = e.mul64(e.mul(wg_x, self.mt_n), ldb_b)
        b_tile = e.add64(ptr_b, b_lo, b_hi, comment=f"B tile base = B + wg_x*{self.mt_n}*ldb*{esz}")
        if isinstance(k_val, int):
            kmax: SSAValue | int = (k_val - ks) * esz
        else:
            kmax = e.mul(e(gcn.SSubU32Op(k_val, ks)).sdst, esz)

        # A: work-item t loads a_per_item values of row t / a_items_per_row
        if self.a_items_per_row > 1:
            row_a = e(gcn.VLshrrevB32Op(_log2(self.a_items_per_row), tid)).vdst
            part_a = e(gcn.VAndB32Op(self.a_items_per_row - 1, tid)).vdst
        else:
            row_a, part_a = tid, None
        voff_a = e(gcn.VMulLoU32Op(row_a, e.reg(lda_b))).vdst
        lds_wa = e(gcn.VLshlrevB32Op(_log2(esz), row_a)).vdst  # As[k][row]: row * esz ...
        if part_a is not None:
            voff_a = e(gcn.VLshlAddU32Op(part_a, _log2(self.a_per_item * esz), voff_a)).vdst
            # ... + (part * a_per_item) * a_row_bytes
            lds_wa = e(gcn.VLshlAddU32Op(part_a, _log2(self.a_per_item * self.a_row_bytes), lds_wa)).vdst
        self.voff_a, self.lds_wa = voff_a, lds_wa
        # B: work-item t loads row t of the B tile (depth values) into Bs[k][t]
        self.voff_b = e(gcn.VMulLoU32Op(tid, e.reg(ldb_b))).vdst
        self.lds_wb = e(gcn.VLshlrevB32Op(_log2(esz), tid)).vdst
        # fragments: A rows 8*tm.., B columns 8*tn.. (tm = t % 8, tn = t / 8)
        tm = e(gcn.VAndB32Op(self.tm_n - 1, tid)).vdst
        self.lds_ra = e(gcn.VLshlrevB32Op(_log2(MICRO * esz), tm)).vdst
        # tn * 8 * esz = (t / tm_n) * MICRO * esz; with tm_n == MICRO that is (t * esz) & -(MICRO * esz)
        assert self.tm_n == MICRO
        self.lds_rb = e(gcn.VAndB32Op(-(MICRO * esz), self.lds_wb)).vdst

        # stages 0 and 1: 0 into LDS buffer 0, 1 in flight into the loop
        staged0 = self._stage_loads(e, a_tile, b_tile, 0)
        staged1 = self._stage_loads(e, a_tile, b_tile, d * esz)
        self._lds_write(e, staged0, 0)
        acc0 = [e(gcn.VMovB32Op(0)).vdst for _ in range(MICRO * MICRO)]
        koff0 = e.const(0)
        e(gcn.SBarrierOp(comment="LDS0 written"))

        # ---- the K loop: one K step = two stages (LDS buffer 0, then 1) ----
        carried = [koff0, *staged1, *acc0]
        n_staged = len(staged1)
        body = Block(arg_types=[v.type for v in carried])
        be = _E(body)
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
        acc = list(loop.res[1 + n_staged:])

        # ---- epilogue: C = alpha * acc + beta * C, 8 rows x 8 columns per work-item ----
        ptr_c = e(gcn.SLoadDwordx2Op(kp, _KARG["C"], comment="kernarg C")).sdst
        alpha = e(gcn.SLoadDwordOp(kp, _KARG["alpha"], comment="kernarg alpha")).sdst
        beta = e(gcn.SLoadDwordOp(kp, _KARG["beta"], comment="kernarg beta")).sdst
        ldc = self._arg(e, kp, "ldc", s.ldc)
        ldc_b = bytes_(ldc)
        c_lo, c_hi = e.mul64(e.mul(wg_y, self.mt_m), ldc_b)
        c_tile = e.add64(ptr_c, c_lo, c_hi, comment="C tile rows")
        c_tile = e.add64(c_tile, e.mul(wg_x, self.mt_n * esz), 0, comment="C tile columns")
        # lane offset: row 8*tm -> lds_ra * ldc (= tm * 8 * esz * ldc); column 8*tn -> lds_rb
        voff_c = e(gcn.VMulLoU32Op(self.lds_ra, e.reg(ldc))).vdst
        voff_c = e(gcn.VLshlAddU32Op(voff_c, 0, self.lds_rb)).vdst
        group = 4
        row_ptr = c_tile
        quads = MICRO // 4
        for g0 in range(0, MICRO, group):
            ptrs = []
            for r in range(g0, g0 + group):
                ptrs.append(row_ptr)
                if r + 1 < MICRO:
                    row_ptr = e.add64(row_ptr, ldc_b, 0)
            cs = [[e(gcn.GlobalLoadDwordx4Op(voff_c, p, 16 * q, comment=f"C row {g0 + i} cols {4 * q}..")).vdst
                   for q in range(quads)] for i, p in enumerate(ptrs)]
            for i, p in enumerate(ptrs):
                r = g0 + i
                for q in range(quads):
                    # all four sub-registers first, so beta*C and the result reuse C's registers
                    c = self._elements(e, [cs[i][q]])
                    outs = []
                    for j in range(4):
                        t = e(gcn.VMulF32Op(beta, c[j])).vdst
                        outs.append(e(gcn.VFmaF32Op(acc[r * MICRO + 4 * q + j], alpha, t)).vdst)
                    data = e(gcn.RegSequenceOp(outs)).result
                    e(gcn.GlobalStoreDwordx4Op(voff_c, data, p, 16 * q))
        e(gcn.SEndpgmOp())

        kernel = gcn.KernelOp(self.name, Region(entry))
        kernel_interface(kernel, self.mm, ["kernarg_segment_ptr", "workgroup_id_x", "workgroup_id_y", "workitem_id_x"],
                         kernarg_layout(s.dtype), self.threads, (self.mt_m, self.mt_n), ks, strategy="lds",
                         full_tiles_only=1,  # no edge handling: the host refuses other sizes
                         micro_m=MICRO, micro_n=MICRO, lds_stage_k=d)
        kernel.attributes["lds_bytes"] = IntegerAttr(self.lds_bytes, i64)
        # LDS regions (byte ranges of the workgroup's LDS): which tile a DS instruction
        # touches is the region holding its immediate offset (vlpc report uses this).
        kernel.attributes["lds_regions"] = DictionaryAttr({
            f"{m}{b}": ArrayAttr([IntegerAttr(b * self.buf_bytes + base, i64), IntegerAttr(size, i64)])
            for b in (0, 1)
            for m, base, size in (("A", self.a_base, d * self.a_row_bytes), ("B", self.b_base, d * self.b_row_bytes))})
        return kernel


_KARG = {a["name"]: a["offset"] for a in kernarg_layout("f32")}
