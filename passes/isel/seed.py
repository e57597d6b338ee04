"""``convert-gemm-to-gcn{schedule=seed}``: the loop of the seed's hand-written 64x256 SGEMM.

Seed ``002_8d37cee11d069122.txt`` ("An Alternative SGEMM on VEGA", sections 2.1-2.10)
describes its kernel, which was measured on an MI60 (section 3: TFLOP/s at four engine
clocks, board power with and without data forwarding); the kernels themselves are public
(github.com/fsword73/SGEMM_on_VEGA: ``sgemm_64x256_sqc.s`` with forwarding,
``sgemm_64x256_sqc_sum_no_reuse.s`` without).  This builder reproduces that loop's
instruction order, so that a timing or energy model can be calibrated on the kernel that
was measured, next to vlpc's default ``sqc`` schedule:

* Workgroup 256 work-items, grid (N/256, M/64), micro tile 64x1: work-item t computes
  C[row0 .. row0+63, col0 + t] (macro tile 64x256, the gemm-tile default).
* A (M x K, row-major) is read 8 k at a time: one ``s_load_dwordx8`` per row, whose
  SGPR offset (``soffset``) is address arithmetic per load as in the seed
  (``s_load_dwordx8 s[32:39], s[12:13], s18``; ``s_add_u32 s18, s18, lda*4``).  The 64
  rows go in 8 *groups* of 8 rows (64 SGPRs, s32..s95 in the seed).  A group starts with
  one ``s_waitcnt lgkmcnt(0)`` (SMEM returns out of order), placed by this builder where
  the seed places it; right after the FMAs that read a row's 8 SGPRs, one
  ``s_load_dwordx8`` refills them with the same row of the next group (of group 0 of the
  next 8-k step after the last group; the prologue loads the first group).  A group's
  loads are thus covered by the FMAs of the group before, except the last one, which the
  next group's wait meets at once (0 VALU instructions of cover, the seed's section 2
  limit).  There is no double buffer for A (96 SGPRs).
* B (N x K, row-major) is double-buffered in 2 x 8 VGPRs: at the top of each 8-k step
  two ``global_load_dwordx4`` fetch the next 8 k of the lane's B row while the FMAs use
  the current 8; the B address advances by 16 bytes per load with
  ``s_add_u32``/``s_addc_u32`` as in the seed (section 2.5).  The step ends with an
  ``s_waitcnt vmcnt(0)`` that retires the prefetch (a separate wait, as the seed's
  hand-written loop has; ``gcn-insert-waitcnt`` honors it and derives every other wait).
* An iteration of the K loop is two 8-k steps, the B buffers in turn (one buffer per step
  would need 8 ``v_mov_b32`` per step on the back edge).  The seed's kernel prefetches
  past K; this one does not: the loop covers the steps before the last in pairs, an odd
  one follows it, and the last step is peeled without a prefetch (of B or A), so every
  access stays inside the matrices (the strict emulator checks it).
* FMA order: with ``forwarding`` (the default), row by row, so each FMA's accumulator
  comes from the FMA just before it (data forwarding, section 2.9), and each row's load
  follows its 8 FMAs; without, the seed's ``sum_no_reuse``: the FMAs of a pair of rows
  alternate, K-major (row r, row r+1 for each k), so no accumulator is produced by the
  VALU instruction just before the one reading it, and the pair's two loads follow its 16
  FMAs.  Either way each accumulator sums its k in increasing order, so results are
  bit-identical.
* No LDS, no barrier.  Epilogue: C = alpha * acc + beta * C per BLAS: beta = 0 does not
  read C (EXEC is empty for the C loads, which return 0), alpha = 0 clears the
  accumulators (the quick return of ``emit.zero_if_alpha_zero``), so NaN or
  Inf in C, or in A and B, does not propagate when its factor is 0.

Measured figures of the K loop (``vlpc.analysis.loop_figures``), per 1024 FMAs: 128
``s_load_dwordx8``, 132 ``s_add_u32`` (63 offset increments + 1 K offset + 2 B per
8-k step; the seed: about 135), 18 ``s_waitcnt``, 4 ``global_load_dwordx4``; 82 VGPRs
(64 accumulators, 16 B, the B lane offset, the work-item id; the seed counts 83 with a
64-bit lane address; 82 and 84 both give 3 waves per SIMD).

Scope (anything else is refused with a located error): f32, layout NT, macro tile
64x256 with micro tile 64x1, no split-K, no batch, no fused epilogue, M a multiple of 64,
N a multiple of 256, K a multiple of 8 when static; M, N and K given at launch are checked by
the runtime (launch information ``full_tiles_only``), and a K given at launch must be a
multiple of 16 (the loop does two 8-k steps per iteration, so its odd step is always there;
a static K gets the code for its own step count).  The planned ``k_step`` must be a multiple
of 8; the kernel steps 8 k at a time (its launch information's ``k_step`` is the granularity
of K it accepts: 8 static, 16 at launch).
"""

from __future__ import annotations

from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import MatmulOp
from vlpc.passes.common import op_error
from vlpc.passes.isel.emit import (KERNARG_OFFSET, Emitter, kernarg_layout, kernel_interface, row_pointers,
                                   scc_nonzero, zero_if_alpha_zero)

#: The seed's tiles: macro tile (M, N) per workgroup, micro tile per work-item.
SEED_MACRO = (64, 256)
SEED_MICRO = (64, 1)
#: K values per A load (one ``s_load_dwordx8`` per row) and per step of the K loop.
SEED_K = 8
#: Rows of A per load group: 8 rows x 8 k = 64 SGPRs (s32..s95 in the seed).
GROUP_ROWS = 8
#: Largest byte offset an SGPR soffset (32-bit, unsigned) can hold.
SOFFSET_MAX = (1 << 32) - 1


def group_fma_order(rows: list[int], forwarding: bool) -> list[list[tuple[int, int]]]:
    """(row, k) pairs of one load group's FMAs, in issue order, cut where the seed issues
    the next group's loads: after each row with ``forwarding`` (row by row, so each FMA
    reads the accumulator the FMA just before wrote), after each pair of rows without
    (the pair's FMAs alternate, K-major, so consecutive FMAs write different
    accumulators: the seed's ``sgemm_64x256_sqc_sum_no_reuse.s``).  ``rows`` in load order."""
    if forwarding:
        return [[(r, kk) for kk in range(SEED_K)] for r in rows]
    pairs = [rows[i:i + 2] for i in range(0, len(rows), 2)]
    return [[(r, kk) for kk in range(SEED_K) for r in pair] for pair in pairs]


class SeedKernelBuilder:
    """Builds the seed-schedule kernel for one planned ``gemm.matmul`` (see the module docstring)."""

    def __init__(self, mm: MatmulOp, name: str, forwarding: bool = True):
        self.mm = mm
        self.name = name
        self.forwarding = forwarding
        self.shape = mm.shape()

    def _check(self) -> None:
        mm, s = self.mm, self.shape
        what = "schedule seed (the seed's 64x256 SGEMM loop)"
        if s.dtype != "f32":
            raise op_error(mm, f"{what}: element type {s.dtype} is not supported (f32 only)")
        if mm.layout.data != "NT":
            raise op_error(mm, f"{what}: layout '{mm.layout.data}' is not supported (A stored M x K, "
                           "B stored N x K: layout \"NT\", as the seed)")
        if s.batch != 0:
            raise op_error(mm, f"{what}: a strided batch (3-D memrefs) is not supported")
        epi = mm.epilogue_ops()
        if epi or mm.bias is not None:
            raise op_error(mm, f"{what}: fused epilogues ({', '.join(epi) or 'bias'}) are not supported; "
                           "use schedule default")
        for dim, size, tile in (("M", s.m, SEED_MACRO[0]), ("N", s.n, SEED_MACRO[1]), ("K", s.k, SEED_K)):
            if size >= 0 and size % tile:
                raise op_error(mm, f"{what}: {dim}={size} is not a multiple of {tile} (the seed's kernel "
                               "computes whole tiles only)")
        macro = tuple(mm.get_int_array("macro_tile"))
        micro = tuple(mm.get_int_array("micro_tile"))
        if macro != SEED_MACRO or micro != SEED_MICRO:
            raise op_error(mm, f"{what}: macro tile {macro[0]}x{macro[1]} with micro tile {micro[0]}x{micro[1]}: "
                           f"the seed's are {SEED_MACRO[0]}x{SEED_MACRO[1]} and {SEED_MICRO[0]}x{SEED_MICRO[1]} "
                           "(workgroup 256, grid (N/256, M/64))")
        split, local = mm.get_int("split_k") or 1, mm.get_int("local_split") or 1
        if split > 1 or local > 1:
            raise op_error(mm, f"{what}: split-k={split} local-split={local}: the seed's kernel does not split K; "
                           "use split-k=1 local-split=1")
        ks = mm.get_int("k_step")
        if ks % SEED_K:
            raise op_error(mm, f"{what}: k-step {ks} is not a multiple of {SEED_K} (one s_load_dwordx8 per row)")
        if s.lda >= 0 and (SEED_MACRO[0] - 1) * s.lda * 4 + (s.k - SEED_K) * 4 > SOFFSET_MAX:
            raise op_error(mm, f"{what}: lda={s.lda}: the A offsets within a row tile exceed the 32-bit "
                           "SMEM soffset")

    def build(self) -> gcn.KernelOp:
        """The kernel: :meth:`_prologue`, :meth:`_k_loop`, :meth:`_epilogue` and :meth:`_finish`."""
        self._check()
        entry = Block(arg_types=[gcn.SGPRType.at(0, 2), gcn.SGPRType.at(2), gcn.SGPRType.at(3),
                                 gcn.VGPRType.at(0), gcn.exec_type()])
        kp, wg_x, wg_y, tid, exec0 = entry.args
        e = Emitter(entry)
        a_tile, b_tile, voff_b, k_val, lda4, row0 = self._prologue(e, kp, wg_x, wg_y, tid)
        acc = self._k_loop(e, a_tile, b_tile, voff_b, k_val, lda4)
        self._epilogue(e, kp, wg_x, tid, exec0, row0, acc)
        return self._finish(entry)

    @staticmethod
    def _arg(e: Emitter, kp: SSAValue, name: str, static: int) -> SSAValue | int:
        """A kernel argument: its static value, or an ``s_load_dword`` of it."""
        if static >= 0:
            return static
        return e(gcn.SLoadDwordOp(kp, KERNARG_OFFSET[name], comment=f"kernarg {name}")).sdst

    @staticmethod
    def _bytes(e: Emitter, x: SSAValue | int) -> SSAValue | int:
        """x * 4 (f32 elements to bytes)."""
        return x * 4 if isinstance(x, int) else e.mul(x, 4)

    def _prologue(self, e: Emitter, kp: SSAValue, wg_x: SSAValue, wg_y: SSAValue,
                  tid: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue | int, SSAValue | int, SSAValue]:
        """The kernel arguments and tile bases: (a_tile, b_tile, voff_b: the lane's B offset, K,
        lda4: A's row stride in bytes, row0: the tile's first row)."""
        s = self.shape
        mt_m, mt_n = SEED_MACRO

        # ---- prologue: arguments, tile bases (seed sections 2.2, 2.3, 2.10) ----
        ptr_a = e(gcn.SLoadDwordx2Op(kp, KERNARG_OFFSET["A"], comment="kernarg A")).sdst
        ptr_b = e(gcn.SLoadDwordx2Op(kp, KERNARG_OFFSET["B"], comment="kernarg B")).sdst
        k_val = self._arg(e, kp, "K", s.k)
        lda4 = self._bytes(e, self._arg(e, kp, "lda", s.lda))
        ldb4 = self._bytes(e, self._arg(e, kp, "ldb", s.ldb))
        row0 = e.mul(wg_y, mt_m)
        col0 = e.mul(wg_x, mt_n)
        a_tile = e.add64(ptr_a, *e.mul64(row0, lda4), comment=f"A tile base = A + wg_y*{mt_m}*lda*4")
        b_tile = e.add64(ptr_b, *e.mul64(col0, ldb4), comment=f"B tile base = B + wg_x*{mt_n}*ldb*4")
        voff_b = e(gcn.VMulLoU32Op(tid, e.reg(ldb4))).vdst  # lane t reads B row col0 + t
        return a_tile, b_tile, voff_b, k_val, lda4, row0

    def _k_loop(self, e: Emitter, a_tile: SSAValue, b_tile: SSAValue, voff_b: SSAValue, k_val: SSAValue | int,
                lda4: SSAValue | int) -> list[SSAValue]:
        """The seed's K loop (below) over K values of A from ``a_tile`` (rows ``lda4`` bytes
        apart) and B from ``b_tile`` (the lane at ``voff_b``); returns the 64 accumulators."""
        mt_m, _ = SEED_MACRO
        ks, esz = SEED_K, 4
        step_bytes = ks * esz

        def reg(x: SSAValue | int) -> SSAValue:  # (e is the loop body's emitter inside the loop)
            return e.const(x) if isinstance(x, int) else x

        def load_b(ptr: SSAValue, what: str) -> tuple[list[SSAValue], SSAValue]:
            """The lane's 8 B values at ptr (2 x global_load_dwordx4), the pointer advanced by 16
            bytes after each load (seed section 2.5)."""
            quads = []
            for q in range(2):
                quads.append(e(gcn.GlobalLoadDwordx4Op(voff_b, ptr, comment=f"{what} k+{4 * q}..")).vdst)
                ptr = e.add64(ptr, 16)
            return quads, ptr

        def load_a(off: SSAValue | int, row: int) -> SSAValue:
            return e(gcn.SLoadDwordx8Op(a_tile, soffset=reg(off), comment=f"A row {row} k+0..7")).sdst

        def first_group(koff: SSAValue | int) -> tuple[list[SSAValue], SSAValue | int]:
            """Group 0's rows at koff, loaded back to back (the prologue's loads); returns them
            and the offset of the last one."""
            vals, off = [], koff
            for r in range(GROUP_ROWS):
                if r:
                    off = e(gcn.SAddU32Op(reg(off), lda4)).sdst
                vals.append(load_a(off, r))
            return vals, off

        def step(koff: SSAValue, b_cur: list[SSAValue], acc: list[SSAValue], b_ptr: SSAValue | None,
                 a_cur: list[SSAValue], a_off: SSAValue | int, next_koff: SSAValue | int | None
                 ) -> tuple[list[SSAValue], SSAValue | None, list[SSAValue], SSAValue | int]:
            """One 8-k step at byte offset koff along K: with ``b_ptr``, first the prefetch of the
            next step's B (returned with the advanced pointer); then the 8 load groups of 8 rows.
            ``a_cur`` holds group 0's rows (loaded before; ``a_off`` is the last one's offset).
            As in the seed's loop, each row's SGPRs are reloaded right after the FMAs that read
            them, with the same row of the next group, or of group 0 at ``next_koff`` after the
            last group (none when ``next_koff`` is None): the loads of a group are covered by the
            FMAs of the group before, and the group's first FMA waits for them all
            (``lgkmcnt(0)``: SMEM returns out of order).  Then the wait that retires the B prefetch."""
            nxt: list[SSAValue] = []
            if b_ptr is not None:
                nxt, b_ptr = load_b(b_ptr, "B next")
            off = a_off
            groups = mt_m // GROUP_ROWS
            for g in range(groups):
                rows = list(range(g * GROUP_ROWS, (g + 1) * GROUP_ROWS))
                vals = dict(zip(rows, a_cur))
                loads: list[SSAValue] = []
                e(gcn.SWaitcntOp(lgkmcnt=0))  # the group's loads, all at once (the seed's placement)
                for chunk in group_fma_order(rows, self.forwarding):
                    for r, kk in chunk:
                        b = e.sub(b_cur[kk // 4], kk % 4)
                        acc[r] = e(gcn.VFmaF32Op(b, e.sub(vals[r], kk), acc[r])).vdst
                    for r in dict.fromkeys(r for r, _ in chunk):  # the chunk's rows, in order
                        if g + 1 < groups:  # the same row of the next group, in this step
                            off = e(gcn.SAddU32Op(reg(off), lda4)).sdst
                            loads.append(load_a(off, r + GROUP_ROWS))
                        elif next_koff is not None:  # group 0 of the next step
                            i = r - g * GROUP_ROWS
                            off = next_koff if i == 0 else e(gcn.SAddU32Op(reg(off), lda4)).sdst
                            loads.append(load_a(off, i))
                a_cur = loads
            if b_ptr is not None:
                e(gcn.SWaitcntOp(vmcnt=0))  # the next step's B has arrived
            return nxt, b_ptr, a_cur, off

        acc = [e(gcn.VMovB32Op(0)).vdst for _ in range(mt_m)]
        b_cur, b_ptr = load_b(b_tile, "B")
        e(gcn.SWaitcntOp(vmcnt=0))  # the first step's B (the loop's waits are its own)
        koff: SSAValue = e.const(0)
        a_cur, a_off = first_group(koff)  # group 0 of the first step (the seed's prologue loads)

        # ---- the K loop: two 8-k steps per iteration (B buffers 0 and 1 in turn), each
        # prefetching the next step's B.  Steps: n = K/8; the n-1 steps before the last
        # prefetch; the loop runs (n-1) // 2 times, an odd one out follows it, and the last
        # step is peeled (no prefetch: nothing is read past K).  K given at launch is a
        # multiple of 16 (n even: one code path, the odd step always there).
        pair_bytes = 2 * step_bytes
        if isinstance(k_val, int):
            n = k_val // ks
            odd = (n - 1) % 2 == 1
            loop_end: SSAValue | int = (n - 1) // 2 * pair_bytes
        else:
            odd = True
            loop_end = e(gcn.SSubU32Op(e.mul(k_val, esz), pair_bytes, comment="offset after the loop")).sdst
        skip = f".L{self.name}_after_k_loop"
        if not isinstance(loop_end, int) or loop_end > 0:
            if not isinstance(loop_end, int):  # K = 16 at launch: no loop iteration
                e(gcn.SCmpEqU32Op(loop_end, 0))
                e(gcn.SCbranchForwardOp("scc1", skip))
            carried = [koff, b_ptr, *b_cur, a_off, *a_cur, *acc]
            body = Block(arg_types=[v.type for v in carried])
            lk, lbp, laoff = body.args[0], body.args[1], body.args[4]
            buf0 = list(body.args[2:4])
            la = list(body.args[5:5 + GROUP_ROWS])
            lacc = list(body.args[5 + GROUP_ROWS:])
            e_outer, e = e, Emitter(body)
            k1 = e(gcn.SAddU32Op(lk, step_bytes, comment="second step of the iteration")).sdst
            buf1, lbp, la, laoff = step(lk, buf0, lacc, lbp, la, laoff, k1)
            knext = e(gcn.SAddU32Op(lk, pair_bytes, comment="next K steps")).sdst
            buf0, lbp, la, laoff = step(k1, buf1, lacc, lbp, la, laoff, knext)
            e(gcn.SCmpLgU32Op(knext, loop_end))
            e(gcn.LoopBackOp([knext, lbp, *buf0, laoff, *la, *lacc], "scc1"))
            loop = gcn.LoopOp(carried, Region(body), label=f".L{self.name}_k_loop")
            e = e_outer
            e(loop)
            koff, b_ptr, a_off = loop.res[0], loop.res[1], loop.res[4]
            b_cur = list(loop.res[2:4])
            a_cur = list(loop.res[5:5 + GROUP_ROWS])
            acc = list(loop.res[5 + GROUP_ROWS:])
            if not isinstance(loop_end, int):
                e(gcn.LabelOp(skip))
        if odd:  # the step before the last, prefetching the last one's B and A group 0
            klast = e(gcn.SAddU32Op(koff, step_bytes, comment="the last K step")).sdst
            b_cur, _, a_cur, a_off = step(koff, b_cur, acc, b_ptr, a_cur, a_off, klast)
            koff = klast
        step(koff, b_cur, acc, None, a_cur, a_off, None)
        return acc

    def _epilogue(self, e: Emitter, kp: SSAValue, wg_x: SSAValue, tid: SSAValue, exec0: SSAValue,
                  row0: SSAValue, acc: list[SSAValue]) -> None:
        """C = alpha * acc + beta * C for the macro tile's 64 rows, ending the program."""
        s = self.shape
        mt_m, mt_n = SEED_MACRO
        esz = 4
        # ---- epilogue: C = alpha * acc + beta * C (BLAS: beta == 0 does not read C) ----
        ldc4 = self._bytes(e, self._arg(e, kp, "ldc", s.ldc))
        ptr_c = e(gcn.SLoadDwordx2Op(kp, KERNARG_OFFSET["C"], comment="kernarg C")).sdst
        c_tile = e.add64(ptr_c, *e.mul64(row0, ldc4), comment="C tile rows")
        c_tile = e.add64(c_tile, e.mul(wg_x, mt_n * esz), 0, comment="C tile columns")
        alpha = e(gcn.SLoadDwordOp(kp, KERNARG_OFFSET["alpha"], comment="kernarg alpha")).sdst
        acc = zero_if_alpha_zero(e, alpha, 1, acc, f".L{self.name}_alpha_nonzero")  # BLAS: alpha == 0 drops A*B
        beta = e(gcn.SLoadDwordOp(kp, KERNARG_OFFSET["beta"], comment="kernarg beta")).sdst
        lanes = e(gcn.SAndB64Op(exec0, -1)).sdst  # a copy of the full EXEC
        scc_nonzero(e, beta, 1, "beta")
        load_lanes = e(gcn.SCselectB64Op(lanes, 0)).sdst
        voff_c = e(gcn.VLshlrevB32Op(2, tid)).vdst
        row_ptr = c_tile
        group = 16  # rows of C in flight
        for g0 in range(0, mt_m, group):
            ptrs, row_ptr = row_pointers(e, row_ptr, g0, group, mt_m, ldc4)
            e(gcn.SAndB64Op(load_lanes, -1, result_type=gcn.exec_type()))
            zeros = [e(gcn.VMovB32Op(0)).vdst for _ in ptrs]
            cs = [e(gcn.GlobalLoadDwordOp(voff_c, p, comment=f"C row {g0 + i}", merge=z)).vdst
                  for i, (p, z) in enumerate(zip(ptrs, zeros))]
            e(gcn.SAndB64Op(lanes, -1, result_type=gcn.exec_type()))
            for i, (p, c) in enumerate(zip(ptrs, cs)):
                t = e(gcn.VMulF32Op(beta, c)).vdst
                out = e(gcn.VFmaF32Op(acc[g0 + i], alpha, t)).vdst
                e(gcn.GlobalStoreDwordOp(voff_c, out, p))
        e(gcn.SEndpgmOp())


    def _finish(self, entry: Block) -> gcn.KernelOp:
        """The ``gcn.kernel`` of the entry block, with its launch information."""
        s = self.shape
        mt_n = SEED_MACRO[1]
        ks = SEED_K
        kernel = gcn.KernelOp(self.name, Region(entry))
        kernel_interface(kernel, self.mm, ["kernarg_segment_ptr", "workgroup_id_x", "workgroup_id_y",
                                           "workitem_id_x", "exec"],
                         kernarg_layout("f32"), mt_n, SEED_MACRO, ks if s.k >= 0 else 2 * ks, strategy="sqc", schedule="seed",
                         forwarding=int(self.forwarding),
                         full_tiles_only=1)  # no edge handling: the host refuses other sizes
        return kernel
