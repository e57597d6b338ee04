"""The GEMV of f16 activations and AWQ/GPTQ-style int4 weights with per-group scales and zero points.

``gemm.matmul %x, %w, %y, %alpha, %beta {layout = "NT", b_format = "int4_g128"}`` (docs/quantized.md):
B holds N rows (weights stored N x K, out x in) of K / G groups of G = 32, 64 or 128 weights along K
(``int4_g32``, ``int4_g64``, ``int4_g128``), each group 4 + G / 2 bytes:

* bytes 0..1 the group's scale ``s`` (f16), byte 2 its zero point ``z`` (0..15, a u8), byte 3
  ignored;
* bytes 4 .. 4 + G / 2 - 1 the unsigned 4-bit values ``q``: weight 2j of the group in the low
  nibble of byte j, weight 2j + 1 in its high nibble.  This is the order of GPTQ's ``qweight``
  (K / 8 x N int32, weight k of a column in bits 4 (k % 8) of dword k / 8) after the transpose to
  N x K, read as little-endian bytes; the scale and zero point (GPTQ's ``scales`` and unpacked
  ``qzeros``) are stored before their group instead of in separate tensors;
* weight ``(q - z) * s`` (GPTQ's and AWQ's dequantization).

The kernel is :class:`~vlpc.passes.isel.quant.QuantGemvBuilder`'s (one lane per weight row,
A in SGPRs, K over wavefront groups and optionally over workgroups, the LDS reduction, output,
epilogues) with another K loop, one group an iteration, B two groups ahead:

* a lane loads its row's 1 + G / 8 dwords of a group with ``global_load_dwordx4`` and one
  ``global_load_dword`` (every weight byte read once; 20, 36 or 68 bytes, whole dwords, so with
  ldb a multiple of 4 each lane's loads are aligned);
* the scale is ``v_cvt_f32_f16`` of the header (exact), the zero point becomes the f16 pair
  ``-(1024 + z)`` in both halves (``v_lshrrev_b32``, ``v_and_b32``, ``v_or_b32 0xE400``,
  ``v_lshl_add_u32``);
* per dword of nibbles (8 weights): the low and high nibbles (``v_and_b32 0x0F0F0F0F``, after
  ``v_lshrrev_b32 4``), interleaved by two ``v_perm_b32`` into byte order (q0, q1, q2, q3 ...), then
  as Q4_0: ``v_perm_b32`` with 0x64646464 builds the f16 pair (1024 + q_2p, 1024 + q_2p+1) and
  ``v_pk_add_f16`` with ``-(1024 + z)`` leaves ``q - z`` exactly (small integers);
* per group and row G / 2 ``v_dot2_f32_f16`` sum ``a (q - z)`` from 0 (each product exact in f32),
  then ``acc += s * sum`` (``v_fma_f32``).  The error is f32 accumulation's on exact terms:
  ``gamma_n(2^-24) sum_k |a_k| |w_k|``, n = G / 2 + K / G + S L + 2 (vlpc/quant_run.py).

A is read per 32 weights of a group (``s_load_dwordx16``, batches of 4 rows), issued before the
chunk's dequantization.

**A last partial group** (K % G != 0, a multiple of 32 weights after at least one whole group: the
verifier's rule; GPTQ's and AWQ's last group of a K that G does not divide): the row ends in its
4-byte header and (K % G) / 2 bytes of nibbles (``quant_row_bytes`` in dialects/gemm.py).  The K
slices (wavefront groups, split-K) take the whole groups as without it (the slicing sees
K - K % G: :meth:`Int4GemvBuilder._arg`); then the last slice alone (its first dword of A compared
in SALU, a forward branch over a loop that runs once, so the accumulators keep their registers)
loads the partial group's 1 + (K % G) / 8 dwords, exactly its bytes, and adds it as a group of
K % G weights: (K % G) / 32 chunks of A, the same dequantization, dots and FMA.
"""

from __future__ import annotations

from xdsl.ir import Block, Region, SSAValue

from vlpc.dialects import gcn
from vlpc.dialects.gemm import INT4_GROUP_FORMATS
from vlpc.passes.isel.emit import SMEM_IMM_MAX, Emitter, RowStepper
from vlpc.passes.isel.quant import (A_BATCH_ROWS, F16_MAGIC_BYTES, PERM_SELECT, QUANT_B_AHEAD,
                                           QuantGemvBuilder, a_row_loads, b_row_loads,
                                           pipelined_k_loop)

#: v_perm_b32 selectors interleaving the low nibbles (src1) and the high ones (src0) of a dword:
#: bytes (lo0, hi0, lo1, hi1) and (lo2, hi2, lo3, hi3), i.e. weights 0..3 and 4..7 in K order.
NIBBLE_INTERLEAVE = (0x05010400, 0x07030602)


class Int4GemvBuilder(QuantGemvBuilder):
    """:class:`QuantGemvBuilder` with B in the int4 group formats (module docstring): one group per
    iteration."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.group = INT4_GROUP_FORMATS[self.fmt]
        self.tail = self.shape.k % self.group  # weights of the last, partial group (0: none)
        self.k_begin: SSAValue | None = None  # the K slice's first dword of A (None: one slice)

    def _arg(self, e: Emitter, kp: SSAValue, name: str, static: int) -> SSAValue | int:
        """K as the slicing sees it: the whole groups (the partial one after them: module docstring)."""
        if name == "K" and self.tail:
            return static - self.tail
        return super()._arg(e, kp, name, static)

    def _b_slice_bytes(self, e: Emitter, k_begin: SSAValue, kb4: SSAValue) -> SSAValue:
        self.k_begin = k_begin
        shift = (self.group // 2).bit_length() - 1  # G / 2 dwords of A per group
        g = e(gcn.SLshrB32Op(k_begin, shift, comment="first group of the slice")).sdst
        return e.mul(g, self.block_bytes)

    def _k_loop_override(self, e: Emitter, acc: list[SSAValue], a_tile: SSAValue, b_tile: SSAValue,
                         voff_b: SSAValue, k_val: SSAValue | int, lda4: SSAValue | int) -> list[SSAValue]:
        G = self.group
        a_dw = G // 2  # dwords of A (f16 pairs) per group
        assert isinstance(k_val, int) and k_val % a_dw == 0, k_val  # whole groups (quant_kernels)
        iters = k_val // a_dw
        chunks = G // 32  # 16 dwords of A each
        n_dw = self.block_bytes // 4  # 1 + G / 8
        n_x4 = n_dw // 4  # dwordx4 loads, then one dword
        rows = len(acc)
        acc, up_off = self.swiglu_accumulators(e, acc)
        magic = e(gcn.VMovB32Op(F16_MAGIC_BYTES)).vdst
        select = {pos: e.const(v) for pos, v in PERM_SELECT.items()}
        inter = [e.const(v) for v in NIBBLE_INTERLEAVE]
        zero = e(gcn.VMovB32Op(0)).vdst
        imm_rows = isinstance(lda4, int) and (rows - 1) * lda4 + 64 * chunks <= SMEM_IMM_MAX
        stepped = RowStepper(e, lda4)
        a_bytes = 4 * a_dw

        def load_b(ptr: SSAValue, loads=range(n_x4 + 1)) -> list[SSAValue]:
            return b_row_loads(e, voff_b, ptr, n_dw, loads, "group")

        def a_batch(koff: SSAValue, c: int, r0: int) -> list[SSAValue]:
            """Rows r0.. (up to A_BATCH_ROWS) of A's 16 dwords of chunk ``c`` of the group at ``koff``."""
            return a_row_loads(e, a_tile, lda4, imm_rows, stepped, koff, c, range(r0, min(r0 + A_BATCH_ROWS, rows)),
                               f"weights {32 * c}.. of the group")

        def compute(koff: SSAValue, loaded: list[SSAValue], acc: list[SSAValue], nxt: SSAValue | None,
                    chunks: int = chunks):
            """acc += the group at ``koff`` (``chunks`` x 32 weights: G / 32, or the partial group's), its
            dwords in ``loaded``; ``nxt``: reload ``loaded``'s registers with the group there."""
            acc = list(acc)
            reloaded: list[SSAValue] = []
            n_x4 = len(loaded) - 1  # dwordx4 loads, then one dword

            def dw(i: int) -> SSAValue:
                return e.sub(loaded[i // 4], i % 4, 1) if i // 4 < n_x4 else loaded[-1]

            batch0 = a_batch(koff, 0, 0)
            hdr = dw(0)
            scale = e(gcn.VCvtF32F16Op(hdr)).vdst  # the group's scale, exact in f32
            z = e(gcn.VAndB32Op(0xFF, e(gcn.VLshrrevB32Op(16, hdr)).vdst)).vdst
            nz = e(gcn.VOrB32Op(0xE400, z)).vdst  # f16 -(1024 + z)
            offset = e(gcn.VLshlAddU32Op(nz, 16, nz)).vdst  # -(1024 + z) in both halves
            sums = [zero] * rows
            for c in range(chunks):
                batch = batch0 if c == 0 else a_batch(koff, c, 0)
                pairs = []
                for i in range(1 + 4 * c, 5 + 4 * c):  # the chunk's 4 dwords of nibbles
                    x = dw(i)
                    lo = e(gcn.VAndB32Op(0x0F0F0F0F, x)).vdst
                    hi = e(gcn.VAndB32Op(0x0F0F0F0F, e(gcn.VLshrrevB32Op(4, x)).vdst)).vdst
                    for sel in inter:
                        il = e(gcn.VPermB32Op(hi, lo, sel)).vdst
                        for pos in (0, 2):
                            halves = e(gcn.VPermB32Op(magic, il, select[pos])).vdst
                            pairs.append(e(gcn.VPkAddF16Op(offset, halves)).vdst)
                if nxt is not None:  # the group after next, into the registers this chunk frees
                    reloaded += load_b(nxt, [c] if c + 1 < chunks else range(c, n_x4 + 1))
                for r0 in range(0, rows, A_BATCH_ROWS):
                    if r0:
                        batch = a_batch(koff, c, r0)
                    for i_r, a_row in enumerate(batch):
                        r = r0 + i_r
                        s = sums[r]
                        for t in range(16):
                            s = e(gcn.VDot2F32F16Op(pairs[t], e.sub(a_row, t, 1), s)).vdst
                        sums[r] = s
            for r in range(rows):
                acc[r] = e(gcn.VFmaF32Op(scale, sums[r], acc[r], comment=f"row {r} += s * sum a (q - z)")).vdst
            return acc, reloaded

        left = [iters]

        def step(koff, loaded, acc, nxt, a_cur):
            left[0] -= 1
            if self.swiglu:  # gate then up (A read again, from the scalar cache)
                half = len(loaded) // 2
                acc_g, re_g = compute(koff, loaded[:half], acc[:rows], nxt)
                nxt_u = e.add64(nxt, up_off, 0) if nxt is not None else None
                acc_u, re_u = compute(koff, loaded[half:], acc[rows:], nxt_u)
                acc, reloaded = [*acc_g, *acc_u], [*re_g, *re_u]
            else:
                acc, reloaded = compute(koff, loaded, acc, nxt)
            nkoff = e(gcn.SAddU32Op(koff, a_bytes, comment="A of the next group")).sdst if left[0] else None
            return acc, reloaded, None, nkoff

        def load_set(ptr: SSAValue) -> list[SSAValue]:
            """A group's B (swiglu: the gate's, then the up projection's)."""
            if not self.swiglu:
                return load_b(ptr)
            return [*load_b(ptr), *load_b(e.add64(ptr, up_off, 0, comment="the up projection's rows"))]

        koff = e.const(0)
        bptr = e.add64(b_tile, 0, 0, comment="B of the first group")
        acc = pipelined_k_loop(e, step, load_set, bptr, iters, QUANT_B_AHEAD, self.block_bytes, a_bytes, koff, None,
                               acc, left, f".L{self.name}_int4_groups", "group")
        if not self.tail:
            return acc

        # the last, partial group (module docstring): after the last K slice's whole groups
        t_dw = 1 + self.tail // 8  # its header and nibbles, in dwords
        koff_t = e.const(4 * k_val)  # A of the partial group
        ptr_t = e.add64(b_tile, iters * self.block_bytes, 0, comment="B of the partial group")
        ptr_u = e.add64(ptr_t, up_off, 0, comment="the up projection's partial group") if self.swiglu else None

        def tail(acc: list[SSAValue]) -> list[SSAValue]:
            out = []
            for ptr, part in ((ptr_t, acc[:rows]), (ptr_u, acc[rows:])):
                if part:
                    loaded = b_row_loads(e, voff_b, ptr, t_dw, range(t_dw // 4 + 1), "partial group")
                    out += compute(koff_t, loaded, part, None, self.tail // 32)[0]
            return out

        if self.k_begin is None:  # one K slice: it is the last
            return tail(acc)
        skip = f".L{self.name}_after_partial_group"
        full_dw = (self.shape.k - self.tail) // 2
        e(gcn.SCmpLgU32Op(self.k_begin, e.const(full_dw - k_val)))  # the last K slice?
        e(gcn.SCbranchForwardOp("scc1", skip))
        body = Block(arg_types=[v.type for v in acc])
        outer, e.block = e.block, body
        try:
            new = tail(list(body.args))
            e(gcn.SCmpLgU32Op(koff_t, 4 * k_val))  # SCC = 0: one iteration
            e(gcn.LoopBackOp(new, "scc1"))
        finally:
            e.block = outer
        loop = e(gcn.LoopOp(acc, Region(body), label=f".L{self.name}_partial_group"))
        e(gcn.LabelOp(skip))
        return list(loop.res)
