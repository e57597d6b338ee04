"""The ``sqc`` kernel of ``convert-gemm-to-gcn`` (f32 and f64): A in SGPRs, B in a ring of VGPRs.

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
  ``isel/sqc_k_loop.py`` and a step's order by ``isel/sqc_k_step.py``, both shared
  with the f16/int8 dot kernels (``isel/dot.py``).
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

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import GemmShape, MatmulOp, sqc_out_row_group, sqc_reduce_slice_chunk
from vlpc.passes.isel.emit import (
    KERNARG_OFFSET,
    SMEM_IMM_MAX,
    Emitter,
    KernelEntry,
    RowStepper,
    a_touch,
    fused_epilogue,
    grouped_workgroup_ids,
    k_slice,
    kernarg_layout,
    kernel_entry,
    kernel_interface,
    once,
    pow2_parts,
    pow2_runs,
    row_exec,
    scc_nonzero,
    tile_bases,
    tile_origin,
    zero_if_alpha_zero,
)
from vlpc.passes.isel.sqc_k_loop import emit_k_loops
from vlpc.passes.isel.sqc_k_step import A_BATCH_SGPRS, WIDE_A_BATCH_SGPRS, a_batches

# A_BATCH_SGPRS (schedule cover) and WIDE_A_BATCH_SGPRS (default): isel/sqc_k_step.py


@dataclass
class _Prologue:
    """What an sqc kernel's prologue (:meth:`SqcKernelBuilder._prologue`) leaves its K loop and
    epilogue: the entry ``ke`` (:func:`kernel_entry`); ``esz`` bytes and ``dw`` registers per
    element; the macro tile's ``row0``, ``shift``, ``col0`` and ``lanes`` (:func:`tile_origin`);
    and, for the main kernel (else None), its slice of K (``k_val``, static or an SGPR), whole
    K steps ``n_steps`` (None: at launch) and static tail ``k_tail``, the leading dimensions
    ``lda``, ``ldb`` (elements) and ``lda4``, ``ldb4`` (bytes), and the tile bases ``a_tile``,
    ``b_tile`` and the lane's B offset ``voff_b`` (:func:`tile_bases`)."""

    ke: KernelEntry
    esz: int
    dw: int
    row0: SSAValue
    shift: SSAValue | None
    col0: SSAValue
    lanes: SSAValue
    k_val: SSAValue | int | None = None
    n_steps: int | None = None
    k_tail: int = 0
    lda: SSAValue | int | None = None
    ldb: SSAValue | int | None = None
    lda4: SSAValue | int | None = None
    ldb4: SSAValue | int | None = None
    a_tile: SSAValue | None = None
    b_tile: SSAValue | None = None
    voff_b: SSAValue | None = None


@dataclass
class _AAccess:
    """How an sqc kernel's K loop reads A (:meth:`SqcKernelBuilder._a_access`): ``pieces(kcount)``,
    ``step_offset(koff)``, ``load_piece(piece, soffset)`` and ``operand(vals, batch, piece, row, kk)``,
    as :func:`emit_k_loops` takes them."""

    pieces: Callable[[int], list]
    step_offset: Callable[[SSAValue], SSAValue]
    load_piece: Callable
    operand: Callable


@dataclass
class _BAccess:
    """How an sqc kernel's K loop reads B (:meth:`SqcKernelBuilder._b_access`): ``slot_of(kk)``,
    ``load_slot(slot, base, text)``, ``load_all_slots(base, text)``, ``step_base(koff)``,
    ``operand(slots, kk)`` and ``load_one(base, text)``, as :func:`emit_k_loops` takes them."""

    slot_of: Callable[[int], tuple[int, int]]
    load_slot: Callable
    load_all_slots: Callable
    step_base: Callable[[SSAValue], SSAValue]
    operand: Callable
    load_one: Callable


@dataclass
class _Out:
    """What the steps of :meth:`SqcKernelBuilder._epilogue` hand on: the output's ``kind``
    (``c``, ``workspace``, ``atomic``, ``reduce``, ``scale``), the fused epilogue ``epi`` and its
    ``apply(value, bias of the row)``, the accumulators ``acc``, EXEC ``lanes`` and the lanes that
    read C (``load_lanes``), the lane's offset ``voff_c``, ``ldc4`` (bytes), the output tile
    ``c_tile`` and the workspace's ``ws_tile`` and ``slice_bytes``, ``alpha``, ``beta`` and the
    base of the rows' bias."""

    kind: str
    epi: tuple
    acc: list
    lanes: SSAValue
    load_lanes: SSAValue | None = None
    voff_c: SSAValue | None = None
    ldc4: SSAValue | int | None = None
    c_tile: SSAValue | None = None
    ws_tile: SSAValue | None = None
    slice_bytes: SSAValue | int = 0
    alpha: SSAValue | None = None
    beta: SSAValue | None = None
    bias_row_base: SSAValue | None = None
    apply: Callable | None = None


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
        self.a_trans = mm.layout.data[0] == "T"  # A stored K x M: contiguous along M
        self.b_trans = mm.layout.data[1] == "T"  # B stored N x K: contiguous along K (the seed's)

    @property
    def output(self) -> str:
        """Where the main kernel's products go: ``c`` (the epilogue), ``workspace`` or ``atomic``."""
        return "c" if self.split == 1 else self.mode

    def kernargs(self) -> list[dict]:
        """The kernel arguments, the same for every kernel of the plan."""
        return kernarg_layout(self.shape.dtype, self.mm.bias is not None, self.shape.batch != 0,
                              workspace=self.mode == "workspace")

    # -- scalar values known at compile time or loaded from the kernarg segment --

    def _arg(self, e: Emitter, kp: SSAValue, name: str, static: int) -> SSAValue | int:
        if static >= 0:
            return static
        return e(gcn.SLoadDwordOp(kp, KERNARG_OFFSET[name], comment=f"kernarg {name}")).sdst

    def build(self) -> gcn.KernelOp:
        """The kernel: :meth:`_prologue`, the main kernel's :meth:`_k_loop`, a local split's
        reduction (:meth:`_local_reduce`), :meth:`_epilogue` (the output) and :meth:`_finish`."""
        p = self._prologue()
        acc = self._k_loop(p) if self.role == "main" else []
        # ---- local split: wavefront groups 1..L-1 hand their accumulators to group 0 ----
        e, slice_id, lanes = p.ke.e, p.ke.slice_id, p.lanes
        lds_bytes = 0
        if self.role == "main" and self.local > 1:
            acc, lds_bytes = self._local_reduce(e, acc, slice_id, p.ke.tid, lanes, p.esz)
            e(gcn.SCmpEqU32Op(slice_id, 0))
            lanes = e(gcn.SCselectB64Op(lanes, 0)).sdst  # only group 0 writes the tile
        self._epilogue(p, acc, lanes)
        return self._finish(p, lds_bytes)

    def _batch_base(self, ke: KernelEntry, ptr: SSAValue, which: str) -> SSAValue:
        """ptr + batch index * batch stride (bytes), for a strided batch."""
        s, e = self.shape, ke.e
        if s.batch == 0:
            return ptr
        layout_args = {a["name"]: a["offset"] for a in self.kernargs()}
        static = getattr(s, f"stride_{which}")
        stride = (static * (4 if s.dtype == "f32" else 8) if static >= 0 else
                  e.mul(e(gcn.SLoadDwordOp(ke.kp, layout_args[f"stride_{which}"], comment=f"kernarg stride_{which}")).sdst,
                        4 if s.dtype == "f32" else 8))
        lo, hi = e.mul64(ke.wg_z, stride)
        return e.add64(ptr, lo, hi, comment=f"{which.upper()} + batch * stride_{which}")

    @staticmethod
    def _bytes(e: Emitter, x: SSAValue | int, esz: int) -> SSAValue | int:
        """x * element size in bytes (a leading dimension in bytes)."""
        return x * esz if isinstance(x, int) else e.mul(x, esz)

    @staticmethod
    def _zero(e: Emitter, dw: int) -> SSAValue:
        """+0 in a VGPR (dw 1) or a VGPR pair (dw 2)."""
        if dw == 1:
            return e(gcn.VMovB32Op(0)).vdst
        return e(gcn.RegSequenceOp([e(gcn.VMovB32Op(0)).vdst for _ in range(dw)])).result

    def _prologue(self) -> _Prologue:
        """The entry block, then (main kernel) the A and B pointers, K, lda, ldb and the K slice,
        the macro tile's origin and edges (:func:`tile_origin`) and (main kernel) the A and B tile
        bases (:func:`tile_bases`), emitted in that order."""
        s = self.shape
        mt_m, mt_n, ks = self.mt_m, self.mt_n, self.k_step
        main = self.role == "main"
        local = self.local if main else 1
        split_z = main and self.split > 1  # workgroup id z is the K slice

        batched = s.batch != 0
        # the batch index or K slice in workgroup id z; a local split's wavefront group
        ke = kernel_entry(batched or split_z, local, mt_n)
        e, slice_id = ke.e, ke.slice_id
        kp, wg_x, wg_y, wg_z, tid, exec0 = ke.kp, ke.wg_x, ke.wg_y, ke.wg_z, ke.tid, ke.exec0

        # ---- prologue: kernel arguments, tile bases, per-lane offsets ----
        if main:
            ptr_a = self._batch_base(ke, e(gcn.SLoadDwordx2Op(kp, KERNARG_OFFSET["A"], comment="kernarg A")).sdst, "a")
            ptr_b = self._batch_base(ke, e(gcn.SLoadDwordx2Op(kp, KERNARG_OFFSET["B"], comment="kernarg B")).sdst, "b")
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
        a_trans, b_trans = self.a_trans, self.b_trans

        # Edges: lanes past N are switched off in EXEC; a last row tile past M is moved up
        # to end at row M (it overlaps the tile before it) and stores only its own rows.
        arg = once(lambda name, static: self._arg(e, kp, name, static))
        # the grouped workgroup order (wg_group): every use of the ids below sees the remapped ones
        ke.wg_x, ke.wg_y = wg_x, wg_y = grouped_workgroup_ids(e, s, mt_m, mt_n, wg_x, wg_y,
                                                              self.mm.get_int("wg_group") or 1, arg)
        row0, shift, col0, lanes = tile_origin(e, s, mt_m, mt_n, wg_x, wg_y, tid, exec0, arg)
        p = _Prologue(ke, esz, dw, row0, shift, col0, lanes)
        if main:
            lda4, ldb4 = self._bytes(e, lda, esz), self._bytes(e, ldb, esz)
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
            p.k_val, p.n_steps, p.k_tail, p.lda, p.ldb, p.lda4, p.ldb4 = k_val, n_steps, k_tail, lda, ldb, lda4, ldb4
            p.a_tile, p.b_tile, p.voff_b = a_tile, b_tile, voff_b
        return p

    def _k_loop(self, p: _Prologue) -> list[SSAValue]:
        """The main kernel's K loop over its K slice (``passes/isel/sqc_k_loop.py``, one step's
        order ``passes/isel/sqc_k_step.py``): A's scalar loads in batches (:meth:`_a_access`), B's
        slots (:meth:`_b_access`), the FMAs (:meth:`_fma_order`) and the A touch; returns the
        accumulators, one per row of the micro tile."""
        e, tid, esz, dw = p.ke.e, p.ke.tid, p.esz, p.dw
        mi_m, ks = self.mi_m, self.k_step
        a, b = self._a_access(p), self._b_access(p)
        prefetch_a = (a_touch(e, p.a_tile, tid, p.lda4, mi_m, p.n_steps, k_rows=ks, row_bytes=mi_m * esz,
                              step_offset=a.step_offset) if self.a_trans
                      else a_touch(e, p.a_tile, tid, p.lda4, mi_m, p.n_steps))
        acc = [self._zero(e, dw) for _ in range(mi_m)]
        # the K loop (steps of k_step) and its tails: passes/isel/sqc_k_loop.py; the step's order
        # of A loads, FMAs and B reloads: passes/isel/sqc_k_step.py (both shared with the f16/int8
        # dot kernels)
        return emit_k_loops(
            e, self.name, acc, p.k_val, p.n_steps, p.k_tail, ks, esz, dw,
            batches=lambda kc: a_batches(a.pieces(kc), self.a_late),
            fma_order=self._fma_order, late=self.a_late, bunch=False, peel=False,
            mac_op=gcn.VFmaF32Op if dw == 1 else gcn.VFmaF64Op,
            texts={"k_full": "K rounded down to whole K steps", "k_rest": "K tail = K % k_step",
                   "next": "next k", "b_one": "B tail k", "b_tail": "B tail k={}"},
            a_offset=a.step_offset, load_piece=a.load_piece, a_operand=a.operand,
            b_tile=p.b_tile, voff_b=p.voff_b, b_quads=self.b_trans, b_slot_of=b.slot_of, load_b_slot=b.load_slot,
            load_all_slots=b.load_all_slots, b_step_base=b.step_base, b_operand=b.operand,
            load_b_one=b.load_one, prefetch_a=prefetch_a)

    def _a_access(self, p: _Prologue) -> _AAccess:
        """How the K loop reads A: its pieces (one scalar load each, in batch order), a step's SGPR
        offset, a piece's load and the SGPR operand of one FMA.

        A K x M (layout T...) is read 16 rows at a time for one k; A M x K (N...) one row at a
        time for k_step values of k.  Offsets within a step are immediates when lda is static and
        they fit the 21-bit SMEM offset; otherwise an SGPR chain adds lda*4 per row (or per k) on
        top of the step's offset."""
        e, esz, dw = p.ke.e, p.esz, p.dw
        mi_m, ks, a_trans = self.mi_m, self.k_step, self.a_trans
        lda, lda4, a_tile = p.lda, p.lda4, p.a_tile
        per_load = 16 // dw  # elements in the widest scalar load (s_load_dwordx16)

        def pieces(kcount: int) -> list[tuple[int, list[int], list[int]]]:
            """(width in dwords, rows, kks) per scalar load, in batch order, for kcount values of k."""
            out = []
            if a_trans:
                for r0 in range(0, mi_m, per_load):
                    widths = pow2_parts(min(per_load, mi_m - r0))
                    for kk in range(kcount):
                        r = r0
                        for w in widths:
                            out.append((w * dw, list(range(r, r + w)), [kk]))
                            r += w
            else:
                for r in range(mi_m):
                    for w, k0 in pow2_runs(kcount, per_load):
                        out.append((w * dw, [r], list(range(k0, k0 + w))))
            return out

        if isinstance(lda4, int):
            imm_limit = (ks - 1) * lda4 + mi_m * esz if a_trans else (mi_m - 1) * lda4 + ks * esz
            imm_ok = imm_limit <= SMEM_IMM_MAX
        else:
            imm_ok = False
        stepped = RowStepper(e, lda4)

        def step_offset(koff: SSAValue) -> SSAValue:
            """SGPR byte offset of a K step's A values (koff counts K in units of 4 bytes)."""
            return e(gcn.SMulI32Op(koff, e.reg(lda))).sdst if a_trans else koff

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

        def operand(vals: list[SSAValue], batch_pieces, pi: int, r: int, kk: int) -> SSAValue:
            w, rows, kks = batch_pieces[pi]
            j = rows.index(r) if a_trans else kks.index(kk)
            return e.sub(vals[pi], j * dw, dw) if w > dw else vals[pi]

        return _AAccess(pieces, step_offset, load_piece, operand)

    def _b_access(self, p: _Prologue) -> _BAccess:
        """How the K loop reads B: slots of 4 // dw values of k (``global_load_dwordx4`` quads, B
        N x K) or of one k (B K x N, a pointer chain adding ldb bytes per k), the next step's base
        and the VGPR operand of one FMA."""
        e, esz, dw = p.ke.e, p.esz, p.dw
        b_trans, ldb, ldb4, b_tile, voff_b = self.b_trans, p.ldb, p.ldb4, p.b_tile, p.voff_b
        per_quad = 4 // dw  # elements in one global_load_dwordx4

        def slot_of(kk: int) -> tuple[int, int]:
            return (kk // per_quad, kk % per_quad) if b_trans else (kk, 0)

        n_slots = self.k_step // per_quad if b_trans else self.k_step
        b_chain: dict[str, object] = {"base": None, "kk": -1, "ptr": None}

        def load_slot(slot: int, base: SSAValue, text: str) -> SSAValue:
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

        def step_base(koff: SSAValue) -> SSAValue:
            if b_trans:
                return e.add64(b_tile, koff, 0, comment="B for the next K step")
            lo, hi = e.mul64(koff, e.reg(ldb))
            return e.add64(b_tile, lo, hi, comment="B for the next K step")

        def operand(slots: list[SSAValue], kk: int) -> SSAValue:
            q, j = slot_of(kk)
            return e.sub(slots[q], j * dw, dw) if b_trans else slots[q]

        def load_all_slots(base: SSAValue, text: str) -> list[SSAValue]:
            return [load_slot(q, base, f"{text} {q}") for q in range(n_slots)]

        b_one = gcn.GlobalLoadDwordOp if dw == 1 else gcn.GlobalLoadDwordx2Op

        def load_one(base: SSAValue, text: str) -> SSAValue:
            return e(b_one(voff_b, base, comment=text)).vdst

        return _BAccess(slot_of, load_slot, load_all_slots, step_base, operand, load_one)

    def _fma_order(self, batch_pieces, last: bool) -> list[tuple[int, int, int, int]]:
        """A batch's FMAs as ``(row, kk, piece, index in the piece)``.  Row by row, so each FMA's
        accumulator is the previous FMA's result (the seed's data forwarding, section 2.9); the
        last batch of a step goes K-major, so each B slot dies early and is reloaded for the next
        step.  Without forwarding every batch goes K-major (the seed's sum_no_reuse): consecutive
        FMAs of a batch of two or more rows write different accumulators (a one-row batch cannot
        avoid it)."""
        pairs = [(r, kk, pi, pc_i) for pi, (w, rows, kks) in enumerate(batch_pieces)
                 for pc_i, (r, kk) in enumerate((r, kk) for r in rows for kk in kks)]
        k_major = last or not self.forwarding
        return sorted(pairs, key=(lambda t: (t[1], t[0])) if k_major else (lambda t: (t[0], t[1])))

    def _epilogue(self, p: _Prologue, acc: list[SSAValue], lanes: SSAValue) -> None:
        """The output of the kernel's role (below) for the rows of its macro tile, with EXEC
        ``lanes`` (the columns below N; after a local split, group 0's), ending the program.

        c: C = epilogue(alpha * acc + beta * C), C not read when beta == 0 (BLAS); workspace: the
        raw partial tile into slice z of the workspace; atomic: alpha * acc added into C by a
        compare-and-swap loop; reduce: acc = the sum of the S partial tiles, then as c; scale:
        C = epilogue(beta * C) before the atomic slices.  In order: the tiles' bases
        (:meth:`_out_bases`), alpha and beta (:meth:`_out_scalars`), the fused epilogue
        (:meth:`_out_epilogue`), then the rows in groups (:meth:`_out_rows`)."""
        out_kind = self.output if self.role == "main" else self.role
        o = _Out(kind=out_kind, epi=self.mm.epilogue_ops() if out_kind in ("c", "reduce", "scale") else (),
                 acc=acc, lanes=lanes)
        self._out_bases(p, o)
        self._out_scalars(p, o)
        self._out_epilogue(p, o)
        self._out_rows(p, o)
        p.ke.e(gcn.SEndpgmOp())

    @staticmethod
    def _static_or_reg_mul(e: Emitter, x: SSAValue | int, y: SSAValue | int) -> SSAValue | int:
        if isinstance(x, int) and isinstance(y, int):
            return x * y
        return e.mul(x, y) if not isinstance(x, int) else e.mul(y, x)  # type: ignore[arg-type]

    def _out_bases(self, p: _Prologue, o: _Out) -> None:
        """ldc, the lane's column offset and the output tiles' row-0 pointers: C's (``c_tile``),
        and the workspace's (``ws_tile``: the slice's for ``workspace``, slice 0's for ``reduce``,
        whose ``c_tile`` it also is) with ``slice_bytes`` (M x ldc elements)."""
        s, e, esz = self.shape, p.ke.e, p.esz
        kp, wg_x, wg_z, tid = p.ke.kp, p.ke.wg_x, p.ke.wg_z, p.ke.tid
        kargs = {a["name"]: a["offset"] for a in self.kernargs()}
        ldc = self._arg(e, kp, "ldc", s.ldc)
        o.ldc4 = ldc4 = self._bytes(e, ldc, esz)

        def tile_base(ptr: SSAValue, what: str) -> SSAValue:
            lo, hi = e.mul64(p.row0, ldc4)
            t = e.add64(ptr, lo, hi, comment=f"{what} tile rows")
            return e.add64(t, e.mul(wg_x, self.mt_n * esz), 0, comment=f"{what} tile columns")

        o.voff_c = e(gcn.VLshlrevB32Op(esz.bit_length() - 1, tid)).vdst
        if o.kind in ("workspace", "reduce"):  # workspace: S tiles of M x ldc elements
            ws = e(gcn.SLoadDwordx2Op(kp, kargs["workspace"], comment="kernarg workspace")).sdst
            o.slice_bytes = self._static_or_reg_mul(e, self._arg(e, kp, "M", s.m), ldc4)
            if o.kind == "workspace":
                ws = e.add64(ws, *e.mul64(wg_z, o.slice_bytes), comment="workspace slice z")
            o.ws_tile = o.c_tile = tile_base(ws, "workspace")
        if o.kind != "workspace":
            ptr_c = self._batch_base(p.ke, e(gcn.SLoadDwordx2Op(kp, kargs["C"], comment="kernarg C")).sdst, "c")
            o.c_tile = tile_base(ptr_c, "C")

    def _out_scalars(self, p: _Prologue, o: _Out) -> None:
        """alpha (the main kernel's products become 0 when it is 0: BLAS) and beta, with the lanes
        that read C (none when beta == 0: BLAS)."""
        e, dw, kp = p.ke.e, p.dw, p.ke.kp
        kargs = {a["name"]: a["offset"] for a in self.kernargs()}
        scalar_load = gcn.SLoadDwordOp if dw == 1 else gcn.SLoadDwordx2Op
        if o.kind != "scale":
            o.alpha = e(scalar_load(kp, kargs["alpha"], comment="kernarg alpha")).sdst
        if self.role == "main":  # BLAS: alpha == 0 drops A*B (the workspace partials become 0 for the reduce)
            o.acc = zero_if_alpha_zero(e, o.alpha, dw, o.acc, f".L{self.name}_alpha_nonzero")
        if o.kind in ("c", "reduce", "scale"):
            o.beta = e(scalar_load(kp, kargs["beta"], comment="kernarg beta")).sdst
            scc_nonzero(e, o.beta, dw, "beta")
            o.load_lanes = e(gcn.SCselectB64Op(o.lanes, 0)).sdst  # BLAS: beta == 0 does not read C

    def _out_epilogue(self, p: _Prologue, o: _Out) -> None:
        """The fused epilogue (gemm.matmul's ``epilogue``, in order), applied before the store: the
        bias of the lane's column (loaded here) or the base of the rows' bias."""
        e, esz, dw, kp, wg_x = p.ke.e, p.esz, p.dw, p.ke.kp, p.ke.wg_x
        kargs = {a["name"]: a["offset"] for a in self.kernargs()}
        c_load = gcn.GlobalLoadDwordOp if dw == 1 else gcn.GlobalLoadDwordx2Op
        bias_ptr = (e(gcn.SLoadDwordx2Op(kp, kargs["bias"], comment="kernarg bias")).sdst
                    if "bias" in kargs and o.epi else None)
        bias_col = None
        if "bias_col" in o.epi:
            e(gcn.SAndB64Op(o.lanes, -1, result_type=gcn.exec_type()))  # the columns below N
            base = e.add64(bias_ptr, e.mul(wg_x, self.mt_n * esz), 0, comment="bias + col0")
            bias_col = e(c_load(o.voff_c, base, comment="bias[n]")).vdst
        if "bias_row" in o.epi:
            lo, hi = e.mul64(p.row0, esz)
            o.bias_row_base = e.add64(bias_ptr, lo, hi, comment="bias + row0")
        o.apply = fused_epilogue(e, o.epi, bias_col, dw)

    def _out_rows(self, p: _Prologue, o: _Out) -> None:
        """The rows of the tile in groups (``sqc_out_row_group``: 16 // dw rows; a reduce at most 32
        partial values in flight), each group's row pointers advanced by ldc, then stored by its kind
        (:meth:`_store_partials`, :meth:`_add_atomic`, :meth:`_store_outputs`)."""
        e, dw, mi_m = p.ke.e, p.dw, self.mi_m
        # reduce: slice j's partial tile starts j * M * ldc elements on: one SGPR offset per
        # slice, added to the lane offset just before each load (VGPRs do not grow with S)
        # (computed once for up to 24 slices; beyond, per chunk of slices, so SGPRs stay bounded)
        few_slices = self.split <= 25
        slice_offsets = {j: e.reg(self._static_or_reg_mul(e, o.slice_bytes, j)) for j in range(1, self.split)} \
            if o.kind == "reduce" and few_slices else {}

        def partial_offset(j: int) -> SSAValue:
            if j == 0:
                return o.voff_c
            off = slice_offsets[j] if few_slices else e.reg(self._static_or_reg_mul(e, o.slice_bytes, j))
            return e(gcn.VAddU32Op(off, o.voff_c)).vdst

        group = sqc_out_row_group(dw, self.split, o.kind == "reduce")
        row_ptr = o.c_tile
        ws_ptr = o.ws_tile if o.kind == "reduce" else None
        for g0 in range(0, mi_m, group):
            rows = list(range(g0, min(g0 + group, mi_m)))
            ptrs, ws_ptrs = [], []
            for r in rows:
                ptrs.append(row_ptr)
                ws_ptrs.append(ws_ptr)
                if r + 1 < mi_m:
                    row_ptr = e.add64(row_ptr, o.ldc4, 0)
                    if ws_ptr is not None:
                        ws_ptr = e.add64(ws_ptr, o.ldc4, 0)
            if o.kind == "workspace":
                self._store_partials(p, o, g0, rows, ptrs)
            elif o.kind == "atomic":
                self._add_atomic(p, o, rows, ptrs)
            else:
                self._store_outputs(p, o, g0, rows, ptrs, ws_ptrs, partial_offset)

    def _store_partials(self, p: _Prologue, o: _Out, g0: int, rows: list[int], ptrs: list[SSAValue]) -> None:
        """workspace: the raw partial rows into the workspace's slice."""
        e, dw = p.ke.e, p.dw
        c_store = gcn.GlobalStoreDwordOp if dw == 1 else gcn.GlobalStoreDwordx2Op
        for i, (r, ptr) in enumerate(zip(rows, ptrs)):
            if p.shift is not None or (g0 == 0 and i == 0):
                row_exec(e, o.lanes, p.shift, r)
            e(c_store(o.voff_c, o.acc[r], ptr))  # the partial row r

    def _add_atomic(self, p: _Prologue, o: _Out, rows: list[int], ptrs: list[SSAValue]) -> None:
        """atomic: alpha * acc added into C, row by row (:meth:`_atomic_add`)."""
        e, dw = p.ke.e, p.dw
        mul_op = gcn.VMulF32Op if dw == 1 else gcn.VMulF64Op
        for r, ptr in zip(rows, ptrs):
            row_exec(e, o.lanes, p.shift, r)
            self._atomic_add(e, e(mul_op(o.alpha, o.acc[r])).vdst, o.voff_c, ptr, p.ke.exec0, r)

    def _store_outputs(self, p: _Prologue, o: _Out, g0: int, rows: list[int], ptrs: list[SSAValue],
                       ws_ptrs: list, partial_offset: Callable[[int], SSAValue]) -> None:
        """c, reduce, scale: (reduce: the S partials of each row summed in slice order) C's rows
        loaded where beta != 0, then epilogue(alpha * acc + beta * C) (scale: beta * C) stored."""
        e, esz, dw, shift = p.ke.e, p.esz, p.dw, p.shift
        c_load = gcn.GlobalLoadDwordOp if dw == 1 else gcn.GlobalLoadDwordx2Op
        c_store = gcn.GlobalStoreDwordOp if dw == 1 else gcn.GlobalStoreDwordx2Op
        mul_op = gcn.VMulF32Op if dw == 1 else gcn.VMulF64Op
        add_op = gcn.VAddF32Op if dw == 1 else gcn.VAddF64Op
        fma_op = gcn.VFmaF32Op if dw == 1 else gcn.VFmaF64Op
        scalar_load = gcn.SLoadDwordOp if dw == 1 else gcn.SLoadDwordx2Op
        sums: list[SSAValue | None] = [None] * len(rows)
        if o.kind == "reduce":  # the S partials of each row, summed in slice order
            if g0 == 0 or shift is not None:  # every row of the tile, the shifted ones too
                e(gcn.SAndB64Op(o.lanes, -1, result_type=gcn.exec_type()))
            # at most SQC_REDUCE_INFLIGHT_DWORDS of partials in flight: for a large S, chunks of slices
            chunk = sqc_reduce_slice_chunk(len(rows), dw, self.split)
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
            e(gcn.SAndB64Op(o.lanes, -1, result_type=gcn.exec_type()))
        zeros = [self._zero(e, dw) for _ in rows]
        cs = []
        for i, (r, ptr) in enumerate(zip(rows, ptrs)):
            if shift is not None or i == 0:
                row_exec(e, o.load_lanes, shift, r)
            cs.append(e(c_load(o.voff_c, ptr, comment=f"C row {r}", merge=zeros[i])).vdst)
        brows = ([e(scalar_load(o.bias_row_base, r * esz, comment=f"bias[row {r}]")).sdst for r in rows]
                 if o.bias_row_base is not None else [None] * len(rows))
        for i, (r, ptr, c) in enumerate(zip(rows, ptrs, cs)):
            if shift is not None or i == 0:
                row_exec(e, o.lanes, shift, r)
            t = e(mul_op(o.beta, c)).vdst
            if o.kind == "scale":
                out = t
            else:
                out = e(fma_op(o.acc[r] if o.kind == "c" else sums[i], o.alpha, t)).vdst
            e(c_store(o.voff_c, o.apply(out, brows[i]), ptr))

    def _finish(self, p: _Prologue, lds_bytes: int) -> gcn.KernelOp:
        """The ``gcn.kernel`` of the entry block, with its LDS size and launch information."""
        s, entry, roles = self.shape, p.ke.block, p.ke.roles
        mt_m, mt_n, ks = self.mt_m, self.mt_n, self.k_step
        main = self.role == "main"
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

    def _local_reduce(self, e: Emitter, acc: list[SSAValue], slice_id: SSAValue, col: SSAValue,
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

    def _atomic_add(self, e: Emitter, value: SSAValue, voff: SSAValue, ptr: SSAValue,
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
        be = Emitter(body)
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
