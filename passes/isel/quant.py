"""The GEMV of f16 activations and block-quantized weights (GGUF Q8_0, Q4_0) on gfx906.

``gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT", b_format = "q8_0"}`` (docs/quantized.md):
A holds M rows of f16 activations (stored M x K), B the bytes of a GGUF tensor of N rows (weights
stored N x K, as LLM layers keep them) of K / 32 blocks each, C is f32 or f16.  The kernel is the
f16 decode GEMV of ``passes/isel/dot.py`` (:class:`QuantGemvBuilder` subclasses its
builder: the same prologue, wavefront-group split of K, LDS reduction, output with alpha, beta and
the fused epilogue, row-narrow companions for an M given at launch) with another K loop:

* A in SGPRs as there: per block, ``s_load_dwordx16`` brings the 16 dwords (32 f16 values) of a
  row, in batches of 4 rows (64 SGPRs) loaded after the previous batch's dots; each SGPR is the
  scalar operand of ``v_dot2_f32_f16``.
* B one lane per weight row (column n of C): an iteration reads two GGUF blocks (64 weights:
  68 bytes of Q8_0, 36 of Q4_0; with K a multiple of 64 and ldb of 4 each lane's loads start on
  4-byte boundaries) with ``global_load_dwordx4`` and ``global_load_dword``; the next
  iteration's loads go out as soon as a block's dequantization frees their registers (those
  block 0 alone reads after block 0, the rest after block 1), carried around the loop, the last
  iteration peeled; every weight byte is read once.
* Dequantization in registers, exact, into the packed f16 pairs the dot takes.  An integer
  0 <= u < 1024 in the low bits of the f16 pattern ``0x6400`` is the f16 value 1024 + u, so
  ``v_perm_b32`` (bytes from {0x64646464, x}) builds two such halves from two bytes at once and
  ``v_pk_add_f16`` subtracts the offset: Q8_0 bytes b (signed) go through ``v_xor_b32``
  0x80808080 (u = b + 128) and 1152 is subtracted; Q4_0 nibbles (``v_and_b32`` 0x0F0F0F0F, and
  after ``v_lshrrev_b32`` 4 for the high ones) give u in 0..15, 1032 = 1024 + 8 subtracted (GGUF's
  offset 8).  Both results are small integers, exact in f16; per pair of weights 2 (Q8_0: 2.5)
  VALU instructions, shared by the tile's M rows.
* Per block and row, 16 dots sum the block's exact f16 products in f32 from 0 (``v_dot2_f32_f16``
  rounds once per instruction), then ``v_fma_f32 acc, d, s, acc`` with d the block's f16 scale
  (``v_cvt_f32_f16``, exact).  GGUF's dequantized weight is d * q, exact in f32 (11 + 8 bits), so
  the error is f32 accumulation's alone: ``gamma_n(2^-24) sum_k |a_k| |w_k|`` with
  n = 16 + K / 32 + L + 2 (vlpc/quant_run.py's bound).

Why f16 activations and ``v_dot2_f32_f16`` rather than llama.cpp's int8 activations (Q8_1 blocks)
and ``v_dot4_i32_i8``: the results stay within f32 accumulation of the exact weights (no
activation rounding to 8 bits), one kernel and one dequantization serve both formats, and at
M = 1..4 the GEMV is bound by the weight stream, not by the VALU (modeled:
``benchmarks/quant_gemv.py``); at M = 16 the dots (8 per weight pair and row group) bound it,
where ``v_dot4_i32_i8`` on int8 activations needs a quarter of the instructions: the lane-along-K
kernel does that for Q8_0 / Q4_0 at M = 2..16 (passes/isel/quant_lane.py, QuantLaneInt8Builder).

Plans: K over L wavefront groups of a workgroup and, for few workgroups, S workgroups (workspace
mode: the dot kernels' reduce kernel), ``quant_plan`` / ``quant_split`` in dialects/gemm.py.  The
fused SwiGLU (``epilogue = ["swiglu", ...]``, B the gate's N rows then the up projection's): each
lane computes both rows of its column, :meth:`QuantGemvBuilder._combine_rows` forms silu(gate) * up
after the groups' reduction.  Refused (located): S x L not dividing the K / 64 block pairs, a
swiglu split across workgroups, strategies and schedules other than sqc default/cover.
"""

from __future__ import annotations

import dataclasses
import math

from xdsl.dialects.builtin import DictionaryAttr, StringAttr
from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import B_FORMATS, QUANT_K_UNIT, MatmulOp, quant_plan
from vlpc.passes.common import op_error
from vlpc.passes.isel.emit import SMEM_IMM_MAX, Emitter, RowStepper, add_launch_facts, f32_bits, rows_kernel
from vlpc.passes.isel.dot import DotKernelBuilder, dot_kernels
from vlpc.passes.isel.sqc_k_step import WIDE_A_BATCH_SGPRS

#: Row counts of the row-narrow companions built for an M given at launch (the runtime runs the
#: largest one not above M when M is below the tile's rows: isel/emit.py's rows_kernel); each
#: splits K over the wavefront groups of ``quant_plan`` for its rows (unlike the other kernels'
#: companions, which run one group).
QUANT_ROWS_TILES = (8, 4, 2, 1)
#: Block pairs of B in flight per lane ahead of the one computed (each its own registers).  3 made
#: the register allocator fail on SGPR fragmentation (one row of A a pair ahead, 1 x 14336 x 4096).
QUANT_B_AHEAD = 2
#: Rows of A per batch of scalar loads (4 x 16 dwords = 64 SGPRs, sqc_k_step.WIDE_A_BATCH_SGPRS).
A_BATCH_ROWS = 4
#: f16 bit patterns: 0x64 is the high byte of 1024.0 (v_perm_b32's magic); -(1024 + 128) and
#: -(1024 + 8) in both halves (v_pk_add_f16 removes the offsets of Q8_0 and Q4_0).
F16_MAGIC_BYTES = 0x64646464
F16_OFFSET = {"q8_0": 0xE480E480, "q4_0": 0xE408E408}
#: v_perm_b32 selectors: bytes (p, p + 1) of src1 into the low bytes of the two f16 halves, the
#: high bytes from src0 (0x64646464).
PERM_SELECT = {0: 0x04010400, 2: 0x04030402}


def b_row_loads(e, voff_b: SSAValue, ptr: SSAValue, n_dw: int, loads, what: str) -> list[SSAValue]:
    """Loads ``loads`` of a lane's ``n_dw`` dwords of its weight row at ``ptr``: load q < n_dw // 4
    is the ``global_load_dwordx4`` of dwords 4q.., the last one the ``global_load_dword`` of dword
    n_dw - 1 (``what`` names the data in the comments).  Shared by the quantized GEMVs."""
    return [e(gcn.GlobalLoadDwordx4Op(voff_b, ptr, offset=16 * q, comment=f"B {what}, dwords {4 * q}..")).vdst
            if q < n_dw // 4 else
            e(gcn.GlobalLoadDwordOp(voff_b, ptr, offset=4 * (n_dw - 1), comment=f"B {what}, dword {n_dw - 1}")).vdst
            for q in loads]


def a_row_loads(e, a_tile: SSAValue, lda4, imm_rows: bool, stepped, koff: SSAValue, chunk: int, rows,
                what: str) -> list[SSAValue]:
    """One ``s_load_dwordx16`` per row r of ``rows``: A's 16 dwords (64 bytes) of chunk ``chunk``
    at K offset ``koff`` (bytes), addressed by immediate row offsets (``imm_rows``: r x lda4) or by
    ``stepped`` (:class:`RowStepper`); ``what`` names the chunk in the comments.  Shared by the
    quantized GEMVs."""
    out = []
    for r in rows:
        text = f"A row {r}, {what}"
        if imm_rows:
            out.append(e(gcn.SLoadDwordx16Op(a_tile, offset=r * lda4 + 64 * chunk, soffset=koff, comment=text)).sdst)
        else:
            out.append(e(gcn.SLoadDwordx16Op(a_tile, offset=64 * chunk, soffset=stepped(koff, r), comment=text)).sdst)
    return out


def quant_kernels(mm: MatmulOp, name: str, strategy: str = "sqc", schedule: str = "default",
                  forwarding: bool = True, builder=None) -> list[gcn.KernelOp]:
    """The kernels of a ``gemm.matmul`` with ``b_format``: the GEMV and, for an M given at launch,
    its row-narrow companions (:data:`QUANT_ROWS_TILES`); ``builder``: the kernels' builder class
    (default :class:`QuantGemvBuilder`; Q4_K's: passes/isel/quant_k.py)."""
    builder = builder or QuantGemvBuilder
    s = mm.shape()
    split, local = mm.get_int("split_k") or 1, mm.get_int("local_split") or 1
    unit = QUANT_K_UNIT[s.b_format]
    pairs = s.k // unit
    if split > 1 and "swiglu" in mm.epilogue_ops():
        raise op_error(mm, f"split-k={split}: a swiglu GEMV sums its gate and up projections within the workgroup "
                       "(use split-k=1)")
    if pairs % (split * local):
        raise op_error(mm, f"split-k={split} x local-split={local} does not divide the {pairs} block pairs of "
                       f"K={s.k} ({unit} weights each): every K slice runs whole pairs")
    kernels = dot_kernels(mm, name, strategy, schedule, forwarding, (), builder=builder)
    mt_m = mm.get_int_array("macro_tile")[0]
    if s.m < 0:  # the row-narrow companions, each with its own split of K over wavefront groups
        def build(clone: MatmulOp, kname: str, r: int) -> gcn.KernelOp:
            groups = min(quant_plan(dataclasses.replace(s, m=r))[1], local)  # (at most the main kernel's groups)
            clone.set_int("local_split", groups)
            clone.set_int_array("workgroup_size", (64 * groups, 1, 1))
            return builder(clone, kname, forwarding=forwarding, schedule=schedule).build()

        rows = [rows_kernel(mm, name, r, lambda c, n, r=r: build(c, n, r)) for r in QUANT_ROWS_TILES if r < mt_m]
        if rows:
            main = kernels[0]
            main.attributes["launch"] = DictionaryAttr({
                **main.attributes["launch"].data, "small_m": StringAttr(",".join(k.sym_name.data for k in rows))})
            kernels += rows
    return kernels


class QuantGemvBuilder(DotKernelBuilder):
    """:class:`DotKernelBuilder` with a block-quantized B (module docstring): its K loop
    (:meth:`_k_loop_override`), B's byte geometry and the ``b_format`` launch fact."""

    def swiglu_accumulators(self, e, acc: list[SSAValue]) -> tuple[list[SSAValue], int | None]:
        """``acc`` followed, when the kernel fuses SwiGLU, by the up projection's zeroed accumulators
        (one per row), and the bytes from a gate row to its up row (static: verified); else
        ``acc`` and None."""
        if not self.swiglu:
            return acc, None
        return [*acc, *(e(gcn.VMovB32Op(0)).vdst for _ in range(len(acc)))], self.shape.n * self.shape.ldb

    def __init__(self, mm: MatmulOp, name: str, forwarding: bool = True, schedule: str = "default",
                 role: str = "main"):
        super().__init__(mm, name, forwarding=forwarding, schedule=schedule, role=role)
        self.fmt = self.shape.b_format
        self.block, self.block_bytes = B_FORMATS[self.fmt]
        self.ldb_unit = 1  # ldb counts bytes
        # swiglu: each lane computes the gate's row n and the up projection's row N + n (B holds both,
        # N static), combined after the groups' reduction as silu(gate) * up (_combine_rows)
        self.swiglu = "swiglu" in mm.epilogue_ops()
        self.acc_per_row = 2 if self.swiglu else 1

    def kernargs(self) -> list[dict]:
        out = super().kernargs()
        for a in out:
            if a["name"] == "B":
                a["type"] = "char*"  # the GGUF tensor's bytes
        return out

    def _b_slice_bytes(self, e: Emitter, k_begin: SSAValue, kb4: SSAValue) -> SSAValue:
        # k_begin dwords of A = k_begin / 32 block pairs of 2 x block_bytes
        pairs = e(gcn.SLshrB32Op(k_begin, 5, comment="first block pair of the slice")).sdst
        return e.mul(pairs, 2 * self.block_bytes)

    def _finish(self, entry: Block, lds_bytes: int) -> gcn.KernelOp:
        kernel = super()._finish(entry, lds_bytes)
        return add_launch_facts(kernel, b_format=self.fmt)

    def _combine_rows(self, e: Emitter, acc: list[SSAValue]) -> list[SSAValue]:
        """swiglu: silu(gate) * up per row, silu(g) = g / (1 + 2^(-g log2 e)) as the silu epilogue."""
        if not self.swiglu:
            return acc
        rows = len(acc) // 2
        k = e.const(f32_bits(-math.log2(math.e)))
        one = e.const(f32_bits(1.0))
        out = []
        for g, u in zip(acc[:rows], acc[rows:]):
            den = e(gcn.VAddF32Op(one, e(gcn.VExpF32Op(e(gcn.VMulF32Op(k, g)).vdst)).vdst)).vdst
            s = e(gcn.VMulF32Op(g, e(gcn.VRcpF32Op(den)).vdst)).vdst
            out.append(e(gcn.VMulF32Op(s, u)).vdst)
        return out

    def _k_loop_override(self, e: Emitter, acc: list[SSAValue], a_tile: SSAValue, b_tile: SSAValue,
                         voff_b: SSAValue, k_val: SSAValue | int, lda4: SSAValue | int) -> list[SSAValue]:
        assert isinstance(k_val, int) and k_val % 32 == 0, k_val  # whole block pairs (quant_kernels)
        iters = k_val // 32  # block pairs of this slice: 32 dwords of A (128 bytes) each
        pair_bytes = 2 * self.block_bytes
        n_dw = pair_bytes // 4  # 17 (Q8_0) or 9 (Q4_0) dwords per lane and iteration
        rows = len(acc)
        acc, up_off = self.swiglu_accumulators(e, acc)
        magic, select, offset, zero, imm_rows, stepped = dequant_constants(e, self.fmt, lda4, rows)

        n_loads = n_dw // 4 + 1

        def load_b(ptr: SSAValue, loads=range(n_loads)) -> list[SSAValue]:
            """Loads ``loads`` of the iteration's n_dw dwords of the lane's row: dwordx4 loads, then
            one dword."""
            return b_row_loads(e, voff_b, ptr, n_dw, loads, "blocks")

        # the loads block 0 alone reads (its dwords end before block 1's first): reloaded for the next
        # pair once block 0 is dequantized, the others once block 1 is (each into the registers it frees)
        first = (self.block_bytes // 4) // 4

        def a_batch(koff: SSAValue, blk: int, r0: int) -> list[SSAValue]:
            """Rows r0.. (up to A_BATCH_ROWS) of A's 16 dwords of block ``blk`` of the pair at ``koff``."""
            return a_row_loads(e, a_tile, lda4, imm_rows, stepped, koff, blk,
                               range(r0, min(r0 + A_BATCH_ROWS, rows)), f"block {blk}")

        def compute(koff: SSAValue, loaded: list[SSAValue], acc: list[SSAValue], nxt: SSAValue | None = None,
                    a_cur: list[SSAValue] | None = None, a_koff: SSAValue | None = None
                    ) -> tuple[list[SSAValue], list[SSAValue], list[SSAValue]]:
            """acc += the pair at ``koff`` (B in ``loaded``); ``nxt``: reload ``loaded``'s registers
            with the pair there; ``a_cur``: A of the pair, loaded before (one row: both blocks),
            ``a_koff``: load the next pair's A (from there) right after the pair's first dot (its
            wait then covers only ``a_cur``).  Returns (acc, the reloaded B, the next A)."""
            acc = list(acc)
            a_next: list[SSAValue] = []
            words: dict = {}
            reloaded: list[SSAValue] = []

            def dw(i: int) -> SSAValue:
                return e.sub(loaded[i // 4], i % 4, 1) if i // 4 < n_dw // 4 else loaded[-1]

            def word(kind: str, i: int) -> SSAValue:
                if (kind, i) not in words:
                    if kind == "x":  # Q8_0: b ^ 0x80 = b + 128 as an unsigned byte
                        v = e(gcn.VXorB32Op(0x80808080, dw(i))).vdst
                    elif kind == "lo":  # Q4_0: the low nibbles
                        v = e(gcn.VAndB32Op(0x0F0F0F0F, dw(i))).vdst
                    else:  # Q4_0: the high nibbles
                        v = e(gcn.VAndB32Op(0x0F0F0F0F, e(gcn.VLshrrevB32Op(4, dw(i))).vdst)).vdst
                    words[(kind, i)] = v
                return words[(kind, i)]

            # the first batch of each block in flight while the block dequantizes; up to 2 rows,
            # both blocks' A at once (32 or 64 SGPRs: one wait for the pair)
            early: dict = {} if a_cur is None else {0: [a_cur[0]], 1: [a_cur[1]]}
            for blk in range(2):
                o = blk * self.block_bytes  # the block's first byte in the pair
                batch = early.pop(blk) if blk in early else a_batch(koff, blk, 0)
                if blk == 0 and a_cur is None and rows * 32 <= WIDE_A_BATCH_SGPRS:
                    early[1] = a_batch(koff, 1, 0)
                scale = dw(o // 4)
                if o % 4:
                    scale = e(gcn.VLshrrevB32Op(16, scale)).vdst
                d = e(gcn.VCvtF32F16Op(scale)).vdst  # the block's scale, exact in f32
                pairs = block_pairs(e, self.fmt, o, word, magic, offset, select)
                if nxt is not None:  # the next pair's B, into the registers this block's dwords free
                    reloaded += load_b(nxt, range(first) if blk == 0 else range(first, n_loads))
                for r0 in range(0, rows, A_BATCH_ROWS):
                    if r0:
                        batch = a_batch(koff, blk, r0)
                    for i, a_row in enumerate(batch):
                        s = zero
                        for j in range(16):
                            s = e(gcn.VDot2F32F16Op(pairs[j], e.sub(a_row, j, 1), s)).vdst
                            if a_koff is not None and not a_next:  # after the wait for a_cur
                                a_next = [a_batch(a_koff, 0, 0)[0], a_batch(a_koff, 1, 0)[0]]
                        r = r0 + i
                        acc[r] = e(gcn.VFmaF32Op(d, s, acc[r], comment=f"row {r} += d * block sum")).vdst
            return acc, reloaded, a_next

        # B QUANT_B_AHEAD (D) block pairs ahead: the loop body takes D pairs, each reloading its
        # registers for the pair D later (no rotation of registers across the back edge); the
        # (iters - D) % D pairs before the loop reload likewise, the last D pairs after it load
        # nothing (nothing is read past the slice).  One row of A (32 SGPRs a pair): A one pair
        # ahead too, alternating between two buffers (the loop carries the next pair's); more rows
        # load A in each pair, in batches.
        ahead = rows == 1
        depth = QUANT_B_AHEAD
        koff = e.const(0)
        bptr = e.add64(b_tile, 0, 0, comment="B of the first block pair")
        a_cur = [a_batch(koff, 0, 0)[0], a_batch(koff, 1, 0)[0]] if ahead else None
        left = [iters]  # pairs not yet computed

        def load_set(ptr: SSAValue) -> list[SSAValue]:
            """A pair's B (swiglu: the gate's, then the up projection's)."""
            if not self.swiglu:
                return load_b(ptr)
            return [*load_b(ptr), *load_b(e.add64(ptr, up_off, 0, comment="the up projection's rows"))]

        def step(koff: SSAValue, loaded, acc, nxt, a_cur):
            """compute() of the pair at koff, and the next pair's A (``ahead``, unless it is the last)."""
            left[0] -= 1
            a_koff = e(gcn.SAddU32Op(koff, 128, comment="A of the next block pair")).sdst \
                if ahead and left[0] else None
            if self.swiglu:  # gate then up, one A
                half = len(loaded) // 2
                acc_g, re_g, _ = compute(koff, loaded[:half], acc[:rows], nxt, a_cur, None)
                nxt_u = e.add64(nxt, up_off, 0) if nxt is not None else None
                acc_u, re_u, a_next = compute(koff, loaded[half:], acc[rows:], nxt_u, a_cur, a_koff)
                acc, reloaded = [*acc_g, *acc_u], [*re_g, *re_u]
            else:
                acc, reloaded, a_next = compute(koff, loaded, acc, nxt, a_cur, a_koff)
            return acc, reloaded, (a_next or None), a_koff or (e(gcn.SAddU32Op(koff, 128)).sdst if left[0] else None)

        return pipelined_k_loop(e, step, load_set, bptr, iters, depth, pair_bytes, 128, koff, a_cur, acc, left,
                                f".L{self.name}_block_pairs", "block pair")


def pipelined_k_loop(e: Emitter, step, load_set, bptr: SSAValue, iters: int, depth: int, unit_bytes: int,
                     a_bytes: int, koff: SSAValue, a_cur: list[SSAValue] | None, acc: list[SSAValue],
                     left: list[int], label: str, what: str) -> list[SSAValue]:
    """The quantized GEMVs' K loop over ``iters`` units of B (``unit_bytes`` per lane, ``a_bytes`` of a
    row of A each; a block pair, a Q4_K super-block) with B ``depth`` units ahead: the first ``depth``
    units' loads (``load_set(ptr)``), then ``(iters - depth) % depth`` units before the loop, the loop
    taking ``depth`` units an iteration (each reloading its registers for the unit ``depth`` later: no
    rotation across the back edge), the last ``depth`` units after it loading nothing past the slice.
    ``step(koff, loaded, acc, nxt, a_cur)`` computes one unit and returns ``(acc, reloaded B, the next
    unit's A (carried) or None, the next koff)``, decrementing ``left[0]`` (units not yet computed).
    Returns the accumulators."""
    sets = [load_set(bptr if j == 0 else e.add64(bptr, j * unit_bytes, 0, comment=f"B of {what} {j}"))
            for j in range(min(depth, iters))]
    nxt = e.add64(bptr, depth * unit_bytes, 0, comment=f"B of {what} {depth}") if iters > depth else None
    for _ in range((iters - depth) % depth if iters > depth else 0):  # before the loop, reloading
        acc, again, a_cur, koff = step(koff, sets[0], acc, nxt, a_cur)
        sets = [*sets[1:], again]
        nxt = e.add64(nxt, unit_bytes, 0)
    if left[0] > depth:  # the loop: D units an iteration
        n0, na = len(sets[0]), len(a_cur or [])
        carried = [koff, nxt, *(v for st in sets for v in st), *(a_cur or []), *acc]
        body = Block(arg_types=[v.type for v in carried])
        outer, e.block = e.block, body
        count = left[0]
        try:
            args = list(body.args)
            koff_i, nxt_i = args[0], args[1]
            cur = [args[2 + j * n0:2 + (j + 1) * n0] for j in range(depth)]
            a_i = args[2 + depth * n0:2 + depth * n0 + na] or None
            acc_i = args[2 + depth * n0 + na:]
            news, k_j, n_j = [], koff_i, nxt_i
            for j in range(depth):
                acc_i, new, a_i, k_j = step(k_j, cur[j], acc_i, n_j, a_i)
                news.append(new)
                n_j = e.add64(n_j, unit_bytes, 0)  # (the last: the next iteration's, before the compare)
            left[0] = count  # (the body's steps are one iteration's)
            e(gcn.SCmpLgU32Op(k_j, e.const(a_bytes * (iters - depth))))
            e(gcn.LoopBackOp([k_j, n_j, *(v for st in news for v in st), *(a_i or []), *acc_i], "scc1"))
        finally:
            e.block = outer
        loop = e(gcn.LoopOp(carried, Region(body), label=label))
        res = list(loop.res)
        koff = res[0]
        sets = [res[2 + j * n0:2 + (j + 1) * n0] for j in range(depth)]
        a_cur = res[2 + depth * n0:2 + depth * n0 + na] or None
        acc = res[2 + depth * n0 + na:]
        left[0] = depth
    for j in range(len(sets)):  # the last units: no B past them
        acc, _, a_cur, koff = step(koff, sets[j], acc, None, a_cur)
    return acc


def block_pairs(e, fmt: str, o: int, word, magic: SSAValue, offset: SSAValue, select) -> list[SSAValue]:
    """The 16 packed f16 pairs (weights 2p, 2p + 1; exact small integers, module docstring) of the
    Q8_0 / Q4_0 block whose scale is byte ``o`` of the loaded dwords: ``word(kind, i)`` is dword i
    as ``"x"`` (Q8_0 bytes xor 0x80), ``"lo"`` / ``"hi"`` (Q4_0 low / high nibbles), ``magic`` the
    0x64 bytes, ``offset`` the f16 pair subtracted, ``select`` the ``v_perm_b32`` selectors per byte."""
    pairs = []
    for p in range(16):
        if fmt == "q8_0":
            byte, kind = o + 2 + 2 * p, "x"
        else:  # weights 2p, 2p + 1: low nibbles of qs[2p..], then high ones of qs[2p - 16..]
            byte, kind = (o + 2 + 2 * p, "lo") if p < 8 else (o + 2 + 2 * p - 16, "hi")
        halves = e(gcn.VPermB32Op(magic, word(kind, byte // 4), select[byte % 4])).vdst
        pairs.append(e(gcn.VPkAddF16Op(offset, halves)).vdst)
    return pairs


def dequant_constants(e, fmt: str, lda4, rows: int):
    """The registers a Q8_0 / Q4_0 K loop sets up once: the 0x64 bytes (``magic``), the
    ``v_perm_b32`` selectors per byte (``select``), the f16 pair subtracted (``offset``), a zero,
    whether A's ``rows`` rows (``lda4`` bytes apart, static or an SGPR) reach by SMEM immediates
    (``imm_rows``), and A's :class:`RowStepper`."""
    magic = e(gcn.VMovB32Op(F16_MAGIC_BYTES)).vdst
    select = {pos: e.const(v) for pos, v in PERM_SELECT.items()}
    offset = e.const(F16_OFFSET[fmt])
    zero = e(gcn.VMovB32Op(0)).vdst
    imm_rows = isinstance(lda4, int) and (rows - 1) * lda4 + 64 <= SMEM_IMM_MAX
    return magic, select, offset, zero, imm_rows, RowStepper(e, lda4)
